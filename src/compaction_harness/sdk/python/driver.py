"""The emulating driver: executes a pipeline script on real ADK, as the
``Runner`` would store it, and checks P0 to P7 after every operation.

Each operation of a :class:`~compaction_harness.spec.scripts.Script` becomes the
events ADK's ``Runner`` stores for it, in the Runner's order, with the
Runner's authors and roles and the Runner's relation of timestamps (what the
real ``Runner`` was seen to store with a scripted model and real tools, on
2.11.0 and 2.13.0):

* a user message opens an invocation (author ``user``); a client's function
  response message continues the invocation of the call it answers
  (``Runner._resolve_invocation_id_from_fr``); a tool confirmation or
  credential answer does too;
* the model's event (author: the agent) is built and stamped after the
  flow's request processors (compaction among them) and before the model is
  called (``_run_one_step_async``);
* parallel tool results are one event (author: the agent, role ``user``),
  stamped with the first result's time
  (``merge_parallel_function_response_events``);
* a long-running call without an interim result pauses the invocation; with
  one, the interim result is stored and the model is called again;
* a confirmation or credential request is stored as the framework's
  synthetic long-running call, *before* the tool's placeholder response but
  stamped *after* it (``postprocess_handle_function_calls_async`` yields the
  request first; ``generate_request_confirmation_event`` builds it last),
  and the invocation pauses;
* ``ParallelAgent`` sub-agents all start (each runs its compaction and is
  stamped) before any is stored; they are stored in the order they finish,
  so a sub-agent that started later but finished first is stored ahead of
  an earlier stamp;
* a rewind is a user event of its own invocation (``_rewind_utils``);
* summaries are made by ADK's ``LlmEventSummarizer`` over a scripted model,
  stamped by the run's clock when made (ADK stamps an event when it is
  built).

Time comes from a clock of the script's resolution: 0.4 ms between the events
of a run, 7 s before a user's next message, ties where the script says, and
hosts whose clocks lag (``Skew``).

Ids are a function of the script (:class:`ScriptIds`): the n-th id of each
kind is a hash of the script's configuration, the kind and n, so a run
replays exactly, and they sort in no particular order, like ADK's uuids (a
database breaks timestamp ties by event id, so which way a tie goes depends
on them). Every id ADK itself draws while a script runs comes from the same
function (:func:`sdk_ids`: ``google.adk.platform.uuid``'s provider, installed
for the run and restored after), in this driver and in the runner driver.

Prompt token counts follow the token model: the prompt ADK assembles for the
agent, counted as ADK's own estimate counts characters, plus the system
instruction and tool declarations, at four characters a token.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Sequence
from typing import ClassVar

from ...spec import scripts as ops
from ...spec.invariants import Violation
from ...spec.model import (
    REQUEST_CONFIRMATION_CALL,
    REQUEST_CREDENTIAL_CALL,
    Call,
    Compaction,
    Response,
    Step,
)
from .interpreter import (
    AGENT,
    EPOCH,
    STEP,
    THINK,
    TOOLS,
    Asked,
    Clock,
    Interpreter,
    Pending,
    ScriptIds,
    sdk_ids,
    walk,
)
from .pipeline import Findings, PipelineRun, covered_by_kept, crash_violation
from .refusals import refusal
from .shortfall import shortfall
from .unit import UnitOutcome

__all__ = ["EPOCH", "ScriptIds", "ScriptRun", "run_script", "sdk_ids"]

#: (Re-exported: the clock's constants and the ids live in :mod:`.interpreter`.)
__all__ += ["AGENT", "EPOCH", "STEP", "THINK", "TOOLS"]


#: What ADK answers for a tool that needs confirmation, until it gets one
#: (``google/adk/flows/llm_flows/functions.py``, 2.11.0 and 2.13.0).
CONFIRMATION_PLACEHOLDER = {
    "error": "This tool call requires confirmation, please approve or reject."
}
#: The credential the scripts' ``calendar`` tool asks for (an HTTP bearer
#: token, ``credential_key`` harness_calendar), as ADK writes it in camel case.
_AUTH_CONFIG = {
    "authScheme": {"type": "http", "scheme": "bearer"},
    "credentialKey": "harness_calendar",
}


def confirmation_request(call: Call) -> dict:
    """The arguments of ADK's ``adk_request_confirmation`` call for ``call``
    (``generate_request_confirmation_event``, 2.11.0 and 2.13.0, as the
    ``Runner`` stores them)."""
    return {
        "originalFunctionCall": {"id": call.id, "args": {"query": "q" * 20}, "name": call.name},
        "toolConfirmation": {
            "hint": f"Please approve or reject the tool call {call.name}() by responding with "
            "a FunctionResponse with an expected ToolConfirmation payload.",
            "confirmed": False,
        },
    }


def credential_request(call: Call) -> dict:
    """The arguments of ADK's ``adk_request_credential`` call for ``call``."""
    return {"functionCallId": call.id, "authConfig": dict(_AUTH_CONFIG)}


