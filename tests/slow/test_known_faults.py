"""Known faults are classified by their fixes: a violation is fault X when
the same case re-run with X's fix no longer shows it, and only then."""

from __future__ import annotations

from pathlib import Path

import google.adk.apps.compaction as compaction
import pytest
from builders import text, user

from compaction_harness.faults.classify import classify, same_failure
from compaction_harness.sdk.python.adk import ADK_RELEASE
from compaction_harness.sdk.python.cases import by_fix, run_case
from compaction_harness.sdk.python.known_faults import KNOWN_FAULTS
from compaction_harness.spec.invariants import Violation
from compaction_harness.spec.model import Session
from compaction_harness.spec.pipeline_case import PipelineCase
from compaction_harness.store.fixtures import load_fixture
from compaction_harness.surfaces.verdicts import check

REPROS = Path(__file__).parents[1] / "repros"
on_2_13 = pytest.mark.skipif(ADK_RELEASE != "2.13.0", reason="faults recorded on 2.13.0")


def test_every_fault_has_a_fixture_and_an_explanation():
    marked = {load_fixture(p).known_fault for p in REPROS.glob("*.json")}
    for fault in KNOWN_FAULTS:
        assert fault.id in marked, fault.id
        assert "google/adk/" in fault.explanation and len(fault.explanation) > 200


# Each recorded fixture of a fault of this release is recognised by its fault
# (known, nothing new, its fault among those shown): tests/corpus/test_repros.py
# asserts it on its replay of the corpus, which this file once ran a second time.


# -- classify, on hand-worked re-runs ---------------------------------------------------
P2 = Violation("P2", "call c1 answered twice", ids=("c1",))
P3 = Violation("P3", "stall")


def _reruns(table):
    """A re-run that shows, under each set of fixes, what ``table`` says
    (every fix not named leaves everything)."""

    def rerun(names):
        return table.get(tuple(sorted(names)), [P2, P3])

    return rerun


def _faults(name):
    return {"a": ("fault-a",), "b": ("fault-b",), "c": ("fault-c",)}[name]


def test_a_violation_one_fix_removes_is_that_fault():
    rerun = _reruns({("a",): [P3], ("a", "b", "c"): []})
    (p2, p3) = classify([P2, P3], rerun, ["a", "b", "c"], _faults)
    assert p2.faults == ("fault-a",) and p2.fixes == ("a",)
    assert p3.new is False and p3.faults == ("fault-a", "fault-b", "fault-c")


def test_a_violation_only_two_fixes_remove_together_is_both_faults():
    # P3 needs a and c together: the smallest set found names both, not b.
    rerun = _reruns({("a", "b", "c"): [], ("a", "c"): [], ("a", "b"): [P3], ("b", "c"): [P3]})
    (p3,) = classify([P3], rerun, ["a", "b", "c"], _faults)
    assert p3.fixes == ("a", "c") and p3.faults == ("fault-a", "fault-c")


def test_a_violation_every_fix_leaves_is_new_after_one_rerun():
    calls = []

    def rerun(names):
        calls.append(names)
        return [P2]

    (p2,) = classify([P2], rerun, ["a", "b", "c"], _faults)
    assert p2.new and calls == [("a", "b", "c")]


def test_within_known_or_new_only_one_rerun_tells_known_from_new():
    # The gate's properties (both SDKs' classify): every fix together, once.
    from compaction_harness.faults.classify import UNNAMED, known_or_new_only

    calls = []

    def rerun(names):
        calls.append(names)
        return [P3]

    with known_or_new_only():
        (p2, p3) = classify([P2, P3], rerun, ["a", "b", "c"], _faults, confirm=True)
    assert calls == [("a", "b", "c")]
    assert p2.faults == (UNNAMED,) and p2.fixes == () and not p2.new
    assert p3.new
    # Outside it, the same violations are named by fix.
    (p2,) = classify([P2], _reruns({("a", "b", "c"): [], ("b",): []}), ["a", "b", "c"], _faults)
    assert p2.fixes == ("b",)


