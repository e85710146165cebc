"""P1 to P7 fire on deliberately broken pipelines, and stay quiet on ADK's own.

Each test drives a real session by hand through `PipelineRun` and breaks one
piece of ADK's compaction with monkeypatch.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import google.adk.apps.compaction as compaction
import pytest
from builders import answer, call, text, user

from compaction_harness.sdk.python.adk import helper_availability
from compaction_harness.sdk.python.pipeline import PipelineRun
from compaction_harness.spec.liveness_checks import liveness_bound
from compaction_harness.spec.model import Compaction, Response, Session, ShownText, Step
from compaction_harness.spec.pipeline_checks import (
    check_branch_view,
    check_stale_counts,
    check_summariser_calls,
    newest_real_count,
    stale_counts,
    summary_branch,
)
from compaction_harness.spec.prompt_checks import check_nothing_lost, check_prompt

pytestmark = pytest.mark.skipif(
    helper_availability()["_provably_dead_call_ids"] is not None,
    reason="drives the 2.12.0+ helpers",
)
PER_TURN = "responses-follow-only-their-own-call-turn"
#: The waiting-invocation fault's fix: a client's answer or the user's approval
#: resumes an invocation whose request a summary took at its pause (P2).
RESTORED = "running-request-restored-after-compaction"
SLIDING = {
    "compaction_interval": 1,
    "overlap_size": 0,
    "token_threshold": None,
    "event_retention_size": None,
}


def strict_prefix_helper(monkeypatch) -> None:
    """Make ADK's prefix helper behave like releases 2.3.0 to 2.11.0 (no retry)."""
    real = compaction._longest_self_contained_prefix
    monkeypatch.setattr(
        compaction, "_longest_self_contained_prefix", lambda events, all_events=None: real(events)
    )


def invariants(found) -> set[str]:
    return {v.invariant for v in found}


def drive(run: PipelineRun, invocations) -> set[str]:
    """Append each invocation's steps and end it; the invariants that fired."""
    seen: set[str] = set()
    for steps in invocations:
        for k, step in enumerate(steps):
            seen |= invariants(run.append(step, opens_invocation=k == 0))
        seen |= invariants(run.end_invocation())
    return seen


def pending_call_then_answer() -> list:
    return [
        [user("i1", 1, "u1"), call("i1", 2, "a")],
        [answer("i2", 3, "a", author="user"), text("i2", 4, "m4")],
    ]


def test_adks_own_pipeline_is_quiet():
    run = PipelineRun(SLIDING)
    try:
        assert drive(run, pending_call_then_answer()) == set()
    finally:
        run.close()


def test_p1_fires_when_the_prefix_helper_ignores_pairs(monkeypatch):
    # The call is summarised while its answer is still to come. (ADK 2.13.0's
    # prompt builder recovers the summarised call, so the prompt stays valid.)
    monkeypatch.setattr(
        compaction, "_longest_self_contained_prefix", lambda events, all_events=None: events
    )
    run = PipelineRun(SLIDING)
    try:
        assert drive(run, pending_call_then_answer()) == {"P1"}
    finally:
        run.close()


def test_p3_fires_when_compaction_stalls_like_releases_before_2_12(monkeypatch):
    strict_prefix_helper(monkeypatch)
    run = PipelineRun(SLIDING, max_invocation_events=2)  # bound (1 + 1) * 2 = 4
    orphan = [[user("i1", 1, "u1"), call("i1", 2, "dead")]]
    later = [
        [user(f"i{k}", 2 * k, f"u{k}"), text(f"i{k}", 2 * k + 1, f"m{k}")] for k in range(2, 6)
    ]
    try:
        assert "P3" in drive(run, orphan + later)
    finally:
        run.close()


STALL_TOKEN = {
    "compaction_interval": None,
    "overlap_size": None,
    "token_threshold": 50,
    "event_retention_size": 1,
}


def orphan_then_counted_turns(turns: int) -> list:
    """An orphaned call in i1, then ``turns`` invocations whose model reply
    counts a prompt of 70 tokens or more (above STALL_TOKEN's threshold of 50)."""
    later = [
        [
            user(f"i{k}", 2 * k - 1, f"u{k}"),
            replace(text(f"i{k}", 2 * k, f"m{k}"), prompt_tokens=50 + 10 * k),
        ]
        for k in range(2, turns + 2)
    ]
    return [[user("i1", 1, "u1"), call("i1", 2, "dead")], *later]


def test_p3_with_a_token_threshold_alone_fires_when_compaction_stalls_like_2_11(monkeypatch):
    # No sliding window: P3's bound is the token threshold's (the retained
    # event, with the calls its answers need). ADK's own token path passes
    # the dead call and keeps the backlog at the retained tail.
    run = PipelineRun(STALL_TOKEN)
    try:
        assert "P3" not in drive(run, orphan_then_counted_turns(4))
        assert len(run.pipeline.summaries) >= 3
    finally:
        run.close()
    # With the strict prefix helper of 2.3.0 to 2.11.0, the orphan opens the
    # candidates of every range after the first and nothing more is compacted.
    strict_prefix_helper(monkeypatch)
    run = PipelineRun(STALL_TOKEN)
    try:
        assert "P3" in drive(run, orphan_then_counted_turns(4))
        assert len(run.pipeline.summaries) == 1  # 'u1', the prefix before the orphan
    finally:
        run.close()


def test_p3_with_a_token_threshold_alone_waits_for_the_trigger(monkeypatch):
    # The same stall, but every count is below the threshold: the trigger is
    # quiet, and P3 (bounded in events only while it fires) makes no claim.
    strict_prefix_helper(monkeypatch)
    quiet = {**STALL_TOKEN, "token_threshold": 10_000}
    run = PipelineRun(quiet)
    try:
        assert "P3" not in drive(run, orphan_then_counted_turns(4))
        assert not run.pipeline.summaries
    finally:
        run.close()


def test_p4_fires_when_a_summary_hides_an_event_it_was_not_given(monkeypatch):
    # Not a prefix: the second event is skipped, yet the summary's time range
    # covers it, so the prompt hides an event no summary holds.
    monkeypatch.setattr(
        compaction,
        "_longest_self_contained_prefix",
        lambda events, all_events=None: events[:1] + events[2:],
    )
    run = PipelineRun(SLIDING)
    steps = [
        [user("i1", 1, "u1"), text("i1", 2, "m2"), text("i1", 3, "m3")],
        [user("i2", 4, "u2"), text("i2", 5, "m5")],
    ]
    try:
        assert "P4" in drive(run, steps)
    finally:
        run.close()


@pytest.mark.parametrize("reach", ["before the record", "past the record"])
def test_p4_takes_a_client_supplied_compaction_record_at_its_word(reach):
    # A client appends a record straight to the session service (ADK's APIs
    # refuse such events: see check_nothing_lost). What its range hides is the
    # client's decision: no P4, and no P2 for an opener it hides.
    end = 2.5 if reach == "before the record" else 1e9
    record = Step("i2", "user", 3, compaction=Compaction(0.0, end, "client summary"))
    steps = [
        [user("i1", 1, "u1"), text("i1", 2, "m2")],
        [record, user("i2", 4, "u2"), text("i2", 5, "m5"), text("i2", 6, "m6")],
    ]
    run = PipelineRun(SLIDING)
    try:
        assert drive(run, steps) == set()
        stored = run.pipeline.steps()
        (position,) = run.foreign_records(stored)
        assert stored[position].compaction.summary == "client summary"
    finally:
        run.close()


def test_p4_still_fires_for_what_adk_hides_beside_a_client_record(monkeypatch):
    # The client's record covers only i1; ADK's own summary of i2 hides an event
    # it was not given (as in the test above): that loss is still P4.
    monkeypatch.setattr(
        compaction,
        "_longest_self_contained_prefix",
        lambda events, all_events=None: events[:1] + events[2:],
    )
    record = Step("i2", "user", 3, compaction=Compaction(0.0, 2.5, "client summary"))
    steps = [
        [user("i1", 1, "u1"), text("i1", 2, "m2")],
        [record, user("i2", 4, "u2"), text("i2", 5, "m5"), text("i2", 6, "m6")],
        [user("i3", 7, "u3"), text("i3", 8, "m8")],
    ]
    run = PipelineRun(SLIDING)
    try:
        assert "P4" in drive(run, steps)
    finally:
        run.close()


def test_p4_tells_two_answers_to_one_call_apart():
    # A pending confirmation (step 2) and the real result (step 3) answer the
    # same id. The baseline shows only the pending one: the real result is not
    # lost by compaction, and the pending one, hidden by the summary it was
    # given, is not lost either.
    steps = Session(
        (
            user("i1", 1, "u1"),
            call("i1", 2, "a", name="t"),
            Step("i1", "agent", 3, responses=(Response("a", "t"),), confirmations=("a",)),
            Step("i2", "agent", 4, responses=(Response("a", "t"),)),
        )
    )
    baseline = [
        ("user", (("text", "u1"),)),
        ("model", (("call", "a", "t"),)),
        ("user", (("response", "a", "t", "2"),)),
    ]
    summarised = [("model", (("text", "summary#0"),))]
    assert check_nothing_lost(steps, summarised, [(3, (0, 1, 2), ())], baseline) == []
    # Given nothing, the summary hides steps 0 to 2: each is lost, by position.
    lost = check_nothing_lost(steps, summarised, [(3, (), ())], baseline)
    assert [v.positions for v in lost] == [(0,), (1,), (2,)]
    # The real result in the baseline but not in the prompt: lost.
    both = [*baseline[:2], ("user", (("response", "a", "t", "3"),))]
    (v,) = check_nothing_lost(steps, baseline, [], both)
    assert v.invariant == "P4" and v.positions == (3,)


