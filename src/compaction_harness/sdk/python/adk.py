"""The ADK adapter: the only module of the harness that imports ``google.adk``.

It turns :class:`~compaction_harness.spec.model.Session` objects into real
``google.adk.events.Event`` objects (and real events back into the model),
and calls the real compaction helpers of whatever ``google-adk`` release is
installed. Helpers and their signatures change between releases, so each
entry point inspects what the installed release offers and raises
:class:`NotApplicable` with a reason where it has nothing to call:

=====================================  =======================================
helper (``google.adk.apps.compaction``) releases (seen installed)
=====================================  =======================================
``_longest_self_contained_prefix``     2.3.0 and later (not in 2.2.0);
                                       ``all_events=`` from 2.12.0 (before:
                                       the window only)
``_provably_dead_call_ids``            2.12.0 and later
``_safe_token_compaction_split_index`` 1.26.0 and later (token threshold)
``_events_to_compact_for_token_thresh  1.26.0 and later
old``
=====================================  =======================================
"""

from __future__ import annotations

import enum
import importlib
import inspect
import json
from collections.abc import Collection, Sequence
from functools import cache, cached_property
from typing import Any

from google.adk import version as _adk_version
from google.adk.apps import compaction as _compaction
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions, EventCompaction
from google.adk.tools.tool_confirmation import ToolConfirmation
from google.genai import types

from ...spec.model import (
    REQUEST_CREDENTIAL_CALL,
    Call,
    Compaction,
    Response,
    Session,
    ShownText,
    Step,
    summary_number,
)
from .. import protocol as _protocol

__all__ = [
    "ADK_RELEASE",
    "NotApplicable",
    "UnreadableEvents",
    "events_to_compact_for_token_threshold",
    "from_adk_events",
    "helper_availability",
    "longest_self_contained_prefix",
    "provably_dead_call_ids",
    "safe_token_split",
    "to_adk_event",
    "to_adk_events",
    "unsupported",
]

_EMPTY_ACTIONS = EventActions()

#: The installed google-adk release, as ``google.adk.version.__version__`` says.
ADK_RELEASE: str = _adk_version.__version__


#: The installed release lacks what a property needs; ``str()`` says what
#: (the registry's, which every SDK raises: ``sdk.protocol.NotApplicable``).
NotApplicable = _protocol.NotApplicable


class UnreadableEvents(Exception):
    """What google-adk returned cannot be read as the events it claims to be:
    a field of an ``Event`` it handed back does not hold the type ADK's own
    models declare (a reloaded summary's ``compacted_content`` as a plain dict,
    say). ``str()`` names the event and the field; ``cause`` is the exception
    met while reading it. Raised by :func:`from_adk_events`, the one function
    that reads what ADK returns, so every driver judges it the same way: a P0
    violation of ADK (``pipeline.crash_violation``), never a harness
    traceback."""

    def __init__(self, message: str, cause: BaseException) -> None:
        super().__init__(message)
        self.cause = cause


#: The fields of an event that the harness reads, with the type ADK declares.
def _declared_fields() -> tuple[tuple[str, type], ...]:
    return (
        ("content", types.Content),
        ("actions", EventActions),
        ("actions.compaction", EventCompaction),
        ("actions.compaction.compacted_content", types.Content),
        ("usage_metadata", types.GenerateContentResponseUsageMetadata),
    )


def _what_is_wrong(event: Any) -> str:
    """The first field of ``event`` that holds something other than the type
    ADK declares for it (None is absent, not wrong), as ``field is a dict, not
    Content``; empty when every field has its type."""
    for path, declared in _declared_fields():
        value: Any = event
        for name in path.split("."):
            value = getattr(value, name, None) if not isinstance(value, dict) else value.get(name)
            if value is None:
                break
        if value is not None and not isinstance(value, declared):
            return f"{path} is a {type(value).__name__}, not {declared.__name__}"
    return ""


# -- model -> ADK ----------------------------------------------------------
@cache
def _auth_config() -> Any:
    # One shared, never-mutated AuthConfig: compaction reads only the keys of
    # requested_auth_configs, and building one per event costs throughput.
    from fastapi.openapi.models import APIKey, APIKeyIn
    from google.adk.auth.auth_tool import AuthConfig

    return AuthConfig(auth_scheme=APIKey(**{"in": APIKeyIn.header, "name": "x-api-key"}))


def to_adk_event(step: Step) -> Event:
    """The real ``Event`` a step stands for.

    Parts are laid out text first, then function calls, then function
    responses; user-authored events and function response events carry role
    ``user``, all others ``model``.
    """
    parts: list[types.Part] = []
    if step.text is not None:
        parts.append(types.Part(text=step.text))
    for call in step.calls:
        parts.append(
            types.Part(function_call=types.FunctionCall(id=call.id, name=call.name, args={}))
        )
    for resp in step.responses:
        parts.append(
            types.Part(
                function_response=types.FunctionResponse(
                    id=resp.id, name=resp.name, response={"result": "ok"}
                )
            )
        )
    # ADK's function response events are authored by the agent but carry role
    # "user" (google/adk/flows/llm_flows/tools/_caller.py, _batch_executor.py),
    # and so does the adk_request_credential event built from one
    # (generate_auth_event copies the response event's role).
    auth_only = bool(step.calls) and all(c.name == REQUEST_CREDENTIAL_CALL for c in step.calls)
    role = "user" if step.author == "user" or step.responses or auth_only else "model"
    content = types.Content(role=role, parts=parts) if parts else None
    actions: dict[str, Any] = {}
    if step.confirmations:
        actions["requested_tool_confirmations"] = {
            cid: ToolConfirmation(hint="confirm?") for cid in step.confirmations
        }
    if step.auth_requests:
        actions["requested_auth_configs"] = {cid: _auth_config() for cid in step.auth_requests}
    if step.rewind_before is not None:
        actions["rewind_before_invocation_id"] = step.rewind_before
    if step.compaction is not None:
        actions["compaction"] = EventCompaction(
            start_timestamp=step.compaction.start,
            end_timestamp=step.compaction.end,
            compacted_content=types.Content(
                role="model", parts=[types.Part(text=step.compaction.summary)]
            ),
        )
    fields: dict[str, Any] = {
        "invocation_id": step.invocation,
        "author": step.author,
        "timestamp": step.timestamp,
        "content": content,
        "actions": EventActions(**_supported(EventActions, actions)),
    }
    if step.long_running:
        fields["long_running_tool_ids"] = set(step.long_running)
    if step.branch is not None:
        fields["branch"] = step.branch
    if step.isolation_scope is not None:
        fields["isolation_scope"] = step.isolation_scope
    if step.prompt_tokens is not None:
        fields["usage_metadata"] = types.GenerateContentResponseUsageMetadata(
            prompt_token_count=step.prompt_tokens
        )
    if step.error is not None:
        fields["error_code"] = step.error  # the model keeps no message: nothing reads it
    return Event(**_supported(Event, fields))


def _supported(model: Any, fields: dict[str, Any]) -> dict[str, Any]:
    """``fields``, or NotApplicable naming the first one this release's ``model`` lacks.

    Only fields a step actually uses are passed, so older releases (whose
    events lack, say, ``isolation_scope``) still take every step that does not
    need them.
    """
    for name in fields:
        if name not in model.model_fields:
            raise NotApplicable(f"google-adk {ADK_RELEASE} has no {model.__name__}.{name}")
    return fields


def unsupported(step: Step) -> str | None:
    """Why the installed release cannot represent ``step`` (say, a rewind
    before 1.17.0), or None when it can."""
    try:
        to_adk_event(step)
    except NotApplicable as exc:
        return str(exc)
    return None


def to_adk_events(session: Session, *, bare_actions: bool = False) -> list[Event]:
    """One fresh ``Event`` per step, in order.

    ``bare_actions``: an event whose actions hold nothing gets ``actions =
    None`` instead of an empty ``EventActions`` (ADK's validation refuses None,
    but several helpers guard against it; the U6 relation ``bare_actions``
    checks they treat both alike).
    """
    events = [to_adk_event(step) for step in session]
    if bare_actions:
        for event in events:
            if event.actions == _EMPTY_ACTIONS:
                event.actions = None
    return events