def test_asking_about_one_fix_names_its_fault_in_one_rerun_and_tells_the_rest_known_or_new():
    # minimize's shrinking: is this candidate the failure whose evidence is fix b?
    from compaction_harness.faults.classify import UNNAMED, asking_about

    calls = []

    def rerun(names):
        calls.append(tuple(names))
        return {("b",): [P3], ("a", "b", "c"): [P3]}.get(tuple(names), [P2, P3])

    with asking_about(["b"]):
        (p2,) = classify([P2], rerun, ["a", "b", "c"], _faults)
        assert p2.fixes == ("b",) and p2.faults == ("fault-b",) and calls == [("b",)]
        calls.clear()
        (p2, p3) = classify([P2, P3], rerun, ["a", "b", "c"], _faults)
        assert calls == [("b",), ("a", "b", "c")]  # P3: b leaves it, and so does every fix
        assert p3.new and p2.fixes == ("b",)
    # A known violation another fix removes is known, not named: fix a removes P2 here.
    with asking_about(["c"]):
        (p2,) = classify([P2], _reruns({("a",): [], ("a", "b", "c"): []}), ["a", "b", "c"], _faults)
    assert p2.faults == (UNNAMED,) and not p2.new
    # Seeking a new failure (no fix): every fix together, once.
    calls.clear()
    with asking_about([]):
        (p3,) = classify([P3], rerun, ["a", "b", "c"], _faults)
    assert p3.new and calls == [("a", "b", "c")]
    # Evidence of several fixes together is asked in full: the smallest set.
    table = {("a", "b", "c"): [], ("a", "c"): [], ("a", "b"): [P3], ("b", "c"): [P3]}
    with asking_about(["a", "c"]):
        (p3,) = classify([P3], _reruns(table), ["a", "b", "c"], _faults)
    assert p3.fixes == ("a", "c")


def test_two_fixes_that_each_remove_a_violation_name_both_faults():
    rerun = _reruns({("a", "b", "c"): [], ("b",): [], ("c",): []})
    (p2,) = classify([P2], rerun, ["a", "b", "c"], _faults)
    assert p2.fixes == ("b", "c") and p2.faults == ("fault-b", "fault-c")


def test_lost_events_and_wasted_ranges_are_told_apart_by_their_events():
    # P4 names the event lost, P6 the range summarised in vain: a re-run that
    # loses another event has removed this loss.
    lost_17 = Violation("P4", "step 17 lost", positions=(17,))
    assert same_failure(Violation("P4", "step 17 lost", positions=(17,)), lost_17)
    assert not same_failure(Violation("P4", "step 6 lost", positions=(6,)), lost_17)
    waste = Violation("P6", "summary#2 covers nothing new", positions=(0, 1, 2))
    assert not same_failure(Violation("P6", "summary#3 ...", positions=(0, 1, 2, 4)), waste)
    # Other invariants: the call ids decide.
    assert same_failure(Violation("P2", "other words", ids=("c1",)), P2)
    assert not same_failure(Violation("P2", "x", ids=("c2",)), P2)


def test_a_lost_user_message_is_told_apart_by_the_message():
    # A P2 without call ids is a user message missing from the prompt: a
    # re-run that loses another invocation's message has removed this loss
    # (a run on 2.13.0 lost 'user 1' and 'user 2' to token compaction and
    # 'user 3' to time order; each fix removes its own).
    lost = Violation("P2", "user 1 missing", expected="user 1", observed=None)
    assert same_failure(Violation("P2", "user 1 missing", expected="user 1"), lost)
    assert not same_failure(Violation("P2", "user 3 missing", expected="user 3"), lost)


# -- classification by fix on the real release -----------------------------------------
@on_2_13
def test_a_stall_with_another_cause_is_not_taken_for_the_known_one(monkeypatch):
    # Compaction refuses every range: a stall no fix of a known fault removes.
    monkeypatch.setattr(compaction, "_is_range_worth_compacting", lambda **_: False)
    steps, ends = [], []
    for k in range(1, 6):
        steps += [user(f"i{k}", 2 * k, f"u{k}"), text(f"i{k}", 2 * k + 1, f"m{k}")]
        ends.append(len(steps))
    config = {
        "compaction_interval": 1,
        "overlap_size": 0,
        "token_threshold": None,
        "event_retention_size": None,
    }
    case = PipelineCase(config, Session(tuple(steps)), tuple(ends), max_invocation_events=2)
    assert [v for v in check(case).new if v.invariant == "P3"]