def test_p4_leaves_an_orphaned_call_to_adks_pruning():
    # i1 called "a" and got its answer; i2 reused the id "a" for a call whose
    # tool's process died: nothing answers it. ADK's prompt builder prunes
    # calls that no response answers (drop_orphaned_function_calls) and pairs
    # them by id anywhere, so without compaction i1's answer keeps i2's call in
    # the prompt, and with i1 summarised the call is pruned: not a loss. Found
    # by the runner item of a 600 s campaign (call ids numbered per turn).
    steps = Session(
        (
            user("i1", 1, "u1"),
            call("i1", 2, "a"),
            answer("i1", 3, "a"),
            text("i1", 4, "m1"),
            user("i2", 5, "u2"),
            call("i2", 6, "a"),
        )
    )
    baseline = [
        ("user", (("text", "u1"),)),
        ("model", (("call", "a", "tool"),)),
        ("user", (("response", "a", "tool", "2"),)),
        ("model", (("text", "m1"),)),
        ("user", (("text", "u2"),)),
        ("model", (("call", "a", "tool"),)),
    ]
    summarised = [("model", (("text", "summary#0"),)), ("user", (("text", "u2"),))]
    given = [(6, (0, 1, 2, 3), ())]
    assert check_nothing_lost(steps, summarised, given, baseline, pruned=True) == []
    # Answered after it, the same call (and its answer) left out is lost.
    answered = Session((*steps, answer("i2", 7, "a")))
    with_answer = [*baseline, ("user", (("response", "a", "tool", "6"),))]
    lost = check_nothing_lost(answered, summarised, given, with_answer, pruned=True)
    assert [v.positions for v in lost] == [(5,), (6,)]
    # An older long-running call with the id does not make the dead call one
    # (ADK reads the marks of the events it assembles: campaign, runner item).
    marked = Session((steps[0], call("i1", 2, "a", long_running=("a",)), *steps.steps[2:]))
    assert check_nothing_lost(marked, summarised, given, baseline, pruned=True) == []
    # A release that sends orphaned calls as they are loses the call if it
    # is missing from the prompt.
    (v,) = check_nothing_lost(steps, summarised, given, baseline)
    assert v.positions == (5,)


def test_p4_orphan_is_not_answered_through_a_later_call_with_its_id():
    # Call ids numbered per turn: lookup's "call_0" is never answered, and the
    # next invocation's transfer call reuses "call_0" and is answered. The
    # definitions close an obligation by the next response with its id, so the
    # transfer's answer closes the transfer's call, not lookup's: lookup's call
    # is an orphan, and a prompt builder that prunes it (ADK's
    # drop_orphaned_function_calls, pairing as the definitions do) loses
    # nothing. Found by the runner item of a 600 s `make fuzz FIXES=all`.
    steps = Session(
        (
            user("i1", 1, "u1"),
            call("i1", 2, "call_0", name="lookup"),
            user("i2", 3, "u2"),
            call("i2", 4, "call_0", name="transfer"),
            Step("i2", "agent", 5, responses=(Response("call_0", "transfer"),)),
        )
    )
    baseline = [
        ("user", (("text", "u1"),)),
        ("model", (("call", "call_0", "lookup"),)),
        ("user", (("text", "u2"),)),
        ("model", (("call", "call_0", "transfer"),)),
        ("user", (("response", "call_0", "transfer", "3"),)),
    ]
    pruned = [row for row in baseline if row[1] != (("call", "call_0", "lookup"),)]
    assert check_nothing_lost(steps, pruned, [], baseline, pruned=True) == []
    # Answered before the id is reused, the same call left out is lost.
    answered = Session(
        (
            *steps.steps[:2],
            Step("i1", "agent", 2.5, responses=(Response("call_0", "lookup"),)),
            *steps.steps[2:],
        )
    )
    (lost,) = check_nothing_lost(answered, pruned, [], baseline, pruned=True)
    assert lost.positions == (1,)


def test_p4_tells_two_calls_with_one_id_apart():
    # The model numbers its call ids per turn: steps 1 and 4 both call "a"
    # and "b". The client answers step 4's "a" (step 5); "b" still runs. ADK
    # with fault 7's fix (pending-call-left-out-beside-answered-siblings)
    # leaves the pending "b" out of the request beside its answered sibling,
    # with compaction and without (P2), so step 4 shows only "a" in both.
    # Call parts name their event as texts and responses do: step 1's "b",
    # which the summary took, does not stand for step 4's in the baseline.
    # Found by make fuzz FIXES=all.
    def calls(at: int, *ids: str):
        return ("model", tuple(("call", x, ShownText("tool", str(at))) for x in ids))

    def said(at: int, words: str):
        return ("model" if at else "user", (("text", ShownText(words, str(at))),))

    steps = Session(
        (
            user("i1", 1, "u1"),
            call("i1", 2, "a", "b", long_running=("a", "b")),
            answer("i1", 3, "a", "b"),
            text("i1", 4, "m1"),
            call("i1", 5, "a", "b", long_running=("a", "b")),
            answer("i1", 6, "a", author="user"),
        )
    )
    baseline = [
        said(0, "u1"),
        calls(1, "a", "b"),
        ("user", (("response", "a", "tool", "2"), ("response", "b", "tool", "2"))),
        said(3, "m1"),
        calls(4, "a"),
        ("user", (("response", "a", "tool", "5"),)),
    ]
    given = [(6, (0, 1, 2, 3), ())]
    head = [("model", (("text", "summary#0"),)), said(0, "u1")]
    prompt = [*head, calls(4, "a"), baseline[-1]]
    assert check_nothing_lost(steps, prompt, given, baseline) == []
    # Still lost: step 4's call and its answer, gone from the prompt.
    lost = check_nothing_lost(steps, head, given, baseline)
    assert [v.positions for v in lost] == [(4,), (5,)]
    # And step 4's call, when the prompt shows only step 1's call with its
    # id and tool (which an id alone took for step 4's).
    (v,) = check_nothing_lost(steps, [*head, calls(1, "a"), baseline[-1]], given, baseline)
    assert v.invariant == "P4" and v.positions == (4,)
    # Once "b" is answered (step 6), ADK sends it again, beside "a": had the
    # prompt builder still left it out, step 4 would be lost.
    answered = Session((*steps, answer("i1", 7, "b", author="user")))
    both = ("user", (("response", "a", "tool", "5"), ("response", "b", "tool", "6")))
    with_b = [*baseline[:4], calls(4, "a", "b"), both]
    assert check_nothing_lost(answered, [*head, calls(4, "a", "b"), both], given, with_b) == []
    (v,) = check_nothing_lost(answered, [*head, calls(4, "a"), both], given, with_b)
    assert v.positions == (4,)


def test_p4_takes_an_interim_result_the_final_one_replaces_for_shown():
    # A long-running export reports progress (step 2), then its final result
    # (step 4). ADK gives a call the last response attributed to it, so a
    # prompt showing step 4 and not step 2 lost nothing; one showing step 2
    # and not step 4 lost the final result. Found by the runner item of a
    # 600 s campaign (a client's record changed which answer the prompt kept).
    steps = Session(
        (
            user("i1", 1, "u1"),
            call("i1", 2, "a", long_running=("a",)),
            answer("i1", 3, "a"),
            text("i1", 4, "m1"),
            answer("i1", 5, "a", author="user"),
        )
    )
    interim = [
        ("user", (("text", "u1"),)),
        ("model", (("call", "a", "tool"),)),
        ("user", (("response", "a", "tool", "2"),)),
        ("model", (("text", "m1"),)),
    ]
    final = [*interim[:2], ("user", (("response", "a", "tool", "4"),)), interim[3]]
    assert check_nothing_lost(steps, final, [], interim) == []
    (v,) = check_nothing_lost(steps, interim, [], final)
    assert v.positions == (4,)


def test_p4_takes_parallel_responses_replaced_one_by_one_for_shown():
    # Step 2 answers calls a and b; a client answers a again later (step 3).
    # ADK keeps the last response per call, so the prompt shows a from step 3
    # and b from step 2: nothing lost. Without b from step 2, b's answer is
    # lost. Found by the pipeline item of a 600 s campaign (a rewound turn's
    # call answered again).
    steps = Session(
        (
            user("i1", 1, "u1"),
            call("i1", 2, "a", "b"),
            answer("i1", 3, "a", "b"),
            answer("i1", 4, "a", author="user"),
        )
    )
    head = [("user", (("text", "u1"),)), ("model", (("call", "a", "tool"), ("call", "b", "tool")))]
    baseline = [*head, ("user", (("response", "a", "tool", "2"), ("response", "b", "tool", "2")))]
    merged = [*head, ("user", (("response", "a", "tool", "3"), ("response", "b", "tool", "2")))]
    assert check_nothing_lost(steps, merged, [], baseline) == []
    only_a = [*head, ("user", (("response", "a", "tool", "3"),))]
    (v,) = check_nothing_lost(steps, only_a, [], baseline)
    assert v.positions == (2,)


