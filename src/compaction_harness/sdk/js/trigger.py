"""P3 and P6's trigger clauses for the compactors with a trigger
(``token_based``, ``anchored``): the backlog a compaction leaves
(:func:`check_backlog`), a trigger that should have fired
(:func:`check_stall`), stale prompt counts (:func:`check_trigger_counts`) and
the summariser's rate (:func:`check_summary_rate`); :func:`check_trigger`
runs them all. Pure checkers over a :class:`~.run.JsRun`."""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterator, Sequence
from typing import Any

from ...spec.invariants import Violation
from ...spec.model import REQUEST_CONFIRMATION_CALL, REQUEST_CREDENTIAL_CALL, Session, Step
from ...spec.pipeline_checks import covered_by_records, once_per_branch
from ...spec.reference import (
    SYNTHETIC_HITL_CALL_NAMES,
    branch_sees,
    compactable_around_waiting_calls,
    preceding_call,
)
from ...spec.reference import live_events as reference_live_events
from .case import TRIGGERED, JsCompactor
from .run import JsRun, as_adk_js_reads, foreign_records, summary_branch

__all__ = [
    "backlog_bound",
    "check_backlog",
    "check_stall",
    "check_summary_rate",
    "check_trigger",
    "check_trigger_counts",
]


def _waiting_calls(steps: Sequence[Step]) -> set[tuple[int, str]]:
    """(position, call id) of each long-running call of ``steps`` that no
    later event answers; a response answers the latest call before it with
    its id and tool name."""
    answered: set[tuple[int, str, str]] = set()
    for k, step in enumerate(steps):
        for response in step.responses:
            made = next(
                (
                    q
                    for q in range(k - 1, -1, -1)
                    if (response.id, response.name) in {(c.id, c.name) for c in steps[q].calls}
                ),
                None,
            )
            if made is not None:
                answered.add((made, response.id, response.name))
    return {
        (k, call.id)
        for k, step in enumerate(steps)
        for call in step.calls
        if call.id in step.long_running and (k, call.id, call.name) not in answered
    }


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


def backlog_bound(compactor: JsCompactor, backlog: Sequence[Step]) -> int:
    """P3's bound on the live raw events outside every summary right after a
    compaction of a compactor with a trigger (events, int).

    The compactor retains the last ``eventRetentionSize`` (R) raw events and
    summarises the rest, except what the specification keeps with them: a
    call whose response is among the retained events stays with it (a
    summary must not split the pair, P1), and so does every event between
    that call and the retained ones, since ADK-JS summarises a prefix
    (``calculateRetainStartIndex``, ``context/compaction_utils.js``, moves the
    start back). At least one event is allowed for that step back (a
    response retained right after its call), and one more per event with
    both calls and responses (each further step back of
    ``calculateRetainStartIndex`` needs one). A call that waits (a
    long-running call, or a confirmation request, with no response after it
    yet) is not compacted, so each event before the retained part that holds
    one is allowed too; it earns nothing more: it does not shield what comes
    after it (P3, DESIGN.md). A larger backlog means compaction has stalled."""
    retention = max(0, int(compactor.options.get("eventRetentionSize", 0)))
    both = sum(1 for s in backlog if s.calls and s.responses)
    tail = max(0, len(backlog) - retention)
    # Each response among the events kept holds the calls it closes (by id,
    # as the definitions close an obligation: every call with its id before
    # it that no response in between answers; with ids numbered per turn an
    # older turn's unanswered call_0 is one of them) and what lies between:
    # kept too, so their own responses hold their calls in turn (a second
    # answer to a call whose first answer comes earlier reaches back to it).
    # With ids numbered per turn, the call a response answers is the latest
    # with its id and tool name, which may come before another tool's call
    # with the id: that call is held too.
    start = tail
    while True:
        reach = min(
            (
                made
                for j in range(start, len(backlog))
                for r in backlog[j].responses
                for made in (
                    *_calls_closed_by(backlog, j, r.id),
                    *_calls_closed_by(backlog, j, r.id, r.name),
                    _preceding_call_named(backlog, j, r.id, r.name),
                )
                if made is not None
            ),
            default=start,
        )
        if reach >= start:
            break
        start = reach
    held = {k for k, _ in _waiting_calls(backlog)} | _pending_requests(backlog)
    waiting = len({k for k in held if k < start})
    return retention + max(1, tail - start) + both + waiting


