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
from .pipeline import PipelineCase
from .scripts import Script
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


def _strict_stop_at_boundary(session, window) -> int | None:
    """The strict prefix of ``window`` when it ends on an invocation boundary (else None)."""
    strict = reference.strict_self_contained_prefix(session, window)
    if not 0 < strict < len(window):
        return None
    before, after = session[window[strict - 1]], session[window[strict]]
    return strict if before.invocation != after.invocation else None


def _callless_response_split(session, candidates, retention) -> int:
    """The split ADK's documented rule gives ("the latest valid split point
    where no unmatched responses remain", walking back from the newest
    candidate): a response stays unmatched until an earlier call with its id
    is passed, so one without such a call among the candidates blocks every
    split that retains it."""
    steps = [session[i] for i in candidates]
    limit = len(steps) - retention
    unmatched: set[str] = set()
    for split in range(len(steps) - 1, -1, -1):
        unmatched |= steps[split].response_ids
        unmatched -= steps[split].call_ids
        if not unmatched and split <= limit:
            return split
    return 0


def _token_range_from(case: TokenCase, split: int, prefix) -> int:
    window = reference.token_candidates(case.session)[:split]
    return prefix(case.session, window)


#: P6's first clause: a summary of nothing new (see pipeline.check_new_work).
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
    manager that changes one ADK function), no longer shows a violation of
    ``violation``'s kind."""
    from .driver import run_script
    from .pipeline import run_pipeline_case

    replay = run_script if isinstance(case, Script) else run_pipeline_case
    with counterfactual:
        replayed = replay(case, triage=False)
    return not any(_same_kind(v, violation) for v in replayed.violations)


def _pipeline_level(case) -> bool:
    """A case the pipeline drivers run: a recorded session or a script."""
    return isinstance(case, PipelineCase | Script)


def _stops_at_invocation_boundary(case, violation: Violation) -> bool:
    """ADK returned the strict prefix because it ends where an invocation ends,
    on a release that has the dead-id retry this shortcut skips (``all_events=``,
    2.12.0 and later; without the retry the prefix helper always stops at an
    orphaned call, which is another fault)."""
    from .adk import accepts_all_events

    if not accepts_all_events():
        return False
    if _pipeline_level(case) and (
        violation.invariant == "P3"
        or (violation.invariant == "P6" and _NOTHING_NEW in violation.message)
    ):
        return _goes_with_a_reference_prefix(case, violation)
    if not isinstance(case, UnitCase | TokenCase):
        return False
    if isinstance(case, UnitCase):
        return violation.invariant == "U3" and violation.observed == _strict_stop_at_boundary(
            case.session, case.window
        )
    if violation.invariant != "U5" or not violation.message.startswith("the range takes"):
        return False
    candidates = reference.token_candidates(case.session)
    splits = {reference.safe_token_split(case.session, candidates, case.retention)}
    if case.retention == 0:
        splits = {len(candidates)}
    else:
        splits.add(_callless_response_split(case.session, candidates, case.retention))
    return any(
        violation.observed == _strict_stop_at_boundary(case.session, candidates[:split])
        for split in splits
    )


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
#: ADK's confirmation processor compared a confirmed call with a newer call
#: that reuses its id.
_confirmation_finds_the_newer_call = _raised("Function call name mismatch for ID")


def _retained_callless_response_blocks_split(case, violation: Violation) -> bool:
    """ADK's split treats a retained response without a call among the
    candidates as unmatched, so no split that retains it is allowed."""
    if not isinstance(case, TokenCase) or violation.invariant != "U5" or case.retention == 0:
        return False
    candidates = reference.token_candidates(case.session)
    adk_split = _callless_response_split(case.session, candidates, case.retention)
    if adk_split == reference.safe_token_split(case.session, candidates, case.retention):
        return False
    if violation.message.startswith("split "):
        return violation.observed == adk_split
    if violation.message.startswith("the range takes"):
        return violation.observed in (
            _token_range_from(case, adk_split, reference.longest_self_contained_prefix),
            _strict_stop_at_boundary(case.session, candidates[:adk_split]),
        )
    return False


def _reused_id_split_goes_with_a_reference_prefix(case, violation: Violation) -> bool:
    """A pipeline P1 (the summariser was given a range that splits a live pair)
    over a call id that more than one stored event calls, which disappears when
    the run is replayed with the reference's prefix in place of ADK's
    ``_longest_self_contained_prefix``: the prefix helper took the live call
    because another call with its id is dead."""
    if len(violation.ids) != 1:
        return False
    from .driver import run_script
    from .model import Session
    from .pipeline import run_pipeline_case

    replay = run_script if isinstance(case, Script) else run_pipeline_case
    stored = replay(case, triage=False).observed.get("session")
    if not stored:
        return False
    (cid,) = violation.ids
    callers = [step for step in Session.from_json(stored) if cid in step.call_ids]
    return len(callers) > 1 and _goes_with_a_reference_prefix(case, violation)


