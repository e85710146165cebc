"""P3 and P6's trigger clauses for the compactors with a trigger
(``token_based``, ``anchored``): the backlog a compaction leaves
(:func:`check_backlog`), a trigger that should have fired
(:func:`check_stall`), stale prompt counts (:func:`check_trigger_counts`) and
the summariser's rate (:func:`check_summary_rate`); :func:`check_trigger`
runs them all. Pure checkers over a :class:`~.run.JsRun`."""

from __future__ import annotations

import functools
import itertools
import json
import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ...spec.invariants import Violation
from ...spec.model import Session
from ...spec.pipeline_checks import covered_by_records, once_per_branch
from ...spec.reference import branch_sees
from . import backlog as _backlog
from .case import TRIGGERED
from .run import JsRun, as_adk_js_reads, foreign_records, summary_branch

__all__ = [
    "check_backlog",
    "check_stall",
    "check_summary_rate",
    "check_trigger",
    "check_trigger_counts",
]


def _event_tokens(event: dict[str, Any]) -> int:
    """``getEventTokens`` (``events/event.js``): the event's
    ``usageMetadata.promptTokenCount`` if it has one, else its text parts'
    characters (thoughts aside) over four, rounded up. Tokens (int)."""
    count = (event.get("usageMetadata") or {}).get("promptTokenCount")
    if count is not None:
        return int(count)
    parts = (event.get("content") or {}).get("parts") or []
    text = "".join(p.get("text") or "" for p in parts if not p.get("thought"))
    return math.ceil(len(text) / 4)


def _active_before(run: JsRun, call: dict[str, Any]) -> list[str]:
    """The ids of ``call``'s ``before`` events that the compactor's
    ``getActiveEvents`` keeps: as the driver recorded them (``active``: what
    the compactor's own getActiveEvents returned, so a fix of it is
    followed), or, for a call recorded without them, as ADK-JS 2.0.0
    computes them (``context/compaction_utils.js``): the latest
    compacted event and the raw events stamped later than its ``endTime``
    (ms); without one, all of them (duplicates kept). The anchored compactor
    has its own (``AnchoredContextCompactor.getActiveEvents``): the latest
    *scratchpad* and the other events, compacted ones included, stamped later
    than its ``endTime``. The two agree while every compacted event is the
    anchored compactor's own scratchpad; a client's record (not a
    scratchpad) is a raw event to it."""
    if call.get("active") is not None:
        return list(call["active"])
    before = list(call["before"])
    anchored = run.compactor.name == "anchored"
    flag = "isScratchpad" if anchored else "isCompacted"
    compacted = [i for i in before if run.events[i].get(flag)]
    if not compacted:
        return before
    latest = compacted[-1]
    end = float(run.events[latest].get("endTime") or 0)
    raw = [
        i
        for i in before
        if not run.events[i].get(flag) and float(run.events[i].get("timestamp") or 0) > end
    ]
    return [latest, *raw]


def _real_count(run: JsRun, k: int) -> int | None:
    """The real prompt count of model call ``k``: the ``promptTokenCount``
    (tokens) of the first event stored after the call that carries one (the
    driver stamps the model's response with the count of the contents the
    call sent, plus the request's base characters, four characters a token),
    or None (the call raised, or no response was recorded)."""
    start = len(run.calls[k]["stored_after"])
    stop = len(run.calls[k + 1]["stored_before"]) if k + 1 < len(run.calls) else len(run.ids)
    steps = run.stored.steps
    return next(
        (steps[p].prompt_tokens for p in range(start, stop) if steps[p].prompt_tokens is not None),
        None,
    )


