"""The ADK-JS adapter: the only module of the harness that talks to ADK for
TypeScript (``@google/adk`` on npm, pinned in ``sdks/adk-js/package.json``).

It runs pipeline scripts (:mod:`compaction_harness.scripts`) through the Node
driver ``sdks/adk-js/driver.mjs`` (one long-lived process per Python process,
so one per xdist worker) and checks the pipeline invariants that apply with
the checkers of :mod:`compaction_harness.pipeline`.

What ADK-JS 2.0.0 does with events (read from its ``dist/esm/`` files):

* Compaction runs only before a model call: ``LlmAgent``'s constructor
  (``agents/llm_agent.js``) puts a ``ContextCompactorRequestProcessor``
  (``agents/processors/context_compactor_request_processor.js``) before the
  content processor; the first compactor whose ``shouldCompact`` is true
  compacts, and each event the compaction added to ``session.events`` is
  yielded and appended by the ``Runner``. There is no compaction at an
  invocation's end, and no sliding-window compactor.
* ``getActiveEvents`` (``context/compaction_utils.js``): the *latest stored*
  ``CompactedEvent`` and every raw event whose timestamp is greater than its
  ``endTime``; without one, all events. Both the compactors and the content
  processor (``agents/processors/content_request_processor.js``) read it.
* ``calculateRetainStartIndex`` (same file): keep the last
  ``eventRetentionSize`` raw events; move the boundary back while the first
  kept event has function responses and the event before it has function
  calls. So only a response stored *right after* a call keeps that call:
  a call whose answer comes later (long-running, answered by a client) is
  given to the summariser without its answer. With ``eventRetentionSize`` 0
  the first index is the length of the list, and the loop reads the event
  after the last one (``rawEvents[length]``: undefined).
* ``TokenBasedContextCompactor`` (``context/token_based_context_compactor.js``):
  triggers when the newest ``usageMetadata.promptTokenCount`` among the
  active events (else an estimate of the contents, four characters a token)
  exceeds ``tokenThreshold``; summarises the active compacted event (if any)
  and the raw events before the retain index, and pushes the new
  ``CompactedEvent`` (``LlmSummarizer``: range = first and last input's
  timestamps).
* ``AnchoredContextCompactor`` (``context/anchored_context_compactor.js``):
  the same split, triggered by the sum of ``getEventTokens`` over the active
  events; the summary becomes a scratchpad (``isScratchpad``) and the
  compacted raw events are removed from the invocation's ``session.events``
  (the stored session keeps them: ``BaseSessionService.appendEvent`` only
  appends).
* ``TruncatingContextCompactor``: when there are more than ``threshold +
  preserveLeadingEvents`` events, deletes the oldest events after the
  first ``preserveLeadingEvents``, with no pair protection; deletes by
  design, so it is judged on P0, P1/P2 only.
* ``TrajectoryThoughtPruningCompactor``: removes ``thought`` parts from all
  but the last ``eventRetentionSize`` events. The session model has no
  thought parts: not representable (:class:`NotApplicable`).
* ``AgentControlledContextCompactor``: compacts when the session state holds
  ``temp:consolidate_context``, up to the last ``consolidate_context`` call;
  no script operation makes that call: not representable yet.
* The content processor's ``getContents`` (``agents/processors/
  content_processor_utils.js``) converts a compacted event to a user content
  ``[Previous Context Summary]:\\n<summary>``, relays other agents' events as
  ``[name] said: ...``, drops confirmation/credential events, keeps for each
  call the *last* response event with its id and drops response events whose
  call is not in the events (``rearrangeEventsForAsyncFunctionResponsesInHistory``),
  raises when the last event's responses have no call event
  (``rearrangeEventsForLatestFunctionResponse``: "No function call event found
  for function responses ids"), and removes ``adk-`` ids from what it sends
  (``removeClientFunctionCallId``), so the driver reads ids from the harness's
  tags.

Wire format: the Python side maps each script operation to the events
ADK-JS's ``Runner`` stores for it (as the emulating driver does for ADK
Python) and sends them, with the points of the model calls, as one request;
the summaries and prompts depend on ADK-JS alone, so one request per script
suffices and the Node side needs no knowledge of scripts. Events are ADK-JS
event objects (camel case, timestamps in milliseconds); answers come back
as :class:`~compaction_harness.model.Step` sessions.

Errors: :class:`AdkJsUnavailable` (one line, naming ``make js-env``) when
Node or the package is missing; :class:`NotApplicable` when a script or
configuration cannot be represented on ADK-JS.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import math
import os
import shutil
import subprocess
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .invariants import Violation
from .model import Call, Compaction, Response, Session, Step
from .pipeline import (
    Prompt,
    _visible,
    check_branch_view,
    check_model_prompt,
    check_new_work,
    check_prompt,
    check_range_safety,
)
from .scripts import (
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

__all__ = [
    "COMPACTORS",
    "PACKAGE",
    "AdkJsUnavailable",
    "JsCase",
    "JsCompactor",
    "JsRun",
    "NotApplicable",
    "check_run",
    "compactor_for",
    "driver",
    "package_version",
    "run_script",
    "timeline",
]

PACKAGE = "@google/adk"
#: Where the Node driver lives (``HARNESS_ADK_JS_DIR`` overrides it).
SDK_DIR = Path(
    os.environ.get("HARNESS_ADK_JS_DIR") or Path(__file__).resolve().parents[2] / "sdks" / "adk-js"
)
INSTALL = "make js-env"
#: The compactors the driver knows, by the name a request gives.
COMPACTORS = ("token_based", "anchored", "truncating", "thought_pruning", "agent_controlled")
#: Compactors with a trigger of their own (a token threshold): P6 applies.
TRIGGERED = frozenset({"token_based", "anchored"})
#: Compactors that delete events by design: judged on P0, P1 and P2 only.
DELETING = frozenset({"truncating", "thought_pruning"})

EPOCH = 1_700_000_000.0
STEP = 0.0004
THINK = 7.0
AGENT = "agent"


class NotApplicable(Exception):
    """A script or configuration ADK-JS cannot represent; ``str()`` says why."""


class AdkJsUnavailable(RuntimeError):
    """Node or the installed package is missing; the message is one line."""


@dataclass(frozen=True)
class JsCompactor:
    """A compactor of ADK-JS and its options, as its constructor takes them
    (camel case: ``tokenThreshold``, ``eventRetentionSize``, ``threshold``,
    ``preserveLeadingEvents``)."""

    name: str
    options: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.name not in COMPACTORS:
            raise ValueError(
                f"unknown ADK-JS compactor {self.name!r} (known: {', '.join(COMPACTORS)})"
            )

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "options": dict(self.options)}

    def __hash__(self) -> int:
        return hash((self.name, json.dumps(self.options, sort_keys=True)))

    @classmethod
    def from_json(cls, data: Any, where: str = "compactor") -> JsCompactor:
        """Parse ``{"name": str, "options": {str: int | bool | str}}`` (as
        :meth:`to_json` writes it); raises ``ModelError`` naming ``where``."""
        from .model import ModelError

        if not isinstance(data, dict) or set(data) != {"name", "options"}:
            raise ModelError(f"{where}: expected an object with exactly 'name' and 'options'")
        name, options = data["name"], data["options"]
        if name not in COMPACTORS:
            raise ModelError(
                f"{where}.name: unknown ADK-JS compactor {name!r} (known: {', '.join(COMPACTORS)})"
            )
        if not isinstance(options, dict) or not all(
            isinstance(k, str) and type(v) in (int, bool, str) for k, v in options.items()
        ):
            raise ModelError(f"{where}.options: expected an object of integers, booleans, strings")
        return cls(name, dict(options))


@dataclass(frozen=True)
class JsCase:
    """A pipeline script and the ADK-JS compactor it runs with: what a JS
    property draws, what an ADK-JS fixture records (``call`` = the script,
    ``compactor`` = :meth:`JsCompactor.to_json`) and what its replay runs."""

    script: Script
    compactor: JsCompactor

    @property
    def config(self):  # the script's configuration (a ScriptConfig)
        return self.script.config

    def call_json(self) -> dict[str, Any]:
        """What a fixture records as its ``call``: the script."""
        return self.script.call_json()

    @property
    def window(self) -> tuple[int, ...]:
        return ()

    def render(self) -> str:
        """The compactor, then the script (one operation per line, numbered)."""
        return f"ADK-JS compactor: {self.compactor.to_json()}\n{self.script.render()}"


def compactor_for(script: Script) -> JsCompactor:
    """The ADK-JS compactor that stands for a script's configuration: the
    token-threshold trigger is ``TokenBasedContextCompactor`` with the same
    threshold and retention. Raises :class:`NotApplicable` for a sliding
    window (ADK-JS 2.0.0 has no sliding-window compactor)."""
    config = script.config
    if config.compaction_interval is not None:
        raise NotApplicable(
            "ADK-JS 2.0.0 has no sliding-window compactor (compaction_interval/overlap_size)"
        )
    if config.token_threshold is None:
        raise NotApplicable("the script configures no compaction trigger")
    return JsCompactor(
        "token_based",
        {
            "tokenThreshold": config.token_threshold,
            "eventRetentionSize": config.event_retention_size or 0,
        },
    )


# -- the Node process ----------------------------------------------------------------
def package_version() -> str:
    """The installed ``@google/adk`` version; raises :class:`AdkJsUnavailable`."""
    manifest = SDK_DIR / "node_modules" / "@google" / "adk" / "package.json"
    try:
        return json.loads(manifest.read_text())["version"]
    except (OSError, ValueError, KeyError):
        raise AdkJsUnavailable(
            f"ADK-JS ({PACKAGE}) is not installed in sdks/adk-js: run `{INSTALL}`"
        ) from None


class _Driver:
    """One Node process running ``driver.mjs``: started on first use,
    restarted when it died; one request and one answer per line."""

    def __init__(self) -> None:
        self._process: subprocess.Popen[str] | None = None
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self.starts = 0

    def _start(self) -> subprocess.Popen[str]:
        node = shutil.which("node")
        if node is None:
            raise AdkJsUnavailable(
                f"node is not installed (ADK-JS needs Node 20): then run `{INSTALL}`"
            )
        package_version()
        self.starts += 1
        return subprocess.Popen(
            [node, str(SDK_DIR / "driver.mjs")],
            cwd=SDK_DIR,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            encoding="utf-8",
            bufsize=1,
        )

    def request(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Send one request and return its answer; a process that died (or
        was inherited through a fork) is replaced once and the request sent
        again. Raises :class:`RuntimeError` when the fresh process dies too."""
        line = json.dumps(payload, separators=(",", ":")) + "\n"
        with self._lock:
            if self._pid != os.getpid():  # a forked child: never share the parent's pipes
                self._process, self._pid = None, os.getpid()
            for attempt in (1, 2):
                if self._process is None or self._process.poll() is not None:
                    self._process = self._start()
                process = self._process
                assert process.stdin is not None and process.stdout is not None
                try:
                    process.stdin.write(line)
                    process.stdin.flush()
                    answer = process.stdout.readline()
                except (BrokenPipeError, OSError):
                    answer = ""
                if answer:
                    return json.loads(answer)
                self.close()
                if attempt == 2:
                    raise RuntimeError("the ADK-JS driver died twice on one request")
        raise AssertionError("unreachable")

    def close(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()


_DRIVER = _Driver()
atexit.register(_DRIVER.close)


def driver() -> _Driver:
    """This process's driver (tests use it to kill and restart the process)."""
    return _DRIVER


# -- script -> timeline ----------------------------------------------------------------
#: Ask/Reply: ADK-JS's Runner (tests/test_differential_js.py) stores a
#: credential request as adk-python does (the synthetic adk_request_credential
#: call, then the placeholder response stamped earlier), but a confirmation
#: as the synthetic adk_request_confirmation call alone, carrying
#: requestedToolConfirmations, with no placeholder response (llm_agent.js
#: ends the invocation there). The user's reply and the tool's re-run are
#: not run through the Runner yet, so neither operation is mapped.
_ASK_REPLY = (
    "tool confirmations and credential requests (Ask/Reply): ADK-JS's Runner stores a "
    "confirmation as the synthetic call alone (no placeholder response), and the reply's "
    "shape is not verified against the Runner yet"
)
_NOT_REPRESENTED = {
    Ask: _ASK_REPLY,
    Reply: _ASK_REPLY,
    Rewind: "rewinds: ADK-JS 2.0.0 has no rewind (nothing in dist/ reads one)",
    ClientRecord: "client compaction records: ADK-JS marks compacted events by isCompacted, "
    "which the session model's Compaction does not map to yet",
}


@dataclass
class _Pending:
    call: Call
    invocation: str


class _Timeline:
    """Turns operations into ADK-JS driver actions, as ADK-JS's Runner stores
    events for them (the emulating driver's rules, minus what ADK-JS lacks:
    no compaction at an invocation's end)."""

    def __init__(self, script: Script) -> None:
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
        self.model = 0
        self.users = 0

    def stamp(self) -> float:
        if self._tie:
            self._tie = False
        else:
            self._true += STEP
        resolution = self.config.resolution
        ticks = math.floor((self._true + self._offset) / resolution + 1e-9)
        return round(ticks * resolution, 6)

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
        started = self.stamp()
        self.openers[len(self.actions)] = self.opener if agent == AGENT else None
        self.actions.append(
            {"do": "model_call", "agent": agent, "branch": branch, "now": _ms(started)}
        )
        return started

    def start(self, invocation: str, opener: str | None) -> None:
        self.running = invocation
        self.opener = opener
        self.actions.append({"do": "invocation", "id": invocation})

    def text(self, prefix: str, chars: int) -> str:
        head = f"{prefix} "
        return head + "x" * max(0, chars - len(head))

    def apply(self, op: Operation) -> None:
        reason = _NOT_REPRESENTED.get(type(op))
        if reason is not None:
            raise NotApplicable(f"ADK-JS cannot represent {reason}")
        self._op += 1
        getattr(self, f"_op_{op.op}")(op)

    def _op_open(self, op: Open) -> None:
        self.running = None
        self._true += THINK
        invocation = "e-" + self.new_id("invocation")
        if op.opener == "user":
            self.users += 1
            text = self.text(f"user {self.users}", op.chars)
            self.start(invocation, text)
            self.append(Step(invocation, "user", self.stamp(), text=text))
        else:
            self.start(invocation, None)

    def _op_text(self, op: Text) -> None:
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

    def _op_calls(self, op: Calls) -> None:
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

    def _op_answer(self, op: Answer) -> None:
        every = self.answered if op.again else self.pending
        if not every:
            return
        invocations = list(dict.fromkeys(p.invocation for p in every))
        target = invocations[op.picks[0] % len(invocations)]
        pool = [p for p in every if p.invocation == target]
        chosen: list[_Pending] = []
        for pick in op.picks[1:] or (0,):
            item = pool[pick % len(pool)]
            if item not in chosen:
                chosen.append(item)
        self._true += THINK
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

    def _resumed_by_answer(self) -> bool:
        """Whether the newest event is a client's function response: ADK-JS's
        Runner then resumes the agent that made the call (a resumable app) or
        the last agent that spoke (``determineAgentForResumption``,
        ``runner/runner.js``), and the agent whose turn made the call answers
        first; in these scripts that is the root agent, never a sub-agent; a sub-agent
        step here does nothing (a sub-agent's getContents would be handed
        another agent's answer as its newest event, which no run produces)."""
        return (
            bool(self.steps) and self.steps[-1].author == "user" and bool(self.steps[-1].responses)
        )

    def _op_fan_out(self, op: FanOut) -> None:
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

    def _op_delegate(self, op: Delegate) -> None:
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

    def _op_end(self, op: End) -> None:
        self.running = None

    def _op_tie(self, op: Tie) -> None:
        self._tie = True

    def _op_skew(self, op: Skew) -> None:
        self._offset -= op.seconds


def timeline(script: Script) -> _Timeline:
    """The driver actions for ``script`` (see :class:`_Timeline`); raises
    :class:`NotApplicable` for an operation ADK-JS cannot represent."""
    built = _Timeline(script)
    for op in script.operations:
        built.apply(op)
    return built


# -- model <-> ADK-JS events ---------------------------------------------------------
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
    Raises :class:`NotApplicable` for what ADK-JS events cannot hold here
    (compaction records, rewinds, isolation scopes).
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


def from_js_event(event: dict[str, Any]) -> Step:
    """The model's step for an event the driver sent back (``eventJson``)."""
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
        confirmations=tuple(sorted(event.get("requestedToolConfirmations") or ())),
        auth_requests=tuple(sorted(event.get("requestedAuthConfigs") or ())),
        compaction=compaction,
        branch=event.get("branch"),
        isolation_scope=event.get("isolationScope"),
        prompt_tokens=usage.get("promptTokenCount"),
    )


