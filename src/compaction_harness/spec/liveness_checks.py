"""Pure checker of P3 (liveness): compaction never stalls for good.

:func:`liveness_bound` is P3's bound on the backlog at an invocation's end
(reasoned from the configuration), :func:`check_liveness` holds the backlog
the definitions allow to compact to it. The invariants are stated in
:mod:`.pipeline_checks`. Pure: imports only :mod:`compaction_harness.spec`
and the standard library.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from . import reference
from .invariants import Violation
from .model import Session, Step
from .pipeline_checks import (
    Prompt,
    Summaries,
    covered_by_kept,
    covered_by_records,
    live_positions,
)

__all__ = [
    "beyond_retention",
    "check_liveness",
    "liveness_bound",
    "ranges_beyond_retention",
    "retained_tail",
    "token_liveness_bound",
]


def liveness_bound(
    config: Mapping[str, int | None], steps: Session, count: int | None = None
) -> int | None:
    """P3's bound on the compactable backlog at an invocation's end (events,
    int), or None where P3 makes no claim.

    ``steps``: the session after the end's compaction. ``count``: the prompt
    count the token trigger consulted at this end (see
    :func:`token_liveness_bound`); read only without a sliding window.

    Without a sliding window the bound is the token threshold's
    (:func:`token_liveness_bound`): None while the trigger does not fire, and
    None with neither trigger.

    Reasoning: the runner compacts after an invocation once
    ``compaction_interval`` (N) invocations are new since the last summary,
    and the summary covers everything the definitions allow up to its end.
    So at any invocation's end the events that could be compacted (the
    longest self-contained prefix of the events no summary covers, dead calls
    exempt, and the self-contained ranges after a call that waits: see
    :func:`check_liveness`) belong to at most the N newest invocations, which no summary has
    had to take yet; one more is allowed for slack. "Newest" two ways, since
    ADK's window (``_run_compaction_for_sliding_window``, 2.13.0) counts an
    invocation as new by its latest event (a resumed invocation is new again)
    but ends its range at the last event of the last new invocation in order
    of first appearance, so a resumed older invocation's later events wait for
    the next invocation's end: the N + 1 newest by latest event and the N + 1
    newest by first event both count. The bound is their events as stored
    (live, summaries aside). The overlap only re-covers events already
    covered, so it does not enter the bound.

    With a token threshold as well, token-threshold compaction takes
    precedence, and a summary of it leaves the last ``event_retention_size``
    raw events uncompacted by design ("when it is configured and it produces
    a summary, this returns without a sliding-window summary", the same
    function): those are allowed on top. A larger backlog means compaction
    has stalled.
    """
    interval = config.get("compaction_interval")
    if interval is None or config.get("overlap_size") is None:
        return token_liveness_bound(config, steps, count)
    live = [s for s in reference.live_events(steps) if s.compaction is None]
    first_event: dict[str, int] = {}
    newest_event: dict[str, int] = {}
    for position, step in enumerate(live):
        first_event.setdefault(step.invocation, position)
        newest_event[step.invocation] = position
    newest = {
        invocation
        for order in (newest_event, first_event)
        for invocation in sorted(order, key=order.__getitem__)[-(interval + 1) :]
    }
    bound = sum(1 for step in live if step.invocation in newest)
    if config.get("token_threshold") is not None:
        bound += config.get("event_retention_size") or 0
    return bound


def token_liveness_bound(
    config: Mapping[str, int | None], steps: Session, count: int | None
) -> int | None:
    """P3's bound (events, int) on the compactable backlog at an invocation's
    end with a token threshold and no sliding window, or None where P3 makes
    no claim: no token threshold (or no ``event_retention_size``, without
    which ADK does not run it), or the trigger did not fire at this end.

    ``steps``: the session after the end's compaction. ``count``: the prompt
    count the trigger consulted at this end, before its compaction: the
    newest real prompt count (:func:`~.pipeline_checks.newest_real_count` of
    the session as it stood then, any agent's), None when there is none since
    the latest summary.

    Where the rule comes from: google-adk 2.13.0, ``google/adk/apps/compaction.py``.
    After every invocation the ``Runner`` (``_run_post_invocation_compaction``,
    ``runners.py``) calls ``_run_compaction_for_sliding_window``, which tries
    token-threshold compaction first ("Prefer token-threshold compaction if
    configured and triggered") and, with no sliding window, nothing else
    ("if not _has_sliding_window_config(config): return").
    ``_run_compaction_for_token_threshold_config`` consults
    ``_latest_prompt_token_count`` ("Returns the most recently observed prompt
    token count": the newest ``usage_metadata.prompt_token_count`` since the
    latest summary, any agent's at the end, else an estimate of four
    characters a token) and fires unless "prompt_token_count <
    config.token_threshold". It then takes what "keeps the last
    ``event_retention_size`` raw events un-compacted"
    (``_run_compaction_for_token_threshold``), the split moved earlier so that
    every retained response keeps its call (``_safe_token_compaction_split_index``).
    The flow runs the same trigger before every model call
    (``CompactionRequestProcessor``); P3 is judged at the invocation's end,
    after the last consultation of the invocation.

    The bound is the specification's, not ADK's algorithm. P3 holds a
    compactor to its trigger: while the trigger fires, compaction must not
    stall, and everything the definitions allow to compact is to be compacted
    except what the configuration retains. The configuration retains the
    newest ``event_retention_size`` (R) events newer than the latest summary
    of their branch (:func:`reference.token_candidates`), and, since no
    summary may split a live pair (U2), U5's split keeps every retained
    response with its call and what lies between (:func:`reference.safe_token_split`,
    the latest such split). So at an end where the trigger fired (``count``
    at least the threshold), the backlog (:func:`check_liveness`: the
    longest self-contained prefix of what no summary covers, dead calls
    exempt, and the self-contained ranges after a call that waits, which it
    does not shield) may hold at most the live candidates from that split on,
    measured on the session after the end's compaction (a summary made there
    leaves exactly that tail as candidates). Events before the split that the
    definitions allow to compact are a stall: an orphaned call that opens the
    candidates (google-adk 2.3.0 to 2.11.0), or a compactor that takes only a
    prefix and stops at a call that waits.

    Where P3 makes no claim: below the threshold (the trigger is quiet, and
    the backlog is bounded by the threshold in tokens, not in events), and
    where the trigger consulted no real count (``count`` None: ADK estimates
    from the prompt, which the session model does not size): P3 holds the
    compactor to its trigger only where the trigger is known to fire. The
    backlog is still carried to the next end (:func:`check_liveness`'s
    ``earlier``), so a stall is caught at the second end that fires.
    """
    retained = retained_tail(config, steps, count)
    return None if retained is None else len(retained)


def retained_tail(
    config: Mapping[str, int | None], steps: Session, count: int | None
) -> tuple[int, ...] | None:
    """The positions in ``steps`` of the events the token threshold retains at
    an end where it fired (the live candidates from U5's split on: see
    :func:`token_liveness_bound`, whose bound is their number), or None where
    P3 makes no claim (the same cases)."""
    threshold = config.get("token_threshold")
    retention = config.get("event_retention_size")
    if threshold is None or retention is None or count is None or count < threshold:
        return None
    live = live_positions(steps)
    candidates = [i for i in reference.token_candidates(steps) if i in live]
    split = reference.safe_token_split(steps, candidates, retention)
    return tuple(candidates[_keeping_openers(steps, candidates, split) :])


def _keeping_openers(steps: Session, candidates: Sequence[int], split: int) -> int:
    """``split`` moved earlier until every response retained (``candidates``
    from the split on) also keeps the call that opened the obligation it
    closes by id (the definitions): with ids reused across turns, a call may
    open an id that a later call of another tool reuses while it is still
    open, and the later call's answer closes both by id. U5's split keeps the
    nearest call of the id (:func:`reference.safe_token_split`, as ADK's
    split does); where the two readings differ, P3's bound takes the larger
    (docs/invariants.md), so a compactor that follows either is not called
    stalled."""
    chosen = [steps[i] for i in candidates]
    moved = True
    while moved:
        moved = False
        for p in range(split, len(chosen)):
            for call_id in chosen[p].response_ids:
                opener = _opener(chosen, p, call_id)
                if opener is not None and opener < split:
                    split, moved = opener, True
    return split


def _opener(steps: Sequence[Step], position: int, call_id: str) -> int | None:
    """The index of the step before ``position`` that opened the obligation
    ``call_id`` a response at ``position`` closes: the earliest step that
    opens the id (:func:`reference.opened_ids`) since one last closed it
    (within one step, closes count before opens), or None."""
    opener = None
    for q in range(position - 1, -1, -1):
        if call_id in reference.opened_ids(steps[q]):
            opener = q
        if call_id in reference.closed_ids(steps[q]):
            break
    return opener


def check_liveness(
    steps: Session,
    prompt: Prompt,
    summaries: Summaries,
    config: Mapping[str, int | None],
    records: Sequence[int] = (),
    earlier: Collection[Step] | None = None,
    count: int | None = None,
) -> tuple[list[Violation], frozenset[Step]]:
    """P3 at an invocation's end: the backlog the definitions allow to compact
    is within the bound (:func:`liveness_bound`). Returns (violations, the
    backlog as steps: pass it as ``earlier`` at the next end).

    Events that a kept summary stands for are not backlog, and neither are
    those a compaction record ADK did not make (``records``, see
    :func:`~.prompt_checks.check_nothing_lost`) claims: ADK reads every compaction record's
    end as a mark up to which everything is compacted (the sliding window
    counts only invocations newer than the latest end), so whoever wrote the
    record claimed everything stamped up to its end.

    The backlog is what a compactor may summarise around the calls that wait
    (:func:`reference.compactable_around_waiting_calls`): the longest
    self-contained prefix of the events no summary covers, and after a call or
    confirmation that still waits (live and protected: a long-running tool
    still running; a confirmation not yet given, while its invocation is the
    newest) every range of its own that no obligation crosses. The waiting
    call itself is not compacted, but it does not shield what comes after it:
    a compactor that stops all compaction for as long as one call waits
    breaks P3.

    ``earlier``: the backlog at the previous invocation end. Events that a
    live call splits from their own (its invocation's events, or a range whose
    call is answered across it) cannot be compacted while it waits; once
    the call is answered they all become compactable at once, and ADK's window
    takes them at the next end, not the one that resumed the call's invocation
    (its range ends at the last new invocation in order of first appearance,
    ``_run_compaction_for_sliding_window``). So only the part of the backlog
    that was compactable at the previous end too is held to the bound: a stall
    carries it from end to end and is caught one end later.

    ADK's window ends at the last event of the newest invocation in order of
    first appearance (:func:`_window_end`); a resumed older invocation's later
    events beyond it wait for the next invocation's end (the bound counts
    them). An event before that end that is compactable only with a closer
    beyond it (a pair that a resumed invocation's later event completes, by
    id) waits with that closer, however many resumptions of that invocation
    end meanwhile: before the window's end, the backlog is what is
    compactable both in the whole view and within the window. That window
    is the sliding window's; without one the token threshold's candidates
    run to the newest event, and nothing is cut.

    ``count``: the prompt count the token trigger consulted at this end, for
    a configuration without a sliding window (:func:`token_liveness_bound`).
    Where P3 makes no claim at this end (the trigger did not fire), there is
    no violation, but the backlog is still returned for the next end."""
    bound = liveness_bound(config, steps, count)
    sliding = None not in (config.get("compaction_interval"), config.get("overlap_size"))
    if bound is None and (sliding or config.get("token_threshold") is None):
        return [], frozenset()
    covered = covered_by_kept(prompt, summaries) | covered_by_records(steps, records)
    marks = [steps[r].compaction.end for r in records]
    if marks:
        covered |= {
            i
            for i, step in enumerate(steps)
            if step.compaction is None and step.timestamp <= max(marks)
        }
    live = reference.live_events(steps)  # the compactor's view: rewinds applied
    index = {id(s): k for k, s in enumerate(live)}
    uncovered = tuple(
        i
        for i, s in enumerate(steps)
        if s.compaction is None and id(s) in index and i not in covered
    )
    window = tuple(index[id(steps[i])] for i in uncovered)
    compactable = reference.compactable_around_waiting_calls(live, window)
    cut = _window_end(live, window) if sliding else len(window)
    if cut < len(window):
        within = set(reference.compactable_around_waiting_calls(live, window[:cut]))
        compactable = tuple(k for k in compactable if k >= cut or k in within)
    backlog = tuple(uncovered[k] for k in compactable)
    if earlier is None and not sliding:
        # The token threshold's first end, as at every later one: only what
        # was compactable at the previous end is held (there was none), since
        # a summary takes one range an end and the range after a waiting call
        # waits for the next (the bound has no slack of its own).
        earlier = frozenset()
    held = backlog if earlier is None else tuple(i for i in backlog if steps[i] in earlier)
    found = frozenset(steps[i] for i in backlog)
    if bound is None and not sliding:
        # The token trigger was quiet (or its count unknown): the compactor had
        # no range to take here, so what is held at the next end that fires is
        # what was compactable at the last end that fired, not at this one.
        return [], found & frozenset(earlier)
    if bound is None or len(held) <= bound:
        return [], found
    # Without a sliding window, what the token threshold retains: a summary
    # could take only the rest (the drivers weigh that against the latest
    # summary's size before they call a wait a stall).
    retained = None if sliding else retained_tail(config, steps, count)
    details: dict = {"ranges": _held_ranges(compactable, uncovered, set(held))}
    if retained is not None:
        details["retained"] = retained
    return [
        Violation(
            "P3",
            f"{len(held)} events could be compacted but are not (bound {bound}): "
            "compaction has stalled",
            positions=held,
            expected=f"at most {bound}",
            observed=len(held),
            details=details,
        )
    ], found


def _held_ranges(
    compactable: Sequence[int], uncovered: Sequence[int], held: Collection[int]
) -> tuple[tuple[int, ...], ...]:
    """The held positions grouped by the range a summary could take them in:
    ``compactable`` (indices into ``uncovered``, the events no summary
    covers) split wherever an uncovered event that must stay (a call that
    waits, what it keeps) lies between two of them; each group is what ADK
    weighs as one range (``_is_range_worth_compacting``)."""
    runs: list[list[int]] = []
    for k in compactable:
        if runs and runs[-1][-1] == k - 1:
            runs[-1].append(k)
        else:
            runs.append([k])
    grouped = (tuple(uncovered[k] for k in run if uncovered[k] in held) for run in runs)
    return tuple(group for group in grouped if group)


def ranges_beyond_retention(violation: Violation) -> tuple[tuple[int, ...], ...]:
    """The positions of a P3 violation's backlog that a summary could take,
    grouped by range (:func:`beyond_retention`, split where an event that
    must stay, such as a call that waits, lies between: ``details``'
    ``ranges``). A compactor that writes a summary only where it saves
    something weighs each range on its own against the latest summary
    (google-adk 2.13.0 with ``compaction-summarised-around-a-waiting-call``
    tries the prefix, then each range after a waiting call, and writes the
    first worth it): the wait is bounded by one summary's size a range, and
    the ranges by the calls that wait, which stay in the prompt anyway.
    A violation without ``ranges`` is one range."""
    kept = set(beyond_retention(violation))
    ranges = violation.details.get("ranges") or (violation.positions,)
    grouped = (tuple(p for p in group if p in kept) for group in ranges)
    return tuple(group for group in grouped if group)


def beyond_retention(violation: Violation) -> tuple[int, ...]:
    """The positions of a P3 violation's backlog that a summary could take:
    all of them, less what the token threshold retains (``details``'
    ``retained``, set without a sliding window). A driver that lets
    compaction wait until it saves something (a backlog no larger than the
    latest summary) weighs these: ADK's token path prices only the range it
    would replace, never the retained events (``_is_range_worth_compacting``
    on ``_events_to_compact_for_token_threshold``'s range, 2.13.0), and as
    new events push older ones out of the retained tail the range grows, so
    the wait is bounded by that summary's size."""
    retained = set(violation.details.get("retained", ()))
    return tuple(p for p in violation.positions if p not in retained)


def _window_end(live: Session, window: Sequence[int]) -> int:
    """How many events of ``window`` (indices into ``live``, the events no
    summary covers) ADK's sliding window reaches at an invocation's end.

    ``_run_compaction_for_sliding_window`` (2.13.0) orders invocations by
    their first event and ends its range at the last event of the last new
    one; an invocation with an event no summary covers is new. Events after
    that one's last event belong to older invocations resumed since: the
    window reaches them at the next invocation's end.
    """
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for position, step in enumerate(live):
        if step.compaction is None and step.invocation:
            first.setdefault(step.invocation, position)
            last[step.invocation] = position
    new = {live[k].invocation for k in window if live[k].invocation}
    if not new:
        return len(window)
    end = last[max(new, key=first.__getitem__)]
    return sum(1 for k in window if k <= end)
