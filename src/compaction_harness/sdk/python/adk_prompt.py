"""The ADK adapter's prompts: an assembled prompt as the harness reads it, the
tags that name each part's event, and the scripted summariser's texts
(:mod:`.adk` re-exports every name).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from functools import cache
from typing import Any

from google.adk.events.event import Event
from google.genai import types

from ...spec.model import ShownText, summary_number

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


# -- what a range and a summary take in a request (P3's wait) ------------------
def request_content(event: Event) -> types.Content | None:
    """What ``event`` puts in a request: a compaction event's summary
    (``compacted_content``), any other event's ``content`` (google-adk
    2.13.0's ``_request_content`` in ``google/adk/apps/compaction.py``)."""
    compaction = event.actions.compaction if event.actions else None
    if compaction is not None and compaction.compacted_content is not None:
        return compaction.compacted_content
    return event.content


def request_chars(contents: Sequence[types.Content | None]) -> int:
    """Characters ``contents`` take in a request: the JSON of each, fields
    left unset left out (``None``: nothing). Text, calls and responses, and
    the framing (role, part keys) a content carries around them."""
    return sum(len(c.model_dump_json(exclude_none=True)) for c in contents if c is not None)


#: Characters an empty summary takes in a request (``{"parts":[],"role":"model"}``: 27).
EMPTY_SUMMARY_CHARS = request_chars([types.Content(role="model", parts=[])])


def waits_to_save_prompt(ranges: Sequence[Sequence[Event]], summary: str | None) -> bool:
    """Whether compaction may leave each of ``ranges`` (runs of stored events
    a summary could take, one range a summary: see
    :func:`~compaction_harness.spec.liveness_checks.ranges_beyond_retention`)
    uncompacted for now, waiting until replacing it saves prompt (P3's
    allowance). ``summary``: the text of the summary that prices the next one
    (:func:`~compaction_harness.sdk.python.pipeline.pricing_summary`), None
    before any: then nothing excuses a wait.

    A summary is a content of the request of its own: replacing a range by it
    saves the range's size less the summary's, both measured as the request
    carries them (:func:`request_chars`: text-only counts miss the framing
    that dominates small events, and a 20-character reply outweighs a
    9-character summary by text while the two contents take 58 and 47
    characters). The next summary's size is unknown until it is paid for;
    the latest one stands in. A range is left rightly while it is no larger
    than that summary plus :data:`EMPTY_SUMMARY_CHARS`: google-adk 2.13.0
    prices a range against an empty summary, whose framing is then counted
    again in the latest summary's full size (``_removable_prompt_chars``
    against ``_previous_summary_chars``, ``_is_range_worth_compacting`` in
    ``google/adk/apps/compaction.py``), so it waits up to one framing longer
    than the exact rule. That is a constant: the backlog stays bounded, and
    a range that outgrows it must be summarised."""
    if summary is None:
        return False
    price = request_chars([types.Content(role="model", parts=[types.Part(text=summary)])])
    return all(
        request_chars([request_content(e) for e in r]) <= price + EMPTY_SUMMARY_CHARS
        for r in ranges
    )


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


def seed_numbers(events: Sequence[Event], held: Collection[int]) -> tuple[int, ...]:
    """The numbers of the earlier summaries a summariser was given as its
    rolling-summary seed among ``events``: the events the session does not
    hold (``held``: the ``id()`` of each event it holds; ADK makes the seed
    afresh), whose text names a summary (``summary#N``)."""
    return tuple(
        number
        for e in events
        if id(e) not in held and e.content
        for p in e.content.parts or []
        if p.text and (number := summary_number(p.text)) is not None
    )
