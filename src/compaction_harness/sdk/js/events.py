"""The session model's steps as ADK-JS event objects and back: camel case,
timestamps in milliseconds (:func:`to_js_event`, :func:`client_record_event`
for a compaction record ADK-JS's compaction did not make,
:func:`from_js_event` for what the driver sends back)."""

from __future__ import annotations

from typing import Any

from ...spec.model import Call, Compaction, Response, Step
from .case import NotApplicable

__all__ = ["client_record_event", "from_js_event", "to_js_event"]


def _ms(seconds: float) -> float:
    """Seconds (the model's unit) as ADK-JS's milliseconds (``Date.now()``)."""
    return round(seconds * 1000, 3)


def to_js_event(step: Step, event_id: str, payload: int = 20) -> dict[str, Any]:
    """An ADK-JS event object (as ``createEvent`` takes it) for ``step``.

    Function calls carry ``args = {"query": ..., "harness_call": id}`` and
    responses ``{"result": ..., "harness_call": id, "harness_event": event_id}``
    (``payload`` characters), so the driver can name parts of the contents
    that ``removeClientFunctionCallId`` strips of their ``adk-`` ids. Role:
    ``user`` for the user's events and tool results, ``model`` otherwise.
    Raises :class:`NotApplicable` for what these events cannot hold here
    (rewinds, isolation scopes) and for a compaction record, which is a
    compacted event of its own (:func:`client_record_event`).
    """
    if step.compaction is not None or step.rewind_before or step.isolation_scope:
        raise NotApplicable("ADK-JS events here hold no compaction record, rewind or scope")
    parts: list[dict[str, Any]] = []
    if step.text is not None:
        parts.append({"text": step.text})
    for c in step.calls:
        args = {"query": "q" * min(payload, 200), "harness_call": c.id}
        parts.append({"functionCall": {"id": c.id, "name": c.name, "args": args}})
    for r in step.responses:
        response = {"result": "r" * payload, "harness_call": r.id, "harness_event": event_id}
        parts.append({"functionResponse": {"id": r.id, "name": r.name, "response": response}})
    role = "user" if step.author == "user" or step.responses else "model"
    event: dict[str, Any] = {
        "id": event_id,
        "invocationId": step.invocation,
        "author": step.author,
        "timestamp": _ms(step.timestamp),
        "content": {"role": role, "parts": parts},
        "longRunningToolIds": list(step.long_running),
    }
    if step.branch is not None:
        event["branch"] = step.branch
    if step.prompt_tokens is not None:
        event["usageMetadata"] = {"promptTokenCount": step.prompt_tokens}
    actions: dict[str, Any] = {}
    if step.confirmations:
        actions["requestedToolConfirmations"] = {k: {} for k in step.confirmations}
    if step.auth_requests:
        actions["requestedAuthConfigs"] = {k: {} for k in step.auth_requests}
    if actions:
        event["actions"] = actions
    return event


