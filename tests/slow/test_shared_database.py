"""Campaigns that share one example database on a real Redis (``FUZZ_DB``).

Each test starts its own ``redis-server`` on the loopback interface on a free
port, in a temporary folder, with persistence off, and stops it. ``make test``
and ``.ci/run`` install ``redis-server`` from the system packages when it is
missing; without it these tests fail (they never skip).

The campaigns run as the README's commands run them, in subprocesses, with
budgets far beyond what they need: an item ends at its first failure, so the
budget is not waited out, and the outcomes never depend on how busy the
machine is. The tests assert counts and behaviour, never durations (the waits
below are guards against a hang).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_plugin import QUICK_STALL

from compaction_harness.sdk.python.adk import ADK_RELEASE
from compaction_harness.store.shared_db import key_prefix, redacted

ROOT = Path(__file__).resolve().parents[2]
GUARD = 300  # seconds: a hang, never a timing expectation

# The planted stall of tests/slow/test_plugin.py, logging each example's outcome
# ("pass" or "fail", one line each) to $EXAMPLE_LOG. EXAMPLES_PER_ROUND=1 makes
# a campaign that cannot find the stall by itself: each round generates only
# Hypothesis's simplest example (the orphaned call alone, which holds), so the
# only failing example such a campaign can meet is one its example database
# hands it in a round's reuse phase. The property's source is the same in
# every process, so every process has the same database key.
SHARED_PROPERTY = (
    QUICK_STALL
    + """
from hypothesis import settings

EXAMPLES = int(os.environ.get("EXAMPLES_PER_ROUND", "250"))
FAILS = []


def logged(outcome):
    with open(os.environ["EXAMPLE_LOG"], "a") as log:
        log.write(outcome + "\\n")
    FAILS.append(outcome == "fail")
    if os.environ.get("HOLD_AT_FAILURE") and sum(FAILS) == 2 and outcome == "fail":
        # A second failing example: the first is in hand and Hypothesis has
        # saved it. Wait until the test has done what it does at this point
        # (stop the server).
        Path("build", "found").touch()
        while not Path("build", "go on").exists():
            time.sleep(0.05)


@pytest.mark.property
@settings(max_examples=EXAMPLES)
@given(case=stalled_cases())
def test_planted_stall(case):
    try:
        check_unit_case(case, strict(case))
    except InvariantViolation:
        logged("fail")
        raise
    logged("pass")
"""
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    """A real ``redis-server`` of this test's own: ``url``, ``client``, ``stop()``."""

    def __init__(self, folder: Path) -> None:
        import redis

        exe = shutil.which("redis-server")
        if exe is None:
            pytest.fail(
                "redis-server is not installed: `make test` and .ci/run install it "
                "(apt-get install redis-server)"
            )
        self.port = _free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        folder.mkdir(parents=True, exist_ok=True)
        self.log = (folder / "redis.log").open("w")
        self.process = subprocess.Popen(
            [exe, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(folder)],
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
        self.client = redis.Redis(host="127.0.0.1", port=self.port)
        deadline = time.monotonic() + GUARD
        while True:
            try:
                self.client.ping()
                break
            except redis.exceptions.ConnectionError:
                assert self.process.poll() is None, (folder / "redis.log").read_text()
                assert time.monotonic() < deadline, "redis-server did not answer"
                time.sleep(0.05)

    def members(self) -> int:
        """How many examples the server holds for this release, in all keys."""
        keys = self.client.keys(key_prefix(ADK_RELEASE) + b"*")
        return sum(self.client.scard(k) for k in keys)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.log.close()


@pytest.fixture
def redis_server(tmp_path: Path):
    server = RedisServer(tmp_path / "redis")
    yield server
    server.stop()


def _clone(tmp_path: Path, name: str) -> Path:
    """A clone of this repository with the planted property in build/ (ignored by git)."""
    dest = tmp_path / name
    done = subprocess.run(
        ["git", "clone", "-q", str(ROOT), str(dest)], capture_output=True, text=True
    )
    assert done.returncode == 0, f"git clone of the project failed: {done.stderr}"
    (dest / "build").mkdir()
    (dest / "build" / "test_shared_stall.py").write_text(SHARED_PROPERTY)
    return dest


def _new_files(clone: Path) -> list[str]:
    """Files the campaign added to the clone that git would commit (new fixtures)."""
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=clone,
        capture_output=True,
        text=True,
        check=True,
    )
    return [line[3:] for line in status.stdout.splitlines()]


