"""The reference checked against hand-worked examples (the definitions quoted in reference.py)."""

from __future__ import annotations

from builders import answer, call, non_compaction, session, summary, text, user

from compaction_harness.spec import reference as ref
from compaction_harness.spec.model import Call, Step


def all_of(s):
    return tuple(range(len(s)))


def test_balanced_pair_is_self_contained():
    s = session(user("i1", 1), call("i1", 2, "a"), answer("i1", 3, "a"), text("i1", 4))
    assert ref.longest_self_contained_prefix(s, all_of(s)) == 4
    assert ref.provably_dead_call_ids(s, all_of(s)) == frozenset()


def test_pending_call_answered_after_the_window_blocks_the_cut():
    # The response exists in the session, outside the window: the call is live.
    s = session(user("i1", 1), call("i1", 2, "a"), text("i1", 3), answer("i2", 4, "a"))
    window = (0, 1, 2)
    assert ref.provably_dead_call_ids(s, window) == frozenset()
    assert ref.longest_self_contained_prefix(s, window) == 1


def test_issue_7236_orphan_after_prior_compaction_does_not_block():
    # ADK issue 7236: after a first compaction, an orphaned call becomes the
    # first event of every later window. It is provably dead (no response
    # anywhere, not long-running, not in the newest invocation), so the
    # healthy events after it are compactable.
    s = session(
        user("i1", 1),
        text("i1", 2),
        summary("i1", 3, 1, 2),
        call("i2", 4, "orphan"),
        user("i3", 5),
        text("i3", 6),
    )
    window = (3, 4, 5)
    assert ref.newest_invocation(s) == "i3"
    assert ref.provably_dead_call_ids(s, window) == {"orphan"}
    assert ref.strict_self_contained_prefix(s, window) == 0
    assert ref.longest_self_contained_prefix(s, window) == 3


def test_orphan_in_newest_invocation_is_not_dead():
    s = session(user("i1", 1), call("i2", 2, "x"), text("i2", 3))
    assert ref.provably_dead_call_ids(s, all_of(s)) == frozenset()
    assert ref.longest_self_contained_prefix(s, all_of(s)) == 1


def test_long_running_call_is_protected():
    s = session(call("i1", 1, "lr", long_running=("lr",)), user("i2", 2))
    assert ref.dead_id_clauses(s, all_of(s), "lr")["not_protected"] is False
    assert ref.longest_self_contained_prefix(s, all_of(s)) == 0


def test_synthetic_confirmation_call_outside_newest_invocation_is_not_protected():
    confirm = Step(
        "i1", "agent", 1, calls=(Call("hitl", "adk_request_confirmation"),), long_running=("hitl",)
    )
    s = session(confirm, user("i2", 2))
    assert ref.provably_dead_call_ids(s, all_of(s)) == {"hitl"}
    assert ref.longest_self_contained_prefix(s, all_of(s)) == 2
    # ...but inside the newest invocation it is protected.
    s2 = session(user("i0", 0), confirm)
    assert ref.provably_dead_call_ids(s2, all_of(s2)) == frozenset()


def test_event_without_invocation_counts_as_newest_for_protection():
    lr = Step("", "agent", 1, calls=(Call("h", "adk_request_credential"),), long_running=("h",))
    s = session(lr, user("i2", 2))
    assert ref.dead_id_clauses(s, all_of(s), "h")["not_protected"] is False


def test_response_pending_its_own_confirmation_is_not_resolved():
    # The tool answers `a` but asks for confirmation in the same event: the
    # obligation re-opens (responses count before opens) and the response
    # does not count as resolved.
    s = session(
        user("i1", 1),
        call("i1", 2, "a"),
        answer("i1", 3, "a", confirmations=("a",)),
        user("i2", 4),
    )
    assert ref.resolved_response_ids(s[2]) == frozenset()
    assert ref.open_obligations(s, all_of(s), 3, exempt_dead=False)[0].id == "a"
    # `a` is dead: no resolved response anywhere, old invocation, not protected.
    assert ref.provably_dead_call_ids(s, all_of(s)) == {"a"}
    assert ref.longest_self_contained_prefix(s, all_of(s)) == 4