def _pending_requests(steps: Sequence[Step]) -> set[int]:
    """Indexes of the events of each tool confirmation or credential request
    of ``steps`` that no later event answers: the event that holds the
    request (the tool's placeholder response) and the call it asks about.
    With the synthetic call (a waiting long-running call, see
    :func:`_waiting_calls`) they are one request that waits for a person, and
    a compactor that keeps it keeps all three (google-adk keeps such a request
    while its invocation is the newest, the definitions' protection; ADK-JS's
    fix keeps it until it is answered). Like a waiting call, it does not
    shield what comes after it.

    Answered means: the person answered it, a later response to the request's
    synthetic call (its own ``adk-`` id, in the event that holds the request
    or an event of its own between the asked-about call and it,
    :func:`_synthetic_calls`), or the tool's result: a later response with
    the request's key and the asked-about tool's name. The key is the
    asked-about call's id, which with ids numbered per turn another tool's
    call can carry (its result answers that call, not this request)."""
    out: set[int] = set()
    for k, step in enumerate(steps):
        for key in (*step.confirmations, *step.auth_requests):
            made = preceding_call(steps, k + 1, key)
            tool = next((r.name for r in step.responses if r.id == key), None)
            synthetic = _synthetic_calls(steps, k, made)
            if any(
                synthetic & set(later.response_ids)
                or any(r.id == key and r.name == tool for r in later.responses)
                for later in steps[k + 1 :]
            ):
                continue
            out.add(k)
            if made is not None:
                out.add(made)
    return out


def _synthetic_calls(steps: Sequence[Step], k: int, made: int | None) -> set[str]:
    """The ids of the synthetic calls (``adk_request_confirmation``,
    ``adk_request_credential``) that ask about the request held at ``k``: in
    that event, or stored between the asked-about call (``made``) and it in
    the same invocation (a credential request's synthetic call is an event of
    its own, stored before the tool's placeholder response)."""
    first = k if made is None else made + 1
    return {
        c.id
        for step in steps[first : k + 1]
        if step.invocation == steps[k].invocation
        for c in step.calls
        if c.name in SYNTHETIC_HITL_CALL_NAMES
    }


def _calls_closed_by(
    steps: Sequence[Step], position: int, call_id: str, name: str | None = None
) -> list[int]:
    """Indexes of the events before ``position`` whose call with ``call_id``
    a response at ``position`` holds: the latest such call (a later answer,
    however late, is that call's), and every earlier one that no response
    with the id answers before ``position`` (the open calls it closes, as the
    definitions close obligations by id). With ``name``, calls and responses
    count only with that tool name too: with ids numbered per turn, two calls
    of one tool with one id open at once cannot be told apart by their
    responses, and a compactor that pairs by id and tool name (ADK-JS's
    fixes) keeps both with a response it keeps, though another tool's
    response with the id came between."""
    out: list[int] = []
    answered = False
    for i in range(position - 1, -1, -1):
        if any(c.id == call_id and name in (None, c.name) for c in steps[i].calls) and (
            not out or not answered
        ):
            out.append(i)
        if any(r.id == call_id and name in (None, r.name) for r in steps[i].responses):
            answered = True
    return out