# -- ADK -> model ----------------------------------------------------------
def from_adk_events(events: Sequence[Event]) -> Session:
    """The model of real events (texts, arguments and results are dropped).

    Only the first text part of an event is kept; everything compaction reads
    is kept exactly. Fields an older release's events lack read as absent.
    Raises :class:`UnreadableEvents` when an event ADK returned cannot be
    read (a field that does not hold its declared type).
    """
    steps = []
    for position, event in enumerate(events):
        try:
            steps.append(_step_of(event))
        except Exception as exc:
            wrong = _what_is_wrong(event) or f"{type(exc).__name__}: {exc}"
            raise UnreadableEvents(
                f"google-adk returned an unreadable event (position {position}, "
                f"id {getattr(event, 'id', None)!r}): {wrong}",
                exc,
            ) from exc
    return Session(tuple(steps))


def _step_of(event: Event) -> Step:
    """The model of one event (see :func:`from_adk_events`)."""
    texts = [p.text for p in (event.content.parts or [])] if event.content else []
    texts = [t for t in texts if t is not None]
    compaction = event.actions.compaction if event.actions else None
    summary_parts = compaction.compacted_content.parts or [] if compaction is not None else []
    usage = event.usage_metadata
    return Step(
        invocation=event.invocation_id or "",
        author=event.author or "",
        timestamp=float(event.timestamp),
        text=texts[0] if texts else None,
        calls=tuple(Call(c.id or "", c.name or "") for c in event.get_function_calls()),
        responses=tuple(Response(r.id or "", r.name or "") for r in event.get_function_responses()),
        long_running=tuple(sorted(event.long_running_tool_ids or ())),
        confirmations=tuple(
            sorted(getattr(event.actions, "requested_tool_confirmations", None) or {})
        ),
        auth_requests=tuple(sorted(getattr(event.actions, "requested_auth_configs", None) or {})),
        compaction=(
            Compaction(
                compaction.start_timestamp,
                compaction.end_timestamp,
                " ".join(p.text for p in summary_parts if p.text) or "summary",
            )
            if compaction is not None
            else None
        ),
        rewind_before=getattr(event.actions, "rewind_before_invocation_id", None),
        branch=event.branch,
        isolation_scope=getattr(event, "isolation_scope", None),
        prompt_tokens=usage.prompt_token_count if usage is not None else None,
        error=_error_of(event),
    )


def _error_of(event: Event) -> str | None:
    """``Event.error_code`` (None on releases whose events lack it). A model
    response's code may be a ``types.FinishReason``: its value is kept, as
    the stored JSON holds it. The message is not kept: nothing reads it."""
    code = getattr(event, "error_code", None)
    if code is None:
        return None
    return code.value if isinstance(code, enum.Enum) else str(code)


# -- the real helpers --------------------------------------------------------
def _helper(name: str) -> Any:
    fn = getattr(_compaction, name, None)
    if fn is None:
        raise NotApplicable(f"google-adk {ADK_RELEASE} has no google.adk.apps.compaction.{name}")
    return fn


def _accepts(name: str, parameter: str) -> bool:
    # Asked of the helper installed now: a fix may replace it with one that
    # takes more (the 2.11.0 fix of the prefix helper adds all_events=).
    return _takes(_helper(name), parameter)


@cache
def _takes(fn: Any, parameter: str) -> bool:
    return parameter in inspect.signature(fn).parameters


def helper_availability() -> dict[str, str | None]:
    """Helper name -> ``None`` when present, else the reason it is not."""
    out: dict[str, str | None] = {}
    for name in (
        "_longest_self_contained_prefix",
        "_provably_dead_call_ids",
        "_safe_token_compaction_split_index",
        "_events_to_compact_for_token_threshold",
    ):
        try:
            _helper(name)
            out[name] = None
        except NotApplicable as exc:
            out[name] = str(exc)
    return out


def accepts_all_events() -> bool:
    """Whether the installed ``_longest_self_contained_prefix`` takes ``all_events=``."""
    return _accepts("_longest_self_contained_prefix", "all_events")


def longest_self_contained_prefix_window_only(window: list[Event]) -> list[Event]:
    """Call the installed ``_longest_self_contained_prefix`` with the window alone."""
    return _helper("_longest_self_contained_prefix")(window)


def longest_self_contained_prefix(window: list[Event], all_events: list[Event]) -> list[Event]:
    """Call the installed ``_longest_self_contained_prefix``.

    Releases 2.12.0 and later receive ``all_events=``; 2.3.0 to 2.11.0 take
    only the window. Raises :class:`NotApplicable` on releases without it.
    """
    fn = _helper("_longest_self_contained_prefix")
    if _accepts("_longest_self_contained_prefix", "all_events"):
        return fn(window, all_events=all_events)
    return fn(window)


def provably_dead_call_ids(
    window: list[Event], all_events: list[Event], newest_invocation_id: str | None
) -> set[str]:
    """Call the installed ``_provably_dead_call_ids`` (2.12.0 and later)."""
    fn = _helper("_provably_dead_call_ids")
    return set(fn(window, all_events=all_events, newest_invocation_id=newest_invocation_id))


def safe_token_split(candidates: list[Event], retention: int) -> int:
    """Call the installed ``_safe_token_compaction_split_index`` (1.26.0 and later)."""
    fn = _helper("_safe_token_compaction_split_index")
    return fn(candidate_events=candidates, event_retention_size=retention)


def events_to_compact_for_token_threshold(events: list[Event], retention: int) -> list[Event]:
    """Call the installed ``_events_to_compact_for_token_threshold`` (1.26.0 and later)."""
    fn = _helper("_events_to_compact_for_token_threshold")
    return fn(events=events, event_retention_size=retention)


def token_compaction_takes_isolation_scope() -> bool:
    """Whether the installed token-threshold compaction filters by isolation scope."""
    try:
        fn = _helper("_run_compaction_for_token_threshold_config")
    except NotApplicable:
        return False
    return "isolation_scope" in inspect.signature(fn).parameters


def token_threshold_summariser_input(
    session: Session, retention: int, threshold: int = 1, isolation_scope: str | None = None
) -> list[Step] | None:
    """The events ADK's token-threshold compaction hands the summariser, or None.

    Runs the real ``_run_compaction_for_token_threshold_config`` (which applies
    rewinds and the isolation-scope filter itself) on an
    ``InMemorySessionService`` session holding the session's events, with a
    recording summariser defined here. The rolling-summary seed event, which
    ADK makes afresh on every call, is left out. ``threshold`` is compared
    with the newest ``prompt_tokens`` of the scope, as ADK's usage metadata
    carries it.
    """
    import asyncio

    from google.adk.agents.llm_agent import LlmAgent
    from google.adk.apps.app import EventsCompactionConfig
    from google.adk.apps.base_events_summarizer import BaseEventsSummarizer
    from google.adk.sessions.in_memory_session_service import InMemorySessionService

    fn = _helper("_run_compaction_for_token_threshold_config")
    events = to_adk_events(session)
    given: list[list[Event]] = []

    class Recorder(BaseEventsSummarizer):
        async def maybe_summarize_events(self, *, events: list[Event]) -> Event | None:
            given.append(list(events))
            stamps = [e.timestamp for e in events]
            return Event(
                author="model",
                invocation_id=Event.new_id(),
                actions=EventActions(
                    compaction=EventCompaction(
                        start_timestamp=min(stamps),
                        end_timestamp=max(stamps),
                        compacted_content=types.Content(
                            role="model", parts=[types.Part(text="recorded")]
                        ),
                    )
                ),
            )

    async def run() -> None:
        service = InMemorySessionService()
        adk_session = await service.create_session(app_name="harness", user_id="u")
        adk_session.events = list(events)
        config = EventsCompactionConfig(
            summarizer=Recorder(), token_threshold=threshold, event_retention_size=retention
        )
        kwargs = {}
        if "isolation_scope" in inspect.signature(fn).parameters:
            kwargs["isolation_scope"] = isolation_scope
        elif isolation_scope is not None:
            raise NotApplicable(
                f"google-adk {ADK_RELEASE}'s token-threshold compaction takes no isolation scope"
            )
        await fn(
            config=config,
            session=adk_session,
            session_service=service,
            agent=LlmAgent(name="agent", model="gemini-2.0-flash"),
            **kwargs,
        )

    asyncio.run(run())
    if not given:
        return None
    received = list(given[0])
    known = {id(e) for e in events}
    if received and id(received[0]) not in known and any(s.compaction for s in session):
        received.pop(0)  # the rolling-summary seed, made afresh on every call
    return list(from_adk_events(received))


