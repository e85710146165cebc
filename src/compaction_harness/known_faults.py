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
    """One recorded upstream fault.

    Attributes:
        id: a stable slug, referenced by fixtures as ``known_fault``.
        invariant: the invariants it breaks (directly, or through a caller:
            the token-threshold range inherits the prefix helper's faults).
        releases: google-adk releases on which it was observed.
        title: one line.
        explanation: where in ADK (file, function), what goes wrong, and what
            it costs a user.
        matches: recognises a violation of this fault on a case.
    """

    id: str
    invariant: tuple[str, ...]
    releases: tuple[str, ...]
    title: str
    explanation: str
    matches: Callable[[UnitCase | TokenCase, Violation], bool]

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


KNOWN_FAULTS: tuple[KnownFault, ...] = (
    KnownFault(
        id="dead-call-retry-skipped-at-invocation-boundary",
        invariant=("U3", "U5", "P3", "P6"),
        # As the release matrix derives it (the retry, and with it the shortcut,
        # arrived in 2.12.0).
        releases=("2.12.0", "2.13.0"),
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
            "fault 2.12.0 set out to fix. The same stop wastes a summary when a late event "
            "(a client's second answer to a call) continues an old invocation: the sliding "
            "window is taken again from that invocation's first event, the range stops at the "
            "boundary before the orphaned call, and the summary covers only what earlier "
            "summaries cover (P6: a summariser call that merges summaries and takes nothing "
            "new). Token-threshold compaction inherits it through "
            "_events_to_compact_for_token_threshold, which trims its range with the same helper."
        ),
        matches=_stops_at_invocation_boundary,
    ),
    KnownFault(
        id="reused-call-id-unprotects-newest-invocation-call",
        invariant=("U2", "U5", "P1"),
        releases=("2.12.0", "2.13.0"),
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
            "call must not have been opened by the newest invocation, which this one was. "
            "Through the pipeline it shows as P1: the sliding window at an invocation's end "
            "gives the summariser the newest invocation's call while it is still unanswered "
            "(an older call with its id, a confirmation left pending, is dead)."
        ),
        matches=_reused_id_unprotects_newest_call,
    ),
    KnownFault(
        id="retained-callless-response-blocks-token-split",
        invariant=("U5",),
        # Seen on every release with token-threshold compaction that its fixture was
        # replayed on (1.26.0 to 2.13.0).
        releases=(
            "1.26.0",
            "1.27.5",
            "1.28.0",
            "1.28.1",
            "1.29.0",
            "1.30.0",
            "1.31.1",
            "1.32.0",
            "1.33.0",
            "1.34.0",
            "1.34.3",
            "1.35.2",
            "1.36.2",
            "1.37.0",
            "1.38.0",
            "1.39.1",
            "2.0.0",
            "2.1.0",
            "2.2.0",
            "2.3.0",
            "2.4.0",
            "2.5.0",
            "2.6.1",
            "2.6.3",
            "2.7.1",
            "2.8.0",
            "2.9.0",
            "2.9.2",
            "2.10.0",
            "2.11.0",
            "2.12.0",
            "2.13.0",
        ),
        title="a retained response whose call is not among the candidates forbids every split",
        explanation=(
            "google/adk/apps/compaction.py, _safe_token_compaction_split_index: walking back "
            "from the newest candidate, a response id stays 'unmatched' until its call is "
            "seen, and a split is allowed only when nothing is unmatched. A response whose "
            "call is not among the candidates at all (the call was summarised by an earlier "
            "compaction or removed by a rewind, or the client answered a call the session "
            "never recorded) is never matched, so while it sits among the last "
            "event_retention_size candidates every split is refused and the function returns "
            "0: token-threshold compaction does nothing, however far the prompt is over the "
            "threshold, until event_retention_size newer events push that response out of "
            "the retained tail. Keeping it retained protects nothing, since its call cannot "
            "be retained either; the latest split that keeps every retained response with a "
            "call among the candidates is the one U5 asks for."
        ),
        matches=_retained_callless_response_blocks_split,
    ),
    KnownFault(
        id="summary-leaks-branch-events-to-siblings",
        invariant=("P5",),
        # Every release of the matrix.
        releases=(
            "1.16.0",
            "1.17.0",
            "1.18.0",
            "1.19.0",
            "1.20.0",
            "1.21.0",
            "1.22.1",
            "1.23.0",
            "1.24.0",
            "1.24.1",
            "1.25.1",
            "1.26.0",
            "1.27.5",
            "1.28.0",
            "1.28.1",
            "1.29.0",
            "1.30.0",
            "1.31.1",
            "1.32.0",
            "1.33.0",
            "1.34.0",
            "1.34.3",
            "1.35.2",
            "1.36.2",
            "1.37.0",
            "1.38.0",
            "1.39.1",
            "2.0.0",
            "2.1.0",
            "2.2.0",
            "2.3.0",
            "2.4.0",
            "2.5.0",
            "2.6.1",
            "2.6.3",
            "2.7.1",
            "2.8.0",
            "2.9.0",
            "2.9.2",
            "2.10.0",
            "2.11.0",
            "2.12.0",
            "2.13.0",
        ),
        title="a summary without a branch carries sub-agent branch events to their siblings",
        explanation=(
            "google/adk/apps/compaction.py, _run_compaction_for_sliding_window and "
            "_run_compaction_for_token_threshold_config: the events to compact are filtered by "
            "rewinds and isolation scope (2.13.0: 'so their private turns do not leak into the "
            "root session summary') but not by Event.branch, and the summary event has no "
            "branch. The contents assembly (_is_event_belongs_to_branch) keeps a sub-agent "
            "from seeing its siblings' events: ParallelAgent's docstring promises 'a sub-agent "
            "sees the events that led to the fan-out and its own, but not those of a sibling'. "
            "A branchless summary is shown to every agent and hides the raw events it covers, "
            "so after the first compaction each parallel sub-agent reads a summary written "
            "from its siblings' private output: the isolation between branches ends at the "
            "first summary, and what one sub-agent was told or produced steers the others."
        ),
        matches=_branch_events_in_branchless_summary,
    ),
    KnownFault(
        id="token-compaction-summarises-the-running-request",
        invariant=("P2",),
        # Seen on 1.26.0 to 2.13.0 (its fixture with a sliding window that never
        # fires, which releases before 2.6.1 require alongside the token threshold).
        releases=(
            "1.26.0",
            "1.27.5",
            "1.28.0",
            "1.28.1",
            "1.29.0",
            "1.30.0",
            "1.31.1",
            "1.32.0",
            "1.33.0",
            "1.34.0",
            "1.34.3",
            "1.35.2",
            "1.36.2",
            "1.37.0",
            "1.38.0",
            "1.39.1",
            "2.0.0",
            "2.1.0",
            "2.2.0",
            "2.3.0",
            "2.4.0",
            "2.5.0",
            "2.6.1",
            "2.6.3",
            "2.7.1",
            "2.8.0",
            "2.9.0",
            "2.9.2",
            "2.10.0",
            "2.11.0",
            "2.12.0",
            "2.13.0",
        ),
        title="token-threshold compaction before a model call summarises the running "
        "invocation's user message",
        explanation=(
            "google/adk/flows/llm_flows/context/_compaction.py, CompactionRequestProcessor, "
            "runs _run_compaction_for_token_threshold_config before every model call, and "
            "google/adk/apps/compaction.py, _events_to_compact_for_token_threshold, takes every "
            "candidate except the last event_retention_size events, with nothing that keeps "
            "the running invocation's own user message. In an invocation that calls the model "
            "more than once (a tool loop), once the prompt count reaches token_threshold the "
            "user's request for this very turn is summarised away: the remaining model calls of "
            "the turn see it only through a summary, and the request may hold no user turn at "
            "all (the prompt then starts with the summary and model output)."
        ),
        matches=_running_request_summarised,
    ),
    KnownFault(
        id="database-reload-reorders-events-by-timestamp",
        invariant=("P7", "P2", "P3", "P4", "P6"),
        # Its P7 fixture replays as this fault on every release of the matrix.
        releases=(
            "1.16.0",
            "1.17.0",
            "1.18.0",
            "1.19.0",
            "1.20.0",
            "1.21.0",
            "1.22.1",
            "1.23.0",
            "1.24.0",
            "1.24.1",
            "1.25.1",
            "1.26.0",
            "1.27.5",
            "1.28.0",
            "1.28.1",
            "1.29.0",
            "1.30.0",
            "1.31.1",
            "1.32.0",
            "1.33.0",
            "1.34.0",
            "1.34.3",
            "1.35.2",
            "1.36.2",
            "1.37.0",
            "1.38.0",
            "1.39.1",
            "2.0.0",
            "2.1.0",
            "2.2.0",
            "2.3.0",
            "2.4.0",
            "2.5.0",
            "2.6.1",
            "2.6.3",
            "2.7.1",
            "2.8.0",
            "2.9.0",
            "2.9.2",
            "2.10.0",
            "2.11.0",
            "2.12.0",
            "2.13.0",
        ),
        title="DatabaseSessionService returns a session's events in timestamp order, not in "
        "the order the runner stored them",
        explanation=(
            "google/adk/sessions/database_session_service.py, get_session: the events are read "
            "with order_by(timestamp desc, id desc) and reversed, so they come back sorted by "
            "timestamp (ties by the event's random uuid), while the runner appends them, and "
            "InMemorySessionService keeps them, in the order they happened. The two differ "
            "whenever ADK stamps an event before one stored ahead of it: a ParallelAgent "
            "sub-agent's reply is stamped when its step starts and stored when it finishes, so "
            "a faster sibling's reply is stored first with the later time; a tool "
            "confirmation's request is stored before the response it was built after; hosts "
            "whose clocks lag share one database; and on a coarse clock, events of one tick "
            "come back ordered by their random ids. Every Runner.run_async reads the "
            "session afresh, so a server (or any app on the database service) builds the next "
            "prompt from the reordered history: parallel sub-agents' answers swap places "
            "between one request and the next, and the same session gives a different prompt "
            "in memory and from the database. Where the reordering puts a function response "
            "before its call, or a user message after the replies to it, the prompt builder "
            "drops events (P4) or the running request (P2): the same script with an "
            "in-memory session does not fail."
        ),
        matches=_reload_in_time_order,
    ),
    KnownFault(
        id="partial-answer-to-parallel-calls-makes-an-invalid-request",
        invariant=("P2",),
        # Its fixture replays as this fault on 1.26.0 to 2.13.0; 1.16.0 to 1.24.0
        # show the same shape with the call ids stripped from the prompt, which
        # the recogniser (naming ids) does not match.
        releases=(
            "1.25.1",
            "1.26.0",
            "1.27.5",
            "1.28.0",
            "1.28.1",
            "1.29.0",
            "1.30.0",
            "1.31.1",
            "1.32.0",
            "1.33.0",
            "1.34.0",
            "1.34.3",
            "1.35.2",
            "1.36.2",
            "1.37.0",
            "1.38.0",
            "1.39.1",
            "2.0.0",
            "2.1.0",
            "2.2.0",
            "2.3.0",
            "2.4.0",
            "2.5.0",
            "2.6.1",
            "2.6.3",
            "2.7.1",
            "2.8.0",
            "2.9.0",
            "2.9.2",
            "2.10.0",
            "2.11.0",
            "2.12.0",
            "2.13.0",
        ),
        title="a model content with parallel calls is sent with responses to only some of them",
        explanation=(
            "google/adk/flows/llm_flows/context/_contents.py (the contents assembly, "
            "_get_contents and _rearrange_events_for_latest_function_response): when a client "
            "answers some of the parallel calls a model made (two long-running tools, one of "
            "which has finished; ADK lets a client answer each call as its result arrives), "
            "the next request holds the model's content with every call, followed by a user "
            "content with only the responses that arrived. Gemini refuses such a request "
            "('the number of function response parts is equal to the number of function "
            "call parts of the function call turn'), and so do the strict providers. The "
            "invocation the client's answer resumes fails at its first model call. It needs "
            "no compaction: the harness meets it because its scripts answer calls the way "
            "clients do."
        ),
        matches=_partial_answer_to_parallel_calls,
    ),
    KnownFault(
        id="one-answer-to-several-turns-makes-an-invalid-request",
        invariant=("P2",),
        # Its fixture replays as this fault on 2.11.0 to 2.13.0; older releases
        # fail it otherwise (1.26.0: prompt assembly raises ValueError, P0).
        releases=("2.11.0", "2.12.0", "2.13.0"),
        title="a function-response message answering calls of several model turns is sent "
        "whole after each of them",
        explanation=(
            "google/adk/flows/llm_flows/tools/_rearranger.py (the contents assembly): a client "
            "may answer calls of several model turns of one invocation in one message (two "
            "long-running tools started in two turns, both finished; the Runner accepts one "
            "message for calls of one invocation). The contents assembly places that whole "
            "response content after each call content it answers, so each call content is "
            "followed by responses to calls it did not make, and the same responses appear "
            "twice. Gemini and the strict providers refuse such a request (function "
            "response parts must match the preceding turn's function call parts), and the "
            "resumed invocation fails at its next model call. It needs no compaction."
        ),
        matches=_one_answer_for_several_turns,
    ),
    KnownFault(
        id="compaction-assumes-events-are-stored-in-time-order",
        invariant=("P2", "P3", "P4", "P6"),
        # Its fixtures replay as this fault on 1.26.0 to 2.13.0, wherever the
        # release accepts their configuration.
        releases=(
            "1.26.0",
            "1.27.5",
            "1.28.0",
            "1.28.1",
            "1.29.0",
            "1.30.0",
            "1.31.1",
            "1.32.0",
            "1.33.0",
            "1.34.0",
            "1.34.3",
            "1.35.2",
            "1.36.2",
            "1.37.0",
            "1.38.0",
            "1.39.1",
            "2.0.0",
            "2.1.0",
            "2.2.0",
            "2.3.0",
            "2.4.0",
            "2.5.0",
            "2.6.1",
            "2.6.3",
            "2.7.1",
            "2.8.0",
            "2.9.0",
            "2.9.2",
            "2.10.0",
            "2.11.0",
            "2.12.0",
            "2.13.0",
        ),
        title="compaction reads summaries and the prompt by timestamp, so events stored out "
        "of time order are lost, or summarised twice",
        explanation=(
            "google/adk/apps/compaction.py picks the events to compact by position (the "
            "events stored after the previous summary, cut at a safe prefix), but "
            "google/adk/apps/llm_event_summarizer.py, maybe_summarize_events, records the "
            "summary's range as [events[0].timestamp, events[-1].timestamp], and everything "
            "afterwards reads time: the prompt builder "
            "(flows/llm_flows/context/_compaction.py, _process_compaction_events) hides every "
            "raw event whose timestamp lies in a kept range and, once a summary exists, puts "
            "the rest in timestamp order ('Keep chronological order'), and the next "
            "compaction takes the events stamped after the latest range's end. Stored order "
            "and time disagree whenever events are stored out of time order: ParallelAgent "
            "sub-agents are stored as they finish but stamped as their steps start, the "
            "Runner stores a tool confirmation's request before the response it was built "
            "after, hosts sharing one database have lagging clocks, and on a coarse clock "
            "(1 ms, or Windows' 15.6 ms) neighbouring events share a tick. Then an event "
            "stored after a range's last event but stamped inside it vanishes from the prompt "
            "without having been summarised, a function response stamped before its call is "
            "sorted ahead of it and both are dropped (P4: the model loses, say, a sub-agent's "
            "answer or a tool's result; P2: when it is the user's message of the running "
            "invocation, the model never sees the request); an event stamped before the "
            "latest summary's end but stored after it is never compacted, by either trigger, "
            "and the backlog grows (P3); and an event given to a summary but stamped after "
            "the range's end stays in the prompt beside the summary and is summarised again "
            "(P6: duplicated, wasted work)."
        ),
        matches=_time_order_assumed,
    ),
    KnownFault(
        id="summary-priced-by-a-client-record-resummarises-a-continued-invocation",
        invariant=("P6",),
        # Found on 2.13.0 (the price check, _is_range_worth_compacting, is new there).
        releases=("2.12.0", "2.13.0"),
        title="a continued invocation is summarised again from its start when the latest "
        "compaction record is a client's",
        explanation=(
            "google/adk/apps/compaction.py, _run_compaction_for_sliding_window: an invocation "
            "that a client's answer resumes counts as new, and the window is taken again from "
            "its first event, which an earlier summary already covers. The price check "
            "_is_range_worth_compacting is what refuses such a range: it compares what the "
            "range would remove with _previous_summary_chars, the size of the latest "
            "compaction event, which its docstring calls the last summary the summarizer "
            "wrote. When the latest compaction event is instead a small record a client "
            "appended, the same events are offered as worth a summary, and the summariser is "
            "called for events a kept summary already covers, writing a summary as large as "
            "the one it replaces (P6: wasted work, one summariser call per resumed turn). "
            "Pricing the range by ADK's own last summary makes the same script summarise "
            "nothing again."
        ),
        matches=_priced_against_a_client_record,
    ),
    KnownFault(
        id="resumed-invocation-window-stalls-on-a-summarised-pending-call",
        invariant=("P3",),
        releases=("2.12.0", "2.13.0"),
        title="a resumed invocation's window takes back a pending long-running call that a "
        "kept summary covers, and compaction stalls for good",
        explanation=(
            "google/adk/apps/compaction.py, _run_compaction_for_sliding_window: an invocation "
            "counts as new when its latest event is newer than the last summary's end, and "
            "the window is cut from the first event of the first new invocation, whatever "
            "kept summaries cover; only compaction events themselves are left out. When a "
            "kept compaction covers a long-running call that is still pending (a record "
            "appended by a client, or a summary written by a release without pair "
            "protection, 1.16.0 to 1.26.0) and a client's answer to a sibling call resumes "
            "that invocation, the window starts again at the invocation's first event, the "
            "pending call is in it again, and _longest_self_contained_prefix stops before it, "
            "at every later invocation end, for as long as the call stays pending (a "
            "long-running job may never report back). The prefix holds only events the "
            "summaries cover, _is_range_worth_compacting refuses it, and nothing is compacted "
            "again: every later turn stays raw and the prompt grows until it no longer fits "
            "the context window (P3). Taking the window from its first event that no kept "
            "summary covers compacts the same session normally."
        ),
        matches=_recorded_pending_call_blocks_a_resumed_window,
    ),
    KnownFault(
        id="orphaned-call-stalls-compaction-for-good",
        invariant=("U3", "U5", "P3", "P6"),
        # Derived from the release matrix (docs/release-matrix.json).
        releases=(
            "2.3.0",
            "2.4.0",
            "2.5.0",
            "2.6.1",
            "2.6.3",
            "2.7.1",
            "2.8.0",
            "2.9.0",
            "2.9.2",
            "2.10.0",
            "2.11.0",
        ),
        title="an orphaned call at the start of the window stops compaction for good",
        explanation=(
            "google/adk/apps/compaction.py, _longest_self_contained_prefix (2.3.0 to "
            "2.11.0): a single left-to-right pass returns the longest prefix at whose end "
            "no call is open, and nothing else. A function call whose response never comes "
            "(the tool's process died, the client never answered) stays open for ever, so "
            "every window that contains it is cut before it. Once it is the first event "
            "that no summary covers, every later sliding-window or token-threshold range is "
            "empty (or only what earlier summaries cover, which _is_range_worth_compacting "
            "refuses or summarises again): compaction has stalled for the rest of the "
            "session and the prompt grows until it no longer fits the context window. "
            "2.12.0 added the provably-dead retry (_provably_dead_call_ids, the all_events= "
            "parameter) to fix it; 2.12.0 and 2.13.0 still skip that retry in one case "
            "(dead-call-retry-skipped-at-invocation-boundary)."
        ),
        matches=_strict_prefix_stalls,
    ),
    KnownFault(
        id="sliding-window-splits-call-pairs",
        invariant=("P1",),
        # Derived from the release matrix (docs/release-matrix.json).
        releases=(
            "1.16.0",
            "1.17.0",
            "1.18.0",
            "1.19.0",
            "1.20.0",
            "1.21.0",
            "1.22.1",
            "1.23.0",
            "1.24.0",
            "1.24.1",
            "1.25.1",
            "1.26.0",
            "1.27.5",
        ),
        title="sliding-window ranges ignore function calls and their responses",
        explanation=(
            "google/adk/apps/compaction.py, _run_compaction_for_sliding_window (1.16.0 to "
            "1.26.0): the range is every event from the first event of the overlap's first "
            "invocation to the last event of the newest one, and nothing compares function "
            "calls with their responses (1.28.0 added _pending_function_call_ids and "
            "_truncate_events_before_pending_function_call, 2.3.0 "
            "_longest_self_contained_prefix). A call whose response arrives later (a "
            "long-running tool, a confirmation, a client's answer in a later invocation) is "
            "summarised while its response stays in the prompt, or the other way round: the "
            "summariser is given half a pair (P1), and the next request holds a function "
            "response without its call, which the model API rejects or ADK's prompt builder "
            "refuses (see summarised-call-makes-the-prompt-builder-raise)."
        ),
        matches=_unprotected_range_splits_a_pair,
    ),
    KnownFault(
        id="summarised-call-makes-the-prompt-builder-raise",
        invariant=("P0",),
        # Derived from the release matrix (docs/release-matrix.json).
        releases=(
            "1.16.0",
            "1.17.0",
            "1.18.0",
            "1.19.0",
            "1.20.0",
            "1.21.0",
            "1.22.1",
            "1.23.0",
            "1.24.0",
            "1.24.1",
            "1.25.1",
            "1.26.0",
            "1.27.5",
            "1.28.0",
            "1.28.1",
            "1.29.0",
            "1.30.0",
            "1.31.1",
            "1.32.0",
            "1.33.0",
            "1.34.0",
            "1.34.3",
            "1.35.2",
            "1.36.2",
            "1.37.0",
            "1.38.0",
            "1.39.1",
            "2.0.0",
            "2.1.0",
            "2.2.0",
            "2.3.0",
            "2.4.0",
        ),
        title="a response whose call was summarised makes contents assembly raise",
        explanation=(
            "google/adk/flows/llm_flows/contents.py, "
            "_rearrange_events_for_latest_function_response: when the latest event is a "
            "function response, it looks back for the event holding the call and raises "
            "ValueError('No function call event found for function responses ids: ...') "
            "when there is none. A compaction that summarised the call (a range that "
            "ends between a call and its late response) leaves exactly that shape, so "
            "every model call of the invocation fails with an exception instead of a "
            "request: the agent cannot answer until the session is reset. Later "
            "releases re-inject the compacted call event before its surviving response."
        ),
        matches=_summarised_call_raises,
    ),
    KnownFault(
        id="confirmation-of-a-reused-call-id-raises",
        invariant=("P0",),
        # Derived from the release matrix (docs/release-matrix.json).
        releases=(
            "1.38.0",
            "1.39.1",
            "2.5.0",
            "2.6.1",
            "2.6.3",
            "2.7.1",
            "2.8.0",
            "2.9.0",
            "2.9.2",
            "2.10.0",
            "2.11.0",
            "2.12.0",
            "2.13.0",
        ),
        title="confirming a call whose id a later call reused raises ValueError",
        explanation=(
            "google/adk/flows/llm_flows/tools/_confirmation.py, "
            "_resolve_confirmation_targets: the calls in the session are indexed by id in a "
            "dict (history_fcs), so the newest call with an id hides every older one. When "
            "the model numbers call ids per turn (call_0, call_1, ... as some providers do), "
            "a tool confirmation asked in one invocation and given after a later invocation "
            "reused the id for another tool is checked against the newer call, and the "
            "processor raises ValueError('Function call name mismatch for ID ...') before "
            "the model is called: the user's confirmation ends the invocation with an "
            "exception, whether or not compaction ran. Found only through ADK's own Runner "
            "(the request processor runs there); the emulating driver does not model it."
        ),
        matches=_confirmation_finds_the_newer_call,
    ),
    KnownFault(
        id="database-reload-leaves-event-actions-as-dicts",
        invariant=("P0",),
        # Found on 1.18.0 (adk-python issues 4000 and 4082); the other releases
        # are derived by the release matrix.
        releases=("1.18.0", "1.19.0", "1.20.0", "1.21.0"),
        title="a session reloaded from DatabaseSessionService holds its summaries' "
        "actions as plain dicts, and the next request raises AttributeError",
        explanation=(
            "google/adk/sessions/database_session_service.py, StorageEvent.to_event: the "
            "stored actions are rebuilt with EventActions().model_copy(update="
            "self.actions.model_dump()), which copies without validating, so every nested "
            "model comes back as a dict: a summary's actions.compaction (with its "
            "compacted_content) is a dict, not an EventCompaction. Every later reader "
            "fails: contents assembly (_process_compaction_events reads "
            "compaction.start_timestamp) and the next compaction "
            "(_run_compaction_for_sliding_window reads compaction.end_timestamp) raise "
            "AttributeError(\"'dict' object has no attribute ...\"). A user who keeps "
            "sessions in a database (every server that reloads the session per request) "
            "sees the agent work until the first compaction, and then every request of "
            "that session fail with an exception: the session cannot be continued. "
            "Validating the actions into EventActions on reload (as later releases do, "
            "EventActions.model_validate) makes the same script run without exception."
        ),
        matches=_reloaded_actions_unvalidated,
    ),
)


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
