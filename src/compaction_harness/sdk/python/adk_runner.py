"""The runner driver: executes a pipeline script through ADK's own ``Runner``.

Where the emulating driver (:mod:`compaction_harness.sdk.python.driver`) appends the
events it believes the ``Runner`` stores, this driver lets the real
``google.adk.runners.Runner`` store them: a scripted model answers each model
call as the script says, real tools answer, pause or ask the user, and a
client sends the messages the script's operations stand for. What the
``Runner`` stored, what ADK gave the summariser and every ``LlmRequest`` the
model received are recorded, and P0, P1, P2, P4 and P5 are checked on them
with the pure checkers of :mod:`compaction_harness.sdk.python.pipeline`.
``tests/slow/test_differential.py`` runs both drivers on the same scripts and
compares what they stored.

The application (one per run)
-----------------------------
* An ``App`` named ``harness`` whose ``EventsCompactionConfig`` carries the
  script's trigger values and an ``LlmEventSummarizer`` over a scripted
  summary model (its text is ``summary#N`` plus filler to the configured size,
  :func:`compaction_harness.sdk.python.adk.summary_text`); the summariser's
  ``maybe_summarize_events`` is wrapped to record exactly which events it was
  given.
* Tree ``agent`` (the default, and ADK's commonest deployment): the root is
  the ``LlmAgent`` ``agent``, which ADK 2.x runs on its node runtime
  (``Runner.run_async`` -> ``_run_node_async``).
* Tree ``director``: the root is a custom ``BaseAgent`` ``director`` (ADK's
  documented custom-agent pattern) that runs its sub-agents ``agent``,
  ``helper`` (an ``LlmAgent``) and ``team`` (a ``ParallelAgent`` of the
  ``LlmAgent`` s ``a`` and ``b``, which ADK runs on branches ``team.a`` and
  ``team.b``) one after another as the script says. ADK 2.x runs a root that
  is not an ``LlmAgent`` on its older path (``Runner._run_with_trace``).
* ``agent``'s tools: ``lookup`` (a ``FunctionTool`` that answers at once, or
  hangs for good where the script says the tool's process died),
  ``export`` (a ``LongRunningFunctionTool``: returns None, which pauses the
  invocation, or an interim result), ``transfer`` (a
  ``FunctionTool(require_confirmation=True)``) and ``calendar`` (asks for a
  credential with ``ToolContext.request_credential`` until it has one).
* Every ``LlmAgent``'s instruction is a provider (:func:`_gate`) that holds
  the agent's next step until the script reaches the operation that calls
  its model; its ``before_model_callback`` records the request and the
  session the ``Runner`` held then. Neither changes what is sent.

Each model call's reply carries usage metadata from the token model, as the
emulating driver's do: the request's contents counted as ADK's estimate
counts them, plus ``system_chars`` and ``tools_chars``, four characters a
token (no usage metadata where the operation says ``usage=False``).

How operations map onto the Runner
----------------------------------
================  ==========================================================
operation         what the client and the scripted model do
================  ==========================================================
``Open(user)``    ``run_async(new_message=<user text>)``
``Open(agent)``   ``run_async(new_message=None)`` (tree ``agent``; the older
                  path refuses a run without a message: tree ``director``
                  runs it as ``Open(user)``)
``Text``          the waiting model replies with text (with or without usage
                  metadata); tree ``director`` runs ``agent`` for it first
``Calls``         the model replies with ``count`` parallel calls to
                  ``lookup`` (``plain``) or ``export``; ``plain`` with
                  ``fate="later"``: the tools hang and the run is cancelled
                  once the call is stored (the process died: nothing after it
                  runs, no compaction)
``Ask``           the model calls ``transfer`` or ``calendar``; ADK stores its
                  synthetic request and the tool's placeholder and pauses
``Answer``        ``run_async(new_message=<function responses>)``, the
                  documented way to resume (``Runner`` resolves the
                  invocation from the calls they answer)
``Reply``         ``run_async`` with the response to the synthetic
                  ``adk_request_confirmation`` (``{"confirmed": true}``) or
                  ``adk_request_credential`` (the ``AuthConfig`` with a
                  credential) call
``FanOut``        tree ``director`` runs ``team``; both sub-agents' models
                  are called before either replies, then they reply in the
                  script's order
``Delegate``      tree ``director`` runs ``helper``
``End``           where the run ends by itself (a final text in tree
                  ``agent``; ``director`` stops in tree ``director``)
``Rewind``        ``Runner.rewind_async``
``ClientRecord``  the client appends its own compaction record with
                  ``BaseSessionService.append_event``
``Tie``, ``Skew`` the clock (below)
================  ==========================================================

Some shapes a script can hold the ``Runner`` cannot produce: a model call
when the run has ended (after a final text the root ``LlmAgent`` stops), an
invocation end while the model is being called (ADK always calls the model
after tool results or a client's answer), a sub-agent in a run a client's
answer resumed (the ``Runner`` routes it to the agent that made the call).
By default such an operation raises :class:`Inexpressible`; with
``repair=True`` the driver adds the fewest operations that make the script
runnable (a ``Text`` reply, an ``End``) or drops a sub-agent operation tree
``agent`` cannot run, and :attr:`RunnerRun.script` is the script as run, the
one to give the emulating driver for a comparison.

Time
----
ADK stamps an event with ``google.adk.platform.time.get_time()`` when it
builds it (``Event.timestamp``'s default factory, 2.x). The run installs a
provider (``set_time_provider``) that mirrors the emulating driver's clock: it
starts at :data:`~compaction_harness.sdk.python.driver.EPOCH`, moves on by
:data:`~compaction_harness.sdk.python.driver.STEP` at every reading (a real clock never
stands still; ADK reads it a few times per event), by
:data:`~compaction_harness.sdk.python.driver.THINK` before a client's message, and is
read at the script's resolution. ``Skew`` moves the host's clock back, and
``Tie`` holds it where it was when the event stored last was stamped, until
the next event is stored. They take effect where the script has them: the
instruction gate keeps the ``Runner`` from building the next model call's
event (and from running the compaction before it) until the script gets
there. Timestamps are deterministic, but how often the clock is read per
event is ADK's business: compare them by order and ties only, and not at a
millisecond resolution, where that count decides which events share a tick.

Ids
---
Every id ADK draws during the run (``Event.new_id``, invocation ids,
``adk-`` function call ids, the session's id) comes from
:func:`compaction_harness.sdk.python.driver.sdk_ids`: a function of the script's
configuration, the kind of id and how many of that kind came before, so a
replay draws the same ids and a database breaks a timestamp tie by event id
the same way every time (uuids drawn at random broke it either way).

Storage
-------
In memory, one ``InMemorySessionService`` and one ``Runner`` serve the whole
script; with ``storage="database"``, every request (a run, a rewind) gets a
fresh ``DatabaseSessionService`` on one SQLite file and a fresh ``Runner``,
as a server handling each request afresh does (the session is loaded from
the database, in its order, at every request).

What is checked
---------------
P1, P5 and P6's first clause (new work) on every summariser input, taken as
a window of the session the ``Runner`` held then; P2 and P4 on every
``LlmRequest`` (its contents, call ids restored from ADK's own contents
assembly once that is seen to build the same contents: see
:func:`_restored_prompt`); P7 on every request in the database mode (the
request's prompt against the in-memory order and a timestamp-ordered
reload); P3 at every run's end; P6's second clause (stale counts) at every
consultation of the token trigger made on stale counts, by running ADK's
trigger again on a copy of what it saw (:class:`RecordedTrigger`); P6's
third clause as the number of summaries per compaction point. P6's bound
(the prompt a token-threshold summary leaves) stays with the emulating
driver, which the differential test keeps equal to this one in events,
token counts and requests. P0 for an exception ADK raises.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import inspect
import math
import tempfile
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from google.adk.agents.base_agent import BaseAgent
from google.adk.agents.llm_agent import LlmAgent
from google.adk.agents.parallel_agent import ParallelAgent
from google.adk.apps.app import App
from google.adk.apps.llm_event_summarizer import LlmEventSummarizer
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions, EventCompaction
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions.in_memory_session_service import InMemorySessionService
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.long_running_tool import LongRunningFunctionTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from ...spec.invariants import Violation
from ...spec.model import (
    REQUEST_CONFIRMATION_CALL,
    REQUEST_CREDENTIAL_CALL,
    Session,
    summary_number,
)
from ...spec.scripts import (
    Answer,
    Ask,
    Calls,
    ClientRecord,
    Delegate,
    End,
    FanOut,
    Open,
    Operation,
    Reply,
    Rewind,
    Script,
    Skew,
    Text,
    Tie,
)
from . import reruns
from .adk import (
    _EVENT_KEY,
    ADK_RELEASE,
    NotApplicable,
    UnreadableEvents,
    _dispose,
    _no_disk_waits,
    _prompt_of,
    compaction_config,
    from_adk_events,
    litellm_heals_missing_tool_results,
    named_copy,
    prompt_chars,
    prunes_orphaned_calls,
    request_text_chars,
    summariser_called,
    summary_reply,
    summary_text,
)
from .driver import EPOCH, STEP, THINK, ScriptIds, sdk_ids
from .pipeline import (
    _shows,
    check_branch_view,
    check_liveness,
    check_model_prompt,
    check_new_work,
    check_range_safety,
    check_round_trip,
    check_same_view,
    check_stale_counts,
    check_summariser_calls,
    covered_by_kept,
    crash_violation,
    live_positions,
    newest_real_count,
    stale_counts,
    summary_branch,
)
from .unit import UnitOutcome

__all__ = [
    "TREES",
    "Inexpressible",
    "RecordedCall",
    "RecordedEnd",
    "RecordedSummary",
    "RunnerRun",
    "answers_continue_invocation",
    "run_script_outcome",
    "run_script_with_runner",
    "runner_script",
]

#: The agent trees the driver builds (see the module docstring).
TREES = ("agent", "director")
APP = "harness"
USER = "u"
AGENT = "agent"
#: Seconds the driver waits for the Runner to reach the next point where it
#: waits for the script before it calls the run stuck.
_STUCK_AFTER = 30.0


class Inexpressible(NotApplicable):
    """An operation the ``Runner`` cannot run where the script has it (and the
    driver was not asked to repair the script); ``str()`` says which and why."""


# -- the clock ------------------------------------------------------------------
class _Clock:
    """The time provider installed with ``google.adk.platform.time.set_time_provider``.

    Mirrors :meth:`compaction_harness.sdk.python.driver.ScriptRun.stamp`: true time moves on
    by ``STEP`` at every reading and is read through the host's offset at the
    script's resolution. :meth:`tie` holds true time where it was when the
    latest-stamped stored event was stamped, plus any :meth:`think` since (as
    the emulating driver's clock skips its next step), until the next event
    is stored."""

    def __init__(self, resolution: float) -> None:
        self.true = EPOCH
        self.offset = 0.0
        self.resolution = resolution
        self.held: float | None = None
        #: The true time of the latest reading that gave each value.
        self.true_of: dict[float, float] = {}
        #: Seconds :meth:`think` added since the latest event was stored.
        self.thought = 0.0

    def __call__(self) -> float:
        if self.held is None:
            self.true += STEP
        true = self.true if self.held is None else self.held
        ticks = math.floor((true + self.offset) / self.resolution + 1e-9)
        value = round(ticks * self.resolution, 6)
        self.true_of[value] = true
        return value

    def tie(self, stored: Sequence[float]) -> None:
        """Hold the clock at the latest time an event stored so far (``stored``:
        their timestamps, summaries and clients' records included) was
        stamped with, as the emulating driver's clock skips its next step."""
        if stored:
            self.held = max(self.true_of.get(t, self.true) for t in stored) + self.thought

    def think(self) -> None:
        """A client's next message comes ``THINK`` seconds later."""
        self.held = None
        self.true += THINK
        self.thought += THINK

    def stored(self) -> None:
        self.held = None
        self.thought = 0.0


# -- what a run records ------------------------------------------------------------
@dataclass(frozen=True)
class RecordedSummary:
    """One call of the summariser.

    Attributes:
        op: index (in :attr:`RunnerRun.script`) of the operation running then.
        where: ``before a model call`` or ``at an invocation end``.
        snapshot: the session as the ``Runner`` held it when the summariser
            was called (the summary not yet stored).
        positions: positions in ``snapshot`` of the events it was given.
        seeds: numbers of earlier summaries it was given as a rolling-summary
            seed (an event ADK makes afresh, so not in ``snapshot``).
        event_ids: the ids of the stored events it was given.
    """

    op: int
    where: str
    snapshot: Session
    positions: tuple[int, ...]
    seeds: tuple[int, ...]
    event_ids: tuple[str, ...]
    agent: str = ""
    ids: tuple[str, ...] = ()
    prompt: list = field(default_factory=list)


@dataclass(frozen=True)
class RecordedEnd:
    """The session as the ``Runner`` held it when a run ended by itself (its
    post-invocation compaction done; not a run cancelled because its tools'
    process died, after which nothing runs).

    Attributes:
        op: index (in :attr:`RunnerRun.script`) of the operation running then.
        events: the stored events, as ADK objects.
        snapshot: the same, as the harness model.
        prompt: ADK's contents assembly for the root agent (``adk.PromptContent``).
    """

    op: int
    events: tuple[Event, ...]
    snapshot: Session
    prompt: list


@dataclass(frozen=True)
class RecordedTrigger:
    """One consultation of ADK's token trigger
    (``_run_compaction_for_token_threshold_config``: before a model call, or
    at an invocation's end) while the newest prompt counts were ones a
    summary made stale (``pipeline.stale_counts``), for P6's second clause.

    Attributes:
        op: index (in :attr:`RunnerRun.script`) of the operation running then.
        events: copies of the events the session held, before compaction ran.
        arguments: the entry point's other keyword arguments as ADK passed them.
        stale: positions in ``events`` of the stale counts.
    """

    op: int
    events: tuple[Event, ...]
    arguments: dict
    stale: frozenset[int]


@dataclass(frozen=True)
class RecordedCall:
    """One model call, as the scripted model received it.

    Attributes:
        op: index (in :attr:`RunnerRun.script`) of the operation it served.
        agent, branch: the calling agent and its branch.
        snapshot: the session as the ``Runner`` held it at the call (after the
            compaction that ran before it).
        prompt: the request's contents as ``adk.PromptContent``, call ids
            restored and each response part naming its stored event (see
            :func:`_restored_prompt`); None when the request differs from
            ADK's contents assembly of ``snapshot`` beyond the ids.
        baseline: ADK's contents assembly of ``snapshot`` without its
            summaries (P4's baseline), in the same form.
        sent: the request's contents as sent (ids as ADK sent them; no
            positions).
        prompt_tokens: the prompt's size by the token model.
        opener: the text of the user message that opened the running
            invocation, if one did (P2).
        summaries: every summary made so far as (length of ``snapshot``,
            positions in ``snapshot`` of the events it was given, seed
            summary numbers), the form P2 and P4 read.
    """

    op: int
    agent: str
    branch: str | None
    snapshot: Session
    prompt: list | None
    baseline: list
    sent: list
    prompt_tokens: int
    opener: str | None
    summaries: tuple[tuple[int, tuple[int, ...], tuple[int, ...]], ...] = ()
    in_memory: list | None = None
    time_ordered: list | None = None


@dataclass
class RunnerRun:
    """What one script did through the ``Runner``.

    Attributes:
        script: the script as run (with ``repair``, the operations added or
            dropped; see :attr:`repairs`).
        tree: ``agent`` or ``director``.
        session: the events the ``Runner`` stored, as the session it ran last
            holds them (the harness model:
            :func:`compaction_harness.sdk.python.adk.from_adk_events`).
        events: the same events as ADK objects.
        origin: for each stored event, the index of the operation that stored
            it, or ``summary#N`` for a summary.
        summaries: every summariser call.
        calls: every model call of an agent (not the summariser's).
        ends: every run that ended by itself.
        triggers: every token-trigger decision made on stale counts.
        violations: P0, P1, P2, P4 and P5 violations no known upstream fault
            of the release explains; ``known``: those one does, with its id.
        repairs: one line per operation added or dropped.
        crashed: the exception ADK raised, if any (also a P0 violation).
    """

    script: Script
    tree: str
    session: Session = field(default_factory=Session)
    events: list[Event] = field(default_factory=list)
    origin: list[int | str] = field(default_factory=list)
    summaries: list[RecordedSummary] = field(default_factory=list)
    calls: list[RecordedCall] = field(default_factory=list)
    ends: list[RecordedEnd] = field(default_factory=list)
    triggers: list[RecordedTrigger] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    known: list[tuple[Violation, str]] = field(default_factory=list)
    repairs: list[str] = field(default_factory=list)
    crashed: BaseException | None = None


# -- the harness's side of the app: models, tools, the director --------------------
#: The run in progress. ADK's time provider is process-wide, so runs never overlap.
_ACTIVE: _Driver | None = None


def _driver() -> _Driver:
    if _ACTIVE is None:  # pragma: no cover - only reachable by misuse
        raise RuntimeError("no runner-driver run is active")
    return _ACTIVE


class _ScriptedLlm(BaseLlm):
    """An agent's model: each call waits for the reply the script says.

    State lives in the active driver, not in the model, so that copies ADK
    makes of an agent (the node runtime clones it) share it."""

    async def generate_content_async(self, llm_request, stream: bool = False):
        reply = await _driver().model_called(self.model, llm_request)
        yield reply


class _SummaryLlm(BaseLlm):
    """The summariser's model: answers with the next summary text, and usage
    metadata from the token model (four characters a token), as the emulating
    driver's summary model does."""

    async def generate_content_async(self, llm_request, stream: bool = False):
        driver = _driver()
        given = request_text_chars(llm_request)
        text = summary_text(
            len(driver.record.summaries) - 1, given, driver.config.summary, driver.threshold
        )
        yield summary_reply(text, given)


class _RecordingSummarizer(LlmEventSummarizer):
    """ADK's ``LlmEventSummarizer``; each call's input is recorded first."""

    async def maybe_summarize_events(self, *, events):
        _driver().summarising(events)
        return await super().maybe_summarize_events(events=events)


#: A stand-in for the event id the harness's tag will name (see :func:`_result`).
_UNNAMED = "00000000-0000-0000-0000-000000000000"


def _result(chars: int) -> dict:
    """A tool result or client answer of ``chars`` characters, with the
    harness's event tag (``adk._EVENT_KEY``) holding a stand-in of an event
    id's length. The emulating driver's stored responses carry the tag with
    their event's id, which ADK counts in its size estimates
    (``_count_chars_in_content``, ``_serialized_size``) and the token model in
    the prompt: carrying one here too keeps both drivers' sizes equal.
    :func:`tagged` puts the stored event's id in when a prompt is read."""
    return {"result": "r" * chars, _EVENT_KEY: _UNNAMED}


async def lookup(query: str) -> dict:
    """Looks something up (answers at once, unless the script says the tool's
    process dies: then it never returns)."""
    return await _driver().plain_tool()


def export(query: str) -> dict | None:
    """Starts an export that finishes later: returns None (the invocation
    pauses) or an interim result, as the script says."""
    return _driver().long_running_tool()


def transfer(query: str) -> dict:
    """Moves money (asks the user to confirm first)."""
    return _result(20)


def calendar(query: str, tool_context: ToolContext) -> dict:
    """Reads a calendar; asks for a credential until it has one."""
    config = _auth_config()
    if tool_context.get_auth_response(config) is None:
        tool_context.request_credential(config)
    return _result(20)


def _auth_config() -> Any:
    from fastapi.openapi.models import HTTPBearer
    from google.adk.auth.auth_tool import AuthConfig

    return AuthConfig(auth_scheme=HTTPBearer(), credential_key="harness_calendar")


async def _gate(context: Any) -> str:
    """Every agent's instruction provider: holds the agent's next step until the
    script reaches the operation that calls its model.

    ADK runs the instructions request processor before the compaction processor
    and before it builds the model call's event (``_create_request_processors``,
    ``_run_one_step_async``), so what the script does in between (no-ops, clock
    operations) comes before that compaction and that event's timestamp, as in
    the emulating driver. Adds no instruction."""
    await _driver().gate(context.agent_name, context.invocation_id)
    return ""


class _Director(BaseAgent):
    """Tree ``director``'s root: runs the sub-agent the script names next, until
    the script ends the run (ADK's custom-agent pattern)."""

    async def _run_async_impl(self, ctx):
        while (name := await _driver().director_waits()) is not None:
            async for event in self.find_sub_agent(name).run_async(ctx):
                yield event


# -- session services that report what is stored --------------------------------
def _recording(base: type) -> type:
    """A subclass of the session service ``base`` that tells the driver which
    session object the ``Runner`` holds and each event it stores."""

    class Recording(base):
        async def peek(self, **kwargs):
            """The session as a request would load it now (nothing recorded)."""
            return await super().get_session(**kwargs)

        async def get_session(self, **kwargs):
            session = await super().get_session(**kwargs)
            if session is not None and _ACTIVE is not None:
                _ACTIVE.view = session
                _ACTIVE.loaded = {e.id for e in session.events}
            return session

        async def append_event(self, session, event):
            stored = await super().append_event(session, event)
            if _ACTIVE is not None and not event.partial:
                _ACTIVE.stored(session, event)
            return stored

    Recording.__name__ = f"Recording{base.__name__}"
    return Recording


# -- the driver ----------------------------------------------------------------
@dataclass
class _Pending:
    call_id: str
    name: str
    invocation: str
    long_running: bool


class _Driver:
    """Executes one script (see :func:`run_script_with_runner`)."""

    def __init__(self, script: Script, tree: str, repair: bool, folder: str | None) -> None:
        self.script = script
        self.config = script.config
        self.threshold = self.config.token_threshold
        self.tree = tree
        self.repair = repair
        self.folder = folder
        self.clock = _Clock(self.config.resolution)
        self.record = RunnerRun(Script(self.config, ()), tree)
        self.ran: list[Operation] = []
        self.current = -1
        #: Index of the operation being applied, once it is in ``ran``.
        self.applying: int | None = None
        # The Runner, its session service, the session it holds now.
        self.app = self._app()
        self.service: Any = None
        self.runner: Any = None
        self.session_id: str | None = None
        self.view: Any = None
        self.client_records: set[str] = set()
        # The run in progress: its task and where it waits for the script.
        self.run_task: asyncio.Task | None = None
        self.crash: BaseException | None = None
        self.wake = asyncio.Event()
        self.waiting: dict[str, asyncio.Future] = {}
        self.gated: dict[str, asyncio.Future] = {}
        self.director: asyncio.Future | None = None
        self.hanging = False
        #: What the tools do now: ``export`` returns None ("pause") or an
        #: interim result; ``lookup`` answers ("now") or hangs; results are
        #: ``payload`` characters.
        self.tool_plan = "pause"
        self.plain_plan = "now"
        self.payload = 20
        # What the emulating driver keeps, to run the same script the same way.
        self.running: str | None = None  # the invocation a script's operations act in
        self.opener: str | None = None
        self.invocations: list[str] = []
        self.pending: list[_Pending] = []
        self.answered: list[_Pending] = []
        #: Requests waiting for the user: (call id, tool, request id, invocation,
        #: the request's arguments).
        self.asked: list[tuple[str, str, str, str, dict]] = []
        #: The invocation of the run in progress (from its events or model calls).
        self.run_invocation: str | None = None
        #: The next operation of the script as given (None after the last).
        self.upcoming: Operation | None = None
        self.counts = {"user": 0, "model": 0}
        self.stored_events: list[tuple[Event, int]] = []
        #: Every event the Runner appended, summaries included, in that order.
        self.appended: list[Event] = []
        #: Ids of the events the latest request loaded from the session service.
        self.loaded: set[str] = set()
        #: The agent whose step runs now (its gate opened last); compaction
        #: before a model call runs for it.
        self.stepping = AGENT

    # -- the app ------------------------------------------------------------
    def _app(self) -> App:
        summarizer = _RecordingSummarizer(llm=_SummaryLlm(model="harness-summary"))
        config = compaction_config(summarizer, dict(self.config.triggers))
        agent = LlmAgent(
            name=AGENT,
            model=_ScriptedLlm(model=AGENT),
            tools=[
                FunctionTool(lookup),
                LongRunningFunctionTool(export),
                FunctionTool(transfer, require_confirmation=True),
                FunctionTool(calendar),
            ],
            instruction=_gate,
            before_model_callback=_before_model,
        )
        if self.tree == "agent":
            root: BaseAgent = agent
        else:
            sub_agents = [
                LlmAgent(
                    name=n,
                    model=_ScriptedLlm(model=n),
                    instruction=_gate,
                    before_model_callback=_before_model,
                )
                for n in "ab"
            ]
            with warnings.catch_warnings():  # deprecated in favour of Workflow (2.x)
                warnings.simplefilter("ignore", DeprecationWarning)
                team = ParallelAgent(name="team", sub_agents=sub_agents)
            helper = LlmAgent(
                name="helper",
                model=_ScriptedLlm(model="helper"),
                instruction=_gate,
                before_model_callback=_before_model,
            )
            root = _Director(name="director", sub_agents=[agent, helper, team])
        return App(name=APP, root_agent=root, events_compaction_config=config)

    async def _service_for_request(self) -> None:
        """In memory: one service for the whole script. In a database: a fresh
        service and ``Runner`` for every request, as a server handling each
        request afresh has."""
        if self.service is not None and self.config.storage == "memory":
            return
        if self.config.storage == "memory":
            self.service = _recording(InMemorySessionService)()
        else:
            try:
                from google.adk.sessions.database_session_service import DatabaseSessionService
            except ImportError as exc:
                raise NotApplicable(
                    f"google-adk {ADK_RELEASE} without the [db] extra: {exc}"
                ) from None
            if self.service is not None:
                await _dispose(self.service)
            self.service = _recording(DatabaseSessionService)(
                f"sqlite+aiosqlite:///{self.folder}/session.db"
            )
            _no_disk_waits(self.service.db_engine)
        self.runner = Runner(app=self.app, session_service=self.service)
        if self.session_id is None:
            session = await self.service.create_session(app_name=APP, user_id=USER)
            self.session_id = session.id
            self.view = session

    # -- callbacks from ADK ---------------------------------------------------
    def stored(self, session: Any, event: Event) -> None:
        self.view = session
        self.appended.append(event)
        self.clock.stored()
        self.wake.set()
        compaction = event.actions is not None and event.actions.compaction is not None
        if compaction and event.id not in self.client_records:
            text = " ".join(p.text for p in event.actions.compaction.compacted_content.parts or [])
            self.record.origin.append(text.split("\n", 1)[0])
            return
        self.stored_events.append((event, self.current))
        self.record.origin.append(self.current)
        if event.id not in self.client_records:
            self.run_invocation = event.invocation_id

    def summarising(self, events: Sequence[Event]) -> None:
        held = list(self.view.events) if self.view is not None else []
        position = {id(e): i for i, e in enumerate(held)}
        seeds = tuple(
            number
            for e in events
            if id(e) not in position and e.content
            for p in e.content.parts or []
            if p.text and (number := summary_number(p.text)) is not None
        )
        at_end = any(f.function == "_run_compaction_for_sliding_window" for f in inspect.stack(0))
        self.record.summaries.append(
            RecordedSummary(
                op=self.current,
                where="at an invocation end" if at_end else "before a model call",
                snapshot=from_adk_events(held),
                positions=tuple(position[id(e)] for e in events if id(e) in position),
                seeds=seeds,
                event_ids=tuple(e.id for e in events if id(e) in position),
                agent="" if at_end else self.stepping,
                ids=tuple(e.id for e in held),
                prompt=_assembled(tagged(held), held, AGENT, None),
            )
        )

    def before_model(self, context: Any, llm_request: Any) -> None:
        held = list(context.session.events)
        agent = context.agent_name
        # CallbackContext.branch is 2.4.0 and later; the invocation holds it before.
        branch = getattr(context, "branch", None) or getattr(
            getattr(context, "_invocation_context", None), "branch", None
        )
        self.run_invocation = context.invocation_id
        restored, baseline = _restored_prompt(held, llm_request.contents, agent, branch)
        snapshot = from_adk_events(held)
        index = {e.id: i for i, e in enumerate(held)}
        summaries = tuple(
            (
                len(held),
                tuple(index[x] for x in s.event_ids if x in index),
                s.seeds,
            )
            for s in self.record.summaries
        )
        in_memory = time_ordered = None
        if self.config.storage == "database":
            # What an in-memory session would hold: the events as appended (the
            # client's records included), those of this session only.
            ids = {e.id for e in held}
            order = [e for e in self.appended if e.id in ids]
            order += [e for e in held if e.id not in {x.id for x in order}]
            in_memory = _assembled(tagged(order), held, agent, branch)
            # What a reload gives: the events loaded at the request's start in
            # timestamp order, then those this request appended, as appended.
            loaded = [e for e in order if e.id in self.loaded]
            by_time = sorted(loaded, key=lambda e: (e.timestamp, e.id))
            by_time += [e for e in order if e.id not in self.loaded]
            time_ordered = _assembled(tagged(by_time), held, agent, branch)
        tokens = (
            self.config.system_chars + self.config.tools_chars + prompt_chars(llm_request.contents)
        ) // 4
        self.record.calls.append(
            RecordedCall(
                op=self.current,
                agent=agent,
                branch=branch,
                snapshot=snapshot,
                prompt=restored,
                baseline=baseline,
                sent=_prompt_of(llm_request.contents),
                prompt_tokens=tokens,
                opener=self.opener,
                summaries=summaries,
                in_memory=in_memory,
                time_ordered=time_ordered,
            )
        )

    async def model_called(self, name: str, llm_request: Any) -> LlmResponse:
        future = asyncio.get_running_loop().create_future()
        self.waiting[name] = future
        self.wake.set()
        try:
            return await future
        finally:
            if self.waiting.get(name) is future:
                del self.waiting[name]

    async def gate(self, name: str, invocation: str) -> None:
        self.run_invocation = invocation
        future = asyncio.get_running_loop().create_future()
        self.gated[name] = future
        self.wake.set()
        try:
            await future
        finally:
            if self.gated.get(name) is future:
                del self.gated[name]

    def run_ended(self) -> None:
        """A run ended by itself: record the session for P3."""
        held = list(self.view.events) if self.view is not None else []
        self.record.ends.append(
            RecordedEnd(
                op=self.current,
                events=tuple(held),
                snapshot=from_adk_events(held),
                prompt=_assembled(tagged(held), held, AGENT, None),
            )
        )

    def _open_gate(self, name: str) -> None:
        self.stepping = name
        self.gated.pop(name).set_result(None)

    async def director_waits(self) -> str | None:
        future = asyncio.get_running_loop().create_future()
        self.director = future
        self.wake.set()
        try:
            return await future
        finally:
            if self.director is future:
                self.director = None

    async def plain_tool(self) -> dict:
        if self.plain_plan == "hang":
            self.hanging = True
            self.wake.set()
            await asyncio.get_running_loop().create_future()  # never set: the run is cancelled
        return _result(self.payload)

    def long_running_tool(self) -> dict | None:
        return _result(self.payload) if self.tool_plan == "interim" else None

    # -- waiting for the Runner ----------------------------------------------------
    async def settle(self) -> str:
        """Let the run go on until it waits for the script: ``gate`` (an agent's
        next step waits at its instruction provider), ``model`` (a model waits
        for its reply), ``director``, ``hang`` (a tool's process died) or
        ``done`` (no run, it ended, or ADK raised)."""
        while True:
            self.wake.clear()
            if self.run_task is None or self.run_task.done():
                return "done"
            if self.gated:
                return "gate"
            elif self.waiting:
                return "model"
            elif self.director is not None:
                return "director"
            if self.hanging:
                return "hang"
            try:
                await asyncio.wait_for(self.wake.wait(), _STUCK_AFTER)
            except TimeoutError:
                raise RuntimeError(
                    "the Runner neither finished nor waited for the script "
                    f"(operation {self.current})"
                ) from None

    async def _adk(self, call: Any) -> Any:
        """Await one of ADK's own calls outside a run; an exception is P0."""
        try:
            return await call
        except Exception as exc:
            self.crash = exc
            return None

    async def _start_run(self, message: types.Content | None) -> None:
        await self._service_for_request()
        self.hanging = False
        self.run_invocation = None
        runner, session_id = self.runner, self.session_id

        async def consume() -> None:
            try:
                async for _ in runner.run_async(
                    user_id=USER, session_id=session_id, new_message=message
                ):
                    pass
            except Exception as exc:  # P0: ADK raised; the run is over
                self.crash = exc
            else:
                self.run_ended()

        self.run_task = asyncio.create_task(consume())
        self.run_task.add_done_callback(lambda _: self.wake.set())
        await self.settle()

    async def _cancel_run(self) -> None:
        """The process running the invocation died: nothing after this runs."""
        task = self.run_task
        if task is not None and not task.done():
            task.cancel()
            # ADK's own cleanup runs on cancellation; a run that does not end
            # within a few seconds is left to the loop's closing.
            await asyncio.wait([task], timeout=5)
        self.hanging = False
        self.run_task = None
        # A process handling a later request runs the tools again (ADK's flow may
        # re-run calls the dead turn left: see adk.Pipeline.calls_to_replay).
        self.plain_plan = "now"
        self.payload = 20

    # -- operations -------------------------------------------------------------------
    def _note(self, text: str) -> None:
        self.record.repairs.append(f"op {len(self.ran)}: {text}")

    def _refuse(self, op: Operation, reason: str) -> None:
        raise Inexpressible(f"operation {len(self.ran)} ({op.op}): {reason}")

    def _push(self, op: Operation) -> int:
        self.ran.append(op)
        self.current = len(self.ran) - 1
        return self.current

    def _insert(self, op: Operation) -> int:
        """Add ``op`` to the script as run, before the operation being applied
        if that is already in it; returns its index."""
        if self.applying is None:
            return self._push(op)
        self.ran.insert(self.applying, op)
        self.current = self.applying
        self.applying += 1
        return self.current

    async def execute(self) -> None:
        """Every operation, then the script's end (a running invocation ends)."""
        ops = list(self.script.operations)
        for k, op in enumerate(ops):
            if self.crash is not None:
                return
            self.upcoming = ops[k + 1] if k + 1 < len(ops) else None
            try:
                await self.apply(op)
            except UnreadableEvents as exc:  # P0: what ADK returned cannot be read
                self.crash = exc
                return
        if self.crash is None:
            await self.end_run("the script's end")

    async def apply(self, op: Operation) -> None:
        """Run ``op``, first repairing what the ``Runner`` needs to run it there."""
        inside = isinstance(op, Text | Calls | Ask | FanOut | Delegate | ClientRecord)
        sub_agent = isinstance(op, FanOut | Delegate)
        if sub_agent and self.tree == "agent":
            if not self.repair:
                self._refuse(op, "tree 'agent' has no sub-agents")
            self._note(f"dropped {op.op}: tree 'agent' has no sub-agents")
            return
        if inside and self.running is not None:
            state = await self.settle()
            if state in ("gate", "model") and (sub_agent or isinstance(op, ClientRecord)):
                # Only the agent's own reply ends what its model call started.
                await self._repair_text(op, "agent's model is called first")
                state = await self.settle()
            if state == "done" or (isinstance(op, ClientRecord) and state == "director"):
                if not self.repair:
                    self._refuse(
                        op, "the run has ended" if state == "done" else "a run is going on"
                    )
                await self.end_run("a client's own record")
                self._note("added end: the Runner's run ends here")
                self._push(End())
        self.applying = self._push(op)
        try:
            await getattr(self, f"_op_{op.op}")(op)
        finally:
            self.applying = None

    def _think(self) -> None:
        self.clock.think()

    async def _repair_text(self, before: Operation, reason: str) -> None:
        if not self.repair:
            self._refuse(before, reason)
        self._note(f"added text: {reason}")
        self._insert(Text())
        applying, self.applying = self.applying, None
        try:
            await self._op_text(Text(), ended_by_caller=True)
        finally:
            self.applying = applying
            if applying is not None:
                self.current = applying

    async def end_run(self, why: str) -> None:
        """The running invocation ends (``End``, a client's next message, the
        script's end): the run finishes, with the ``Runner``'s compaction."""
        while self.crash is None:
            state = await self.settle()
            if state in ("gate", "model"):
                await self._repair_text(End(), f"the model is called before {why}")
            elif state == "director":
                self._direct(None)
            elif state == "hang":  # pragma: no cover - a hanging tool is cancelled at once
                await self._cancel_run()
            else:
                break
        self.run_task = None
        self.running = None
        self.opener = None

    def _usage(self, tokens: int | None) -> Any:
        if tokens is None:
            return None
        return types.GenerateContentResponseUsageMetadata(
            prompt_token_count=tokens, candidates_token_count=5, total_token_count=tokens + 5
        )

    def _text(self, prefix: str, chars: int) -> str:
        head = f"{prefix} "
        return head + "x" * max(0, chars - len(head))

    async def _reply(self, name: str, parts: list[types.Part], usage: bool = True) -> None:
        """The model ``name`` replies with ``parts`` (usage metadata from the
        token model, or none); the run goes on until it waits again."""
        tokens = next(c.prompt_tokens for c in reversed(self.record.calls) if c.agent == name)
        self.waiting.pop(name).set_result(
            LlmResponse(
                content=types.Content(role="model", parts=parts),
                usage_metadata=self._usage(tokens if usage else None),
            )
        )

    async def _agent_waits(self, op: Operation) -> bool:
        """Bring the run to where ``agent``'s model waits; False when no
        invocation runs (the operation is a no-op, as in the emulating driver)."""
        if self.running is None or self.crash is not None:
            return False
        state = await self.settle()
        if state == "director":
            self._direct(AGENT)
            state = await self.settle()
        while state == "gate" and AGENT in self.gated:
            # (More than once when the Runner takes steps of its own first, such
            # as re-running the calls a resumed invocation left unanswered.)
            before = len(self.stored_events)
            self._open_gate(AGENT)
            state = await self.settle()
            self._replayed(before)
        if self.crash is not None:
            return False
        if state != "model" or AGENT not in self.waiting:
            self._refuse(op, f"agent's model is not waiting (the run is {state})")
        return True

    def _replayed(self, before: int) -> None:
        """Pending calls the ``Runner`` answered by running them again are answered."""
        ids = {
            r.id
            for event, _ in self.stored_events[before:]
            if event.author == AGENT
            for r in event.get_function_responses()
        }
        moved = [p for p in self.pending if p.call_id in ids]
        for item in moved:
            self.pending.remove(item)
            self.answered.append(item)

    def _started(self, invocation: str | None) -> None:
        """A run for ``invocation`` (None: the one the run reports) is going on."""
        self.running = invocation or self.run_invocation
        if self.running is not None and self.running not in self.invocations:
            self.invocations.append(self.running)

    async def _op_open(self, op: Open) -> None:
        await self.end_run("the next message")
        if op.opener == "agent" and self.tree == "director":
            if not self.repair:
                self._refuse(op, "the Runner's older path refuses a run without a message")
            self._note("open(agent) runs as open(user): the Runner's older path needs a message")
            op = self.ran[self.current] = Open("user", op.chars)
        self._think()
        if op.opener == "user":
            self.counts["user"] += 1
            self.opener = self._text(f"user {self.counts['user']}", op.chars)
            await self._start_run(types.Content(role="user", parts=[types.Part(text=self.opener)]))
        else:
            self.opener = None
            await self._start_run(None)
        self._started(None)

    async def _op_text(self, op: Text, *, ended_by_caller: bool = False) -> None:
        if not await self._agent_waits(op):
            return
        self.counts["model"] += 1
        text = self._text(f"model {self.counts['model']}", op.chars)
        await self._reply(AGENT, [types.Part(text=text)], op.usage)
        if await self.settle() == "done" and not ended_by_caller and self.crash is None:
            # A final text ends the root agent's run (and a run a client's answer
            # resumed), with the Runner's compaction, before anything after it.
            self.run_task = None
            self.running = None
            self.opener = None
            # (Unless what comes next ends the invocation first thing anyway.)
            if not (self.upcoming is None or isinstance(self.upcoming, End | Open | Rewind)):
                if not self.repair:
                    self._refuse(op, "the Runner ends the invocation at a final text")
                self._note("added end: the Runner ends the invocation at a final text")
                self._push(End())

    def _call_id(self, k: int) -> str | None:
        """The id the model gives its k-th call: none (ADK makes ``adk-<uuid>``
        ids, as for Gemini) or the provider's per-turn numbering."""
        return f"call_{k}" if self.config.call_ids == "per_turn" else None

    async def _op_calls(self, op: Calls) -> None:
        if not await self._agent_waits(op):
            return
        name = "lookup" if op.kind == "plain" else "export"
        self.payload = op.chars
        self.plain_plan = "hang" if op.kind == "plain" and op.fate == "later" else "now"
        self.tool_plan = "interim" if op.kind == "interim" else "pause"
        parts = [
            types.Part(
                function_call=types.FunctionCall(
                    id=self._call_id(k), name=name, args={"query": "q" * min(op.chars, 200)}
                )
            )
            for k in range(op.count)
        ]
        invocation = self.running
        before = len(self.stored_events)
        await self._reply(AGENT, parts, op.usage)
        state = await self.settle()
        made = self._calls_stored_since(before)
        if op.kind == "plain" and op.fate == "now":
            self.answered += [_Pending(c, name, invocation, False) for c in made]
            return
        self.pending += [_Pending(c, name, invocation, op.kind != "plain") for c in made]
        if op.kind == "long_running":
            await self.end_run("a long-running call pauses the invocation")
        elif op.kind == "plain":  # the tool's process died: nothing after the call runs
            if state == "hang":
                await self._cancel_run()
            self.running = None
            self.opener = None

    def _calls_stored_since(self, before: int) -> list[str]:
        """Ids of the calls of the first model event stored since ``before``."""
        for event, _ in self.stored_events[before:]:
            calls = [c.id for c in event.get_function_calls()]
            if calls and event.author != "user":
                return calls
        return []

    async def _op_ask(self, op: Ask) -> None:
        if not await self._agent_waits(op):
            return
        confirm = op.kind == "confirmation"
        name = "transfer" if confirm else "calendar"
        call = types.FunctionCall(id=self._call_id(0), name=name, args={"query": "q" * 20})
        invocation = self.running
        before = len(self.stored_events)
        await self._reply(AGENT, [types.Part(function_call=call)])
        await self.settle()
        made = self._calls_stored_since(before)
        request_name = REQUEST_CONFIRMATION_CALL if confirm else REQUEST_CREDENTIAL_CALL
        request = next(
            (
                (c.id, c.args)
                for e, _ in self.stored_events[before:]
                for c in e.get_function_calls()
                if c.name == request_name
            ),
            None,
        )
        if made and request is not None:
            self.asked.append((made[0], name, request[0], invocation, request[1]))
        await self.end_run("the invocation waits for the user")

    def _responses(self, answers: list[tuple[str, str, dict]]) -> types.Content:
        return types.Content(
            role="user",
            parts=[
                types.Part(function_response=types.FunctionResponse(id=i, name=n, response=r))
                for i, n, r in answers
            ],
        )

    async def _op_reply(self, op: Reply) -> None:
        if not self.asked:
            return
        call_id, name, request_id, invocation, args = self.asked.pop(op.pick % len(self.asked))
        await self.end_run("the user's reply")
        self._think()
        if name == "transfer":
            answer = (request_id, REQUEST_CONFIRMATION_CALL, {"confirmed": True})
        else:
            answer = (request_id, REQUEST_CREDENTIAL_CALL, _credential_response(args))
        self.opener = None
        await self._start_run(self._responses([answer]))
        self._started(invocation)
        self.answered.append(_Pending(call_id, name, invocation, False))

    async def _op_answer(self, op: Answer) -> None:
        if not (self.answered if op.again else self.pending):
            return  # a no-op: the running invocation goes on
        # The run ends first (the model replies if it was called: the calls
        # it answers are then as the emulating driver sees them).
        await self.end_run("the client's answer")
        every = self.answered if op.again else self.pending
        if not every:
            self._insert(End())
            self._note("added end: the Runner ran the calls this answer was to answer")
            return
        # The picks mean what scripts.Answer says (as in the emulating driver).
        invocations = list(dict.fromkeys(p.invocation for p in every))
        target = invocations[op.picks[0] % len(invocations)]
        pool = [p for p in every if p.invocation == target]
        chosen: list[_Pending] = []
        for pick in op.picks[1:] or (0,):
            item = pool[pick % len(pool)]
            if item not in chosen:
                chosen.append(item)
        reason = await self._ambiguous([p.call_id for p in chosen], chosen[0].invocation)
        if reason is not None:
            reason = f"the Runner {reason}"
            if not self.repair:
                self._refuse(op, reason)
            self._note(f"answer replaced by end: {reason}")
            self.ran[self.current] = End()  # the run ended above, as an End ends it
            return
        self._think()
        self.opener = None
        await self._start_run(self._responses([(p.call_id, p.name, _result(20)) for p in chosen]))
        self._started(chosen[0].invocation)
        if not op.again:
            for item in chosen:
                self.pending.remove(item)
                self.answered.append(item)

    async def _ambiguous(self, ids: list[str], invocation: str) -> str | None:
        """Why responses with ``ids`` (reused by the model: per-turn ids) would
        not answer the calls of ``invocation`` the script means, or None.

        ``Runner._resolve_invocation_id_from_fr`` continues the invocation of
        each id's newest live call in the session as the request loads it,
        and refuses a message that spans several;
        and within the invocation the flow's resume logic
        (``core/_resume.py``) pairs a response with the newest call event,
        re-running that event's calls when the response's name is not among
        them."""
        from ...spec import reference

        # As the Runner will load the session for the request (a database gives
        # it back in timestamp order).
        loaded = await self.service.peek(app_name=APP, user_id=USER, session_id=self.session_id)
        live = reference.live_events(from_adk_events(loaded.events))
        resolved = {
            next((s.invocation for s in reversed(live) if i in s.call_ids), "") for i in ids
        }
        if resolved != {invocation}:
            return "resolves its (reused) ids to another invocation"
        makers = [s for s in live if s.invocation == invocation and set(ids) & s.call_ids]
        if len(makers) > 1:
            return "pairs its (reused) ids with the invocation's newest call of that id"
        return None

    async def _director_runs(self, op: Operation, name: str) -> bool:
        """Tell the director to run ``name``; False when no invocation runs."""
        if self.running is None or self.crash is not None:
            return False
        state = await self.settle()
        if state != "director":
            self._refuse(op, f"the director is not waiting (the run is {state})")
        self._direct(name)
        return True

    def _direct(self, name: str | None) -> None:
        future, self.director = self.director, None
        future.set_result(name)

    async def _until(self, condition: Any) -> bool:
        """Let the run go on until ``condition()`` holds; False if it ended first."""
        while True:
            self.wake.clear()
            if condition():
                return True
            if self.run_task is None or self.run_task.done():
                return False
            try:
                await asyncio.wait_for(self.wake.wait(), _STUCK_AFTER)
            except TimeoutError:
                raise RuntimeError(
                    f"the Runner stopped short of operation {self.current}"
                ) from None

    async def _sub_agent_called(self, op: Operation, name: str) -> bool:
        """Open ``name``'s gate once it waits there; True once its model waits."""
        if not await self._until(lambda: name in self.gated):
            return False
        self._open_gate(name)
        return await self._until(lambda: name in self.waiting)

    async def _stored_reply(self, name: str, text: str) -> None:
        """``name``'s model replies with ``text``; returns once its event is stored."""
        before = len(self.stored_events)
        await self._reply(name, [types.Part(text=text)])
        await self._until(lambda: len(self.stored_events) > before)

    async def _op_fan_out(self, op: FanOut) -> None:
        if not await self._director_runs(op, "team"):
            return
        # Both sub-agents start, in order (compaction, then the event is built),
        # before either replies; they reply, and are stored, in the script's order.
        for name in "ab":
            if not await self._sub_agent_called(op, name):
                if self.crash is None:
                    self._refuse(op, f"{name}'s model was not called")
                return
        for name in op.order:
            self.counts["model"] += 1
            await self._stored_reply(
                name, self._text(f"{name} says {self.counts['model']}", op.chars)
            )
        await self.settle()

    async def _op_delegate(self, op: Delegate) -> None:
        if not await self._director_runs(op, "helper"):
            return
        if not await self._sub_agent_called(op, "helper"):
            if self.crash is None:
                self._refuse(op, "helper's model was not called")
            return
        self.counts["model"] += 1
        await self._stored_reply(
            "helper", self._text(f"helper says {self.counts['model']}", op.chars)
        )
        await self.settle()

    async def _op_tie(self, op: Tie) -> None:
        self.clock.tie([e.timestamp for e in self.appended])

    async def _op_skew(self, op: Skew) -> None:
        self.clock.offset -= op.seconds

    async def _op_end(self, op: End) -> None:
        await self.end_run("the end of the invocation")

    async def _op_rewind(self, op: Rewind) -> None:
        await self.end_run("a rewind")
        if not self.invocations:
            return
        target = self.invocations[-min(op.back, len(self.invocations))]
        await self._service_for_request()
        before = len(self.stored_events)
        await self._adk(
            self.runner.rewind_async(
                user_id=USER, session_id=self.session_id, rewind_before_invocation_id=target
            )
        )
        if len(self.stored_events) > before:
            self.invocations.append(self.stored_events[-1][0].invocation_id)
        from ...spec import reference

        live = {s.invocation for s in reference.live_events(from_adk_events(self.view.events))}
        self.pending = [p for p in self.pending if p.invocation in live]
        self.asked = [a for a in self.asked if a[3] in live]

    async def _op_client_record(self, op: ClientRecord) -> None:
        raw = [e for e in self.view.events if not (e.actions and e.actions.compaction)]
        if not raw:
            return
        covered = raw[-min(op.back, len(raw)) :]
        record = Event(
            invocation_id=f"p-{Event.new_id()}",
            author="user",
            actions=EventActions(
                compaction=EventCompaction(
                    start_timestamp=covered[0].timestamp,
                    end_timestamp=covered[-1].timestamp,
                    compacted_content=types.Content(
                        role="model", parts=[types.Part(text="client")]
                    ),
                )
            ),
        )
        self.client_records.add(record.id)
        await self._adk(self.service.append_event(self.view, record))


def _before_model(callback_context: Any, llm_request: Any) -> None:
    """Every agent's ``before_model_callback``: records the request (changes nothing)."""
    _driver().before_model(callback_context, llm_request)
    return None


def _credential_response(args: dict) -> dict:
    """What a client sends back for an ``adk_request_credential`` call: the
    ``AuthConfig`` from the call's arguments with a credential filled in (the
    documented pattern)."""
    from google.adk.auth.auth_credential import (
        AuthCredential,
        AuthCredentialTypes,
        HttpAuth,
        HttpCredentials,
    )
    from google.adk.auth.auth_tool import AuthConfig

    config = AuthConfig.model_validate(args["authConfig"])
    config.exchanged_auth_credential = AuthCredential(
        auth_type=AuthCredentialTypes.HTTP,
        http=HttpAuth(scheme="bearer", credentials=HttpCredentials(token="token")),
    )
    return config.model_dump(by_alias=True, exclude_none=True, mode="json")


# -- the prompt a model call received --------------------------------------------------
def tagged(events: Sequence[Event]) -> list[Event]:
    """Copies of ``events`` whose function-response, function-call and text
    parts name their event (``adk._EVENT_KEY``: the event's id), as the
    emulating driver's events carry it, so an assembled prompt says which
    stored event each response, call and text came from (``adk.PromptPart``:
    P4 is checked by event identity). The originals are untouched."""
    return [
        named_copy(event)
        if event.get_function_responses()
        or event.get_function_calls()
        or any(p.text is not None for p in (event.content.parts or [] if event.content else []))
        else event
        for event in events
    ]


def _contents_builder() -> Any:
    try:
        from google.adk.flows.llm_flows.context._contents import _get_contents
    except ImportError:  # releases before the context/ package
        from google.adk.flows.llm_flows.contents import _get_contents
    return _get_contents


def _comparable(prompt: list) -> list:
    """A prompt without what ADK strips before sending (function call ids)
    and what the harness adds (response parts' event positions)."""
    return [
        (role, tuple((p[0], p[2]) if p[0] in ("call", "response") else p for p in parts))
        for role, parts in prompt
    ]


def _assembled(
    events: Sequence[Event], held: Sequence[Event], agent: str, branch: str | None
) -> list:
    """ADK's contents assembly (``_get_contents``) of ``events`` for ``agent`` on
    ``branch``, call ids kept, as ``adk.PromptContent``; each response part
    names its event by the event's position in ``held`` (pass events
    :func:`tagged`)."""
    build = _contents_builder()
    positions = {e.id: i for i, e in enumerate(held)}
    if "preserve_function_call_ids" in inspect.signature(build).parameters:
        contents = build(branch, list(events), agent, preserve_function_call_ids=True)
    else:  # pragma: no cover - releases that never strip ids
        contents = build(branch, list(events), agent)
    return _prompt_of(contents, positions)


def _restored_prompt(
    held: list[Event], sent: list[types.Content], agent: str, branch: str | None
) -> tuple[list | None, list]:
    """(the request's contents with call ids restored and each response part
    naming the stored event it came from, ADK's contents assembly of ``held``
    without summaries): both as ``adk.PromptContent`` lists. The first is
    None when the request differs from ADK's own contents assembly of
    ``held`` beyond ids.

    ADK strips its own ``adk-`` call ids from requests to models that do not
    pair calls by id (``_ContentLlmRequestProcessor``, 2.x), so the request
    alone cannot say which call a response answers. ADK's contents assembly
    (``_get_contents``) is run again on the events the ``Runner`` held, with
    ids kept and each response tagged with its event's id; when it yields the
    same contents as were sent, ids and positions are taken from it.
    """
    tagged_events = tagged(held)
    # Compared untagged: another agent's tool results reach a sub-agent as text
    # quoting the response, tag and all.
    same = _comparable(_assembled(held, held, agent, branch)) == _comparable(_prompt_of(sent))
    assembled = _assembled(tagged_events, held, agent, branch)
    baseline = _assembled(
        [e for e in tagged_events if not (e.actions and e.actions.compaction)], held, agent, branch
    )
    return (assembled if same else None), baseline


# -- checks -----------------------------------------------------------------------------
def _summaries_in(ids: Sequence[str], summaries: Sequence[RecordedSummary], count: int) -> list:
    """The first ``count`` summaries as (session length, positions given,
    seed numbers), positions in the session whose event ids are ``ids``."""
    index = {x: i for i, x in enumerate(ids)}
    return [
        (len(ids), tuple(index[x] for x in s.event_ids if x in index), s.seeds)
        for s in summaries[:count]
    ]


def _check_summaries(record: RunnerRun, config: Any) -> list[Violation]:
    """P1, P5 and P6 (first and third clauses) on every summariser call, on the
    session as the ``Runner`` held it then."""
    out: list[Violation] = []
    # Each summary's branch as stored (None without one: every agent reads it),
    # found by what the summariser wrote: at one compaction point the Runner
    # may call it once per branch with the session at the same length. (A
    # client's records say ``client``, never ``summary#N``.)
    branches = [summary_branch(record.session, n) for n in range(len(record.summaries))]
    for number, summary in enumerate(record.summaries):
        snapshot = summary.snapshot
        found = check_range_safety(snapshot, summary.positions)
        found += check_same_view(snapshot, summary.positions)
        found += check_branch_view(snapshot, summary.positions, branches[number])
        earlier = _summaries_in(summary.ids, record.summaries, number)
        covered_before = covered_by_kept(summary.prompt, earlier)
        found += check_new_work(summary.positions, covered_before, live_positions(snapshot), number)
        for v in found:
            v.details["summary"] = number
        out += found
    # P6's third clause, per compaction point: summaries made with no event
    # stored between them, at one invocation end or before one model call.
    points: list[list[int]] = []
    for number, summary in enumerate(record.summaries):
        raw = sum(1 for s in summary.snapshot if s.compaction is None)
        key = (summary.op, summary.where, summary.agent, raw)
        if points and points[-1][0] == key:
            points[-1][1].append(number)
        else:
            points.append([key, [number]])
    for (_op, where, agent, _raw), numbers in points:
        first = record.summaries[numbers[0]]
        found = check_summariser_calls(
            [branches[n] for n in numbers],
            config.triggers,
            newest_real_count(first.snapshot, agent),
            token_only=where == "before a model call",
        )
        for v in found:
            v.details["summary"] = numbers[0]
        out += found
    return out


def _check_calls(record: RunnerRun, config: Any) -> list[Violation]:
    """P2 and P4 on every model call's request (see :class:`RecordedCall`), and
    P7 with database storage."""
    out: list[Violation] = []
    strict = config.strict_provider and not litellm_heals_missing_tool_results()
    for number, call in enumerate(record.calls):
        steps = call.snapshot
        found: list[Violation] = []
        if call.prompt is not None:
            found, _ = check_model_prompt(
                steps,
                call.prompt,
                call.baseline,
                call.summaries,
                call.opener,
                strict=strict,
                records=_client_records(steps),
                pruned=prunes_orphaned_calls(),
            )
        if call.in_memory is not None and call.prompt is not None:
            found += check_round_trip(call.in_memory, call.prompt, call.time_ordered)
        for v in found:
            v.details["model_call"] = number
        out += found
    return out


def _client_records(steps: Session) -> list[int]:
    """Positions of compaction records ADK did not make (a client's: see
    ``pipeline.check_nothing_lost``)."""
    return [
        i
        for i, step in enumerate(steps)
        if step.compaction is not None and summary_number(step.compaction.summary) is None
    ]


def _check_ends(record: RunnerRun, config: Any) -> list[Violation]:
    """P3 at every run's end, on the session the ``Runner`` held after its
    post-invocation compaction (see ``pipeline.check_liveness``). A backlog no
    larger than the latest kept summary is compaction rightly waiting until it
    saves something (as ``PipelineRun`` judges it: ADK 2.13.0's
    ``_is_range_worth_compacting``)."""
    out: list[Violation] = []
    earlier = None
    for end in record.ends:
        ids = [e.id for e in end.events]
        summaries = _summaries_in(ids, record.summaries, len(record.summaries))
        steps = end.snapshot
        found, earlier = check_liveness(
            steps, end.prompt, summaries, config.triggers, _client_records(steps), earlier
        )
        for v in found:
            if _waits_to_save_prompt(v, end):
                continue
            v.details["end_op"] = end.op
            out.append(v)
    return out


def _waits_to_save_prompt(violation: Violation, end: RecordedEnd) -> bool:
    """Whether a P3 backlog is no larger than the latest kept summary, both
    measured by the events' own content as ADK prices a range (see
    ``PipelineRun._waits_to_save_prompt`` and ``adk.Pipeline.content_chars_of``)."""
    texts = [p[1] for _, ps in end.prompt for p in ps if p[0] == "text"]
    kept = [
        step.compaction.summary
        for step in end.snapshot
        if step.compaction is not None
        and summary_number(step.compaction.summary) is not None
        and any(_shows(t, step.compaction.summary.split("\n", 1)[0]) for t in texts)
    ]
    if not kept:
        return False
    chosen = [end.events[i] for i in sorted(violation.positions)]
    backlog = prompt_chars([e.content for e in chosen if e.content is not None])
    return backlog <= len(kept[-1])


def _check_stale(record: RunnerRun) -> list[Violation]:
    """P6's second clause at every token-trigger decision made on stale counts:
    ADK's trigger, run again on a copy of the session it saw with and without
    those counts, decides the same (see ``pipeline.check_stale_counts``)."""
    from google.adk.apps import compaction

    out: list[Violation] = []
    for trigger in record.triggers:

        def fires(strip: frozenset[int], trigger: RecordedTrigger = trigger) -> bool:
            async def entry_point(config: Any, session: Any, service: Any) -> None:
                await compaction._run_compaction_for_token_threshold_config(
                    **{**trigger.arguments, "config": config},
                    session=session,
                    session_service=service,
                )

            return summariser_called(
                trigger.events, trigger.arguments["config"], entry_point, strip
            )

        found = check_stale_counts(fires(frozenset()), fires(trigger.stale), trigger.stale)
        for v in found:
            v.details["op"] = trigger.op
        out += found
    return out


def _check(record: RunnerRun, config: Any) -> list[Violation]:
    """Every invariant on what the run recorded: P1, P5 and P6 on the
    summariser's inputs, P2, P4 and P7 on the requests the model received,
    P3 at the runs' ends."""
    return (
        _check_summaries(record, config)
        + _check_calls(record, config)
        + _check_ends(record, config)
        + _check_stale(record)
    )


# -- what the installed release's Runner does ------------------------------------------
def answers_continue_invocation(tree: str) -> bool:
    """Whether, with ``tree``'s root, the installed ``Runner`` continues the
    invocation of the call a client's function response answers
    (``Runner._resolve_invocation_id_from_fr``) instead of starting one.

    A root ``LlmAgent`` runs on the node runtime, which does on 2.11.0 and
    2.13.0 (``workflow/_node_runner_utils.run_node_async``); a custom root runs
    on ``Runner.run_async``'s older path, which does from 2.13.0 but starts a
    new invocation for a non-resumable app on 2.11.0. Read from the source."""
    if tree == "agent":
        try:
            from google.adk.workflow import _node_runner_utils as module
        except ImportError:  # releases before the node runtime
            module = None
        if module is not None:
            return "_resolve_invocation_id_from_fr" in inspect.getsource(module)
    return "_resolve_invocation_id_from_fr" in inspect.getsource(Runner.run_async)


# -- the entry point --------------------------------------------------------------------
def run_script_with_runner(
    script: Script,
    *,
    tree: str = "agent",
    repair: bool = False,
    release: str | None = None,
    triage: bool = True,
) -> RunnerRun:
    """Run ``script`` through ADK's ``Runner`` and check what it did.

    ``tree``: ``agent`` (root ``LlmAgent``) or ``director`` (see the module
    docstring). ``repair``: add or drop the operations the ``Runner`` needs
    to run the script (:attr:`RunnerRun.repairs`) instead of raising
    :class:`Inexpressible`. With ``triage``, violations that a known upstream
    fault of ``release`` (default: the installed one) explains go to
    :attr:`RunnerRun.known`. An exception ADK raises ends the run and is a
    P0 violation. Raises :class:`NotApplicable` on releases without what the
    driver needs.
    """
    global _ACTIVE
    if tree not in TREES:
        raise ValueError(f"tree: expected one of {', '.join(TREES)}")
    try:
        from google.adk.platform import time as platform_time
    except ImportError:
        raise NotApplicable(
            f"google-adk {ADK_RELEASE} has no google.adk.platform.time (the clock)"
        ) from None
    if _ACTIVE is not None:
        raise RuntimeError("runner-driver runs do not nest")
    folder = tempfile.TemporaryDirectory() if script.config.storage == "database" else None
    loop = asyncio.new_event_loop()
    driver: _Driver | None = None
    try:
        asyncio.set_event_loop(loop)
        driver = loop.run_until_complete(_make(script, tree, repair, folder))
        _ACTIVE = driver
        platform_time.set_time_provider(driver.clock)
        try:
            with _watching_token_trigger(driver), sdk_ids(ScriptIds(script)):
                loop.run_until_complete(driver.execute())
        finally:
            loop.run_until_complete(_finish(driver))
    finally:
        platform_time.reset_time_provider()
        _ACTIVE = None
        if (
            driver is not None
            and driver.service is not None
            and script.config.storage == "database"
        ):
            loop.run_until_complete(_dispose(driver.service))
        loop.run_until_complete(loop.shutdown_asyncgens())
        asyncio.set_event_loop(None)
        loop.close()
        if folder is not None:
            folder.cleanup()
    record = driver.record
    record.script = Script(script.config, tuple(driver.ran))
    found = _check(record, script.config)
    if driver.crash is not None:
        record.crashed = driver.crash
        found.append(crash_violation(f"operation {driver.current}", driver.crash))
    _triage(record, found, release, triage)
    return record


#: Where ADK's token trigger is looked up when it runs: the flow's request
#: processor imports it by name; the invocation's end calls it in its module.
_TRIGGER_HOMES = (
    "google.adk.apps.compaction",
    "google.adk.flows.llm_flows.context._compaction",
)


@contextlib.contextmanager
def _watching_token_trigger(driver: _Driver) -> Any:
    """Record every call of ADK's ``_run_compaction_for_token_threshold_config``
    made while the newest counts are stale (see :class:`RecordedTrigger`);
    each call goes on to ADK's function unchanged."""
    homes = []
    for name in _TRIGGER_HOMES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if hasattr(module, "_run_compaction_for_token_threshold_config"):
            homes.append(module)
    if not homes:
        yield
        return
    real = homes[0]._run_compaction_for_token_threshold_config

    async def watched(*given: Any, **arguments: Any) -> Any:
        config, session = arguments.get("config"), arguments.get("session")
        known = not given and config is not None and session is not None
        if known and getattr(config, "token_threshold", None) is not None:
            stale = stale_counts(from_adk_events(session.events))
            if stale:
                others = {
                    k: v for k, v in arguments.items() if k not in ("session", "session_service")
                }
                events = tuple(e.model_copy(deep=True) for e in session.events)
                driver.record.triggers.append(
                    RecordedTrigger(driver.current, events, others, stale)
                )
        return await real(*given, **arguments)

    saved = [(m, m._run_compaction_for_token_threshold_config) for m in homes]
    for module in homes:
        module._run_compaction_for_token_threshold_config = watched
    try:
        yield
    finally:
        for module, fn in saved:
            module._run_compaction_for_token_threshold_config = fn


async def _make(script: Script, tree: str, repair: bool, folder: Any) -> _Driver:
    return _Driver(script, tree, repair, folder.name if folder is not None else None)


async def _finish(driver: _Driver) -> None:
    """Stop what still runs and read the session as the Runner last held it."""
    if driver.run_task is not None and not driver.run_task.done():
        await driver._cancel_run()
    record = driver.record
    held = list(driver.view.events) if driver.view is not None else []
    record.events = held
    try:
        record.session = from_adk_events(held)
    except UnreadableEvents as exc:  # P0 (what ADK returned), not a harness traceback
        record.session = Session(())
        if driver.crash is None:
            driver.crash = exc


def _triage(record: RunnerRun, found: list[Violation], release: str | None, triage: bool) -> None:
    chosen = set(record.script.config.invariants or ()) or None
    found = [v for v in found if chosen is None or v.invariant in chosen]
    if not triage:
        record.violations = found
        return
    from .triage import by_fix

    # Re-runs go through the Runner too, as the record was made.
    rerun = Script(replace(record.script.config, driver="runner"), record.script.operations)
    record.violations, record.known = by_fix(rerun, found)


def runner_script(script: Script, *, tree: str = "agent") -> Script:
    """``script`` run by this driver (``config.driver="runner"``), with the
    operations the ``Runner`` needs added or dropped (see :attr:`RunnerRun.script`):
    the script a fixture records, whose replay runs exactly that."""
    run = run_script_with_runner(
        Script(replace(script.config, driver="runner"), script.operations),
        tree=tree,
        repair=True,
        triage=False,
    )
    return run.script


def run_script_outcome(
    script: Script, *, release: str | None = None, triage: bool = True
) -> UnitOutcome:
    """Run ``script`` through the ``Runner`` (tree ``director`` when it has
    sub-agent operations, else ``agent``; repairing what it cannot run as
    given) and return what a fixture records, as
    :func:`compaction_harness.sdk.python.driver.run_script` does for the emulating
    driver: ``violations`` (new ones; with ``triage``, known upstream faults
    of ``release`` go to ``known``), ``observed`` with ``session`` (the
    events the ``Runner`` stored), ``origin`` (the operation of the script as
    run that stored each, or ``summary#N``), ``summaries`` (the stored
    positions each summary was given), ``script`` (the script as run, when
    the driver repaired it) and ``prompt`` (the last request's contents).
    Raises :class:`NotApplicable` where the release lacks what the driver
    needs."""
    # Sub-agent operations need tree director; every other script runs on the
    # commonest deployment, a root LlmAgent.
    tree = (
        "director"
        if any(isinstance(op, FanOut | Delegate) for op in script.operations)
        else "agent"
    )
    run = run_script_with_runner(script, tree=tree, repair=True, release=release, triage=triage)
    ids = [e.id for e in run.events]
    last = run.calls[-1].sent if run.calls else []
    observed: dict[str, Any] = {
        "session": run.session.to_json(),
        "origin": list(run.origin[: len(run.session)]),
        "summaries": [list(p) for _, p, _ in _summaries_in(ids, run.summaries, len(run.summaries))],
        "prompt": [[role, [list(p) for p in parts]] for role, parts in last],
    }
    if run.repairs:
        observed["script"] = run.script.to_json()
        observed["repairs"] = list(run.repairs)
    outcome = UnitOutcome(list(run.violations), {}, observed)
    outcome.known = list(run.known)
    outcome.triaged = triage
    ops = run.script.operations
    labels = {f"runner: stored by {ops[o].op}" for o in run.origin if isinstance(o, int)}
    labels.add("runner: summarised" if run.summaries else "runner: no summary")
    if run.repairs:
        labels.add("runner: script repaired")
    outcome.labels = sorted(labels)
    return outcome


# Classification by fix re-runs a runner-driver script through this (see reruns.py).
reruns.register(Script, lambda script: run_script_outcome(script, triage=False), driver="runner")
