"""Unit-level properties over the real ADK helpers: U1-U4 on generated sessions.

`make test` runs these with the derandomised `gate` profile; `make fuzz` runs
them with the random `fuzz` profile and a time budget. The `@example`
canaries pin shapes that real releases got wrong, so the gate checks them
whatever the generator draws.
"""

from __future__ import annotations

import pytest
from builders import call, session, text, user
from hypothesis import example, given

from compaction_harness.adk import helper_availability
from compaction_harness.checks import check_unit_case
from compaction_harness.unit import UnitCase
from strategies import unit_cases

_MISSING = helper_availability()["_longest_self_contained_prefix"]
pytestmark = pytest.mark.skipif(_MISSING is not None, reason=f"not applicable: {_MISSING}")

# Releases 2.3.0 to 2.11.0: an orphaned call opening the window blocks it all.
STALL_BEFORE_2_12 = UnitCase(session(call("i1", 1, "c0"), text("i2", 2)), (0, 1))
# 2.13.0 (known fault): the retry is skipped when the strict prefix ends an invocation.
RETRY_SKIPPED_AT_BOUNDARY = UnitCase(
    session(user("i1", 1), call("i2", 2, "x"), user("i3", 3)), (0, 1, 2)
)
# 2.13.0 (known fault): a reused id's newest-invocation call loses its protection.
REUSED_ID_IN_NEWEST = UnitCase(
    session(call("i1", 1, "r"), text("i1", 2), call("i2", 3, "r"), text("i2", 4)), (0, 1, 2, 3)
)


@pytest.mark.property
@example(case=STALL_BEFORE_2_12)
@example(case=RETRY_SKIPPED_AT_BOUNDARY)
@example(case=REUSED_ID_IN_NEWEST)
@given(case=unit_cases())
def test_prefix_and_dead_ids_meet_u1_to_u4(case: UnitCase) -> None:
    check_unit_case(case)
