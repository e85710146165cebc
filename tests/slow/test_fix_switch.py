"""One switch for the fixed SDK: ``FIXES=`` / ``HARNESS_FIXES`` / ``--fixes``.

With the fix of a fixture's fault applied, the fixture holds and is said to
("holds with fix X"), where the verdict table alone would call it XPASS;
under ``FIXES=all`` the gate asks every fault fixture to hold. A fix name
that is unknown, or that the installed release cannot take, is one line and
exit status 2 everywhere the switch is read.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from compaction_harness.faults.catalogue import faults_of
from compaction_harness.sdk.python.fixes import FIXES, Fix, active, applied, fixes_for
from compaction_harness.store.fixtures import load_fixture
from compaction_harness.surfaces import cli, switch
from compaction_harness.surfaces.verdicts import FixtureVerdict, judge_fixture

ROOT = Path(__file__).resolve().parents[2]
#: fault dead-call-retry-skipped-at-invocation-boundary
FAULT_FIXTURE = ROOT / "tests" / "repros" / "U3-2.13.0-e3f99bee2b15adeb.json"
FIX = "dead-call-retry-at-every-boundary"


def _harness(*args: str, fixes: str | None = None, cwd: Path = ROOT):
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    env.pop(switch.ENV, None)
    if fixes is not None:
        env[switch.ENV] = fixes
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, cwd=cwd, env=env, check=False
    )


def _replay(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *argv: str, fixes=None
) -> tuple[int, str]:
    """``replay ARGV`` in this process with ``HARNESS_FIXES=fixes`` (None: unset):
    exit status and standard output."""
    if fixes is None:
        monkeypatch.delenv(switch.ENV, raising=False)
    else:
        monkeypatch.setenv(switch.ENV, fixes)
    code = cli.main(["replay", *argv])
    return code, capsys.readouterr().out


def test_all_makes_a_fault_fixture_hold_under_replay(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    published = _replay(capsys, monkeypatch, str(FAULT_FIXTURE))
    assert published[0] == 0, published
    assert published[1].startswith("XFAIL"), published
    # HARNESS_FIXES as `make replay FIXES=all` hands it on: to the real entry point.
    fixed = _harness("-m", "compaction_harness", "replay", str(FAULT_FIXTURE), fixes="all")
    assert fixed.returncode == 0, fixed.stderr
    first = fixed.stdout.splitlines()[0]
    assert first.startswith("ok ") and first.endswith(f"holds with fix {FIX}"), first
    every = switch.parse("all")
    assert f"google-adk 2.13.0 {switch.described(every, short=True)}:" in first
    assert fixed.stdout.splitlines()[-1].endswith(f"(google-adk 2.13.0 {switch.described(every)})")
    # --fixes wins over the environment; none is the release as published.
    again = _replay(capsys, monkeypatch, "--fixes", "none", str(FAULT_FIXTURE), fixes="all")
    assert again[1].startswith("XFAIL"), again
    named = _replay(capsys, monkeypatch, "--fixes", FIX, str(FAULT_FIXTURE))
    assert named[1].startswith("ok "), named


def test_without_the_switch_reading_a_held_fault_fixture_is_xpass() -> None:
    # What the verdict table says of a fixture whose fault no longer shows;
    # the switch says why it does not: its fix is applied.
    fixture = load_fixture(FAULT_FIXTURE)
    with applied([FIX]):
        judged = judge_fixture(fixture)
        assert judged.label == "XPASS", judged
        read = switch.judged_with_fixes(fixture, judged, active())
    assert (read.label, read.reason) == ("ok", f"holds with fix {FIX}")
    assert switch.gate_expectation(fixture, read, [FIX], "all") is None


def test_a_fixture_that_still_fails_with_its_fix_is_named_so() -> None:
    fixture = load_fixture(FAULT_FIXTURE)
    with applied([FIX]):
        judged = judge_fixture(fixture)
    failing = FixtureVerdict(
        "XPASS",
        judged.verdict.__class__(judged.verdict.release, ("v",), (), judged.verdict.outcome),
    )
    read = switch.judged_with_fixes(fixture, failing, [FIX])
    assert read.label == "FAIL" and read.reason.startswith(f"still fails with fix {FIX}")


def test_under_all_a_fault_without_a_fix_fails_the_gate_unless_it_says_why() -> None:
    verdict = judge_fixture(load_fixture(FAULT_FIXTURE)).verdict
    xfail = FixtureVerdict("XFAIL", verdict, "known upstream fault F (pattern)")
    for fault in faults_of("google-adk"):
        marked = SimpleNamespace(known_fault=fault.id, is_js=False)
        said = switch.gate_expectation(marked, xfail, list(FIXES), "all")
        if fixes_for(fault.id):
            assert said is not None and "every fault fixture must hold" in said
        elif fault.no_fix_reason:
            assert said is None, fault.id  # excused: no fix can exist, and the record says why
        else:
            assert said is not None and f"the fault {fault.id} has no fix yet" in said
        # Named fixes (not all): a fixture keeps its verdict.
        assert switch.gate_expectation(marked, xfail, list(FIXES), FIX) is None


#: The commands that read the switch. The command line's --fixes runs in this
#: process (its exit status and standard error are what it returns and
#: prints); the real entry point is run with HARNESS_FIXES (replay-env), as
#: are `make`'s check and the pytest plugin, each a process of its own.
IN_PROCESS = "in process"


@pytest.mark.parametrize(
    "command",
    [
        [IN_PROCESS, "replay", "--fixes", "no-such-fix", str(FAULT_FIXTURE)],
        [IN_PROCESS, "show", "--fixes", "no-such-fix", str(FAULT_FIXTURE)],
        ["-m", "compaction_harness", "replay", str(FAULT_FIXTURE)],
        [IN_PROCESS, "minimize", "--fixes=no-such-fix", "--invariant=U3", "s.json"],
        ["-m", "compaction_harness.surfaces.switch", "no-such-fix"],  # what `make` checks with
        ["-m", "pytest", "-p", "no:cacheprovider", "-q", "tests/fast/test_reference.py"],
    ],
    ids=["replay", "show", "replay-env", "minimize", "make", "pytest"],
)
def test_an_unknown_fix_is_one_line_and_exit_2(
    command: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    if command[0] == IN_PROCESS:
        monkeypatch.setenv(switch.ENV, "no-such-fix")
        monkeypatch.chdir(ROOT)
        code = cli.main(command[1:])
        out, err = capsys.readouterr()
        done = SimpleNamespace(returncode=code, stdout=out, stderr=err)
    else:
        done = _harness(*command, fixes="no-such-fix")
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "no fix named 'no-such-fix'" in lines[0], done.stderr
    assert lines[0].startswith("error: ") and "Traceback" not in done.stdout + done.stderr


def test_a_fix_the_release_cannot_take_is_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    diff = tmp_path / "stale.diff"
    diff.write_text(
        "--- a/google/adk/apps/compaction.py\n+++ b/google/adk/apps/compaction.py\n"
        "@@ -1,1 +1,1 @@\n-no line of the release reads so\n+nor so\n",
        encoding="utf-8",
    )
    monkeypatch.setitem(
        FIXES, "stale", Fix("stale", ("f",), "a diff of another release", str(diff))
    )
    with pytest.raises(switch.FixesError, match="cannot take the fix stale"):
        switch.parse("stale")
    assert "stale" not in switch.parse("all")  # all: the fixes the release can take
    assert cli.main(["replay", "--fixes", f"{FIX},stale", str(FAULT_FIXTURE)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "google-adk 2.13.0 cannot take the fix stale" in err[0], err


def test_fixes_that_apply_alone_but_not_together_are_one_line_and_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A second fix with the same diff as FIX: each applies to the release
    # alone, the second cannot apply over the first (GNU patch --batch alone
    # took it for a reversed patch and undid the first: the replay then ran
    # with neither fix and said FAIL).
    same = FIXES[FIX]
    before = os.environ.get(switch.ENV)
    monkeypatch.setitem(FIXES, "twin", Fix("twin", ("f",), "the same diff again", same.diff))
    assert switch.parse(f"{FIX},twin") == (FIX, "twin")
    assert cli.main(["replay", "--fixes", f"{FIX},twin", str(FAULT_FIXTURE)]) == 2
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --fixes "), err
    assert "does not apply" in lines[0] and "Traceback" not in out + err
    # Nothing of the command is left in this process's environment.
    assert os.environ.get(switch.ENV) == before


def test_replay_leaves_harness_fixes_as_it_found_it() -> None:
    before = os.environ.get(switch.ENV)
    assert cli.main(["replay", "--fixes", FIX, str(FAULT_FIXTURE)]) == 0
    assert os.environ.get(switch.ENV) == before


def test_the_plugin_applies_the_fixes_for_the_session_and_says_so(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (tmp_path / "test_inside.py").write_text(
        "from compaction_harness.sdk.python.fixes import active\n\n\n"
        f"def test_fixed():\n    assert active() == {switch.parse('all')!r}\n",
        encoding="utf-8",
    )
    plugin = ["-m", "pytest", "-p", "no:cacheprovider"]
    plugin += ["-p", "compaction_harness.surfaces.pytest_plugin"]
    # In a pytest-xdist worker (the test asserts there) and its controller (the
    # header), which configures itself as a plain pytest process does.
    done = _harness(*plugin, "-n", "1", "test_inside.py", fixes="all", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    every = switch.described(switch.parse("all"))
    header = f"compaction-harness: google-adk 2.13.0 {every} (HARNESS_FIXES=all)"
    assert header in done.stdout
    plain = _harness(*plugin, "test_inside.py", cwd=tmp_path)
    assert plain.returncode == 1 and "compaction-harness: google-adk" not in plain.stdout


@pytest.mark.parametrize("target", ["test", "fuzz", "fuzz-worker", "replay", "show", "matrix"])
def test_make_hands_fixes_on_as_harness_fixes(target: str) -> None:
    extra = ["FIXTURE=x.json"] if target == "show" else ["FUZZ_DB=redis://h:1/0"]
    for sdk, checked in (("python", True), ("js", False)):
        if sdk == "js" and target in ("replay", "show", "matrix"):
            continue
        done = subprocess.run(
            ["make", "-n", target, "FIXES=all", f"SDK={sdk}", *extra],
            capture_output=True,
            text=True,
            cwd=ROOT,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert 'HARNESS_FIXES="all"' in done.stdout, done.stdout
        check = 'compaction_harness.surfaces.switch "all"' in done.stdout
        assert check == (checked and target != "show"), (target, sdk)
        # The gate on the fixed SDK is the part that judges ADK.
        assert ('-m "property or judges_adk"' in done.stdout) == (target == "test")
    plain = subprocess.run(["make", "-n", target, *extra], capture_output=True, text=True, cwd=ROOT)
    assert "judges_adk" not in plain.stdout and "surfaces.switch" not in plain.stdout


def test_an_adk_js_fix_name_is_left_to_the_node_driver(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from compaction_harness.faults import catalogue

    index = tmp_path / "index.json"
    index.write_text('{"js-fix": {"faults": ["js-fault"]}}', encoding="utf-8")
    monkeypatch.setattr(catalogue, "JS_FIX_INDEX", index)
    monkeypatch.setattr(catalogue._js_fixes, "__defaults__", (index,))
    assert switch.parse(f"js-fix,{FIX}") == (FIX,)
    with pytest.raises(switch.FixesError, match=r"no fix named 'neither'; `python -m"):
        switch.parse("neither")
    # The closest name is sought among ADK-JS's fixes too.
    with pytest.raises(switch.FixesError, match=r"'js-fx' \(did you mean 'js-fix'\?\)"):
        switch.parse("js-fx")


def test_the_gate_under_all_holds_a_fixed_fault_fixture_and_fails_an_unfixed_one() -> None:
    from compaction_harness.faults.catalogue import fault_for

    unfixed = None
    for path in sorted((ROOT / "tests" / "repros").glob("*.json")):
        fixture = load_fixture(path)
        fault = fault_for(fixture.known_fault) if fixture.known_fault else None
        ours = fault is not None and fixture.adk_release == "2.13.0" and not fixture.is_js
        if ours and not fixes_for(fault.id) and not fault.no_fix_reason:
            unfixed = path
            break
    items = [f"tests/corpus/test_repros.py::test_fixture_holds[{FAULT_FIXTURE.stem}]"]
    if unfixed is not None:
        items.append(f"tests/corpus/test_repros.py::test_fixture_holds[{unfixed.stem}]")
    done = _harness("-m", "pytest", "-p", "no:cacheprovider", "-rA", *items, fixes="all")
    assert f"PASSED {items[0]}" in done.stdout, done.stdout
    if unfixed is None:
        pytest.skip("every fault of a 2.13.0 fixture has a fix, or says why none can exist")
    assert f"FAILED {items[1]}" in done.stdout, done.stdout
    assert "has no fix yet" in done.stdout and done.returncode == 1


def test_a_fixture_that_holds_with_other_faults_fixes_is_said_to() -> None:
    # The fixes applied are none of its fault's, yet nothing shows: they removed
    # what it showed, so it is not (only) the fault it is marked with.
    fixture = load_fixture(FAULT_FIXTURE)
    with applied([FIX]):
        judged = judge_fixture(fixture)
    assert judged.label == "XPASS"
    other = SimpleNamespace(known_fault="a-fault-no-fix-names", is_js=False)
    read = switch.judged_with_fixes(other, judged, [FIX])
    assert read.label == "ok" and "none of them its fault a-fault-no-fix-names's" in read.reason
    assert switch.gate_expectation(other, read, [FIX], "all") is None


def test_adk_js_fixes_are_checked_against_the_node_index(capsys):
    from compaction_harness.sdk.js import js_fixes

    every = tuple(js_fixes.js_fixes())
    assert every and switch.parse_js("all") == every
    assert switch.parse_js(every[0]) == every[:1]
    assert switch.parse_js("none") == ()
    with pytest.raises(switch.FixesError, match="no ADK-JS fix named 'nope'"):
        switch.parse_js("nope")
    assert switch.main(["--sdk=js", "nope"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_all_but_names_every_fix_the_release_can_take_save_those_left_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # FIXES=all,-X: the SDK with fault X alone (bench/fault_times.py).
    every = switch.parse("all")
    assert switch.parse(f"all,-{FIX}") == tuple(n for n in every if n != FIX)
    other = next(n for n in every if n != FIX)
    assert switch.parse(f"all, -{FIX}, -{other}") == tuple(
        n for n in every if n not in (FIX, other)
    )
    for spec, said in (
        ("all,nope", "after 'all' only fixes to leave out, each as -name"),
        ("all,-", "after 'all' only fixes to leave out"),
        (f"{FIX},all", "'all' comes first"),
    ):
        with pytest.raises(switch.FixesError, match=said):
            switch.parse(spec)
    with pytest.raises(switch.FixesError, match="no fix named 'nope'"):
        switch.parse("all,-nope")
    # ADK-JS's switch (the Node driver's fixes) reads the same spelling.
    from compaction_harness.sdk.js import js_fixes

    js_every = tuple(js_fixes.js_fixes())
    left = js_every[0]
    assert switch.parse_js(f"all,-{left}") == js_every[1:]
    monkeypatch.setenv(switch.ENV, f"all,-{left}")
    assert js_fixes.active() == js_every[1:]
    with pytest.raises(switch.FixesError):
        switch.parse_js("all,nope")
