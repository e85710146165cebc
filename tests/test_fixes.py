"""The fixes of google-adk's known faults (``compaction_harness.faults``).

Each fix is a unified diff against the release's own source (one per release
whose source needs its own; a fault of older releases only has diffs written
against the newest release it lives on). These tests show, per fix, that its
diff written against the installed release applies to it, that every
fixture recorded for its fault (``known_fault`` in ``tests/repros/``) shows a
violation on ADK as published and holds with the fix, that the fixes compose
(all of them at once; the two fixes of ``_longest_self_contained_prefix``
together), that no fix makes another fixture fail in a new way, and that
``fixes.applied`` leaves ADK's own functions in place when it ends. A test
of a fix the installed release cannot take (its diffs are written against
other releases, and none applies) skips, saying why: run it on the release
the diff names (``make env ADK=2.11.0``).

Four fixtures show a second fault once their first one is fixed
(:data:`SECOND_FAULT`): for two it is
compaction-assumes-events-are-stored-in-time-order, which has no fix, and
their remaining violation is of another summary; the other two show two
faults that each have a fix, and hold only with both.
"""

from __future__ import annotations

import json
import logging
import sys
from functools import cache
from pathlib import Path

import pytest

from compaction_harness.adk import ADK_RELEASE, NotApplicable
from compaction_harness.faults import fixes
from compaction_harness.faults.classify import run_with_fixes, same_failure
from compaction_harness.fixtures import load_fixture

REPROS = Path(__file__).parent / "repros"
PYTHON_FIXTURES = sorted(p for p in REPROS.glob("*.json") if "-adk-js-" not in p.name)
DEAD_RETRY = "dead-call-retry-at-every-boundary"
NEWEST_CALL = "newest-invocation-call-never-dead"

#: Fixture -> (the fixes whose run shows the second fault, that fault, why).
SECOND_FAULT = {
    "P3-2.13.0-cb0dec0b808de2d3.json": (
        {
            "compaction-summarised-around-a-waiting-call",
            "summarised-call-restored-before-its-response",
        },
        "partial-answer-to-parallel-calls-makes-an-invalid-request",
        "the fix summarises the turns after the still pending export, and the stall (P3) is "
        "gone; the client's answer to one of the two parallel exports still makes a request "
        "that pairs both calls with one response (P2) until that fault's fix. On 2.4.0 the "
        "run stops at the prompt builder's raise; with the restored call it goes on, and "
        "shows the faults the fixture is marked with (their fixes are 2.13.0's)",
    ),
    **{
        fixture: (
            {"summarised-call-restored-before-its-response"},
            "sliding-window-splits-call-pairs",
            "on 1.27.5 the restored call removes the raise (P0); the range that split the "
            "pair (P1) is the other fault's, and goes with its fix",
        )
        for fixture in ("P0-1.16.0-0bc95882cbdd14e8.json", "P1-1.16.0-8ccf32ff6c0bbcf8.json")
    },
    "P6-2.13.0-77a17de9883c3f48.json": (
        {DEAD_RETRY, "orphaned-call-retries-past-dead-calls"},
        "compaction-assumes-events-are-stored-in-time-order",
        "with the retry (on 2.11.0: the retry its fix adds, which runs at every boundary "
        "too), summary#2 takes invocation 3; the confirmation request is stamped "
        "after summary#2's range ends, so invocation 3 counts as new again and summary#3 "
        "repeats summary#2's range; on a clock that never steps back it holds",
    ),
    "P6-2.13.0-6acf84e054d552c5.json": (
        {"summary-leaves-out-branch-events"},
        "token-compaction-summarises-the-running-request",
        "the branch fix removes the leaks (P5); the summary made before the second model "
        "call still takes the running invocation's user message (P2) until that fault's fix "
        "keeps it out, and the wasted summary (P6) goes only with both",
    ),
    "P1-2.13.0-2fee07590c2015ff.json": (
        {"token-compaction-keeps-the-running-invocation"},
        "compaction-assumes-events-are-stored-in-time-order",
        "the Runner stores the confirmation request (stamped later) before the placeholder "
        "response; once the running invocation is kept out, summary#0 ends at the response's "
        "time, and summary#1 is given the request alone, which summary#0 covered",
    ),
}


