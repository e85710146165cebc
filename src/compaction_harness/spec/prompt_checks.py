"""Pure checkers of P2 (prompt validity) and P4 (nothing lost) on one model call's prompt.

:func:`check_prompt` judges an assembled prompt (P2), :func:`check_nothing_lost`
the events it shows against the prompt assembled without summaries (P4), by
event identity: :func:`parts_of` names each part by the stored event it came
from. :func:`check_model_prompt` runs both on the request of one model call,
as both SDKs' drivers do. The invariants are stated in
:mod:`.pipeline_checks`. Pure: imports only :mod:`compaction_harness.spec`
and the standard library.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from . import reference
from .invariants import Violation
from .model import Call, Session, Step
from .pipeline_checks import Prompt, Summaries, _shows, covered_by_kept, covered_by_records

__all__ = [
    "answers_of_several_call_events",
    "check_model_prompt",
    "check_nothing_lost",
    "check_prompt",
    "parts_of",
]


def answers_of_several_call_events(steps: Session) -> set[int]:
    """Positions of the events whose function responses answer calls made by
    more than one earlier event (one client message answering several turns)."""
    out = set()
    for i, step in enumerate(steps):
        makers = set()
        for rid in step.response_ids:
            maker = next((j for j in range(i - 1, -1, -1) if rid in steps[j].call_ids), None)
            if maker is not None:
                makers.add(maker)
        # Two parts with one id (a reused id) answer two calls as well.
        if len(makers) > 1 or len(step.responses) > len(step.response_ids):
            out.add(i)
    return out


def check_prompt(
    prompt: Prompt,
    opener: str | None,
    *,
    strict: bool = False,
    adapter_answers: Collection[str] = (),
) -> tuple[list[Violation], list[str]]:
    """P2 on an assembled prompt; returns (violations, ids of calls left unanswered).

    ``opener``: the text of the user message that opened the running
    invocation, if one did. ``strict``: the strict-provider clause. Models
    reached through LiteLLM (Anthropic, OpenAI) reject a request in which a
    function call is not answered by the content right after it (a tool
    result must follow its tool use before the next user turn); Gemini takes
    it. With ``strict``, every call left unanswered is a violation; without,
    it is only reported (a long-running call may legitimately wait).
    ``adapter_answers``: ids of calls that still wait (long-running, no
    answer yet) which the SDK leaves to the model adapter of a strict
    provider to answer with a placeholder (google-adk's LiteLLM adapter:
    ``_ensure_tool_results``); the strict clause does not count them.
    """
    out: list[Violation] = []
    answered: set[str] = set()
    unanswered: list[str] = []
    for k, (_role, parts) in enumerate(prompt):
        responses = [p[1] for p in parts if p[0] == "response"]
        calls = [p[1] for p in parts if p[0] == "call"]
        if responses:
            before = prompt[k - 1] if k else ("", ())
            asked = [p[1] for p in before[1] if p[0] == "call"] if before[0] == "model" else []
            if sorted(responses) != sorted(asked):
                partial = set(responses) < set(asked) and len(set(responses)) == len(responses)
                out.append(
                    Violation(
                        "P2",
                        f"content {k} answers {sorted(responses)} but the content before it "
                        f"({before[0] or 'none'}) calls {sorted(asked)}",
                        ids=tuple(sorted(set(responses) ^ set(asked))),
                        expected=sorted(asked),
                        observed=sorted(responses),
                        details={
                            "cause": "partial answer" if partial else "mismatch",
                            "content": k,
                        },
                    )
                )
            # An id may be reused by a later call (providers that number calls
            # per turn): a response repeats only when its id was answered
            # since the latest call with that id.
            twice = sorted({r for r in responses if r in answered or responses.count(r) > 1})
            if twice:
                out.append(
                    Violation(
                        "P2",
                        f"content {k} answers {twice} a second time since their call",
                        tuple(twice),
                        details={"cause": "answered twice", "content": k},
                    )
                )
            answered.update(responses)
        answered.difference_update(calls)
        nxt = prompt[k + 1][1] if k + 1 < len(prompt) else ()
        following = {p[1] for p in nxt if p[0] == "response"}
        unanswered += [c for c in calls if c not in following]
    refused = [c for c in unanswered if c not in adapter_answers]
    if strict and refused:
        out.append(
            Violation(
                "P2",
                f"calls {sorted(set(refused))} are not answered by the content right after "
                "them, which a strict provider (LiteLLM: Anthropic, OpenAI) rejects",
                ids=tuple(sorted(set(refused))),
                expected="every call answered before the next turn",
                observed="unanswered",
                details={"cause": "strict provider"},
            )
        )
    if opener is not None and not any(
        role == "user" and ("text", opener) in parts for role, parts in prompt
    ):
        out.append(
            Violation(
                "P2",
                f"the user message {opener!r} that opened the running invocation is not in the "
                "prompt",
                expected=opener,
                observed=None,
                details={"cause": "opener missing"},
            )
        )
    return out, unanswered


def parts_of(prompt: Prompt) -> set[tuple[str, ...]]:
    """A prompt's parts as a set, each text part as ``("text", text, event)``
    and each call part as ``("call", id, name, event)``: ``event`` the
    position of the stored event it came from (``""`` when the prompt does
    not say: see ``adk.ShownText``), so that two events with one text, or
    with one call id and tool (ids numbered per turn), stay two parts (P4 is
    checked by event identity)."""
    return {
        ("text", str(p[1]), getattr(p[1], "event", ""))
        if p[0] == "text"
        else ("call", p[1], str(p[2]), getattr(p[2], "event", ""))
        if p[0] == "call"
        else p
        for _, ps in prompt
        for p in ps
    }


def _shows_call(parts: set[tuple[str, ...]], call: Call, position: int) -> bool:
    """Whether ``parts`` (:func:`parts_of`) hold ``call`` of the event at
    ``position``: a call part that names that event, or one that names no
    event (a prompt that does not say) with the call's id and tool."""
    return any(("call", call.id, call.name, event) in parts for event in (str(position), ""))