# -- running and checking ------------------------------------------------------------------
@dataclass
class JsRun:
    """What ADK-JS did with one script.

    Attributes:
        script, compactor: what ran.
        stored: the session as the session service stores it at the end
            (summaries included), as steps; ``ids`` their event ids.
        calls: one dict per model call, as the driver answers (``before``,
            ``after``, ``stored_before``, ``stored_after``: event ids;
            ``summaries``: ``{"input": [ids], "event": id, "number": n}``;
            ``contents``, ``baseline``: prompts as [role, parts]), plus
            ``opener`` (the text that opened the running invocation, or None).
        exception: ``{"name", "message", "action"}`` if ADK-JS raised.
        version: the installed package version.
    """

    script: Script
    compactor: JsCompactor
    stored: Session
    ids: list[str]
    calls: list[dict[str, Any]]
    exception: dict[str, Any] | None
    version: str
    events: dict[str, dict[str, Any]] = field(repr=False, default_factory=dict)
    #: Per stored position, the index of the script operation that appended
    #: the event (None for the summaries ADK-JS stored).
    origin: list[int | None] = field(default_factory=list)

    def prompt(self, call: dict[str, Any], key: str = "contents") -> Prompt:
        """A call's contents in the checkers' form: a response part names the
        stored position of its event (see ``adk.PromptPart``)."""
        position = {event_id: str(k) for k, event_id in enumerate(self.ids)}
        return [
            (
                role,
                tuple(
                    (p[0], p[1], p[2], position.get(p[3], p[3])) if p[0] == "response" else tuple(p)
                    for p in parts
                ),
            )
            for role, parts in call[key]
        ]

    def summaries(self) -> list[tuple[int, list[int], list[int]]]:
        """Per summary, in the order made: (stored length then, stored
        positions of the raw events given, numbers of the summaries given)."""
        position = {event_id: k for k, event_id in enumerate(self.ids)}
        made = {s["event"]: s["number"] for c in self.calls for s in c["summaries"]}
        out = []
        for call in self.calls:
            for s in call["summaries"]:
                given = [position[i] for i in s["input"] if i in position and i not in made]
                seeds = [made[i] for i in s["input"] if i in made]
                out.append((len(call["stored_before"]), given, seeds))
        return out


