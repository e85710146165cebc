"""Every invariant fires on a deliberately broken helper (a checker that never
fires is worth nothing), and stays quiet on a correct one."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from builders import answer, call, session, summary, text, user
from google.adk.apps import compaction

from compaction_harness.sdk.python import adk
from compaction_harness.sdk.python.metamorphic import (
    MetamorphicCase,
    add_response,
    interleave_scope,
    run_metamorphic_case,
)
from compaction_harness.sdk.python.unit import (
    Helpers,
    TokenCase,
    TokenHelpers,
    UnitCase,
    run_token_case,
    run_unit_case,
)
from compaction_harness.spec import reference
from compaction_harness.spec.model import Call, Step
from compaction_harness.store.fixtures import load_fixture

REPROS = Path(__file__).parents[1] / "repros"

# The ADK issue 7236 shape: after a summary, an orphaned call opens the window.
ORPHAN = session(
    user("i1", 1),
    text("i1", 2),
    summary("i1", 3, 1, 2),
    call("i2", 4, "x"),
    user("i3", 5),
    text("i3", 6),
)
ORPHAN_CASE = UnitCase(ORPHAN, (3, 4, 5))
# A live pair: `a` is answered after the window ends.
LIVE = session(user("i1", 1), call("i1", 2, "a"), text("i1", 3), answer("i2", 4, "a"))
LIVE_CASE = UnitCase(LIVE, (0, 1, 2))


def reference_prefix(window, all_events, case):
    # A correct stand-in: the reference's length, taken from the window itself.
    return window[: reference.longest_self_contained_prefix(case.session, case.window)]


def correct_helpers(case: UnitCase) -> Helpers:
    return Helpers(
        lambda w, a: reference_prefix(w, a, case),
        lambda w, a, n: set(reference.provably_dead_call_ids(case.session, case.window)),
    )


def invariants_of(case: UnitCase, helpers: Helpers) -> set[str]:
    return {v.invariant for v in run_unit_case(case, helpers).violations}


def invariants_of_installed(case: UnitCase) -> set[str]:
    return {v.invariant for v in run_unit_case(case).violations}


@pytest.mark.parametrize("case", [ORPHAN_CASE, LIVE_CASE], ids=["orphan", "live"])
def test_correct_helpers_raise_nothing(case):
    assert invariants_of(case, correct_helpers(case)) == set()


def test_u1_fires_on_a_helper_that_returns_copies():
    broken = Helpers(
        lambda w, a: [e.model_copy() for e in w],
        correct_helpers(ORPHAN_CASE).provably_dead_call_ids,
    )
    violations = run_unit_case(ORPHAN_CASE, broken).violations
    assert [v.invariant for v in violations] == ["U1"]
    assert violations[0].positions == (0, 1, 2)


def test_u1_fires_on_a_helper_that_reorders():
    broken = Helpers(lambda w, a: list(reversed(w)), None)
    assert "U1" in invariants_of(ORPHAN_CASE, broken)


def test_u2_fires_on_a_helper_that_ignores_pairs():
    broken = Helpers(lambda w, a: list(w), correct_helpers(LIVE_CASE).provably_dead_call_ids)
    violations = run_unit_case(LIVE_CASE, broken).violations
    assert [v.invariant for v in violations] == ["U2"]
    assert violations[0].ids == ("a",) and violations[0].positions == (1,)


def test_u2_fires_on_a_window_only_call_that_takes_the_window_for_the_session(monkeypatch):
    # The outside report kept in tests/repros/U2-2.13.0-6e8c18776178ddbc.json: a
    # stand-in for the helper that, called without all_events, proves deadness
    # from the window alone; c0 is answered after the window, so the prefix of 3
    # splits a live pair. ADK as published runs the strict pass there (0).
    if not adk.accepts_all_events():
        pytest.skip(f"google-adk {adk.ADK_RELEASE}'s helper takes the window only")
    case = load_fixture(REPROS / "U2-2.13.0-6e8c18776178ddbc.json").case
    assert invariants_of_installed(case) == set()
    published = compaction._longest_self_contained_prefix

    def window_as_session(events, *, all_events=None):
        return published(events, all_events=events if all_events is None else all_events)

    monkeypatch.setattr(compaction, "_longest_self_contained_prefix", window_as_session)
    violations = run_unit_case(case).violations
    assert [v.invariant for v in violations] == ["U2", "U2"]
    assert all(v.message.startswith("called without all_events") for v in violations)
    assert [v.positions for v in violations] == [(0,), (1,)]


def test_u3_fires_on_a_strict_helper_like_releases_before_2_12():
    def strict(w, a):
        return w[: reference.strict_self_contained_prefix(ORPHAN_CASE.session, ORPHAN_CASE.window)]

    broken = Helpers(strict, correct_helpers(ORPHAN_CASE).provably_dead_call_ids)
    violations = run_unit_case(ORPHAN_CASE, broken).violations
    assert [v.invariant for v in violations] == ["U3"]
    assert violations[0].ids == ("x",)
    assert (violations[0].expected, violations[0].observed) == (3, 0)


def test_u4_fires_on_extra_and_missing_dead_ids():
    extra = Helpers(
        correct_helpers(ORPHAN_CASE).longest_self_contained_prefix, lambda w, a, n: {"x", "i3"}
    )
    (v,) = run_unit_case(ORPHAN_CASE, extra).violations
    assert v.invariant == "U4" and v.ids == ("i3",)
    assert "opened_in_window" in v.details["failed_clauses"]
    missing = Helpers(
        correct_helpers(ORPHAN_CASE).longest_self_contained_prefix, lambda w, a, n: set()
    )
    (v,) = run_unit_case(ORPHAN_CASE, missing).violations
    assert v.invariant == "U4" and v.ids == ("x",) and "not reported" in v.message


def test_u4_names_the_failed_clause_for_a_live_call():
    broken = Helpers(
        correct_helpers(LIVE_CASE).longest_self_contained_prefix, lambda w, a, n: {"a"}
    )
    (v,) = run_unit_case(LIVE_CASE, broken).violations
    assert v.details["failed_clauses"] == ["no_resolved_response"]


# -- U5: the token-threshold split and range -----------------------------------
# user, call a, text, answer a: with retention 1 the answer is retained, so its
# call must be too: the latest safe split is 1.
TOKEN = TokenCase(
    session(user("i1", 1), call("i1", 2, "a"), text("i1", 3), answer("i1", 4, "a")), 1
)


def token_helpers(split=None, compact=None) -> TokenHelpers:
    def correct_split(candidates, retention):
        return reference.safe_token_split(TOKEN.session, TOKEN.window, retention)

    def correct_range(events, retention):
        return [events[i] for i in reference.token_threshold_range(TOKEN.session, retention)]

    return TokenHelpers(split or correct_split, compact or correct_range)


def u5_messages(helpers: TokenHelpers, case: TokenCase = TOKEN) -> list[str]:
    return [v.message for v in run_token_case(case, helpers).violations if v.invariant == "U5"]


def test_u5_is_quiet_on_correct_helpers():
    assert u5_messages(token_helpers()) == []


def test_u5_fires_when_the_split_orphans_a_retained_response():
    (message,) = u5_messages(token_helpers(split=lambda c, r: 3))
    assert "retains the response 'a' (position 3) but compacts its call (position 1)" in message


def test_u5_fires_when_the_split_retains_too_little():
    case = TokenCase(session(user("i1", 1), text("i1", 2), text("i1", 3), text("i1", 4)), 2)
    messages = u5_messages(token_helpers(split=lambda c, r: 3), case)
    assert any("retains 1 events, fewer than 2" in m for m in messages)


def test_u5_fires_when_the_split_is_not_the_latest():
    (message,) = u5_messages(token_helpers(split=lambda c, r: 0))
    assert message.startswith("split 0 is not the latest: splitting at 1")


def test_u5_fires_on_a_range_that_splits_a_pair():
    (message,) = u5_messages(token_helpers(compact=lambda events, r: events[:2]))
    assert "the range splits a live pair: 'a' opened at candidate 1" in message


def test_u5_fires_on_a_range_that_is_too_short_or_not_a_prefix():
    case = TokenCase(session(user("i1", 1), text("i1", 2), text("i1", 3), text("i1", 4)), 1)
    short = token_helpers(split=lambda c, r: 3, compact=lambda events, r: events[:1])
    assert u5_messages(short, case) == ["the range takes 1 candidates, the reference 3"]
    skipping = token_helpers(split=lambda c, r: 3, compact=lambda events, r: [events[1]])
    assert any("not a prefix of the candidates" in m for m in u5_messages(skipping, case))


def test_u5_fires_when_the_rolling_summary_seed_is_missing():
    # A summary covers t=1..2; the candidates are the two later events.
    case = TokenCase(
        session(user("i1", 1), text("i1", 2), summary("i1", 3, 1, 2), user("i2", 4), text("i2", 5)),
        0,
    )
    no_seed = token_helpers(
        compact=lambda events, r: [
            events[i] for i in reference.token_threshold_range(case.session, r)
        ]
    )
    (message,) = u5_messages(no_seed, case)
    assert "does not start with its rolling-summary seed" in message


def test_u5_wants_one_seed_per_branch_with_a_summary():
    # Branchless summary 1..1 and team.a's 2..2; candidates: the branchless
    # event at 4 and team.a's at 5, each newer than its own branch's summary.
    from dataclasses import replace

    from compaction_harness.spec.invariants import check_token_range

    s = session(
        user("i1", 1),
        replace(text("i1", 2), branch="team.a"),
        summary("s", 3, 1, 1),
        replace(summary("s", 3.5, 2, 2), branch="team.a"),
        user("i2", 4),
        replace(text("i2", 5), branch="team.a"),
    )
    branchless = {"author": "model", "timestamp": 1, "summary": "summary"}
    of_a = {"author": "model", "timestamp": 2, "summary": "summary"}
    assert check_token_range(s, 0, [4, 5], [of_a, branchless]) == []  # in any order
    (v,) = check_token_range(s, 0, [4, 5], [branchless])
    assert "(step 3) but the range does not start with its rolling-summary seed" in v.message
    (v,) = check_token_range(s, 0, [4], [branchless, of_a])  # team.a has nothing in the range
    assert "a seed event without" in v.message
    (v,) = check_token_range(s, 0, [], [branchless])
    assert "a seed event without anything to compact" in v.message


# -- U6: metamorphic relations --------------------------------------------------
_AVAILABLE = adk.helper_availability()
needs_unit_helpers = pytest.mark.skipif(
    _AVAILABLE["_longest_self_contained_prefix"] is not None
    or _AVAILABLE["_provably_dead_call_ids"] is not None,
    reason="the installed release lacks a unit helper (2.12.0+ has both)",
)
needs_token_runner = pytest.mark.skipif(
    not adk.token_compaction_takes_isolation_scope()
    or _AVAILABLE["_longest_self_contained_prefix"] is not None,
    reason="the installed release's token-threshold compaction has no isolation scopes",
)
REUSE = session(call("i1", 1, "x"), user("i2", 2), call("i2", 3, "y"), answer("i2", 4, "y"))


def u6(case: MetamorphicCase) -> list[str]:
    return [v.message for v in run_metamorphic_case(case).violations]


@needs_unit_helpers
def test_u6_is_quiet_on_the_real_helpers():
    for relation in ("rename", "texts"):
        assert u6(MetamorphicCase(REUSE, relation, (0, 1, 2, 3))) == []
    assert u6(MetamorphicCase(REUSE, "added_response", (0, 1, 2, 3), index=4, call_id="y")) == []


@needs_unit_helpers
def test_u6_rename_fires_on_a_helper_that_looks_at_id_spelling(monkeypatch):
    real = adk.provably_dead_call_ids
    monkeypatch.setattr(
        adk, "provably_dead_call_ids", lambda w, a, n: {x for x in real(w, a, n) if len(x) == 1}
    )
    assert u6(MetamorphicCase(REUSE, "rename", (0, 1, 2, 3))) == [
        "renaming ids and tools changed the dead-id set"
    ]


@needs_unit_helpers
def test_u6_texts_fires_on_a_helper_that_reads_texts(monkeypatch):
    real = adk.longest_self_contained_prefix

    def reads_texts(window, all_events):
        prefix = real(window, all_events)
        stop = next(
            (k for k, e in enumerate(prefix) if e.content and "changed" in str(e.content)), None
        )
        return prefix if stop is None else prefix[:stop]

    monkeypatch.setattr(adk, "longest_self_contained_prefix", reads_texts)
    assert u6(MetamorphicCase(REUSE, "texts", (0, 1, 2, 3))) == [
        "changing texts changed the prefix length"
    ]


@needs_unit_helpers
def test_u6_added_response_fires_when_an_answer_kills_a_call(monkeypatch):
    real = adk.provably_dead_call_ids

    def more_answers_more_dead(window, all_events, newest):
        # Broken: once two responses exist, every call in the window is "dead".
        answers = sum(len(e.get_function_responses()) for e in all_events)
        called = {c.id for e in window for c in e.get_function_calls()}
        return real(window, all_events, newest) | (called if answers >= 2 else set())

    monkeypatch.setattr(adk, "provably_dead_call_ids", more_answers_more_dead)
    messages = u6(MetamorphicCase(REUSE, "added_response", (0, 1, 2, 3), index=4, call_id="x"))
    assert messages == ["a response to 'x' changed which other ids are dead"]


@needs_token_runner
def test_u6_isolation_scope_fires_when_other_scopes_leak_in(monkeypatch):
    import google.adk.apps.compaction as compaction

    own = session(user("i1", 1), text("i1", 2), user("i2", 3), text("i2", 4))
    own = own.replace_step(3, replace(own[3], prompt_tokens=10**6))
    other = replace(text("t1", 2.5, "a task's private turn"), isolation_scope="task-1")
    mixed = interleave_scope(own, [other], [1])
    case = MetamorphicCase(mixed, "isolation_scope", retention=1)
    assert u6(case) == []
    real = compaction._apply_rewinds
    monkeypatch.setattr(
        compaction,
        "_apply_rewinds",
        lambda events: [e.model_copy(update={"isolation_scope": None}) for e in real(events)],
    )
    assert u6(case) == ["events of another isolation scope changed what the summariser was given"]


@needs_unit_helpers
def test_u6_added_response_never_opens_an_invocation_of_its_own():
    # Found by `make fuzz`: a response inserted before a summary event used to
    # take the summary's invocation id, became the newest invocation and so
    # unprotected the pending confirmation of i1 -- a harness fault, not ADK's.
    confirm_call = Step(
        "i1",
        "agent",
        5,
        calls=(Call("adk-1", "adk_request_confirmation"),),
        long_running=("adk-1",),
    )
    s = session(
        text("i1", 1),
        text("i1", 2),
        call("i1", 3, "c0"),
        answer("i1", 4, "c0", confirmations=("c0",)),
        confirm_call,
        summary("i2", 6, 1, 1),
    )
    case = MetamorphicCase(s, "added_response", (0, 1, 2, 3, 4), index=5, call_id="adk-1")
    assert u6(case) == []
    grown = add_response(s, 5, "adk-1")
    assert grown[5].invocation == "i1" and reference.newest_invocation(grown) == "i1"