def session_from_json(text: str) -> Session:
    """The model of a real session as ADK's session services store it.

    Accepts a ``google.adk.sessions.Session`` JSON document (its ``events``)
    or a JSON list of ``Event`` documents. Parsed by ADK's own pydantic
    models, which execute nothing. Raises ``ValueError`` with a one-line
    message.
    """
    import json

    from google.adk.sessions.session import Session as AdkSession
    from pydantic import ValidationError

    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"invalid JSON: {exc}") from None
    try:
        if isinstance(data, list):
            events = [Event.model_validate(item) for item in data]
        elif isinstance(data, dict) and "events" in data:
            events = AdkSession.model_validate(data).events
        else:
            raise ValueError("expected an ADK Session object (with 'events') or a list of events")
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first.get("loc", ()))
        raise ValueError(f"not an ADK session: {where}: {first.get('msg')}") from None
    return from_adk_events(events)


# -- the pipeline: a real session, real compaction, real prompt assembly -------
#: One part of an assembled prompt: ("text", text), ("call", id, name) or
#: ("response", id, name, event), where ``event`` is the position (as a string)
#: of the session event the response part came from: a call id may be answered
#: more than once (an interim, then the final result; a pending confirmation,
#: then the real result), and P4 must tell those answers apart. A text, and a
#: call's tool name, is a :class:`ShownText`, which names its event the same
#: way (P4 is checked by event identity: a model that answers "OK." at every
#: turn writes many events with one text, and one that numbers its call ids
#: per turn many calls with one id and tool).
PromptPart = tuple[str, ...]
_EVENT_KEY = "harness_event"


#: Whether the installed google-genai's ``Part`` has ``part_metadata``, where a
#: text or function-call part names its event for the prompt (see
#: :func:`_tag_untagged`).
_TEXT_TAGS = "part_metadata" in types.Part.model_fields


def _part_event(part: Any) -> str:
    metadata = getattr(part, "part_metadata", None) if _TEXT_TAGS else None
    event = metadata.get(_EVENT_KEY, "") if isinstance(metadata, dict) else ""
    return event if isinstance(event, str) else ""


#: One content of an assembled prompt: (role, parts).
PromptContent = tuple[str, tuple[PromptPart, ...]]


def _prompt_of(
    contents: list[types.Content], positions: dict[str, int] | None = None
) -> list[PromptContent]:
    """The harness's view of a prompt's contents. A response part names the
    event it came from by that event's id, shown as the event's position in
    the session in hand (``positions``: id -> position), so that the names
    stay right when a database hands the events back in another order."""
    positions = positions or {}
    out = []
    for content in contents:
        parts: list[PromptPart] = []
        for p in content.parts or []:
            if p.function_call is not None:
                event = _part_event(p)
                event = str(positions[event]) if event in positions else ""
                name = ShownText(p.function_call.name or "", event)
                parts.append(("call", p.function_call.id or "", name))
            elif p.function_response is not None:
                r = p.function_response
                event = (r.response or {}).get(_EVENT_KEY, "")
                event = positions.get(event, event) if isinstance(event, str) else event
                parts.append(("response", r.id or "", r.name or "", str(event)))
            elif p.text is not None:
                event = _part_event(p)
                event = str(positions[event]) if event in positions else ""
                parts.append(("text", ShownText(p.text, event)))
        out.append((content.role or "", tuple(parts)))
    return out


def prompt_chars(contents: list[PromptContent] | list[types.Content]) -> int:
    """Characters of a prompt's contents as ADK's estimate counts them (text,
    tool names, JSON of arguments and responses: ``_count_chars_in_content``
    in ``google/adk/apps/compaction.py``, 2.x)."""
    import json

    total = 0
    for content in contents:
        for part in content.parts or []:
            if part.text:
                total += len(part.text)
            if part.function_call:
                total += len(part.function_call.name or "")
                if part.function_call.args:
                    total += len(json.dumps(part.function_call.args))
            if part.function_response:
                total += len(part.function_response.name or "")
                if part.function_response.response:
                    total += len(json.dumps(part.function_response.response))
    return total


@cache
def _model_set_errors() -> frozenset[str]:
    return frozenset(m.name for m in (*types.FinishReason, *types.BlockedReason))


def model_set_error(code: str) -> bool:
    """Whether ``code`` is an error code a model sets on its response, as
    ``LlmResponse.create`` copies it (``models/llm_response.py``): a
    ``google.genai`` ``FinishReason`` or ``BlockedReason`` name (``SAFETY``,
    ``MAX_TOKENS``, ...); not an API status or exception class name, which
    the node runner writes for an exception (``workflow/_node_runner.py``)."""
    return code in _model_set_errors()


def _tag_untagged(events: Sequence[Event]) -> list[Event]:
    """``events``, with copies in place of those whose function responses do
    not name their event (``Pipeline.append(tag=False)``) that do, and whose
    text and function-call parts name it in their ``part_metadata`` (read
    back by :func:`_prompt_of`; ADK's contents assembly copies a part with its
    metadata, and neither its size estimates nor anything else it does read
    it). The originals are untouched."""
    out = []
    for event in events:
        parts = event.content.parts or [] if event.content else []
        if not all(
            p.function_response is None or _EVENT_KEY in (p.function_response.response or {})
            for p in parts
        ):
            event = named_copy(event)
        else:
            event = _parts_named(event)
        out.append(event)
    return out


def _parts_named(event: Event) -> Event:
    """``event``, or a copy (the content and its text and function-call parts
    copied, nothing deeper) whose text and function-call parts name it (see
    :func:`_tag_untagged`)."""
    parts = event.content.parts or [] if event.content else []

    def unnamed(p: Any) -> bool:
        return (p.text is not None or p.function_call is not None) and _part_event(p) != event.id

    if not _TEXT_TAGS or not any(unnamed(p) for p in parts):
        return event
    named = [
        p
        if not unnamed(p)
        else p.model_copy(
            update={"part_metadata": {**(p.part_metadata or {}), _EVENT_KEY: event.id}}
        )
        for p in parts
    ]
    return event.model_copy(update={"content": event.content.model_copy(update={"parts": named})})


def request_text_chars(llm_request: Any) -> int:
    """Characters of text in an ``LlmRequest``'s contents: what a summary model
    was given."""
    return sum(len(p.text or "") for c in llm_request.contents for p in c.parts or [])


def summary_reply(text: str, given: int) -> Any:
    """The summary model's ``LlmResponse``: ``text``, with usage metadata from
    the token model (four characters a token) for ``given`` characters in."""
    from google.adk.models.llm_response import LlmResponse

    return LlmResponse(
        content=types.Content(role="model", parts=[types.Part(text=text)]),
        usage_metadata=types.GenerateContentResponseUsageMetadata(
            prompt_token_count=given // 4,
            candidates_token_count=len(text) // 4,
            total_token_count=given // 4 + len(text) // 4,
        ),
    )