def run_script(script: Script, compactor: JsCompactor | None = None, *, seed: int = 0) -> JsRun:
    """Run ``script`` on ADK-JS with ``compactor`` (default: :func:`compactor_for`).

    Raises :class:`NotApplicable` (the script cannot be represented),
    :class:`AdkJsUnavailable` (no Node or no package) or :class:`RuntimeError`
    (the driver refused the request: a harness fault)."""
    compactor = compactor or compactor_for(script)
    if compactor.name == "thought_pruning":
        raise NotApplicable("the session model has no thought parts for thought pruning to prune")
    if compactor.name == "agent_controlled":
        raise NotApplicable("no script operation makes the consolidate_context call")
    built = timeline(script)
    answer = driver().request(
        {
            "id": 0,
            "compactor": compactor.to_json(),
            "summary": script.config.summary,
            "seed": seed,
            "base_chars": script.config.system_chars + script.config.tools_chars,
            "actions": built.actions,
        }
    )
    if not answer.get("ok"):
        raise RuntimeError(f"the ADK-JS driver refused the request: {answer.get('error')}")
    events = answer["events"]
    ids = list(answer["stored"])
    calls = answer["calls"]
    for call in calls:
        call["opener"] = built.openers.get(call["action"])
    return JsRun(
        script,
        compactor,
        Session(tuple(from_js_event(events[i]) for i in ids)),
        ids,
        calls,
        answer.get("exception"),
        package_version(),
        events,
        [_origin(built, i) for i in ids],
    )