#: A fix -> (the fix it needs beside it, the fixture that shows why): where a
#: release takes the first and not the second (2.13.0's token-split diff
#: applies to 2.4.0, the sliding window's refusal does not), the fixture shows
#: what the second fix removes.
COMPANIONS = {
    "token-split-ignores-callless-responses": (
        "sliding-window-refuses-a-range-with-nothing-new",
        "P6-2.13.0-823b5d1be61c9fc9.json",
    ),
}


def _known_fault(path: Path) -> str | None:
    return json.loads(path.read_text(encoding="utf-8")).get("known_fault")


def _fixtures_of(fault_id: str) -> list[Path]:
    return [p for p in PYTHON_FIXTURES if _known_fault(p) == fault_id]


@cache
def _case(path: Path):
    return load_fixture(path).case


@cache
def _violations(path: Path, names: tuple[str, ...]):
    logging.disable(logging.WARNING)  # ADK logs every dropped call; not the subject here
    try:
        return run_with_fixes(_case(path), list(names))
    finally:
        logging.disable(logging.NOTSET)


def _second_fault_shows(path: Path, names: set[str]) -> bool:
    entry = SECOND_FAULT.get(path.name)
    return entry is not None and bool(entry[0] & names)


FAULT_FIXTURES = [
    pytest.param(name, path, id=f"{name}:{path.stem}")
    for name, fix in fixes.FIXES.items()
    for fault_id in fix.faults
    for path in _fixtures_of(fault_id)
]

#: The fixes the installed release can take (on the pinned release: every fix
#: with a diff written against it, which the first test asks of each).
AVAILABLE = tuple(n for n in fixes.FIXES if fixes.unavailable(n) is None)


def _needs(name: str) -> None:
    """Skip unless the installed release can take the fix ``name``; a fix
    with a diff written against the installed release must apply (the first
    test fails otherwise, and so does the test that calls this)."""
    if ADK_RELEASE in fixes.fix_named(name).diffs():
        return
    why = fixes.unavailable(name)
    if why is not None:
        pytest.skip(why)


@pytest.mark.parametrize("name", list(fixes.FIXES))
def test_the_diff_applies_to_the_installed_release(name):
    fix = fixes.fix_named(name)
    if ADK_RELEASE not in fix.diffs():
        pytest.skip(f"the diffs of {name} are written against {', '.join(fix.diffs())}")
    assert fixes.unavailable(name) is None
    assert fixes.diff_release(name) == ADK_RELEASE
    assert fix.diff_text().startswith("--- a/google/adk/")


@pytest.mark.parametrize("name", list(fixes.FIXES))
def test_each_diff_is_written_against_a_release_its_fault_lives_on(name):
    # The pinned release's diff fixes a fault of the pinned release; a diff of
    # an older release, a fault the release matrix shows there.
    from compaction_harness import DEFAULT_ADK_RELEASE
    from compaction_harness.faults.catalogue import fault_for

    fix = fixes.fix_named(name)
    assert fix.diffs(), name
    for release, path in fix.diffs().items():
        assert path.read_text(encoding="utf-8").startswith("--- a/google/adk/"), path
        if release != DEFAULT_ADK_RELEASE:
            assert any(release in fault_for(f).releases for f in fix.faults), (name, release)


@pytest.mark.parametrize("name", list(fixes.FIXES))
def test_every_fix_has_fixtures_of_its_faults(name):
    for fault_id in fixes.FIXES[name].faults:
        assert _fixtures_of(fault_id), fault_id


