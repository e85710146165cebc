"""Every invariant fires on a deliberately broken helper (a checker that never
fires is worth nothing), and stays quiet on a correct one."""

from __future__ import annotations

import pytest
from builders import answer, call, session, summary, text, user
from hypothesis import HealthCheck, find, settings

from compaction_harness import reference
from compaction_harness.adk import ADK_RELEASE
from compaction_harness.checks import check_unit_case
from compaction_harness.unit import Helpers, InvariantViolation, UnitCase, run_unit_case
from strategies import unit_cases

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


def test_the_property_finds_a_planted_liveness_fault_and_shrinks_it():
    # The whole pipeline of a unit property: generation, the checkers and
    # shrinking, on a helper that behaves like google-adk 2.4.0 to 2.11.0.
    def strict_helpers(case):
        return Helpers(
            lambda w, a: w[: reference.strict_self_contained_prefix(case.session, case.window)],
            None,
        )

    def fails(case):
        try:
            check_unit_case(case, strict_helpers(case), release=ADK_RELEASE)
        except InvariantViolation:
            return True
        return False

    minimal = find(
        unit_cases(),
        fails,
        settings=settings(
            database=None,
            derandomize=True,
            max_examples=2000,
            suppress_health_check=list(HealthCheck),
        ),
    )
    assert len(minimal.window) == 2
    assert reference.longest_self_contained_prefix(minimal.session, minimal.window) == 2
    assert reference.strict_self_contained_prefix(minimal.session, minimal.window) == 0
