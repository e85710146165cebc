"""P3 with a token threshold and no sliding window, on hand-worked sessions.

The pure checker (``spec.liveness_checks``) is called directly: the session
after an invocation end's compaction, the prompt ADK would assemble (only its
summary texts matter here), the summaries with the positions each was given,
and the prompt count the token trigger consulted at that end.
"""

from __future__ import annotations

from dataclasses import replace

from builders import answer, call, session, text, user

from compaction_harness.spec.liveness_checks import (
    beyond_retention,
    check_liveness,
    liveness_bound,
    ranges_beyond_retention,
    token_liveness_bound,
)
from compaction_harness.spec.model import Compaction, Session, Step
from compaction_harness.spec.pipeline_checks import newest_real_count


def token(threshold: int = 50, retention: int = 1) -> dict[str, int | None]:
    return {
        "compaction_interval": None,
        "overlap_size": None,
        "token_threshold": threshold,
        "event_retention_size": retention,
    }


def counted(inv: str, t: float, tokens: int) -> Step:
    """A model reply whose usage metadata counts ``tokens`` prompt tokens."""
    return replace(text(inv, t, f"m{t:g}"), prompt_tokens=tokens)


def summary(number: int, t: float, start: float, end: float) -> Step:
    return Step("", "agent", t, compaction=Compaction(start, end, f"summary#{number}"))


def upto(steps: Session, length: int) -> Session:
    """The session as it stood when it held ``length`` events."""
    return Session(steps.steps[:length])


def shown(*numbers: int) -> list:
    """A prompt that shows the summaries ``numbers`` (the rest does not matter to P3)."""
    return [("model", (("text", f"summary#{n}"),)) for n in numbers]


def test_the_bound_is_the_retained_tail_with_the_calls_its_answers_need():
    # token_threshold 50, event_retention_size 2. At i2's end the trigger read
    # 80 (>= 50) and summarised #0 to #2 (its range ends at t=3). The
    # candidates left are #3 to #5 (stamped after 3). Retaining 2 keeps the
    # answer #4 and the reply #5; #4 answers the call #3, which must stay
    # with it (U5's split), so the split moves back to #3: 3 events retained.
    steps = session(
        user("i1", 1, "u1"),
        counted("i1", 2, 40),
        user("i2", 3, "u2"),
        call("i2", 4, "a"),
        answer("i2", 5, "a"),
        counted("i2", 6, 80),
        summary(0, 7, 1, 3),
    )
    config = token(retention=2)
    assert newest_real_count(upto(steps, 6)) == 80  # what the trigger consulted
    assert liveness_bound(config, steps, 80) == 3
    summaries = [(len(steps), (0, 1, 2), ())]
    found, backlog = check_liveness(steps, shown(0), summaries, config, count=80)
    assert found == []
    assert backlog == frozenset(steps[3:6])  # exactly the retained tail
    # Retaining one event keeps only the reply #5: the pair may go, bound 1.
    assert liveness_bound(token(retention=1), steps, 80) == 1
    # Retaining none: everything the definitions allow is to be compacted.
    assert liveness_bound(token(retention=0), steps, 80) == 0


def orphan_session():
    """c1 (#1) is never answered; ADK summarised 'u1' at i2's end (the prefix
    before c1) and nothing since: google-adk 2.11.0's stall
    (tests/repros/P3-2.11.0-93eca37313823a95.json is this run on ADK)."""
    return session(
        user("i1", 1, "u1"),
        call("i1", 2, "c1"),
        user("i2", 3, "u2"),
        counted("i2", 4, 70),
        summary(0, 4.5, 1, 1),
        user("i3", 5, "u3"),
        counted("i3", 6, 80),
    )


