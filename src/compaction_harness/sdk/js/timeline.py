"""The script interpreter of ADK-JS: :class:`_Timeline` turns a script's
operations (:mod:`compaction_harness.spec.scripts`) into the driver actions
that append the events ADK-JS's ``Runner`` stores for them, and marks the
model calls where the compactors run. The one interpreter of the script
language for ADK-JS: the emulating runs (:mod:`.run`), the recorded
sessions' replay and the comparison with ADK-JS's ``Runner``
(:mod:`.differential_js`) all read its actions."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from ...spec import scripts as ops
from ...spec.model import (
    REQUEST_CONFIRMATION_CALL,
    REQUEST_CREDENTIAL_CALL,
    Call,
    Compaction,
    Response,
    Step,
)
from ...spec.reference import SYNTHETIC_HITL_CALL_NAMES
from .case import NotApplicable
from .events import _ms, client_record_event, to_js_event

__all__ = [
    "AGENT",
    "ASK_TOOLS",
    "JS_AUTH_CONFIG",
    "JS_CONFIRMATION_HINT",
    "JS_CREDENTIAL_ANSWER",
    "timeline",
]

EPOCH = 1_700_000_000.0
STEP = 0.0004
THINK = 7.0
AGENT = "agent"


#: Ask/Reply, as ADK-JS 2.0.0's Runner stores them (read from
#: agents/llm_agent.js, agents/functions.js, auth/auth_preprocessor.js and
#: agents/processors/request_confirmation_llm_request_processor.js, and
#: pinned by tests/slow/adk_js/test_differential_js.py, which runs both flows through the
#: Runner): see ``_Timeline._op_ask`` and ``_op_reply``.
#: The tools the runner mode registers for Ask (``sdks/adk-js/driver.mjs``):
#: ``transfer`` is a ``FunctionTool`` with ``requireConfirmation``,
#: ``calendar`` asks for credentials (the names adk-python's drivers use).
ASK_TOOLS = {"confirmation": "transfer", "auth": "calendar"}
#: The auth config the ``calendar`` tool requests (``toolContext.requestCredential``),
#: and the credential a user's reply carries (``bindCredentialResponse`` in
#: auth/credential_response_binding.js needs ``exchangedAuthCredential``).
JS_AUTH_CONFIG = {
    "authScheme": {"type": "http", "scheme": "bearer"},
    "credentialKey": "harness_calendar",
}
JS_CREDENTIAL_ANSWER = {
    **JS_AUTH_CONFIG,
    "exchangedAuthCredential": {
        "authType": "http",
        "http": {"scheme": "bearer", "credentials": {"token": "token"}},
    },
}
#: What ADK-JS's FunctionTool.checkConfirmation answers before the user
#: confirmed (tools/function_tool.js; the Runner never stores it: the
#: synthetic call's event replaces it).
JS_CONFIRMATION_HINT = (
    "Please approve or reject the tool call {name}() by responding with a FunctionResponse "
    "with an expected ToolConfirmation payload."
)
#: Operations ADK-JS cannot represent, by name (``Operation.op``): why.
_NOT_REPRESENTED = {
    "rewind": "rewinds: ADK-JS 2.0.0 has no rewind (nothing in dist/ reads one)",
}
#: Why a mixed model turn (``Calls(kind="mixed")``) is refused: not a shape
#: ADK-JS lacks (``agents/functions.js`` skips a long-running tool's None
#: result as adk-python does), but one neither this mapping nor the Node
#: driver's runner mode emulates yet, so nothing would check the events the
#: mapping stored for it against ADK-JS's Runner.
MIXED_TURN = (
    "a model turn that mixes a plain and a long-running call (calls kind 'mixed'): "
    "the ADK-JS mapping and the Node driver's runner mode do not emulate it yet"
)


@dataclass
class _Pending:
    call: Call
    invocation: str


class _Timeline:
    """Turns operations into ADK-JS driver actions, as ADK-JS's Runner stores
    events for them (the emulating driver's rules, minus what ADK-JS lacks:
    no compaction at an invocation's end)."""

    def __init__(self, script: ops.Script) -> None:
        self.config = script.config
        self.actions: list[dict[str, Any]] = []
        self.steps: list[Step] = []  # the appended events, in order (their ids: e<n>)
        self.origin: list[int] = []  # per appended event, the operation that appended it
        self._op = -1
        self.openers: dict[int, str | None] = {}  # model-call action -> opener text
        self.opener: str | None = None
        self._true = EPOCH
        self._offset = 0.0
        self._tie = False
        self._serial = 0
        self.running: str | None = None
        self.pending: list[_Pending] = []
        self.answered: list[_Pending] = []
        #: Pending Ask requests, oldest first: (the tool's call, the synthetic
        #: call, the number of the synthetic call among the framework
        #: requests stored so far).
        self.asked: list[tuple[Call, Call, int]] = []
        #: Per synthetic call id, its number among the framework requests
        #: stored (the runner mode finds the Runner's own id by it).
        self.request_number: dict[str, int] = {}
        #: Invocations whose state holds the credential (a reply to a
        #: credential request opened them).
        self.authorised: set[str] = set()
        self.requests = 0
        self.model = 0
        self.users = 0

    def stamp(self) -> float:
        """The next clock reading (seconds): one :data:`STEP` later, or,
        after a ``Tie``, the previous reading again; read through the host's
        offset (``Skew``) at the script's resolution."""
        if self._tie:
            self._tie = False
        else:
            self._true += STEP
        return ops.at_resolution(self._true + self._offset, self.config.resolution)

    def new_id(self, kind: str) -> str:
        self._serial += 1
        digest = hashlib.sha256(f"{kind}:{self._serial}".encode()).hexdigest()
        return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"

    def append(self, step: Step, payload: int = 20, *, usage: bool = False) -> None:
        event_id = f"e{len(self.steps)}"
        self.steps.append(step)
        self.origin.append(self._op)
        action: dict[str, Any] = {"do": "append", "event": to_js_event(step, event_id, payload)}
        if usage:
            action["usage"] = "last_call"
        self.actions.append(action)

    def model_call(self, agent: str = AGENT, branch: str | None = None) -> float:
        """A model call: the compactor runs at one clock reading (``now``,
        the stamp of any summary it makes), and the reply is stamped at the
        next: ``LlmAgent.runOneStepAsync`` (``agents/llm_agent.js``) creates
        the model response event after its request processors (where the
        compactor stores its summary), as ADK-JS's ``Runner`` shows
        (``differential_js``). After a ``Tie`` both readings are the previous
        one: the whole call falls in the previous event's tick, as ADK-JS
        with a millisecond ``Date.now`` and a fast model stores it (the reply's
        event is created before the model is called). Returns the reply's
        stamp (seconds)."""
        tied = self._tie
        compacted = self.stamp()
        self.openers[len(self.actions)] = self.opener if agent == AGENT else None
        self.actions.append(
            {"do": "model_call", "agent": agent, "branch": branch, "now": _ms(compacted)}
        )
        self._tie = tied  # a tied call is one tick: the reply shares the summary's stamp
        return self.stamp()

    def start(self, invocation: str, opener: str | None) -> None:
        self.running = invocation
        self.opener = opener
        self.actions.append({"do": "invocation", "id": invocation})

    def text(self, prefix: str, chars: int) -> str:
        head = f"{prefix} "
        return head + "x" * max(0, chars - len(head))

    def apply(self, op: ops.Operation) -> None:
        reason = _NOT_REPRESENTED.get(op.op)
        if reason is not None:
            raise NotApplicable(f"ADK-JS cannot represent {reason}")
        if isinstance(op, ops.Calls) and op.kind == "mixed":
            raise NotApplicable(f"ADK-JS is not driven through {MIXED_TURN}")
        self._op += 1
        getattr(self, f"_op_{op.op}")(op)

    def think(self) -> None:
        """The client's pause before a new message (:data:`THINK`), skipped
        after a ``Tie``: the message then shares the previous event's
        millisecond (a client answering at once, as ADK-JS's Runner with
        ``Date.now`` stamps can store it); the tie itself is left for the
        event's :meth:`stamp`, or the next operation's reading."""
        if not self._tie:
            self._true += THINK

    def _op_open(self, op: ops.Open) -> None:
        self.running = None
        self.think()
        invocation = "e-" + self.new_id("invocation")
        if op.opener == "user":
            self.users += 1
            text = self.text(f"user {self.users}", op.chars)
            self.start(invocation, text)
            self.append(Step(invocation, "user", self.stamp(), text=text))
        else:
            self.start(invocation, None)

    def _op_text(self, op: ops.Text) -> None:
        if self.running is None:
            return
        started = self.model_call()
        self.model += 1
        self.append(
            Step(self.running, AGENT, started, text=self.text(f"model {self.model}", op.chars)),
            usage=op.usage,
        )

    def _call_id(self, k: int) -> str:
        if self.config.call_ids == "per_turn":
            return f"call_{k}"
        return "adk-" + self.new_id("call")

    def _op_calls(self, op: ops.Calls) -> None:
        if self.running is None:
            return
        started = self.model_call()
        name = "lookup" if op.kind == "plain" else "export"
        calls = tuple(Call(self._call_id(k), name) for k in range(op.count))
        long_running = tuple(c.id for c in calls) if op.kind != "plain" else ()
        self.append(
            Step(self.running, AGENT, started, calls=calls, long_running=long_running),
            payload=op.chars,
            usage=op.usage,
        )
        invocation = self.running
        if (op.kind == "plain" and op.fate == "now") or op.kind == "interim":
            responses = tuple(Response(c.id, c.name) for c in calls)
            self.append(Step(invocation, AGENT, self.stamp(), responses=responses), op.chars)
        if op.kind == "plain" and op.fate == "now":
            self.answered += [_Pending(c, invocation) for c in calls]
            return
        self.pending += [_Pending(c, invocation) for c in calls]
        if op.kind != "interim":  # paused (long-running) or the tool's process died
            self.running = None

    def _op_answer(self, op: ops.Answer) -> None:
        _, chosen = op.pick(self.answered if op.again else self.pending)
        if not chosen:
            return
        self.think()
        # ADK-JS's Runner gives every run a new invocation id
        # (newInvocationContextId in runner/runner.js), a client's function
        # response too: unlike adk-python, it does not continue the call's.
        invocation = "e-" + self.new_id("invocation")
        self.start(invocation, None)
        responses = tuple(Response(p.call.id, p.call.name) for p in chosen)
        self.append(Step(invocation, "user", self.stamp(), responses=responses))
        if not op.again:
            for item in chosen:
                self.pending.remove(item)
                self.answered.append(item)

    def _op_ask(self, op: ops.Ask) -> None:
        """A tool that needs the user first, as ADK-JS's Runner stores it
        (``LlmAgent.postprocess`` in agents/llm_agent.js, after the tools ran):

        * the model's event with the call (``transfer`` / ``calendar``);
        * confirmation: only ``generateRequestConfirmationEvent``'s event
          (agents/functions.js): author the agent, role ``user`` (the
          response event's), the synthetic long-running
          ``adk_request_confirmation`` call (an ``adk-`` id) carrying the
          response event's actions, so ``requestedToolConfirmations[call]``
          sits on the synthetic call's event; no placeholder response is
          stored and ``endInvocation`` ends the invocation;
        * auth: ``generateAuthEvent``'s synthetic ``adk_request_credential``
          call (role ``user``, long-running), then the tool's placeholder
          response with ``requestedAuthConfigs[call]``, stamped earlier (it
          was made first); ``isFinalResponse`` (events/event.js) is true for
          it, so the invocation ends. In the invocation a credential reply
          opened, the credential is in the state: the tool answers at once
          and nothing is asked.

        Does nothing when no invocation runs."""
        if self.running is None:
            return
        confirm = op.kind == "confirmation"
        started = self.model_call()
        call = Call(self._call_id(0), ASK_TOOLS[op.kind])
        invocation = self.running
        self.append(Step(invocation, AGENT, started, calls=(call,)))
        if not confirm and invocation in self.authorised:
            # AUTH_PREPROCESSOR stored the credential in this invocation's
            # state (``temp:`` + credentialKey): the tool finds it
            # (``toolContext.getAuthResponse``) and answers at once.
            self.append(
                Step(invocation, AGENT, self.stamp(), responses=(Response(call.id, call.name),))
            )
            self.answered.append(_Pending(call, invocation))
            return
        placeholder_time = self.stamp()  # the tool's response event is made first
        request_time = self.stamp()
        name = REQUEST_CONFIRMATION_CALL if confirm else REQUEST_CREDENTIAL_CALL
        request = Call("adk-" + self.new_id("call"), name)
        pending = {"confirmations": (call.id,)} if confirm else {}
        self.append(
            Step(
                invocation,
                AGENT,
                request_time,
                calls=(request,),
                long_running=(request.id,),
                **pending,
            )
        )
        event = self.actions[-1]["event"]
        event["content"]["role"] = "user"
        original = self.actions[-2]["event"]["content"]["parts"][0]["functionCall"]
        if confirm:
            args: dict[str, Any] = {
                "originalFunctionCall": original,
                "toolConfirmation": {
                    "hint": JS_CONFIRMATION_HINT.format(name=call.name),
                    "confirmed": False,
                },
            }
            event["actions"]["requestedToolConfirmations"] = {
                call.id: dict(args["toolConfirmation"])
            }
        else:
            args = {"function_call_id": call.id, "auth_config": dict(JS_AUTH_CONFIG)}
        event["content"]["parts"][0]["functionCall"]["args"] = args
        if not confirm:
            self.append(
                Step(
                    invocation,
                    AGENT,
                    placeholder_time,
                    responses=(Response(call.id, call.name),),
                    auth_requests=(call.id,),
                )
            )
            self.actions[-1]["event"]["actions"]["requestedAuthConfigs"] = {
                call.id: dict(JS_AUTH_CONFIG)
            }
        self.asked.append((call, request, self.requests))
        self.request_number[request.id] = self.requests
        self.requests += 1
        self.running = None  # the invocation waits for the user

    def _op_reply(self, op: ops.Reply) -> None:
        """The user answers a pending request (``pick`` modulo their number,
        oldest first), as ADK-JS's Runner stores it: a new run with a new
        invocation id (``newInvocationContextId``, runner/runner.js), whose
        message is the user's function response to the synthetic call
        (``{"confirmed": true}``, or the credential); then, before the first
        model call of the run, the request processors re-run the tool
        (``AUTH_PREPROCESSOR`` for a credential, auth/auth_preprocessor.js;
        ``REQUEST_CONFIRMATION_LLM_REQUEST_PROCESSOR`` for a confirmation) and
        the Runner stores its real result for the original call id (author
        the agent, role ``user``, the new invocation). The model is called
        next (the script's following operation). Does nothing when nothing
        is pending."""
        if not self.asked:
            return
        call, request, _number = self.asked.pop(op.pick % len(self.asked))
        self.think()
        invocation = "e-" + self.new_id("invocation")
        self.start(invocation, None)
        self.append(
            Step(invocation, "user", self.stamp(), responses=(Response(request.id, request.name),))
        )
        confirm = request.name == REQUEST_CONFIRMATION_CALL
        if not confirm:
            self.authorised.add(invocation)
        answer = self.actions[-1]["event"]["content"]["parts"][0]["functionResponse"]
        answer["response"] = (
            {"confirmed": True} if confirm else json.loads(json.dumps(JS_CREDENTIAL_ANSWER))
        )
        self.append(
            Step(invocation, AGENT, self.stamp(), responses=(Response(call.id, call.name),))
        )
        self.answered.append(_Pending(call, invocation))

    def reuses_asked_id(self, op: ops.Reply) -> bool:
        """Whether ``op``, applied next, answers a request whose asked call's
        id a later event reused (ids numbered per turn): a later call
        (ADK-JS's Runner then re-runs that newer call), or, for a
        confirmation, a later response to another call with it (the
        confirmation processor's hasRespondedAfter then skips the re-run);
        ``differential_js.RUNNER_CANNOT["reply-reused-id"]``. False when
        nothing is pending."""
        if not self.asked:
            return False
        call, request, _number = self.asked[op.pick % len(self.asked)]
        asked_at = next(k for k, s in enumerate(self.steps) if request.id in s.call_ids)
        later = self.steps[asked_at + 1 :]
        if request.name == REQUEST_CREDENTIAL_CALL:
            later = later[1:]  # the tool's own placeholder response
        return any(
            call.id in s.call_ids
            or (request.name == REQUEST_CONFIRMATION_CALL and call.id in s.response_ids)
            for s in later
        )

    def _resumed_by_answer(self) -> bool:
        """Whether the newest event is a client's function response: ADK-JS's
        Runner then resumes the agent that made the call (a resumable app) or
        the last agent that spoke (``determineAgentForResumption``,
        ``runner/runner.js``), and the agent whose turn made the call answers
        first; in these scripts that is the root agent, never a sub-agent; a sub-agent
        step here does nothing (a sub-agent's getContents would be handed
        another agent's answer as its newest event, which no run produces)."""
        if not self.steps:
            return False
        last = self.steps[-1]
        if last.author == "user" and last.responses:
            return True
        # A reply to a framework request: the tool's re-run result follows
        # the user's answer, and the root agent (the requester) runs on.
        before = self.steps[-2] if len(self.steps) > 1 else None
        return (
            before is not None
            and before.author == "user"
            and any(r.name in SYNTHETIC_HITL_CALL_NAMES for r in before.responses)
            and last.author == AGENT
            and bool(last.responses)
        )

    def _op_fan_out(self, op: ops.FanOut) -> None:
        if self.running is None or self._resumed_by_answer():
            return
        started = {name: self.model_call(name, f"team.{name}") for name in "ab"}
        for name in op.order:
            self.model += 1
            self.append(
                Step(
                    self.running,
                    name,
                    started[name],
                    text=self.text(f"{name} says {self.model}", op.chars),
                    branch=f"team.{name}",
                )
            )

    def _op_delegate(self, op: ops.Delegate) -> None:
        if self.running is None or self._resumed_by_answer():
            return
        started = self.model_call("helper")
        self.model += 1
        self.append(
            Step(
                self.running,
                "helper",
                started,
                text=self.text(f"helper says {self.model}", op.chars),
            )
        )

    def _op_end(self, op: ops.End) -> None:
        self.running = None

    def _op_tie(self, op: ops.Tie) -> None:
        self._tie = True

    def _op_client_record(self, op: ops.ClientRecord) -> None:
        """A client appends a compaction record straight to the session
        service, standing for the last ``back`` raw events appended (as the
        emulating driver's ``_op_client_record``: author ``user``, an
        invocation id of its own, range = first and last covered event's
        timestamps, summary ``client``), in ADK-JS's own compacted-event
        shape (:func:`client_record_event`). The running invocation, if any,
        goes on."""
        raw = [s for s in self.steps if s.compaction is None]
        if not raw:
            return
        covered = raw[-min(op.back, len(raw)) :]
        step = Step(
            "p-" + self.new_id("invocation"),
            "user",
            self.stamp(),
            compaction=Compaction(covered[0].timestamp, covered[-1].timestamp, "client"),
        )
        event_id = f"e{len(self.steps)}"
        self.steps.append(step)
        self.origin.append(self._op)
        self.actions.append({"do": "append", "event": client_record_event(step, event_id)})

    def _op_skew(self, op: ops.Skew) -> None:
        self._offset -= op.seconds


def timeline(script: ops.Script) -> _Timeline:
    """The driver actions for ``script`` (see :class:`_Timeline`); raises
    :class:`NotApplicable` for an operation ADK-JS cannot represent."""
    built = _Timeline(script)
    for op in script.operations:
        built.apply(op)
    return built