def named_copy(event: Event) -> Event:
    """A deep copy of ``event`` whose function-response parts name it
    (``_EVENT_KEY``: the event's id, replacing any tag they held), and whose
    text and function-call parts name it too (in their ``part_metadata``, see
    :func:`_tag_untagged`)."""
    copy = event.model_copy(deep=True)
    for part in copy.content.parts or []:
        if part.function_response is not None:
            part.function_response.response = {
                **(part.function_response.response or {}),
                _EVENT_KEY: event.id,
            }
        elif (part.text is not None or part.function_call is not None) and _TEXT_TAGS:
            part.part_metadata = {**(part.part_metadata or {}), _EVENT_KEY: event.id}
    return copy


def summary_text(number: int, given_chars: int, size: str, threshold: int | None) -> str:
    """The text of the scripted summariser's summary ``number``: ``summary#N``,
    then filler to ``size`` (``tiny``: nothing; ``large``: larger than
    ``threshold`` tokens by itself, four characters a token; ``grows``: half
    of ``given_chars``, the characters of what it was given). Both drivers'
    summary models answer with it."""
    label = f"summary#{number}"
    if size == "large":
        chars = 4 * (threshold or 1000) + 40
    elif size == "grows":
        chars = given_chars // 2
    else:
        return label
    return label + "\n" + "s" * max(0, chars - len(label) - 1)


def serialized_chars(text: str) -> int:
    """The characters a summary text takes in ADK's size check: its length
    as a JSON string, quotes aside (``_serialized_size`` measures a summary's
    content as JSON)."""
    return len(json.dumps(text, ensure_ascii=False)) - 2


def sized_summary_text(number: int, chars: int) -> str:
    """``summary#N``, then filler so that the text takes ``chars`` characters
    in ADK's size check (:func:`serialized_chars`; never shorter than the
    label)."""
    label = f"summary#{number}"
    filler = chars - serialized_chars(label) - serialized_chars("\n")
    return label if filler < 0 else label + "\n" + "s" * filler