def test_a_stall_behind_an_orphaned_call_breaks_p3_at_the_second_end_that_fires():
    steps = orphan_session()
    config = token(retention=1)
    summaries = [(len(steps), (0,), ())]
    # i1's end: no prompt count yet (ADK estimates): no claim, and nothing is
    # carried on: the compactor had no range to take here ('u1' is backlog).
    first = upto(steps, 2)
    assert liveness_bound(config, first, newest_real_count(first)) is None
    found, carried = check_liveness(first, [], [], config, count=None)
    assert found == [] and carried == frozenset()
    # i2's end: the trigger read 70 and summarised 'u1'. Candidates (after
    # t=1): c1, u2, m4; retaining 1 keeps m4: bound 1. c1 is provably dead (no
    # answer, not long-running, not in the newest invocation i2), so c1, u2
    # and m4 are compactable: 3 > 1, but none was compactable at i1's end (a
    # stall is held to the bound from the second end on).
    second = upto(steps, 5)
    assert liveness_bound(config, second, 70) == 1
    found, carried = check_liveness(second, shown(0), summaries, config, earlier=carried, count=70)
    assert found == []
    assert carried == frozenset(steps[1:4])
    # i3's end: the trigger read 80 and nothing was summarised. Candidates:
    # c1, u2, m4, u3, m6; retaining 1 keeps m6: bound 1. The backlog carried
    # from i2's end (c1, u2, m4) is still there: 3 > 1, P3 fires.
    assert liveness_bound(config, steps, 80) == 1
    found, _ = check_liveness(steps, shown(0), summaries, config, earlier=carried, count=80)
    assert [(v.invariant, v.positions, v.observed) for v in found] == [("P3", (1, 2, 3), 3)]
    assert "could be compacted but are not (bound 1)" in found[0].message
    # m6 is retained: a summary could take only c1, u2 and m4 (what a driver
    # weighs against the latest summary before it calls a wait a stall).
    assert found[0].details == {"retained": (6,), "ranges": ((1, 2, 3),)}
    assert beyond_retention(found[0]) == (1, 2, 3)
    assert ranges_beyond_retention(found[0]) == ((1, 2, 3),)


def test_p3_makes_no_claim_while_the_trigger_is_quiet():
    steps = orphan_session()
    config = token(retention=1)
    summaries = [(len(steps), (0,), ())]
    carried = frozenset(steps[1:4])
    # The same backlog, but the count the trigger read is below the threshold
    # (or there is none: ADK estimates, which the session model does not size).
    # What is carried on is what the last end that fired left and is still
    # backlog: u3 and m6, compactable only since, are not held at the next.
    for count in (49, None):
        assert token_liveness_bound(config, steps, count) is None
        found, backlog = check_liveness(
            steps, shown(0), summaries, config, earlier=carried, count=count
        )
        assert found == []
        assert backlog == carried
    # At the threshold it fires (ADK: "prompt_token_count < config.token_threshold" is quiet).
    found, _ = check_liveness(steps, shown(0), summaries, config, earlier=carried, count=50)
    assert [v.invariant for v in found] == ["P3"]


def test_a_waiting_call_does_not_shield_what_comes_after_it():
    # A long-running call a (#1) is still running. It is not compacted, but
    # the invocations after it form a range of their own: a compactor that
    # takes only a prefix (google-adk 2.13.0's token path stops at a) stalls.
    steps = session(
        user("i1", 1, "u1"),
        call("i1", 2, "a", long_running=("a",)),
        user("i2", 3, "u2"),
        counted("i2", 4, 70),
        user("i3", 5, "u3"),
        counted("i3", 6, 80),
    )
    config = token(retention=1)
    _, carried = check_liveness(upto(steps, 4), [], [], config, count=70)
    assert carried == frozenset(s for k, s in enumerate(steps) if k in (0, 2, 3))
    found, _ = check_liveness(steps, [], [], config, earlier=carried, count=80)
    assert [(v.invariant, v.positions) for v in found] == [("P3", (0, 2, 3))]
    # Once a summary took u1 and another the range after a, only the tail waits.
    summarised = session(*steps, summary(0, 6.5, 1, 1), summary(1, 6.6, 3, 5))
    summaries = [(len(summarised), (0,), ()), (len(summarised), (2, 3, 4), ())]
    found, backlog = check_liveness(
        summarised, shown(0, 1), summaries, config, earlier=carried, count=80
    )
    assert found == [] and backlog == frozenset(steps[5:6])