def test_pending_confirmation_in_newest_invocation_is_protected():
    s = session(user("i1", 1), call("i1", 2, "a"), answer("i1", 3, "a", confirmations=("a",)))
    assert ref.provably_dead_call_ids(s, all_of(s)) == frozenset()
    assert ref.longest_self_contained_prefix(s, all_of(s)) == 1


def test_an_event_cannot_close_what_it_opens():
    # Responses count before opens: a call and its response in one event
    # leave the call open.
    same = Step(
        "i1", "agent", 1, calls=(Call("a", "tool"),), responses=answer("i1", 1, "a").responses
    )
    s = session(same, user("i1", 2))
    assert [o.id for o in ref.open_obligations(s, (0, 1), 2, exempt_dead=False)] == ["a"]
    assert ref.strict_self_contained_prefix(s, (0, 1)) == 0


def test_reused_id_call_in_newest_invocation_stays_live():
    # `r` is orphaned in i1 and called again by the newest invocation i2. The
    # id is provably dead (its i1 call qualifies), but the i2 call may still be
    # answered: its obligation is live, so the prefix must stop before it.
    s = session(call("i1", 1, "r"), text("i1", 2), call("i2", 3, "r"), text("i2", 4))
    window = all_of(s)
    assert ref.provably_dead_call_ids(s, window) == {"r"}
    assert ref.longest_self_contained_prefix(s, window) == 2
    assert [o.position for o in ref.open_obligations(s, window, 4)] == [2]


def test_parallel_calls_answered_across_events_out_of_order():
    s = session(user("i1", 1), call("i1", 2, "a", "b"), answer("i1", 3, "b"), answer("i2", 4, "a"))
    assert ref.longest_self_contained_prefix(s, all_of(s)) == 4
    assert ref.longest_self_contained_prefix(s, (0, 1, 2)) == 1


def test_window_skips_compaction_events():
    s = session(user("i1", 1), summary("i1", 2, 1, 1), text("i2", 3))
    assert non_compaction(s) == (0, 2)
    assert ref.newest_invocation(session(text("i1", 1), summary("i9", 2, 1, 1))) == "i1"


def test_branch_visibility_follows_the_branch_path():
    # ParallelAgent: "a sub-agent sees the events that led to the fan-out and
    # its own, but not those of a sibling".
    assert ref.branch_sees(None, "team.a")  # an agent without a branch sees everything
    assert ref.branch_sees("team.a", None)  # events without a branch are for everyone
    assert ref.branch_sees("team.a", "team.a")
    assert ref.branch_sees("team.a", "team")  # an ancestor's events
    assert ref.branch_sees("team.a.x", "team.a")
    assert not ref.branch_sees("team.a", "team.b")  # a sibling's
    assert not ref.branch_sees("team", "team.a")  # a descendant's
    assert not ref.branch_sees("team.ab", "team.a")  # path segments, not string prefixes


def test_a_waiting_call_does_not_shield_what_comes_after_it():
    # P3: the long-running call waits (never answered); the invocations after
    # it are a self-contained range of their own, compactable around it.
    s = session(
        user("i1", 1),
        call("i1", 2, "a", long_running=("a",)),
        user("i2", 3),
        text("i2", 4),
        user("i3", 5),
        call("i3", 6, "b"),
        answer("i3", 7, "b"),
    )
    assert ref.waiting_ids(s, all_of(s)) == frozenset({"a"})
    assert ref.longest_self_contained_prefix(s, all_of(s)) == 1
    assert ref.compactable_around_waiting_calls(s, all_of(s)) == (0, 2, 3, 4, 5, 6)