class Pipeline:
    """A real ADK session driven step by step, as the runtime drives one.

    A session service holds the session (``InMemorySessionService``, or with
    ``storage="database"`` ``DatabaseSessionService`` on a SQLite file, from
    which :meth:`reload` reads the session afresh); a real ``App`` carries an
    ``EventsCompactionConfig`` with the given trigger values and a recording
    summariser (its summary text names the summary, ``summary#N``, and it
    keeps exactly which events it was given). :meth:`before_model_call` runs
    what the LLM flow runs before a model call (its
    ``CompactionRequestProcessor``), :meth:`end_invocation` what the runner
    runs after an invocation (``_run_compaction_for_sliding_window``, which
    tries token-threshold compaction first); :meth:`prompt` is ADK's own
    contents assembly for an agent.

    ``faithful`` (what the script driver uses): summaries are made by ADK's
    own ``LlmEventSummarizer`` over a scripted summary model, so the summary
    event (author, range by the first and last event given, usage) is ADK's;
    ``summary`` sets the summary's length (``tiny``, ``large``: larger than
    ``token_threshold`` by itself, ``grows``: half of what it was given);
    ``clock`` stamps summary events and ``new_id`` names every event, so a
    run is reproducible; and the end of an invocation passes what the
    ``Runner`` passes. Without ``faithful`` (recorded-session fixtures), the
    recorder builds its own summary event just after the newest event.

    Raises :class:`NotApplicable` on releases without event compaction or
    that refuse the configuration.
    """

    AGENT = "agent"

    def __init__(
        self,
        *,
        compaction_interval: int | None = None,
        overlap_size: int | None = None,
        token_threshold: int | None = None,
        event_retention_size: int | None = None,
        storage: str = "memory",
        summary: str = "tiny",
        faithful: bool = False,
        clock: Any = None,
        new_id: Any = None,
        root: str = AGENT,
        summary_sizes: Sequence[tuple[float, float, int]] = (),
    ) -> None:
        import asyncio
        import itertools

        from google.adk.agents.llm_agent import LlmAgent
        from google.adk.apps.app import App

        self._sliding = _helper("_run_compaction_for_sliding_window")
        #: The root agent's name: the harness's own ``agent``, or the name a
        #: recorded session's app gave it (its events are judged as that agent's).
        self.AGENT = root
        self.faithful = faithful
        self.storage = storage
        self.summary_size = summary
        #: A recorded session's summaries, (start, end, characters) each in
        #: the order the run stored them: the recorder's summaries take their
        #: sizes (see :meth:`recorded_text`).
        self.summary_sizes = tuple(summary_sizes)
        self._clock = clock
        counter = itertools.count(1)
        self._new_id = new_id or (lambda kind: Event.new_id())
        self._serial = counter
        #: A token-threshold summary was made before a model call of the
        #: running invocation (see before_model_call).
        self._token_compacted = False
        self._loop = asyncio.new_event_loop()
        self._folder = None
        if storage == "database":
            self._service = self._database_service()
        else:
            from google.adk.sessions.in_memory_session_service import InMemorySessionService

            self._service = InMemorySessionService()
        #: Ids of every event appended to the session service (ADK's summaries
        #: and the harness's events alike), in the order they were appended:
        #: the order an in-memory session keeps, whatever a reload gives back.
        self.stored_order: list[str] = []
        self._record_appends()
        self.session = self._loop.run_until_complete(
            self._service.create_session(app_name="harness", user_id="u")
        )
        #: Ids of the events appended through :meth:`append`, in order (every
        #: other stored event is one ADK's compaction made).
        self.appended_ids: list[str] = []
        #: One entry per summariser call: (session length then, input positions,
        #: numbers of earlier summaries it was given as a rolling-summary seed).
        self.summaries: list[tuple[int, tuple[int, ...], tuple[int, ...]]] = []
        #: The text of each summary, by number.
        self.summary_texts: list[str] = []
        #: For each summariser call, the characters of the events it was given
        #: (a rolling summary's seed included), as ADK's estimate counts them
        #: (:func:`prompt_chars`); the summariser's own instruction is not counted.
        self.summary_input_chars: list[int] = []
        #: The ids of the stored events each summary was given (positions move
        #: when a reload reorders the session; ids do not).
        self.summary_ids: list[tuple[str, ...]] = []
        self.token_threshold = token_threshold
        summarizer = self._summarizer()
        values = {
            "compaction_interval": compaction_interval,
            "overlap_size": overlap_size,
            "token_threshold": token_threshold,
            "event_retention_size": event_retention_size,
        }
        config = compaction_config(summarizer, values)
        self.app = App(
            name="harness",
            root_agent=LlmAgent(name=self.AGENT, model="gemini-2.0-flash"),
            events_compaction_config=config,
        )

    # -- the summariser ---------------------------------------------------------
    def _record(self, events: list[Event]) -> int:
        """Record a summariser call's input; returns the summary's number."""
        position = {id(e): i for i, e in enumerate(self.session.events)}
        taken = tuple(position[id(e)] for e in events if id(e) in position)
        seeds = tuple(
            number
            for e in events
            if id(e) not in position and e.content
            for p in e.content.parts or []
            if p.text and (number := summary_number(p.text)) is not None
        )
        self.summaries.append((len(self.session.events), taken, seeds))
        self.summary_ids.append(tuple(e.id for e in events if id(e) in position))
        self.summary_input_chars.append(prompt_chars([e.content for e in events if e.content]))
        return len(self.summaries) - 1

    def summary_text(self, number: int, given_chars: int) -> str:
        """The text of summary ``number``: ``summary#N``, then filler to the
        configured size (``given_chars``: the size of what it was given)."""
        return summary_text(number, given_chars, self.summary_size, self.token_threshold)

    def recorded_text(self, number: int, start: float, end: float) -> str:
        """The text of summary ``number`` over ``[start, end]`` when the
        summaries a recorded run stored are known: ``summary#N``, then filler
        to the size of the recorded summary with that range, else of the
        recorded summary of that number in order (else the last one). ADK
        weighs the next range against the previous summary's size before it
        compacts again (2.13.0's ``_is_range_worth_compacting``), so a replay
        whose summaries had another size would compact where the run did not."""
        sizes = self.summary_sizes
        chars = next(
            (c for s, e, c in sizes if (s, e) == (start, end)),
            sizes[min(number, len(sizes) - 1)][2],
        )
        return sized_summary_text(number, chars)

    def _summarizer(self) -> Any:
        pipeline = self
        if self.faithful:
            try:
                from google.adk.apps.llm_event_summarizer import LlmEventSummarizer
                from google.adk.models.base_llm import BaseLlm
            except ImportError:  # pragma: no cover - every release with compaction has it
                LlmEventSummarizer = None
            if LlmEventSummarizer is not None:

                class SummaryModel(BaseLlm):
                    """The summariser's model: answers with the next summary text
                    and usage metadata from the token model (4 characters a token)."""

                    async def generate_content_async(self, llm_request, stream=False):
                        given = request_text_chars(llm_request)
                        text = pipeline.summary_text(len(pipeline.summaries) - 1, given)
                        pipeline.summary_texts.append(text)
                        yield summary_reply(text, given)

                class Summarizer(LlmEventSummarizer):
                    async def maybe_summarize_events(self, *, events):
                        pipeline._record(events)
                        made = await super().maybe_summarize_events(events=events)
                        if made is not None:
                            # What ADK stamps at construction ("now"), from the run's clock.
                            made.id = pipeline._new_id("event")
                            made.invocation_id = pipeline._new_id("invocation")
                            if pipeline._clock is not None:
                                made.timestamp = pipeline._clock()
                        return made

                return Summarizer(llm=SummaryModel(model="summary-model"))
        from google.adk.apps.base_events_summarizer import BaseEventsSummarizer

        class Recorder(BaseEventsSummarizer):
            async def maybe_summarize_events(self, *, events: list[Event]) -> Event | None:
                number = pipeline._record(events)
                stamps = [e.timestamp for e in events]
                if pipeline.summary_sizes:
                    text = pipeline.recorded_text(number, min(stamps), max(stamps))
                else:
                    text = pipeline.summary_text(number, 0)
                pipeline.summary_texts.append(text)
                return Event(
                    author="model",
                    # Deterministic, and just after the newest event, as a
                    # summary written at the end of an invocation would be.
                    invocation_id=f"summary{number}",
                    timestamp=max(e.timestamp for e in pipeline.session.events) + 0.5,
                    actions=EventActions(
                        compaction=EventCompaction(
                            start_timestamp=min(stamps),
                            end_timestamp=max(stamps),
                            compacted_content=types.Content(
                                role="model", parts=[types.Part(text=text)]
                            ),
                        )
                    ),
                )

        return Recorder()

    # -- storage ----------------------------------------------------------------
    def _database_service(self) -> Any:
        import tempfile

        try:
            from google.adk.sessions.database_session_service import DatabaseSessionService
        except ImportError as exc:
            raise NotApplicable(f"google-adk {ADK_RELEASE} without the [db] extra: {exc}") from None
        import google.adk.sessions.database_session_service as db_module

        driver = "sqlite+aiosqlite" if hasattr(db_module, "create_async_engine") else "sqlite"
        self._folder = tempfile.TemporaryDirectory()
        try:
            service = DatabaseSessionService(f"{driver}:///{self._folder.name}/session.db")
        except Exception as exc:
            raise NotApplicable(
                f"google-adk {ADK_RELEASE}'s DatabaseSessionService cannot start here: "
                f"{type(exc).__name__}: {exc}"
            ) from None
        _no_disk_waits(service.db_engine)
        return service

    def _record_appends(self) -> None:
        """Note in :attr:`stored_order` every event appended to the service."""
        service, real = self._service, self._service.append_event
        order = self.stored_order

        async def append_event(session: Any, event: Event, *args: Any, **kwargs: Any) -> Any:
            made = await real(session, event, *args, **kwargs)
            order.append(event.id)
            return made

        service.append_event = append_event

    def as_stored(self) -> list[Event]:
        """The session in hand's events in the order they were appended (an
        in-memory session's order; a reload from a database may differ)."""
        by_id = {e.id: e for e in self.session.events}
        order = [by_id[i] for i in dict.fromkeys(self.stored_order) if i in by_id]
        noted = {e.id for e in order}
        return order + [e for e in self.session.events if e.id not in noted]

    def reload(self) -> None:
        """Read the session afresh from its service, as a server handling a new
        request does (``Runner.run_async`` calls ``get_session``)."""
        again = self._loop.run_until_complete(
            self._service.get_session(app_name="harness", user_id="u", session_id=self.session.id)
        )
        self.session = again
        # The database may give the events back in another order: every
        # recorded position follows its event.
        position = {e.id: i for i, e in enumerate(again.events)}
        self.summaries = [
            (length, tuple(position[x] for x in ids if x in position), seeds)
            for (length, _, seeds), ids in zip(self.summaries, self.summary_ids, strict=True)
        ]

    # -- appending ----------------------------------------------------------------
    def append(self, step: Step | Event, *, tag: bool = True) -> None:
        """Append an event (a :class:`~compaction_harness.spec.model.Step`, or an
        ``Event`` built by the caller) through the session service.

        ``tag``: each function response carries the event's id
        (``_EVENT_KEY``, see ``PromptPart``); without, the response is stored
        as given (a response ADK builds itself, which carries no tag when the
        ``Runner`` stores it), and :meth:`prompt` tags it when it reads it."""
        event = to_adk_event(step) if isinstance(step, Step) else step
        event.id = self._new_id("event")  # the service deduplicates equal events by id
        self.appended_ids.append(event.id)
        for part in event.content.parts if event.content and tag else ():
            if part.function_response is not None:  # see PromptPart
                part.function_response.response = {
                    **(part.function_response.response or {}),
                    _EVENT_KEY: event.id,
                }
        self._loop.run_until_complete(self._service.append_event(self.session, event))

    @cached_property
    def compacts_before_model_calls(self) -> bool:
        """Whether the release's LLM flow runs token-threshold compaction before
        each model call (its ``CompactionRequestProcessor``: 2.2.0 and later)."""
        if getattr(self.app.events_compaction_config, "token_threshold", None) is None:
            return False
        return _compaction_request_processor() is not None

    def before_model_call(self, agent_name: str | None = None, branch: str | None = None) -> bool:
        """What the LLM flow runs before each model call: on releases with
        :attr:`compacts_before_model_calls`, the flow's own
        ``CompactionRequestProcessor`` for the agent ``agent_name`` on
        ``branch`` (in the faithful mode; otherwise the function inside it,
        ``_run_compaction_for_token_threshold_config``, for the same agent and
        branch).
        Returns whether it made a summary."""
        if not self.compacts_before_model_calls:
            return False
        agent_name = agent_name or self.AGENT
        config = self.app.events_compaction_config
        if self.faithful:
            made = self._loop.run_until_complete(self._run_request_processor(agent_name, branch))
        else:
            made = self._loop.run_until_complete(
                self._token_compaction_for_agent(
                    self.session, self._service, config, agent_name, branch
                )
            )
        self._token_compacted |= bool(made)
        return bool(made)

    async def _run_request_processor(self, agent_name: str, branch: str | None) -> bool:
        from google.adk.agents.invocation_context import InvocationContext
        from google.adk.agents.llm_agent import LlmAgent
        from google.adk.models.llm_request import LlmRequest

        processor = _compaction_request_processor()
        agent = (
            self.app.root_agent
            if agent_name == self.AGENT
            else LlmAgent(name=agent_name, model="gemini-2.0-flash")
        )
        fields: dict[str, Any] = {
            "session_service": self._service,
            "invocation_id": self.session.events[-1].invocation_id
            if self.session.events
            else "e-0",
            "agent": agent,
            "session": self.session,
            "branch": branch,
            "events_compaction_config": self.app.events_compaction_config,
        }
        context = InvocationContext(
            **{k: v for k, v in fields.items() if k in InvocationContext.model_fields}
        )
        async for _ in processor.run_async(context, LlmRequest()):
            pass
        return bool(getattr(context, "token_compaction_checked", False))

    async def _token_compaction_for_agent(
        self,
        session: Any,
        service: Any,
        config: Any,
        agent_name: str | None = None,
        branch: str | None = None,
    ) -> bool:
        """``_run_compaction_for_token_threshold_config`` with the arguments
        ``CompactionRequestProcessor`` passes for the agent ``agent_name``
        (default the root) on ``branch`` (no isolation scope): a recorded
        session's sub-agent is compacted for as itself, with its own counts."""
        from google.adk.agents.llm_agent import LlmAgent

        fn = _helper("_run_compaction_for_token_threshold_config")
        name = agent_name or self.AGENT
        arguments: dict[str, Any] = {
            "config": config,
            "session": session,
            "session_service": service,
            "agent": self.app.root_agent
            if name == self.AGENT
            else LlmAgent(name=name, model="gemini-2.0-flash"),
            "agent_name": name,
            "current_branch": branch,
        }
        if "isolation_scope" in inspect.signature(fn).parameters:
            arguments["isolation_scope"] = None
        return await fn(**arguments)

    def calls_to_replay(
        self, invocation_id: str, tools: Sequence[str], agent_name: str | None = None
    ) -> tuple[str, ...]:
        """Ids of the calls ADK's flow runs again before it calls the model of
        ``agent_name`` in ``invocation_id`` (no branch), or ``()``.

        A step of the LLM flow asks ``decide_step_resume``
        (``google.adk.flows.llm_flows.core._resume``, 2.11.0 and later) whether
        the invocation left calls of its own tools (``tools``: their names)
        never executed, as when the process running them died and a client's
        answer to one of them resumed the invocation; if so it runs them and
        stores their results instead of calling the model, and the next step
        runs the request processors again. This asks ADK's own function on the
        session in hand, with the ``App``'s resumability (none). Releases
        without it: ``()``."""
        try:
            from google.adk.flows.llm_flows.core._resume import (
                ResumeAction,
                decide_step_resume,
            )
        except ImportError:
            return ()
        from google.adk.agents.invocation_context import InvocationContext

        fields: dict[str, Any] = {
            "session_service": self._service,
            "invocation_id": invocation_id,
            "agent": self.app.root_agent,
            "session": self.session,
            "branch": None,
        }
        context = InvocationContext(
            **{k: v for k, v in fields.items() if k in InvocationContext.model_fields}
        )
        decision = decide_step_resume(context, dict.fromkeys(tools))
        if decision.action is not ResumeAction.REPLAY_CALLS:
            return ()
        return tuple(c.id for c in decision.replay_event().get_function_calls() if c.id)

    @cached_property
    def _sliding_takes_skip(self) -> bool:
        """Whether the release's sliding-window runner takes ``skip_token_compaction``."""
        return "skip_token_compaction" in inspect.signature(self._sliding).parameters

    @property
    def token_path_runs_at_end(self) -> bool:
        """Whether :meth:`end_invocation` will try token-threshold compaction."""
        return not (self._sliding_takes_skip and self._skip_at_end())

    def _skip_at_end(self) -> bool:
        # The Runner passes its root invocation context's token_compaction_checked,
        # which the flow sets on the agent's own (child) context, so it is False
        # (seen with the real Runner on 2.11.0); the faithful mode passes that.
        return False if self.faithful else self._token_compacted

    def end_invocation(self) -> None:
        kwargs = {}
        if self._sliding_takes_skip:
            kwargs["skip_token_compaction"] = self._skip_at_end()
        self._token_compacted = False

        async def run() -> None:
            result = self._sliding(self.app, self.session, self._service, **kwargs)
            if inspect.isasyncgen(result):  # 2.13.0: the runner appends what it yields
                async for event in result:
                    await self._service.append_event(self.session, event)
            else:  # earlier releases append the summary themselves
                await result

        self._loop.run_until_complete(run())

    def token_trigger_fires(
        self,
        strip_counts: frozenset[int] = frozenset(),
        *,
        before_model_call: bool = False,
        agent_name: str | None = None,
        branch: str | None = None,
    ) -> bool:
        """Whether ADK's token-threshold compaction would call the summariser now.

        Runs the release's ``_run_compaction_for_token_threshold`` (1.26.0 and
        later; as the invocation's end does), or with ``before_model_call``
        ``_run_compaction_for_token_threshold_config`` for ``agent_name`` on
        ``branch`` (as :meth:`before_model_call` does), on a copy of the
        session in a fresh ``InMemorySessionService``, with a summariser that
        only counts its calls; this session and :attr:`summaries` are
        untouched. ``strip_counts``: positions of events whose
        ``usage_metadata.prompt_token_count`` is removed in the copy. Raises
        :class:`NotApplicable` on releases without token-threshold compaction.
        """
        from google.adk.agents.llm_agent import LlmAgent

        run_token = _helper("_run_compaction_for_token_threshold")
        app = self.app
        agent_name = agent_name or self.AGENT

        async def entry_point(config: Any, session: Any, service: Any) -> None:
            if before_model_call:
                fn = _helper("_run_compaction_for_token_threshold_config")
                arguments: dict[str, Any] = {
                    "config": config,
                    "session": session,
                    "session_service": service,
                    "agent": app.root_agent
                    if agent_name == self.AGENT
                    else LlmAgent(name=agent_name, model="gemini-2.0-flash"),
                    "agent_name": agent_name,
                    "current_branch": branch,
                }
                if "isolation_scope" in inspect.signature(fn).parameters:
                    arguments["isolation_scope"] = None
                await fn(**arguments)
            else:
                await run_token(
                    app.model_copy(update={"events_compaction_config": config}), session, service
                )

        return summariser_called(
            self.session.events,
            app.events_compaction_config,
            entry_point,
            strip_counts,
            loop=self._loop,
        )

    def steps(self) -> Session:
        """The session as the model sees it (summaries included)."""
        return from_adk_events(self.session.events)

    def origins(self) -> list[int | None]:
        """For each stored event, the number of the :meth:`append` call that
        stored it, or None for an event ADK's compaction made."""
        number = {event_id: k for k, event_id in enumerate(self.appended_ids)}
        return [number.get(e.id) for e in self.session.events]

    def prompt(
        self,
        *,
        without_summaries: bool = False,
        agent_name: str | None = None,
        branch: str | None = None,
        time_ordered: bool = False,
        as_stored: bool = False,
    ) -> list[PromptContent]:
        """``LlmRequest.contents`` as ADK assembles them for ``agent_name`` on
        ``branch``, with function call ids kept (as for models that pair by id).

        ``without_summaries``: as if no compaction had happened (the baseline
        of P4: what the prompt builder shows of the raw events).
        ``time_ordered``: the events put in order of timestamp, then id, as
        ``DatabaseSessionService.get_session`` returns them.
        ``as_stored``: the events in the order they were appended
        (:meth:`as_stored`), as an in-memory session holds them."""
        agent_name = agent_name or self.AGENT
        events = _tag_untagged(self.as_stored() if as_stored else self.session.events)
        if time_ordered:
            events.sort(key=lambda e: (e.timestamp, e.id))
        if without_summaries:
            events = [e for e in events if not (e.actions and e.actions.compaction)]
        return _prompt_of(
            self._contents(_tag_untagged(events), agent_name, branch), self._positions()
        )

    def _positions(self) -> dict[str, int]:
        """Event id -> position in the session in hand."""
        return {e.id: i for i, e in enumerate(self.session.events)}

    def prompt_chars_of(
        self,
        positions: Sequence[int],
        agent_name: str | None = None,
        branch: str | None = None,
        *,
        compacted: Sequence[int] = (),
    ) -> int:
        """Characters of the prompt ADK would assemble for ``agent_name`` from
        the stored events at ``positions`` alone, as ADK's estimate counts them.

        ``compacted``: stored positions of events a summary is taken to have
        replaced. Where the release re-injects a compacted call whose response
        survives (``_recover_compacted_function_calls`` in
        ``google.adk.flows.llm_flows.context._compaction``, where the release has it),
        it is given these events as its source, so the count includes what ADK
        must restore to keep that response paired; older releases restore
        nothing and the count leaves it out as they do.
        """
        return prompt_chars(self._subset_contents(positions, agent_name, branch, compacted))

    def prompt_of_events(
        self,
        positions: Sequence[int],
        agent_name: str | None = None,
        branch: str | None = None,
        *,
        compacted: Sequence[int] = (),
    ) -> list[PromptContent]:
        """The prompt :meth:`prompt_chars_of` counts: what ADK assembles for
        ``agent_name`` from the stored events at ``positions`` alone."""
        contents = self._subset_contents(positions, agent_name, branch, compacted)
        return _prompt_of(contents, self._positions())

    def _subset_contents(
        self,
        positions: Sequence[int],
        agent_name: str | None,
        branch: str | None,
        compacted: Sequence[int],
    ) -> list[Any]:
        agent_name = agent_name or self.AGENT
        events = self.session.events
        chosen = [events[i] for i in sorted(positions)]
        if compacted:
            try:
                from google.adk.flows.llm_flows.context._compaction import (
                    _recover_compacted_function_calls as recover,
                )
            except ImportError:
                recover = None
            if recover is not None:
                source = [events[i] for i in sorted({*positions, *compacted})]
                chosen = recover(chosen, source)
        return self._contents(chosen, agent_name, branch)

    def content_chars_of(self, positions: Sequence[int]) -> int:
        """Characters of the stored events at ``positions`` as their own
        content holds them (a compaction event: its summary), counted as
        :func:`prompt_chars` counts a prompt, but without what prompt
        assembly wraps around them for a reader (another agent's reply
        reaches the root as a user content that opens with a "For context:
        ..." preamble of about 430 characters). This is how google-adk 2.13.0
        prices a range before it summarises it (``_serialized_size`` of the
        events' ``_request_content`` in ``google/adk/apps/compaction.py``):
        by the events, whoever reads them."""
        events = self.session.events
        contents = []
        for i in sorted(positions):
            event = events[i]
            compaction = event.actions.compaction if event.actions else None
            content = (
                compaction.compacted_content
                if compaction is not None and compaction.compacted_content is not None
                else event.content
            )
            if content is not None:
                contents.append(content)
        return prompt_chars(contents)

    def prompt_chars(
        self,
        agent_name: str | None = None,
        branch: str | None = None,
        *,
        leave_out: Collection[str] = (),
    ) -> int:
        """The size of the prompt ADK assembles now, as ADK's estimate counts it.

        ``leave_out``: ids of stored events to assemble the prompt without (the
        cost profile leaves out the summaries an invocation made, to size the
        prompt as it would be had that invocation compacted nothing)."""
        agent_name = agent_name or self.AGENT
        events = [e for e in self.session.events if e.id not in leave_out]
        return prompt_chars(self._contents(events, agent_name, branch))

    def _contents(self, events: list[Event], agent_name: str, branch: str | None) -> list[Any]:
        try:
            from google.adk.flows.llm_flows.context._contents import _get_contents
        except ImportError:  # releases before the context/ package
            from google.adk.flows.llm_flows.contents import _get_contents
        params = inspect.signature(_get_contents).parameters
        if "preserve_function_call_ids" in params:
            return _get_contents(branch, events, agent_name, preserve_function_call_ids=True)
        return _get_contents(branch, events, agent_name)

    def database_prompt(
        self, agent_name: str | None = None, branch: str | None = None
    ) -> list[PromptContent]:
        """P7: the prompt after a round trip through ``DatabaseSessionService``.

        With ``storage="database"``, the session is read afresh from its own
        database. Otherwise every event of the session (summaries included) is
        stored in a fresh SQLite file through ADK's ``DatabaseSessionService``
        (the ``google-adk[db]`` extra) and the session reloaded from it. The
        prompt is assembled from what came back. Raises :class:`NotApplicable`
        without the extra.
        """
        agent_name = agent_name or self.AGENT
        if self.storage == "database":
            again = self._loop.run_until_complete(
                self._service.get_session(
                    app_name="harness", user_id="u", session_id=self.session.id
                )
            )
            return _prompt_of(
                self._contents(_tag_untagged(again.events), agent_name, branch),
                self._positions(),
            )
        import tempfile

        try:
            from google.adk.sessions.database_session_service import DatabaseSessionService
        except ImportError as exc:
            raise NotApplicable(f"google-adk {ADK_RELEASE} without the [db] extra: {exc}") from None

        import google.adk.sessions.database_session_service as db_module

        # Releases before the async engine (1.x) take a plain SQLite URL.
        driver = "sqlite+aiosqlite" if hasattr(db_module, "create_async_engine") else "sqlite"

        async def round_trip(folder: str) -> list[Event]:
            service = DatabaseSessionService(f"{driver}:///{folder}/session.db")
            _no_disk_waits(service.db_engine)
            try:
                stored = await service.create_session(app_name="harness", user_id="u")
                for event in self.session.events:
                    await service.append_event(stored, event.model_copy(deep=True))
                again = await service.get_session(
                    app_name="harness", user_id="u", session_id=stored.id
                )
                return list(again.events)
            finally:
                await _dispose(service)

        with tempfile.TemporaryDirectory() as folder:
            events = self._loop.run_until_complete(round_trip(folder))
        return _prompt_of(
            self._contents(_tag_untagged(events), agent_name, branch), self._positions()
        )

    def close(self) -> None:
        if self.storage == "database":
            self._loop.run_until_complete(_dispose(self._service))
        # Async generators ADK left open (a compaction span, say) are closed
        # here, not by the garbage collector after the loop is gone.
        self._loop.run_until_complete(self._loop.shutdown_asyncgens())
        self._loop.close()
        if self._folder is not None:
            self._folder.cleanup()