def test_p2_fires_when_the_prompt_builder_repeats_an_answer(monkeypatch):
    from google.adk.flows.llm_flows.context import _contents

    real = _contents._get_contents

    def repeats_answers(*args, **kwargs):
        contents = real(*args, **kwargs)
        if contents and any(p.function_response for p in contents[-1].parts or []):
            contents.append(contents[-1])
        return contents

    monkeypatch.setattr(_contents, "_get_contents", repeats_answers)
    run = PipelineRun(SLIDING)
    try:
        assert "P2" in drive(run, pending_call_then_answer())
    finally:
        run.close()


def test_p2_checker_on_hand_made_prompts():
    ok = [
        ("user", (("text", "u"),)),
        ("model", (("call", "a", "t"),)),
        ("user", (("response", "a", "t"),)),
    ]
    assert check_prompt(ok, "u") == ([], [])
    orphan = [("user", (("text", "u"),)), ("user", (("response", "a", "t"),))]
    (v,) = check_prompt(orphan, "u")[0]
    assert v.invariant == "P2" and "answers ['a']" in v.message
    twice = [
        *ok,
        ("model", (("call", "b", "t"),)),
        ("user", (("response", "a", "t"), ("response", "b", "t"))),
    ]
    assert any(
        "a second time" in v.message or "answers" in v.message for v in check_prompt(twice, "u")[0]
    )
    assert check_prompt([("model", (("call", "a", "t"),))], None)[1] == ["a"]
    (v,) = check_prompt(ok, "missing opener")[0]
    assert "is not in the prompt" in v.message


def test_p5_fires_when_the_compactor_ignores_rewinds(monkeypatch):
    monkeypatch.setattr(compaction, "_apply_rewinds", lambda events: list(events))
    run = PipelineRun(SLIDING)
    try:
        seen = drive(
            run,
            [
                [user("i1", 1, "u1"), text("i1", 2, "m2")],
                [user("i2", 3, "u2"), text("i2", 4, "m4")],
                [Step("r3", "user", 5, rewind_before="i2")],
                [user("i4", 6, "u4"), text("i4", 7, "m7")],
            ],
        )
        assert "P5" in seen
    finally:
        run.close()


def test_p6_fires_when_a_compaction_covers_nothing_new(monkeypatch):
    # Releases 2.3.0 to 2.11.0 did this while stalled: the same range again.
    strict_prefix_helper(monkeypatch)
    monkeypatch.setattr(compaction, "_is_range_worth_compacting", lambda **_: True)
    run = PipelineRun({**SLIDING, "overlap_size": 1})
    try:
        seen = drive(
            run,
            [
                [user("i1", 1, "u1")],
                [call("i2", 2, "dead")],
                [user("i3", 3, "u3")],
                [user("i4", 4, "u4")],
            ],
        )
        assert "P6" in seen
    finally:
        run.close()


def fan_out() -> list:
    """One invocation: a user message, then ParallelAgent sub-agents a and b
    answering on branches team.a and team.b."""
    return [
        [
            user("i1", 1, "u1"),
            Step("i1", "a", 2, text="a says 2", branch="team.a"),
            Step("i1", "b", 3, text="b says 3", branch="team.b"),
        ]
    ]


def test_p5_fires_when_a_branchless_summary_carries_branch_events():
    # ADK's own compactor does this (known fault
    # summary-leaks-branch-events-to-siblings, tests/repros/P5-2.13.0-*.json).
    run = PipelineRun(SLIDING)
    try:
        assert drive(run, fan_out()) == {"P5"}
    finally:
        run.close()


def test_p5_is_quiet_when_the_compactor_leaves_branch_events_out(monkeypatch):
    real = compaction._apply_rewinds
    monkeypatch.setattr(
        compaction, "_apply_rewinds", lambda events: [e for e in real(events) if not e.branch]
    )
    run = PipelineRun(SLIDING)
    try:
        assert drive(run, fan_out()) == set()
        assert run.pipeline.summaries[0][1] == (0,)
    finally:
        run.close()


def test_p5_branch_readers_on_hand_made_summaries():
    s = Session(
        (
            user("i1", 1),
            Step("i1", "a", 2, text="a", branch="team.a"),
            Step("i1", "x", 3, text="x", branch="team.a.x"),
            Step("i1", "t", 4, text="t", branch="team"),
        )
    )
    (v,) = check_branch_view(s, (0, 1, 2, 3), None)  # read by every agent
    assert v.positions == (1, 2, 3) and "every agent" in v.message
    assert check_branch_view(s, (0, 1, 3), "team.a") == []  # own branch and ancestors
    assert check_branch_view(s, (0, 1, 2, 3), "team.a.x") == []
    (v,) = check_branch_view(s, (0, 1), "team")  # team's other sub-agents cannot see a
    assert v.positions == (1,)
    (v,) = check_branch_view(s, (1,), "team.ab")  # a sibling, not a descendant, of team.a
    assert v.positions == (1,)


TOKEN = {
    "compaction_interval": None,
    "overlap_size": None,
    "token_threshold": 200,
    "event_retention_size": 0,
}


def counted(inv: str, t: float, body: str, tokens: int) -> Step:
    """Model text whose usage metadata counted ``tokens`` prompt tokens."""
    return Step(inv, "agent", t, text=body, prompt_tokens=tokens)


def test_p6_fires_when_the_token_trigger_reads_stale_counts(monkeypatch):
    # As google-adk 2.2.0 does (tests/repros/P6-2.2.0-*.json): the newest
    # count wins even when a summary came after it.
    real = compaction._latest_prompt_token_count

    def reads_stale_counts(events, **kwargs):
        for e in reversed(events):
            if e.usage_metadata and e.usage_metadata.prompt_token_count is not None:
                return e.usage_metadata.prompt_token_count
        return real(events, **kwargs)

    # i1's count (250) triggers a summary; i2 makes no model call, and its
    # prompt (the summary and 600 characters) is estimated at about 150 tokens.
    steps = [[user("i1", 1, "u1"), counted("i1", 2, "m2", 250)], [user("i2", 3, "x" * 600)]]
    for broken, expected in ((False, set()), (True, {"P6"})):
        if broken:
            monkeypatch.setattr(compaction, "_latest_prompt_token_count", reads_stale_counts)
        run = PipelineRun(TOKEN)
        try:
            assert drive(run, steps) == expected
            assert len(run.pipeline.summaries) == 1 + broken
        finally:
            run.close()


def test_p6_fires_when_the_token_trigger_ignores_the_threshold(monkeypatch):
    monkeypatch.setattr(compaction, "_latest_prompt_token_count", lambda events, **_: 10**6)
    run = PipelineRun(TOKEN)
    try:
        assert "P6" in drive(run, [[user("i1", 1, "u1"), counted("i1", 2, "m2", 30)]])
    finally:
        run.close()


def test_p6_counts_and_bounds_on_hand_made_sessions():
    summary = Step("s", "model", 2.5, compaction=Compaction(1, 2))
    fresh = Session(
        (user("i1", 1), counted("i1", 2, "m2", 250), summary, counted("i2", 3, "m3", 40))
    )
    assert newest_real_count(fresh) == 40 and stale_counts(fresh) == frozenset()
    stale = Session((*fresh.steps[:3], user("i2", 3)))
    assert newest_real_count(stale) is None and stale_counts(stale) == {1}
    # A rewound summary does not make a count stale.
    rewound = Session(
        (
            user("i1", 1),
            counted("i1", 2, "m2", 250),
            Step("i2", "user", 3, text="u3"),
            Step("s", "model", 3.5, compaction=Compaction(1, 3)),
            Step("r3", "user", 4, rewind_before="i2"),
        )
    )
    assert newest_real_count(rewound) == 250 and stale_counts(rewound) == frozenset()
    assert check_stale_counts(True, True, frozenset({1})) == []
    (v,) = check_stale_counts(False, True, frozenset({1}))
    assert v.invariant == "P6" and "stays quiet because" in v.message
    assert check_summariser_calls([None], TOKEN, 200) == []
    assert check_summariser_calls([None], TOKEN, None) == []  # ADK estimates: P6's second clause
    assert check_summariser_calls([None], {**TOKEN, "compaction_interval": 1}, 10) == []
    (v,) = check_summariser_calls([None], TOKEN, 199)
    assert "below the threshold 200" in v.message
    (v,) = check_summariser_calls([None, None], SLIDING, None)
    assert "2 times at one invocation end" in v.message
    # Before a model call only the token trigger runs, whatever else is configured.
    both = {**TOKEN, "compaction_interval": 1, "overlap_size": 0}
    assert check_summariser_calls([None], both, 10) == []
    (v,) = check_summariser_calls([None], both, 10, token_only=True)
    assert "below the threshold 200" in v.message
    (v,) = check_summariser_calls([None, None], both, 300, token_only=True)
    assert "2 times at one model call" in v.message
    # One summary per branch at one point is one compaction (P5 keeps sibling
    # branches apart); two on one branch are not.
    assert check_summariser_calls([None, "team.a", "team.b"], SLIDING, None) == []
    assert check_summariser_calls(["team.a", "team.b"], both, 300, token_only=True) == []
    (v,) = check_summariser_calls([None, "team.a", "team.b", "team.a"], SLIDING, None)
    assert "2 times at one invocation end" in v.message and "'team.a'" in v.message
    assert v.details["branch"] == "team.a"


