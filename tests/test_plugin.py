"""The pytest plugin end to end, in a separate pytest process (pytester)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]
ROOT = Path(__file__).resolve().parents[1]

# A planted stall: a prefix helper that behaves like google-adk 2.3.0 to 2.11.0
# (no provably-dead retry).
PLANTED_STALL = f"""
import os, sys, time
from pathlib import Path
sys.path.insert(0, {str(ROOT)!r})
import pytest
from hypothesis import given
from compaction_harness import reference
from compaction_harness.checks import check_unit_case
from compaction_harness.unit import Helpers, InvariantViolation
from strategies import unit_cases


def strict(case):
    n = reference.strict_self_contained_prefix(case.session, case.window)
    return Helpers(lambda w, a: w[:n], None)
"""

BROKEN_PROPERTY = (
    PLANTED_STALL
    + """

@pytest.mark.property
@given(case=unit_cases())
def test_planted_stall(case):
    check_unit_case(case, strict(case))
"""
)

HEALTHY_PROPERTY = f"""
import sys
sys.path.insert(0, {str(ROOT)!r})
import pytest
from hypothesis import given
from strategies import unit_cases

@pytest.mark.property
@given(case=unit_cases())
def test_healthy(case):
    assert case.window == tuple(sorted(case.window))
"""


def test_failing_property_writes_the_shrunk_fixture(pytester: pytest.Pytester, tmp_path: Path):
    pytester.makepyfile(test_planted=BROKEN_PROPERTY)
    repros = tmp_path / "repros"
    result = pytester.runpytest_subprocess(
        "-p",
        "compaction_harness.pytest_plugin",
        "--repro-dir",
        str(repros),
        "--hypothesis-profile=gate",
        "-p",
        "no:cacheprovider",
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*repro fixture written: *U3-*.json*", "*repro fixtures written*"])
    (path,) = repros.glob("*.json")
    data = json.loads(path.read_text())
    assert data["invariant"] == "U3"
    assert len(data["session"]["steps"]) == 2  # shrunk to the true minimum
    assert data["expected"]["prefix_length"] == 2 and data["observed"]["prefix_length"] == 0
    assert not list(repros.glob(".tmp-*"))


def test_campaign_runs_rounds_until_the_budget_and_summarises(pytester: pytest.Pytester):
    pytester.makepyfile(test_healthy=HEALTHY_PROPERTY)
    result = pytester.runpytest_subprocess(
        "-p",
        "compaction_harness.pytest_plugin",
        "--hypothesis-profile=fuzz",
        "--fuzz-seconds=3",
        "--fuzz-shards=2",
        "-p",
        "no:cacheprovider",
    )
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "*fuzz campaign summary*",
            "PASSED*test_healthy[[]shard0[]]*rounds=*",
            "PASSED*test_healthy[[]shard1[]]*rounds=*",
            "0 of 2 campaign items found a failure; fixtures written: none",
        ]
    )
    seconds = [
        float(line.split("seconds=")[1].split()[0])
        for line in result.stdout.lines
        if line.startswith("PASSED") and "seconds=" in line
    ]
    # One worker shares the 3 s among the two items: each spends its 1.5 s.
    assert len(seconds) == 2 and all(s >= 1.5 for s in seconds), seconds
    assert sum(seconds) < 3 + 2 * 2.5, seconds  # overshoot: at most a round each


def test_campaign_skips_the_explicit_canaries(pytester: pytest.Pytester, tmp_path: Path):
    # A canary @example that fails must not be what a campaign reports: the
    # campaign has to find faults by itself, the gate keeps the canaries.
    pytester.makepyfile(
        test_canary=HEALTHY_PROPERTY.replace(
            "@given(case=unit_cases())",
            "@example(case=None)\n@given(case=unit_cases())",
        ).replace("from hypothesis import given", "from hypothesis import example, given")
    )
    gate = pytester.runpytest_subprocess(
        "-p",
        "compaction_harness.pytest_plugin",
        "--hypothesis-profile=gate",
        "-p",
        "no:cacheprovider",
    )
    gate.assert_outcomes(failed=1)
    fuzz = pytester.runpytest_subprocess(
        "-p",
        "compaction_harness.pytest_plugin",
        "--hypothesis-profile=fuzz",
        "--fuzz-seconds=0.5",
        "--fuzz-shards=1",
        "-p",
        "no:cacheprovider",
    )
    fuzz.assert_outcomes(passed=1)


INTERRUPTIBLE_PROPERTY = (
    PLANTED_STALL
    + """