async def _dispose(service: Any) -> None:
    engine = getattr(service, "db_engine", None)
    if engine is not None:
        disposed = engine.dispose()
        if inspect.isawaitable(disposed):  # the async engine (2.x)
            await disposed


@cache
def litellm_heals_missing_tool_results() -> bool:
    """Whether the release's LiteLLM adapter (``google/adk/models/lite_llm.py``)
    inserts a placeholder tool result for every call left unanswered before
    the next message (``_ensure_tool_results``: "LiteLLM-backed providers like
    OpenAI and Anthropic reject histories where an assistant tool call is not
    followed by tool responses"): 1.24.0 and later; 1.16.0 and 1.20.0 have no
    such step, and a strict provider refuses their request. Read from the source, so
    the ``litellm`` package need not be installed."""
    import importlib.util

    spec = importlib.util.find_spec("google.adk.models.lite_llm")
    if spec is None or spec.origin is None:
        return False
    with open(spec.origin, encoding="utf-8") as source:
        return "def _ensure_tool_results(" in source.read()


def compaction_config(summarizer: Any, triggers: dict[str, int | None]) -> Any:
    """ADK's ``EventsCompactionConfig`` with ``summarizer`` and the ``triggers``
    that are not None (``compaction_interval``, ``overlap_size``,
    ``token_threshold``, ``event_retention_size``). Raises
    :class:`NotApplicable` when the release has no such field (the token
    threshold arrived in 1.26.0) or refuses the values (releases before 2.6.1
    require both sliding-window fields), naming the field."""
    from google.adk.apps.app import EventsCompactionConfig
    from pydantic import ValidationError

    for name, value in triggers.items():
        if value is not None and name not in EventsCompactionConfig.model_fields:
            raise NotApplicable(f"google-adk {ADK_RELEASE} has no EventsCompactionConfig.{name}")
    try:
        return EventsCompactionConfig(
            summarizer=summarizer, **{k: v for k, v in triggers.items() if v is not None}
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first.get("loc", ()))
        raise NotApplicable(
            f"google-adk {ADK_RELEASE} refuses this configuration: {where}: {first.get('msg')}"
        ) from None