def test_the_older_stall_is_told_from_the_skipped_retry():
    # One window, two releases' faults: where the helper has the dead-id retry
    # the stop is fault 1's shortcut, and its fix removes it.
    from compaction_harness.sdk.python.adk import accepts_all_events

    case = load_fixture(REPROS / "U3-2.11.0-fa8ad53970ec0bb0.json").case
    found = [v for v in run_case(case).violations if v.invariant == "U3"]
    if not found:
        assert accepts_all_events()  # 2.12.0 and later pass the dead call
        return
    new, known = by_fix(case, found)
    expected = (
        "dead-call-retry-skipped-at-invocation-boundary"
        if accepts_all_events()
        else "orphaned-call-stalls-compaction-for-good"
    )
    assert not new and {f for _, f in known} == {expected}


@on_2_13
def test_a_loss_that_time_order_does_not_explain_is_not_taken_for_it(monkeypatch):
    # A broken prefix helper skips an event yet its summary's range covers it:
    # the same P4 in a run whose events are stamped in stored order. No fix
    # of the time-order fault can remove it.
    from compaction_harness.sdk.python.driver import run_script
    from compaction_harness.spec.scripts import Open, Script, ScriptConfig, Skew, Text

    monkeypatch.setattr(
        compaction,
        "_longest_self_contained_prefix",
        lambda events, all_events=None: events[:1] + events[2:],
    )
    config = ScriptConfig(compaction_interval=1, overlap_size=0)
    script = Script(config, (Open(), Text(), Text(), Skew(seconds=10), Open(), Text(), Open()))
    found = [v for v in run_script(script).violations if v.invariant == "P4"]
    assert found
    _, known = by_fix(script, found)
    assert "compaction-assumes-events-are-stored-in-time-order" not in {f for _, f in known}


@on_2_13
def test_a_request_hidden_by_time_order_and_summarised_by_token_compaction_is_both():
    # Two faults on one request: a host whose clock is behind stamps the third
    # invocation inside the range of a summary it was not given (time order),
    # and with time in order the same request is still missing, because token
    # compaction summarises it (the running request). Neither fix alone
    # removes the missing request; both do: it is both faults.
    from compaction_harness.sdk.python.adk_runner import run_script_outcome
    from compaction_harness.spec.scripts import Open, Script, ScriptConfig, Skew, Text

    config = ScriptConfig(token_threshold=1, event_retention_size=0, driver="runner")
    script = Script(config, (Open(), Text(), Open(), Skew(seconds=10), Open(), Text()))
    found = run_script_outcome(script).violations
    new, known = by_fix(script, found)
    assert not new
    faults = {f for v, f in known if v.invariant == "P2"}
    assert faults == {
        "token-compaction-summarises-the-running-request",
        "compaction-assumes-events-are-stored-in-time-order",
    }


def test_a_rerun_that_wastes_another_range_removed_this_waste():
    # Two faults in one script (a 600 s campaign's pipeline item): ADK's strict
    # prefix at an invocation boundary wastes summary#2; with fault 1's fix,
    # summary#2 takes something new and time order wastes summary#3 on another
    # range. The fix removed this waste: it is fault 1.
    from compaction_harness.sdk.python.driver import run_script
    from compaction_harness.sdk.python.fixes import applied
    from compaction_harness.spec.scripts import Answer, Ask, Calls, Open, Script, ScriptConfig

    config = ScriptConfig(compaction_interval=1, overlap_size=0)
    interim = Calls(kind="interim")
    script = Script(
        config,
        (Open(), interim, Open(), interim, Open(opener="agent"), Ask(), Answer(), Answer()),
    )
    (violation,) = run_script(script).violations
    assert violation.invariant == "P6" and violation.positions == (0, 1, 2, 4, 5, 6)
    with applied(["dead-call-retry-at-every-boundary"]):
        (elsewhere,) = run_script(script).violations
    assert elsewhere.invariant == "P6" and elsewhere.positions != violation.positions
    _, known = by_fix(script, [violation])
    # The wasted range is a resumed invocation's window taking covered events
    # again: the sliding window's refusal of a range with nothing new removes
    # it too, and a violation each of two fixes removes is both faults.
    assert [f for _, f in known] == [
        "dead-call-retry-skipped-at-invocation-boundary",
        "summary-priced-by-a-client-record-resummarises-a-continued-invocation",
    ]


@on_2_13
@pytest.mark.parametrize(
    "name",
    [
        "U2-2.13.0-956f68bc18ed9cfe.json",  # its fault's fix removes it
        "P2-2.13.0-c74be76b016e3b46.json",  # no fix: the recogniser tells it
        "P6-2.13.0-08ff11332ab3e1ae.json",  # a pipeline script
    ],
)
def test_the_gate_tells_known_from_new_as_naming_does(name):
    # The gate's properties classify within known_or_new_only: one re-run with
    # every fix instead of one per fix. What is new, and what is known, must
    # be exactly what naming each fault finds.
    _assert_known_or_new_agrees(load_fixture(REPROS / name).case)


