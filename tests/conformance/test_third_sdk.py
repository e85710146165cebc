"""A third SDK is one module and one registry line: verdicts, the store, the
command line and the plugin judge it without naming it.

The stand-in (``tests/standin_sdk.py``: it stores a script's events and
never compacts) is registered with one line, passes the drivers'
conformance suite, and its fixture, written by the store's writer, loads,
shows and replays through ``python -m compaction_harness`` with the verdict
its known fault implies: ``XFAIL`` for a script with a trigger (its fix
removes the violation), ``XPASS`` for a fixture marked with the fault whose
script has none (the fault no longer shows).
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest
import standin_sdk

from compaction_harness.sdk import protocol
from compaction_harness.sdk.conformance import run_conformance_test
from compaction_harness.store.fixtures import Fixture, FixtureError, load_fixture, write_fixture
from compaction_harness.surfaces.verdicts import judge_fixture

ROOT = Path(__file__).resolve().parents[2]
#: A google-adk script with a sliding-window trigger: what the stand-in runs.
SCRIPT = load_fixture(ROOT / "tests" / "repros" / "P3-2.13.0-5b7603de3944ebea.json").case
#: The one registry line, for a process (the command line) rather than a test.
ENV = {protocol.ENV: "stand-in=standin_sdk:StandIn"}


@pytest.fixture
def stand_in():
    with protocol.register_sdk("stand-in", "standin_sdk:StandIn"):  # the one registry line
        yield protocol.sdk_named("stand-in")


#: The same operations without a trigger: the stand-in's fault does not show.
UNTRIGGERED = dataclasses.replace(
    SCRIPT,
    config=dataclasses.replace(
        SCRIPT.config,
        compaction_interval=None,
        overlap_size=None,
        token_threshold=None,
        event_retention_size=None,
    ),
)


def _fixture(marked: bool, script=SCRIPT) -> Fixture:
    case = standin_sdk.StandInCase(script)
    trace = standin_sdk.StandInDriver().run(case)
    return Fixture(
        kind="script",
        invariant="P3",
        adk_release=trace.version,
        case=case,
        expected={},
        observed={"session": trace.stored.to_json()},
        violations=tuple(str(v) for v in trace.violations),
        known_fault=standin_sdk.FAULT if marked else None,
        sdk="stand-in",
    )


def test_the_stand_in_passes_the_conformance_suite(stand_in) -> None:
    assert SCRIPT.config.compaction_interval is not None
    driver = protocol.driver_named("stand-in")
    case = standin_sdk.StandInCase(SCRIPT)
    made = run_conformance_test(
        driver,
        [("a stand-in case", case), ("a google-adk script, refused", SCRIPT)],
        [("a stand-in case", case, standin_sdk.FIX)],
    )
    assert made == 2 + 3
    assert protocol.sdk_of_case(case) is stand_in


def test_registering_is_undone_after_the_block() -> None:
    with protocol.register_sdk("stand-in", "standin_sdk:StandIn"):
        assert "stand-in" in protocol.sdks() and "stand-in" in protocol.drivers()
    assert "stand-in" not in protocol.sdks() and "stand-in" not in protocol.drivers()


def test_its_fixture_round_trips_through_the_store(tmp_path: Path, stand_in) -> None:
    fixture = _fixture(True)
    path, new = write_fixture(fixture, tmp_path)
    assert new and path.name.startswith("P3-stand-in-0.1.0-")
    loaded = load_fixture(path)
    assert loaded.case == fixture.case and loaded.sdk == "stand-in"
    assert loaded.to_json() == fixture.to_json() and loaded.file_name() == path.name
    judged = judge_fixture(loaded)
    assert judged.label == "XFAIL" and judged.verdict.faults == (standin_sdk.FAULT,)
    assert judge_fixture(_fixture(False)).label == "XFAIL"  # known faults only
    assert judge_fixture(_fixture(True, UNTRIGGERED)).label == "XPASS"
    assert judge_fixture(_fixture(False, UNTRIGGERED)).label == "ok"


def test_an_unregistered_sdk_is_one_line(tmp_path: Path) -> None:
    with protocol.register_sdk("stand-in", "standin_sdk:StandIn"):
        path, _ = write_fixture(_fixture(True), tmp_path)
    unknown = r"sdk: unknown SDK 'stand-in' \(known: python, adk-js\)"
    with pytest.raises(FixtureError, match=unknown):
        load_fixture(path)


def _cli(*args: str, env: dict[str, str] = ENV) -> subprocess.CompletedProcess:
    pythonpath = os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests")])
    return subprocess.run(
        [sys.executable, "-m", "compaction_harness", *args],
        env={**os.environ, "PYTHONPATH": pythonpath, **env, "HARNESS_FIXES": ""},
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )


def test_its_fixtures_replay_and_show_through_the_command_line(tmp_path: Path, stand_in) -> None:
    marked, _ = write_fixture(_fixture(True), tmp_path / "marked")
    done = _cli("replay", str(marked))
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"XFAIL {marked} on stand-in-sdk 0.1.0: known upstream fault ")
    assert f"{standin_sdk.FAULT} (fix {standin_sdk.FIX})" in lines[0]
    assert "observed (stand-in):" in done.stdout and "Traceback" not in done.stderr
    assert lines[-1].startswith("0 held, 0 failed, 1 known upstream faults")
    gone, _ = write_fixture(_fixture(True, UNTRIGGERED), tmp_path / "gone")
    done = _cli("replay", str(gone))
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.startswith(f"XPASS {gone} on stand-in-sdk 0.1.0: the known fault ")
    assert "remove it from standin_sdk.py" in done.stdout
    shown = _cli("show", str(marked))
    assert shown.returncode == 0, shown.stderr
    assert "found on stand-in-sdk 0.1.0" in shown.stdout
    assert f"known upstream fault: {standin_sdk.FAULT} (the stand-in never compacts" in shown.stdout


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("stand-in", "expected name=module:attribute, got 'stand-in'"),
        ("stand-in=no_such_module:StandIn", "No module named 'no_such_module'"),
    ],
)
def test_a_bad_registry_line_for_a_process_is_one_line(tmp_path, value, said) -> None:
    with protocol.register_sdk("stand-in", "standin_sdk:StandIn"):
        path, _ = write_fixture(_fixture(True), tmp_path)
    done = _cli("replay", str(path), env={protocol.ENV: value})
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"error: {protocol.ENV}") and said in done.stderr