def _visible(step: Step, position: int, parts: set[tuple[str, ...]]) -> bool:
    """Whether the event at ``position`` of the stored session is among a
    prompt's ``parts`` (:func:`parts_of`), by event identity: a text part
    that names this event, or all its function calls and responses (a call
    or response part names the event it came from, see ``adk.PromptPart``). A
    text or call part that names no event (another agent's message relayed as
    context; a prompt that carries no identities, as ADK-JS's) shows every
    event whose text or call it carries: equality is all such a part can tell."""
    shown = _shown_of(step, position, parts)
    if ("text",) in shown:
        return True
    items = {("call", c.id, c.name) for c in step.calls}
    items |= {("response", r.id, r.name) for r in step.responses}
    return bool(items) and items <= shown


def _shown_of(step: Step, position: int, parts: set[tuple[str, ...]]) -> set[tuple[str, ...]]:
    """What of the event at ``position`` a prompt's ``parts`` (:func:`parts_of`)
    show, by event identity as :func:`_visible` reads it: ``("text",)``, and
    each of its function calls and responses as ``(kind, id, name)``."""
    shown: set[tuple[str, ...]] = set()
    if step.text is not None and any(
        p[2] == str(position) if len(p) > 2 and p[2] else _shows(p[1], step.text)
        for p in parts
        if p[0] == "text"
    ):
        shown.add(("text",))
    shown |= {("call", c.id, c.name) for c in step.calls if _shows_call(parts, c, position)}
    shown |= {
        ("response", r.id, r.name)
        for r in step.responses
        if ("response", r.id, r.name, str(position)) in parts
    }
    return shown


def check_nothing_lost(
    steps: Session,
    prompt: Prompt,
    summaries: Summaries,
    baseline: Prompt,
    records: Sequence[int] = (),
    *,
    pruned: bool = False,
) -> list[Violation]:
    """P4: every event the prompt builder shows without compaction (``baseline``)
    is in the prompt, or was given to a summary that is (directly or through a
    rolling-summary seed).

    P4 judges what ADK's compaction drops, so it counts the summaries ADK made
    in this run. A compaction record that ADK did not make (``records``, its
    positions: one a client appended straight to the session service, or one
    a stored session brought along) stands for the events of its range by its
    writer's claim, and those count as covered. ADK's own APIs do not take
    such records from clients: the API server's session creation refuses
    client events with any actions ("Rejects client-supplied events that
    claim to be ADK-generated", ``google/adk/cli/api_server.py``,
    ``_validate_session_initialization_events``, 2.11.0 and 2.13.0), and the
    ``Runner`` builds the user's event itself from ``new_message`` and
    ``state_delta`` alone (``Runner._build_and_append_user_event``). Only a
    caller of ``BaseSessionService.append_event`` can write one, and what it
    hides is that caller's decision, not a loss by compaction.

    With ``pruned`` (releases that do, ``adk.prunes_orphaned_calls``), a
    function call that no later event answers and that is not long-running
    (its tool's process died) is not required in the prompt: ADK's prompt
    builder prunes such calls by design, so that providers that require every
    call to be answered take the request (``drop_orphaned_function_calls``,
    ``google/adk/flows/llm_flows/tools/_rearranger.py``, 2.13.0). It matches
    calls to responses by id anywhere in the contents, so a reused id can keep
    an orphaned call in the prompt without compaction and not with it: that
    difference is the pruning working, not a loss. Neither is an interim
    response that a later response to the same call replaces in the prompt
    (:func:`_replaced`).

    An event is judged part by part (:func:`_missing`): what the baseline
    shows of it must be in the prompt. A call, text or response is told from
    another with the same id, tool or words by the event it came from (call
    ids numbered per turn repeat), and a call the prompt builder leaves out
    without compaction too (a pending long-running call beside answered
    siblings, whose response turn must answer exactly the calls before it:
    P2) is not required with it, while the rest of its event is.
    """
    covered = covered_by_kept(prompt, summaries) | covered_by_records(steps, records, pairs=True)
    live = reference.live_events(steps)
    live_ids = {id(s) for s in live}
    prompt_parts = parts_of(prompt)
    orphaned = _orphaned_calls(steps) if pruned else {}
    for i, calls in _waiting_beside_answered(steps, prompt_parts).items():
        orphaned[i] = orphaned.get(i, set()) | calls
    baseline_parts = parts_of(baseline)
    return [
        Violation(
            "P4",
            f"step {i} is neither in the prompt nor in the input of a summary that is",
            positions=(i,),
            expected="in the prompt or summarised",
            observed="lost",
            details={"missing": sorted(" ".join(m) for m in missing)},
        )
        for i, step in enumerate(steps)
        if step.compaction is None
        and not step.rewind_before
        and id(step) in live_ids
        and i not in covered
        and (missing := _missing(steps, i, baseline_parts, prompt_parts, orphaned.get(i, set())))
    ]