@on_2_13
def test_the_gate_tells_a_new_violation_new_as_naming_does(monkeypatch):
    # A broken prefix helper (the stand-in of the test above): no fix may
    # touch it, and what it breaks is new either way.
    from compaction_harness.spec.scripts import Open, Script, ScriptConfig, Skew, Text

    monkeypatch.setattr(
        compaction,
        "_longest_self_contained_prefix",
        lambda events, all_events=None: events[:1] + events[2:],
    )
    config = ScriptConfig(compaction_interval=1, overlap_size=0)
    script = Script(config, (Open(), Text(), Text(), Skew(seconds=10), Open(), Text(), Open()))
    new = _assert_known_or_new_agrees(script)
    assert new


def _assert_known_or_new_agrees(case) -> list[Violation]:
    """Classify ``case``'s violations both ways; the new ones (the same either way)."""
    from dataclasses import replace

    from compaction_harness.faults.classify import UNNAMED, known_or_new_only
    from compaction_harness.sdk.python.cases import run_with_fixes

    found = run_with_fixes(case, [])
    assert found
    copies = [replace(v, details=dict(v.details)) for v in found]
    named_new, named_known = by_fix(case, copies)
    with known_or_new_only():
        new, known = by_fix(case, found)
    index = {id(v): i for i, v in enumerate(found)} | {id(v): i for i, v in enumerate(copies)}
    assert [index[id(v)] for v in new] == [index[id(v)] for v in named_new]
    faults: dict[int, list[str]] = {}
    for v, fault in named_known:
        faults.setdefault(index[id(v)], []).append(fault)
    assert [index[id(v)] for v, _ in known] == list(faults)
    for v, fault in known:
        if v.details["evidence"] == "pattern":  # the same recogniser either way
            assert faults[index[id(v)]] == [fault]
        else:  # removed by every fix together: naming found the faults of its fixes
            assert fault == UNNAMED and v.details["evidence"] == "every fix together"
            assert copies[index[id(v)]].details["evidence"].startswith("fix ")
    return new


def test_a_run_is_classified_after_it_the_first_operation_with_a_new_one_reported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A run records every violation, operation by operation, and classifies
    # nothing; classification after it re-runs the case as far as the run went
    # and reports what a campaign reports: the first operation's new ones.
    from dataclasses import replace

    from compaction_harness.sdk.python import triage
    from compaction_harness.spec.outcome import UnitOutcome

    known, first, second = (Violation(i, i) for i in ("P3", "P2", "P4"))
    asked = []

    def by_fix(case, found):
        asked.append((case, found))
        return [v for v in found if v is not known], [(known, "a-known-fault")]

    monkeypatch.setattr(triage, "by_fix", by_fix)
    recorded = UnitOutcome([known, first, second], {}, {}, batches=[1, 2], ran="as far as it ran")
    judged = triage.judge("the case", recorded)
    assert asked == [("as far as it ran", [known, first, second])]
    assert judged.violations == [first, second] and judged.triaged
    assert judged.known == [(known, "a-known-fault")]
    assert recorded.violations == [known, first, second] and not recorded.triaged  # untouched
    assert triage.judge("the case", replace(recorded, batches=[2, 1])).violations == [first]
    # Not grouped by operation (the runner driver, unit cases): every new one.
    assert triage.judge("the case", replace(recorded, batches=None)).violations == [first, second]


@pytest.mark.skipif(ADK_RELEASE != "2.13.0", reason="the fixture's fault is fixed by a 2.13.0 diff")
def test_a_marked_fault_whose_fix_the_release_cannot_take_is_said_so(monkeypatch, capsys) -> None:
    # On a release the fault's fix cannot be applied to (2.11.0 for this
    # one), no re-run can tell the violation: it stays FAIL, and the reason
    # names the fixture's fault and why its fix cannot run, instead of
    # calling the violation unexplained.
    from compaction_harness.sdk.python import fixes, triage
    from compaction_harness.surfaces.cli import main

    why = "its diff is written against another release"
    real = fixes.unavailable

    def unavailable(fix):
        name = fix if isinstance(fix, str) else fix.name
        return why if name == "summary-leaves-out-branch-events" else real(fix)

    monkeypatch.setattr(fixes, "unavailable", unavailable)
    monkeypatch.setattr(triage, "unavailable", unavailable)
    path = REPROS / "P5-2.13.0-b9bd519d007d029a.json"
    assert load_fixture(path).known_fault == "summary-leaks-branch-events-to-siblings"
    assert main(["replay", str(path)]) == 1
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("FAIL") and first.endswith(
        "the fixture's fault summary-leaks-branch-events-to-siblings cannot be told by its fix "
        f"here: {why}"
    ), first


