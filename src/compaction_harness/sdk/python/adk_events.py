"""The ADK adapter's events: the session model to real ``google.adk.events.Event``
objects and back (:mod:`.adk` re-exports every name).
"""

from __future__ import annotations

import enum
import json
from collections.abc import Sequence
from functools import cache
from typing import Any

from google.adk import version as _adk_version
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions, EventCompaction
from google.adk.tools.tool_confirmation import ToolConfirmation
from google.genai import types

from ...spec.model import REQUEST_CREDENTIAL_CALL, Call, Compaction, Response, Session, Step
from .. import protocol as _protocol

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


def session_from_json(text: str) -> Session:
    """The model of a real session as ADK's session services store it.

    Accepts a ``google.adk.sessions.Session`` JSON document (its ``events``)
    or a JSON list of ``Event`` documents. Parsed by ADK's own pydantic
    models, which execute nothing. Raises ``ValueError`` with a one-line
    message.
    """

    from google.adk.sessions.session import Session as AdkSession
    from pydantic import ValidationError

    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"invalid JSON: {exc}") from None
    if isinstance(data, dict) and "events" in data:
        documents = [((), AdkSession, data)]
    elif isinstance(data, list):  # each event on its own: its index leads the path
        documents = [((k,), Event, item) for k, item in enumerate(data)]
    else:
        raise ValueError("expected an ADK Session object (with 'events') or a list of events")
    events: list[Event] = []
    for within, model, document in documents:
        try:
            parsed = model.model_validate(document)
        except ValidationError as exc:
            raise ValueError(f"not an ADK session: {validation_problem(exc, within)}") from None
        events.extend(parsed.events if model is AdkSession else [parsed])
    return from_adk_events(events)


def validation_problem(error: Any, within: tuple[str | int, ...] = ()) -> str:
    """The first problem of a pydantic ``ValidationError`` in one line: where
    (its field path after ``within``, written as the fixture loader writes
    one: ``events[0].timestamp``) and pydantic's message, without the
    ``Value error,`` of a model's own validator; the message alone where the
    model as a whole is refused. Pydantic's own text of the error runs over
    several lines (one per problem, and a link)."""
    first = error.errors()[0]
    where = ""
    for part in (*within, *first.get("loc", ())):
        where += f"[{part}]" if isinstance(part, int) else f".{part}" if where else str(part)
    message = " ".join(str(first.get("msg", "")).split()).removeprefix("Value error, ")
    return f"{where}: {message}" if where else message