def _waiting_beside_answered(
    steps: Session, parts: set[tuple[str, ...]]
) -> dict[int, set[tuple[str, ...]]]:
    """Position -> the prompt parts of the event's long-running calls that
    still wait (no later event answers them) while the prompt shows a sibling
    call of the same event with its response. P2 requires the content after
    a call content to answer exactly its calls, so such a prompt cannot show
    the waiting call beside its answered sibling: leaving it out until its
    own answer comes is what P2 asks (google-adk's fix
    ``pending-call-left-out-beside-answered-siblings``), not a loss. Which
    calls a prompt answers can differ with compaction and without (the
    latest-response rearrangement drops the events between a call and the
    newest response, an answer among them, only when that call is in view),
    so the baseline need not leave the same calls out."""
    out: dict[int, set[tuple[str, ...]]] = {}
    for i, step in enumerate(steps):
        if len(step.calls) < 2 or not step.long_running:
            continue
        answered = {
            c.id
            for c in step.calls
            if _shows_call(parts, c, i)
            and any(p[0] == "response" and p[1] == c.id and p[2] == c.name for p in parts)
        }
        if not answered:
            continue
        waiting = {
            ("call", c.id, c.name, str(i))
            for c in step.calls
            if c.id in step.long_running
            and c.id not in answered
            and not _answered_after(steps, i, c.id)
        }
        if waiting:
            out[i] = waiting
    return out


def _not_rewound(steps: Session) -> set[int]:
    """Identities (``id``) of the events no rewind removed, in every isolation
    scope (:func:`reference.unrewound`): the events ADK's prompt builder
    assembles from. A rewound response answers nothing in any prompt."""
    return {id(s) for s in reference.unrewound(steps).steps}


def _answered_after(steps: Session, position: int, call_id: str) -> bool:
    """Whether an event after ``position`` answers ``call_id`` before a later
    call reuses the id."""
    for later in range(position + 1, len(steps)):
        if call_id in steps[later].response_ids:
            return True
        if call_id in steps[later].call_ids:
            return False
    return False


def _missing(
    steps: Session,
    position: int,
    baseline: set[tuple[str, ...]],
    prompt: set[tuple[str, ...]],
    pruned: set[tuple[str, ...]],
) -> set[tuple[str, ...]]:
    """What of the event at ``position`` the ``baseline`` parts show and the
    ``prompt`` parts do not (as :func:`_shown_of` names it). A call ADK's
    prompt builder prunes (``pruned``, see :func:`check_nothing_lost`) is not
    missing, nor a response that a later one to the same call replaces in the
    prompt (:func:`_replaced`)."""
    step = steps[position]
    missing = _shown_of(step, position, baseline) - _shown_of(step, position, prompt | pruned)
    return {
        m for m in missing if not (m[0] == "response" and _replaced(steps, position, m[1:], prompt))
    }


