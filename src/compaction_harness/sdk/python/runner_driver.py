"""The runner driver itself: :class:`RunnerDriver`, the backend of google-adk's
script interpreter (:mod:`.interpreter`) that makes ADK's own ``Runner``
store what each operation stands for (see :mod:`.adk_runner`), and its clock.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Sequence
from typing import Any

from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions, EventCompaction
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions.in_memory_session_service import InMemorySessionService
from google.genai import types

from ...spec import scripts as ops
from ...spec.model import REQUEST_CONFIRMATION_CALL, REQUEST_CREDENTIAL_CALL, Call
from .adk import (
    SERVER_URL_VARIABLES,
    NotApplicable,
    UnreadableEvents,
    _dispose,
    database_service,
    empty_database,
    from_adk_events,
    sqlite_service,
)
from .interpreter import STEP, THINK, Asked, Clock, Interpreter, Pending, walk
from .runner_app import USER, _credential_response, _recording, _result, build_app
from .runner_record import Recording, RunnerRun

#: Seconds the driver waits for the Runner to reach the next point where it
#: waits for the script before it calls the run stuck.
_STUCK_AFTER = 30.0


class Inexpressible(NotApplicable):
    """An operation the ``Runner`` cannot run where the script has it (and the
    driver was not asked to repair the script); ``str()`` says which and why."""


# -- the clock ------------------------------------------------------------------
class _Clock(Clock):
    """The time provider installed with ``google.adk.platform.time.set_time_provider``.

    Mirrors :meth:`compaction_harness.sdk.python.driver.ScriptRun.stamp`: true time moves on
    by ``STEP`` at every reading and is read through the host's offset at the
    script's resolution. :meth:`tie` holds true time where it was when the
    latest-stamped stored event was stamped, plus any :meth:`think` since (as
    the emulating driver's clock skips its next step), until the next event
    is stored."""

    def __init__(self, resolution: float) -> None:
        super().__init__(resolution)
        self.held: float | None = None
        #: The true time of the latest reading that gave each value.
        self.true_of: dict[float, float] = {}
        #: Seconds :meth:`think` added since the latest event was stored.
        self.thought = 0.0

    def __call__(self) -> float:
        if self.held is None:
            self.true += STEP
        true = self.true if self.held is None else self.held
        value = self.read(true)
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
        super().think()
        self.thought += THINK

    def stored(self) -> None:
        self.held = None
        self.thought = 0.0


# -- the driver ----------------------------------------------------------------
class RunnerDriver(Recording, Interpreter):
    """Executes one script through ADK's ``Runner`` (see
    :func:`~compaction_harness.sdk.python.adk_runner.run_script_with_runner`)."""

    def __init__(self, script: ops.Script, tree: str, repair: bool, folder: str | None) -> None:
        Interpreter.__init__(self, script.config)
        self.script = script
        self.threshold = self.config.token_threshold
        self.tree = tree
        self.repair = repair
        self.folder = folder
        self.clock = _Clock(self.config.resolution)
        self.record = RunnerRun(ops.Script(self.config, ()), tree)
        self.ran: list[ops.Operation] = []
        self.current = -1
        #: Index of the operation being applied, once it is in ``ran``.
        self.applying: int | None = None
        # The Runner, its session service, the session it holds now.
        self.app = build_app(self.config, tree, self.names)
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
        #: The text of the user message that opened the running invocation.
        self.opener: str | None = None
        #: The invocation of the run in progress (from its events or model calls).
        self.run_invocation: str | None = None
        #: The next operation of the script as given (None after the last).
        self.upcoming: ops.Operation | None = None
        self.stored_events: list[tuple[Event, int]] = []
        #: Every event the Runner appended, summaries included, in that order.
        self.appended: list[Event] = []
        #: Ids of the events the latest request loaded from the session service.
        self.loaded: set[str] = set()
        #: The agent whose step runs now (its gate opened last); compaction
        #: before a model call runs for it.
        self.stepping = self.names.agent

    async def _service_for_request(self) -> None:
        """In memory: one service for the whole script. Stored (a database, or
        SQLite through ``SqliteSessionService``): a fresh service and
        ``Runner`` for every request, as a server handling each request afresh
        has; the previous service is disposed of first."""
        if self.service is not None and self.config.storage == "memory":
            return
        if self.service is not None:
            await _dispose(self.service)
        if self.config.storage == "memory":
            self.service = _recording(InMemorySessionService)()
        elif self.config.storage == "sqlite":
            self.service = sqlite_service(f"{self.folder}/session.db", _recording)
        else:
            self.service = database_service(
                self.config.storage, f"{self.folder}/session.db", _recording
            )
            if self.session_id is None and self.config.storage in SERVER_URL_VARIABLES:
                await empty_database(self.service)
        self.runner = Runner(app=self.app, session_service=self.service)
        if self.session_id is None:
            session = await self.service.create_session(app_name=self.names.name, user_id=USER)
            self.session_id = session.id
            self.view = session

    def session_read(self) -> Any:
        """The ``GetSessionConfig`` every request loads the session with
        (``config.recent_events``: ``num_recent_events``), or None: the whole
        session. The ``Runner`` passes ``RunConfig.get_session_config`` to the
        session service's ``get_session`` (``Runner._get_or_create_session``,
        google-adk 2.13.0); ``rewind_async`` ignores it."""
        if self.config.recent_events is None:
            return None
        from google.adk.sessions.base_session_service import GetSessionConfig

        return GetSessionConfig(num_recent_events=self.config.recent_events)

    def run_config(self) -> Any:
        """The ``RunConfig`` of every ``run_async``: ADK's default, or one
        that reads the session as :meth:`session_read` says."""
        from google.adk.agents.run_config import RunConfig

        read = self.session_read()
        return RunConfig() if read is None else RunConfig(get_session_config=read)

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
        runner, session_id, run_config = self.runner, self.session_id, self.run_config()

        async def consume() -> None:
            try:
                async for _ in runner.run_async(
                    user_id=USER, session_id=session_id, new_message=message, run_config=run_config
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
            # ADK's own cleanup runs on cancellation. The next operation waits
            # for it, however long a busy machine takes: a run still going
            # would go on beside the next one, its tools with it, and what they
            # record would depend on the machine's speed, not on the script.
            await asyncio.wait([task], timeout=_STUCK_AFTER)
            if not task.done():
                raise RuntimeError(
                    f"the Runner did not stop when its process died (operation {self.current})"
                )
        self.hanging = False
        self.run_task = None
        # A process handling a later request runs the tools again (ADK's flow may
        # re-run calls the dead turn left: see adk.Pipeline.calls_to_replay).
        self.plain_plan = "now"
        self.payload = 20

    # -- operations -------------------------------------------------------------------
    def _note(self, text: str) -> None:
        self.record.repairs.append(f"op {len(self.ran)}: {text}")

    def _refuse(self, op: ops.Operation, reason: str) -> None:
        raise Inexpressible(f"operation {len(self.ran)} ({op.op}): {reason}")

    def _push(self, op: ops.Operation) -> int:
        self.ran.append(op)
        self.current = len(self.ran) - 1
        return self.current

    def _insert(self, op: ops.Operation) -> int:
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
        for _, op, upcoming in walk(self.script.operations):
            if self.crash is not None:
                return
            self.upcoming = upcoming
            try:
                await self.apply(op)
            except UnreadableEvents as exc:  # P0: what ADK returned cannot be read
                self.crash = exc
                return
        if self.crash is None:
            await self.end_run("the script's end")

    async def apply(self, op: ops.Operation) -> None:
        """Run ``op``, first repairing what the ``Runner`` needs to run it there."""
        inside = isinstance(
            op, ops.Text | ops.Calls | ops.Ask | ops.FanOut | ops.Delegate | ops.ClientRecord
        )
        sub_agent = isinstance(op, ops.FanOut | ops.Delegate)
        if sub_agent and self.tree == "agent":
            if not self.repair:
                self._refuse(op, "tree 'agent' has no sub-agents")
            self._note(f"dropped {op.op}: tree 'agent' has no sub-agents")
            return
        lacks = self._lacks(op)
        if lacks is not None:
            if not self.repair:
                self._refuse(op, lacks)
            self._note(f"dropped {op.op}: {lacks}")
            return
        if inside and self.running is not None:
            state = await self.settle()
            if state in ("gate", "model") and (sub_agent or isinstance(op, ops.ClientRecord)):
                # Only the agent's own reply ends what its model call started.
                await self._repair_text(op, "agent's model is called first")
                state = await self.settle()
            if state == "done" or (isinstance(op, ops.ClientRecord) and state == "director"):
                if not self.repair:
                    self._refuse(
                        op, "the run has ended" if state == "done" else "a run is going on"
                    )
                await self.end_run("a client's own record")
                self._note("added end: the Runner's run ends here")
                self._push(ops.End())
        self.applying = self._push(op)
        try:
            done = self.handler(op)(op)
            if inspect.isawaitable(done):
                await done
        finally:
            self.applying = None

    def _lacks(self, op: ops.Operation) -> str | None:
        """What the app (``config.app``) lacks to run ``op``, or None."""
        if isinstance(op, ops.FanOut) and self.names.team is None:
            return f"app {self.names.name} has no parallel agent"
        if isinstance(op, ops.Delegate) and self.names.helper is None:
            return f"app {self.names.name} has no second LLM agent"
        if isinstance(op, ops.Calls) and None in self.tools_of(op):
            if op.kind == "mixed":
                return f"app {self.names.name} lacks a plain or a long_running tool (a mixed turn)"
            return f"app {self.names.name} has no {op.kind} tool"
        if isinstance(op, ops.Ask) and self.tool_of(op) is None:
            return f"app {self.names.name} has no {op.kind} tool"
        return None

    def stored_timestamps(self) -> Sequence[float]:
        return [e.timestamp for e in self.appended]

    async def _repair_text(self, before: ops.Operation, reason: str) -> None:
        if not self.repair:
            self._refuse(before, reason)
        self._note(f"added text: {reason}")
        self._insert(ops.Text())
        applying, self.applying = self.applying, None
        try:
            await self._op_text(ops.Text(), ended_by_caller=True)
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
                await self._repair_text(ops.End(), f"the model is called before {why}")
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

    async def _agent_waits(self, op: ops.Operation) -> bool:
        """Bring the run to where ``agent``'s model waits; False when no
        invocation runs (the operation is a no-op, as in the emulating driver)."""
        if self.running is None or self.crash is not None:
            return False
        state = await self.settle()
        agent = self.names.agent
        if state == "director":
            self._direct(agent)
            state = await self.settle()
        while state == "gate" and agent in self.gated:
            # (More than once when the Runner takes steps of its own first, such
            # as re-running the calls a resumed invocation left unanswered.)
            before = len(self.stored_events)
            self._open_gate(agent)
            state = await self.settle()
            self._replayed(before)
        if self.crash is not None:
            return False
        if state != "model" or agent not in self.waiting:
            self._refuse(op, f"{agent}'s model is not waiting (the run is {state})")
        return True

    def _replayed(self, before: int) -> None:
        """Pending calls the ``Runner`` answered by running them again are answered."""
        ids = {
            r.id
            for event, _ in self.stored_events[before:]
            if event.author == self.names.agent
            for r in event.get_function_responses()
        }
        self.mark_answered([p for p in self.pending if p.call.id in ids])

    def _started(self, invocation: str | None) -> None:
        """A run for ``invocation`` (None: the one the run reports, a new
        invocation, whose opener is :attr:`opener`) is going on."""
        self.running = invocation or self.run_invocation
        if invocation is None and self.running is not None:
            self.openers.setdefault(self.running, self.opener)
        if self.running is not None and self.running not in self.invocations:
            self.invocations.append(self.running)

    async def _op_open(self, op: ops.Open) -> None:
        await self.end_run("the next message")
        if op.opener == "agent" and self.tree == "director":
            if not self.repair:
                self._refuse(op, "the Runner's older path refuses a run without a message")
            self._note("open(agent) runs as open(user): the Runner's older path needs a message")
            op = self.ran[self.current] = ops.Open("user", op.chars)
        self.clock.think()
        if op.opener == "user":
            self.opener = self.user_text(op.chars)
            await self._start_run(types.Content(role="user", parts=[types.Part(text=self.opener)]))
        else:
            self.opener = None
            await self._start_run(None)
        self._started(None)

    async def _op_text(self, op: ops.Text, *, ended_by_caller: bool = False) -> None:
        if not await self._agent_waits(op):
            return
        text = self.reply_text(self.names.agent, op.chars)
        await self._reply(self.names.agent, [types.Part(text=text)], op.usage)
        if await self.settle() == "done" and not ended_by_caller and self.crash is None:
            # A final text ends the root agent's run (and a run a client's answer
            # resumed), with the Runner's compaction, before anything after it.
            self.run_task = None
            self.running = None
            self.opener = None
            # (Unless what comes next ends the invocation first thing anyway.)
            if not (
                self.upcoming is None or isinstance(self.upcoming, ops.End | ops.Open | ops.Rewind)
            ):
                if not self.repair:
                    self._refuse(op, "the Runner ends the invocation at a final text")
                self._note("added end: the Runner ends the invocation at a final text")
                self._push(ops.End())

    async def _op_calls(self, op: ops.Calls) -> None:
        if not await self._agent_waits(op):
            return
        kinds = op.tool_kinds()
        names = self.tools_of(op)
        self.payload = op.chars
        self.plain_plan = "hang" if "plain" in kinds and op.fate == "later" else "now"
        self.tool_plan = "interim" if op.kind == "interim" else "pause"
        parts = [
            types.Part(
                function_call=types.FunctionCall(
                    id=self.model_call_id(k), name=name, args={"query": "q" * min(op.chars, 200)}
                )
            )
            for k, name in enumerate(names)
        ]
        invocation = self.running
        before = len(self.stored_events)
        await self._reply(self.names.agent, parts, op.usage)
        state = await self.settle()
        made = [
            Pending(Call(c, name), invocation, kind == "long_running")
            for c, name, kind in zip(self._calls_stored_since(before), names, kinds, strict=False)
        ]
        # Plain calls whose tools answered are done; long-running ones (an
        # interim result too) and those whose tools' process died wait.
        done = [p for p in made if not p.long_running and op.fate == "now"]
        self.answered += done
        self.pending += [p for p in made if p not in done]
        if "plain" in kinds and op.fate == "later":
            # The tools' process died: nothing after the call runs.
            if state == "hang":
                await self._cancel_run()
            self.running = None
            self.opener = None
        elif op.kind == "long_running":
            await self.end_run("a long-running call pauses the invocation")
        # (Otherwise the flow calls the model again: tool results, a mixed
        # turn's plain ones included, are not a final response.)

    def _calls_stored_since(self, before: int) -> list[str]:
        """Ids of the calls of the first model event stored since ``before``."""
        for event, _ in self.stored_events[before:]:
            calls = [c.id for c in event.get_function_calls()]
            if calls and event.author != "user":
                return calls
        return []

    async def _op_ask(self, op: ops.Ask) -> None:
        if not await self._agent_waits(op):
            return
        confirm = op.kind == "confirmation"
        name = self.tool_of(op)
        call = types.FunctionCall(id=self.model_call_id(0), name=name, args={"query": "q" * 20})
        invocation = self.running
        before = len(self.stored_events)
        await self._reply(self.names.agent, [types.Part(function_call=call)])
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
            made_call, request_call = Call(made[0], name), Call(request[0], request_name)
            self.asked.append(Asked(made_call, request_call, invocation, request[1]))
        await self.end_run("the invocation waits for the user")

    def _responses(self, answers: list[tuple[str, str, dict]]) -> types.Content:
        return types.Content(
            role="user",
            parts=[
                types.Part(function_response=types.FunctionResponse(id=i, name=n, response=r))
                for i, n, r in answers
            ],
        )

    async def _op_reply(self, op: ops.Reply) -> None:
        asked = self.pick_request(op)
        if asked is None:
            return
        await self.end_run("the user's reply")
        self.clock.think()
        request = asked.request
        if request.name == REQUEST_CONFIRMATION_CALL:
            answer = (request.id, REQUEST_CONFIRMATION_CALL, {"confirmed": True})
        else:
            answer = (request.id, REQUEST_CREDENTIAL_CALL, _credential_response(asked.args))
        self.opener = self.openers.get(asked.invocation)  # the invocation that asked goes on
        await self._start_run(self._responses([answer]))
        self._started(asked.invocation)
        self.answered.append(Pending(asked.call, asked.invocation, False))

    async def _op_answer(self, op: ops.Answer) -> None:
        if not (self.answered if op.again else self.pending):
            return  # a no-op: the running invocation goes on
        # The run ends first (the model replies if it was called: the calls
        # it answers are then as the emulating driver sees them).
        await self.end_run("the client's answer")
        _, chosen = self.pick_answer(op)
        if not chosen:
            self._insert(ops.End())
            self._note("added end: the Runner ran the calls this answer was to answer")
            return
        reason = await self._ambiguous([p.call.id for p in chosen], chosen[0].invocation)
        if reason is not None:
            reason = f"the Runner {reason}"
            if not self.repair:
                self._refuse(op, reason)
            self._note(f"answer replaced by end: {reason}")
            self.ran[self.current] = ops.End()  # the run ended above, as an End ends it
            return
        self.clock.think()
        self.opener = self.openers.get(chosen[0].invocation)  # the answered invocation goes on
        answers = [(p.call.id, p.call.name, _result(20)) for p in chosen]
        await self._start_run(self._responses(answers))
        self._started(chosen[0].invocation)
        if not op.again:
            self.mark_answered(chosen)

    async def _ambiguous(self, ids: list[str], invocation: str) -> str | None:
        """Why responses with ``ids`` (reused by the model: per-turn ids) would
        not answer the calls of ``invocation`` the script means, or None.

        The Runner continues the invocation of each id's newest live call
        (:meth:`~compaction_harness.sdk.python.interpreter.Interpreter.answer_resolves_elsewhere`,
        asked on the session as the Runner will load it for the request); and
        within the invocation the flow's resume logic (``core/_resume.py``)
        pairs a response with the newest call event, re-running that event's
        calls when the response's name is not among them."""
        from ...spec import reference

        loaded = await self.service.peek(
            app_name=self.names.name,
            user_id=USER,
            session_id=self.session_id,
            config=self.session_read(),
        )
        stored = from_adk_events(loaded.events)
        if self.config.recent_events is not None and not set(ids) <= {
            c for s in stored for c in s.call_ids
        }:
            # The partial read leaves out the call: ADK as published raises
            # (partial-read-loses-the-call-a-response-answers), and its fix
            # resolves the answer against the whole session, as judged here.
            loaded = await self.service.peek(
                app_name=self.names.name, user_id=USER, session_id=self.session_id, config=None
            )
            stored = from_adk_events(loaded.events)
        if self.answer_resolves_elsewhere(stored, ids, invocation):
            return "resolves its (reused) ids to another invocation"
        live = reference.live_events(stored)
        makers = [s for s in live if s.invocation == invocation and set(ids) & s.call_ids]
        if len(makers) > 1:
            return "pairs its (reused) ids with the invocation's newest call of that id"
        return None

    async def _director_runs(self, op: ops.Operation, name: str) -> bool:
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

    async def _sub_agent_called(self, op: ops.Operation, name: str) -> bool:
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

    async def _op_fan_out(self, op: ops.FanOut) -> None:
        team = self.names.team
        if not await self._director_runs(op, team):
            return
        # Both sub-agents start, in order (compaction, then the event is built),
        # before either replies; they reply, and are stored, in the script's order.
        first, second = self.names.branches
        for name in (first, second):
            if not await self._sub_agent_called(op, name):
                if self.crash is None:
                    self._refuse(op, f"{name}'s model was not called")
                return
        for name in (first, second) if op.order == "ab" else (second, first):
            await self._stored_reply(name, self.reply_text(name, op.chars))
        await self.settle()

    async def _op_delegate(self, op: ops.Delegate) -> None:
        helper = self.names.helper
        if not await self._director_runs(op, helper):
            return
        if not await self._sub_agent_called(op, helper):
            if self.crash is None:
                self._refuse(op, f"{helper}'s model was not called")
            return
        await self._stored_reply(helper, self.reply_text(helper, op.chars))
        await self.settle()

    async def _op_end(self, op: ops.End) -> None:
        await self.end_run("the end of the invocation")

    async def _op_rewind(self, op: ops.Rewind) -> None:
        await self.end_run("a rewind")
        target = self.rewind_target(op)
        if target is None:
            return
        await self._service_for_request()
        before = len(self.stored_events)
        await self._adk(
            self.runner.rewind_async(
                user_id=USER, session_id=self.session_id, rewind_before_invocation_id=target
            )
        )
        if len(self.stored_events) > before:
            self.invocations.append(self.stored_events[-1][0].invocation_id)
        self.forget_rewound(from_adk_events(self.view.events))

    async def _op_client_record(self, op: ops.ClientRecord) -> None:
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
