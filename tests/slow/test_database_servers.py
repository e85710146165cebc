"""``DatabaseSessionService`` on real PostgreSQL and MariaDB servers.

The storage kinds ``postgresql`` and ``mariadb`` keep a script's session on a
server of the test run's own (:mod:`compaction_harness.store.servers`:
Debian's ``postgresql`` and ``mariadb-server``, on loopback, a time zone other
than UTC), reached through the drivers google-adk names (asyncpg, aiomysql),
emptied when a script starts and reloaded before every invocation. Here: the
servers start, stop and fail in one line; a script's verdict on a server is
the same every run; and a derandomised sample of scripts on each stored kind
(the servers and SQLite), through the emulating driver and ADK's ``Runner``,
meets P0 to P7 (known
faults excused, as everywhere in the gate). ``make fuzz`` draws both kinds
(``HARNESS_SERVERS``), ``make fuzz STORAGE=postgresql`` only one.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_pipeline import run_and_label

from compaction_harness.sdk.python.adk_helpers import database_url
from compaction_harness.spec.scripts import SERVER_URL_VARIABLES, Open, Script, ScriptConfig, Text
from compaction_harness.store import servers
from compaction_harness.surfaces.checks import check_case
from strategies import differential_scripts

ROOT = Path(__file__).resolve().parents[2]
KINDS = tuple(SERVER_URL_VARIABLES)


@pytest.mark.parametrize("kind", KINDS)
def test_a_server_starts_answers_and_stops(kind: str) -> None:
    server = servers.start(kind)
    try:
        assert server.url.startswith(("postgresql://", "mysql://"))
        assert server.process.poll() is None
        assert server.folder.is_dir()
    finally:
        server.stop()
    assert server.process.poll() is not None
    assert not server.folder.exists()
    server.stop()  # a second stop does nothing


@pytest.mark.parametrize("kind", KINDS)
def test_the_release_gets_its_own_driver(kind: str, monkeypatch) -> None:
    monkeypatch.setenv(SERVER_URL_VARIABLES[kind], "postgresql://u@127.0.0.1:5/db")
    url = database_url(kind)
    assert url == "postgresql+asyncpg://u@127.0.0.1:5/db"
    monkeypatch.setenv(SERVER_URL_VARIABLES[kind], "mysql://root@127.0.0.1:6/harness")
    assert database_url(kind) == "mysql+aiomysql://root@127.0.0.1:6/harness"


@pytest.mark.parametrize("kind", KINDS)
def test_a_script_without_its_server_is_not_applicable_in_one_line(kind, monkeypatch) -> None:
    from compaction_harness.sdk.protocol import NotApplicable

    monkeypatch.delenv(SERVER_URL_VARIABLES[kind], raising=False)
    script = Script(ScriptConfig(compaction_interval=1, overlap_size=0, storage=kind), (Open(),))
    with pytest.raises(NotApplicable) as caught:
        check_case(script)
    assert SERVER_URL_VARIABLES[kind] in str(caught.value)
    assert "\n" not in str(caught.value)


def test_an_unknown_server_in_harness_servers_is_one_line_exit_2() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "tests/fast/test_scripts.py"],
        cwd=ROOT,
        env={**os.environ, "HARNESS_SERVERS": "oracle"},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.strip().splitlines() == [
        "error: HARNESS_SERVERS: unknown server 'oracle' (choose from postgresql, mariadb)"
    ]


def test_a_server_that_cannot_start_is_one_line_exit_2() -> None:
    """A campaign whose server fails at start (here an ``initdb`` that
    reports a full disk): one line naming the program and what it said,
    exit status 2, whatever the number of workers."""
    # Run as root, initdb runs as the user postgres: a folder it may enter.
    with tempfile.TemporaryDirectory() as folder:
        Path(folder).chmod(0o755)
        _a_failing_initdb_in(Path(folder) / "bin")


def _a_failing_initdb_in(fake: Path) -> None:
    fake.mkdir()
    (fake / "initdb").write_text(
        "#!/bin/sh\necho 'initdb: error: could not create directory: No space left' >&2\nexit 1\n"
    )
    (fake / "initdb").chmod(0o755)
    for workers in ([], ["-n", "2"]):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-p",
                "no:cacheprovider",
                *workers,
                "tests/fast/test_scripts.py",
            ],
            cwd=ROOT,
            env={
                **os.environ,
                "HARNESS_SERVERS": "postgresql",
                "PATH": f"{fake}{os.pathsep}{os.environ['PATH']}",
            },
            capture_output=True,
            text=True,
        )
        assert done.returncode == 2, done.stdout + done.stderr
        assert done.stderr.strip().splitlines() == [
            "error: HARNESS_SERVERS: PostgreSQL's initdb failed: "
            "initdb: error: could not create directory: No space left"
        ]


def test_each_worker_keeps_its_sessions_in_a_database_of_its_own() -> None:
    server = servers.start("postgresql")
    try:
        first = servers.own_database(server.url, "gw0")
        assert first.endswith("/harness_gw0")
        assert servers.own_database(server.url, "gw0") == first  # already there: kept
        assert servers.own_database(server.url, "gw1").endswith("/harness_gw1")
    finally:
        server.stop()


def test_a_server_that_is_not_installed_is_one_line(monkeypatch) -> None:
    monkeypatch.setattr(servers.shutil, "which", lambda name: None)
    monkeypatch.setattr(servers.glob, "glob", lambda pattern: [])
    for kind in KINDS:
        with pytest.raises(servers.ServerError) as caught:
            servers.start(kind)
        assert "not installed" in str(caught.value) and "\n" not in str(caught.value)


#: A session whose events tie on a coarse clock, answered later, compacted
#: every invocation: what a server orders, truncates and reads back.
_TIES = Script(
    ScriptConfig(compaction_interval=1, overlap_size=0, resolution=1.0),
    (Open(), Text(), Open(), Text(), Open(), Text()),
)


@pytest.mark.parametrize("kind", KINDS)
def test_a_verdict_on_a_server_is_the_same_every_run(kind, database_server) -> None:
    """Twice the same script on a server, each time from an emptied
    database: the same observations and the same known faults."""
    database_server(kind)
    for driver in ("emulated", "runner"):
        script = Script(replace(_TIES.config, storage=kind, driver=driver), _TIES.operations)
        first, second = check_case(script), check_case(script)
        assert first.observed == second.observed
        assert [(v.invariant, f) for v, f in first.known] == [
            (v.invariant, f) for v, f in second.known
        ]


@pytest.mark.parametrize("driver", ("emulated", "runner"))
@pytest.mark.parametrize("kind", ("database", "sqlite", *KINDS))
@settings(max_examples=8, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_scripts_on_each_stored_kind_meet_p0_to_p7(kind, driver, database_server, data) -> None:
    """A derandomised sample on each stored kind (SQLite through
    ``DatabaseSessionService`` and ``SqliteSessionService``, each server),
    through each driver (the gate's profile): P0 to P7 hold, known faults
    of google-adk excused. The gate's other properties draw a stored kind
    for one script in twelve; this sample runs each for sure."""
    if kind in KINDS:
        database_server(kind)
    script = data.draw(differential_scripts(), label="script")
    run_and_label(Script(replace(script.config, storage=kind, driver=driver), script.operations))


def test_check_says_in_one_line_when_the_user_may_not_write_the_scratch_database(
    database_server,
) -> None:
    """A user that may reach the server but not create or empty tables in the
    scratch database: one line naming why, before any campaign runs."""
    import asyncio

    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import create_async_engine

    from compaction_harness.sdk.protocol import NotApplicable
    from compaction_harness.sdk.python.adk_helpers import scratch_database

    database_server("postgresql")
    owner = database_url("postgresql")

    async def as_owner() -> None:
        engine = create_async_engine(owner, isolation_level="AUTOCOMMIT")
        try:
            async with engine.connect() as connection:
                await connection.execute(text("DROP ROLE IF EXISTS clerk"))
                await connection.execute(text("CREATE ROLE clerk LOGIN"))
        finally:
            await engine.dispose()

    asyncio.run(as_owner())
    asyncio.run(scratch_database(owner))  # the owner made harness_check
    clerk = owner.replace("postgresql+asyncpg://harness@", "postgresql+asyncpg://clerk@")
    with pytest.raises(NotApplicable) as caught:
        asyncio.run(scratch_database(clerk))
    said = str(caught.value)
    assert "cannot create and write tables in the scratch database" in said, said
    assert "permission denied" in said and "\n" not in said
