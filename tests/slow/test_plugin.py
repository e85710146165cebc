"""The pytest plugin end to end, in a separate pytest process (pytester)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from compaction_harness.sdk.python.adk import ADK_RELEASE

pytest_plugins = ["pytester"]
ROOT = Path(__file__).resolve().parents[2]

# A planted stall: a prefix helper that behaves like google-adk 2.3.0 to 2.11.0
# (no provably-dead retry).
PLANTED_STALL = f"""
import os, sys, time
from pathlib import Path
sys.path.insert(0, {str(ROOT)!r})
import pytest
from hypothesis import given
from compaction_harness.spec import reference
from compaction_harness.surfaces.checks import check_unit_case
from compaction_harness.sdk.python.unit import Helpers, InvariantViolation
from strategies import unit_cases


def strict(case):
    n = reference.strict_self_contained_prefix(case.session, case.window)
    return Helpers(lambda w, a: w[:n], None)
"""

# For campaigns, which run against a wall-clock budget: a session that fails
# the planted stall as soon as it holds more than the orphaned call. Hypothesis
# tries the simplest example first (the call alone, which holds), and almost
# every example after it fails, so a campaign finds the stall at its second or
# third example however busy the machine is, and there is something to shrink
# (to two events, the first at time 1). The realistic strategies' time to a failure is `make
# bench`'s business, never the gate's.
QUICK_STALL = (
    PLANTED_STALL
    + f"""
sys.path.insert(0, {str(ROOT / "tests")!r})
from hypothesis import strategies as st
from builders import call, session, text, user
from compaction_harness.sdk.python.unit import UnitCase


@st.composite
def stalled_cases(draw):
    start = draw(st.integers(1, 10**6))  # what a failure always shrinks (to 1)
    later = draw(st.lists(st.sampled_from([user, text]), max_size=8))
    steps = [call("i1", start, "c0")]
    steps += [f(f"i{{k + 2}}", start + k + 1) for k, f in enumerate(later)]
    return UnitCase(session(*steps), tuple(range(len(steps))))
"""
)

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
        "compaction_harness.surfaces.pytest_plugin",
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
    # Counts and behaviour only: how long it took is `make bench`'s business
    # (bench/bench.py campaign-budget), so a busy machine cannot turn this red.
    pytester.makepyfile(test_healthy=HEALTHY_PROPERTY)
    result = pytester.runpytest_subprocess(
        "-p",
        "compaction_harness.surfaces.pytest_plugin",
        "--hypothesis-profile=fuzz",
        "--fuzz-seconds=1",
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
            "budget 1 s*of which the pipeline items 0 s (0%)",
            "nothing new: none of the 2 campaign items found a new failure",
            "known upstream faults met: none",
        ]
    )
    rounds = [
        int(line.split("rounds=")[1].split()[0])
        for line in result.stdout.lines
        if line.startswith("PASSED") and "rounds=" in line
    ]
    assert len(rounds) == 2


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
        "compaction_harness.surfaces.pytest_plugin",
        "--hypothesis-profile=gate",
        "-p",
        "no:cacheprovider",
    )
    gate.assert_outcomes(failed=1)
    fuzz = pytester.runpytest_subprocess(
        "-p",
        "compaction_harness.surfaces.pytest_plugin",
        "--hypothesis-profile=fuzz",
        "--fuzz-seconds=0.5",
        "--fuzz-shards=1",
        "-p",
        "no:cacheprovider",
    )
    fuzz.assert_outcomes(passed=1)


INTERRUPTIBLE_PROPERTY = (
    QUICK_STALL
    + """