def _campaign_args(*extra: str) -> list[str]:
    return [
        sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--hypothesis-profile=fuzz",
        "--fuzz-seconds=600", "--fuzz-shards=1", *extra,
    ]  # fmt: skip


def _env(url: str | None, log: Path, **more: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("HARNESS_CAMPAIGN_STARTED", "HARNESS_FUZZ_DB", "FUZZ_DB", "CI")
    }
    if url:
        env["FUZZ_DB"] = url
    env["EXAMPLE_LOG"] = str(log)
    env.update(more)
    return env


def _outcomes(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


def _wait(condition, what: str, *processes: subprocess.Popen) -> None:
    deadline = time.monotonic() + GUARD
    while not condition():
        for p in processes:
            assert p.poll() is None, f"{what}: a campaign ended first:\n{p.stdout.read()[-3000:]}"
        assert time.monotonic() < deadline, f"{what}: not within {GUARD} s"
        time.sleep(0.05)


def _summary_value(output: str, name: str) -> int:
    (line,) = [ln for ln in output.splitlines() if "test_planted_stall" in ln and "rounds=" in ln]
    return int(line.split(f"{name}=")[1].split()[0])


def test_a_failure_one_campaign_finds_is_replayed_by_the_other_and_written_once(
    tmp_path: Path, redis_server: RedisServer
):
    writer_dir, worker_dir = _clone(tmp_path, "writer"), _clone(tmp_path, "worker")
    writer_log, worker_log = tmp_path / "writer.log", tmp_path / "worker.log"
    test_file = "build/test_shared_stall.py"
    # The writer (`make fuzz FUZZ_DB=...`) cannot find the stall by itself:
    # one simplest example a round.
    writer = subprocess.Popen(
        _campaign_args(test_file),
        cwd=writer_dir,
        env=_env(redis_server.url, writer_log, EXAMPLES_PER_ROUND="1"),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        # It runs rounds and finds nothing...
        _wait(lambda: len(_outcomes(writer_log)) >= 3, "the writer's first rounds", writer)
        assert set(_outcomes(writer_log)) == {"pass"}
        # ...until a worker (`make fuzz-worker FUZZ_DB=...`) in another clone finds it.
        worker = subprocess.run(
            _campaign_args(test_file, "--fuzz-worker"),
            cwd=worker_dir,
            env=_env(redis_server.url, worker_log),
            capture_output=True,
            text=True,
            timeout=GUARD,
        )
        assert worker.returncode == 1, worker.stdout[-3000:]
        assert _outcomes(worker_log)[0] == "pass"  # it found the stall by generating it
        assert "fail" in _outcomes(worker_log)
        assert "not written (a worker): U3-" in worker.stdout, worker.stdout[-3000:]
        assert "the writer's next round replays it and writes the fixture" in worker.stdout
        assert redis_server.members() >= 1  # the shrunk failure survives in Redis
        output = writer.communicate(timeout=GUARD)[0]
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()
    assert writer.returncode == 1, output[-3000:]
    # Every round before the failing one ran its one simplest example, and the
    # failing round's first example failed: the one Redis handed it.
    outcomes = _outcomes(writer_log)
    rounds = _summary_value(output, "rounds")
    first_failure = outcomes.index("fail")
    assert outcomes[:first_failure] == ["pass"] * (rounds - 1), (rounds, outcomes[:50])
    # Exactly one fixture across both clones, written by the writer.
    assert _new_files(worker_dir) == []
    (fixture,) = _new_files(writer_dir)
    assert fixture.startswith("tests/repros/U3-") and fixture.endswith(".json")
    assert f"fixture={fixture}" in output
    assert f"shared example database: {redis_server.url}" in output


def test_without_a_shared_database_the_writer_finds_nothing(tmp_path: Path):
    # The counterfactual of the test above: the same writer alone, without
    # FUZZ_DB, runs its rounds and never meets the stall.
    clone = _clone(tmp_path, "alone")
    log = tmp_path / "alone.log"
    done = subprocess.run(
        [*_campaign_args("build/test_shared_stall.py"), "--fuzz-seconds=1"],
        cwd=clone,
        env=_env(None, log, EXAMPLES_PER_ROUND="1"),
        capture_output=True,
        text=True,
        timeout=GUARD,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    assert set(_outcomes(log)) == {"pass"}
    assert _summary_value(done.stdout, "rounds") == len(_outcomes(log))
    assert _new_files(clone) == []


@pytest.mark.parametrize(
    "url",
    [
        "unreachable",
        "with a password",
        "redis://127.0.0.1:notaport/0",
        "http://x/0",
        "redis://127.0.0.1:6379/abc",  # redis-py would take database 0
    ],
)
def test_a_campaign_without_its_shared_database_stops_at_once_in_one_line(tmp_path: Path, url: str):
    if url == "unreachable":
        url = f"redis://127.0.0.1:{_free_port()}/0"  # nothing listens there
    elif url == "with a password":
        url = f"redis://:sekrit@127.0.0.1:{_free_port()}/0"
    clone = _clone(tmp_path, "clone")
    done = subprocess.run(
        _campaign_args("build/test_shared_stall.py"),
        cwd=clone,
        env=_env(url, tmp_path / "log"),
        capture_output=True,
        text=True,
        timeout=GUARD,
    )
    assert done.returncode == 2, done.stdout[-3000:] + done.stderr[-3000:]
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"error: FUZZ_DB={redacted(url)}: "), line
    assert "Traceback" not in done.stdout + done.stderr
    assert "sekrit" not in done.stdout + done.stderr  # CI logs keep what is printed
    assert not (tmp_path / "log").exists()  # no example ran


def test_a_password_in_the_url_is_never_printed():
    assert redacted("redis://:sekrit@127.0.0.1:6413/0") == "redis://:***@127.0.0.1:6413/0"
    assert redacted("redis://user:sekrit@host:1/2") == "redis://user:***@host:1/2"
    assert redacted("redis://host:1/0") == "redis://host:1/0"


def test_make_fuzz_worker_needs_a_shared_database():
    done = subprocess.run(
        ["make", "-s", "fuzz-worker", "FUZZ_DB="],
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if k not in ("FUZZ_DB", "MAKEFLAGS")},
        capture_output=True,
        text=True,
        timeout=GUARD,
    )
    assert done.returncode == 2
    assert done.stderr.splitlines()[0] == (
        "error: make fuzz-worker needs FUZZ_DB=redis://HOST:PORT/N (the writer's shared "
        "example database)"
    )


@pytest.mark.parametrize("role", ["writer", "worker"])
def test_a_shared_database_lost_mid_campaign_leaves_the_campaign_on_its_local_one(
    tmp_path: Path, redis_server: RedisServer, role: str
):
    clone = _clone(tmp_path, "clone")
    log = tmp_path / "log"
    worker = ["--fuzz-worker"] if role == "worker" else []
    campaign = subprocess.Popen(
        _campaign_args("build/test_shared_stall.py", *worker),
        cwd=clone,
        env=_env(redis_server.url, log, HOLD_AT_FAILURE="1"),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        _wait((clone / "build" / "found").exists, "the first failure", campaign)
        assert redis_server.members() >= 1  # the failure reached Redis...
        redis_server.stop()  # ...and Redis goes away while it is shrunk
        (clone / "build" / "go on").touch()
        output = campaign.communicate(timeout=GUARD)[0]
    finally:
        if campaign.poll() is None:
            campaign.kill()
            campaign.wait()
    assert campaign.returncode == 1, output[-3000:]
    lost = [ln for ln in output.splitlines() if "lost during the campaign" in ln]
    assert len(lost) == 1, output[-3000:]  # said once
    assert lost[0].startswith(f"shared example database {redis_server.url} lost"), lost
    assert "it went on with the local database only" in lost[0]
    # No failure lost: shrunk, written by the writer, and in the local database.
    if role == "writer":
        (fixture,) = _new_files(clone)
        assert fixture.startswith("tests/repros/U3-")
    else:
        assert _new_files(clone) == []
        assert "the failure is kept in this machine's local database only: run `make fuzz`" in (
            output
        )
    local = clone / ".hypothesis" / f"fuzz-adk-{ADK_RELEASE}"
    assert [p for p in local.rglob("*") if p.is_file()], "the local database holds nothing"


@pytest.fixture(scope="module")
def worker_found(tmp_path_factory) -> dict[bytes, bytes]:
    """What a worker's campaign put in Redis while Redis took writes (a
    failure it found and shrank), run once for the tests that start from it:
    every key, as ``DUMP`` gives it (``RESTORE`` puts it in another server)."""
    tmp_path = tmp_path_factory.mktemp("worker-found")
    server = RedisServer(tmp_path / "redis")
    try:
        found = subprocess.run(
            _campaign_args("build/test_shared_stall.py", "--fuzz-worker"),
            cwd=_clone(tmp_path, "worker"),
            env=_env(server.url, tmp_path / "worker.log"),
            capture_output=True,
            text=True,
            timeout=GUARD,
        )
        assert found.returncode == 1, found.stdout[-3000:]
        assert server.members() >= 1
        return {key: server.client.dump(key) for key in server.client.keys("*")}
    finally:
        server.stop()


@pytest.mark.parametrize("refusal", ["full", "read-only"])
def test_a_shared_database_that_refuses_writes_is_reported_not_fatal(
    tmp_path: Path, redis_server: RedisServer, worker_found: dict[bytes, bytes], refusal: str
):
    # A worker put a failure in Redis while it still took writes (worker_found:
    # its campaign ran once; this test's server holds what it wrote).
    for key, dumped in worker_found.items():
        redis_server.client.restore(key, 0, dumped)
    held = redis_server.members()
    assert held >= 1
    if refusal == "full":
        redis_server.client.config_set("maxmemory-policy", "noeviction")
        redis_server.client.config_set("maxmemory", "1")
    else:  # a replica of a server that is not there: it serves reads only
        redis_server.client.replicaof("127.0.0.1", _free_port())
    # A writer that cannot find the stall by itself still reads it from Redis.
    clone = _clone(tmp_path, "clone")
    log = tmp_path / "log"
    done = subprocess.run(
        _campaign_args("build/test_shared_stall.py"),
        cwd=clone,
        env=_env(redis_server.url, log, EXAMPLES_PER_ROUND="1"),
        capture_output=True,
        text=True,
        timeout=GUARD,
    )
    assert done.returncode == 1, done.stdout[-3000:]
    assert _outcomes(log)[0] == "fail"  # its first example: the one Redis held
    refused = [ln for ln in done.stdout.splitlines() if "refuses writes" in ln]
    assert len(refused) == 1, done.stdout[-3000:]
    assert refused[0].startswith(f"shared example database {redis_server.url} refuses writes (")
    assert ("OutOfMemoryError" if refusal == "full" else "ReadOnlyError") in refused[0], refused
    assert "lost during the campaign" not in done.stdout
    (fixture,) = _new_files(clone)  # the campaign found, shrank and wrote its failure
    assert fixture.startswith("tests/repros/U3-")
    assert redis_server.members() == held  # nothing was written


def test_a_worker_on_a_full_database_says_its_failure_stayed_local(
    tmp_path: Path, redis_server: RedisServer
):
    # Full before the worker finds anything: its failure never reaches Redis,
    # so the summary must not send the user to the writer (newcomer review).
    redis_server.client.config_set("maxmemory-policy", "noeviction")
    redis_server.client.config_set("maxmemory", "1")
    clone = _clone(tmp_path, "worker")
    done = subprocess.run(
        _campaign_args("build/test_shared_stall.py", "--fuzz-worker"),
        cwd=clone,
        env=_env(redis_server.url, tmp_path / "log"),
        capture_output=True,
        text=True,
        timeout=GUARD,
    )
    assert done.returncode == 1, done.stdout[-3000:]
    assert redis_server.members() == 0
    assert _new_files(clone) == []
    assert (
        "the shared database refused writes, so the failure is kept in this machine's local "
        "database only: run `make fuzz` here to write its fixture" in done.stdout
    ), done.stdout[-3000:]
    assert "the writer's next round replays it" not in done.stdout