def test_a_range_around_a_waiting_call_never_takes_an_answer_from_its_call():
    # x is called before the waiting call and answered after it: neither the
    # answer nor anything before it can be summarised without the waiting call.
    s = session(
        call("i1", 1, "x"),
        call("i1", 2, "a", long_running=("a",)),
        answer("i1", 3, "x"),
        user("i2", 4),
    )
    assert ref.compactable_around_waiting_calls(s, all_of(s)) == (3,)


def test_a_range_around_a_waiting_call_never_takes_a_second_answer_from_its_call():
    # x and the waiting a are parallel calls; x is answered, then answered
    # again. The prompt gives x its last answer, so a range that held the
    # second answer alone would leave x in the prompt with the first: the
    # range after the waiting call starts after it (found by make fuzz
    # FIXES=all on 2.13.0, P4-2.13.0-65cca2f3aae66e48).
    s = session(
        user("i1", 1),
        call("i1", 2, "x", "a", long_running=("x", "a")),
        answer("i1", 3, "x", author="user"),
        answer("i1", 4, "x", author="user"),
        user("i2", 5),
        text("i2", 6),
    )
    assert ref.waiting_ids(s, all_of(s)) == frozenset({"a"})
    assert ref.compactable_around_waiting_calls(s, all_of(s)) == (0, 4, 5)


def test_a_kept_event_is_never_summarised_and_holds_the_pairs_that_span_it():
    # An SDK keeps event 2 as waiting where the definitions call its call
    # provably dead (an unanswered confirmation request of an older
    # invocation, kept by ADK-JS's fix): x is called before it and answered
    # after it, so neither x's pair nor the events between can be summarised
    # without it; the newest invocation's events after x's answer can.
    s = session(
        user("i1", 1),
        call("i1", 2, "x"),
        call("i2", 3, "d"),  # never answered, not protected: provably dead
        answer("i3", 4, "x", author="user"),
        user("i3", 5),
        text("i3", 6),
    )
    assert ref.provably_dead_call_ids(s, all_of(s)) == frozenset({"d"})
    assert ref.compactable_around_waiting_calls(s, all_of(s)) == (0, 1, 2, 3, 4, 5)
    assert ref.compactable_around_waiting_calls(s, all_of(s), frozenset({2})) == (0, 4, 5)


def test_no_range_holds_a_kept_event_even_where_a_later_response_closes_its_id():
    # ids repeat: x is called twice, the second call kept by the SDK (a
    # request still waiting for a person), and one answer with id x comes.
    # By id the answer closes both calls, so without ``kept`` the whole
    # prefix is self-contained; with the second call kept, no range takes it,
    # nor the first call's pair that spans it.
    s = session(
        user("i1", 1),
        call("i1", 2, "x"),
        call("i2", 3, "x"),
        answer("i3", 4, "x", author="user"),
        user("i3", 5),
        text("i3", 6),
    )
    assert ref.compactable_around_waiting_calls(s, all_of(s)) == (0, 1, 2, 3, 4, 5)
    assert ref.compactable_around_waiting_calls(s, all_of(s), frozenset({2})) == (0, 4, 5)


def test_only_a_waiting_call_is_passed_not_a_call_in_flight():
    # A plain call of the newest invocation is neither dead nor waiting: it is
    # in flight, and what comes after it waits with it.
    s = session(user("i1", 1), text("i1", 2), user("i2", 3), call("i2", 4, "x"), text("i2", 5))
    assert ref.waiting_ids(s, all_of(s)) == frozenset()
    assert ref.compactable_around_waiting_calls(s, all_of(s)) == (0, 1, 2)


def test_an_answered_long_running_call_does_not_wait():
    s = session(
        user("i1", 1),
        call("i1", 2, "a", long_running=("a",)),
        user("i2", 3),
        answer("i1", 4, "a", author="user"),
    )
    assert ref.waiting_ids(s, all_of(s)) == frozenset()
    assert ref.compactable_around_waiting_calls(s, all_of(s)) == (0, 1, 2, 3)