def _origin(built: _Timeline, event_id: str) -> int | None:
    """The operation that appended the event ``e<n>`` (None: ADK-JS made it)."""
    if (
        event_id.startswith("e")
        and event_id[1:].isdigit()
        and int(event_id[1:]) < len(built.origin)
    ):
        return built.origin[int(event_id[1:])]
    return None


def check_truncation(
    compactor: JsCompactor, before: list[str], after: list[str]
) -> list[Violation]:
    """P4 for the truncating compactor ("only what the configuration says may go
    is gone"): with ``threshold`` T and ``preserveLeadingEvents`` L, a session of
    more than T + L events keeps exactly its first L and its last T events, in
    order; a shorter one keeps everything (``TruncatingContextCompactorOptions``:
    "the maximum number of events to retain", "keep the first X events")."""
    if compactor.name != "truncating":
        return []
    threshold = compactor.options.get("threshold", 0)
    lead = max(0, compactor.options.get("preserveLeadingEvents", 0))
    expected = (
        before
        if len(before) <= threshold + lead
        else before[:lead] + before[len(before) - threshold :]
    )
    if after == expected:
        return []
    gone = [i for i in expected if i not in after]
    return [
        Violation(
            "P4",
            f"the truncating compactor (threshold {threshold}, preserveLeadingEvents {lead}) "
            f"left {len(after)} of {len(before)} events, not the {len(expected)} its "
            "configuration keeps",
            expected=expected,
            observed=after,
            details={"cause": "deleted beyond configuration", "gone": gone},
        )
    ]


def check_run(run: JsRun) -> list[Violation]:
    """The invariants that apply to ``run.compactor``, at every model call:

    * P0: ADK-JS raised (compaction or contents assembly);
    * P1: each summariser input, as a window of the stored session then,
      splits no live pair (:func:`pipeline.check_range_safety`);
    * P5: no summary (read by every agent: ADK-JS's compacted events have no
      branch) was given another branch's events (:func:`pipeline.check_branch_view`);
    * P6 (first clause, for the compactors with a trigger): each summary
      covers at least one event no earlier summary was given
      (:func:`pipeline.check_new_work`);
    * P2 (strict clause with ``strict_provider``) and, for compactors that do
      not delete by design, P4 (:func:`pipeline.check_model_prompt`; the
      baseline is ADK-JS's contents of the stored raw events); for the
      truncating compactor, P4 is :func:`check_truncation` instead.

    A P2 or P4 violation's ``details["model_call"]`` is the index of its
    model call in ``run.calls``.
    """
    found: list[Violation] = []
    summaries = run.summaries()
    number = 0
    strict = run.script.config.strict_provider
    stored = run.stored.steps
    for call in run.calls:
        snapshot = Session(stored[: len(call["stored_before"])])
        for _ in call["summaries"]:
            taken = summaries[number][1]
            number += 1
            found += check_range_safety(snapshot, taken)
            found += check_branch_view(snapshot, taken, None)
            if run.compactor.name in TRIGGERED:
                # P6 (first clause): ADK-JS rolls every summary forward into
                # the next, so every earlier summary's input counts as covered.
                before = {p for _, given, _ in summaries[: number - 1] for p in given}
                found += check_new_work(taken, before, set(range(len(snapshot))), number - 1)
        if "contents" not in call:
            continue  # ADK-JS raised during this call (P0 below)
        steps = Session(stored[: len(call["stored_after"])])
        prompt = run.prompt(call)
        if run.compactor.name in DELETING or call.get("baseline") is None:
            # Without a baseline (ADK-JS's contents of the raw events raised:
            # another event is the newest there) P4 has nothing to compare.
            violations, _ = check_prompt(prompt, call["opener"], strict=strict)
            if run.compactor.name in DELETING:
                violations += check_truncation(run.compactor, call["before"], call["after"])
        else:
            violations, _ = check_model_prompt(
                steps,
                prompt,
                run.prompt(call, "baseline"),
                summaries[:number],
                call["opener"],
                strict=strict,
            )
        for v in violations:
            v.details["model_call"] = run.calls.index(call)
        found += violations
    if run.exception is not None:
        exc = run.exception
        found.append(
            Violation(
                "P0",
                f"@google/adk raised {exc['name']} at action {exc['action']}: {exc['message']}",
                expected="no exception",
                observed=f"{exc['name']}: {exc['message']}",
                details={"cause": "exception", "exception": exc["name"]},
            )
        )
    return found


