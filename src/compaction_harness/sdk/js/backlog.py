"""What ADK-JS's compactors with a trigger may summarise, and the backlog P3
counts: :func:`compactable` (the events the definitions allow a compactor
to summarise around the calls that wait, with ADK-JS's pairing of calls and
responses by id and tool name beside the definitions' pairing by id),
:func:`before_a_later_range` (one range at a time) and :func:`backlog_bound`
(the backlog a compaction may leave). Pure functions over the session
model; :mod:`.trigger` reads them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...spec.model import REQUEST_CONFIRMATION_CALL, REQUEST_CREDENTIAL_CALL, Session, Step
from ...spec.reference import (
    SYNTHETIC_HITL_CALL_NAMES,
    compactable_around_waiting_calls,
    newest_invocation,
    preceding_call,
)
from ...spec.reference import live_events as reference_live_events
from .case import JsCompactor

__all__ = ["backlog_bound", "before_a_later_range", "compactable", "waiting_calls"]


def waiting_calls(steps: Sequence[Step]) -> set[tuple[int, str]]:
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
                    _preceding_request(backlog, j, r.id),
                )
                if made is not None
            ),
            default=start,
        )
        if reach >= start:
            break
        start = reach
    held = {k for k, _ in waiting_calls(backlog)} | _pending_requests(backlog)
    waiting = len({k for k in held if k < start})
    return retention + max(1, tail - start) + both + waiting


def _preceding_request(steps: Sequence[Step], position: int, key: str) -> int | None:
    """The index of the latest step before ``position`` that holds a tool
    confirmation or credential request with ``key``, or None: a response with
    the key closes that obligation (the definitions), and a compactor that
    keeps the response keeps the request with it, as it keeps a call."""
    return next(
        (
            k
            for k in range(position - 1, -1, -1)
            if key in steps[k].confirmations or key in steps[k].auth_requests
        ),
        None,
    )


def _pending_requests(steps: Sequence[Step]) -> set[int]:
    """Indexes of the events of each tool confirmation or credential request
    of ``steps`` that no later event answers: the event that holds the
    request (the tool's placeholder response) and the call it asks about.
    With the synthetic call (a waiting long-running call, see
    :func:`waiting_calls`) they are one request that waits for a person, and
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
    response with the id came between. Such a pairing also counts every
    response up to the next call with the id and tool name for each call of
    one tool with one id open at once (``calculateRetainStartIndex`` as
    calls-retained-with-their-answers fixes it: a response after both counts
    for both): with ``name``, an earlier call is held when no response with
    its id and tool name comes between it and the next such call, even when
    one comes between that call and ``position``."""
    out: list[int] = []
    answered = False
    for i in range(position - 1, -1, -1):
        if any(c.id == call_id and name in (None, c.name) for c in steps[i].calls) and (
            not out or not answered
        ):
            out.append(i)
        if any(r.id == call_id and name in (None, r.name) for r in steps[i].responses) and (
            name is None or out
        ):
            answered = True
    return out


def before_a_later_range(backlog: list[int], uncovered: Sequence[int], last: int) -> list[int]:
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


def compactable(session: Session, uncovered: Sequence[int]) -> list[int]:
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
    # By id another tool's response closes a call (ids numbered per turn);
    # paired by id and tool name, as ADK-JS's fixes pair, the call may still
    # wait: it stays, and so does what it keeps.
    waits = {p for p in chosen if _waits_by_tool(session, p)}
    chosen -= waits
    held.extend(sorted(waits))
    # ADK-JS shows summaries before the events they leave, and reads the last
    # event in view as the response the model call answers when it is one
    # (getContents's latest-response rearrangement drops what lies between
    # it and its call). A range that ends at the newest event and would leave
    # such a response last in view, not right after its own call, breaks the
    # prompt (P2, P4) if it is taken now: it can be taken once one more event
    # is stored after it, so it waits, boundedly, and is no stall. Asked once
    # what stays is known, and again after what waits holds more.
    while True:
        _hold(session, chosen, held)
        if not chosen or not window:
            break
        start = window[-1]
        while start - 1 in chosen:
            start -= 1
        if start not in chosen:
            break
        in_view = [
            q for q in uncovered if q < start and q not in chosen and not _request_event(session[q])
        ]
        if not (in_view and _answers_away_from_its_call(session, in_view)):
            break
        held_back = set(range(start, window[-1] + 1)) & chosen
        chosen -= held_back
        held.extend(sorted(held_back))
    return sorted(chosen)


def _hold(session: Session, chosen: set[int], held: list[int]) -> None:
    """Take out of ``chosen`` (stored positions, changed in place) what the
    events of ``held`` (emptied) keep in view, and what those keep in turn."""
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
            # that pairs by id alone keeps the latest with the id. Both stay,
            # and with the latter every call of that tool with the id open at
            # once with it (such a pairing cannot tell them apart).
            for made in {
                preceding_call(session.steps, p, response.id),
                _preceding_call_named(session.steps, p, response.id, response.name),
                *_open_at_once(session.steps, p, response.id, response.name),
            } - {None}:
                between = {q for q in chosen if made <= q < p}
                chosen -= between
                held.extend(between)


def _waits_by_tool(session: Session, position: int) -> bool:
    """Whether a call of the event at ``position`` has no later response with
    its id and tool name and waits for one: long-running, or made in the
    newest invocation (``calculateRetainStartIndex``'s reading, as
    calls-retained-with-their-answers fixes it)."""
    newest = newest_invocation(session)
    step = session[position]
    return any(
        (call.id in step.long_running or step.invocation == newest)
        and not any(
            (r.id, r.name) == (call.id, call.name)
            for later in session.steps[position + 1 :]
            for r in later.responses
        )
        for call in step.calls
    )


def _later_answers(steps: Sequence[Step], position: int, call: Any, among: set[int]) -> set[int]:
    """The positions of ``among`` after ``position`` with a response that
    answers ``call`` (a call made at ``position``): the latest call with the
    response's id before it, or the latest with its id and tool name (with
    ids numbered per turn, a later call of another tool with the id does not
    open it again for ADK-JS's fixes, which pair by id and tool name); and
    the response that closes the call's obligation, the first with its id
    (the definitions) or with its id and tool name (ADK-JS's fixes), even
    after the same call is made again: two calls open at once with one id
    cannot be told apart, so their first answer answers both."""
    closers = _first_answers(steps, position, call)
    return {
        q
        for q in among
        if q > position
        and (
            q in closers
            or any(
                r.id == call.id
                and position
                in (
                    preceding_call(steps, q, r.id),
                    _preceding_call_named(steps, q, r.id, r.name),
                )
                for r in steps[q].responses
            )
        )
    }


def _first_answers(steps: Sequence[Step], position: int, call: Any) -> set[int]:
    """The positions of the responses that close ``call`` (made at
    ``position``): the first later one with its id (the definitions close an
    obligation so) and the first with its id and tool name (ADK-JS's fixes),
    also when the same call is made again before it."""
    return {
        next((q for q in range(position + 1, len(steps)) if answers(steps[q])), None)
        for answers in (
            lambda step: any(r.id == call.id for r in step.responses),
            lambda step: any((r.id, r.name) == (call.id, call.name) for r in step.responses),
        )
    } - {None}


def _open_at_once(steps: Sequence[Step], position: int, call_id: str, name: str) -> list[int]:
    """The calls of tool ``name`` with ``call_id`` that a response at
    ``position`` answers as ADK-JS's fixes pair them: the latest such call
    before it, and each earlier one open at once with it (no response with
    the id and tool name between them), which that pairing cannot tell apart
    (:func:`_calls_closed_by` with a name)."""
    return _calls_closed_by(steps, position, call_id, name)


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
