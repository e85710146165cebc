"""Real database servers for the storage kinds ``postgresql`` and ``mariadb``.

A server of each kind is a process of the test run's own: PostgreSQL
(``initdb`` and ``postgres`` of Debian's ``postgresql`` package) or MariaDB
(``mariadb-install-db`` and ``mariadbd`` of ``mariadb-server``), in a
temporary folder, listening on ``127.0.0.1`` on a free port, with durability
off (a campaign's sessions need not survive a crash), stopped and removed at
the end. ``make test``, ``make fuzz`` and ``.ci/run`` install the packages when
they are missing; nothing here installs anything. The pytest plugin starts
them for a campaign or a test that asks (``HARNESS_SERVERS``, the fixture
``database_server``), ``replay`` for a fixture that needs one.

PostgreSQL refuses to run as root: when the run is root, both its programs run
as the ``postgres`` user the package creates, in a folder that user owns.

Each server answers at the URL it prints (no driver in the scheme:
``postgresql://harness@127.0.0.1:PORT/harness``,
``mysql://root@127.0.0.1:PORT/harness``); the harness's drivers add the one
the google-adk release needs (``compaction_harness.sdk.python.adk_helpers.database_url``).

Errors: :class:`ServerError`, one line naming the program and what it said.
"""

from __future__ import annotations

import atexit
import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

#: The storage kinds a server of this module backs, and the package each needs.
PACKAGES = {"postgresql": "postgresql", "mariadb": "mariadb-server"}
#: The servers' time zones: not UTC, as many production servers are not, so
#: that a value the session service stores in the server's zone and reads
#: back in another shows up as a difference from memory (P7).
POSTGRESQL_TIME_ZONE = "America/New_York"
MARIADB_TIME_ZONE = "-05:00"
#: The database each server's sessions are kept in. The drivers empty only
#: databases whose name starts with ``harness``
#: (``compaction_harness.sdk.python.adk_helpers.empty_database``).
DATABASE = "harness"
#: Seconds a server has to answer after it starts.
START_SECONDS = 30.0


class ServerError(RuntimeError):
    """A server that is not installed or does not start (one line)."""


@dataclass
class Server:
    """A running server: ``kind``, ``url`` (no driver in the scheme), ``stop()``."""

    kind: str
    url: str
    process: subprocess.Popen
    folder: Path
    log: Path
    _stopped: bool = field(default=False, repr=False)

    def stop(self) -> None:
        """Stop the server and remove its folder (idempotent)."""
        if self._stopped:
            return
        self._stopped = True
        # PostgreSQL's fast shutdown is SIGINT (SIGTERM waits for clients).
        self.process.send_signal(signal.SIGINT if self.kind == "postgresql" else signal.SIGTERM)
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _postgres_bin(program: str) -> str:
    found = shutil.which(program) or next(
        iter(sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{program}"), reverse=True)), None
    )
    if found is None:
        raise ServerError(
            f"PostgreSQL's {program} is not installed (apt-get install postgresql; "
            "make test and make fuzz install it)"
        )
    return found


def _last_line(path: Path) -> str:
    lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    return lines[-1].strip() if lines else "no output"


def _wait_for(port: int, process: subprocess.Popen, log: Path, what: str) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ServerError(f"{what} exited at start: {_last_line(log)}")
        with socket.socket() as s:
            s.settimeout(0.2)
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    process.kill()
    raise ServerError(f"{what} did not answer on port {port} in {START_SECONDS:.0f} s")


def _run(cmd: list[str], log: Path, what: str, **kwargs) -> None:
    try:
        with log.open("a") as out:
            done = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, **kwargs)
    except OSError as exc:  # not executable, or not by the user it runs as
        raise ServerError(f"{what} could not run: {exc.strerror}: {exc.filename}") from None
    if done.returncode != 0:
        raise ServerError(f"{what} failed: {_last_line(log)}")


def _spawn(cmd: list[str], log: Path, what: str, **kwargs) -> subprocess.Popen:
    try:
        return subprocess.Popen(cmd, stdout=log.open("a"), stderr=subprocess.STDOUT, **kwargs)
    except OSError as exc:
        raise ServerError(f"{what} could not run: {exc.strerror}: {exc.filename}") from None


def _discard(folder: Path, process: subprocess.Popen | None) -> None:
    """What a start that failed leaves: its server stopped, its folder removed."""
    if process is not None:
        process.kill()
        process.wait()
    shutil.rmtree(folder, ignore_errors=True)


def start_postgresql() -> Server:
    """A PostgreSQL server of the caller's own (see the module's docstring),
    with a database :data:`DATABASE` that the role ``harness`` owns.

    Raises:
        ServerError: not installed, ``initdb`` failed, or the server did not start.
    """
    initdb, postgres = _postgres_bin("initdb"), _postgres_bin("postgres")
    folder = Path(tempfile.mkdtemp(prefix="harness-postgresql-"))
    as_user: dict = {}
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres")
        as_user = {"user": "postgres"}
    log = folder / "server.log"
    log.touch()
    if as_user:
        shutil.chown(log, "postgres")
    port = _free_port()
    process = None
    try:
        _run(
            [initdb, "-D", str(folder / "data"), "-A", "trust", "-U", "harness", "--no-sync"],
            log,
            "PostgreSQL's initdb",
            **as_user,
        )
        process = _spawn(
            [
                postgres,
                "-D",
                str(folder / "data"),
                "-p",
                str(port),
                "-k",
                str(folder),
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                "fsync=off",
                "-c",
                "synchronous_commit=off",
                "-c",
                "full_page_writes=off",
                "-c",
                f"timezone={POSTGRESQL_TIME_ZONE}",
            ],
            log,
            "postgres",
            **as_user,
        )
        _wait_for(port, process, log, "postgres")
        _run(
            [
                _postgres_bin("createdb"),
                "-h",
                str(folder),
                "-p",
                str(port),
                "-U",
                "harness",
                DATABASE,
            ],
            log,
            f"creating the database {DATABASE}",
            **as_user,
        )
    except BaseException:
        _discard(folder, process)
        raise
    url = f"postgresql://harness@127.0.0.1:{port}/{DATABASE}"
    return Server("postgresql", url, process, folder, log)