# -- known ADK-JS faults ---------------------------------------------------------------
#: Known upstream faults of ADK-JS 2.0.0, by id: (compactors, explanation:
#: what the source does and what a user sees).
KNOWN_FAULTS: dict[str, tuple[frozenset[str], str]] = {
    "js-retention-zero": (
        frozenset({"token_based", "anchored"}),
        "calculateRetainStartIndex (context/compaction_utils.js) starts at "
        "rawEvents.length - eventRetentionSize; with eventRetentionSize 0 that is the "
        "length of the list, and the loop reads rawEvents[length] (undefined): every "
        "model call over the threshold raises TypeError before the model is called.",
    ),
    "js-late-answer": (
        frozenset({"token_based", "anchored", "truncating"}),
        "calculateRetainStartIndex keeps a call with its answer only when the answer is "
        "the event right after the call; the truncating compactor keeps no pair at all. "
        "A call answered later (long-running, answered by a client, an interim result "
        "then text) is summarised or deleted without its answer: when the answer is the "
        "newest event, getContents raises 'No function call event found for function "
        "responses ids' (rearrangeEventsForLatestFunctionResponse) and the run fails; "
        "otherwise the answer is silently dropped from every later prompt "
        "(rearrangeEventsForAsyncFunctionResponsesInHistory keeps only responses whose "
        "call is present).",
    ),
    "js-time-range": (
        frozenset({"token_based", "anchored"}),
        "getActiveEvents (context/compaction_utils.js; AnchoredContextCompactor."
        "getActiveEvents) keeps the raw events whose timestamp is greater than the latest "
        "summary's endTime, not the events the summary was not given: an event stamped "
        "in the same clock tick as (or before) the last summarised event, but retained, "
        "vanishes from every later prompt without being summarised, and since "
        "LlmSummarizer's endTime is the last input's timestamp, not the greatest, an "
        "event summarised out of time order comes back and is summarised again (P6) "
        "(and the anchored "
        "compactor's rebuild of session.events then drops it for good); a hidden event "
        "can also make an older function response the newest active event, and "
        "rearrangeEventsForLatestFunctionResponse then drops the events between that "
        "response and its call; and a call whose answer it hides is summarised without "
        "it (calculateRetainStartIndex keeps a call only with the next active event).",
    ),
    "js-opener-summarised": (
        frozenset({"token_based", "anchored"}),
        "calculateRetainStartIndex counts events, not invocations: with a small "
        "eventRetentionSize the user message that opened the running invocation is "
        "summarised before the model answers it, and the model sees only the summary.",
    ),
    "js-multi-turn-answer": (
        frozenset(COMPACTORS),
        "getContents (rearrangeEventsForLatestFunctionResponse, agents/processors/"
        "content_processor_utils.js) requires the newest event's responses to answer "
        "calls of one call event and raises 'Last response event should only contain the "
        "responses for the function calls in the same function call event' otherwise: a "
        "client message answering calls the model made in several turns fails the run, "
        "with or without compaction (not a compaction fault; whether ADK-JS's Runner "
        "accepts such a message is not verified yet).",
    ),
    "js-unanswered-call": (
        frozenset(COMPACTORS),
        "getContents keeps a function call that no event answers (its tool's process "
        "died) or answers only in part (a client answered some of parallel calls), where "
        "ADK Python prunes such calls (drop_orphaned_function_calls): a strict provider "
        "(Anthropic, OpenAI) rejects the request. Not a compaction fault: the contents "
        "of the same events without compaction break P2 the same way.",
    ),
    "js-truncate-opener": (
        frozenset({"truncating"}),
        "TruncatingContextCompactor.compact counts events, not invocations: with a small "
        "threshold it deletes the user message that opened the running invocation, and "
        "the model is asked to answer a request it never sees. Deletion is the "
        "compactor's documented design, but no configuration value keeps the running "
        "turn's message (preserveLeadingEvents keeps only the session's first events).",
    ),
    "js-anchored-duplicates": (
        frozenset({"anchored"}),
        "AnchoredContextCompactor.compact rebuilds session.events as the events stored "
        "before the old scratchpad, the new scratchpad and the retained events. Each run "
        "fetches the stored session, where the scratchpad stands after the raw events it "
        "replaced (BaseSessionService.appendEvent appends), so after a new invocation the "
        "summarised events stay and the retained ones appear twice: the model is sent a "
        "call, or its answer, twice.",
    ),
    "js-branch": (
        frozenset({"token_based", "anchored"}),
        "the compactors read session.events without the branch filter of getContents, "
        "and LlmSummarizer's compacted event has no branch: a sub-agent's compaction "
        "summarises its siblings' branch events into a summary every agent reads.",
    ),
}


def known_fault(run: JsRun, violation: Violation) -> str | None:
    """The id of the known ADK-JS fault (:data:`KNOWN_FAULTS`) that explains
    ``violation`` of ``run``, or None (a new finding). Each recogniser tests the
    mechanism the fault's explanation names, not just the invariant."""
    name = run.compactor.name
    cause = violation.details.get("cause")
    faults = [f for f, (compactors, _) in KNOWN_FAULTS.items() if name in compactors]
    if violation.invariant == "P0":
        message = str(violation.observed)
        if (
            "js-retention-zero" in faults
            and run.compactor.options.get("eventRetentionSize") == 0
            and "reading 'content'" in message
        ):
            return "js-retention-zero"
        if "Last response event should only contain" in message and _answers_several_turns(run):
            return "js-multi-turn-answer"
        if "No function call event found" in message:
            lost = _why_answer_lost_its_call(run)
            return lost if lost in faults else None
        return None
    if violation.invariant == "P1":
        if "js-late-answer" in faults and _split_not_adjacent(run, violation):
            return "js-late-answer"
        if "js-time-range" in faults and (
            _answer_hidden_by_time(run, violation) or _pair_split_by_reactivation(run, violation)
        ):
            return "js-time-range"
        return None
    if violation.invariant == "P6" and "js-time-range" in faults and _reactivated(run, violation):
        return "js-time-range"
    if violation.invariant == "P5" and cause == "branch" and "js-branch" in faults:
        return "js-branch"
    if name == "truncating" and cause == "opener missing" and _opener_deleted(run, violation):
        return "js-truncate-opener"
    if (
        name == "anchored"
        and cause == "answered twice"
        and _duplicated(run, violation)
        and "js-anchored-duplicates" in faults
    ):
        return "js-anchored-duplicates"
    if violation.invariant == "P2" and cause != "opener missing":
        if _in_baseline(run, violation) or set(violation.ids) <= _never_answered(run, violation):
            return "js-unanswered-call"
        mixed = _p2_mixed(run, violation)
        if mixed in faults:
            return mixed
    if violation.invariant in ("P2", "P4"):
        if _hidden_by_time(run, violation) and "js-time-range" in faults:
            return "js-time-range"
        if cause == "opener missing" and violation.details.get("opener_summarised"):
            return "js-opener-summarised" if "js-opener-summarised" in faults else None
        if _pair_broken(run, violation) and "js-late-answer" in faults:
            return "js-late-answer"
    return None