def _backlogs(run: JsRun) -> Iterator[tuple[int, dict[str, Any], set[int], list[int], int]]:
    """Per model call ``k``: ``(k, call, given, backlog, bound)``: ``given``
    the stored positions of the raw events given to the summaries made up to
    that call (its own included), ``backlog`` the stored raw events that
    existed when it ran, are live (:func:`pipeline.live_positions`), were
    given to none of them, are not claimed by a compaction record ADK-JS
    did not make (what a record stands for is its writer's decision, not
    ADK-JS's backlog, as in ``pipeline.check_liveness``), and that the agent
    making the call sees (``reference.branch_sees``: its compactor may not
    summarise a sibling branch's events, P5), and ``bound``
    :func:`backlog_bound` of that backlog. P3's two forms read it."""
    from ...spec.pipeline_checks import live_positions

    steps = run.stored.steps
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
        backlog = _compactable(Session(steps[:length]), uncovered)
        if now:
            backlog = _before_a_later_range(backlog, uncovered, max(now))
        yield (
            k,
            call,
            set(given),
            backlog,
            backlog_bound(run.compactor, [steps[p] for p in backlog]),
        )


def _before_a_later_range(backlog: list[int], uncovered: Sequence[int], last: int) -> list[int]:
    """The part of ``backlog`` (stored positions) that a compaction whose
    summaries were given events up to ``last`` had to take: around the calls
    that wait, a compactor summarises one range at a time (the first that
    holds something new, as google-adk's compaction-summarised-around-a-
    waiting-call and ADK-JS's calls-retained-with-their-answers do), so a
    range after the one it took, beyond an event that stays (an event of
    ``uncovered`` outside the backlog: a call that waits), waits for the next
    compaction. Nothing is starved: new events come after every range, and a
    compaction that then takes nothing is the stall form's
    (:func:`check_stall`), one that takes nothing new P6's."""
    return [
        p
        for p in backlog
        if p < last or not any(last < q < p and q not in backlog for q in uncovered)
    ]


def _compactable(session: Session, uncovered: Sequence[int]) -> list[int]:
    """The positions among ``uncovered`` that the definitions allow a
    compactor to summarise (:func:`reference.compactable_around_waiting_calls`,
    the backlog google-adk's P3 holds too): a call that waits is not
    compacted, nor an event a call pair spans that no range can take
    without splitting it (the call stays in view, its later answer too).
    Nor, as :func:`backlog_bound` allows for retained answers, the call of
    an answer that stays for one of those reasons, with the events between
    them: a compactor keeps a call with an answer it keeps (and no range can
    start between them while the call is answered after its start)."""
    live = reference_live_events(session)
    index = {id(step): k for k, step in enumerate(live)}
    window = [p for p in uncovered if id(session[p]) in index]
    # ADK-JS's fix keeps an unanswered confirmation or credential request
    # until it is answered (backlog_bound allows it, _pending_requests), also
    # where the definitions call it dead: what it forces to stay stays too.
    kept = frozenset(_pending_requests([session[p] for p in window]))
    chosen = {
        window[k]
        for k in compactable_around_waiting_calls(
            live, tuple(index[id(session[p])] for p in window), kept
        )
    }
    held = [p for p in window if p not in chosen]
    # ADK-JS shows summaries before the events they leave, and reads the last
    # event in view as the response the model call answers when it is one
    # (getContents's latest-response rearrangement drops what lies between
    # it and its call). A range that ends at the newest event and would leave
    # such a response last in view, not right after its own call, breaks the
    # prompt (P2, P4) if it is taken now: it can be taken once one more event
    # is stored after it, so it waits, boundedly, and is no stall.
    if chosen and window:
        start = window[-1]
        while start - 1 in chosen:
            start -= 1
        if start in chosen:
            in_view = [
                q
                for q in uncovered
                if q < start and q not in chosen and not _request_event(session[q])
            ]
            if in_view and _answers_away_from_its_call(session, in_view):
                held_back = set(range(start, window[-1] + 1)) & chosen
                chosen -= held_back
                held.extend(sorted(held_back))
    while held:
        p = held.pop()
        # A call that stays keeps every answer to it (a range may not hold an
        # answer to a call that stays: the reference's third clause), and so
        # what lies between (below): no range starts inside a pair.
        for call in session[p].calls:
            again = _later_answers(session.steps, p, call, chosen)
            chosen -= again
            held.extend(again)
        for response in session[p].responses:
            # With ids numbered per turn, the latest call with the id may be
            # another tool's: the call this answer answers is the latest with
            # its id and tool name (ADK-JS's fixes pair so), and a compactor
            # that pairs by id alone keeps the latest with the id. Both stay.
            for made in {
                preceding_call(session.steps, p, response.id),
                _preceding_call_named(session.steps, p, response.id, response.name),
            } - {None}:
                between = {q for q in chosen if made <= q < p}
                chosen -= between
                held.extend(between)
    return sorted(chosen)