def _reused_id_unprotects_newest_call(case, violation: Violation) -> bool:
    """ADK dropped a newest-invocation call because an older call with its id is dead."""
    if _pipeline_level(case):
        return violation.invariant == "P1" and _reused_id_split_goes_with_a_reference_prefix(
            case, violation
        )
    splits_a_pair = violation.invariant == "U2" or violation.message.startswith(
        "the range splits a live pair"
    )
    if not splits_a_pair or len(violation.ids) != 1 or len(violation.positions) != 1:
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


def _branch_events_in_branchless_summary(case, violation: Violation) -> bool:
    """ADK's compactor gave the summariser events of sub-agent branches, and the
    summary, which has no branch, is read by every agent."""
    return (
        _pipeline_level(case)
        and violation.invariant == "P5"
        and violation.details.get("cause") == "branch"
        and violation.details.get("summary_branch") is None
    )


def _token_threshold(case) -> int | None:
    """The token threshold a pipeline case (a script's ``ScriptConfig`` or a
    recorded case's mapping) was configured with; None without one."""
    config = case.config
    return config.get("token_threshold") if isinstance(config, dict) else config.token_threshold


def _running_request_summarised(case, violation: Violation) -> bool:
    """The running invocation's user message is missing from the prompt because a
    kept summary was given it, on a configuration with a token threshold (the
    compaction before a model call). Without one, the summary that took it was
    made at the end of a run: of an invocation that paused (a confirmation, a
    long-running call) and resumed under the same id, which this fault does
    not explain."""
    return (
        _pipeline_level(case)
        and _token_threshold(case) is not None
        and violation.invariant == "P2"
        and violation.details.get("cause") == "opener missing"
        and violation.details.get("opener_summarised") is True
    )


def _reload_in_time_order(case, violation: Violation) -> bool:
    """The database gave the events back in timestamp order, and the runner had
    stored them in another (P7); or a script that reloads its session from the
    database before every invocation fails in a way the same script with an
    in-memory session does not (the reordered session broke the prompt)."""
    if not _pipeline_level(case):
        return False
    if violation.invariant == "P7":
        return violation.details.get("time_order") is True
    if not isinstance(case, Script) or case.config.storage != "database":
        return False
    from dataclasses import replace

    from .driver import run_script

    in_memory = Script(replace(case.config, storage="memory"), case.operations)
    again = run_script(in_memory, triage=False)
    return not any(_same_kind(v, violation) for v in again.violations)


def _time_order_assumed(case, violation: Violation) -> bool:
    """For a script: the violation (P2, P3, P4 or P6) goes away when the same
    script runs with every event stamped later than the one stored before it
    (no ties, no lagging host, no backward step): time order alone caused it.
    For a recorded session, which cannot be run again with other times, the
    shape of the violation decides (see :func:`_time_order_shape`). A script
    of the runner driver is replayed on the emulating driver, which alone can
    stamp events as it likes (the differential test keeps the two equal)."""
    if not isinstance(case, Script):
        return _time_order_shape(case, violation)
    if violation.invariant not in ("P2", "P3", "P4", "P6"):
        return False
    from .driver import run_script

    again = run_script(case, triage=False, monotonic=True)
    return not any(_same_kind(v, violation) for v in again.violations)


def _time_order_shape(case, violation: Violation) -> bool:
    """Compaction read an event stored out of time order by its timestamp: an
    event hidden by a range it was not given, or lost when the prompt was put
    in time order (P4), or an event given to a summary but outside its range
    and summarised again (P6)."""
    if not _pipeline_level(case):
        return False
    if violation.invariant == "P4":
        return (
            violation.details.get("inside_range") is True
            or violation.details.get("out_of_time_order") is True
        )
    if violation.invariant == "P3":  # stamped before a summary's end, stored after it
        return violation.details.get("out_of_time_order") is True
    if violation.invariant == "P2":  # the running request, hidden by a range it was not given
        return (
            violation.details.get("cause") == "opener missing"
            and violation.details.get("opener_summarised") is False
            and (
                violation.details.get("inside_range") is True
                or violation.details.get("out_of_time_order") is True
            )
        )
    return violation.invariant == "P6" and (
        violation.details.get("outside_ranges") is True
        or violation.details.get("out_of_time_order") is True
    )