def _hidden_by_time(run: JsRun, violation: Violation) -> bool:
    """Whether the loss P2/P4 names is gone in the call's counterfactual
    ``by_identity`` prompt (the latest summary hiding exactly the events
    summaries were given, not every event stamped up to its ``endTime``):
    the time filter of getActiveEvents caused it, directly or by changing
    which event is the newest (``rearrangeEventsForLatestFunctionResponse``
    then drops the events between the newest response and its call)."""
    k = violation.details.get("model_call")
    if k is None or not _time_hid_something(run, k):
        return False
    cause = violation.details.get("cause")
    if violation.invariant == "P2" and cause != "opener missing":
        # A call left unanswered or answered wrongly: the counterfactual
        # prompt must not break P2 the same way for any of these ids.
        identity = run.calls[k].get("by_identity")
        if identity is None:
            return False
        strict = run.script.config.strict_provider
        found, _ = check_prompt(run.prompt(run.calls[k], "by_identity"), None, strict=strict)
        return not any(
            v.details.get("cause") == cause and set(v.ids) & set(violation.ids) for v in found
        )
    if _stamped_no_later_than_end(run, violation, k):
        return True
    if _answers_a_hidden_call(run, violation, k):
        return True
    if run.calls[k].get("by_identity") is None:
        return False
    counterfactual = run.prompt(run.calls[k], "by_identity")
    parts = {p for _, ps in counterfactual for p in ps}
    steps = run.stored.steps
    if violation.details.get("cause") == "opener missing":
        opener = run.calls[k]["opener"]
        return any(role == "user" and ("text", opener) in ps for role, ps in counterfactual)
    return bool(violation.positions) and all(
        _visible(steps[p], p, parts) for p in violation.positions
    )


def _stamped_no_later_than_end(run: JsRun, violation: Violation, k: int) -> bool:
    """Whether every event P4 names (P2: the opener) was given to no summary and
    is stamped no later than the latest summary's ``endTime`` at model call
    ``k``: hidden by the time filter itself. (The anchored compactor then
    also drops it from the invocation's events for good: it rebuilds them as
    the events before the old scratchpad, the new one and the retained
    events, so the counterfactual cannot show it any more.)"""
    hidden = _time_hidden(run, k)
    steps = run.stored.steps
    if violation.details.get("cause") == "opener missing":
        opener = run.calls[k]["opener"]
        known = range(len(run.calls[k]["stored_after"]))
        positions = [p for p in known if steps[p].author == "user" and steps[p].text == opener]
    else:
        positions = list(violation.positions)
    return bool(positions) and all(p in hidden for p in positions)


def _latest_end(steps: Sequence[Step], length: int) -> float | None:
    """The ``endTime`` of the latest summary among the first ``length`` stored
    events (what getActiveEvents filters by then), or None without one."""
    compacted = [steps[p] for p in range(length) if steps[p].compaction]
    return compacted[-1].compaction.end if compacted else None


def _time_hidden(run: JsRun, k: int) -> set[int]:
    """The stored events known at model call ``k`` that no summary was given
    and that are stamped no later than the ``endTime`` of the latest summary
    among them (``getActiveEvents``' time filter hides them); empty without
    a summary."""
    steps = run.stored.steps
    known = range(len(run.calls[k]["stored_after"]))
    end = _latest_end(steps, len(known))
    if end is None:
        return set()
    given = {p for _, taken, _ in run.summaries() for p in taken}
    return {p for p in known if p not in given and steps[p].timestamp <= end}


def _hidden_at(run: JsRun, call: dict[str, Any], p: int) -> bool:
    """Whether stored event ``p`` is among ``call``'s ``before`` events, given to
    no summary, and stamped no later than the ``endTime`` of the latest summary
    among them: ``getActiveEvents`` hides it at that model call."""
    steps = run.stored.steps
    where = {event_id: k for k, event_id in enumerate(run.ids)}
    shown = [where[i] for i in dict.fromkeys(call["before"]) if i in where]
    compacted = [q for q in shown if steps[q].compaction is not None]
    given = {q for _, taken, _ in run.summaries() for q in taken}
    return (
        p in shown
        and p not in given
        and bool(compacted)
        and steps[p].timestamp <= steps[compacted[-1]].compaction.end
    )


def _answers_a_hidden_call(run: JsRun, violation: Violation, k: int) -> bool:
    """Whether every event P4 names is a response event whose calls the time
    filter took from model call ``k``'s active events: each call event was
    hidden at some model call up to ``k`` (:func:`_hidden_at`) and is not
    active at ``k`` (hidden there, or gone from ``after``: the anchored
    rebuild dropped it). ``rearrangeEventsForAsyncFunctionResponsesInHistory``
    emits a response event only after its call's event, so the answer goes
    too (found by the first `make fuzz SDK=js` after ADK-JS fixtures)."""
    steps = run.stored.steps
    call = run.calls[k]
    after = set(call.get("after", ()))
    if not violation.positions:
        return False
    for p in violation.positions:
        answered = steps[p].response_ids
        makers = [q for q in range(p) if steps[q].call_ids & answered]
        if not answered or not makers:
            return False
        for q in makers:
            active = run.ids[q] in after and not _hidden_at(run, call, q)
            if active or not any(_hidden_at(run, c, q) for c in run.calls[: k + 1]):
                return False
    return True


def _duplicated(run: JsRun, violation: Violation) -> bool:
    """Whether the events the content processor read at that model call held
    an event twice that makes or answers one of the ids P2 names."""
    k = violation.details.get("model_call")
    if k is None:
        return False
    after = run.calls[k].get("after", [])
    twice = {i for i in after if after.count(i) > 1}
    ids = set(violation.ids)
    # getContents attaches a response event after every call event it answers:
    # a duplicated call brings along every answer merged into that event.
    for i in after:
        answered = from_js_event(run.events[i]).response_ids
        if answered & ids:
            ids |= answered
    return any(
        (from_js_event(run.events[i]).call_ids | from_js_event(run.events[i]).response_ids) & ids
        for i in twice
    )


def _never_answered(run: JsRun, violation: Violation) -> set[str]:
    """The ids P2 names that no event stored by that model call answers: calls
    whose tool died, or that a client's partial answer left out. Compaction
    neither makes nor removes answers; that getContents sends such calls is
    the prompt fault (``js-unanswered-call``)."""
    k = violation.details.get("model_call")
    if k is None:
        return set()
    steps = run.stored.steps[: len(run.calls[k]["stored_after"])]
    answered = {i for s in steps for i in s.response_ids}
    return set(violation.ids) - answered