def test_a_summary_is_matched_to_its_summariser_call_by_its_text():
    # Three summariser calls at one end, stored after all three were made and
    # in another order than made: the branch is the stored summary's own.
    steps = Session(
        (
            user("i1", 1),
            Step("i1", "a", 2, text="a", branch="team.a"),
            Step("i1", "b", 3, text="b", branch="team.b"),
            Step("s", "user", 4, compaction=Compaction(2, 2, "summary#1 xx"), branch="team.a"),
            Step("s", "user", 5, compaction=Compaction(1, 1, "summary#0")),
            Step("s", "user", 6, compaction=Compaction(3, 3, "summary#2"), branch="team.b"),
            Step("c", "user", 7, compaction=Compaction(1, 3, "summary#3"), branch="team.c"),
        )
    )
    assert [summary_branch(steps, n) for n in range(3)] == [None, "team.a", "team.b"]
    assert summary_branch(steps, 3) == "team.c"
    assert summary_branch(steps, 3, foreign=(6,)) is None  # a client's record, not a summary
    assert summary_branch(steps, 4) is None  # a call whose summary ADK did not store


def test_p7_fires_when_the_database_loses_an_event(monkeypatch):
    from google.adk.sessions.database_session_service import DatabaseSessionService

    real = DatabaseSessionService.get_session

    async def loses_the_last_event(self, **kwargs):
        session = await real(self, **kwargs)
        session.events = session.events[:-1]
        return session

    run = PipelineRun(SLIDING)
    try:
        drive(run, [[user("i1", 1, "u1"), text("i1", 2, "m2")], [user("i2", 3, "u2")]])
        assert run.database_round_trip() == []
        monkeypatch.setattr(DatabaseSessionService, "get_session", loses_the_last_event)
        assert {v.invariant for v in run.database_round_trip()} == {"P7"}
    finally:
        run.close()


# -- P0, P2's strict clause and P6's bound, through the script driver --------------
def _script(config: dict, *ops):
    from compaction_harness.spec.scripts import Open, Script, ScriptConfig

    return Script(ScriptConfig(**config), (Open(), *ops))


def test_p0_fires_when_adk_raises_during_prompt_assembly(monkeypatch):
    # A deliberately broken prompt builder, like the ValueError that 1.28.0 to
    # 2.2.0 raise for a response whose call was summarised away.
    from google.adk.flows.llm_flows.context import _contents

    from compaction_harness.sdk.python.driver import run_script
    from compaction_harness.spec.scripts import Text

    def broken(*args, **kwargs):
        raise ValueError("No function call event found for function responses ids: {'c1'}")

    monkeypatch.setattr(_contents, "_get_contents", broken)
    outcome = run_script(_script(SLIDING, Text()))
    (crash,) = outcome.violations
    assert crash.invariant == "P0" and "ValueError" in crash.message
    assert "during operation 'text'" in crash.message


def test_p0_of_a_recorded_session_is_a_violation_not_a_traceback(monkeypatch):
    from google.adk.flows.llm_flows.context import _contents

    from compaction_harness.sdk.python.pipeline import run_pipeline_case
    from compaction_harness.spec.pipeline_case import PipelineCase

    monkeypatch.setattr(_contents, "_get_contents", lambda *a, **k: 1 / 0)
    case = PipelineCase(SLIDING, Session((user("i1", 1), text("i1", 2))), (2,))
    (crash,) = run_pipeline_case(case).violations
    assert crash.invariant == "P0" and "ZeroDivisionError" in crash.message


def test_p2_strict_clause_fires_where_no_adapter_heals_the_request(monkeypatch):
    # A long-running call still pending when the user writes again: Anthropic
    # and OpenAI refuse it. Releases whose LiteLLM adapter inserts placeholder
    # results (1.24.0 and later) send a healed request; pretend this one has none
    # (as 1.16.0 and 1.20.0 have none, where this script fails the clause).
    from compaction_harness.sdk.python import adk
    from compaction_harness.sdk.python.driver import run_script
    from compaction_harness.spec.scripts import Calls, Open, Text

    ops = (Calls(kind="long_running"), Open(), Text())
    strict = {**SLIDING, "compaction_interval": 100, "strict_provider": True}
    assert run_script(_script(strict, *ops)).violations == []  # healed
    adk.litellm_heals_missing_tool_results.cache_clear()
    monkeypatch.setattr(adk, "litellm_heals_missing_tool_results", lambda: False)
    found = run_script(_script(strict, *ops)).violations
    assert [v.details.get("cause") for v in found] == ["strict provider"]
    lenient = {**strict, "strict_provider": False}
    assert run_script(_script(lenient, *ops)).violations == []


def test_p2_strict_clause_on_hand_made_prompts():
    call = ("model", (("call", "c1", "t"),))
    later = ("user", (("text", "next"),))
    answer = ("user", (("response", "c1", "t", "2"),))
    assert check_prompt([call, later], None, strict=True)[0]
    assert not check_prompt([call, later], None, strict=False)[0]
    assert not check_prompt([call, answer, later], None, strict=True)[0]


def test_p6_bound_fires_when_a_token_summary_leaves_the_prompt_over_the_threshold(monkeypatch):
    # A broken range (only the first event) leaves the rest in the prompt, over
    # the threshold although nothing pins it: every later turn would summarise.
    from compaction_harness.sdk.python.driver import run_script
    from compaction_harness.spec.scripts import Text

    real = compaction._events_to_compact_for_token_threshold
    monkeypatch.setattr(
        compaction,
        "_events_to_compact_for_token_threshold",
        lambda events, event_retention_size: real(
            events=events, event_retention_size=event_retention_size
        )[:1],
    )
    config = {
        "compaction_interval": None,
        "overlap_size": None,
        "token_threshold": 60,
        "event_retention_size": 0,
    }
    ops = (Text(chars=200), Text(chars=200), Text(chars=200))
    found = run_script(_script(config, *ops)).violations
    bound = [v for v in found if v.details.get("cause") == "bound"]
    assert bound and "left the prompt at" in bound[0].message


def test_p6_bound_counts_the_running_invocation_as_floor_before_a_model_call():
    # Found by a FIXES=all campaign (P6-2.13.0-08e5683037af629a; the script below):
    # before a sub-agent's model call the root's reply in the running
    # invocation reaches the sub-agent after a "For context:" preamble of
    # about 430 characters, so the running invocation alone is over the
    # threshold. P2 keeps its opener in every model call of it, and a summary
    # covers a time range, so none of it may be compacted (the fix
    # token-compaction-keeps-the-running-invocation): floor, not waste.
    from compaction_harness.sdk.python import fixes
    from compaction_harness.sdk.python.driver import run_script
    from compaction_harness.spec.scripts import FanOut, Open, Text

    config = {
        "compaction_interval": None,
        "overlap_size": None,
        "token_threshold": 50,
        "event_retention_size": 0,
    }
    script = _script(config, Open(), Text(), FanOut())
    with fixes.applied(
        ["token-compaction-keeps-the-running-invocation", "summary-leaves-out-branch-events"]
    ):
        outcome = run_script(script)
    assert outcome.observed["summaries"], "the token threshold must fire for this to mean anything"
    assert outcome.violations == []


def test_responses_are_attributed_by_id_and_tool_under_the_per_turn_fix():
    # Found by a FIXES=all campaign (tests/repros/P4-2.13.0-9076ff5e8e4d5943.json):
    # ids numbered per turn; export's call_0 is summarised with its interim
    # result, transfer's call_0 asks for confirmation, then export's final
    # answer arrives. Attributed by id alone, export's answer went to
    # transfer's call, was filtered out there (its tool differs), and
    # transfer's call lost its own answer (P4). The fix pairs by id and tool
    # where ADK attributes and where it restores a summarised call.
    from pathlib import Path

    from compaction_harness.sdk.python import fixes
    from compaction_harness.sdk.python.driver import run_script
    from compaction_harness.store.fixtures import load_fixture

    repros = Path(__file__).parents[1] / "repros"
    fixture = load_fixture(repros / "P4-2.13.0-9076ff5e8e4d5943.json")
    # (With the waiting-invocation fault's fix: export's answer resumes the
    # first invocation, whose request the window summarised.)
    with fixes.applied([PER_TURN, RESTORED]):
        outcome = run_script(fixture.case)
    assert outcome.violations == []
    prompt = outcome.observed["prompt"]
    answered = [(p[1], p[2]) for _, parts in prompt for p in parts if p[0] == "response"]
    # export's call is restored before its final answer; each answer follows
    # a call of its own tool.
    assert answered == [("call_0", "transfer"), ("call_0", "export"), ("call_0", "transfer")]
    _assert_each_response_follows_a_call_of_its_own_tool(prompt)


