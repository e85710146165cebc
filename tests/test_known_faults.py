"""The known-fault records recognise their own faults, and only those."""

from __future__ import annotations

from pathlib import Path

import google.adk.apps.compaction as compaction
import pytest
from builders import text, user

from compaction_harness.adk import ADK_RELEASE
from compaction_harness.cases import run_case
from compaction_harness.fixtures import load_fixture
from compaction_harness.known_faults import KNOWN_FAULTS, fault_for, matching_fault
from compaction_harness.model import Session
from compaction_harness.pipeline import PipelineCase
from compaction_harness.verdicts import check

REPROS = Path(__file__).parent / "repros"
on_2_13 = pytest.mark.skipif(ADK_RELEASE != "2.13.0", reason="faults recorded on 2.13.0")


def test_every_fault_has_a_fixture_and_an_explanation():
    marked = {load_fixture(p).known_fault for p in REPROS.glob("*.json")}
    for fault in KNOWN_FAULTS:
        assert fault.id in marked, fault.id
        assert "google/adk/" in fault.explanation and len(fault.explanation) > 200


@pytest.mark.parametrize(
    "name",
    [
        p.name
        for p in sorted(REPROS.glob("*.json"))
        # ADK-JS fixtures name adk_js.KNOWN_FAULTS; make test SDK=js replays them.
        if not (fixture := load_fixture(p)).is_js
        and (fault := fixture.known_fault)
        and fault_for(fault).applies_to(ADK_RELEASE)
    ],
)
def test_each_recorded_fixture_is_recognised_by_its_fault(name):
    fixture = load_fixture(REPROS / name)
    verdict = check(fixture.case)
    assert verdict.known and not verdict.new, verdict
    # A pipeline run goes on past known faults: it may meet others on the way.
    assert fixture.known_fault in verdict.faults
    own = [v for v, f in verdict.known if f == fixture.known_fault]
    assert all(v.invariant in fault_for(fixture.known_fault).invariant for v in own)


@on_2_13
def test_a_stall_with_another_cause_is_not_taken_for_the_known_one(monkeypatch):
    # Compaction refuses every range: a stall no prefix helper causes.
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
    (stall,) = [v for v in check(case).new if v.invariant == "P3"]
    assert matching_fault(case, stall, ADK_RELEASE) is None


def test_faults_apply_only_to_their_releases():
    fault = fault_for("dead-call-retry-skipped-at-invocation-boundary")
    assert fault.applies_to("2.13.0") and not fault.applies_to("2.11.0")
    case_unit = load_fixture(REPROS / "U3-2.13.0-e3f99bee2b15adeb.json").case
    v = run_case(case_unit).violations
    if v:
        found = matching_fault(case_unit, v[0], "2.11.0")
        # On 2.11.0 itself the window shows the older stall (no retry to skip).
        assert found is None or found.id == "orphaned-call-stalls-compaction-for-good"
        if ADK_RELEASE == "2.13.0":
            assert matching_fault(case_unit, v[0], "2.13.0").id == fault.id


def test_the_older_stall_is_told_from_the_skipped_retry():
    # One window, two releases' faults: where the helper has the dead-id retry
    # the stop is fault 1's shortcut; where it has none, the older stall.
    from compaction_harness.adk import accepts_all_events
    from compaction_harness.known_faults import EVERY_RELEASE

    case = load_fixture(REPROS / "U3-2.11.0-fa8ad53970ec0bb0.json").case
    found = [v for v in run_case(case).violations if v.invariant == "U3"]
    if not found:
        assert accepts_all_events()  # 2.12.0 and later pass the dead call
        return
    (v,) = found
    expected = (
        "dead-call-retry-skipped-at-invocation-boundary"
        if accepts_all_events()
        else "orphaned-call-stalls-compaction-for-good"
    )
    assert matching_fault(case, v, EVERY_RELEASE).id == expected


def test_a_missing_request_that_no_summary_took_is_not_the_known_fault():
    from compaction_harness.invariants import Violation
    from compaction_harness.model import Session
    from compaction_harness.pipeline import PipelineCase

    config = {
        "compaction_interval": None,
        "overlap_size": None,
        "token_threshold": 20,
        "event_retention_size": 0,
    }
    case = PipelineCase(config, Session((user("i1", 1, "u1"),)), ())
    fault = fault_for("token-compaction-summarises-the-running-request")
    dropped = Violation("P2", "missing", details={"cause": "opener missing"})
    summarised = Violation(
        "P2", "missing", details={"cause": "opener missing", "opener_summarised": True}
    )
    assert fault.matches(case, summarised)
    # The prompt builder lost it by itself: a new fault, not this one.
    assert not fault.matches(case, dropped)
    assert not fault.matches(case, Violation("P2", "x", details={"opener_summarised": False}))