def summariser_called(
    events: Sequence[Event],
    config: Any,
    entry_point: Any,
    strip_counts: frozenset[int] = frozenset(),
    *,
    loop: Any = None,
) -> bool:
    """Whether one of ADK's token-threshold entry points calls the summariser
    on a copy of ``events``: ``entry_point(config, session, service)`` is
    awaited with a copy of ``config`` (an ``EventsCompactionConfig``) whose
    summariser only counts its calls, and the copy in a fresh
    ``InMemorySessionService``; ``events`` are untouched. ``strip_counts``:
    positions of events whose ``usage_metadata.prompt_token_count`` is removed
    in the copy. ``loop``: the event loop to run on (default: a new one; never
    one that is running)."""
    import asyncio

    from google.adk.apps.base_events_summarizer import BaseEventsSummarizer
    from google.adk.sessions.in_memory_session_service import InMemorySessionService

    calls: list[int] = []

    class Counter(BaseEventsSummarizer):
        async def maybe_summarize_events(self, *, events: list[Event]) -> Event | None:
            calls.append(len(events))
            return None  # nothing is appended to the copy

    copied = [e.model_copy(deep=True) for e in events]
    for k in strip_counts:
        if copied[k].usage_metadata is not None:
            copied[k].usage_metadata.prompt_token_count = None
    counting = config.model_copy(update={"summarizer": Counter()})

    async def run() -> None:
        service = InMemorySessionService()
        copy = await service.create_session(app_name="harness", user_id="u")
        copy.events = copied
        await entry_point(counting, copy, service)

    if loop is not None:
        loop.run_until_complete(run())
    else:
        asyncio.run(run())
    return bool(calls)