@pytest.mark.parametrize(("name", "path"), FAULT_FIXTURES)
def test_the_faults_fixture_fails_without_its_fix_and_holds_with_it(name, path):
    _needs(name)
    before = _violations(path, ())
    recorded_on = load_fixture(path).adk_release
    if not before and recorded_on != ADK_RELEASE:
        pytest.skip(f"{path.name} (recorded on {recorded_on}) holds on {ADK_RELEASE}")
    assert before, f"{path.name} shows no violation on ADK as published"
    after = _violations(path, (name,))
    kept = [v for v in before if any(same_failure(v, w) for w in after)]
    if _second_fault_shows(path, {name}):
        assert after, "the second fault no longer shows: drop its SECOND_FAULT entry"
        assert len(kept) < len(before), "the fix removes none of the fixture's violations"
        # What the fix leaves is the second fault's: its fix, where it has one,
        # removes the rest of what ADK as published shows.
        second = SECOND_FAULT[path.name][1]
        theirs = tuple(n for n, f in fixes.FIXES.items() if second in f.faults)
        if theirs:
            both = _violations(path, (name, *theirs))
            assert not [v for v in before if any(same_failure(v, w) for w in both)]
    else:
        assert not kept
        assert after == [], [v.message for v in after]


def test_the_second_fault_of_the_dead_retry_fixture_is_time_order():
    from compaction_harness.driver import run_script

    _needs(DEAD_RETRY)

    path = REPROS / "P6-2.13.0-77a17de9883c3f48.json"
    with fixes.applied([DEAD_RETRY]):
        (left,) = run_script(_case(path), triage=False).violations
        steady = run_script(_case(path), triage=False, monotonic=True).violations
    (before,) = _violations(path, ())
    assert left.invariant == before.invariant == "P6"
    assert "summary#3" in left.message and "summary#2" in before.message
    assert steady == []


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(p, id=p.stem)
        for fault_id in (
            "dead-call-retry-skipped-at-invocation-boundary",
            "reused-call-id-unprotects-newest-invocation-call",
        )
        for p in _fixtures_of(fault_id)
    ],
)
def test_the_two_fixes_of_the_prefix_helper_apply_together(path):
    names = (DEAD_RETRY, NEWEST_CALL)
    for name in names:
        _needs(name)
    before = _violations(path, ())
    after = _violations(path, names)
    assert not [v for v in before if any(same_failure(v, w) for w in after)]
    assert after == [] or _second_fault_shows(path, set(names))


def test_all_fixes_apply_together_and_compose_hunk_by_hunk():
    names = list(AVAILABLE)
    text = fixes.patch_text(names)
    for name in names:
        for line in fixes.fix_named(name).diff_text().splitlines():
            if line.startswith("+") and not line.startswith("+++"):
                assert line in text.splitlines(), (name, line)
    with fixes.applied(names):
        assert set(fixes.active()) == set(names)
    assert fixes.active() == ()


@pytest.mark.parametrize("path", [pytest.param(p, id=p.stem) for p in PYTHON_FIXTURES])
def test_no_fix_makes_a_fixture_fail_in_a_new_way(path):
    # Under every fix at once (each fix alone on its own fault's fixtures above).
    recorded_on = load_fixture(path).adk_release
    if recorded_on != ADK_RELEASE:
        # On another release the fixes that apply there make other code run
        # (1.27.5's pair protection stops at a waiting call as 2.13.0 does):
        # what shows then is judged by that release's own fixtures.
        pytest.skip(f"{path.name} is recorded on {recorded_on}")
    before = _violations(path, ())
    every = AVAILABLE
    if _second_fault_shows(path, set(every)):
        return
    for fix, companion in COMPANIONS.items():
        if path.name == companion[1] and fix in every and companion[0] not in every:
            pytest.skip(
                f"with {fix}, {path.name} needs {companion[0]}, which google-adk "
                f"{ADK_RELEASE} cannot take (test_a_fix_that_lets_token_compaction_run...)"
            )
    new = [w for w in _violations(path, every) if not any(same_failure(v, w) for v in before)]
    assert new == [], [w.message for w in new]


def _adk_functions() -> dict[tuple[str, str], object]:
    return {
        (module.__name__, attr): value
        for module in list(sys.modules.values())
        if (getattr(module, "__name__", None) or "").startswith("google.adk")
        for attr, value in list(vars(module).items())
        if callable(value)
    }


