"""Known upstream faults: ADK behaviour that breaks an invariant, on purpose recorded.

A fault is recorded (a row of :mod:`compaction_harness.faults.records_python`)
only after ADK's source showed the fault is ADK's, never the harness's. This
module is a view of the fault catalogue: each entry carries the releases the
committed release matrix shows it on (derived, never typed), explains the
user-visible consequence, and may carry a predicate that recognises its
violations (pattern evidence), so that:

* the property tests and ``make fuzz`` label matching violations (Hypothesis
  ``event``) and keep searching for *new* faults instead of stopping on a
  known one, and
* the fault's minimal fixture (``tests/repros/``, field ``known_fault``) is
  replayed as a *strict* expected failure on those releases: the gate stays
  green while ADK is broken and turns red the day ADK fixes it, which is the
  signal to run ``make matrix`` (the releases are derived from its record).

The invariants themselves are never changed to fit a fault.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ...spec import reference
from ...spec.invariants import Violation
from ...spec.pipeline_case import PipelineCase
from ...spec.scripts import Script
from .reruns import rerun
from .unit import TokenCase, UnitCase

__all__ = ["EVERY_RELEASE", "KNOWN_FAULTS", "KnownFault", "fault_for", "pattern_fault"]


@dataclass(frozen=True)
class KnownFault:
    """One known google-adk fault, as :mod:`compaction_harness.faults.catalogue`
    records it (this is a view of that record; the prose lives there).

    Attributes:
        id: a stable slug, referenced by fixtures as ``known_fault``.
        invariant: the invariants it breaks (directly, or through a caller:
            the token-threshold range inherits the prefix helper's faults).
        releases: google-adk releases on which the committed release matrix
            (``docs/release-matrix.json``) shows it; derived, never typed.
        title: one line.
        explanation: where in ADK (file, function), what goes wrong, and what
            it costs a user (the catalogue's ``user_sees``).
        matches: recognises a violation of this fault on a case (pattern
            evidence), or None.
    """

    id: str
    invariant: tuple[str, ...]
    releases: tuple[str, ...]
    title: str
    explanation: str
    matches: Callable[[UnitCase | TokenCase, Violation], bool] | None = None

    def applies_to(self, release: str) -> bool:
        """Whether the fault is recorded on ``release`` (every fault applies
        to :data:`EVERY_RELEASE`)."""
        return release == EVERY_RELEASE or release in self.releases


#: A release name to which every known fault applies: classifying with it
#: asks which faults a violation shows, whatever their recorded releases
#: (the release matrix derives the release lists that way).
EVERY_RELEASE = "*"


#: P6's first clause: a summary of nothing new (see pipeline_checks.check_new_work).
_NOTHING_NEW = "covers no live event that a kept summary did not cover already"


#: Details that name a violation's cause: a counterfactual replay that still
#: shows the invariant broken, but for another cause (or, for P4, another
#: event lost), has removed this one.
#: (A P2 opener missing because a kept summary was given it is fault
#: ``token-compaction-summarises-the-running-request``; one hidden by a range
#: it was not given is another.)
_CAUSE_DETAILS = ("cause", "opener_summarised")


def _same_kind(found: Violation, violation: Violation) -> bool:
    """Whether ``found`` (seen in a counterfactual replay) is a violation of
    the same kind as ``violation``: the same invariant, the same clause of P6,
    and the same cause where the violation names one (:data:`_CAUSE_DETAILS`);
    for P4 the same event lost, and for P6's summary of nothing new the same
    events summarised in vain (a counterfactual keeps the positions of the
    events it does not change)."""
    if found.invariant != violation.invariant:
        return False
    if any(found.details.get(k) != violation.details.get(k) for k in _CAUSE_DETAILS):
        return False
    if found.invariant == "P4" and found.positions != violation.positions:
        return False  # another event lost (a counterfactual keeps positions)
    if found.invariant != "P6":
        return True
    if _NOTHING_NEW not in found.message:
        return False
    # Another range summarised in vain: this one no longer is (its summary took
    # something new), and what is left is another fault's waste.
    return _NOTHING_NEW not in violation.message or found.positions == violation.positions


def _goes_with_a_reference_prefix(case, violation: Violation) -> bool:
    """A pipeline violation (a P3 stall, or P6's summary of nothing new) that
    disappears when the run is replayed with the reference's prefix in place
    of ADK's ``_longest_self_contained_prefix``: the prefix helper stopped
    short, which among the recorded faults only the invocation-boundary
    shortcut does."""
    from .adk import prefix_helper_replaced

    return _gone_under(
        case,
        violation,
        prefix_helper_replaced(lambda w, s: reference.longest_self_contained_prefix(s, w)),
    )


def _gone_under(case, violation: Violation, counterfactual) -> bool:
    """Whether a pipeline case, replayed inside ``counterfactual`` (a context
    manager that changes one ADK function) without triage, a script on the
    emulating driver, no longer shows a violation of ``violation``'s kind."""
    with counterfactual:
        replayed = rerun(case, driver="emulated")
    return not any(_same_kind(v, violation) for v in replayed.violations)


def _pipeline_level(case) -> bool:
    """A case the pipeline drivers run: a recorded session or a script."""
    return isinstance(case, PipelineCase | Script)


def _strict_prefix_stalls(case, violation: Violation) -> bool:
    """On a release whose prefix helper has no dead-id retry (no ``all_events=``)
    but exists (2.3.0 and later): ADK returned the strict prefix where the
    reference passes a provably dead call (U3), or cut the token-threshold
    range to it (U5: ``_events_to_compact_for_token_threshold`` trims the
    split candidates with the same helper), or a pipeline stall (P3) or a
    summary of nothing new (P6) disappears with the reference's prefix."""
    from .adk import accepts_all_events, helper_availability

    if accepts_all_events() or helper_availability()["_longest_self_contained_prefix"]:
        return False
    if _pipeline_level(case):
        if violation.invariant == "P3" or (
            violation.invariant == "P6" and _NOTHING_NEW in violation.message
        ):
            return _goes_with_a_reference_prefix(case, violation)
        return False
    if isinstance(case, UnitCase) and violation.invariant == "U3":
        strict = reference.strict_self_contained_prefix(case.session, case.window)
        return violation.observed == strict < len(case.window)
    if (
        isinstance(case, TokenCase)
        and violation.invariant == "U5"
        and violation.message.startswith("the range takes")
    ):
        candidates = reference.token_candidates(case.session)
        split = (
            len(candidates)
            if case.retention == 0
            else reference.safe_token_split(case.session, candidates, case.retention)
        )
        strict = reference.strict_self_contained_prefix(case.session, candidates[:split])
        return violation.observed == strict < split
    return False


#: Helpers of releases that protect call pairs in sliding-window ranges.
_PAIR_PROTECTION = (
    "_longest_self_contained_prefix",
    "_truncate_events_before_pending_function_call",
)


def _unprotected_range_splits_a_pair(case, violation: Violation) -> bool:
    """A pipeline P1 on a release whose compaction module has no pair
    protection for its ranges at all (none of :data:`_PAIR_PROTECTION`)."""
    if not (_pipeline_level(case) and violation.invariant == "P1"):
        return False
    from google.adk.apps import compaction

    return not any(hasattr(compaction, name) for name in _PAIR_PROTECTION)


def _raised(phrase: str) -> Callable[[object, Violation], bool]:
    """A recogniser of a pipeline P0 whose exception message holds ``phrase``."""

    def matches(case, violation: Violation) -> bool:
        return _pipeline_level(case) and violation.invariant == "P0" and phrase in violation.message

    return matches


#: The prompt builder raised because the latest response's call is not among
#: the events it was given (a summary took it).
_summarised_call_raises = _raised("No function call event found")


#: The recognisers of the faults (pattern evidence), by fault id.
_RECOGNISERS: dict[str, Callable[[UnitCase | TokenCase, Violation], bool]] = {
    "orphaned-call-stalls-compaction-for-good": _strict_prefix_stalls,
    "sliding-window-splits-call-pairs": _unprotected_range_splits_a_pair,
    "summarised-call-makes-the-prompt-builder-raise": _summarised_call_raises,
}


def _catalogued() -> tuple[KnownFault, ...]:
    """google-adk's faults of :data:`compaction_harness.faults.catalogue.FAULTS`,
    in the catalogue's order, releases as the release matrix derives them."""
    from ...faults.catalogue import PYTHON, faults_of

    return tuple(
        KnownFault(
            id=f.id,
            invariant=f.invariants,
            releases=f.releases,
            title=f.title,
            explanation=f.user_sees,
            matches=_RECOGNISERS.get(f.id),
        )
        for f in faults_of(PYTHON)
    )


#: google-adk's known faults: a view of the fault catalogue (faults/catalogue.py).
KNOWN_FAULTS: tuple[KnownFault, ...] = _catalogued()


def fault_for(fault_id: str) -> KnownFault | None:
    """The registered fault with this id, or None."""
    return next((f for f in KNOWN_FAULTS if f.id == fault_id), None)


def pattern_fault(
    case: UnitCase | TokenCase, violation: Violation, release: str
) -> KnownFault | None:
    """The known fault that explains ``violation`` by *pattern evidence*: its
    recogniser, for the faults that have no fix the installed release can
    take (``compaction_harness.sdk.python.fixes``: none yet, or none with a diff
    that applies to this release). A fault whose fix the release can take is
    never named here: re-running with its fix decides
    (``triage.by_fix``). A recogniser that needs what the installed
    release lacks (its counterfactual cannot run there) does not match."""
    from .fixes import fixes_for, unavailable

    return next(
        (
            f
            for f in KNOWN_FAULTS
            if f.matches is not None
            and all(unavailable(fix) is not None for fix in fixes_for(f.id))
            and f.applies_to(release)
            and violation.invariant in f.invariant
            and _matches(f, case, violation)
        ),
        None,
    )


def _matches(fault: KnownFault, case, violation: Violation) -> bool:
    from .adk import NotApplicable

    try:
        return fault.matches(case, violation)
    except NotApplicable:
        return False
