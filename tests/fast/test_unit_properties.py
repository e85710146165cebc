"""Unit-level properties over the real ADK helpers: U1-U5 on generated sessions.

`make test` runs these with the derandomised `gate` profile; `make fuzz` runs
them with the random `fuzz` profile and a time budget. The `@example`
canaries pin shapes that real releases got wrong, so the gate checks them
whatever the generator draws. Every example is labelled with the episodes its
session holds (see `--hypothesis-show-statistics`).
"""

from __future__ import annotations

import pytest
from builders import answer, call, session, text, user
from hypothesis import event, example, given
from hypothesis import strategies as st

from compaction_harness.sdk.python.adk import (
    helper_availability,
    token_compaction_takes_isolation_scope,
)
from compaction_harness.sdk.python.metamorphic import RELATIONS, MetamorphicCase
from compaction_harness.sdk.python.unit import TokenCase, UnitCase
from compaction_harness.surfaces.checks import check_case, check_token_case, check_unit_case
from strategies import episode_kinds, metamorphic_cases, token_cases, unit_cases

_HELPERS = helper_availability()


def _needs(name: str):
    missing = _HELPERS[name]
    return pytest.mark.skipif(missing is not None, reason=f"not applicable: {missing}")


#: The episode kinds the examples of U1-U4 (UnitCase) and U5 (TokenCase) showed
#: (kind -> examples), for tests/quality/test_statistics.py.
SEEN: dict[str, dict[str, int]] = {"UnitCase": {}, "TokenCase": {}}


def label(case: UnitCase | TokenCase | MetamorphicCase) -> None:
    seen = SEEN.get(type(case).__name__)
    for kind in sorted(episode_kinds(case.origin or case.session)):
        event(f"episode: {kind}")
        if seen is not None:
            seen[kind] = seen.get(kind, 0) + 1


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
# 2.13.0 (known fault): a retained response without a call among the candidates.
CALLLESS_RESPONSE_RETAINED = TokenCase(
    session(user("i1", 1), text("i1", 2), answer("i1", 3, "gone", author="user")), 1
)
# Events with no invocation id (appended by a client): no newest invocation
# exists, so the orphan `c1` is provably dead and the whole window is safe.
NO_INVOCATION_IDS = UnitCase(session(call("", 1, "c1"), user("", 2), text("", 3)), (0, 1, 2))
# A retained response whose call would be compacted: the split must move back.
RETAINED_RESPONSE_KEEPS_ITS_CALL = TokenCase(
    session(user("i1", 1), call("i1", 2, "a"), text("i1", 3), answer("i1", 4, "a")), 1
)


@pytest.mark.property
@_needs("_longest_self_contained_prefix")
@example(case=STALL_BEFORE_2_12)
@example(case=RETRY_SKIPPED_AT_BOUNDARY)
@example(case=REUSED_ID_IN_NEWEST)
@example(case=NO_INVOCATION_IDS)
@given(case=unit_cases())
def test_prefix_and_dead_ids_meet_u1_to_u4(case: UnitCase) -> None:
    label(case)
    check_unit_case(case)


@pytest.mark.property
@_needs("_safe_token_compaction_split_index")
@example(case=CALLLESS_RESPONSE_RETAINED)
@example(case=RETAINED_RESPONSE_KEEPS_ITS_CALL)
@given(case=token_cases())
def test_token_threshold_split_and_range_meet_u5(case: TokenCase) -> None:
    label(case)
    check_token_case(case)


# What the two properties' runs labelled, for the plugin: after the gate's run
# it leaves the tally for tests/quality/test_statistics.py (gate_labels).
test_prefix_and_dead_ids_meet_u1_to_u4.labels = lambda: dict(SEEN["UnitCase"])  # type: ignore[attr-defined]
test_token_threshold_split_and_range_meet_u5.labels = lambda: dict(SEEN["TokenCase"])  # type: ignore[attr-defined]


# The relations this release can run (its token-threshold compaction may have
# no isolation scopes).
APPLICABLE_RELATIONS = tuple(
    r for r in RELATIONS if r != "isolation_scope" or token_compaction_takes_isolation_scope()
)


@pytest.mark.property
@_needs("_longest_self_contained_prefix")
@given(case=st.sampled_from(APPLICABLE_RELATIONS).flatmap(metamorphic_cases))
def test_metamorphic_relations_hold_u6(case: MetamorphicCase) -> None:
    # One property over every relation (a case names its relation): its
    # examples are plain values, which a campaign's clock can tell apart.
    event(f"relation: {case.relation}")
    label(case)
    check_case(case)
