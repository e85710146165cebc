"""Known upstream faults: ADK behaviour that breaks an invariant, on purpose recorded.

A fault lands here only after ADK's source showed the fault is ADK's, never
the harness's. Each entry names the releases it was observed on, explains
the user-visible consequence, and carries a predicate that recognises its
violations exactly, so that:

* the property tests and ``make fuzz`` label matching violations (Hypothesis
  ``event``) and keep searching for *new* faults instead of stopping on a
  known one, and
* the fault's minimal fixture (``tests/repros/``, field ``known_fault``) is
  replayed as a *strict* expected failure on those releases: the gate stays
  green while ADK is broken and turns red the day ADK fixes it, which is the
  signal to remove the entry.

The invariants themselves are never changed to fit a fault.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from . import reference
from .invariants import Violation
from .unit import UnitCase

__all__ = ["KNOWN_FAULTS", "KnownFault", "fault_for", "matching_fault"]


@dataclass(frozen=True)
class KnownFault:
    """One recorded upstream fault.

    Attributes:
        id: a stable slug, referenced by fixtures as ``known_fault``.
        invariant: the invariant it breaks.
        releases: google-adk releases on which it was observed.
        title: one line.
        explanation: where in ADK (file, function), what goes wrong, and what
            it costs a user.
        matches: recognises a violation of this fault on a case.
    """

    id: str
    invariant: str
    releases: tuple[str, ...]
    title: str
    explanation: str
    matches: Callable[[UnitCase, Violation], bool]

    def applies_to(self, release: str) -> bool:
        return release in self.releases


def _stops_at_invocation_boundary(case: UnitCase, violation: Violation) -> bool:
    """ADK returned the strict prefix because it ends where an invocation ends."""
    if violation.invariant != "U3":
        return False
    strict = reference.strict_self_contained_prefix(case.session, case.window)
    if violation.observed != strict or not 0 < strict < len(case.window):
        return False
    before, after = case.session[case.window[strict - 1]], case.session[case.window[strict]]
    return before.invocation != after.invocation


def _reused_id_unprotects_newest_call(case: UnitCase, violation: Violation) -> bool:
    """ADK dropped a newest-invocation call because an older call with its id is dead."""
    if violation.invariant != "U2" or len(violation.ids) != 1 or len(violation.positions) != 1:
        return False
    (cid,), (position,) = violation.ids, violation.positions
    step = case.session[case.window[position]]
    newest = reference.newest_invocation(case.session)
    return (
        cid in reference.provably_dead_call_ids(case.session, case.window)
        and cid in step.call_ids
        and newest is not None
        and step.invocation == newest
    )


KNOWN_FAULTS: tuple[KnownFault, ...] = (
    KnownFault(
        id="dead-call-retry-skipped-at-invocation-boundary",
        invariant="U3",
        releases=("2.13.0",),
        title="the provably-dead retry is skipped when the strict prefix ends an invocation",
        explanation=(
            "google/adk/apps/compaction.py, _longest_self_contained_prefix: after the strict "
            "pass, `if safe_length > 0 and events[safe_length - 1].invocation_id != "
            "events[safe_length].invocation_id: return events[:safe_length]` returns before "
            "the provably-dead retry whenever the strict prefix happens to end on an "
            "invocation boundary. The docstring promises the retry whenever the strict pass "
            "does not cover the window. Consequence: an orphaned call that opens an "
            "invocation (an agent-started or resumed invocation whose first event is a "
            "function call that never gets its response) blocks every event after it. With "
            "sliding-window compaction and overlap_size >= 1 the next window starts with the "
            "already-summarised overlap invocation, whose strict prefix again ends at the same "
            "boundary, so the same range is offered again and refused by "
            "_is_range_worth_compacting: compaction stalls for the rest of the session, the "
            "fault 2.12.0 set out to fix."
        ),
        matches=_stops_at_invocation_boundary,
    ),
    KnownFault(
        id="reused-call-id-unprotects-newest-invocation-call",
        invariant="U2",
        releases=("2.13.0",),
        title="a dead older call makes a newest-invocation call with the same id invisible",
        explanation=(
            "google/adk/apps/compaction.py, _provably_dead_call_ids and "
            "_longest_self_contained_prefix: the newest-invocation exemption is applied per "
            "event when the dead set is built, but the retry pass then ignores the id in "
            "every event, including the call the newest invocation made with the same id. "
            "When a model reuses call ids across invocations (providers that number calls per "
            "turn) and an older call with that id was orphaned, a compaction that runs while "
            "the newest invocation's call is still unanswered (token-threshold compaction runs "
            "before each model call) can summarise that call away; its response then arrives "
            "with no call in the prompt, which the model API rejects. The docstring says the "
            "call must not have been opened by the newest invocation, which this one was."
        ),
        matches=_reused_id_unprotects_newest_call,
    ),
)


def fault_for(fault_id: str) -> KnownFault | None:
    """The registered fault with this id, or None."""
    return next((f for f in KNOWN_FAULTS if f.id == fault_id), None)


def matching_fault(case: UnitCase, violation: Violation, release: str) -> KnownFault | None:
    """The known fault on ``release`` that explains ``violation``, if any."""
    return next(
        (
            f
            for f in KNOWN_FAULTS
            if f.applies_to(release)
            and f.invariant == violation.invariant
            and f.matches(case, violation)
        ),
        None,
    )