def _assert_each_response_follows_a_call_of_its_own_tool(prompt) -> None:
    """In ``prompt`` (role, parts) pairs, every response part answers a call
    (by id and tool) of the content right before it."""
    for k, (_, parts) in enumerate(prompt):
        for p in parts:
            if p[0] == "response":
                asked = {(c[1], c[2]) for c in prompt[k - 1][1] if c[0] == "call"}
                assert (p[1], p[2]) in asked


def _last_prompts_under_the_per_turn_fix(name: str):
    """Run the fixture ``tests/repros/<name>`` under
    ``responses-follow-only-their-own-call-turn`` (with the fix of the
    waiting-invocation fault that the client's answer meets beside it), then
    under every fix; each run must hold. Yields (fix names, the last model
    call's prompt)."""
    from pathlib import Path

    from compaction_harness.sdk.python import fixes
    from compaction_harness.sdk.python.driver import run_script
    from compaction_harness.store.fixtures import load_fixture
    from compaction_harness.surfaces.switch import parse

    fixture = load_fixture(Path(__file__).parents[1] / "repros" / name)
    for names in ([PER_TURN, RESTORED], parse("all")):
        requests: list = []

        def keep(_, run, requests=requests) -> None:
            requests[:] = run.run.requests

        with fixes.applied(names):
            outcome = run_script(fixture.case, stop=keep)
        assert outcome.violations == [], names
        yield names, requests[-1][2]


def test_the_per_turn_fix_keeps_a_restored_calls_answers_off_another_tools_call():
    # Found by a FIXES=all campaign (tests/repros/P4-2.13.0-cbe1ab8566079b7c.json):
    # ids numbered per turn; lookup's call_0 and call_1 are summarised, export's
    # call_0 and call_1 (long-running) keep their interim results, then a second
    # answer to lookup's call_0 and export's final call_0 arrive. The fix
    # restores lookup's call before its second answer, after export's call_0;
    # the latest-response rearrangement then gave export's answer to it by id
    # alone, and the merge put lookup's call_1 result in place of export's:
    # export's calls and results were lost (P4). Both now pair by id and tool.
    # the prompt of the model call after export's final answer
    for names, prompt in _last_prompts_under_the_per_turn_fix("P4-2.13.0-cbe1ab8566079b7c.json"):
        shown = [(role, [tuple(p[:3]) for p in parts]) for role, parts in prompt]
        assert ("model", [("call", "call_0", "export"), ("call", "call_1", "export")]) in shown, (
            names
        )
        _assert_each_response_follows_a_call_of_its_own_tool(prompt)


def test_the_per_turn_fix_pairs_the_latest_answer_and_merges_by_id_and_tool():
    # The two steps of the contents assembly that paired by id alone under the
    # fix (see the test above), on events built by hand: a call restored after
    # another tool's call with the same id, and a response merge.
    from google.adk.events.event import Event
    from google.adk.flows.llm_flows.tools import _rearranger
    from google.genai import types

    from compaction_harness.sdk.python import fixes

    def event(role: str, *parts: types.Part) -> Event:
        return Event(
            invocation_id="i",
            author="agent" if role == "model" else "user",
            content=types.Content(role=role, parts=list(parts)),
        )

    def fc(i: str, name: str) -> types.Part:
        return types.Part(function_call=types.FunctionCall(id=i, name=name, args={}))

    def fr(i: str, name: str, result: str) -> types.Part:
        return types.Part(
            function_response=types.FunctionResponse(id=i, name=name, response={"r": result})
        )

    def shown(events) -> list[list[tuple]]:
        return [
            [
                ("call", p.function_call.id, p.function_call.name)
                if p.function_call
                else (
                    "response",
                    p.function_response.id,
                    p.function_response.name,
                    p.function_response.response["r"],
                )
                for p in e.content.parts
            ]
            for e in events
        ]

    export = event("model", fc("call_0", "export"), fc("call_1", "export"))
    interim = event("user", fr("call_0", "export", "interim"), fr("call_1", "export", "interim"))
    lookup = event("model", fc("call_0", "lookup"), fc("call_1", "lookup"))  # restored
    looked = event("user", fr("call_0", "lookup", "first"), fr("call_1", "lookup", "first"))
    final = event("user", fr("call_0", "export", "final"))
    with fixes.applied(["responses-follow-only-their-own-call-turn"]):
        merged = _rearranger.merge_function_response_events([interim, looked])
        latest = _rearranger.rearrange_events_for_latest_function_response(
            [export, interim, lookup, looked, final]
        )
    assert shown([merged]) == [
        [
            ("response", "call_0", "export", "interim"),
            ("response", "call_1", "export", "interim"),
            ("response", "call_0", "lookup", "first"),
            ("response", "call_1", "lookup", "first"),
        ]
    ]
    # export's final answer follows export's call, merged with its interim result.
    assert shown(latest)[:2] == [
        [("call", "call_0", "export"), ("call", "call_1", "export")],
        [("response", "call_0", "export", "final"), ("response", "call_1", "export", "interim")],
    ]


def test_the_per_turn_fix_restores_both_calls_one_message_answers_with_one_id():
    # Found by a FIXES=all campaign (tests/repros/P4-2.13.0-559982f908d1158b.json):
    # ids numbered per turn; export's long-running call_0 (interim result) and
    # lookup's call_0 are summarised, export's final answer too, then one
    # client message answers both calls with id call_0 again. The fix found
    # each response's call by id and tool name, but kept it in a dict keyed by
    # the response's event and id alone: export's call overwrote lookup's, only
    # export's call was restored, and lookup's answer left the prompt with no
    # summary given it (P4). Both calls are now restored, each before its answer.
    # the prompt of the model call after the message that answers both
    for names, prompt in _last_prompts_under_the_per_turn_fix("P4-2.13.0-559982f908d1158b.json"):
        shown = [(role, [tuple(p[:3]) for p in parts]) for role, parts in prompt]
        assert shown[-4:] == [
            ("model", [("call", "call_0", "lookup")]),
            ("user", [("response", "call_0", "lookup")]),
            ("model", [("call", "call_0", "export")]),
            ("user", [("response", "call_0", "export")]),
        ], names


def test_the_per_turn_fix_restores_summarised_calls_by_event_id_and_tool():
    # The step of the fix that keyed a response by its event and id alone
    # (see the test above), on events built by hand: one event answers two
    # summarised calls that share an id, each its own tool's.
    from google.adk.events.event import Event
    from google.adk.flows.llm_flows.context import _compaction
    from google.genai import types

    from compaction_harness.sdk.python import fixes

    def event(t: float, role: str, *parts: types.Part) -> Event:
        return Event(
            invocation_id="i",
            author="agent" if role == "model" else "user",
            timestamp=t,
            content=types.Content(role=role, parts=list(parts)),
        )

    def fc(name: str) -> types.Part:
        return types.Part(function_call=types.FunctionCall(id="call_0", name=name, args={}))

    def fr(name: str) -> types.Part:
        return types.Part(
            function_response=types.FunctionResponse(id="call_0", name=name, response={})
        )

    export = event(1, "model", fc("export"))
    interim = event(2, "user", fr("export"))
    lookup = event(3, "model", fc("lookup"))
    looked = event(4, "user", fr("lookup"))
    both = event(5, "user", fr("lookup"), fr("export"))
    with fixes.applied(["responses-follow-only-their-own-call-turn"]):
        restored = _compaction._recover_compacted_function_calls(
            [both], [export, interim, lookup, looked, both]
        )
    # Each call once, before the message that answers it; no earlier answer
    # comes back, since the message answers both calls.
    assert [id(e) for e in restored] == [id(lookup), id(export), id(both)]


def test_the_running_invocation_fix_restores_an_answer_hidden_from_a_surviving_call(
    monkeypatch,
):
    # Found by a FIXES=all campaign (tests/repros/P4-2.13.0-a8419d14ef6e4140.json):
    # two parallel long-running calls answered one by one, each answer
    # resuming the first invocation. Kept out of the summary made before the
    # model call, the first answer goes to the summary made at the
    # invocation's end while its call stays in the prompt; the second answer
    # then makes ADK drop every event between the call and itself, that
    # summary among them (P4). The fix re-injects the hidden answer.
    from pathlib import Path

    import google.adk.flows.llm_flows.context._contents as contents

    from compaction_harness.sdk.python import fixes
    from compaction_harness.sdk.python.driver import run_script
    from compaction_harness.store.fixtures import load_fixture

    fixture = load_fixture(Path(__file__).parents[1] / "repros" / "P4-2.13.0-a8419d14ef6e4140.json")
    name = "token-compaction-keeps-the-running-invocation"

    def p4(outcome) -> list[int]:
        return [p for v in outcome.violations if v.invariant == "P4" for p in v.positions]

    published = contents._recover_compacted_function_calls
    with fixes.applied([name]):
        whole = run_script(fixture.case)
        # The same fix with ADK's own restoration of summarised calls only,
        # undone before the fix is (monkeypatch's own undo, at the test's end,
        # would put the fix's function back after the fix had ended).
        with monkeypatch.context() as patch:
            patch.setattr(contents, "_recover_compacted_function_calls", published)
            without_restoring = run_script(fixture.case)
    assert p4(without_restoring) == [8]
    assert p4(whole) == []
    # What is left is the partial answer the first answer alone gives, and the
    # request of the invocation the answer resumes, summarised at its pause
    # (known faults of their own, with their own fixes).
    causes = {v.details.get("cause") for v in whole.violations}
    assert causes == {"partial answer", "opener missing"}