@pytest.mark.skipif(ADK_RELEASE != "2.13.0", reason="the fault's fix is written for 2.13.0")
@pytest.mark.parametrize("driver", ["emulated", "runner"])
def test_a_turn_resumed_by_the_users_approval_is_checked_for_its_request(driver: str) -> None:
    # The shape a newcomer's app met through ADK's Runner: a tool that needs
    # confirmation pauses the invocation, the token trigger summarises the
    # user's request at that pause, and the approval resumes the invocation.
    # P2 wants the request at the resumed turn's model calls as at the first:
    # both drivers keep each invocation's opener for the turns that resume it.
    from compaction_harness.spec.scripts import Ask, Open, Reply, Script, ScriptConfig, Text

    config = ScriptConfig(
        token_threshold=150, event_retention_size=2, system_chars=2000, driver=driver
    )
    script = Script(config, (Open(chars=400), Ask(kind="confirmation"), Reply(0), Text()))
    verdict = check(script)
    assert not verdict.new
    assert set(verdict.faults) == {"compaction-summarises-a-waiting-invocations-request"}


def test_a_fail_on_a_release_that_cannot_take_a_fix_names_the_faults_not_tried():
    # Found by a newcomer: the README's 2.11.0 walkthrough writes P5 fixtures
    # of summary-leaks-branch-events-to-siblings, and replay on 2.11.0 called
    # them "no known upstream fault explains", though that fault's fix (a
    # diff of 2.13.0) was never tried there. The line now names such faults:
    # those of the fixture's invariant, on the release, whose fix cannot run.
    from types import SimpleNamespace

    from compaction_harness.faults.catalogue import fault_for
    from compaction_harness.surfaces.verdicts import untried_faults as _untried_faults

    leak = fault_for("summary-leaks-branch-events-to-siblings")
    assert "P5" in leak.invariants and "2.11.0" in leak.releases
    cannot = SimpleNamespace(
        unfixable=lambda fault: "a diff of 2.13.0" if fault == leak.id else None
    )
    assert _untried_faults(cannot, "P5", "2.11.0") == [leak.id]
    assert _untried_faults(cannot, "P5", "2.11.3") == [leak.id]  # by minor release
    assert _untried_faults(cannot, "P2", "2.11.0") == []  # another invariant
    assert _untried_faults(cannot, "P5", "0.9.0") == []  # a release it does not show on
    can = SimpleNamespace(unfixable=lambda fault: None)
    assert _untried_faults(can, "P5", "2.11.0") == []


def test_an_xfail_says_a_fault_was_not_named_once(monkeypatch):
    # A replay inside the gate asks only known or new: a violation every fix
    # together removes is UNNAMED. The reason read "known upstream fault a
    # known upstream fault, not named ..." (a newcomer's report).
    from types import SimpleNamespace

    from compaction_harness.faults.classify import UNNAMED
    from compaction_harness.surfaces import verdicts

    p2 = Violation("P2", "x", details={"evidence": "fix f"})
    p3 = Violation("P3", "y", details={"evidence": "every fix together"})
    fixture = SimpleNamespace(sdk="python", case=None, known_fault=None)
    for known, reason in (
        (
            ((p2, "fault-a"), (p3, UNNAMED)),
            "known upstream fault fault-a (fix f), and another, not named: every fix together "
            "removes it",
        ),
        (((p3, UNNAMED),), "a known upstream fault, not named: every fix together removes it"),
        (((p2, "fault-a"),), "known upstream fault fault-a (fix f)"),
    ):
        verdict = verdicts.Verdict(ADK_RELEASE, (), known, SimpleNamespace(observed={}))
        monkeypatch.setattr(verdicts, "check", lambda case, release, v=verdict: v)
        judged = verdicts._judge(fixture, None)
        assert (judged.label, judged.reason) == ("XFAIL", reason)