def credential_answer() -> dict:
    """What a client sends back for ``adk_request_credential``: the auth config
    with an exchanged credential (ADK's documented pattern)."""
    return {
        "authScheme": _AUTH_CONFIG["authScheme"],
        "exchangedAuthCredential": {
            "authType": "http",
            "http": {"scheme": "bearer", "credentials": {"token": "token"}},
        },
        "credentialKey": _AUTH_CONFIG["credentialKey"],
    }


class _StepClock(Clock):
    """The emulating driver's clock: one ``STEP`` per event stamped (none after a
    ``Tie``); ``monotonic``: every stamp later than the one before, whatever
    the script's ties, hosts and resolution (see :class:`ScriptRun`)."""

    def __init__(self, resolution: float, monotonic: bool) -> None:
        super().__init__(resolution)
        self.monotonic = monotonic
        self.tied = False

    def stamp(self) -> float:
        if self.monotonic:
            self.true += STEP
            return round(self.true, 6)
        if self.tied:
            self.tied = False
        else:
            self.true += STEP
        return self.read(self.true)

    def tie(self, stored: Sequence[float]) -> None:
        self.tied = True

    def skew(self, seconds: float) -> None:
        if not self.monotonic:
            super().skew(seconds)


class ScriptRun(Interpreter):
    """One script executed operation by operation (see the module docstring).

    :meth:`apply` executes one operation and returns the violations its
    checks found. Raises :class:`~compaction_harness.sdk.python.adk.NotApplicable` when
    the installed release cannot run the configuration.
    """

    #: The class that applies operations to ADK and checks them (the cost
    #: profile swaps in one that measures without judging).
    pipeline_run: ClassVar[type[PipelineRun]] = PipelineRun

    def __init__(self, script: ops.Script, *, monotonic: bool = False) -> None:
        super().__init__(script.config)
        self.script = script
        #: Stamp every event later than the one stored before it (no ties, no
        #: lagging hosts, no ADK backward steps): the counterfactual a known
        #: fault uses to tell what time order alone causes.
        self.monotonic = monotonic
        config = script.config
        self.clock = _StepClock(config.resolution, monotonic)
        #: Every id of the run, the harness's and ADK's own (see ScriptIds).
        self.ids = ScriptIds(script)
        self._sdk_ids = contextlib.ExitStack()
        self._sdk_ids.enter_context(sdk_ids(self.ids))
        try:
            self.run = self.pipeline_run(
                config.triggers,
                1,
                strict_provider=config.strict_provider,
                storage=config.storage,
                summary=config.summary,
                faithful=True,
                clock=self.stamp,
                new_id=self.new_id,
            )
        except BaseException:
            self._sdk_ids.close()
            raise
        self.run.base_chars = config.system_chars + config.tools_chars
        #: The operation that stored each appended event, in append order.
        self.origin: list[int] = []
        self.current = -1
        #: Labels of what the run did (Hypothesis events; the statistics test).
        self.labels: set[str] = set()
        #: Where each summary was made: "before a model call" / "at an invocation end".
        self.summary_points: list[str] = []

    # -- time and names -----------------------------------------------------------
    def stamp(self) -> float:
        """The next timestamp: the clock moves on by one step (not after a
        ``Tie``), read through the host's offset at the clock's resolution."""
        return self.clock.stamp()

    def new_id(self, kind: str) -> str:
        """The next id of ``kind`` (``event``, ``invocation``, ``call``): a
        function of the script that sorts in no particular order, like a uuid4."""
        return self.ids(kind)

    # -- appending --------------------------------------------------------------
    def _append(
        self,
        step: Step,
        payload: int = 0,
        *,
        args: dict | None = None,
        response: dict | None = None,
    ) -> None:
        """Store ``step``: its function calls' arguments and responses are
        ``payload`` characters (a tool's result, carrying the harness's event
        tag), or exactly ``args`` / ``response`` where ADK builds them itself
        (stored untagged, as the ``Runner`` stores them)."""
        from .adk import to_adk_event

        event = to_adk_event(step)
        for part in event.content.parts if event.content else ():
            if part.function_response is not None:
                part.function_response.response = (
                    {"result": "r" * payload} if response is None else response
                )
            if part.function_call is not None:
                part.function_call.args = (
                    {"query": "q" * min(payload, 200)} if args is None else args
                )
        self.run.appended.append(step)
        self.run.pipeline.append(event, tag=response is None)
        self.origin.append(self.current)

    def _tokens(self, agent: str, branch: str | None) -> int:
        chars = self.run.pipeline.prompt_chars(agent, branch)
        return (self.config.system_chars + self.config.tools_chars + chars) // 4

    def _model_call(
        self, agent: str = AGENT, branch: str | None = None
    ) -> tuple[list[Violation], float, int]:
        """A model call (:meth:`_checked_model_call`), then the model's event is
        built and stamped, before the model is called (``_run_one_step_async``);
        returns (violations, the event's timestamp, the prompt's token count)."""
        found = self._checked_model_call(agent, branch)
        return found, self.stamp(), self._tokens(agent, branch)

    def _checked_model_call(self, agent: str, branch: str | None) -> list[Violation]:
        """The steps of ADK's LLM flow up to the one that calls the model: each
        runs the request processors (compaction among them); a step of the
        root agent in a running invocation whose tools never ran (their
        process died) runs them instead of calling the model, when ADK's flow
        says so (``Pipeline.calls_to_replay``: ``decide_step_resume``), stores
        their results as one event and leaves the request it built unsent;
        the last step sends its request, which is checked."""
        found: list[Violation] = []
        where = "before a sub-agent's model call" if agent != AGENT else "before a model call"
        while True:
            made = len(self.run.pipeline.summaries)
            found += self.run.request_processors(agent, branch)
            self.summary_points += [where] * (len(self.run.pipeline.summaries) - made)
            replayed = agent == AGENT and self.running is not None and self._replay_calls()
            if not replayed:
                return found + self.run.check_request(agent, branch)

    def _replay_calls(self) -> bool:
        """Run the calls ADK's flow replays at this step, if any (see
        :meth:`_checked_model_call`); whether it replayed some."""
        ids = self.run.pipeline.calls_to_replay(self.running, TOOLS)
        if not ids:
            return False
        # ADK re-runs the calls of one event, the newest that made them: with
        # ids numbered per turn, an older turn's pending call with an id is
        # not run again (the newest pending call with each id is).
        newest = {
            p.call.id: p for p in self.pending if p.call.id in ids and p.invocation == self.running
        }
        rerun = list(newest.values())
        calls = [p.call for p in rerun] or [
            c for s in reversed(self.run.appended) for c in s.calls if c.id in ids
        ][: len(ids)]
        self.labels.add("calls: run again when the invocation resumed")
        self._append(
            Step(
                self.running,
                AGENT,
                self.stamp(),
                responses=tuple(Response(c.id, c.name) for c in calls),
            ),
            payload=20,
        )
        self.mark_answered(rerun)
        return True

    def _start(self, invocation: str, opener: str | None) -> None:
        if self.config.storage != "memory":
            self.run.pipeline.reload()
            self.labels.add("storage: reloaded before an invocation")
        self.running = invocation
        # A resumed invocation keeps the opener it was opened with.
        self.run.opener = self.openers.setdefault(invocation, opener)
        if invocation not in self.invocations:
            self.invocations.append(invocation)

    def _new_invocation(self) -> str:
        return "e-" + self.new_id("invocation")

    def _call_id(self, k: int) -> str:
        if (given := self.model_call_id(k)) is not None:
            return given
        return "adk-" + self.new_id("call")

    # -- operations -----------------------------------------------------------------
    def apply(self, index: int, op: ops.Operation) -> list[Violation]:
        """Execute operation ``index`` of the script; returns what the checks found."""
        self.current = index
        return self.handler(op)(op) or []

    def stored_timestamps(self) -> Sequence[float]:
        return [s.timestamp for s in self.run.appended]

    def _end(self, *, compaction: bool = True) -> list[Violation]:
        if self.running is None:
            return []
        self.running = None
        if not compaction:  # the process died: nothing ran after the last event
            self.run.opener = None
            return []
        made = len(self.run.pipeline.summaries)
        found = self.run.end_invocation()
        self.summary_points += ["at an invocation end"] * (len(self.run.pipeline.summaries) - made)
        return found

    def _op_open(self, op: ops.Open) -> list[Violation]:
        found = self._end()
        self.clock.think()
        invocation = self._new_invocation()
        self.labels.add(f"opener: {'user message' if op.opener == 'user' else 'agent'}")
        if op.opener == "user":
            text = self.user_text(op.chars)
            self._start(invocation, text)
            self._append(Step(invocation, "user", self.stamp(), text=text))
        else:
            self._start(invocation, None)
        return found

    def _op_text(self, op: ops.Text) -> list[Violation]:
        if self.running is None:
            return []
        found, started, tokens = self._model_call()
        text = self.reply_text(AGENT, op.chars)
        if not op.usage:
            self.labels.add("tokens: reply without usage metadata")
        self._append(
            Step(
                self.running,
                AGENT,
                started,
                text=text,
                prompt_tokens=tokens if op.usage else None,
            )
        )
        return found

    def _op_calls(self, op: ops.Calls) -> list[Violation]:
        if self.running is None:
            return []
        found, started, tokens = self._model_call()
        kinds = op.tool_kinds()
        calls = tuple(Call(self._call_id(k), name) for k, name in enumerate(self.tools_of(op)))
        described = {
            "plain": "plain",
            "long_running": "long-running",
            "interim": "interim result",
            "mixed": "plain and long-running in one turn",
        }
        fate = "answered at once" if op.fate == "now" else "left pending"
        self.labels.add(
            f"calls: {described[op.kind]}" + ("" if "plain" not in kinds else f", {fate}")
        )
        if op.count > 1:
            self.labels.add("calls: parallel")
        known = {p.call.id for p in self.pending + self.answered}
        if any(c.id in known for c in calls):
            self.labels.add("calls: id reused across turns")
        lasting = {c.id for c, kind in zip(calls, kinds, strict=True) if kind == "long_running"}
        self._append(
            Step(
                self.running,
                AGENT,
                started,
                calls=calls,
                long_running=tuple(c.id for c in calls if c.id in lasting),
                prompt_tokens=tokens if op.usage else None,
            ),
            payload=op.chars,
        )
        invocation = self.running
        # The calls whose tools answer now: plain ones (unless their process
        # dies), and every call of a tool with an interim result.
        answering = [
            c
            for c in calls
            if (c.id not in lasting and op.fate == "now")
            or (c.id in lasting and op.kind == "interim")
        ]
        if answering:
            # One event for the parallel results, stamped with the first one's
            # time; a long-running tool that returned nothing has no part in it.
            self._append(
                Step(
                    invocation,
                    AGENT,
                    self.stamp(),
                    responses=tuple(Response(c.id, c.name) for c in answering),
                ),
                payload=op.chars,
            )
        done = [c for c in answering if c.id not in lasting]
        self.answered += [Pending(c, invocation, False) for c in done]
        self.pending += [Pending(c, invocation, c.id in lasting) for c in calls if c not in done]
        if "plain" in kinds and op.fate == "later":
            # Never answered in this run: the tools' process died after the call
            # was stored, and nothing after it ran.
            return found + self._end(compaction=False)
        if op.kind == "long_running":
            # The tools returned nothing yet: the invocation pauses.
            return found + self._end()
        # Tool results (plain ones, interim ones) are not a final response: the
        # model is called again in this invocation, a mixed turn's too
        # (BaseLlmFlow.run_async).
        return found

    def _op_answer(self, op: ops.Answer) -> list[Violation]:
        pool, chosen = self.pick_answer(op)
        if not chosen:
            return []
        found = self._end()
        # A client's answer reaches the Runner, which continues the invocation
        # of each id's newest call: an answer the model's reused ids send to
        # another invocation ends the run instead, as the runner driver makes
        # it. (The runner driver also refuses an answer to calls of several
        # model turns of one invocation, which ADK's resume logic may re-run;
        # the emulating driver stores it, the shape of a known fault.)
        ids = [p.call.id for p in chosen]
        if self.answer_resolves_elsewhere(self.run.pipeline.steps(), ids, chosen[0].invocation):
            return found
        self._answer_labels(pool, chosen, op.again)
        self.clock.think()
        invocation = chosen[0].invocation
        self._start(invocation, None)
        self._append(
            Step(
                invocation,
                "user",
                self.stamp(),
                responses=tuple(Response(p.call.id, p.call.name) for p in chosen),
            ),
            payload=20,
        )
        if not op.again:
            self.mark_answered(chosen)
        return found

    def _answer_labels(self, pool: list[Pending], chosen: list[Pending], again: bool) -> None:
        self.labels.add("opener: client answer")
        if again:
            self.labels.add("answer: a call answered twice")
            return
        order = [pool.index(p) for p in chosen]
        if order != sorted(order):
            self.labels.add("answer: out of order")
        made = {self._made_by(p.call.id) for p in chosen}
        if len(made) > 1:
            self.labels.add("answer: calls of several turns at once")
        siblings = [p for p in pool if self._made_by(p.call.id) in made and p not in chosen]
        if siblings:
            self.labels.add("answer: partial")

    def _made_by(self, call_id: str) -> int:
        """The append number of the newest event that made a call with this id."""
        steps = self.run.appended
        return max((k for k, s in enumerate(steps) if call_id in s.call_ids), default=-1)

    def _op_ask(self, op: ops.Ask) -> list[Violation]:
        if self.running is None:
            return []
        found, started, tokens = self._model_call()
        confirm = op.kind == "confirmation"
        self.labels.add(f"ask the user: {'tool confirmation' if confirm else 'credentials'}")
        call = Call(self._call_id(0), self.tool_of(op))
        invocation = self.running
        self._append(
            Step(invocation, AGENT, started, calls=(call,), prompt_tokens=tokens), payload=20
        )
        placeholder_time = self.stamp()
        request_time = self.stamp()
        if self.monotonic:  # stamped in the order they are stored
            placeholder_time, request_time = request_time, placeholder_time
        name = REQUEST_CONFIRMATION_CALL if confirm else REQUEST_CREDENTIAL_CALL
        request = Call("adk-" + self.new_id("call"), name)
        # The Runner stores the request first, though it was built after the response.
        args = confirmation_request(call) if confirm else credential_request(call)
        self._append(
            Step(invocation, AGENT, request_time, calls=(request,), long_running=(request.id,)),
            args=args,
        )
        pending = {"confirmations" if confirm else "auth_requests": (call.id,)}
        self._append(
            Step(
                invocation,
                AGENT,
                placeholder_time,
                responses=(Response(call.id, call.name),),
                **pending,
            ),
            payload=20,
            # A tool needing confirmation does not run: ADK answers for it.
            response=dict(CONFIRMATION_PLACEHOLDER) if confirm else None,
        )
        self.asked.append(Asked(call, request, invocation, args))
        return found + self._end()  # the invocation waits for the user

    def _op_reply(self, op: ops.Reply) -> list[Violation]:
        asked = self.pick_request(op)
        if asked is None:
            return []
        call, request, invocation = asked.call, asked.request, asked.invocation
        self.labels.add("opener: user answers a request")
        found = self._end()
        self.clock.think()
        self._start(invocation, None)
        confirm = request.name == REQUEST_CONFIRMATION_CALL
        self._append(
            Step(invocation, "user", self.stamp(), responses=(Response(request.id, request.name),)),
            response={"confirmed": True} if confirm else credential_answer(),
        )
        # The tool runs now, and its real result answers the original call.
        self._append(
            Step(invocation, AGENT, self.stamp(), responses=(Response(call.id, call.name),)),
            payload=20,
        )
        self.answered.append(Pending(call, invocation, False))
        return found

    def _op_fan_out(self, op: ops.FanOut) -> list[Violation]:
        if self.running is None:
            return []
        found: list[Violation] = []
        self.labels.add("agents: parallel sub-agents on branches")
        started: dict[str, tuple[float, int]] = {}
        for name in "ab":  # both steps start, in order, before either finishes
            branch = f"team.{name}"
            found += self._checked_model_call(name, branch)
            started[name] = (self.stamp(), self._tokens(name, branch))
        if self.monotonic:  # stamped in the order they are stored
            stamps = sorted(stamp for stamp, _ in started.values())
            started = {n: (stamps[k], started[n][1]) for k, n in enumerate(op.order)}
        for name in op.order:  # stored as they finish
            text = self.reply_text(name, op.chars)
            stamp, tokens = started[name]
            self._append(
                Step(
                    self.running,
                    name,
                    stamp,
                    text=text,
                    branch=f"team.{name}",
                    prompt_tokens=tokens,
                )
            )
        return found

    def _op_delegate(self, op: ops.Delegate) -> list[Violation]:
        if self.running is None:
            return []
        found, started, tokens = self._model_call("helper", None)
        self.labels.add("agents: sequential sub-agent")
        self._append(
            Step(
                self.running,
                "helper",
                started,
                text=self.reply_text("helper", op.chars),
                prompt_tokens=tokens,
            )
        )
        return found

    def _op_end(self, op: ops.End) -> list[Violation]:
        return self._end()

    def _op_rewind(self, op: ops.Rewind) -> list[Violation]:
        found = self._end()
        target = self.rewind_target(op)
        if target is None:
            return found
        self.labels.add("rewind")
        invocation = self._new_invocation()
        self._start(invocation, None)
        self._append(Step(invocation, "user", self.stamp(), rewind_before=target))
        self.running = None  # the rewind is an invocation of its own; nothing runs after it
        self.forget_rewound(self.run.pipeline.steps())
        return found

    def _op_client_record(self, op: ops.ClientRecord) -> list[Violation]:
        stored = self.run.pipeline.steps()
        raw = [s for s in stored if s.compaction is None]
        if not raw:
            return []
        covered = raw[-min(op.back, len(raw)) :]
        self.labels.add("client compaction record")
        self._append(
            Step(
                "p-" + self.new_id("invocation"),
                "user",
                self.stamp(),
                compaction=Compaction(covered[0].timestamp, covered[-1].timestamp, "client"),
            )
        )
        return []

    def finish(self) -> list[Violation]:
        """The script ends: a running invocation ends with it."""
        self.current = len(self.script.operations)
        return self._end()

    def all_labels(self) -> list[str]:
        """What the run did, one label per realism dimension and value: the
        operations' own labels, the configuration, and what the stored
        session shows (ties, backward steps, lagging hosts, summaries)."""
        config = self.config
        out = set(self.labels)
        out.add(f"config: {config.kind}")
        out.add(f"storage: {config.storage}")
        clock = {1e-6: "fine", 1e-3: "millisecond", 1.0: "coarse (1 s)"}
        out.add(f"clock: {clock.get(config.resolution, config.resolution)}")
        out.add(f"summary size: {config.summary}")
        out.add(f"provider: {'strict (LiteLLM)' if config.strict_provider else 'lenient'}")
        if config.strict_provider and not self.run.strict_clause:
            out.add("provider: unanswered calls healed by ADK's LiteLLM adapter")
        out.add(f"call ids: {config.call_ids.replace('_', ' ')}")
        if config.system_chars or config.tools_chars:
            out.add("tokens: system instruction or tool declarations")
        steps = self.run.readable_steps()
        raw = [s for s in steps if s.compaction is None]
        for before, after in itertools.pairwise(raw):
            if after.timestamp == before.timestamp:
                out.add("time: events in one clock tick")
            if after.timestamp < before.timestamp:
                out.add("time: a stored event earlier than the one before")
                if after.invocation != before.invocation:
                    out.add("time: an invocation stamped before the previous one")
        for number in range(len(self.run.pipeline.summaries)):
            made_by = self.summary_points[number] if number < len(self.summary_points) else "?"
            out.add(f"summary made: {made_by}")
        threshold = config.token_threshold
        texts = self.run.pipeline.summary_texts
        if threshold and any(len(t) // 4 >= threshold for t in texts):
            out.add("tokens: a summary larger than the threshold")
        if self.run.stale_checks:
            out.add("P6: token trigger checked without stale counts")
        return sorted(out)

    # -- what a fixture records ----------------------------------------------------
    def outcome(self, violations: list[Violation]) -> UnitOutcome:
        base = self._outcome(violations)
        base.labels = self.all_labels()
        return base

    def _outcome(self, violations: list[Violation]) -> UnitOutcome:
        """The outcome a fixture records. ``observed``: ``session`` (the events
        as stored, summaries included), ``origin`` (for each stored event the
        operation that stored it, or ``summary#n``), ``summaries`` (the stored
        positions each summary was given), ``prompt`` (the prompt checked
        last)."""
        base = self.run.outcome(violations)
        steps = self.run.readable_steps()
        origins = self.run.pipeline.origins() if len(steps) else []
        base.observed["session"] = steps.to_json()
        base.observed["origin"] = [
            self.origin[o] if o is not None else step.compaction.summary.split("\n", 1)[0]
            for step, o in zip(steps, origins, strict=True)
        ]
        del base.observed["stored"]
        return base

    def close(self) -> None:
        try:
            self.run.close()
        finally:
            self._sdk_ids.close()


def run_script(
    script: ops.Script,
    *,
    stop: Callable[[int, ScriptRun], None] | None = None,
    monotonic: bool = False,
) -> UnitOutcome:
    """Execute ``script`` and check P0 to P7 after every operation.

    Runs and records, nothing classified: the outcome's ``violations`` hold
    every violation of the invariants the script checks, operation by
    operation (``batches``: how many each operation found), and ``ran`` the
    script as far as it ran (classification by fix re-runs that, after the
    run: :func:`compaction_harness.sdk.python.triage.judge`). An exception
    ADK raises while the script runs is a P0 violation, and ends the run:
    nothing after it can be judged. ``stop`` (for tests) is called after each
    operation. ``monotonic``: every event stamped later than the one stored
    before it (see :class:`ScriptRun`). Raises :class:`.adk.NotApplicable`
    for a script on a user's app (``config.app``: only the ``Runner`` builds
    one) and for a partial read (``config.recent_events``: the session
    service's cut, which this driver does not emulate).
    """
    refused = refusal(script.config)
    if refused is not None:
        from .adk import NotApplicable

        raise NotApplicable(refused)
    run = ScriptRun(script, monotonic=monotonic)
    findings = Findings(set(script.config.invariants) if script.config.invariants else None)

    def outcome() -> UnitOutcome:
        ran = ops.Script(script.config, script.operations[: run.current + 1])
        return findings.outcome(run.outcome, ran)

    try:
        for index, op, _ in walk(script.operations):
            try:
                found = run.apply(index, op)
            except Exception as exc:
                from .adk import NotApplicable

                if isinstance(exc, NotApplicable):
                    raise
                found = [crash(op, exc)]
            findings(found)
            if stop is not None:
                stop(index, run)
            if found and found[0].invariant == "P0":
                return outcome()
        try:
            found = run.finish()
        except Exception as exc:
            from .adk import NotApplicable

            if isinstance(exc, NotApplicable):
                raise
            found = [crash(ops.End(), exc)]
        findings(found)
        return outcome()
    finally:
        run.close()


def crash(op: ops.Operation, exc: BaseException) -> Violation:
    """P0: ADK raised while the driver ran ``op``."""
    return crash_violation(f"operation {op.op!r}", exc)


def covered(run: ScriptRun) -> set[int]:
    """Positions the kept summaries stand for (for tests and labels)."""
    pipeline = run.run.pipeline
    return covered_by_kept(pipeline.prompt(), pipeline.summaries)


__all__ += ["covered", "crash"]


__all__ += ["shortfall"]