def on(step: Step, branch: str) -> Step:
    """``step`` on ``branch``."""
    from dataclasses import replace

    return replace(step, branch=branch)


def test_token_candidates_are_per_branch():
    # A summary takes an event off every prompt it was in only when it is on
    # the event's own branch (P5: its readers may see the event; P4: it is read
    # by every agent that sees the event). Worked by hand:
    #   0 user   t=1           taken by the branchless summary (4, range 1..1)
    #   1 a      t=2 team.a    taken by team.a's summary (3, range 2..3)
    #   2 b      t=3 team.b    inside team.a's range, but no team.b summary
    #   3 summary on team.a, range 2..3
    #   4 summary without a branch, range 1..1
    #   5 user   t=6           newer than the branchless summary
    #   6 a      t=7 team.a    newer than team.a's summary
    #   7 user   t=2.5         inside team.a's range only: still a candidate
    s = session(
        user("i1", 1),
        on(text("i1", 2), "team.a"),
        on(text("i1", 3), "team.b"),
        on(summary("s1", 4, 2, 3), "team.a"),
        summary("s2", 5, 1, 1),
        user("i2", 6),
        on(text("i2", 7), "team.a"),
        user("i2", 2.5),
    )
    assert ref.latest_summary(s) == 4  # of any branch: neither range holds the other
    assert ref.latest_summary(s, "team.a") == 3
    assert ref.latest_summary(s, None) == 4
    assert ref.latest_summary(s, "team.b") is None
    assert ref.token_candidates(s) == (2, 5, 6, 7)
    assert ref.token_threshold_range(s, 0) == (2, 5, 6, 7)
    # the seeds: team.b has no summary; the branchless one and team.a's lead
    assert ref.token_seeds(s, (2, 5, 6, 7)) == (4, 3)
    assert ref.token_seeds(s, (2,)) == ()
    assert ref.token_seeds(s, ()) == ()


def test_a_summary_is_superseded_only_on_its_own_branch():
    s = session(
        user("i1", 1),
        on(text("i1", 2), "team.a"),
        on(summary("s1", 3, 1, 2), "team.a"),
        summary("s2", 4, 1, 2),  # the same range without a branch: supersedes nothing of team.a
        on(summary("s3", 5, 2, 2), "team.a"),  # inside s1: superseded by it
    )
    assert ref.latest_summary(s, "team.a") == 2
    assert ref.latest_summary(s, None) == 3
    assert ref.token_candidates(s) == ()


def test_a_branch_summary_leaves_a_branchless_event_a_candidate():
    # Campaign finding U5-2.13.0-1f0c263877c8164e: a summary on root.helper
    # whose range holds a branchless event's timestamp. Agents that do not
    # read root.helper's summary still see the event, so it is to be
    # compacted, into a summary without a branch, with no seed (none exists).
    s = session(text("i1", 1), on(summary("i2", 2, 1, 1), "root.helper"))
    assert ref.token_candidates(s) == (0,)
    assert ref.token_threshold_range(s, 0) == (0,)
    assert ref.token_seeds(s, (0,)) == ()


def test_the_token_range_before_a_model_call_stops_before_the_running_invocation():
    # Campaign finding P6-2.13.0-fdfc18ac (ids numbered per turn): a call of
    # invocation a is closed only by a response in invocation b, which runs.
    # Over the whole session the range is self-contained to its end; kept out
    # of it, invocation b's response cannot close the call, so the range
    # stops before the call (the cut comes before the prefix).
    s = session(user("a", 1), call("a", 2, "c0"), user("b", 3), answer("b", 4, "c0"))
    assert ref.token_threshold_range(s, 0) == (0, 1, 2, 3)
    assert ref.token_threshold_range(s, 0, running="b") == (0,)
    # A running invocation with nothing open before it is cut off alone.
    s = session(user("a", 1), call("a", 2, "c0"), answer("a", 3, "c0"), user("b", 4))
    assert ref.token_threshold_range(s, 0, running="b") == (0, 1, 2)