_MARIADB_MISSING = (
    "MariaDB's mariadb-install-db and mariadbd are not installed "
    "(apt-get install mariadb-server; make test and make fuzz install it)"
)


def _mariadbd() -> str | None:
    # Debian puts the server in /usr/sbin, which a user's PATH may lack.
    return shutil.which("mariadbd") or next(iter(glob.glob("/usr/sbin/mariadbd")), None)


def start_mariadb() -> Server:
    """A MariaDB server of the caller's own, with a database :data:`DATABASE` that
    ``root`` reaches without a password (grant tables off: loopback only).

    Raises:
        ServerError: not installed, ``mariadb-install-db`` failed, or the
            server did not start.
    """
    install, server = shutil.which("mariadb-install-db"), _mariadbd()
    if install is None or server is None:
        raise ServerError(_MARIADB_MISSING)
    folder = Path(tempfile.mkdtemp(prefix="harness-mariadb-"))
    log = folder / "server.log"
    data = folder / "data"
    user = "root" if os.geteuid() == 0 else None
    port = _free_port()
    process = None
    try:
        _run(
            [
                install,
                "--no-defaults",
                f"--datadir={data}",
                "--skip-test-db",
                "--auth-root-authentication-method=normal",
                *([f"--user={user}"] if user else []),
            ],
            log,
            "mariadb-install-db",
        )
        process = _spawn(
            [
                server,
                "--no-defaults",
                f"--datadir={data}",
                f"--port={port}",
                "--bind-address=127.0.0.1",
                f"--socket={folder}/mariadb.sock",
                f"--pid-file={folder}/mariadb.pid",
                "--skip-grant-tables",
                "--skip-log-bin",
                "--innodb-flush-log-at-trx-commit=0",
                "--innodb-buffer-pool-size=32M",
                f"--default-time-zone={MARIADB_TIME_ZONE}",
                *([f"--user={user}"] if user else []),
            ],
            log,
            "mariadbd",
        )
        _wait_for(port, process, log, "mariadbd")
        _run(
            [
                shutil.which("mariadb") or "mariadb",
                f"--socket={folder}/mariadb.sock",
                "-e",
                f"CREATE DATABASE {DATABASE}",
            ],
            log,
            f"creating the database {DATABASE}",
        )
    except BaseException:
        _discard(folder, process)
        raise
    return Server("mariadb", f"mysql://root@127.0.0.1:{port}/{DATABASE}", process, folder, log)


STARTERS = {"postgresql": start_postgresql, "mariadb": start_mariadb}


def start(kind: str) -> Server:
    """A server for the storage kind ``kind`` (a key of :data:`PACKAGES`)."""
    return STARTERS[kind]()


def own_database(url: str, owner: str) -> str:
    """A database ``harness_<owner>`` on the server ``url`` reaches (one of
    this module's: user ``harness`` on PostgreSQL, ``root`` on MariaDB),
    created with the server's own client program when missing; returns
    ``url`` naming it. Raises :class:`ServerError` (one line) when the
    client is missing or the server refuses."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    name = f"{DATABASE}_{owner}"
    host, port, user = parts.hostname or "127.0.0.1", str(parts.port), parts.username or ""
    if parts.scheme.startswith("postgresql"):
        cmd = [_postgres_bin("createdb"), "-h", host, "-p", port, "-U", user, name]
    else:
        client = shutil.which("mariadb") or shutil.which("mysql")
        if client is None:
            raise ServerError("MariaDB's client mariadb is not installed")
        cmd = [
            client,
            "-h",
            host,
            "-P",
            port,
            "-u",
            user,
            "-e",
            f"CREATE DATABASE IF NOT EXISTS {name}",
        ]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0 and "already exists" not in done.stderr:
        said = (done.stderr or done.stdout).strip().splitlines()
        raise ServerError(
            f"creating the database {name} failed: {said[-1] if said else done.returncode}"
        )
    return urlunsplit(parts._replace(path=f"/{name}"))


def serve(kind: str) -> str:
    """Make sure the storage kind ``kind`` has a server in this process: the
    one the environment names (``HARNESS_POSTGRESQL_URL``,
    ``HARNESS_MARIADB_URL``), or one started now, named there, and stopped
    when the process exits. ``replay``, ``show`` and ``minimize`` call it for
    a fixture kept on a server. Returns the URL.

    Raises:
        ServerError: not installed, or it did not start (one line).
    """
    from ..spec.scripts import SERVER_URL_VARIABLES

    variable = SERVER_URL_VARIABLES[kind]
    if os.environ.get(variable):
        return os.environ[variable]
    server = start(kind)
    atexit.register(server.stop)
    os.environ[variable] = server.url
    return server.url
