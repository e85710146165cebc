"""Pipeline scripts: a configuration and a list of operations, as plain data.

A :class:`Script` is what the pipeline properties draw (``strategies/``), what
a pipeline fixture stores (fixture kind ``script``) and what a driver executes
on real ADK (:mod:`compaction_harness.sdk.python.driver`). Every operation is a small
frozen value that names what happens at the level of ADK's runtime (a user
opens an invocation, the model replies or calls tools, a client answers a
call, the invocation ends, ...), never an event's fields: the driver turns it
into the events ADK's ``Runner`` stores for it.

Deleting any operation leaves a valid script. An operation that needs
something that is not there does nothing: an answer when no call is pending,
a model reply when no invocation runs, a reply to a confirmation nobody asked
for. Picks (``Answer.picks``, ``Reply.pick``) are indices into what is pending
at that moment, taken modulo its length, so they stay meaningful whatever was
deleted before them. That is what lets Hypothesis's shrinker delete and
simplify operations freely.

JSON form (``Script.to_json`` / ``Script.from_json``)::

    {"config": {"compaction_interval": 2, "overlap_size": 1, ...},
     "operations": [{"op": "open", "opener": "user", "chars": 40},
                    {"op": "calls", "count": 2, "kind": "plain", "fate": "now"},
                    {"op": "end"}]}

Parsing is strict (unknown operations, fields and values are refused with a
:class:`~compaction_harness.spec.model.ModelError` naming the path) and executes
nothing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Protocol, TypeVar

from .app_shape import AppShape
from .invariants import PIPELINE_INVARIANTS
from .model import ModelError, object_of

__all__ = [
    "CLOCK_RESOLUTIONS",
    "DRIVERS",
    "OPERATIONS",
    "STORAGES",
    "SUMMARY_SIZES",
    "Answer",
    "Ask",
    "Calls",
    "ClientRecord",
    "Delegate",
    "End",
    "FanOut",
    "Open",
    "Reply",
    "Rewind",
    "Script",
    "ScriptConfig",
    "Skew",
    "Text",
    "Tie",
    "at_resolution",
]

#: Clock resolutions a script may draw, in seconds: a fine clock (ties are
#: rare), a millisecond clock (Windows-like), a coarse one-second clock.
CLOCK_RESOLUTIONS = (1e-6, 1e-3, 1.0)


def at_resolution(seconds: float, resolution: float) -> float:
    """``seconds`` as a clock of ``resolution`` seconds shows it: the last
    whole tick (a nanosecond of slack for float error), to the microsecond."""
    ticks = math.floor(seconds / resolution + 1e-9)
    return round(ticks * resolution, 6)


#: How long the summariser's summaries are: ``tiny`` (a few words), ``large``
#: (larger than the token threshold by itself), ``grows`` (half the size of
#: what it was given).
SUMMARY_SIZES = ("tiny", "large", "grows")
STORAGES = ("memory", "database", "sqlite", "postgresql", "mariadb")
#: The storage kinds kept by ``DatabaseSessionService`` on a database server,
#: and the environment variable naming each server's URL (``postgresql://``
#: or ``mysql://`` with user, host, port and database, and no driver: the
#: driver adds the release's own). The test run starts these servers
#: (:mod:`compaction_harness.store.servers`); ``check --session-service-uri``
#: hands on the user's.
SERVER_URL_VARIABLES = {"postgresql": "HARNESS_POSTGRESQL_URL", "mariadb": "HARNESS_MARIADB_URL"}
CALL_IDS = ("unique", "per_turn")
#: The drivers that execute a script: ``emulated`` (:mod:`compaction_harness.sdk.python.driver`)
#: and ``runner`` (:mod:`compaction_harness.sdk.python.adk_runner`, ADK's own ``Runner``).
DRIVERS = ("emulated", "runner")
TRIGGER_KEYS = ("compaction_interval", "overlap_size", "token_threshold", "event_retention_size")
MAX_OPERATIONS = 500
#: The largest ``recent_events`` a script takes (a script stores far fewer
#: events; ADK itself only refuses a negative ``num_recent_events``).
MAX_RECENT_EVENTS = 100_000


@dataclass(frozen=True)
class ScriptConfig:
    """What does not change during a run.

    Attributes:
        compaction_interval, overlap_size: the sliding-window trigger of
            ``EventsCompactionConfig`` (both None: off).
        token_threshold, event_retention_size: the token-threshold trigger
            (both None: off).
        storage: ``memory`` (``InMemorySessionService``), ``database``
            (``DatabaseSessionService`` on SQLite) or ``sqlite``
            (``SqliteSessionService``: what ``adk web`` and ``adk run`` use
            by default, events stored as JSON); with either of the last two
            the session is reloaded from its store before every invocation,
            as a server that handles each request afresh does; or
            ``postgresql`` / ``mariadb``: ``DatabaseSessionService`` on that
            server (reached through ``mysql+aiomysql`` for MariaDB, as
            google-adk documents MySQL), emptied when the script starts.
        resolution: the clock's resolution in seconds (timestamps are
            multiples of it, so a coarse clock gives ties).
        system_chars, tools_chars: the size of the system instruction and of
            the tool declarations in characters; the token model counts them
            in every prompt (ADK's own estimate does not).
        summary: one of :data:`SUMMARY_SIZES`.
        strict_provider: the model is reached through LiteLLM (Anthropic,
            OpenAI), whose APIs reject a function call that is not answered
            before the next user turn: P2's strict clause applies.
        call_ids: ``unique`` (ADK makes ``adk-<uuid>`` ids, or the model gives
            unique ones) or ``per_turn`` (the model numbers its calls afresh
            in every reply, as some providers do: ids repeat across turns).
        invariants: the pipeline invariants checked (None: all of them).
        driver: one of :data:`DRIVERS`: which driver runs the script (a
            fixture records the driver that found it; ``replay --driver``
            chooses another).
        app: the shape of a user's app the script runs on (its agent and
            tool names, its tree: :class:`~.app_shape.AppShape`; only the
            runner driver builds it), or None: the harness's own app.
        recent_events: how many of the session's latest events each request
            loads (``GetSessionConfig.num_recent_events``, passed to every
            ``Runner.run_async`` as ``RunConfig(get_session_config=...)``,
            google-adk 1.x and 2.x: the app reads a partial session; 0 loads
            none), or None: the whole session. Only the runner driver runs
            it (the emulating driver and ADK-JS refuse it: see
            ``docs/invariants.md``, partial reads).
    """

    compaction_interval: int | None = None
    overlap_size: int | None = None
    token_threshold: int | None = None
    event_retention_size: int | None = None
    storage: str = "memory"
    resolution: float = 1e-6
    system_chars: int = 0
    tools_chars: int = 0
    summary: str = "tiny"
    strict_provider: bool = False
    call_ids: str = "unique"
    invariants: tuple[str, ...] | None = None
    driver: str = "emulated"
    app: AppShape | None = None
    recent_events: int | None = None

    def __post_init__(self) -> None:
        for key in TRIGGER_KEYS:
            value = getattr(self, key)
            if value is not None and (type(value) is not int or value < 0):
                raise ModelError(f"config.{key}: expected a non-negative integer or null")
        if self.storage not in STORAGES:
            raise ModelError(f"config.storage: expected one of {', '.join(STORAGES)}")
        if self.summary not in SUMMARY_SIZES:
            raise ModelError(f"config.summary: expected one of {', '.join(SUMMARY_SIZES)}")
        if not (type(self.resolution) in (int, float) and 0 < self.resolution <= 60):
            raise ModelError("config.resolution: expected seconds in (0, 60]")
        for key in ("system_chars", "tools_chars"):
            value = getattr(self, key)
            if type(value) is not int or not 0 <= value <= 10_000_000:
                raise ModelError(f"config.{key}: expected a whole number of characters")
        if type(self.strict_provider) is not bool:
            raise ModelError("config.strict_provider: expected true or false")
        if self.driver not in DRIVERS:
            raise ModelError(f"config.driver: expected one of {', '.join(DRIVERS)}")
        if self.app is not None and not isinstance(self.app, AppShape):
            raise ModelError("config.app: expected an app shape")
        if self.recent_events is not None and (
            type(self.recent_events) is not int or not 0 <= self.recent_events <= MAX_RECENT_EVENTS
        ):
            raise ModelError(
                f"config.recent_events: expected null or an integer from 0 to {MAX_RECENT_EVENTS}"
            )
        if self.call_ids not in CALL_IDS:
            raise ModelError(f"config.call_ids: expected one of {', '.join(CALL_IDS)}")
        if self.invariants is not None and (
            not self.invariants or not set(self.invariants) <= set(PIPELINE_INVARIANTS)
        ):
            raise ModelError(
                "config.invariants: expected a non-empty list of " + ", ".join(PIPELINE_INVARIANTS)
            )

    @property
    def triggers(self) -> dict[str, int | None]:
        """The ``EventsCompactionConfig`` trigger values."""
        return {key: getattr(self, key) for key in TRIGGER_KEYS}

    @property
    def kind(self) -> str:
        """``sliding window``, ``token threshold`` or ``both triggers``."""
        sliding = self.compaction_interval is not None
        token = self.token_threshold is not None
        return (
            "both triggers"
            if sliding and token
            else "sliding window"
            if sliding
            else "token threshold"
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {key: getattr(self, key) for key in TRIGGER_KEYS}
        for f in fields(self):
            if f.name in TRIGGER_KEYS:
                continue
            value = getattr(self, f.name)
            if isinstance(value, AppShape):
                out[f.name] = value.to_json()
            elif value != f.default:
                out[f.name] = list(value) if isinstance(value, tuple) else value
        return out

    @classmethod
    def from_json(cls, data: Any, where: str = "config") -> ScriptConfig:
        values = object_of(data, cls, where)
        if "invariants" in values and values["invariants"] is not None:
            if not isinstance(values["invariants"], list) or not all(
                isinstance(i, str) for i in values["invariants"]
            ):
                raise ModelError(f"{where}.invariants: expected a list of invariant ids")
            values["invariants"] = tuple(values["invariants"])
        if values.get("app") is not None:
            values["app"] = AppShape.from_json(values["app"], f"{where}.app")
        return cls(**values)


@dataclass(frozen=True)
class Operation:
    """Base of every operation; ``op`` is its name in JSON."""

    op: ClassVar[str] = ""
    #: Field name -> allowed values (a tuple) or an inclusive (low, high) range
    #: of integers (a list).
    domain: ClassVar[Mapping[str, Any]] = {}

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"op": self.op}
        for f in fields(self):
            value = getattr(self, f.name)
            out[f.name] = list(value) if isinstance(value, tuple) else value
        return out


@dataclass(frozen=True)
class Open(Operation):
    """A new invocation starts (a running one ends first, with its compaction).

    ``opener``: ``user`` (a user message of ``chars`` characters: what
    ``Runner.run_async(new_message=...)`` stores) or ``agent`` (no user
    event: an agent-started or scheduled invocation).
    """

    op: ClassVar[str] = "open"
    domain: ClassVar[Mapping[str, Any]] = {"opener": ("user", "agent"), "chars": [1, 100_000]}
    opener: str = "user"
    chars: int = 20


@dataclass(frozen=True)
class Text(Operation):
    """The model is called and replies with text of ``chars`` characters.

    ``usage``: the reply carries usage metadata (its prompt token count, from
    the token model); some providers and proxies send none.
    """

    op: ClassVar[str] = "text"
    domain: ClassVar[Mapping[str, Any]] = {"chars": [0, 100_000], "usage": (True, False)}
    chars: int = 20
    usage: bool = True


@dataclass(frozen=True)
class Calls(Operation):
    """The model is called and replies with ``count`` parallel function calls.

    ``kind``: ``plain`` (a ``FunctionTool``), ``long_running`` (a
    ``LongRunningFunctionTool``: its id is in ``long_running_tool_ids``),
    ``interim`` (long-running, and the tool reports an interim result at
    once) or ``mixed`` (one model turn with both: the first call is a plain
    tool's, every later one a long-running tool's that returns nothing yet,
    as when a model looks something up and asks for an approval in one
    reply; with ``count`` 1 it is a plain call alone: see
    :meth:`tool_kinds`). ``fate`` (plain calls only): ``now`` (the tools
    answer at once, in one response event, as the flow stores parallel
    results) or ``later`` (the calls stay pending: their tools' process
    died; a client answers them with :class:`Answer`, or nobody ever does).
    Long-running calls stay pending whatever ``fate`` says, for a client's
    :class:`Answer`. ``chars``: the size of each response's payload.

    What ADK's ``Runner`` stores for a mixed turn (2.11.0 and 2.13.0, and
    what the emulating driver stores): the model's event with every call,
    only the long-running ids in ``long_running_tool_ids``
    (``get_long_running_function_calls``, ``flows/llm_flows/tools/_functions.py``);
    then one response event with the plain calls' results alone (a
    long-running tool that returns None gives no response event:
    ``_execute_single_prepared_call`` in ``tools/_caller.py``, and
    ``merge_parallel_function_response_events`` merges the rest). That event
    is not a final response, so the flow calls the model again in the same
    invocation (``BaseLlmFlow.run_async``): unlike a turn of long-running
    calls alone, a mixed turn does not pause a (non-resumable) app's
    invocation.
    """

    op: ClassVar[str] = "calls"
    domain: ClassVar[Mapping[str, Any]] = {
        "count": [1, 8],
        "kind": ("plain", "long_running", "interim", "mixed"),
        "fate": ("now", "later"),
        "chars": [0, 100_000],
        "usage": (True, False),
    }
    count: int = 1
    kind: str = "plain"
    fate: str = "now"
    chars: int = 20
    usage: bool = True

    def tool_kinds(self) -> tuple[str, ...]:
        """The kind of tool each call goes to, in call order: ``plain`` or
        ``long_running`` (an ``interim`` call's tool is long-running), one per
        call: ``count`` of the one kind, or for ``mixed`` a plain call first
        and long-running ones after it."""
        if self.kind == "mixed":
            return ("plain",) + ("long_running",) * (self.count - 1)
        return ("plain" if self.kind == "plain" else "long_running",) * self.count


class _OfInvocation(Protocol):
    @property
    def invocation(self) -> str: ...


#: A driver's record of a call an :class:`Answer` may pick (its invocation id).
_Call = TypeVar("_Call", bound=_OfInvocation)


@dataclass(frozen=True)
class Answer(Operation):
    """A client answers pending calls in one function-response message.

    One message answers calls of one invocation (the ``Runner`` refuses
    responses that resolve to several): ``picks[0]`` chooses the invocation
    among those with pending calls, oldest first, and the other picks index
    its pending calls, oldest first (all modulo their number; repeats are
    dropped; no other pick: the oldest). So one message may answer calls made
    in several turns, in any order, and leave others unanswered. ``again``:
    calls already answered are picked instead, and answered a second time.
    Like every client message, the answer starts a run: a running invocation
    ends first, and the answer continues the invocation of the call it
    answers (``Runner`` resolves the invocation from the call).
    """

    op: ClassVar[str] = "answer"
    domain: ClassVar[Mapping[str, Any]] = {"picks": [0, 63], "again": (False, True)}
    picks: tuple[int, ...] = (0,)
    again: bool = False

    def pick(self, every: Sequence[_Call]) -> tuple[list[_Call], list[_Call]]:
        """(the calls of ``every`` of the invocation the first pick chooses,
        those the message answers), ``every`` being the pending calls (the
        answered ones with ``again``), oldest first; both empty when
        ``every`` is."""
        if not every:
            return [], []
        invocations = list(dict.fromkeys(p.invocation for p in every))
        target = invocations[self.picks[0] % len(invocations)]
        pool = [p for p in every if p.invocation == target]
        chosen: list[_Call] = []
        for pick in self.picks[1:] or (0,):
            item = pool[pick % len(pool)]
            if item not in chosen:
                chosen.append(item)
        return pool, chosen


@dataclass(frozen=True)
class Ask(Operation):
    """The model calls a tool that needs the user first: ``confirmation``
    (``FunctionTool(require_confirmation=True)``) or ``auth`` (the tool asks
    for credentials). The framework stores its synthetic long-running call
    (``adk_request_confirmation`` / ``adk_request_credential``) and the tool's
    placeholder response carrying the request, in the order and with the
    timestamps the ``Runner`` gives them, and the invocation pauses."""

    op: ClassVar[str] = "ask"
    domain: ClassVar[Mapping[str, Any]] = {"kind": ("confirmation", "auth")}
    kind: str = "confirmation"


@dataclass(frozen=True)
class Reply(Operation):
    """The user answers a pending confirmation or credential request (``pick``
    indexes them, oldest first): the answer to the synthetic call, then the
    tool's real result for the original call, in the invocation that asked."""

    op: ClassVar[str] = "reply"
    domain: ClassVar[Mapping[str, Any]] = {"pick": [0, 63]}
    pick: int = 0


@dataclass(frozen=True)
class FanOut(Operation):
    """A ``ParallelAgent`` runs sub-agents ``a`` and ``b`` on branches of their
    own; each is called (compaction runs before each call, for that agent)
    and replies with text. ``order``: which finishes, and is stored, first;
    each reply keeps the time its step started, so the second stored may be
    the earlier one."""

    op: ClassVar[str] = "fan_out"
    domain: ClassVar[Mapping[str, Any]] = {"order": ("ab", "ba"), "chars": [0, 100_000]}
    order: str = "ab"
    chars: int = 20


@dataclass(frozen=True)
class Delegate(Operation):
    """A ``SequentialAgent`` step: sub-agent ``helper`` (no branch of its own)
    is called and replies with text; compaction runs before its call too."""

    op: ClassVar[str] = "delegate"
    domain: ClassVar[Mapping[str, Any]] = {"chars": [0, 100_000]}
    chars: int = 20


@dataclass(frozen=True)
class End(Operation):
    """The running invocation ends: the runner's post-invocation compaction runs."""

    op: ClassVar[str] = "end"


@dataclass(frozen=True)
class Rewind(Operation):
    """``Runner.rewind_async`` to before the invocation ``back`` invocations
    ago (1: the latest); a running invocation ends first."""

    op: ClassVar[str] = "rewind"
    domain: ClassVar[Mapping[str, Any]] = {"back": [1, 64]}
    back: int = 1


@dataclass(frozen=True)
class Tie(Operation):
    """The next event is stored in the same clock tick as the previous one."""

    op: ClassVar[str] = "tie"


@dataclass(frozen=True)
class Skew(Operation):
    """From here on, events are stamped by a host whose clock is ``seconds``
    behind the previous one's (hosts sharing one session database): the next
    invocation's timestamps may be lower than the last one's."""

    op: ClassVar[str] = "skew"
    domain: ClassVar[Mapping[str, Any]] = {"seconds": [0, 3600]}
    seconds: int = 1


@dataclass(frozen=True)
class ClientRecord(Operation):
    """A client appends a compaction record of its own straight to the session
    service, standing for the last ``back`` events (ADK's APIs refuse such
    records from clients: see ``prompt_checks.check_nothing_lost``)."""

    op: ClassVar[str] = "client_record"
    domain: ClassVar[Mapping[str, Any]] = {"back": [1, 64]}
    back: int = 1


#: Every operation, by its JSON name.
OPERATIONS: dict[str, type[Operation]] = {
    cls.op: cls
    for cls in (
        Open,
        Text,
        Calls,
        Answer,
        Ask,
        Reply,
        FanOut,
        Delegate,
        End,
        Rewind,
        Tie,
        Skew,
        ClientRecord,
    )
}


def _operation(data: Any, where: str) -> Operation:
    if not isinstance(data, dict):
        raise ModelError(f"{where}: expected an object")
    name = data.get("op")
    cls = OPERATIONS.get(name) if isinstance(name, str) else None
    if cls is None:
        raise ModelError(f"{where}.op: unknown operation {name!r} (known: {', '.join(OPERATIONS)})")
    allowed = {f.name for f in fields(cls)}
    unknown = sorted(set(data) - allowed - {"op"})
    if unknown:
        raise ModelError(f"{where}: unknown field {unknown[0]!r} for {name!r}")
    values: dict[str, Any] = {}
    for key, value in data.items():
        if key == "op":
            continue
        domain = cls.domain[key]
        path = f"{where}.{key}"
        if isinstance(domain, list):  # an integer range; tuples of them for picks
            low, high = domain
            items = value if key == "picks" else [value]
            if key == "picks" and (not isinstance(value, list) or not value or len(value) > 16):
                raise ModelError(f"{path}: expected a list of 1 to 16 integers")
            for item in items:
                if type(item) is not int or not low <= item <= high:
                    raise ModelError(f"{path}: expected an integer from {low} to {high}")
            values[key] = tuple(value) if key == "picks" else value
        else:
            if value not in domain or type(value) is not type(domain[0]):
                shown = ", ".join(map(json_name, domain))
                raise ModelError(f"{path}: expected one of {shown}")
            values[key] = value
    return cls(**values)


def json_name(value: Any) -> str:
    return (
        {True: "true", False: "false"}.get(value, repr(value))
        if isinstance(value, bool)
        else repr(value)
    )


@dataclass(frozen=True)
class Script:
    """A configuration and the operations a driver executes, in order."""

    config: ScriptConfig
    operations: tuple[Operation, ...] = field(default_factory=tuple)

    def to_json(self) -> dict[str, Any]:
        return {
            "config": self.config.to_json(),
            "operations": [op.to_json() for op in self.operations],
        }

    @classmethod
    def from_json(cls, data: Any, where: str = "script") -> Script:
        if not isinstance(data, dict):
            raise ModelError(f"{where}: expected an object")
        unknown = sorted(set(data) - {"config", "operations"})
        if unknown:
            raise ModelError(f"{where}: unknown field {unknown[0]!r}")
        for key in ("config", "operations"):
            if key not in data:
                raise ModelError(f"{where}: missing field {key!r}")
        ops = data["operations"]
        if not isinstance(ops, list):
            raise ModelError(f"{where}.operations: expected a list")
        if len(ops) > MAX_OPERATIONS:
            raise ModelError(
                f"{where}.operations: {len(ops)} operations, more than {MAX_OPERATIONS}"
            )
        return cls(
            ScriptConfig.from_json(data["config"], f"{where}.config"),
            tuple(_operation(op, f"{where}.operations[{i}]") for i, op in enumerate(ops)),
        )

    def call_json(self) -> dict[str, Any]:
        """What a fixture records as its ``call``: the script itself."""
        return self.to_json()

    @property
    def window(self) -> tuple[int, ...]:
        return ()

    def render(self) -> str:
        """The script, one operation per line, numbered."""
        lines = [f"config: {self.config.to_json()}"]
        for index, op in enumerate(self.operations):
            shown = ", ".join(f"{k}={v!r}" for k, v in op.to_json().items() if k != "op")
            lines.append(f"op {index:<3} {op.op}" + (f"({shown})" if shown else ""))
        return "\n".join(lines)

    def __repr__(self) -> str:
        ops = "".join(f"    {op!r},\n" for op in self.operations)
        return f"Script({self.config!r}, (\n{ops}))"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:  # Hypothesis / IPython
        printer.text(repr(self))