def _added_tokens(run: JsRun, k: int) -> int:
    """What comes into the prompt between model call ``k - 1``'s compaction
    and model call ``k``, counted as ``estimatePromptTokenCount``
    (``token_based_context_compactor.js``) counts contents: text characters
    plus ``JSON.stringify`` of each function call and response, four
    characters a token, rounded up (tokens, int; 0 for ``k == 0``).

    That is the events stored in between, and the events stored before
    that the compactor's view (``active``) holds at call ``k`` but did not
    hold once call ``k - 1``'s compaction had run (``active_after``): a
    client's compacted event read by time alone becomes the latest one, and
    the events an earlier summary hid, stamped later than its range (a
    skewed clock), are in view again (``getActiveEvents``,
    ``context/compaction_utils.js``). Either way the prompt grows by them."""
    if k == 0:
        return 0
    before = run.calls[k - 1]
    start = len(before["stored_after"])
    new = run.ids[start : len(run.calls[k]["stored_before"])]
    back = []
    if before.get("active_after") is not None and run.calls[k].get("active") is not None:
        shown = set(before["active_after"])
        earlier = set(before["stored_after"])
        back = [i for i in run.calls[k]["active"] if i in earlier and i not in shown]
    chars = 0
    for event_id in [*new, *back]:
        for part in (run.events[event_id].get("content") or {}).get("parts") or []:
            chars += len(part.get("text") or "")
            for key in ("functionCall", "functionResponse"):
                if part.get(key):
                    chars += len(json.dumps(part[key], separators=(",", ":")))
    return math.ceil(chars / 4)


def _backlogs(
    run: JsRun,
) -> Iterator[tuple[int, dict[str, Any], set[int], Callable[[], tuple[list[int], int]]]]:
    """Per model call ``k``: ``(k, call, given, backlog)``: ``given``
    the stored positions of the raw events given to the summaries made up to
    that call (its own included), ``backlog`` the stored raw events that
    existed when it ran, are live (:func:`pipeline.live_positions`), were
    given to none of them, are not claimed by a compaction record ADK-JS
    did not make (what a record stands for is its writer's decision, not
    ADK-JS's backlog, as in ``pipeline.check_liveness``), and that the agent
    making the call sees (``reference.branch_sees``: its compactor may not
    summarise a sibling branch's events, P5), with its bound
    (:func:`.backlog.backlog_bound`), both given by calling ``backlog()``:
    worked out only for the calls a form of P3 asks about (the stall form
    those without a summary whose counts are over the threshold), most of
    a run's checking time otherwise."""
    from ...spec.pipeline_checks import live_positions

    live = live_positions(run.stored)
    summaries = run.summaries()
    given: set[int] = set()
    number = 0
    for k, call in enumerate(run.calls):
        now: set[int] = set()
        for _ in call["summaries"]:
            now |= set(summaries[number][1])
            number += 1
        given |= now
        yield k, call, set(given), functools.partial(_backlog_at, run, live, call, set(given), now)


def _backlog_at(
    run: JsRun, live: set[int], call: dict[str, Any], given: set[int], now: set[int]
) -> tuple[list[int], int]:
    """The backlog of model ``call`` and its bound, as :func:`_backlogs` says
    (``live``: the run's live positions; ``given``: the positions given to
    the summaries made up to the call; ``now``: those of its own)."""
    steps = run.stored.steps
    length = len(call["stored_before"])
    records = foreign_records(run, length)
    claimed = covered_by_records(as_adk_js_reads(Session(steps[:length]), records), records)
    uncovered = [
        p
        for p in range(length)
        if steps[p].compaction is None
        and p in live
        and p not in given
        and p not in claimed
        and branch_sees(call.get("branch"), steps[p].branch)
    ]
    backlog = _backlog.compactable(Session(steps[:length]), uncovered)
    if now:
        backlog = _backlog.before_a_later_range(backlog, uncovered, max(now))
    return backlog, _backlog.backlog_bound(run.compactor, [steps[p] for p in backlog])


def check_backlog(run: JsRun) -> list[Violation]:
    """P3 (liveness) for ``token_based`` and ``anchored``: at every model call
    where the trigger fired (a summary was made), the stored raw events that
    existed when it ran, are live (:func:`pipeline.live_positions`) and were
    given to no summary made so far number at most :func:`.backlog.backlog_bound`.
    Counted by identity, not by timestamp: an event the time filter hides
    without a summary having been given it counts, since no later compaction
    can reach it. Returns P3 violations (``positions``: the backlog;
    ``details["model_call"]``: the call's index in ``run.calls``)."""
    if run.compactor.name not in TRIGGERED:
        return []
    out = []
    for k, call, _, backlog_at in _backlogs(run):
        if not call["summaries"]:
            continue
        backlog, bound = backlog_at()
        if len(backlog) > bound:
            out.append(
                Violation(
                    "P3",
                    f"after the summary of model call {k}, {len(backlog)} live raw events are "
                    f"outside every summary; eventRetentionSize "
                    f"{run.compactor.options.get('eventRetentionSize', 0)} allows {bound}",
                    positions=tuple(backlog),
                    expected=f"at most {bound}",
                    observed=len(backlog),
                    details={"cause": "backlog", "model_call": k, "bound": bound},
                )
            )
    return out