@on_2_13
def test_a_loss_that_time_order_does_not_explain_is_not_taken_for_it(monkeypatch):
    # A broken prefix helper skips an event yet its summary's range covers it:
    # the same P4 in a run whose events are stamped in stored order, so the
    # time-order fault is not the cause, whatever the shape looks like.
    from compaction_harness.driver import run_script
    from compaction_harness.scripts import Open, Script, ScriptConfig, Skew, Text

    monkeypatch.setattr(
        compaction,
        "_longest_self_contained_prefix",
        lambda events, all_events=None: events[:1] + events[2:],
    )
    config = ScriptConfig(compaction_interval=1, overlap_size=0)
    script = Script(config, (Open(), Text(), Text(), Skew(seconds=10), Open(), Text(), Open()))
    found = [v for v in run_script(script, triage=False).violations if v.invariant == "P4"]
    assert found
    fault = fault_for("compaction-assumes-events-are-stored-in-time-order")
    assert not any(fault.matches(script, v) for v in found)


@on_2_13
def test_a_request_hidden_by_time_order_is_that_fault_though_token_compaction_also_takes_it():
    # Two faults on one request: a host whose clock is behind stamps the third
    # invocation inside the range of a summary it was not given (the
    # time-order fault), and with time in order the same request is still
    # missing, because token compaction summarises it (the running-request
    # fault). The counterfactual replay must tell the causes apart, not only
    # the invariants: found by the runner item of a 600 s campaign.
    from compaction_harness.adk_runner import run_script_outcome
    from compaction_harness.scripts import Open, Script, ScriptConfig, Skew, Text

    config = ScriptConfig(token_threshold=1, event_retention_size=0, driver="runner")
    script = Script(config, (Open(), Text(), Open(), Skew(seconds=10), Open(), Text()))
    found = run_script_outcome(script, triage=False).violations
    faults = {
        v.details["opener_summarised"]: matching_fault(script, v, ADK_RELEASE)
        for v in found
        if v.details.get("cause") == "opener missing"
    }
    assert faults[True].id == "token-compaction-summarises-the-running-request"
    assert faults[False].id == "compaction-assumes-events-are-stored-in-time-order"
    lost = [v for v in found if v.invariant == "P4"]
    assert lost and all(
        matching_fault(script, v, ADK_RELEASE).id
        == "compaction-assumes-events-are-stored-in-time-order"
        for v in lost
    )


def test_a_counterfactual_that_loses_another_event_removed_this_loss():
    # P4 names the event lost: the same invariant on another event is another
    # violation (a time-ordered replay keeps every position).
    from compaction_harness.invariants import Violation
    from compaction_harness.known_faults import _same_kind

    lost_17 = Violation("P4", "step 17 lost", positions=(17,))
    assert _same_kind(Violation("P4", "step 17 lost", positions=(17,)), lost_17)
    assert not _same_kind(Violation("P4", "step 6 lost", positions=(6,)), lost_17)


def test_a_counterfactual_that_wastes_another_range_removed_this_waste():
    # P6's summary of nothing new names the range summarised in vain. Two faults
    # in one script (final 600 s campaign, pipeline item): ADK's strict prefix
    # at an invocation boundary wastes summary#2; replayed with the reference's
    # prefix, summary#2 takes something new and time order wastes summary#3 on
    # another range. That is the first fault's counterfactual removing its waste.
    from compaction_harness import reference
    from compaction_harness.adk import prefix_helper_replaced
    from compaction_harness.driver import run_script
    from compaction_harness.invariants import Violation
    from compaction_harness.known_faults import _same_kind
    from compaction_harness.scripts import Answer, Ask, Calls, Open, Script, ScriptConfig

    waste = "summary#2 covers no live event that a kept summary did not cover already"
    found = Violation("P6", waste, positions=(0, 1, 2))
    assert _same_kind(Violation("P6", waste, positions=(0, 1, 2)), found)
    assert not _same_kind(Violation("P6", waste, positions=(0, 1, 2, 4)), found)

    config = ScriptConfig(compaction_interval=1, overlap_size=0)
    interim = Calls(kind="interim")
    script = Script(
        config,
        (Open(), interim, Open(), interim, Open(opener="agent"), Ask(), Answer(), Answer()),
    )
    (violation,) = run_script(script, triage=False).violations
    assert violation.invariant == "P6" and violation.positions == (0, 1, 2, 4, 5, 6)
    with prefix_helper_replaced(lambda w, s: reference.longest_self_contained_prefix(s, w)):
        (elsewhere,) = run_script(script, triage=False).violations
    assert elsewhere.invariant == "P6" and elsewhere.positions != violation.positions
    fault = matching_fault(script, violation, ADK_RELEASE)
    assert fault is not None and fault.id == "dead-call-retry-skipped-at-invocation-boundary"