def test_p6_bound_counts_a_restored_opener_as_floor(monkeypatch):
    # Found by a FIXES=all campaign on 2.13.0 (P6-2.13.0-38179d861e6a3523, not
    # kept as a fixture: as published it shows token-compaction-summarises-
    # the-running-request as a P2, and its export has no P6 to fail): after
    # the invocation's end, the fix running-request-restored-after-compaction
    # shows the invocation's 200-character opener again (P2 needs it should a
    # client's answer resume the invocation). The bound counts it as floor;
    # without that, the same run reads as wasted work.
    from compaction_harness.sdk.python import fixes
    from compaction_harness.sdk.python.driver import run_script
    from compaction_harness.sdk.python.pipeline import PipelineRun
    from compaction_harness.spec.scripts import Answer, Calls, Open

    config = {
        "compaction_interval": None,
        "overlap_size": None,
        "token_threshold": 50,
        "event_retention_size": 0,
    }
    # (The campaign's script answered a plain call a second time; since the
    # running-invocation fix re-injects a call's hidden latest update, the
    # floor's own events restore the opener there, and the clause is shown
    # with a long-running call the client answers after the invocation's end.)
    script = _script(
        config, Open(chars=200), Calls(count=1, kind="long_running"), Answer(picks=(0,))
    )
    names = [
        "token-compaction-keeps-the-running-invocation",
        "running-request-restored-after-compaction",
    ]
    with fixes.applied(names):
        counted = run_script(script)
        monkeypatch.setattr(PipelineRun, "_shows_opener", staticmethod(lambda step, prompt: False))
        not_counted = run_script(script)
    assert counted.observed["summaries"], "the token threshold must fire for this to mean anything"
    assert [v.invariant for v in counted.violations] == []
    assert [v.invariant for v in not_counted.violations] == ["P6"]


def test_p4_leaves_a_waiting_call_out_beside_its_answered_sibling(monkeypatch):
    # Found by a FIXES=all campaign (tests/repros/P4-2.13.0-a18174061704bbf3.json):
    # with compaction the prompt shows the first of two parallel long-running
    # calls with its answer and, as P2 requires, leaves the waiting sibling
    # out; without compaction ADK's latest-response rearrangement drops that
    # answer, so the baseline shows both calls. Not a loss.
    from pathlib import Path

    from compaction_harness.sdk.python import fixes
    from compaction_harness.sdk.python.driver import run_script
    from compaction_harness.spec import prompt_checks
    from compaction_harness.store.fixtures import load_fixture

    fixture = load_fixture(Path(__file__).parents[1] / "repros" / "P4-2.13.0-a18174061704bbf3.json")
    with fixes.applied(
        [
            "pending-call-left-out-beside-answered-siblings",
            "compaction-summarised-around-a-waiting-call",
        ]
    ):
        exempt = run_script(fixture.case)
        monkeypatch.setattr(prompt_checks, "_waiting_beside_answered", lambda steps, parts: {})
        required = run_script(fixture.case)
    assert [v.invariant for v in exempt.violations if v.invariant == "P4"] == []
    lost = [v for v in required.violations if v.invariant == "P4"]
    assert [v.positions for v in lost] == [(1,)]


def test_p6_bound_counts_a_call_adk_must_restore_as_floor():
    # A second answer to a call that a summary took: ADK re-injects the large
    # call event so the answer stays paired. Any compaction pays for it, so it
    # is floor, not waste (a false alarm before; found by a 600 s campaign).
    from compaction_harness.sdk.python.driver import run_script
    from compaction_harness.spec.scripts import Answer, Calls

    config = {
        "compaction_interval": None,
        "overlap_size": None,
        "token_threshold": 50,
        "event_retention_size": 0,
    }
    ops = (
        Calls(count=1, fate="now", chars=200),
        Calls(count=1, fate="later", chars=20),
        Answer(picks=(0,), again=True),
    )
    outcome = run_script(_script(config, *ops))
    assert outcome.observed["summaries"], "the token threshold must fire for this to mean anything"
    assert not [v for v in outcome.violations if v.invariant == "P6"]


def test_p6_bound_on_hand_made_numbers():
    from compaction_harness.spec.pipeline_checks import check_summary_bound

    assert check_summary_bound(after=70, floor=20, threshold=60, number=0)
    assert not check_summary_bound(after=50, floor=20, threshold=60, number=0)
    # What may not be compacted already reaches the threshold: no bound applies.
    assert not check_summary_bound(after=90, floor=60, threshold=60, number=0)


def test_p3_bound_counts_a_resumed_invocation_and_the_retained_tail():
    # i1 waits on a long-running call that a client answers after i2 and i3.
    # ADK's window counts i1 as new again but ends its range at i3's last event
    # (order of first appearance), so i1's resumed events wait for the next
    # invocation's end: both orders count. Found by the runner item of a
    # 600 s campaign (the bound took only the newest by latest event: 6 < 7).
    steps = Session(
        (
            user("i1", 1, "u1"),
            call("i1", 2, "a", long_running=("a",)),
            user("i2", 3, "u2"),
            text("i2", 4),
            user("i3", 5, "u3"),
            text("i3", 6),
            answer("i1", 7, "a", author="user"),
            text("i1", 8),
        )
    )
    assert liveness_bound(SLIDING, steps) == 8
    before = Session(steps.steps[:6])  # nothing resumed: i2 and i3 either way
    assert liveness_bound(SLIDING, before) == 4
    # A token threshold takes precedence and retains the newest raw events.
    both = {**SLIDING, "token_threshold": 1, "event_retention_size": 3}
    assert liveness_bound(both, before) == 7


def test_p3_gives_events_behind_an_answered_call_one_end_and_no_more(monkeypatch):
    # A long-running call stays pending through three invocations: its own
    # invocation cannot be compacted whole meanwhile (what comes after it can,
    # around it). The client's answer resumes its invocation and makes
    # everything compactable at once; ADK's window takes it at the next end
    # (found by the runner item of a 600 s campaign: P3 called that a stall).
    # A compactor that then never compacts is still caught, one end on. The
    # compactor here summarises around the waiting call (the fix of
    # compaction-stops-while-a-call-waits: without it ADK stalls while the
    # call waits, and P3 rightly fires before the answer) and refuses every
    # range that holds the long-running call once it is answered.
    from compaction_harness.sdk.python import fixes
    from compaction_harness.sdk.python.driver import run_script
    from compaction_harness.spec.scripts import Answer, Calls, End, Open, Script, ScriptConfig, Text

    turns = (Open(), Text(), Open(), Text(), Open(), Text())
    script = Script(
        ScriptConfig(compaction_interval=1, overlap_size=0),
        (
            Open(),
            Calls(kind="long_running"),
            Text(),
            *turns,
            End(),
            Answer(),
            Text(),
            Open(),
            Text(),
        ),
    )
    p3 = "P3"
    around = ["compaction-summarised-around-a-waiting-call"]
    with fixes.applied(around):
        assert not [v for v in run_script(script).violations if v.invariant == p3]
    resumed = Script(script.config, script.operations[:-2])  # ends with the resumed invocation
    worth = compaction._is_range_worth_compacting

    def refuses_the_answered_call(*, events, events_to_compact):
        held = any(e.long_running_tool_ids for e in events_to_compact)
        return not held and worth(events=events, events_to_compact=events_to_compact)

    monkeypatch.setattr(compaction, "_is_range_worth_compacting", refuses_the_answered_call)
    with fixes.applied(around):
        assert not [v for v in run_script(resumed).violations if v.invariant == p3]
        longer = Script(script.config, (*script.operations, *turns, End()))
        stalled = [v for v in run_script(longer).violations if v.invariant == p3]
    assert stalled and len(stalled[0].positions) > 4