def _newest_count(run: JsRun, k: int, given: set[int]) -> int | None:
    """Where the newest real prompt count before model call ``k`` is: the
    stored position of the newest raw event before the call that carries a
    ``promptTokenCount`` and is not in ``given`` (the stored positions some
    summary was given). That is what ``latestPromptTokenCount``
    (``token_based_context_compactor.js``) reads when the time filter hides
    nothing else, and a lower bound of the anchored trigger's sum. A count
    from an event a summary replaced, or one stored before the latest
    summary the calling agent sees (it measured a prompt that summary has
    since compacted), is stale (P6's second clause), so it is not the
    trigger's input. None if no such event carries a count: ADK-JS then
    estimates from the contents, without the system instruction and tool
    declarations, and nothing says the prompt was over the threshold. A
    count carried by an event that a compaction record ADK-JS did not make
    claims (ADK-JS reads a record as hiding every event stamped up to its
    end, stored before or after it) is stale too: like a summary's, the
    record replaced the prompt it measured."""
    length = len(run.calls[k]["stored_before"])
    steps = run.stored.steps[:length]
    branch = run.calls[k].get("branch")
    records = foreign_records(run, length)
    claimed = covered_by_records(as_adk_js_reads(Session(steps), records), records)
    latest = max(
        (
            p
            for p, s in enumerate(steps)
            if s.compaction is not None and branch_sees(branch, s.branch)
        ),
        default=-1,
    )
    return next(
        (
            p
            for p, s in reversed(list(enumerate(steps)))
            if p > latest
            and s.compaction is None
            and s.prompt_tokens is not None
            and p not in given
            and p not in claimed
        ),
        None,
    )


def check_stall(run: JsRun) -> list[Violation]:
    """P3's stall form for ``token_based`` and ``anchored``: a model call where
    no summary was made although the trigger's newest count
    (:func:`_newest_count`) and the prompt the call then sent
    (:func:`_real_count`) were both above ``tokenThreshold``. The only ways
    ``shouldCompact`` (``context/token_based_context_compactor.js``,
    ``context/anchored_context_compactor.js``) may then decline are no more
    than ``eventRetentionSize`` raw active events, or ``calculateRetainStartIndex``
    stepping back to 0; both leave at most :func:`.backlog.backlog_bound` live raw
    events outside every summary. More than that is a stall: the prompt
    stays over the threshold and nothing is summarised. Counted by identity,
    as :func:`check_backlog` counts. Returns P3 violations (``positions``: the
    backlog; ``details``: ``cause`` ``"stall"``, ``model_call``, ``bound``)."""
    threshold = run.compactor.options.get("tokenThreshold")
    if run.compactor.name not in TRIGGERED or threshold is None:
        return []
    steps = run.stored.steps
    out = []
    for k, call, given, backlog_at in _backlogs(run):
        if call["summaries"] or (run.exception and run.exception.get("action") == call["action"]):
            continue
        at, sent = _newest_count(run, k, given), _real_count(run, k)
        newest = steps[at].prompt_tokens if at is not None else None
        if newest is None or sent is None or newest <= threshold or sent <= threshold:
            continue
        backlog, bound = backlog_at()
        if len(backlog) > bound:
            out.append(
                Violation(
                    "P3",
                    f"model call {k} made no summary though the newest prompt count {newest} "
                    f"and the prompt it sent ({sent} tokens) are above tokenThreshold "
                    f"{threshold}; {len(backlog)} live raw events are outside every summary, "
                    f"eventRetentionSize {run.compactor.options.get('eventRetentionSize', 0)} "
                    f"allows {bound} (a stall)",
                    positions=tuple(backlog),
                    expected=f"a summary, or at most {bound} events outside every summary",
                    observed=len(backlog),
                    details={"cause": "stall", "model_call": k, "bound": bound},
                )
            )
    return out