def test_the_sliding_window_bound_ignores_the_count_and_no_trigger_means_no_claim():
    steps = orphan_session()
    sliding = {**token(), "compaction_interval": 1, "overlap_size": 0}
    assert liveness_bound(sliding, steps, 80) == liveness_bound(sliding, steps) is not None
    neither = {**token(), "token_threshold": None, "event_retention_size": None}
    assert liveness_bound(neither, steps, 80) is None
    assert check_liveness(steps, [], [], neither, count=80) == ([], frozenset())


def test_at_the_first_end_the_range_after_a_waiting_call_waits_for_the_next():
    # A summary takes one range an end. At the first end that fires, google-adk
    # with every fix summarises the prefix (u1); the range after the waiting
    # call a (u2 and its reply) waits for the next end, as at every later end:
    # P3 holds an end to what was compactable at the previous one, and before
    # the first end there was none (fixture P3-2.13.0-54ed539f, kept in
    # docs/findings/, fired here until the first end was held so too).
    steps = session(
        user("i1", 1, "u1"),
        call("i1", 2, "a", long_running=("a",)),
        user("i2", 3, "u2"),
        counted("i2", 4, 70),
        summary(0, 5, 1, 1),
    )
    config = token(retention=0)
    summaries = [(len(steps), (0,), ())]
    found, carried = check_liveness(steps, shown(0), summaries, config, count=70)
    assert found == [] and carried == frozenset(steps[2:4])
    # Still there at the next end that fires: a stall.
    found, _ = check_liveness(steps, shown(0), summaries, config, earlier=carried, count=80)
    assert [(v.invariant, v.positions) for v in found] == [("P3", (2, 3))]


def first_firing_end_after_quiet_ones():
    """google-adk with every fix on fixture P3-2.13.0-19f93e84 (docs/findings/):
    token threshold 50, retention 0; export (#1) waits. i2's end read 5 (quiet);
    i3's end read 74 and summarised the prefix u1."""
    return session(
        user("i1", 1, "u1"),
        replace(call("i1", 2, "a", long_running=("a",)), prompt_tokens=5),
        user("i2", 3, "u2"),
        user("i3", 4, "u3"),
        counted("i3", 5, 24),
        counted("i3", 6, 74),
        summary(0, 7, 1, 1),
    )


def test_a_quiet_end_carries_only_what_the_last_end_that_fired_left():
    # At i2's end the trigger is quiet: u1 and u2 are backlog, but no
    # compactor had a range to take there. At i3's end, the first that fires,
    # a summary takes one range (the prefix u1); the range after the waiting
    # call (u2 to m6) waits for the next end that fires, as at a first end.
    steps = first_firing_end_after_quiet_ones()
    config = token(retention=0)
    quiet = upto(steps, 3)
    found, carried = check_liveness(quiet, [], [], config, count=5)
    assert found == [] and carried == frozenset()
    summaries = [(len(steps), (0,), ())]
    found, carried = check_liveness(steps, shown(0), summaries, config, earlier=carried, count=74)
    assert found == [] and carried == frozenset(steps[2:6])
    # Held at the next end that fires: a stall. And a quiet end between the
    # two does not wash it out: it carries the backlog of the end that fired.
    found, _ = check_liveness(steps, shown(0), summaries, config, earlier=carried, count=80)
    assert [(v.invariant, v.positions) for v in found] == [("P3", (2, 3, 4, 5))]
    _, through = check_liveness(steps, shown(0), summaries, config, earlier=carried, count=10)
    assert through == carried
    found, _ = check_liveness(steps, shown(0), summaries, config, earlier=through, count=80)
    assert [(v.invariant, v.positions) for v in found] == [("P3", (2, 3, 4, 5))]