def test_p3_lets_a_pair_wait_for_the_window_to_reach_its_closer(monkeypatch):
    # Found by make fuzz FIXES=all (tests/repros/P3-2.13.0-14f11070b8ea17dc.json):
    # calendar's placeholder (#12) asks for a credential under call_0, which
    # export's answer #18 closes by id; #18 is an event of an invocation first
    # seen before the newest one, resumed twice. ADK's window ends at the last
    # event of the newest invocation by first appearance (#15), so #8 to #12,
    # compactable only with #18, wait for the next invocation's end. P3 held
    # them to the bound at once and called the wait a stall. A compactor that
    # never compacts is still caught once new invocations end.
    from pathlib import Path

    from compaction_harness.sdk.python import fixes
    from compaction_harness.sdk.python.driver import run_script
    from compaction_harness.spec import liveness_checks
    from compaction_harness.spec.scripts import Open, Script, Text
    from compaction_harness.store.fixtures import load_fixture
    from compaction_harness.surfaces import switch

    path = Path(__file__).parents[1] / "repros" / "P3-2.13.0-14f11070b8ea17dc.json"
    script = load_fixture(path).case
    with fixes.applied(switch.parse("all")):
        assert not [v for v in run_script(script).violations if v.invariant == "P3"]
        # (contexts: what they replace must be put back inside the fixes)
        with monkeypatch.context() as m:  # the window taken as reaching every event
            m.setattr(liveness_checks, "_window_end", lambda live, window: len(window))
            assert [v.invariant for v in run_script(script).violations] == ["P3"]
        longer = Script(script.config, (*script.operations, Open(), Text(), Open(), Text()))
        assert not [v for v in run_script(longer).violations if v.invariant == "P3"]
        with monkeypatch.context() as m:
            m.setattr(compaction, "_longest_self_contained_prefix", lambda *a, **k: [])
            assert [v for v in run_script(longer).violations if v.invariant == "P3"]


def test_p4_reads_a_call_whose_only_answer_was_rewound_as_an_orphan(monkeypatch):
    # Found by make fuzz FIXES=all (tests/repros/P4-2.13.0-80878a8044dc6810.json):
    # lookup's call_0 (#7) is answered by #9, which a rewind (#10) removes. ADK
    # applies rewinds before it prunes unanswered calls, so #7 goes from every
    # prompt but the baseline's, where export's long-running call_0 (#1, hidden
    # by a summary in the prompt) keeps the reused id. P4 exempts such a call
    # as an orphan, but counted the rewound #9 as its answer and called #7 lost.
    from pathlib import Path

    from compaction_harness.sdk.python import fixes
    from compaction_harness.sdk.python.driver import run_script
    from compaction_harness.spec import prompt_checks
    from compaction_harness.store.fixtures import load_fixture
    from compaction_harness.surfaces import switch

    path = Path(__file__).parents[1] / "repros" / "P4-2.13.0-80878a8044dc6810.json"
    script = load_fixture(path).case
    with fixes.applied(switch.parse("all")):
        assert run_script(script).violations == []
        with monkeypatch.context() as m:  # rewound answers counted
            m.setattr(prompt_checks, "_not_rewound", lambda steps: {id(s) for s in steps})
            lost = run_script(script).violations
    assert [(v.invariant, v.positions) for v in lost] == [("P4", (7,))]


def test_p3_holds_a_client_record_to_the_mark_adk_reads_it_as():
    # A client's record that ends at the end of an invocation covers, for ADK's
    # sliding window, everything stamped before its end: those events are the
    # record writer's, not a stall of compaction (found by a campaign).
    from compaction_harness.sdk.python.driver import run_script
    from compaction_harness.spec.scripts import ClientRecord, Open, Text

    ops = (Text(), Text(), Text(), ClientRecord(back=1), Open(), Open())
    found = run_script(_script(SLIDING, *ops)).violations
    assert not [v for v in found if v.invariant == "P3"]


def test_p3_lets_compaction_wait_until_it_saves_prompt():
    # A summary larger than the next invocations: compacting them would grow
    # the prompt (P6's waste), so ADK waits until the backlog outgrows it. A
    # delay bounded by the summary's size, not a stall (found by a campaign).
    from compaction_harness.sdk.python.driver import run_script
    from compaction_harness.spec.scripts import Open, Script, ScriptConfig

    ops = (Open(), Open(), Open(), Open())
    large = ScriptConfig(compaction_interval=1, overlap_size=0, summary="large")
    assert not run_script(Script(large, ops)).violations


def _weighed_otherwise(monkeypatch, name: str, weigh) -> tuple[list, list]:
    """The repro ``name`` run with every fix: it holds; then again with P3's
    wait weighed by ``weigh(violation, ranges)`` (the ranges the harness
    weighs, for what was weighed before the rule): (violations, the ranges
    each P3 violation had)."""
    from compaction_harness.sdk.python import fixes
    from compaction_harness.sdk.python import pipeline as driven
    from compaction_harness.sdk.python.driver import run_script
    from compaction_harness.spec.liveness_checks import ranges_beyond_retention
    from compaction_harness.store.fixtures import load_fixture
    from compaction_harness.surfaces import switch

    script = load_fixture(Path(__file__).parents[1] / "repros" / name).case
    seen: list = []

    def weighed(violation):
        seen.append(ranges_beyond_retention(violation))
        return weigh(violation, seen[-1])

    with fixes.applied(switch.parse("all")):
        assert not run_script(script).violations
        with monkeypatch.context() as m:
            m.setattr(driven, "ranges_beyond_retention", weighed)
            return run_script(script).violations, seen


def test_p3_weighs_only_what_a_token_summary_could_take_against_the_last_summary(monkeypatch):
    # Found by make fuzz on 2.13.0 (tests/repros/P3-2.13.0-8447bc56c14aad2f.json),
    # a token threshold alone with retention 3 and summaries that grow. At
    # the last end the retained three (a client's late answer, a 2000-character
    # user message, a reply) leave only a 20-character reply to summarise,
    # which ADK with every fix rightly refuses (_is_range_worth_compacting).
    # P3 weighed the retained events too and called that wait a stall.
    found, seen = _weighed_otherwise(
        monkeypatch, "P3-2.13.0-8447bc56c14aad2f.json", lambda v, ranges: (v.positions,)
    )
    assert [v.invariant for v in found] == ["P3"]
    # Of the four events held, three are retained: only one could be taken.
    assert len(found[0].positions) == 4 and seen == [((found[0].positions[0],),)]


def test_p3_weighs_each_range_a_waiting_call_splits_off_on_its_own(monkeypatch):
    # Found by the gate's derandomised pipeline property once users answered
    # approvals by turns (tests/repros/P3-2.13.0-e9aac900e514cbeb.json):
    # sliding window, interval 1, large summaries (4,079 characters). export
    # waits after a 2,000-character reply; the prefix before it (2,183
    # characters) and the range after it (a 2,010-character user message)
    # are each smaller than the latest summary, and ADK with every fix rightly
    # writes neither (_is_range_worth_compacting, tried on each range). P3
    # weighed the two together (4,193) and called the wait a stall.
    found, seen = _weighed_otherwise(
        monkeypatch,
        "P3-2.13.0-e9aac900e514cbeb.json",
        lambda v, ranges: (tuple(p for r in ranges for p in r),),
    )
    assert [v.invariant for v in found] == ["P3"]
    # The waiting call (#7) splits the held five into the prefix and the range after it.
    assert seen[-1] == ((3, 4, 5, 6), (8,))


def test_p3_still_fires_for_a_stall_with_large_summaries(monkeypatch):
    # The same backlog when compaction never happens and nothing is saved by
    # waiting: the events outgrow the summary and P3 fires.
    from compaction_harness.sdk.python.driver import run_script
    from compaction_harness.spec.scripts import Open, Script, ScriptConfig, Text

    monkeypatch.setattr(
        compaction, "_longest_self_contained_prefix", lambda events, all_events=None: []
    )
    ops = (Open(), *(op for _ in range(6) for op in (Open(chars=2000), Text(chars=2000))))
    large = ScriptConfig(compaction_interval=1, overlap_size=0, summary="large")
    found = run_script(Script(large, ops)).violations
    assert "P3" in invariants(found)


def test_p3_lets_the_root_wait_by_its_events_not_the_preamble_on_other_agents_replies():
    # Found by a FIXES=all campaign (tests/repros/P3-2.13.0-8ad86e6f6fce5e25.json):
    # ADK prices a range by its events' own content; the root's prompt shows
    # each sub-agent reply after a "For context:" preamble of about 430
    # characters. Measured in the prompt, the backlog outgrew the summary by
    # 12 characters; measured as ADK prices it, it is about half the summary.
    from compaction_harness.sdk.python.driver import run_script
    from compaction_harness.spec.scripts import FanOut, Open, Script, ScriptConfig, Text

    ops = (Open(), Open(), FanOut(), Text(chars=2000), Open(), FanOut(), Open())
    large = ScriptConfig(compaction_interval=1, overlap_size=0, summary="large")
    found = run_script(Script(large, ops)).violations
    assert "P3" not in invariants(found)


def test_p3_fires_when_sub_agent_replies_outgrow_the_summary_and_compaction_stops(monkeypatch):
    # The same fan-outs, with compaction refused after its first summary: once
    # the events' own content outgrows the summary, waiting saves nothing and
    # the growing backlog is a stall.
    from compaction_harness.sdk.python.driver import run_script
    from compaction_harness.spec.scripts import FanOut, Open, Script, ScriptConfig, Text

    worth = compaction._is_range_worth_compacting
    asked = []

    def only_the_first(**kwargs):
        asked.append(1)
        return len(asked) == 1 and worth(**kwargs)

    monkeypatch.setattr(compaction, "_is_range_worth_compacting", only_the_first)
    turns = tuple(op for _ in range(4) for op in (Open(), FanOut(chars=1500), Text(chars=1500)))
    large = ScriptConfig(compaction_interval=1, overlap_size=0, summary="large")
    found = run_script(Script(large, (Open(), Open(), *turns))).violations
    assert "P3" in invariants(found)


