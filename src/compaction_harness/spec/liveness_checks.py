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
from .pipeline_checks import Prompt, Summaries, covered_by_kept, covered_by_records

__all__ = ["check_liveness", "liveness_bound"]


def liveness_bound(config: Mapping[str, int | None], steps: Session) -> int | None:
    """P3's bound on the compactable backlog at an invocation's end, or None
    without a sliding window.

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
        return None
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


def check_liveness(
    steps: Session,
    prompt: Prompt,
    summaries: Summaries,
    config: Mapping[str, int | None],
    records: Sequence[int] = (),
    earlier: Collection[Step] | None = None,
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
    compactable both in the whole view and within the window."""
    bound = liveness_bound(config, steps)
    if bound is None:
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
    cut = _window_end(live, window)
    if cut < len(window):
        within = set(reference.compactable_around_waiting_calls(live, window[:cut]))
        compactable = tuple(k for k in compactable if k >= cut or k in within)
    backlog = tuple(uncovered[k] for k in compactable)
    held = backlog if earlier is None else tuple(i for i in backlog if steps[i] in earlier)
    found = frozenset(steps[i] for i in backlog)
    if len(held) <= bound:
        return [], found
    return [
        Violation(
            "P3",
            f"{len(held)} events could be compacted but are not (bound {bound}): "
            "compaction has stalled",
            positions=held,
            expected=f"at most {bound}",
            observed=len(held),
        )
    ], found


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
