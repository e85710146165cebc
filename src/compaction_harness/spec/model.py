"""The session model: an ADK-independent, immutable description of a session.

A :class:`Session` is a tuple of :class:`Step` objects; each step stands for
one ``google.adk.events.Event``. The model holds exactly the fields that
compaction reads (invocation id, author, timestamp, branch, isolation scope,
function calls and responses, long-running ids, tool-confirmation and auth
request keys, compaction ranges, rewinds) and nothing that carries meaning
only to a model provider. It is small enough to read in a fixture and is
converted to real ADK events by :mod:`compaction_harness.sdk.python.adk`.

JSON form (``Session.to_json`` / ``Session.from_json``)::

    {"steps": [{"invocation": "i1", "author": "user", "timestamp": 1.0,
                "text": "hi"}, ...]}

Fields equal to their default are left out, so a fixture shows only what
matters. Parsing is strict: unknown keys, wrong types and absurd sizes raise
:class:`ModelError` with a message that names the offending path.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from decimal import Decimal
from typing import Any

__all__ = [
    "MAX_IDS_PER_STEP",
    "MAX_STEPS",
    "REQUEST_CONFIRMATION_CALL",
    "REQUEST_CREDENTIAL_CALL",
    "Call",
    "Compaction",
    "ModelError",
    "Response",
    "Session",
    "ShownText",
    "Step",
    "relative_time",
    "render_step",
]

#: Upper bounds applied when parsing untrusted JSON (a fixture, a real session).
MAX_STEPS = 10_000
MAX_IDS_PER_STEP = 1_000
MAX_STRING = 100_000

#: Names of the synthetic, long-running calls ADK's framework (not the model)
#: makes to ask the user: ``REQUEST_CONFIRMATION_FUNCTION_CALL_NAME`` and
#: ``REQUEST_EUC_FUNCTION_CALL_NAME`` of ``google.adk.utils._function_call_names``
#: (2.x; ``google.adk.flows.llm_flows.functions`` in 1.x).
REQUEST_CONFIRMATION_CALL = "adk_request_confirmation"
REQUEST_CREDENTIAL_CALL = "adk_request_credential"


class ShownText(str):
    """A prompt's text part (equal to, and used as, its text), or a function
    call part's tool name, that names the session event it came from:
    ``event``, its position as a string, or ``""`` when the prompt builder
    made the part itself (another agent's message relayed as context, a
    summary's text on releases that relay it) or the prompt does not say
    (JSON, a prompt recorded before texts and calls named their events).
    adk-python's prompts (``adk._prompt_of``) and ADK-JS's
    (``adk_js.JsRun.prompt``) name both: P4 is checked by event identity."""

    event: str = ""

    def __new__(cls, text: str, event: str = "") -> ShownText:
        made = super().__new__(cls, text)
        made.event = event
        return made

    def __reduce__(self) -> Any:
        return (ShownText, (str(self), self.event))


class ModelError(ValueError):
    """A JSON document does not describe a valid session; the message names where."""


@dataclass(frozen=True, slots=True)
class Call:
    """A ``function_call`` part: ``id`` is the call id, ``name`` the tool name."""

    id: str
    name: str


@dataclass(frozen=True, slots=True)
class Response:
    """A ``function_response`` part answering the call with the same ``id``."""

    id: str
    name: str


@dataclass(frozen=True, slots=True)
class Compaction:
    """``EventActions.compaction``: a summary standing for events whose
    timestamps lie in ``[start, end]`` (seconds, as ADK's ``Event.timestamp``)."""

    start: float
    end: float
    summary: str = "summary"


_ALWAYS_SHOWN = ("invocation", "author", "timestamp")


@dataclass(frozen=True, slots=True)
class Step:
    """One ADK event.

    Attributes:
        invocation: ``Event.invocation_id``; ``""`` means the event has none.
        author: ``Event.author``: ``"user"`` or an agent's name.
        timestamp: ``Event.timestamp`` in seconds.
        text: a text part, if any.
        calls: ``function_call`` parts, in order.
        responses: ``function_response`` parts, in order.
        long_running: ``Event.long_running_tool_ids``.
        confirmations: keys of ``EventActions.requested_tool_confirmations``.
        auth_requests: keys of ``EventActions.requested_auth_configs``.
        compaction: ``EventActions.compaction``, if this is a summary event.
        rewind_before: ``EventActions.rewind_before_invocation_id``.
        branch: ``Event.branch``.
        isolation_scope: ``Event.isolation_scope``.
        prompt_tokens: ``Event.usage_metadata.prompt_token_count``.
        error: ``Event.error_code``: an error event (a tool or model call
            that raised, a model response with an error code, ADK's seal of
            an aborted invocation). Left out of the JSON when None, so
            fixtures of events without an error keep their content hash.
    """

    invocation: str = ""
    author: str = "user"
    timestamp: float = 0.0
    text: str | None = None
    calls: tuple[Call, ...] = ()
    responses: tuple[Response, ...] = ()
    long_running: tuple[str, ...] = ()
    confirmations: tuple[str, ...] = ()
    auth_requests: tuple[str, ...] = ()
    compaction: Compaction | None = None
    rewind_before: str | None = None
    branch: str | None = None
    isolation_scope: str | None = None
    prompt_tokens: int | None = None
    error: str | None = None

    def __post_init__(self) -> None:
        if type(self.timestamp) is not float:
            object.__setattr__(self, "timestamp", float(self.timestamp))

    def __repr__(self) -> str:
        # Only what differs from the defaults, so failure reports stay short.
        shown = ", ".join(f"{k}={v!r}" for k, v in _non_default(self).items())
        return f"Step({shown})"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:  # Hypothesis / IPython
        printer.text(repr(self))

    # -- derived views -------------------------------------------------------
    @property
    def call_ids(self) -> frozenset[str]:
        return frozenset(c.id for c in self.calls if c.id)

    @property
    def response_ids(self) -> frozenset[str]:
        return frozenset(r.id for r in self.responses if r.id)

    @property
    def is_compaction(self) -> bool:
        return self.compaction is not None

    def to_json(self) -> dict[str, Any]:
        """The step as a JSON object, leaving out fields at their default."""
        out: dict[str, Any] = {}
        for name, value in _non_default(self).items():
            if name in ("calls", "responses"):
                value = [{"id": p.id, "name": p.name} for p in value]
            elif name in ("long_running", "confirmations", "auth_requests"):
                value = list(value)
            elif name == "compaction":
                value = {"start": value.start, "end": value.end, "summary": value.summary}
            out[name] = value
        return out

    @classmethod
    def from_json(cls, data: Any, where: str = "step") -> Step:
        """Parse one step; raises :class:`ModelError` naming ``where``."""
        obj = object_of(data, cls, where)
        kwargs: dict[str, Any] = {}
        for key, value in obj.items():
            path = f"{where}.{key}"
            if key in ("invocation", "author"):
                kwargs[key] = _string(value, path)
            elif key in ("text", "rewind_before", "branch", "isolation_scope", "error"):
                kwargs[key] = None if value is None else _string(value, path)
            elif key == "timestamp":
                kwargs[key] = _number(value, path)
            elif key == "prompt_tokens":
                if value is not None and (type(value) is not int or value < 0):
                    raise ModelError(f"{path}: expected a non-negative integer, got {value!r}")
                kwargs[key] = value
            elif key in ("calls", "responses"):
                part = Call if key == "calls" else Response
                items = _bounded_list(value, path)
                kwargs[key] = tuple(
                    _part(part, item, f"{path}[{i}]") for i, item in enumerate(items)
                )
            elif key in ("long_running", "confirmations", "auth_requests"):
                items = _bounded_list(value, path)
                ids = tuple(_string(item, f"{path}[{i}]") for i, item in enumerate(items))
                kwargs[key] = tuple(sorted(set(ids)))
            elif key == "compaction":
                kwargs[key] = None if value is None else _compaction(value, path)
        missing = [k for k in _ALWAYS_SHOWN if k not in obj]
        if missing:
            raise ModelError(f"{where}: missing field {missing[0]!r}")
        return cls(**kwargs)


@dataclass(frozen=True, slots=True)
class Session:
    """An ordered tuple of steps, as ``Session.events`` holds them."""

    steps: tuple[Step, ...] = field(default_factory=tuple)

    def __len__(self) -> int:
        return len(self.steps)

    def __iter__(self):
        return iter(self.steps)

    def __getitem__(self, index: int) -> Step:
        return self.steps[index]

    def __repr__(self) -> str:
        return "Session((\n" + "".join(f"    {s!r},\n" for s in self.steps) + "))"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:  # Hypothesis / IPython
        printer.text(repr(self))

    def to_json(self) -> dict[str, Any]:
        return {"steps": [s.to_json() for s in self.steps]}

    @classmethod
    def from_json(cls, data: Any, where: str = "session") -> Session:
        obj = _expect(data, dict, where)
        unknown = sorted(set(obj) - {"steps"})
        if unknown:
            raise ModelError(f"{where}: unknown field {unknown[0]!r}")
        if "steps" not in obj:
            raise ModelError(f"{where}: missing field 'steps'")
        items = _expect(obj["steps"], list, f"{where}.steps")
        if len(items) > MAX_STEPS:
            raise ModelError(
                f"{where}.steps: {len(items)} steps, more than the limit of {MAX_STEPS}"
            )
        return cls(tuple(Step.from_json(s, f"{where}.steps[{i}]") for i, s in enumerate(items)))

    @property
    def origin(self) -> float:
        """The first event's timestamp: times are shown relative to it."""
        return self.steps[0].timestamp if self.steps else 0.0

    def render(self, marks: Mapping[int, str] | None = None) -> str:
        """A readable timeline, one line per event.

        ``marks`` maps a step index to a short note shown at the line's start
        (for example ``"W"`` for steps in the compaction window). Times are
        shown exactly, in seconds after the first event (:func:`relative_time`),
        so order and ties stay visible whatever the clock's epoch.
        """
        marks = marks or {}
        width = max((len(m) for m in marks.values()), default=0)
        lines = []
        for index, step in enumerate(self.steps):
            mark = marks.get(index, "").ljust(width)
            lines.append(
                f"{mark}{' ' if width else ''}#{index:<3} {render_step(step, self.origin)}"
            )
        return "\n".join(lines) if lines else "(empty session)"

    def replace_step(self, index: int, step: Step) -> Session:
        steps = list(self.steps)
        steps[index] = step
        return Session(tuple(steps))


def _non_default(step: Step) -> dict[str, Any]:
    return {
        f.name: getattr(step, f.name)
        for f in fields(step)
        if f.name in _ALWAYS_SHOWN or getattr(step, f.name) != f.default
    }


def _one_line(text: str) -> str:
    """``text`` with line breaks and other control characters escaped."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def relative_time(timestamp: float, origin: float = 0.0) -> str:
    """``timestamp - origin`` as an exact decimal with its sign: ``+0``,
    ``+0.125``, ``-2``, ``+1000``.

    Each float is read as the shortest decimal that ``repr`` gives for it and
    the difference is taken in decimal arithmetic, so two equal timestamps
    always print alike, different ones never do, and no rounding noise of
    binary subtraction appears (``1796080000.123 - 1796080000.0`` shows as
    ``+0.123``).
    """
    difference = Decimal(repr(timestamp)) - Decimal(repr(origin))
    text = format(difference.normalize(), "f")
    return text if text.startswith("-") else "+" + text


def render_step(step: Step, origin: float = 0.0) -> str:
    """One event as exactly one line: invocation, author, time, then its parts.

    Times are shown relative to ``origin`` (see :func:`relative_time`).
    Strings from a fixture are shown with line breaks and control characters
    escaped, so a step never spills over several lines.
    """
    e = _one_line
    bits = [
        f"inv={e(step.invocation) or '-':<4}",
        f"{e(step.author):<6}",
        f"t={relative_time(step.timestamp, origin)}",
    ]
    if step.branch:
        bits.append(f"branch={e(step.branch)}")
    if step.isolation_scope:
        bits.append(f"scope={e(step.isolation_scope)}")
    if step.compaction is not None:
        c = step.compaction
        start, end = relative_time(c.start, origin), relative_time(c.end, origin)
        bits.append(f"COMPACTION[{start}..{end}]")
    if step.responses:
        bits.append("response " + ", ".join(f"{e(r.id)}:{e(r.name)}" for r in step.responses))
    if step.calls:
        bits.append("call " + ", ".join(f"{e(c.id)}:{e(c.name)}" for c in step.calls))
    if step.long_running:
        bits.append("long-running{" + ",".join(map(e, step.long_running)) + "}")
    if step.confirmations:
        bits.append("confirm?{" + ",".join(map(e, step.confirmations)) + "}")
    if step.auth_requests:
        bits.append("auth?{" + ",".join(map(e, step.auth_requests)) + "}")
    if step.rewind_before:
        bits.append(f"rewind-before={e(step.rewind_before)}")
    if step.prompt_tokens is not None:
        bits.append(f"prompt_tokens={step.prompt_tokens}")
    if step.error is not None:
        bits.append(f"error={e(step.error)}")
    if step.text is not None and not step.calls and not step.responses and not step.compaction:
        bits.append(repr(step.text if len(step.text) <= 24 else step.text[:21] + "..."))
    return " ".join(bits)


# -- strict JSON helpers -----------------------------------------------------
_TYPE_NAMES = {dict: "an object", list: "a list", str: "a string"}


def object_of(data: Any, cls: type, where: str) -> dict[str, Any]:
    """``data`` as a dict of ``cls``'s dataclass fields (a copy); raises
    :class:`ModelError` naming ``where`` when it is not an object or holds a
    field ``cls`` does not have."""
    obj = _expect(data, dict, where)
    unknown = sorted(set(obj) - {f.name for f in fields(cls)})
    if unknown:
        raise ModelError(f"{where}: unknown field {unknown[0]!r}")
    return dict(obj)


def _expect(value: Any, kind: type, path: str) -> Any:
    if not isinstance(value, kind):
        raise ModelError(f"{path}: expected {_TYPE_NAMES[kind]}, got {type(value).__name__}")
    return value


def _string(value: Any, path: str) -> str:
    _expect(value, str, path)
    if len(value) > MAX_STRING:
        raise ModelError(f"{path}: string of {len(value)} characters, more than {MAX_STRING}")
    return value


def _number(value: Any, path: str) -> float:
    if type(value) not in (int, float):
        raise ModelError(f"{path}: expected a number, got {type(value).__name__}")
    try:
        number = float(value)
    except OverflowError:  # a JSON integer too large for a float
        raise ModelError(f"{path}: number too large for a timestamp") from None
    if math.isnan(number) or math.isinf(number):
        raise ModelError(f"{path}: expected a finite number, got {value!r}")
    return number


def _bounded_list(value: Any, path: str) -> list[Any]:
    items = _expect(value, list, path)
    if len(items) > MAX_IDS_PER_STEP:
        raise ModelError(f"{path}: {len(items)} items, more than the limit of {MAX_IDS_PER_STEP}")
    return items


def _part(kind: type, data: Any, path: str) -> Any:
    obj = _expect(data, dict, path)
    if set(obj) != {"id", "name"}:
        missing = sorted({"id", "name"} - set(obj))
        extra = sorted(set(obj) - {"id", "name"})
        what = f"missing field {missing[0]!r}" if missing else f"unknown field {extra[0]!r}"
        raise ModelError(f"{path}: {what}")
    return kind(_string(obj["id"], f"{path}.id"), _string(obj["name"], f"{path}.name"))


def _compaction(data: Any, path: str) -> Compaction:
    obj = _expect(data, dict, path)
    for key in ("start", "end"):
        if key not in obj:
            raise ModelError(f"{path}: missing field {key!r}")
    extra = sorted(set(obj) - {"start", "end", "summary"})
    if extra:
        raise ModelError(f"{path}: unknown field {extra[0]!r}")
    return Compaction(
        _number(obj["start"], f"{path}.start"),
        _number(obj["end"], f"{path}.end"),
        _string(obj.get("summary", "summary"), f"{path}.summary"),
    )


def summary_number(text: str) -> int | None:
    """N of a summary text the harness's summariser wrote, ``summary#N``
    (followed by anything: filler that gives it a size, say); None for any
    other text."""
    if not text.startswith("summary#"):
        return None
    digits = ""
    for char in text[len("summary#") :]:
        if not char.isdigit():
            break
        digits += char
    return int(digits) if digits else None