@pytest.mark.property
@given(case=unit_cases())
def test_planted_stall(case):
    try:
        check_unit_case(case, strict(case))
    except InvariantViolation:
        if os.environ.get("SLOW_SHRINK"):
            Path("found").touch()  # a failure is in hand: Hypothesis has saved it
            time.sleep(0.5)  # keep shrinking slow enough to interrupt
        raise
"""
)


@pytest.mark.parametrize("stop", ["SIGINT", "SIGTERM"])
def test_an_interrupted_campaign_keeps_its_failure_for_the_next_run(
    pytester: pytest.Pytester, tmp_path: Path, stop: str
):
    import os
    import signal
    import subprocess
    import sys
    import time

    pytester.makepyfile(test_interruptible=INTERRUPTIBLE_PROPERTY)
    repros = tmp_path / "repros"
    args = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "compaction_harness.pytest_plugin",
        "--hypothesis-profile=fuzz",
        "--fuzz-seconds=60",
        "--fuzz-shards=1",
        "--repro-dir",
        str(repros),
        "-p",
        "no:cacheprovider",
        "test_interruptible.py",
    ]
    env = dict(os.environ, SLOW_SHRINK="1")
    first = subprocess.Popen(
        args, cwd=pytester.path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    deadline = time.monotonic() + 60
    while not (pytester.path / "found").exists():
        assert first.poll() is None, first.stdout.read().decode()
        assert time.monotonic() < deadline, "the campaign found nothing in 60 s"
        time.sleep(0.1)
    first.send_signal(getattr(signal, stop))  # Ctrl-C, or a kill, while Hypothesis shrinks
    output = first.communicate(timeout=60)[0].decode()
    if stop == "SIGINT":
        assert "campaign interrupted: failures found so far are kept" in output
    assert not list(repros.glob("*.json")), "the interrupted run finished shrinking after all"
    saved = [p for p in (pytester.path / ".hypothesis").rglob("*") if p.is_file()]
    assert saved, "Hypothesis's example database holds nothing after the interrupted run"

    second = subprocess.run(
        args, cwd=pytester.path, env=dict(os.environ), capture_output=True, text=True, timeout=120
    )
    assert second.returncode == 1, second.stdout
    assert "rounds=1" in second.stdout  # found again in the first round
    (fixture,) = repros.glob("U3-*.json")
    assert len(json.loads(fixture.read_text())["session"]["steps"]) <= 2


COUNTING_PROPERTY = """
import pytest
RUNS = [0]

@pytest.mark.property
def test_counts_itself():
    # Like the pipeline state machine: a plain function that counts its runs.
    RUNS[0] += 7

test_counts_itself.examples_run = lambda: RUNS[0]
test_counts_itself.labels = lambda: {"known upstream fault: f": RUNS[0] // 7, "opener: user": 1}
"""


def test_campaign_counts_a_property_that_counts_its_own_runs(pytester: pytest.Pytester):
    pytester.makepyfile(test_counting=COUNTING_PROPERTY)
    result = pytester.runpytest_subprocess(
        "-p",
        "compaction_harness.pytest_plugin",
        "--hypothesis-profile=fuzz",
        "--fuzz-seconds=0.2",
        "--fuzz-shards=1",  # under xdist the worker count is inherited otherwise
        "-p",
        "no:cacheprovider",
    )
    result.assert_outcomes(passed=1)
    (line,) = [ln for ln in result.stdout.lines if ln.startswith("PASSED")]
    rounds = int(line.split("rounds=")[1].split()[0])
    assert f"examples={7 * rounds} " in line
    # Known-fault labels are listed under the item, other labels are not.
    result.stdout.fnmatch_lines([f"        known upstream fault: f: {rounds} runs"])
    assert "opener: user" not in result.stdout.str()


def test_an_unknown_pipeline_invariant_is_refused_in_one_line(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
):
    pytester.makepyfile(test_counting=COUNTING_PROPERTY)
    monkeypatch.setenv("HARNESS_PIPELINE_INVARIANTS", "P3,P9")
    result = pytester.runpytest_subprocess(
        "-p", "compaction_harness.pytest_plugin", "-p", "no:cacheprovider"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: HARNESS_PIPELINE_INVARIANTS: unknown P9 (choose from P1 P2 P3 P4 P5 P6 P7)"]
    )
    assert "Traceback" not in result.stderr.str()
