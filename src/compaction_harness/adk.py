"""The ADK adapter: the only module of the harness that imports ``google.adk``.

It turns :class:`~compaction_harness.model.Session` objects into real
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
=====================================  =======================================
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from functools import cache
from typing import Any

from google.adk import version as _adk_version
from google.adk.apps import compaction as _compaction
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions, EventCompaction
from google.adk.tools.tool_confirmation import ToolConfirmation
from google.genai import types

from .model import Call, Compaction, Response, Session, Step

__all__ = [
    "ADK_RELEASE",
    "NotApplicable",
    "from_adk_events",
    "helper_availability",
    "longest_self_contained_prefix",
    "provably_dead_call_ids",
    "to_adk_event",
    "to_adk_events",
]

#: The installed google-adk release, as ``google.adk.version.__version__`` says.
ADK_RELEASE: str = _adk_version.__version__


class NotApplicable(Exception):
    """The installed release lacks what a property needs; ``str()`` says what."""


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
    responses; user-authored events carry role ``user``, all others ``model``.
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
    content = (
        types.Content(role="user" if step.author == "user" else "model", parts=parts)
        if parts
        else None
    )
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


def to_adk_events(session: Session) -> list[Event]:
    """One fresh ``Event`` per step, in order."""
    return [to_adk_event(step) for step in session]


# -- ADK -> model ----------------------------------------------------------
def from_adk_events(events: Sequence[Event]) -> Session:
    """The model of real events (texts, arguments and results are dropped).

    Only the first text part of an event is kept; everything compaction reads
    is kept exactly. Fields an older release's events lack read as absent.
    """
    steps = []
    for event in events:
        texts = [p.text for p in (event.content.parts or [])] if event.content else []
        texts = [t for t in texts if t is not None]
        compaction = event.actions.compaction if event.actions else None
        summary_parts = compaction.compacted_content.parts or [] if compaction is not None else []
        usage = event.usage_metadata
        steps.append(
            Step(
                invocation=event.invocation_id or "",
                author=event.author or "",
                timestamp=float(event.timestamp),
                text=texts[0] if texts else None,
                calls=tuple(Call(c.id or "", c.name or "") for c in event.get_function_calls()),
                responses=tuple(
                    Response(r.id or "", r.name or "") for r in event.get_function_responses()
                ),
                long_running=tuple(sorted(event.long_running_tool_ids or ())),
                confirmations=tuple(
                    sorted(getattr(event.actions, "requested_tool_confirmations", None) or {})
                ),
                auth_requests=tuple(
                    sorted(getattr(event.actions, "requested_auth_configs", None) or {})
                ),
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
            )
        )
    return Session(tuple(steps))


# -- the real helpers --------------------------------------------------------
def _helper(name: str) -> Any:
    fn = getattr(_compaction, name, None)
    if fn is None:
        raise NotApplicable(f"google-adk {ADK_RELEASE} has no google.adk.apps.compaction.{name}")
    return fn


@cache
def _accepts(name: str, parameter: str) -> bool:
    return parameter in inspect.signature(_helper(name)).parameters


def helper_availability() -> dict[str, str | None]:
    """Helper name -> ``None`` when present, else the reason it is not."""
    out: dict[str, str | None] = {}
    for name in ("_longest_self_contained_prefix", "_provably_dead_call_ids"):
        try:
            _helper(name)
            out[name] = None
        except NotApplicable as exc:
            out[name] = str(exc)
    return out


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
