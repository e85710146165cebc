"""Quality: the search finds a planted fault and shrinks it to its minimum.

Hypothesis's own ``quality/`` tests assert that a bug is found and shrunk to
the minimal example; these do the same for the harness's generators and
checkers. The other checks of this kind: ``test_end_to_end.py`` (a seeded
campaign on google-adk 2.11.0 finds the real stall and shrinks it to a few
events) and ``test_statistics.py`` (the gate's examples reach every shape);
``tests/slow/test_plugin.py`` shows a campaign writes its shrunk fixture.
"""

from __future__ import annotations

from hypothesis import HealthCheck, find, settings

from compaction_harness.sdk.python.adk import ADK_RELEASE
from compaction_harness.sdk.python.unit import Helpers, InvariantViolation
from compaction_harness.spec import reference
from compaction_harness.surfaces.checks import check_unit_case
from strategies import unit_cases


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