@pytest.mark.property
@given(case=stalled_cases())
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
        "compaction_harness.surfaces.pytest_plugin",
        "--hypothesis-profile=fuzz",
        "--fuzz-seconds=600",
        "--fuzz-shards=1",
        "--repro-dir",
        str(repros),
        "-p",
        "no:cacheprovider",
        "test_interruptible.py",
    ]
    env = dict(os.environ, SLOW_SHRINK="1")
    first = subprocess.Popen(
        args,
        cwd=pytester.path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        # A shell that runs a job in the background has it ignore Ctrl-C, and
        # Python then never raises KeyboardInterrupt: give the campaign the
        # terminal's default, as a user's `make fuzz` has it.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    # A guard against a hang, not a timing expectation: the failure is the
    # campaign's second or third example.
    deadline = time.monotonic() + 600
    while not (pytester.path / "found").exists():
        assert first.poll() is None, first.stdout.read().decode()
        assert time.monotonic() < deadline, "the campaign found nothing in 600 s"
        time.sleep(0.1)
    first.send_signal(getattr(signal, stop))  # Ctrl-C, or a kill, while Hypothesis shrinks
    output = first.communicate(timeout=600)[0].decode()
    if stop == "SIGINT":
        assert "campaign interrupted: failures found so far are kept" in output
    assert not list(repros.glob("*.json")), "the interrupted run finished shrinking after all"
    saved = [p for p in (pytester.path / ".hypothesis").rglob("*") if p.is_file()]
    assert saved, "Hypothesis's example database holds nothing after the interrupted run"

    second = subprocess.run(
        args, cwd=pytester.path, env=dict(os.environ), capture_output=True, text=True, timeout=600
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
test_counts_itself.labels = lambda: {"not applicable: f": RUNS[0] // 7, "opener: user": 1}
"""


def test_campaign_counts_a_property_that_counts_its_own_runs(pytester: pytest.Pytester):
    pytester.makepyfile(test_counting=COUNTING_PROPERTY)
    result = pytester.runpytest_subprocess(
        "-p",
        "compaction_harness.surfaces.pytest_plugin",
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
    # "Not applicable" labels are listed under the item, other labels are not.
    result.stdout.fnmatch_lines([f"        not applicable: f: {rounds} runs"])
    assert "opener: user" not in result.stdout.str()


def test_an_unknown_pipeline_invariant_is_refused_in_one_line(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
):
    pytester.makepyfile(test_counting=COUNTING_PROPERTY)
    monkeypatch.setenv("HARNESS_PIPELINE_INVARIANTS", "P3,P9")
    result = pytester.runpytest_subprocess(
        "-p", "compaction_harness.surfaces.pytest_plugin", "-p", "no:cacheprovider"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: HARNESS_PIPELINE_INVARIANTS: unknown P9 (choose from P0 P1 P2 P3 P4 P5 P6 P7 P8)"]
    )
    assert "Traceback" not in result.stderr.str()


def _campaign(pytester, tmp_path, seconds, *extra):
    # A campaign in a subprocess. The tests give budgets far beyond what they
    # need: an item ends at its first failure, so the budget is not waited
    # out, and whether a failure is found never depends on how busy the
    # machine is. A test about the budget running out moves the plugin's
    # clock instead (SLOW_SHRINK_PROPERTY).
    import os
    import subprocess
    import sys

    args = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "compaction_harness.surfaces.pytest_plugin",
        "--hypothesis-profile=fuzz",
        f"--fuzz-seconds={seconds}",
        "--fuzz-shards=1",
        "--repro-dir",
        str(tmp_path / "repros"),
        "-p",
        "no:cacheprovider",
        *extra,
    ]
    env = {k: v for k, v in os.environ.items() if k != "HARNESS_CAMPAIGN_STARTED"}
    return subprocess.run(
        args, cwd=pytester.path, env=env, capture_output=True, text=True, timeout=1800
    )


QUICK_BROKEN_PROPERTY = (
    QUICK_STALL
    + """

@pytest.mark.property
@given(case=stalled_cases())
def test_planted_stall(case):
    check_unit_case(case, strict(case))
"""
)


def test_a_rerun_that_meets_only_recorded_fixtures_exits_0_and_says_so(pytester, tmp_path):
    pytester.makepyfile(test_planted=QUICK_BROKEN_PROPERTY)
    first = _campaign(pytester, tmp_path, 600)
    assert first.returncode == 1, first.stdout[-3000:]
    (fixture,) = (tmp_path / "repros").glob("U3-*.json")
    assert "NEW: 1 of 1 campaign items found a failure" in first.stdout
    # The example database replays the failure at once; it shrinks to the
    # recorded fixture, which is nothing new.
    second = _campaign(pytester, tmp_path, 600)
    assert second.returncode == 0, second.stdout[-3000:]
    assert f"met recorded fixture {os.path.relpath(fixture, pytester.path)}" in second.stdout
    assert "nothing new: none of the 1 campaign items found a new failure" in second.stdout
    assert "met fixtures recorded before this campaign:" in second.stdout
    assert [p.name for p in (tmp_path / "repros").glob("*.json")] == [fixture.name]


def test_a_failure_kept_as_an_open_finding_is_met_not_written_again(pytester, tmp_path):
    # docs/findings/ holds failures kept out of the corpus until decided: a
    # campaign meeting one writes nothing, so the gate after it stays green.
    pytester.makepyfile(test_planted=QUICK_BROKEN_PROPERTY)
    # The project's folder: pytest would take the common ancestor of the
    # paths on the command line (--repro-dir's folder too, once it exists).
    root = f"--rootdir={pytester.path}"
    first = _campaign(pytester, tmp_path, 600, root)
    assert first.returncode == 1, first.stdout[-3000:]
    (fixture,) = (tmp_path / "repros").glob("U3-*.json")
    findings = pytester.path / "docs" / "findings"
    findings.mkdir(parents=True)
    kept = findings / fixture.name
    fixture.rename(kept)
    second = _campaign(pytester, tmp_path, 600, root)
    assert second.returncode == 0, second.stdout[-3000:]
    assert f"met recorded fixture {os.path.relpath(kept, pytester.path)}" in second.stdout
    assert not list((tmp_path / "repros").glob("*.json"))


SLOW_SHRINK_PROPERTY = (
    QUICK_STALL
    + """
import compaction_harness.surfaces.campaign_clock as plugin  # the items' clock


class AnHourOn:
    # The plugin's clock jumped an hour: the campaign's budget is spent.
    def __getattr__(self, name):
        return getattr(time, name)

    def time(self):
        return time.time() + 3600


def counted(case):
    # Every example Hypothesis draws once the budget is spent.
    if Path("jumped").exists():
        with open("drawn after the budget", "a") as tally:
            tally.write("x")
    return case


@pytest.mark.property
@given(case=stalled_cases().map(counted))
def test_planted_stall(case):
    try:
        check_unit_case(case, strict(case))
    except InvariantViolation:
        if not Path("jumped").exists():
            Path("jumped").touch()
            # The budget runs out while the first failure is in hand: whatever
            # Hypothesis tries next, shrinking is out of time.
            plugin.time = AnHourOn()
        raise
"""
)


def test_shrinking_cut_short_by_the_budget_is_recorded_and_continued_next_run(pytester, tmp_path):
    pytester.makepyfile(test_planted=SLOW_SHRINK_PROPERTY)
    first = _campaign(pytester, tmp_path, 600, "--hypothesis-seed=0")
    assert first.returncode == 1, first.stdout[-3000:]
    (cut,) = (tmp_path / "repros").glob("U3-*.json")
    data = json.loads(cut.read_text())
    assert data["shrinking"].startswith("cut short by the campaign's time budget")
    assert "(shrinking cut short by the budget)" in first.stdout
    assert "shrinking was cut short by the budget: run `make fuzz` again" in first.stdout
    # The run ended at the first candidate after the budget: Hypothesis did
    # not go on drawing (and skipping) the thousands its shrinker would try.
    assert (pytester.path / "drawn after the budget").read_text() == "x"
    # The next campaign starts from the saved example and shrinks it to the end.
    second = _campaign(pytester, tmp_path, 600)
    assert second.returncode == 1, second.stdout[-3000:]
    finished = [p for p in (tmp_path / "repros").glob("U3-*.json") if p != cut]
    if finished:  # a smaller session than the cut-short one
        (done,) = finished
        data = json.loads(done.read_text())
        assert "shrinking" not in data
        before = json.loads(cut.read_text())["session"]["steps"]
        after = data["session"]["steps"]
        # Fewer events, or as many with the smaller start the stall shrinks to.
        assert (len(after), after[0]["timestamp"]) < (len(before), before[0]["timestamp"])
    else:  # the cut-short example was already minimal: met as the recorded fixture
        assert "met recorded fixture" in second.stdout
    assert "rounds=1" in second.stdout  # found again in the first round


def test_a_quiet_campaign_prints_the_summary_without_statistics(pytester):
    pytester.makepyfile(test_healthy=HEALTHY_PROPERTY)
    result = pytester.runpytest_subprocess(
        "-p",
        "compaction_harness.surfaces.pytest_plugin",
        "--hypothesis-profile=fuzz",
        "--fuzz-seconds=1",
        "--fuzz-shards=1",
        "--hypothesis-show-statistics",
        "-q",
        "-p",
        "no:cacheprovider",
    )
    result.assert_outcomes(passed=1)
    out = result.stdout.str()
    assert "fuzz campaign summary" in out and "nothing new" in out
    assert "Hypothesis Statistics" not in out
    assert "Stopped because" not in out


KNOWN_FAULT_PROPERTY = f"""
import sys
sys.path.insert(0, {str(ROOT)!r})
sys.path.insert(0, {str(ROOT / "tests")!r})
import pytest
from hypothesis import given, strategies as st
from builders import call, session, user
from compaction_harness.surfaces.checks import check_unit_case
from compaction_harness.sdk.python.unit import UnitCase

# google-adk 2.13.0's known fault dead-call-retry-skipped-at-invocation-boundary.
CASE = UnitCase(session(user("i1", 1), call("i2", 2, "x"), user("i3", 3)), (0, 1, 2))


@pytest.mark.property
@given(st.just(CASE))
def test_meets_a_known_fault(case):
    check_unit_case(case)
"""


@pytest.mark.skipif(ADK_RELEASE != "2.13.0", reason="the fault is recorded for 2.13.0")
def test_the_summary_lists_known_faults_met_by_unit_items(pytester):
    pytester.makepyfile(test_known=KNOWN_FAULT_PROPERTY)
    result = pytester.runpytest_subprocess(
        "-p",
        "compaction_harness.surfaces.pytest_plugin",
        "--hypothesis-profile=fuzz",
        "--fuzz-seconds=1",
        "--fuzz-shards=1",
        "-p",
        "no:cacheprovider",
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "        known upstream fault dead-call-retry-skipped-at-invocation-boundary: "
            "* examples (evidence: fix dead-call-retry-at-every-boundary)",
            "known upstream faults met: dead-call-retry-skipped-at-invocation-boundary (*",
        ]
    )


STORED_SCRIPTS_PROPERTY = f"""
import sys
sys.path.insert(0, {str(ROOT)!r})
import pytest
from hypothesis import given, strategies as st
from compaction_harness.spec.scripts import Open, Script, ScriptConfig, Text
from compaction_harness.surfaces.checks import check_case

def script(storage, driver):
    config = ScriptConfig(compaction_interval=1, overlap_size=0, storage=storage, driver=driver)
    return Script(config, (Open(), Text(), Open(), Text()))

# One item a kind: the first example of an item's round always runs, so
# both kinds run however slow the machine is (one item drawing from both
# ran one script on a loaded machine and the other kind never).
@pytest.mark.property
@given(st.just(script("memory", "emulated")))
def test_in_memory(case):
    check_case(case)

@pytest.mark.property
@given(st.just(script("sqlite", "runner")))
def test_on_sqlite(case):
    check_case(case)
"""


def test_the_summary_says_where_the_scripts_time_went(pytester):
    """Per driver and session service: seconds, share of the item time,
    scripts and seconds a script (which comes first depends on the machine:
    not asserted)."""
    pytester.makepyfile(test_stored=STORED_SCRIPTS_PROPERTY)
    result = pytester.runpytest_subprocess(
        "-p",
        "compaction_harness.surfaces.pytest_plugin",
        "--hypothesis-profile=fuzz",
        "--fuzz-seconds=2",
        "--fuzz-shards=1",
        "-p",
        "no:cacheprovider",
    )
    result.assert_outcomes(passed=2)
    lines = result.stdout.lines
    start = lines.index("time per driver / storage (running and classifying scripts):")
    kinds = lines[start + 1 : start + 3]
    assert {line.split()[0] + " / " + line.split()[2] for line in kinds} == {
        "emulated / memory",
        "runner / sqlite",
    }, kinds
    for line in kinds:
        assert re.fullmatch(
            r"  \S+ / \S+ +\d+ s \( *\d+%\), [1-9]\d* scripts, \d+\.\d\d s a script", line
        ), line


def test_one_failure_found_by_two_shards_is_one_fixture_named_once(pytester, tmp_path):
    pytester.makepyfile(test_planted=QUICK_BROKEN_PROPERTY)
    result = _campaign(pytester, tmp_path, 600, "--fuzz-shards=2")
    assert result.returncode == 1, result.stdout[-3000:]
    (fixture,) = (tmp_path / "repros").glob("U3-*.json")
    shown = os.path.relpath(fixture, pytester.path)
    assert (
        f"NEW: 2 of 2 campaign items found a failure; fixtures written: {shown} "
        "(found by 2 items)" in result.stdout
    ), result.stdout[-3000:]


WEIGHTED_PROPERTIES = """
import pytest

@pytest.mark.property(weight=6)
def test_heavy():
    pass

@pytest.mark.property
def test_light():
    pass
"""


def test_a_campaign_runs_each_shard_lightest_item_first(pytester):
    # A failing item may shrink until the campaign's end: the heaviest runs
    # last on its worker, so it cannot starve the items after it.
    pytester.makepyfile(test_weighted=WEIGHTED_PROPERTIES)
    result = pytester.runpytest_subprocess(
        "-p",
        "compaction_harness.surfaces.pytest_plugin",
        "--hypothesis-profile=fuzz",
        "--fuzz-seconds=1",
        "--fuzz-shards=2",
        "--collect-only",
        "-q",
        "-p",
        "no:cacheprovider",
    )
    order = [line for line in result.stdout.lines if "::" in line]
    assert order == [
        "test_weighted.py::test_light[shard0]",
        "test_weighted.py::test_heavy[shard0]",
        "test_weighted.py::test_light[shard1]",
        "test_weighted.py::test_heavy[shard1]",
    ]


def test_adk_js_tests_without_node_stop_in_one_line(tmp_path: Path):
    # `make test SDK=js` without node on PATH: one line and exit 2 before any
    # test runs, not an AdkJsUnavailable traceback per test.
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "tests/slow/adk_js"],
        cwd=root,
        env={**os.environ, "PATH": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stdout[-2000:]
    assert done.stderr.count("\n") == 1, done.stderr[-2000:]
    assert done.stderr.startswith("error: node is not installed"), done.stderr
    assert "Traceback" not in done.stdout


def test_the_registry_knows_the_makefiles_adk_js_test_folders():
    # The plugin asks the registry which SDK a run of test files alone targets.
    from compaction_harness.sdk import protocol

    root = Path(__file__).resolve().parents[2]
    makefile = (root / "Makefile").read_text()
    listed = re.search(r"^ADKJS_TESTS := (.*)$", makefile, re.M).group(1)
    folder = protocol.sdk_named("adk-js").test_folder
    assert listed == f"$(wildcard tests/*/{folder})"
    # What the wildcard finds: ADK-JS's tests of each purpose.
    found = sorted(root.glob(f"tests/*/{folder}/test_*.py"))
    assert found and {p.parts[-3] for p in found} >= {"slow", "corpus", "conformance"}
    assert protocol.sdk_of_test_files([str(p.relative_to(root)) for p in found]).name == "adk-js"
    assert protocol.sdk_of_test_files(["tests/slow/test_cli.py", str(found[0])]) is None


def test_an_unwritable_repro_folder_stops_a_campaign_in_one_line(pytester, tmp_path):
    # A path under a regular file cannot be written, even by root (for whom a
    # read-only folder is writable): said before any example runs.
    pytester.makepyfile(test_planted=QUICK_BROKEN_PROPERTY)
    (tmp_path / "a-file").write_text("")
    blocked = tmp_path / "a-file" / "repros"
    done = _campaign(pytester, tmp_path, 600, "--repro-dir", str(blocked))
    assert done.returncode == 2, done.stdout[-3000:]
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"error: the repro folder {blocked} is not writable")
    assert "--repro-dir" in done.stderr
    assert "test_planted_stall" not in done.stdout


REPRO_FOLDER_LOST_PROPERTY = (
    QUICK_STALL
    + """
import os
import shutil


@pytest.mark.property
@given(case=stalled_cases())
def test_planted_stall(case):
    try:
        check_unit_case(case, strict(case))
    except InvariantViolation:
        # The repro folder goes away during the campaign (a file takes its
        # place): the fixture can no longer be written there.
        repros = Path(os.environ["PLANTED_REPROS"])
        if repros.is_dir():
            shutil.rmtree(repros)
            repros.write_text("")
        raise
"""
)


def test_a_repro_folder_refusing_mid_campaign_keeps_the_fixture_elsewhere(
    pytester, tmp_path, monkeypatch
):
    pytester.makepyfile(test_planted=REPRO_FOLDER_LOST_PROPERTY)
    monkeypatch.setenv("PLANTED_REPROS", str(tmp_path / "repros"))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    done = _campaign(pytester, tmp_path, 600)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    fallback = tmp_path / "tmp" / "compaction-harness-repros"
    (kept,) = fallback.glob("U3-*.json")
    assert "shrinking was cut short" not in done.stdout
    assert f"written to {fallback} instead" in done.stdout
    assert "NEW: 1 of 1 campaign items found a failure" in done.stdout
    assert kept.name in done.stdout


def _fuzz(pytester, seconds, *extra):
    """A campaign of ``seconds`` in a pytester subprocess, one shard an item."""
    return pytester.runpytest_subprocess(
        "-p",
        "compaction_harness.surfaces.pytest_plugin",
        "--hypothesis-profile=fuzz",
        f"--fuzz-seconds={seconds}",
        "--fuzz-shards=1",
        *extra,
        "-p",
        "no:cacheprovider",
    )


@pytest.mark.skipif(ADK_RELEASE != "2.13.0", reason="the fault is recorded for 2.13.0")
def test_a_search_for_one_fault_fails_on_it_and_reports_when(pytester, tmp_path, monkeypatch):
    # bench/fault_times.py: the sought fault is not excused; its shrunk
    # fixture is written unjudged and one line says when it was found.
    report = tmp_path / "found.jsonl"
    monkeypatch.setenv("HARNESS_SOUGHT_FAULT", "dead-call-retry-skipped-at-invocation-boundary")
    monkeypatch.setenv("HARNESS_SOUGHT_REPORT", str(report))
    monkeypatch.delenv("HARNESS_CAMPAIGN_STARTED", raising=False)
    pytester.makepyfile(test_known=KNOWN_FAULT_PROPERTY)
    result = _fuzz(pytester, 30, f"--repro-dir={tmp_path / 'repros'}")
    result.assert_outcomes(failed=1)
    lines = [json.loads(text) for text in report.read_text().splitlines()]
    # The item's first failure, as it happened, then the shrunk fixture.
    (first,) = [line for line in lines if "shrunk" not in line]
    (line,) = [line for line in lines if "shrunk" in line]
    assert first["first_failure"] == line["first_failure"] and first["item"] == line["item"]
    assert line["fault"] == "dead-call-retry-skipped-at-invocation-boundary"
    assert line["invariant"] == "U3" and line["events"] == 3 and line["operations"] is None
    assert 0 < line["first_failure"] <= line["shrunk"]
    assert Path(line["fixture"]).parent == tmp_path / "repros"
    # Another fault sought: this one is excused as ever, and nothing fails.
    monkeypatch.setenv("HARNESS_SOUGHT_FAULT", "sliding-window-splits-call-pairs")
    again = _fuzz(pytester, 1, f"--repro-dir={tmp_path / 'repros'}")
    again.assert_outcomes(passed=1)
    # Outside a campaign it would excuse everything else: refused in one line.
    gate = pytester.runpytest_subprocess(
        "-p", "compaction_harness.surfaces.pytest_plugin", "-p", "no:cacheprovider"
    )
    assert gate.ret == pytest.ExitCode.USAGE_ERROR
    assert "HARNESS_SOUGHT_FAULT is set: it is for a campaign seeking one fault" in (
        gate.stderr.str()
    )


DRAWS_PROPERTY = """
import os
import pytest
from hypothesis import given, settings, strategies as st

@pytest.mark.property
@settings(max_examples=5)  # rounds of five: many rounds in the budget, however busy the machine
@given(st.integers(0, 10**12))
def test_draws(n):
    with open(os.environ["DRAWN"], "a") as out:
        out.write(f"{n}\\n")
"""


def test_a_seeded_campaign_draws_new_examples_each_round_and_the_same_on_a_rerun(
    pytester, tmp_path, monkeypatch
):
    # --hypothesis-seed alone would give every round one seed, hence the
    # same examples round after round; each round gets a seed of its own.
    pytester.makepyfile(test_draws=DRAWS_PROPERTY)
    runs = []
    for name in ("a", "b"):
        drawn = tmp_path / name
        monkeypatch.setenv("DRAWN", str(drawn))
        monkeypatch.delenv("HARNESS_CAMPAIGN_STARTED", raising=False)
        result = _fuzz(pytester, 2, "--hypothesis-seed=7", f"--repro-dir={tmp_path / 'repros'}")
        result.assert_outcomes(passed=1)
        runs.append(drawn.read_text().split())
    first, second = runs
    assert len(first) > 2 * 5, len(first)  # more than two rounds
    # Rounds do not repeat each other (one seed for all: 5 distinct in all).
    assert len(set(first)) > 0.5 * len(first)
    shared = min(len(first), len(second))
    assert first[:shared] == second[:shared]  # the same seed draws the same examples