def _p2_mixed(run: JsRun, violation: Violation) -> str | None:
    """A P2 violation may name ids of different causes (the strict clause
    names every unanswered call of a prompt; a partial answer every call
    left out): ``js-time-range`` when each id is named by a violation of the
    same cause in the baseline too (the prompt fault, compaction aside) or by
    none in the counterfactual prompt (the time filter hid its answer), and
    the time filter hid something at that call."""
    k = violation.details.get("model_call")
    if k is None or not _time_hid_something(run, k):
        return None
    call = run.calls[k]
    if call.get("baseline") is None or call.get("by_identity") is None:
        return None

    cause = violation.details.get("cause")
    strict = run.script.config.strict_provider

    def unanswered(key: str) -> set[str]:
        found, _ = check_prompt(run.prompt(call, key), None, strict=strict)
        return {i for v in found if v.details.get("cause") == cause for i in v.ids}

    # Directly: an answer stored, given to no summary, stamped no later than
    # the latest summary's endTime (the anchored rebuild may have dropped it,
    # so the counterfactual cannot show it).
    steps = run.stored.steps
    known = range(len(call["stored_after"]))
    end = [steps[p] for p in known if steps[p].compaction][-1].compaction.end
    given = {p for _, taken, _ in run.summaries() for p in taken}
    hidden = {
        i
        for p in known
        if p not in given and steps[p].compaction is None and steps[p].timestamp <= end
        for i in steps[p].response_ids
    }
    explained = (
        unanswered("baseline")
        | (set(violation.ids) - unanswered("by_identity"))
        | hidden
        | _never_answered(run, violation)
    )
    return "js-time-range" if set(violation.ids) <= explained else None


def _reactivated(run: JsRun, violation: Violation) -> bool:
    """Whether the events a P6 summary took again were all given to an earlier
    summary but stamped later than the ``endTime`` of the latest summary then
    stored: LlmSummarizer's endTime is the *last* input's timestamp, not the
    greatest, so with events out of time order getActiveEvents brings
    summarised events back, and the next summary takes them again."""
    steps = run.stored.steps
    summaries = run.summaries()
    number = next(
        (n for n, (_, given, _) in enumerate(summaries) if tuple(given) == violation.positions),
        None,
    )
    if number is None or number == 0:
        return False
    end = _latest_end(steps, summaries[number][0])
    if end is None:
        return False
    before = {p for _, given, _ in summaries[:number] for p in given}
    return all(p in before and steps[p].timestamp > end for p in violation.positions)


def _pair_split_by_reactivation(run: JsRun, violation: Violation) -> bool:
    """Whether the call P1 names was given, with its answer, to an earlier
    summary, and a later summary took the call again without that answer
    because the call is stamped later than the ``endTime`` of the latest
    summary then stored (active again) and the answer no later than it
    (hidden). LlmSummarizer's endTime is the *last* input's timestamp, not
    the greatest: with an answer stamped before its call (a lagging host) the
    range comes out inverted, and getActiveEvents brings back half the pair."""
    (position,) = violation.positions or (None,)
    if position is None:
        return False
    ids = set(violation.ids)
    steps = run.stored.steps
    summaries = run.summaries()
    for number, (length, given, _) in enumerate(summaries):
        earlier = [g for _, g, _ in summaries[:number] if position in g]
        if position not in given or not earlier:
            continue
        end = _latest_end(steps, length)
        if end is None:
            continue
        # Answers come after their call (with ids reused per turn, an earlier
        # response with the same id answers an earlier call).
        answers = [p for p in earlier[-1] if p > position and steps[p].response_ids & ids]
        if (
            answers
            and steps[position].timestamp > end
            and all(p not in given and steps[p].timestamp <= end for p in answers)
        ):
            return True
    return False


def _time_hid_something(run: JsRun, k: int) -> bool:
    """Whether at model call ``k`` the latest summary's time range hid a raw
    event that no summary was given (stamped no later than its ``endTime``)."""
    steps = run.stored.steps
    return any(steps[p].compaction is None for p in _time_hidden(run, k))


def _opener_deleted(run: JsRun, violation: Violation) -> bool:
    """Whether the truncating compactor deleted the missing opener from the
    invocation's events at that model call (it is stored, but not in ``after``)."""
    k = violation.details.get("model_call")
    if k is None:
        return False
    call = run.calls[k]
    after = set(call.get("after", ()))
    return any(
        run.ids[p] not in after
        for p, s in enumerate(run.stored.steps)
        if s.author == "user" and s.text == call["opener"]
    )


def _in_baseline(run: JsRun, violation: Violation) -> bool:
    """Whether ADK-JS's contents of the same events without compaction (the
    call's baseline) break P2 the same way: a prompt-assembly fault that
    compaction did not cause."""
    k = violation.details.get("model_call")
    if k is None or run.calls[k].get("baseline") is None:
        return False
    strict = run.script.config.strict_provider
    found, _ = check_prompt(run.prompt(run.calls[k], "baseline"), None, strict=strict)
    cause = violation.details.get("cause")

    # The strict clause names every unanswered call of a prompt in one
    # violation: each of them must be unanswered without compaction too.
    def same(v: Violation) -> bool:
        if cause == "strict provider":
            return set(violation.ids) <= set(v.ids)
        return set(v.ids) == set(violation.ids)

    return any(v.details.get("cause") == cause and same(v) for v in found)


def _answers_several_turns(run: JsRun) -> bool:
    """Whether the responses ADK-JS names in its message ("function response
    ids provided: <ids>") answer calls of more than one stored call event (a
    client's message answering several turns). Read from the message, since
    the time filter may make another event than the newest stored one the
    newest active event."""
    if run.exception is None:
        return False
    ids = {
        i.strip()
        for i in run.exception["message"].rsplit("provided:", 1)[-1].split(",")
        if i.strip()
    }
    makers = {k for k, s in enumerate(run.stored.steps) if s.call_ids & ids}
    return len(makers) > 1


def _split_not_adjacent(run: JsRun, violation: Violation) -> bool:
    """Whether the call P1 names is not answered by the stored event right after it."""
    (position,) = violation.positions or (None,)
    if position is None:
        return False
    steps = run.stored.steps
    after = next((s for s in steps[position + 1 :] if s.compaction is None), None)
    return after is None or not set(violation.ids) <= after.response_ids