def test_p3_fires_when_compaction_stops_while_a_call_waits():
    # A long-running call that is never answered: it is not compacted, but it
    # does not shield the invocations after it, which form a self-contained
    # range of their own. ADK's prefix stops at the waiting call, so nothing
    # after it is ever compacted and the backlog grows with every invocation
    # (known fault compaction-stops-while-a-call-waits on 2.13.0; its fix
    # summarises around the waiting call and P3 holds).
    from compaction_harness.sdk.python import fixes
    from compaction_harness.sdk.python.driver import run_script
    from compaction_harness.spec.scripts import Calls, Open, Script, ScriptConfig, Text

    turns = tuple(op for _ in range(5) for op in (Open(), Text()))
    script = Script(
        ScriptConfig(compaction_interval=1, overlap_size=0),
        (Open(), Calls(kind="long_running"), Text(), *turns),
    )
    stalled = [v for v in run_script(script).violations if v.invariant == "P3"]
    assert stalled and len(stalled[0].positions) > 4  # bound (1 + 1) * 2
    with fixes.applied(["compaction-summarised-around-a-waiting-call"]):
        assert not run_script(script).violations


def test_the_fix_around_a_waiting_call_leaves_a_second_answer_with_its_call():
    # Two parallel long-running calls: one is answered twice, the other waits.
    # A fix that summarised the range after the waiting call from the second
    # answer on hid that answer while its call stayed in the prompt, which
    # gave the call the first answer back: P4 (found by make fuzz FIXES=all on
    # 2.13.0, P4-2.13.0-65cca2f3aae66e48 and, through the Runner,
    # P4-2.13.0-08991d5fcf450ef1). The range now ends before an answer to a
    # call opened before it (reference.compactable_around_waiting_calls).
    from compaction_harness.sdk.python import fixes
    from compaction_harness.sdk.python.driver import run_script
    from compaction_harness.spec.scripts import (
        Answer,
        Ask,
        Calls,
        End,
        Open,
        Script,
        ScriptConfig,
        Text,
    )

    script = Script(
        ScriptConfig(compaction_interval=1, overlap_size=0),
        (
            Open(),
            Calls(count=2, kind="long_running"),
            Text(),
            End(),
            Answer(picks=(0,)),
            Answer(picks=(0,), again=True),
            Answer(picks=(0,)),
            Ask(kind="confirmation"),
        ),
    )
    # (With the waiting-invocation fault's fix: the answers resume the first
    # invocation, whose request the window summarised.)
    with fixes.applied(["compaction-summarised-around-a-waiting-call", RESTORED]):
        assert not run_script(script).violations


# -- summaries per branch (the fix summary-leaves-out-branch-events) ---------------
BRANCH_FIX = "summary-leaves-out-branch-events"
AT_MOST_ONCE = "times at one"  # P6's clause: one summary per branch per end / model call


def _fan_out_after_a_delegate():
    # docs/findings/P6-2.13.0-86ab8bc7c919325e.json (make fuzz FIXES=all on
    # 2.13.0): token threshold 50, retention 0; a sequential sub-agent, then
    # parallel sub-agents a and b on branches team.a and team.b. The root's
    # prompt shows their replies, so a summary the root reads must take them.
    from compaction_harness.spec.scripts import Delegate, FanOut

    return _script(
        {"token_threshold": 50, "event_retention_size": 0},
        Delegate(chars=20),
        FanOut(order="ab", chars=20),
    )


def _every_fix_but(name: str) -> list[str]:
    from compaction_harness.sdk.python import fixes

    return [n for n in fixes.FIXES if n != name and fixes.unavailable(n) is None]


def test_p5_fires_for_a_fan_out_without_the_branch_fix():
    # Every other fix: the summary at the invocation's end has no branch and
    # takes a's and b's replies, which each sibling then reads.
    from compaction_harness.sdk.python import fixes
    from compaction_harness.sdk.python.driver import run_script

    with fixes.applied(_every_fix_but(BRANCH_FIX)):
        found = run_script(_fan_out_after_a_delegate()).violations
    assert "P5" in invariants(found)


def test_the_branch_fix_holds_on_a_fan_out():
    # With every fix, the end's compaction writes one summary per branch, on
    # that branch: the root's prompt drops below the threshold (no P3, no P6
    # bound), no sibling reads another branch's reply (P5), nothing is lost
    # (P4), and one summary per branch at one point is one compaction (P6).
    from compaction_harness.sdk.python import fixes
    from compaction_harness.sdk.python.driver import run_script

    with fixes.applied(_every_fix_but("")):
        run = run_script(_fan_out_after_a_delegate())
    assert run.violations == []
    # the branchless opener and helper's reply, a's reply, b's reply
    assert run.observed["summaries"] == [[0, 1], [2], [3]]


def _writes_each_summary_twice():
    """A deliberately broken compactor (over the branch fix): every branch's
    summary is written twice at one compaction point."""
    import google.adk.apps.compaction as module

    real = module._summary_inputs_by_branch
    return lambda events: [x for summary_input in real(events) for x in (summary_input,) * 2]


def _written_twice(run, script) -> list:
    """P6's "at most once per branch" violations of ``script`` run by ``run``
    (a driver's entry point) with every fix and every summary written twice
    (:func:`_writes_each_summary_twice`); with ADK's own compactor the script
    must hold."""
    from compaction_harness.sdk.python import fixes

    with fixes.applied(_every_fix_but("")):
        assert run(script).violations == []
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(compaction, "_summary_inputs_by_branch", _writes_each_summary_twice())
            found = run(script).violations
    return [v for v in found if v.invariant == "P6" and AT_MOST_ONCE in v.message]


@pytest.mark.parametrize("trigger", ["sliding window", "token threshold"])
def test_p6_fires_when_a_compactor_writes_two_summaries_on_one_branch(trigger):
    from compaction_harness.sdk.python.driver import run_script
    from compaction_harness.spec.scripts import End, FanOut

    if trigger == "sliding window":
        script = _script(SLIDING, FanOut(order="ab", chars=20), End())
    else:
        script = _fan_out_after_a_delegate()
    twice = _written_twice(run_script, script)
    assert {v.details["branch"] for v in twice} == {None, "team.a", "team.b"}


def test_the_runner_reads_each_summarys_branch_from_what_it_wrote():
    # /tmp campaign finding P5-2.13.0-1bb1149b38cf25d3 (runner driver, every
    # fix): the Runner calls the summariser once per branch at one invocation
    # end before it stores any of them, so all three calls see one session
    # length. Read by position, all three were the branchless summary #0 (P5
    # on a's and b's summaries, P6 'ran 3 times').
    from compaction_harness.sdk.python import fixes
    from compaction_harness.sdk.python.adk_runner import run_script_with_runner
    from compaction_harness.spec.scripts import FanOut

    script = _script(SLIDING, FanOut(order="ab", chars=20))
    with fixes.applied(_every_fix_but("")):
        run = run_script_with_runner(script, tree="director")
    assert run.violations == []
    stored = [s for s in run.session if s.compaction is not None]
    assert [s.branch for s in stored] == [None, "team.a", "team.b"]


def test_p6s_floor_counts_every_branchs_summary_made_at_one_point():
    # Per-branch summaries (summary-leaves-out-branch-events): a fan-out's
    # replies get a summary each on their branch, beside the root's, at one
    # compaction point. With summaries that grow with what they are given,
    # the three together stay above the token threshold: that is the floor
    # the configuration implies, not a summary that removed too little. The
    # floor counted only the newest summary (found by make fuzz FIXES=all,
    # P6-2.13.0-83f31f4d387a681b).
    from compaction_harness.sdk.python import fixes
    from compaction_harness.sdk.python.driver import run_script
    from compaction_harness.spec.scripts import Ask, FanOut, Open, Script, ScriptConfig

    script = Script(
        ScriptConfig(
            compaction_interval=None,
            overlap_size=None,
            token_threshold=117,
            event_retention_size=0,
            summary="grows",
        ),
        (Open(), FanOut(order="ab"), Ask(kind="confirmation")),
    )
    every = [name for name in fixes.FIXES if fixes.unavailable(name) is None]
    with fixes.applied(every):
        assert not run_script(script).violations


@pytest.mark.parametrize("recent_events", [None, 0])
def test_p6_fires_when_the_runners_compactor_writes_two_summaries_at_one_end(recent_events):
    # The runner driver's side of the clause. With a partial read that loads
    # nothing (recent_events=0), two invocation ends of one operation hold as
    # many raw events (P6-2.13.0-601a5003, a harness fault: they were counted
    # as one point); the two summaries of one end hold the same ones.
    from dataclasses import replace

    from compaction_harness.sdk.python.adk_runner import run_script_with_runner
    from compaction_harness.spec.scripts import Open, Text

    script = _script(SLIDING, Text(), Open(), Text(), Open(), Text())
    script = replace(script, config=replace(script.config, recent_events=recent_events))
    twice = _written_twice(run_script_with_runner, script)
    assert twice and all("2 times at one invocation end" in v.message for v in twice)