def test_applied_puts_every_function_back():
    for name in (
        "responses-follow-only-their-own-call-turn",
        "pending-call-left-out-beside-answered-siblings",
        "summary-priced-by-the-summarizers-own-output",
    ):
        _needs(name)
    from google.adk.apps import compaction
    from google.adk.flows.llm_flows.context import _contents
    from google.adk.flows.llm_flows.tools import _rearranger

    originals = _adk_functions()
    rearrange = _rearranger.rearrange_events_for_async_function_responses_in_history
    with fixes.applied(AVAILABLE):
        fixed = _rearranger.rearrange_events_for_async_function_responses_in_history
        assert fixed is not rearrange
        # Every name bound to it in ADK's modules is the fixed function, the
        # aliases too (_contents imports an alias of it).
        assert _rearranger._rearrange_events_for_async_function_responses_in_history is fixed
        assert _contents._rearrange_events_for_async_function_responses_in_history is fixed
        assert _contents.drop_orphaned_function_calls is _rearranger.drop_orphaned_function_calls
        assert (
            compaction._previous_summary_chars
            is not originals[("google.adk.apps.compaction", "_previous_summary_chars")]
        )
    after = _adk_functions()
    changed = [key for key, value in originals.items() if after.get(key) is not value]
    assert changed == []
    assert set(after) == set(originals)


def test_a_fix_that_lets_token_compaction_run_needs_the_window_to_refuse_nothing_new():
    # Found by `make fuzz FIXES=all`: the release as published holds; the
    # token-split fix alone makes the sliding window summarise a resumed
    # invocation's covered events again (P6); with the fix of that mechanism
    # too, nothing is wasted.
    _needs("token-split-ignores-callless-responses")
    _needs("sliding-window-refuses-a-range-with-nothing-new")
    path = REPROS / "P6-2.13.0-823b5d1be61c9fc9.json"
    assert _violations(path, ()) == []
    (wasted,) = _violations(path, ("token-split-ignores-callless-responses",))
    assert wasted.invariant == "P6" and "covers no live event" in wasted.message
    both = (
        "token-split-ignores-callless-responses",
        "sliding-window-refuses-a-range-with-nothing-new",
    )
    assert _violations(path, both) == []


#: Faults that only releases older than the pinned one have: (fixture, a
#: release its fix has a diff written against, the fix). Each replays as the
#: known fault on that release as published, and holds there with the fix.
OLDER_RELEASES = [
    *(
        (fixture, release, "orphaned-call-retries-past-dead-calls")
        for release in ("2.11.0", "2.4.0")
        for fixture in (
            "P3-2.11.0-b05d345640cc27ad.json",
            "P6-2.11.0-6b20c57ef2b3b8fe.json",
            "U3-2.11.0-fa8ad53970ec0bb0.json",
        )
    ),
    # On 1.27.5 the fixture shows both of its faults: the split pair (P1) is
    # sliding-window-splits-call-pairs, the raise (P0) both faults (each fix
    # removes it); it holds only with both fixes (test below).
    ("P1-1.16.0-8ccf32ff6c0bbcf8.json", "1.27.5", "compaction-ranges-keep-call-pairs"),
    ("P0-1.18.0-d92d9374b63113a8.json", "1.21.0", "reloaded-actions-validated"),
]


@pytest.mark.parametrize(
    ("fixture", "release", "name"),
    [pytest.param(f, r, n, id=f"{r}:{f}") for f, r, n in OLDER_RELEASES],
)
def test_replay_on_an_older_release_is_the_fault_without_its_fix_and_holds_with_it(
    fixture, release, name, capsys
):
    from compaction_harness import cli

    if release != ADK_RELEASE:
        pytest.skip(f"the fix {name} is written against google-adk {release}")
    path = str(REPROS / fixture)
    fault = _known_fault(REPROS / fixture)
    assert cli.main(["replay", path]) == 0
    out = capsys.readouterr().out
    assert f"XFAIL {path} on google-adk {release}: known upstream fault" in out
    assert f"{fault} (fix {name})" in out
    assert cli.main(["replay", "--fixes", name, path]) == 0
    assert f"holds with fix {name}" in capsys.readouterr().out
    assert fixes.diff_release(name) == release