def _partial_answer_to_parallel_calls(case, violation: Violation) -> bool:
    """The prompt pairs a content of parallel calls with the responses to only
    some of them."""
    return (
        _pipeline_level(case)
        and violation.invariant == "P2"
        and violation.details.get("cause") == "partial answer"
    )


def _one_answer_for_several_turns(case, violation: Violation) -> bool:
    """The prompt repeats one response event after each of the call contents
    it answers."""
    return (
        _pipeline_level(case)
        and violation.invariant == "P2"
        and violation.details.get("merged_answer") is True
    )


def _priced_against_a_client_record(case, violation: Violation) -> bool:
    """A summary of nothing new (P6) that a script with a client's compaction
    record makes, and that disappears when ADK prices the next summary by its
    own last summary instead of the latest record (see
    :class:`~compaction_harness.adk.summary_price_from_adk_summaries`)."""
    if not (
        isinstance(case, Script)
        and violation.invariant == "P6"
        and _NOTHING_NEW in violation.message
        and any(op.op == "client_record" for op in case.operations)
    ):
        return False
    from .adk import summary_price_from_adk_summaries

    return _gone_under(case, violation, summary_price_from_adk_summaries())


def _recorded_pending_call_blocks_a_resumed_window(case, violation: Violation) -> bool:
    """A stall (P3) in a script with a compaction record that ADK did not
    write, which disappears when ADK's window starts at its first event that no
    kept range covers (see
    :class:`~compaction_harness.adk.window_from_first_uncovered_event`)."""
    if not (
        isinstance(case, Script)
        and violation.invariant == "P3"
        and any(op.op == "client_record" for op in case.operations)
    ):
        return False
    from .adk import window_from_first_uncovered_event

    return _gone_under(case, violation, window_from_first_uncovered_event())


def _reloaded_actions_unvalidated(case, violation: Violation) -> bool:
    """A P0 of a script whose session lives in a database (reading what ADK
    returned, or ADK's own code reading it, failed) that disappears when the
    database service validates the stored actions into ``EventActions`` on
    reload (see :class:`~compaction_harness.adk.reloaded_actions_validated`)."""
    if not (
        isinstance(case, Script)
        and case.config.storage == "database"
        and violation.invariant == "P0"
    ):
        return False
    from .adk import reloaded_actions_validated

    return _gone_under(case, violation, reloaded_actions_validated())


#: The recognisers of the faults (pattern evidence), by fault id.
_RECOGNISERS: dict[str, Callable[[UnitCase | TokenCase, Violation], bool]] = {
    "dead-call-retry-skipped-at-invocation-boundary": _stops_at_invocation_boundary,
    "reused-call-id-unprotects-newest-invocation-call": _reused_id_unprotects_newest_call,
    "retained-callless-response-blocks-token-split": _retained_callless_response_blocks_split,
    "summary-leaks-branch-events-to-siblings": _branch_events_in_branchless_summary,
    "token-compaction-summarises-the-running-request": _running_request_summarised,
    "database-reload-reorders-events-by-timestamp": _reload_in_time_order,
    "partial-answer-to-parallel-calls-makes-an-invalid-request": _partial_answer_to_parallel_calls,
    "one-answer-to-several-turns-makes-an-invalid-request": _one_answer_for_several_turns,
    "compaction-assumes-events-are-stored-in-time-order": _time_order_assumed,
    "summary-priced-by-a-client-record-resummarises-a-continued-invocation": (
        _priced_against_a_client_record
    ),
    "resumed-invocation-window-stalls-on-a-summarised-pending-call": (
        _recorded_pending_call_blocks_a_resumed_window
    ),
    "orphaned-call-stalls-compaction-for-good": _strict_prefix_stalls,
    "sliding-window-splits-call-pairs": _unprotected_range_splits_a_pair,
    "summarised-call-makes-the-prompt-builder-raise": _summarised_call_raises,
    "confirmation-of-a-reused-call-id-raises": _confirmation_finds_the_newer_call,
    "database-reload-leaves-event-actions-as-dicts": _reloaded_actions_unvalidated,
}


def _catalogued() -> tuple[KnownFault, ...]:
    """google-adk's faults of :data:`compaction_harness.faults.catalogue.FAULTS`,
    in the catalogue's order, releases as the release matrix derives them."""
    from .faults.catalogue import PYTHON, faults_of

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
    recogniser, for the faults that have no fix yet
    (``compaction_harness.faults.fixes``). A fault with a fix is never named
    here: re-running with its fix decides (``faults.classify.by_fix``).
    A recogniser that needs what the installed release lacks (its
    counterfactual cannot run there) does not match."""
    from .faults.fixes import fixes_for

    return next(
        (
            f
            for f in KNOWN_FAULTS
            if not fixes_for(f.id)
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