def _answer_hidden_by_time(run: JsRun, violation: Violation) -> bool:
    """Whether the call P1 names was summarised at a model call where its
    answer, though stored after it (right after it, often), was not among the
    events ADK-JS saw as active: ``calculateRetainStartIndex`` keeps a call
    only with the *next active* event, so it cannot keep the pair. Each
    answer stored by then and not given to that summary must be

    * in that call's ``before`` events, stamped no later than the ``endTime``
      of the latest summary among them (``getActiveEvents`` hides it), or
    * absent from them (the anchored compactor's rebuild dropped it) after an
      earlier model call whose time filter hid it the same way.

    A lagging host's answer, or one a summary ending at an earlier-stamped
    last input covers, does this: the time filter's doing
    (``js-time-range``), not a late answer."""
    (position,) = violation.positions or (None,)
    if position is None:
        return False
    ids = set(violation.ids)
    steps = run.stored.steps
    where = {event_id: k for k, event_id in enumerate(run.ids)}

    def seen(call: dict[str, Any]) -> list[int]:
        return [where[i] for i in dict.fromkeys(call["before"]) if i in where]

    def hidden(call: dict[str, Any], p: int) -> bool:
        shown = seen(call)
        compacted = [q for q in shown if steps[q].compaction is not None]
        return (
            p in shown
            and bool(compacted)
            and steps[p].timestamp <= steps[compacted[-1]].compaction.end
        )

    for k, call in enumerate(run.calls):
        for summary in call["summaries"]:
            given = {where[i] for i in summary["input"] if i in where}
            if position not in given:
                continue
            answers = [
                p
                for p in range(position + 1, len(call["stored_before"]))
                if p not in given and steps[p].compaction is None and steps[p].response_ids & ids
            ]
            shown = seen(call)
            if answers and all(
                hidden(call, p)
                if p in shown
                else run.compactor.name == "anchored"
                and any(hidden(earlier, p) for earlier in run.calls[:k])
                for p in answers
            ):
                return True
    return False


def _why_answer_lost_its_call(run: JsRun) -> str | None:
    """At the model call that raised "No function call event found for function
    responses ids: <ids>", why those responses have no call event among the
    active events: ``js-late-answer`` when a summary took the call (the answer
    came later) or truncation deleted it, ``js-time-range`` when the call is
    stored, never summarised, but stamped no later than the latest summary's
    ``endTime`` (so getActiveEvents hides it)."""
    if not run.calls or run.exception is None:
        return None
    message = run.exception["message"]
    ids = [i.strip() for i in message.rsplit("ids:", 1)[-1].split(",") if i.strip()]
    call = run.calls[-1]
    events = run.events
    summarised = {
        c.id
        for earlier in run.calls
        for s in earlier["summaries"]
        for i in s["input"]
        if i in events
        for c in from_js_event(events[i]).calls
    }
    after = call.get("after", call["before"])
    given = {i for earlier in run.calls for s in earlier["summaries"] for i in s["input"]}
    present = {c.id for i in after for c in from_js_event(events[i]).calls}
    compacted = [from_js_event(events[i]) for i in after if events[i].get("isCompacted")]
    end = compacted[-1].compaction.end if compacted else None
    for response_id in ids:
        if response_id in summarised:
            return "js-late-answer"
        if run.compactor.name == "truncating" and response_id not in present:
            return "js-late-answer"
        # The call event may be gone from ``after``: the anchored compactor's
        # rebuild drops the events the time filter hid.
        makers = [
            from_js_event(events[i])
            for i in dict.fromkeys([*call["before"], *after])
            if response_id in from_js_event(events[i]).call_ids and i not in given
        ]
        if end is not None and makers and all(m.timestamp <= end for m in makers):
            return "js-time-range"
    if end is not None:
        # The time filter hid what was stored after the answer (never
        # summarised, stamped no later than the endTime), so the answer is the
        # newest active event, and getContents looks for its call among the
        # reading agent's own events: a sub-agent sees the calling agent's call
        # only as context text, and raises.
        answering = [
            n for n, i in enumerate(after) if set(ids) & from_js_event(events[i]).response_ids
        ]
        later = after[answering[-1] + 1 :] if answering else []
        raw = {i: from_js_event(events[i]) for i in later}
        raw = {i: step for i, step in raw.items() if not step.compaction}
        if raw and all(
            i not in given and not events[i].get("isCompacted") and step.timestamp <= end
            for i, step in raw.items()
        ):
            return "js-time-range"
    return None


def _pair_broken(run: JsRun, violation: Violation) -> bool:
    """Whether the content P2/P4 names lost a response (or its call) because a
    summary took, or truncation deleted, the other side of the pair."""
    steps = run.stored.steps
    summarised = {p for _, given, _ in run.summaries() for p in given}
    ids = set(violation.ids)
    for position in violation.positions:
        ids |= steps[position].response_ids | steps[position].call_ids
    holders = [k for k, step in enumerate(steps) if (step.call_ids | step.response_ids) & ids]
    if any(k in summarised for k in holders):
        return True
    call = run.calls[violation.details.get("model_call", -1)] if run.calls else {}
    after = set(call.get("after", run.ids))
    deleted = [
        k for k in holders if k < len(call.get("stored_after", ())) and run.ids[k] not in after
    ]
    return run.compactor.name == "truncating" and bool(deleted)


def observed(run: JsRun) -> dict[str, Any]:
    """What a fixture records of ``run`` (the keys ``show`` reads for a script
    fixture): ``session`` (the stored events, summaries included, as a
    :class:`Session` document), ``origin`` (per stored event, the operation
    that appended it, or None for a summary), ``summaries`` (per summary, the
    stored positions of the raw events it was given), ``prompt`` (the last
    model call's contents: [role, [part tuples]]), ``exception`` (what
    ADK-JS raised, or None) and ``package_version``."""
    last = next((c for c in reversed(run.calls) if "contents" in c), None)
    return {
        "session": run.stored.to_json(),
        "origin": list(run.origin),
        "summaries": [given for _, given, _ in run.summaries()],
        "prompt": [[role, [list(p) for p in parts]] for role, parts in run.prompt(last)]
        if last is not None
        else [],
        "exception": run.exception,
        "package_version": run.version,
    }


def check_case(case: JsCase, *, seed: int = 0) -> Any:
    """Run ``case`` on ADK-JS and triage what it shows: a
    :class:`~compaction_harness.unit.UnitOutcome` whose ``violations`` are the
    new ones (no known fault explains them), ``known`` the (violation, fault
    id) pairs, ``observed`` as :func:`observed` and ``triaged`` True. Raises
    :class:`NotApplicable`, :class:`AdkJsUnavailable` or :class:`RuntimeError`
    as :func:`run_script` does."""
    from .unit import UnitOutcome

    run = run_script(case.script, case.compactor, seed=seed)
    new: list[Violation] = []
    known: list[tuple[Violation, str]] = []
    for violation in check_run(run):
        fault = known_fault(run, violation)
        if fault is None:
            new.append(violation)
        else:
            known.append((violation, fault))
    return UnitOutcome(new, {}, observed(run), [], known, True)


def new_violations(run: JsRun, found: list[Violation] | None = None) -> list[Violation]:
    """The violations of ``run`` that no known ADK-JS fault explains."""
    found = check_run(run) if found is None else found
    return [v for v in found if known_fault(run, v) is None]


__all__ += [
    "KNOWN_FAULTS",
    "check_case",
    "check_truncation",
    "known_fault",
    "new_violations",
    "observed",
]