def test_a_fix_takes_the_diff_written_against_the_installed_release_else_one_that_applies(
    tmp_path, monkeypatch
):
    import difflib

    path = "google/adk/apps/compaction.py"
    head = fixes._installed_source(path).splitlines(keepends=True)[:4]
    fixed = [head[0], "# fixed\n", *head[1:]]  # a comment: no definition changes
    good = "".join(difflib.unified_diff(head, fixed, f"a/{path}", f"b/{path}"))
    stale = f"--- a/{path}\n+++ b/{path}\n@@ -1,1 +1,1 @@\n-no line reads so\n+nor so\n"
    monkeypatch.setattr(fixes, "PATCHES", tmp_path)

    def write(release: str, name: str, text: str) -> None:
        (tmp_path / release).mkdir(exist_ok=True)
        (tmp_path / release / name).write_text(text, encoding="utf-8")

    # No diff for the installed release: the newest that applies.
    write("9.9.9", "older.diff", stale)
    write("0.0.1", "older.diff", good)
    older = fixes.Fix("older-releases", ("f",), "diffs of other releases", "older.diff")
    monkeypatch.setitem(fixes.FIXES, older.name, older)
    assert list(older.diffs()) == ["9.9.9", "0.0.1"]
    assert fixes.diff_release(older.name) == "0.0.1"
    assert fixes.unavailable(older.name) is None
    # A diff for the installed release is the one: another that applies is not tried.
    write(ADK_RELEASE, "own.diff", stale)
    write("0.0.1", "own.diff", good)
    own = fixes.Fix("own-release", ("f",), "a stale diff of the installed release", "own.diff")
    monkeypatch.setitem(fixes.FIXES, own.name, own)
    with pytest.raises(NotApplicable):
        fixes.diff_release(own.name)
    why = fixes.unavailable(own.name)
    assert why == (
        f"the fix own-release does not apply to google-adk {ADK_RELEASE}'s own source "
        f"(its diff written against {ADK_RELEASE})"
    )


def test_on_1_27_5_the_raise_is_both_faults_and_the_fixture_holds_only_with_both_fixes():
    if ADK_RELEASE != "1.27.5":
        pytest.skip("the fixes of the two faults are written against google-adk 1.27.5")
    restore, pairs = (
        "summarised-call-restored-before-its-response",
        "compaction-ranges-keep-call-pairs",
    )
    for fixture in ("P0-1.16.0-0bc95882cbdd14e8.json", "P1-1.16.0-8ccf32ff6c0bbcf8.json"):
        path = REPROS / fixture
        before = _violations(path, ())
        assert sorted(v.invariant for v in before) == ["P0", "P1"], fixture
        # The restored call removes the raise; the split pair stays.
        assert [v.invariant for v in _violations(path, (restore,))] == ["P1"]
        assert _violations(path, (pairs,)) == []  # no pair split, nothing to raise on
        assert _violations(path, (restore, pairs)) == []


def test_on_2_4_0_the_restored_call_removes_the_raise():
    # On 2.4.0 the fault shows on a 2.13.0 fixture of other faults: its P0 goes
    # with the fix; what shows then is the faults the fixture is marked with,
    # whose fixes are written against 2.13.0.
    if ADK_RELEASE != "2.4.0":
        pytest.skip("the fix's diff is written against google-adk 2.4.0 (and 1.27.5)")
    path = REPROS / "P3-2.13.0-cb0dec0b808de2d3.json"
    before = _violations(path, ())
    assert [v.invariant for v in before] == ["P0"]
    assert "No function call event found" in before[0].message
    after = _violations(path, ("summarised-call-restored-before-its-response",))
    assert after and not [v for v in after if v.invariant == "P0"]