@cache
def prunes_orphaned_calls() -> bool:
    """Whether the release's contents assembly prunes function calls that no
    response answers (``drop_orphaned_function_calls`` in
    ``google/adk/flows/llm_flows/tools/_rearranger.py``: 2.11.0 and later;
    earlier releases send such calls as they are). P4 reads it (see
    ``prompt_checks.check_nothing_lost``)."""
    try:
        from google.adk.flows.llm_flows.tools import _rearranger
    except ImportError:
        return False
    return hasattr(_rearranger, "drop_orphaned_function_calls")


def _found_in(modules: Sequence[str], name: str) -> list[Any]:
    """The distinct objects named ``name`` in those of ``modules`` that the
    installed release has, in the order given (ADK moves its pieces between
    modules from one release to the next)."""
    found: list[Any] = []
    for module in modules:
        try:
            value = getattr(importlib.import_module(module), name, None)
        except ImportError:
            continue
        if value is not None and not any(value is f for f in found):
            found.append(value)
    return found


def _compaction_request_processor() -> Any:
    """The LLM flow's ``CompactionRequestProcessor`` instance
    (``request_processor``), or None on releases without one (before 2.2.0)."""
    modules = (
        "google.adk.flows.llm_flows.context._compaction",
        "google.adk.flows.llm_flows.compaction",
    )
    return next(iter(_found_in(modules, "request_processor")), None)


def _no_disk_waits(engine: Any) -> None:
    """SQLite without fsync on this throw-away file: the service commits once per
    appended event, and waiting for the disk each time would make P7 the slowest
    step of a run. What is stored and read back is unchanged."""
    from sqlalchemy import event as sqlalchemy_event

    def pragmas(connection: Any, record: Any) -> None:
        cursor = connection.cursor()
        cursor.execute("PRAGMA synchronous=OFF")
        cursor.execute("PRAGMA journal_mode=MEMORY")
        cursor.close()

    sqlalchemy_event.listen(getattr(engine, "sync_engine", engine), "connect", pragmas)


class prefix_helper_replaced:
    """Within ``with``, ADK's ``_longest_self_contained_prefix`` answers with
    ``answer(window_positions, session) -> length`` instead.

    For counterfactual replays only (known-fault predicates): ``answer`` gets
    the window as positions in the model of ``all_events``.
    """

    def __init__(self, answer) -> None:
        self.answer = answer

    def __enter__(self) -> None:
        self.original = getattr(_compaction, "_longest_self_contained_prefix", None)

        def replaced(events, all_events=None):
            everything = list(all_events if all_events is not None else events)
            position = {id(e): i for i, e in enumerate(everything)}
            window = tuple(position[id(e)] for e in events)
            return events[: self.answer(window, from_adk_events(everything))]

        _compaction._longest_self_contained_prefix = replaced

    def __exit__(self, *exc) -> None:
        _compaction._longest_self_contained_prefix = self.original


class summary_price_from_adk_summaries:
    """Within ``with``, ADK's ``_previous_summary_chars`` (``apps/compaction.py``,
    2.13.0: the size of the latest compaction event, which
    ``_is_range_worth_compacting`` takes as the price of the next summary)
    reads only summaries ADK's summariser wrote (their text starts with
    ``summary#``, as the harness's summariser writes them), never a record a
    client appended. For counterfactual replays only (known-fault
    predicates); on a release without the function it changes nothing.
    """

    def __enter__(self) -> None:
        self.original = getattr(_compaction, "_previous_summary_chars", None)
        if self.original is None:
            return
        original = self.original

        def adk_written(event: Event) -> bool:
            content = event.actions.compaction.compacted_content
            parts = (content.parts or []) if content else []
            return bool(parts) and (parts[0].text or "").startswith("summary#")

        def priced(events):
            written = [e for e in events if e.actions and e.actions.compaction and adk_written(e)]
            return original(written[-1:]) if written else 0

        _compaction._previous_summary_chars = priced

    def __exit__(self, *exc) -> None:
        if self.original is not None:
            _compaction._previous_summary_chars = self.original


class reloaded_actions_validated:
    """Within ``with``, ``DatabaseSessionService`` gives back each stored
    event's ``actions`` validated into ``EventActions``, nested models
    included (``actions.compaction`` an ``EventCompaction``, its
    ``compacted_content`` a ``types.Content``), as the event was appended: the
    session a reload returns holds the same events as the session stored.
    Wraps ``StorageEvent.to_event`` (``google/adk/sessions/
    database_session_service.py``; ``sessions/schemas/v0.py`` and ``v1.py`` on
    releases that moved it): the event it builds gets its actions validated
    again. On google-adk 1.18.0 it rebuilds the actions with
    ``EventActions().model_copy(update=self.actions.model_dump())``, a copy
    that validates nothing, so every nested model comes back a plain dict.

    For counterfactual replays (known-fault predicates) and as the fault's fix
    (``tests/upstream_fixes.py``). Raises :class:`NotApplicable` on entry when
    the release has no ``StorageEvent.to_event``.
    """

    def __enter__(self) -> None:
        import warnings

        modules = (
            "google.adk.sessions.database_session_service",
            "google.adk.sessions.schemas.v0",
            "google.adk.sessions.schemas.v1",
        )
        self.homes = [c for c in _found_in(modules, "StorageEvent") if hasattr(c, "to_event")]
        if not self.homes:
            raise NotApplicable(f"google-adk {ADK_RELEASE} has no StorageEvent.to_event")
        self.originals = [home.to_event for home in self.homes]

        def validated(original: Any) -> Any:
            def to_event(storage: Any, *args: Any, **kwargs: Any) -> Event:
                event = original(storage, *args, **kwargs)
                if event.actions is not None:
                    with warnings.catch_warnings():  # pydantic warns of the dicts it dumps
                        warnings.simplefilter("ignore")
                        dumped = event.actions.model_dump()
                    event.actions = EventActions.model_validate(dumped)
                return event

            return to_event

        for home, original in zip(self.homes, self.originals, strict=True):
            home.to_event = validated(original)

    def __exit__(self, *exc) -> None:
        for home, original in zip(self.homes, self.originals, strict=True):
            home.to_event = original