def _stale_counts(run: JsRun, active: Sequence[str]) -> list[str]:
    """The ids among ``active`` (as :func:`_active_before` gives them) of the
    raw events that carry a ``usageMetadata.promptTokenCount`` and were
    stored before the latest summary among them: counts a summary made stale
    (each measured a prompt that held events since summarised). Empty
    without a summary."""
    where = {event_id: p for p, event_id in enumerate(run.ids)}
    compacted = [i for i in active if run.events[i].get("isCompacted")]
    if not compacted:
        return []
    # the newest of them (a fix may keep one per branch, newest first)
    latest = max(where.get(i, -1) for i in compacted)
    measured = _measured_prompts(run)
    now = set(active)
    return [
        i
        for i in active
        if i not in compacted
        and where.get(i, -1) < latest
        and (run.events[i].get("usageMetadata") or {}).get("promptTokenCount") is not None
        # a count whose prompt is known is stale only when an event it
        # measured is no longer active (a summary has hidden it since); a
        # client's record that hides none of it (its range elsewhere, say
        # on a skewed clock) leaves the count true
        and (i not in measured or not measured[i] <= now)
    ]


def _measured_prompts(run: JsRun) -> dict[str, frozenset[str]]:
    """For each event of ``run`` that carries the prompt count of a model
    call (the first event with a count stored after the call, as
    :func:`_real_count` reads it): the ids of the active events of that call
    (:func:`_active_before`), the events its count measured."""
    out: dict[str, frozenset[str]] = {}
    for k, call in enumerate(run.calls):
        start = len(call["stored_after"])
        stop = len(run.calls[k + 1]["stored_before"]) if k + 1 < len(run.calls) else len(run.ids)
        for p in range(start, min(stop, len(run.ids))):
            if run.stored.steps[p].prompt_tokens is not None:
                out[run.ids[p]] = frozenset(_active_before(run, call))
                break
    return out


def _summed_tokens(run: JsRun, active: Sequence[str], without: Sequence[str] = ()) -> int:
    """What ``AnchoredContextCompactor.shouldCompact`` compares with
    ``tokenThreshold``: the sum of ``getEventTokens`` (:func:`_event_tokens`)
    over ``active`` (tokens), the events of ``without`` counted as if they
    carried no prompt count (``getEventTokens`` then estimates from text)."""
    return sum(
        _event_tokens({**run.events[i], "usageMetadata": None})
        if i in without
        else _event_tokens(run.events[i])
        for i in active
    )


def check_trigger_counts(run: JsRun) -> list[Violation]:
    """P6 (second clause) for ``token_based`` and ``anchored``: at every model
    call where the trigger fired, it decides the same without the prompt
    counts a summary made stale.

    Stale counts: the ``usageMetadata.promptTokenCount`` of active events
    (:func:`_active_before`) stored before the latest summary among them (a
    retained model response: its count measured a prompt that held events
    since summarised). The trigger as ADK-JS states it:
    ``TokenBasedContextCompactor.shouldCompact`` reads the newest count among
    the active events (``latestPromptTokenCount``), else an estimate of the
    contents; ``AnchoredContextCompactor.shouldCompact`` sums
    ``getEventTokens`` (:func:`_event_tokens`) over the active events. The
    decision without the stale counts is that of the same rule with them
    removed (``getEventTokens`` then estimates from the text); for
    ``token_based`` with no fresh count left (ADK-JS would estimate from
    getContents) the clause is not judged. Returns P6 violations with
    ``details["cause"] == "stale count"``."""
    if run.compactor.name not in TRIGGERED:
        return []
    threshold = run.compactor.options.get("tokenThreshold")
    if threshold is None:
        return []
    where = {event_id: p for p, event_id in enumerate(run.ids)}
    out = []
    for k, call in enumerate(run.calls):
        if not call["summaries"]:
            continue
        active = _active_before(run, call)
        stale = _stale_counts(run, active)
        if not stale:
            continue
        if run.compactor.name == "token_based":
            fresh = [
                _event_tokens(run.events[i])
                for i in active
                if i not in stale
                and (run.events[i].get("usageMetadata") or {}).get("promptTokenCount") is not None
            ]
            if not fresh:
                continue
            without = fresh[-1]
        else:
            without = _summed_tokens(run, active, stale)
        if without <= threshold:
            positions = tuple(sorted(where[i] for i in stale if i in where))
            out.append(
                Violation(
                    "P6",
                    f"the {run.compactor.name} trigger fired at model call {k} because of prompt "
                    f"counts that a summary made stale (steps {list(positions)}); without them "
                    f"the count is {without}, not above the threshold {threshold} (wasted work)",
                    positions=positions,
                    expected="the same decision without the stale counts",
                    observed="fires",
                    details={"cause": "stale count", "model_call": k, "without": without},
                )
            )
    return out