def _later_answers(steps: Sequence[Step], position: int, call: Any, among: set[int]) -> set[int]:
    """The positions of ``among`` after ``position`` with a response that
    answers ``call`` (a call made at ``position``): the latest call with the
    response's id before it, or the latest with its id and tool name (with
    ids numbered per turn, a later call of another tool with the id does not
    open it again for ADK-JS's fixes, which pair by id and tool name)."""
    return {
        q
        for q in among
        if q > position
        and any(
            r.id == call.id
            and position
            in (
                preceding_call(steps, q, r.id),
                _preceding_call_named(steps, q, r.id, r.name),
            )
            for r in steps[q].responses
        )
    }


def _request_event(step: Step) -> bool:
    """Whether ADK-JS's getContents leaves ``step`` out of the contents: a
    synthetic request call (confirmation, credential) or its answer."""
    names = {c.name for c in step.calls} | {r.name for r in step.responses}
    return bool(names & {REQUEST_CONFIRMATION_CALL, REQUEST_CREDENTIAL_CALL})


def _answers_away_from_its_call(session: Session, in_view: Sequence[int]) -> bool:
    """Whether the last of the stored positions ``in_view`` holds function
    responses and the one before it does not hold a call of each (by id and
    tool name): the latest-response rearrangement would drop what lies
    between that response and its call."""
    last = session[in_view[-1]]
    if not last.responses:
        return False
    before = session[in_view[-2]] if len(in_view) > 1 else None
    made = {(c.id, c.name) for c in before.calls} if before is not None else set()
    return not all((r.id, r.name) in made for r in last.responses)


def _preceding_call_named(
    steps: Sequence[Step], position: int, call_id: str, name: str
) -> int | None:
    """The index of the latest step before ``position`` with a call of tool
    ``name`` and id ``call_id``, or None (:func:`reference.preceding_call`;
    a name of its own, so that a test can take the tool-name reading out)."""
    return preceding_call(steps, position, call_id, name)


def check_backlog(run: JsRun) -> list[Violation]:
    """P3 (liveness) for ``token_based`` and ``anchored``: at every model call
    where the trigger fired (a summary was made), the stored raw events that
    existed when it ran, are live (:func:`pipeline.live_positions`) and were
    given to no summary made so far number at most :func:`backlog_bound`.
    Counted by identity, not by timestamp: an event the time filter hides
    without a summary having been given it counts, since no later compaction
    can reach it. Returns P3 violations (``positions``: the backlog;
    ``details["model_call"]``: the call's index in ``run.calls``)."""
    if run.compactor.name not in TRIGGERED:
        return []
    out = []
    for k, call, _, backlog, bound in _backlogs(run):
        if call["summaries"] and len(backlog) > bound:
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
    stepping back to 0; both leave at most :func:`backlog_bound` live raw
    events outside every summary. More than that is a stall: the prompt
    stays over the threshold and nothing is summarised. Counted by identity,
    as :func:`check_backlog` counts. Returns P3 violations (``positions``: the
    backlog; ``details``: ``cause`` ``"stall"``, ``model_call``, ``bound``)."""
    threshold = run.compactor.options.get("tokenThreshold")
    if run.compactor.name not in TRIGGERED or threshold is None:
        return []
    steps = run.stored.steps
    out = []
    for k, call, given, backlog, bound in _backlogs(run):
        if call["summaries"] or (run.exception and run.exception.get("action") == call["action"]):
            continue
        at, sent = _newest_count(run, k, given), _real_count(run, k)
        newest = steps[at].prompt_tokens if at is not None else None
        if newest is None or sent is None or newest <= threshold or sent <= threshold:
            continue
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
    summary and the retained events :func:`backlog_bound` bounds), and the
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