def client_record_event(step: Step, event_id: str) -> dict[str, Any]:
    """The ADK-JS event for a compaction record that ADK-JS's compaction did
    not make (``step.compaction``: one a client appended straight to the
    session service, or one an older session brought along).

    ADK-JS 2.0.0 stores a compaction as a flagged event of its own, not as an
    action: ``createCompactedEvent`` (``events/compacted_event.js``) is
    ``createEvent(params)`` plus ``isCompacted: true``, ``startTime``,
    ``endTime`` (milliseconds) and ``compactedContent``, and
    ``isCompactedEvent`` is ``event.isCompacted === true``, whoever wrote it.
    Every reader goes through that test: ``getActiveEvents``
    (``context/compaction_utils.js``: the latest compacted event in stored
    order, and the raw events stamped later than its ``endTime``),
    ``TokenBasedContextCompactor.compact`` (gives the active compacted event
    to the summariser with the raw events), and ``getContents``
    (``agents/processors/content_processor_utils.js``: ``convertCompactedEvent``
    sends ``[Previous Context Summary]:\n<compactedContent>`` as a user turn).
    ``VertexAiSessionService`` reads one back from an event's
    ``customMetadata._compaction`` the same way (``_fromApiEvent``), and
    ``createEvent`` keeps every field it is given, so an event a client or an
    older session wrote in this shape is read exactly as one
    ``LlmSummarizer`` wrote (whose ``content`` is the summary as a model
    turn). Nothing in ``dist/`` reads ``startTime``: a record's range, for
    ADK-JS, is everything stamped up to ``endTime``.

    Returns ``{"id", "invocationId", "author", "timestamp", "content",
    "longRunningToolIds", "isCompacted", "startTime", "endTime",
    "compactedContent"}`` (timestamps in ms). Raises :class:`NotApplicable`
    for a record that also holds parts, a branch, a scope or a rewind (no
    such record is written here)."""
    record = step.compaction
    if record is None:
        raise ValueError("client_record_event: the step holds no compaction record")
    if (
        step.text is not None
        or step.calls
        or step.responses
        or step.branch is not None
        or step.isolation_scope is not None
        or step.rewind_before is not None
    ):
        raise NotApplicable(
            "ADK-JS cannot represent a compaction record that also holds parts, a branch, "
            "an isolation scope or a rewind"
        )
    return {
        "id": event_id,
        "invocationId": step.invocation,
        "author": step.author,
        "timestamp": _ms(step.timestamp),
        "content": {"role": "model", "parts": [{"text": record.summary}]},
        "longRunningToolIds": [],
        "isCompacted": True,
        "startTime": _ms(record.start),
        "endTime": _ms(record.end),
        "compactedContent": record.summary,
    }


def _requested(event: dict[str, Any], key: str) -> tuple[str, ...]:
    """The keys of ``key`` (``requestedToolConfirmations`` /
    ``requestedAuthConfigs``) of a JS event, sorted: the driver's
    ``eventJson`` lists them at the top level, an ADK-JS event object keeps
    the map under ``actions`` (``events/event_actions.js``). In ADK-JS a
    confirmation's key sits on the synthetic ``adk_request_confirmation``
    call's event (there is no placeholder response); a credential request's
    on the placeholder response, as in adk-python. Either way it opens the
    obligation the definitions give it."""
    listed = event.get(key)
    if listed is None:
        listed = (event.get("actions") or {}).get(key)
    return tuple(sorted(listed or ()))


def from_js_event(event: dict[str, Any]) -> Step:
    """The model's step for an event the driver sent back (``eventJson``) or
    an ADK-JS event object (requests under ``actions``)."""
    parts = (event.get("content") or {}).get("parts") or []
    texts = [p["text"] for p in parts if isinstance(p.get("text"), str) and not p.get("thought")]
    compaction = None
    if event.get("isCompacted"):
        compaction = Compaction(
            float(event.get("startTime") or 0) / 1000,
            float(event.get("endTime") or 0) / 1000,
            event.get("compactedContent") or "",
        )
    usage = event.get("usageMetadata") or {}
    return Step(
        invocation=event.get("invocationId") or "",
        author=event.get("author") or "",
        timestamp=float(event.get("timestamp") or 0) / 1000,
        text="".join(texts) if texts and compaction is None else None,
        calls=tuple(
            Call(p["functionCall"].get("id") or "", p["functionCall"].get("name") or "")
            for p in parts
            if p.get("functionCall")
        ),
        responses=tuple(
            Response(p["functionResponse"].get("id") or "", p["functionResponse"].get("name") or "")
            for p in parts
            if p.get("functionResponse")
        ),
        long_running=tuple(sorted(set(event.get("longRunningToolIds") or ()))),
        confirmations=_requested(event, "requestedToolConfirmations"),
        auth_requests=_requested(event, "requestedAuthConfigs"),
        compaction=compaction,
        branch=event.get("branch"),
        isolation_scope=event.get("isolationScope"),
        prompt_tokens=usage.get("promptTokenCount"),
    )