def check_summary_rate(run: JsRun) -> list[Violation]:
    """P6 (third clause) for ``token_based`` and ``anchored``: the summariser
    is not called more often than the configuration implies.

    The bound: at most one summary per model call and branch (the request
    processor runs the first compactor whose ``shouldCompact`` holds, once;
    a compaction that takes events of several branches makes one summary per
    branch, :func:`summary_branch`, since a summary may hold only events
    every agent reading it can see, P5). The trigger
    (``tokenThreshold`` T) needs a count above T, and with turns of bounded
    size the prompt grows by at most S tokens per model call, S the largest
    rise of the real prompt count (:func:`_real_count`) between consecutive
    model calls where the later made no summary, or of what comes into view
    before each model call of the stretch (:func:`_added_tokens`: the events
    stored since, and those a client's record brings back), whichever is
    larger. After a summary whose model
    call sent P < T tokens, the prompt j calls later is at most P + j * S
    before compaction, so whatever the trigger measures (the newest count,
    an estimate, or the prompt itself) it cannot honestly exceed T before
    j > (T - P) / S: the next summary comes no sooner than
    floor((T - P) / S) + 1 model calls later (never, if S <= 0). A summary
    on every turn while the prompt stays below T is not allowed. When P >= T the
    configuration implies no tighter bound than P3's (what is left is the
    summary and the retained events :func:`.backlog.backlog_bound` bounds), and the
    clause does not apply to that gap. Returns P6 violations with
    ``details["cause"]`` ``"bound"``."""
    if run.compactor.name not in TRIGGERED:
        return []
    threshold = run.compactor.options.get("tokenThreshold")
    if threshold is None:
        return []
    out = []
    for k, call in enumerate(run.calls):
        branches = [summary_branch(run, made) for made in call["summaries"]]
        for v in once_per_branch(branches, f"model call {k}"):
            v.details.update(cause="bound", model_call=k)
            out.append(v)
    counts = [_real_count(run, k) for k in range(len(run.calls))]
    rises = [
        b - a
        for k, (a, b) in enumerate(itertools.pairwise(counts))
        if a is not None and b is not None and not run.calls[k + 1]["summaries"]
    ]
    made = [k for k, call in enumerate(run.calls) if call["summaries"]]
    for k, j in itertools.pairwise(made):
        sent = counts[k]
        if sent is None or sent >= threshold:
            continue
        rise = max([*rises, *(_added_tokens(run, n) for n in range(k + 1, j + 1))])
        gap = None if rise <= 0 else (threshold - sent) // rise + 1
        if gap is None or j - k < gap:
            out.append(
                Violation(
                    "P6",
                    f"a summary at model call {j}, {j - k} calls after the one at {k} whose "
                    f"prompt was {sent} tokens, below the threshold {threshold}; with turns "
                    f"adding at most {rise} tokens the next may come no sooner than "
                    f"{'never' if gap is None else f'{gap} calls later'} (wasted work)",
                    expected=f"a gap of at least {gap}" if gap is not None else "no summary",
                    observed=j - k,
                    details={"cause": "bound", "model_call": j, "after": k},
                )
            )
    return out


def check_trigger(run: JsRun) -> list[Violation]:
    """P3 (:func:`check_backlog` after a summary, :func:`check_stall` where
    none was made) and P6's second and third clauses
    (:func:`check_trigger_counts`, :func:`check_summary_rate`)."""
    return (
        check_backlog(run) + check_stall(run) + check_trigger_counts(run) + check_summary_rate(run)
    )
