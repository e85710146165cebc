"""The pytest plugin's database servers (:mod:`.pytest_plugin` loads them):
the PostgreSQL and MariaDB servers that sessions of the storage kinds
``postgresql`` and ``mariadb`` are kept in (:mod:`compaction_harness.store.servers`).

``HARNESS_SERVERS=postgresql,mariadb`` (``make fuzz`` sets it) starts one
of each once for the run, before collection, so that strategies draw those
kinds; each pytest-xdist worker keeps its sessions in a database of its own
there. The fixture ``database_server`` starts one for the test that asks,
lazily, once per process, and names it in the environment for that test
alone (the gate's draws never depend on which test ran before).
"""

from __future__ import annotations

import os

import pytest

__all__ = ["_database_servers", "database_server", "own_databases", "start_servers"]


#: HARNESS_SERVERS: the database servers every test process starts before
#: collection (``make fuzz``), comma-separated kinds of
#: :data:`~compaction_harness.store.servers.PACKAGES`.
SERVERS_SPEC = tuple(k for k in (os.environ.get("HARNESS_SERVERS") or "").split(",") if k)


def start_servers(config: pytest.Config) -> str | None:
    """Start HARNESS_SERVERS's servers once for the run (in pytest-xdist's
    controller, or the one process without it), name them in the
    environment the workers inherit, and stop them when the run ends. Each
    worker then keeps its sessions in a database of its own on them
    (:func:`own_databases`). Returns why they cannot start (an unknown
    kind, a server not installed or failing at start: one line), or None."""
    if not SERVERS_SPEC or hasattr(config, "workerinput"):
        return None
    from ..spec.scripts import SERVER_URL_VARIABLES
    from ..store import servers

    for kind in SERVERS_SPEC:
        if kind not in servers.PACKAGES:
            known = ", ".join(servers.PACKAGES)
            return f"HARNESS_SERVERS: unknown server {kind!r} (choose from {known})"
    for kind in SERVERS_SPEC:
        variable = SERVER_URL_VARIABLES[kind]
        if os.environ.get(variable):
            continue
        try:
            server = servers.start(kind)
        except servers.ServerError as exc:
            return f"HARNESS_SERVERS: {exc}"
        os.environ[variable] = server.url
        config.add_cleanup(server.stop)
        config.add_cleanup(lambda variable=variable: os.environ.pop(variable, None))
    return None


def own_databases(config: pytest.Config) -> None:
    """In a pytest-xdist worker: a database of the worker's own on each of
    HARNESS_SERVERS's servers (``harness_gw0``, ...), since each script
    empties the tables of the database it runs in."""
    worker = getattr(config, "workerinput", {}).get("workerid")
    if not SERVERS_SPEC or not worker:
        return
    from ..spec.scripts import SERVER_URL_VARIABLES
    from ..store import servers

    for kind in SERVERS_SPEC:
        variable = SERVER_URL_VARIABLES[kind]
        try:
            os.environ[variable] = servers.own_database(os.environ[variable], worker)
        except (KeyError, servers.ServerError) as exc:
            raise pytest.UsageError(f"HARNESS_SERVERS: {kind}: {exc}") from None


@pytest.fixture(scope="session")
def _database_servers():
    """The servers :func:`database_server` started in this process, by kind."""
    started: dict = {}
    yield started
    for server in started.values():
        server.stop()


@pytest.fixture
def database_server(_database_servers, monkeypatch):
    """``start(kind) -> url``: a database server of ``kind`` (``postgresql``
    or ``mariadb``) for this test, named in the environment
    (``HARNESS_POSTGRESQL_URL``, ``HARNESS_MARIADB_URL``) until it ends. The
    server is started once per process, or is the one HARNESS_SERVERS
    started; one that is not installed or does not start fails the test
    with one line."""
    from ..spec.scripts import SERVER_URL_VARIABLES
    from ..store import servers

    def start(kind: str) -> str:
        variable = SERVER_URL_VARIABLES[kind]
        if os.environ.get(variable):
            return os.environ[variable]
        if kind not in _database_servers:
            try:
                _database_servers[kind] = servers.start(kind)
            except servers.ServerError as exc:
                pytest.fail(str(exc), pytrace=False)
        monkeypatch.setenv(variable, _database_servers[kind].url)
        return _database_servers[kind].url

    return start