def test_without_the_quiet_end_rule_p3_fires_on_the_first_end_that_fires():
    # The rule above is what keeps 19f93e84's first firing end green: had the
    # quiet end carried its whole backlog (as it did before), u2 would be held.
    steps = first_firing_end_after_quiet_ones()
    config = token(retention=0)
    summaries = [(len(steps), (0,), ())]
    everything_at_i2 = frozenset(steps[k] for k in (0, 2))
    found, _ = check_liveness(
        steps, shown(0), summaries, config, earlier=everything_at_i2, count=74
    )
    assert [(v.invariant, v.positions) for v in found] == [("P3", (2,))]


def test_a_call_that_waits_splits_the_backlog_into_ranges_weighed_one_by_one():
    # a (#2) waits. The backlog held at the third end is u1 and m1 before it
    # and u2, m2 after it: two ranges, since a summary cannot take the
    # waiting call, and a compactor that writes a summary only where it saves
    # something weighs each on its own (google-adk: _is_range_worth_compacting).
    steps = session(
        user("i1", 1, "u1"),
        counted("i1", 2, 60),
        call("i1", 3, "a", long_running=("a",)),
        user("i2", 4, "u2"),
        counted("i2", 5, 70),
        user("i3", 6, "u3"),
        counted("i3", 7, 80),
    )
    config = token(retention=0)
    _, carried = check_liveness(upto(steps, 3), [], [], config, count=60)
    _, carried = check_liveness(upto(steps, 5), [], [], config, earlier=carried, count=70)
    found, _ = check_liveness(steps, [], [], config, earlier=carried, count=80)
    assert [(v.invariant, v.positions) for v in found] == [("P3", (0, 1, 3, 4))]
    assert ranges_beyond_retention(found[0]) == ((0, 1), (3, 4))
    # Without ranges (a violation made before they were recorded) it is one range.
    found[0].details.pop("ranges")
    assert ranges_beyond_retention(found[0]) == ((0, 1, 3, 4),)


def reused_id_session():
    """Call ids numbered per turn (found by a fresh clone's make fuzz,
    P3-2.13.0-a564c360): i1's export call_0 (#1, long-running, never answered
    itself), then i2's lookup as call_0 (#4), answered (#5). By id, #5 closes
    the obligation #1 opened; the nearest call of the id is #4."""
    return session(
        user("i1", 1, "u1"),
        call("i1", 2, "call_0", long_running=("call_0",), name="export"),
        user("i2", 3, "u2"),
        counted("i2", 4, 60),
        call("i2", 5, "call_0", name="lookup"),
        answer("i2", 6, "call_0"),
        counted("i2", 7, 80),
    )


def test_the_bound_keeps_the_call_a_retained_answer_closes_by_id_too():
    # Retaining 2 keeps #5 and #6; #5 closes call_0 by id, which #1 opened and
    # #4 reopened while it was open: U5's split keeps #4 (the nearest call, as
    # ADK's split does), P3's bound also #1 and what lies between (the larger
    # of the two readings, docs/invariants.md): 6 events; only 'u1', which no
    # summary took, is beyond them.
    steps = reused_id_session()
    config = token(retention=2)
    assert liveness_bound(config, steps, 80) == 6
    found, _ = check_liveness(steps, [], [], config, earlier=frozenset(steps), count=80)
    assert [v.invariant for v in found] == ["P3"] and beyond_retention(found[0]) == (0,)


def test_p3_fires_past_the_opener_of_a_reused_id():
    # The same session after three plain turns that nothing compacted: the
    # bound still keeps #1 to the end of its closing answer's tail only while
    # that answer is retained; once it is not, everything is compactable.
    steps = session(
        *reused_id_session().steps,
        user("i3", 8, "u3"),
        counted("i3", 9, 90),
        user("i4", 10, "u4"),
        counted("i4", 11, 95),
    )
    config = token(retention=2)
    assert liveness_bound(config, steps, 95) == 2
    found, _ = check_liveness(steps, [], [], config, earlier=frozenset(steps), count=95)
    assert [v.invariant for v in found] == ["P3"] and found[0].observed == 11