def _replaced(
    steps: Session, position: int, response: tuple[str, ...], parts: set[tuple[str, ...]]
) -> bool:
    """Whether ``response`` (id, tool) of the event at ``position`` is
    answered again, for the same call, by a later event whose response the
    prompt shows (``parts``). ADK gives a call the last response attributed to
    it ("taking the last one keeps the closing update of a long-running tool,
    which reports progress several times under one id":
    ``rearrange_events_for_async_function_responses_in_history``,
    ``google/adk/flows/llm_flows/tools/_rearranger.py``, 2.13.0), response by
    response, so an interim result the final one replaces is not lost, nor is
    an event of parallel responses of which only some are replaced. A later
    call with the id ends the search: its responses belong to that call."""
    call_id, name = response
    for later in range(position + 1, len(steps)):
        if call_id in steps[later].call_ids:
            return False
        if ("response", call_id, name, str(later)) in parts:
            return True
    return False


def _orphaned_calls(steps: Session) -> dict[int, set[tuple[str, ...]]]:
    """Position -> the prompt parts of the event's function calls that no
    later event answers and that their own event does not mark long-running:
    the calls ADK's prompt builder prunes (see :func:`check_nothing_lost`). An
    older call's long-running mark on a reused id does not count: ADK reads
    the marks of the events it assembles, and a summary may have taken that
    call.

    A call is answered as the definitions close an obligation: by a response
    with its id in a later event, before a later call reuses the id (that call
    opens a new obligation, which the response closes instead); within one
    event, responses count before calls. So with call ids numbered per turn,
    another tool's answer to a later call with the id does not answer this one.
    Only events no rewind removed count (:func:`_not_rewound`): ADK prunes
    after applying rewinds, so a call whose only answer was rewound is an
    orphan, with compaction and without.
    """
    kept = _not_rewound(steps)
    answered_after: set[str] = set()
    out: dict[int, set[tuple[str, ...]]] = {}
    for i in range(len(steps) - 1, -1, -1):
        step = steps[i]
        if id(step) not in kept:
            continue
        orphans = {
            ("call", c.id, c.name, str(i))
            for c in step.calls
            if c.id not in answered_after and c.id not in step.long_running
        }
        if orphans:
            out[i] = orphans
        answered_after = (answered_after - set(step.call_ids)) | {r.id for r in step.responses}
    return out


def check_model_prompt(
    steps: Session,
    prompt: Prompt,
    baseline: Prompt,
    summaries: Summaries,
    opener: str | None,
    *,
    strict: bool = False,
    adapter_answers: Collection[str] = (),
    records: Sequence[int] = (),
    pruned: bool = False,
) -> tuple[list[Violation], list[str]]:
    """P2 and P4 on the prompt of one model call; returns (violations, ids of
    calls left unanswered).

    ``steps``: the session as stored when the model was called; ``prompt``:
    the request's contents (``adk.PromptContent``: call ids kept, each
    response part naming its stored event); ``baseline``: the contents ADK
    assembles from ``steps`` without summaries (P4's baseline);
    ``summaries``: (session length then, positions given, seed numbers) per
    summary; ``opener``: the text of the user message that opened the
    running invocation, if one did; ``strict`` and ``adapter_answers``: P2's
    strict-provider clause (see :func:`check_prompt`); ``records``: positions
    of compaction records ADK did not make, and ``pruned``: whether the
    release prunes orphaned calls (both: see :func:`check_nothing_lost`).
    Each P2 violation's ``details`` say whether its content merges answers
    to several call events and, for a missing
    opener, whether a kept summary was given it or a kept range hides it,
    and whether it was stored out of time order (known faults read them).
    Used by both drivers: the emulating driver on ADK's contents assembly,
    the runner driver on the ``LlmRequest`` the model received.
    """
    found, unanswered = check_prompt(prompt, opener, strict=strict, adapter_answers=adapter_answers)
    hidden = covered_by_records(steps, records)
    if any(
        steps[i].author == "user" and steps[i].text == opener for i in hidden
    ):  # a record ADK did not make hides the opener: its writer's doing (see P4)
        found = [v for v in found if v.details.get("cause") != "opener missing"]
    merged = answers_of_several_call_events(steps)
    for v in found:
        content = v.details.get("content")
        if content is not None and content < len(prompt):
            # Which stored events the content's responses came from: one
            # that answers calls of several call events (known faults).
            events = {int(p[3]) for p in prompt[content][1] if p[0] == "response" and p[3]}
            v.details["merged_answer"] = bool(events & merged)
        if v.details.get("cause") == "opener missing":
            # Whether a kept summary was given the opener, or a kept
            # summary's time range hides it unasked (known faults use it).
            v.details["opener_summarised"] = any(
                steps[i].text == opener and steps[i].author == "user"
                for i in covered_by_kept(prompt, summaries)
            )
    found += check_nothing_lost(steps, prompt, summaries, baseline, records, pruned=pruned)
    return found, unanswered
