"""The ADK-JS adapter: the only module of the harness that talks to ADK for
TypeScript (``@google/adk`` on npm, pinned in ``sdks/adk-js/package.json``).

It runs pipeline scripts (:mod:`compaction_harness.spec.scripts`) through the Node
driver ``sdks/adk-js/driver.mjs`` (one long-lived process per Python process,
so one per xdist worker) and checks the pipeline invariants that apply with
the checkers of :mod:`compaction_harness.sdk.python.pipeline`.

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
  A compacted event is any event with ``isCompacted === true``
  (``isCompactedEvent``, ``events/compacted_event.js``), so a client's
  compaction record in that shape (:func:`client_record_event`) is read
  like ADK-JS's own.
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
as :class:`~compaction_harness.spec.model.Step` sessions.

Errors: :class:`AdkJsUnavailable` (one line, naming ``make js-env``) when
Node or the package is missing; :class:`NotApplicable` when a script or
configuration cannot be represented on ADK-JS.
"""

from __future__ import annotations

import atexit
import dataclasses
import hashlib
import itertools
import json
import math
import os
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from ...spec.invariants import Violation
from ...spec.model import (
    REQUEST_CONFIRMATION_CALL,
    REQUEST_CREDENTIAL_CALL,
    Call,
    Compaction,
    Response,
    Session,
    ShownText,
    Step,
)
from ...spec.pipeline_checks import (
    Prompt,
    check_branch_view,
    check_new_work,
    check_range_safety,
    covered_by_records,
    once_per_branch,
)
from ...spec.prompt_checks import check_model_prompt, check_prompt
from ...spec.reference import (
    SYNTHETIC_HITL_CALL_NAMES,
    branch_sees,
    compactable_around_waiting_calls,
    preceding_call,
)
from ...spec.reference import live_events as reference_live_events
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
    "representable",
    "run_script",
    "script_seed",
    "timeline",
]

PACKAGE = "@google/adk"
#: Where the Node driver lives (``HARNESS_ADK_JS_DIR`` overrides it).
SDK_DIR = Path(
    os.environ.get("HARNESS_ADK_JS_DIR") or Path(__file__).resolve().parents[4] / "sdks" / "adk-js"
)
INSTALL = "make js-env"
#: The compactors the driver knows, by the name a request gives.
COMPACTORS = ("token_based", "anchored", "truncating", "thought_pruning", "agent_controlled")
#: Compactors with a trigger of their own (a token threshold): P6 applies.
#: The constructor options each compactor reads (dist/esm/context/
#: *_compactor.js, `options.<name>`; the summariser is the driver's own), all
#: non-negative integers: what a fixture's ``compactor.options`` may hold.
OPTIONS: dict[str, tuple[str, ...]] = {
    "token_based": ("tokenThreshold", "eventRetentionSize"),
    "anchored": ("tokenThreshold", "eventRetentionSize"),
    "truncating": ("threshold", "preserveLeadingEvents"),
    "thought_pruning": ("eventRetentionSize",),
    "agent_controlled": (),
}

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
        from ...spec.model import ModelError

        if not isinstance(data, dict) or set(data) != {"name", "options"}:
            raise ModelError(f"{where}: expected an object with exactly 'name' and 'options'")
        name, options = data["name"], data["options"]
        if name not in COMPACTORS:
            raise ModelError(
                f"{where}.name: unknown ADK-JS compactor {name!r} (known: {', '.join(COMPACTORS)})"
            )
        if not isinstance(options, dict):
            raise ModelError(f"{where}.options: expected an object")
        for key, value in options.items():
            if key not in OPTIONS[name]:
                raise ModelError(
                    f"{where}.options.{key}: not an option of the {name} compactor "
                    f"(known: {', '.join(OPTIONS[name]) or 'none'})"
                )
            if type(value) is not int or value < 0:
                raise ModelError(
                    f"{where}.options.{key}: expected a non-negative integer, got {value!r}"
                )
        return cls(name, dict(options))


@dataclass(frozen=True)
class JsCase:
    """A pipeline script and the ADK-JS compactor it runs with: what a JS
    property draws, what an ADK-JS fixture records (``call`` = the script,
    ``compactor`` = :meth:`JsCompactor.to_json`) and what its replay runs."""

    script: Script
    compactor: JsCompactor
    #: Who gave a violation's observed answer (``Violation.render``).
    observer: ClassVar[str] = "ADK-JS"

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


STAND_IN_THRESHOLD = 0
"""The stand-in's ``tokenThreshold``: ``TokenBasedContextCompactor.shouldCompact``
(``dist/esm/context/token_based_context_compactor.js``) fires when the latest
prompt token count is above it, so 0 fires at every model call that has a
count: at least as often as any sliding-window trigger, which fires at most
once per invocation."""


def stand_in_for(script: Script) -> JsCompactor:
    """The clearly labelled stand-in for a sliding-window script (ADK-JS
    2.0.0 has no sliding-window compactor): ``TokenBasedContextCompactor``
    with ``tokenThreshold`` :data:`STAND_IN_THRESHOLD` and
    ``eventRetentionSize`` = ``max(1, overlap_size)``. The Python overlap
    counts invocations, the JS retention counts events, so the stand-in keeps
    at most as much as Python kept and compacts at least as often: it throws
    the session that broke Python at ADK-JS's nearest compactor; it is not
    the same trigger. Retention 0 is raised to 1 because 0 only meets the
    known fault ``js-retention-zero`` at every model call. Raises
    :class:`NotApplicable` when the script has no sliding window."""
    config = script.config
    if config.compaction_interval is None:
        raise NotApplicable("the script configures no sliding window")
    return JsCompactor(
        "token_based",
        {
            "tokenThreshold": STAND_IN_THRESHOLD,
            "eventRetentionSize": max(1, config.overlap_size or 0),
        },
    )


def stand_in_label(compactor: JsCompactor) -> str:
    """``stand-in: token_based threshold=<t>, retention=<r>`` for a verdict."""
    o = compactor.options
    return (
        f"stand-in: {compactor.name} threshold={o['tokenThreshold']}, "
        f"retention={o['eventRetentionSize']}"
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


def node_path() -> str:
    """Where ``node`` is, once Node and the package are both there; raises
    :class:`AdkJsUnavailable` (one line) otherwise."""
    node = shutil.which("node")
    if node is None:
        raise AdkJsUnavailable(
            f"node is not installed (ADK-JS needs Node 20): then run `{INSTALL}`"
        )
    package_version()
    return node


class _Node:
    """The one Node process running ``driver.mjs``: started on first use,
    restarted when it died; one request and one answer per line. It serves
    every set of ADK-JS fixes: each request names the patched copy of the
    package it runs on (``"entry"``), and the process loads each copy once
    (a copy costs its own modules, about 0.15 s; the package's dependencies,
    about 1 s, load once), so a classification that re-runs a case under
    about 15 sets of fixes starts no further process."""

    def __init__(self) -> None:
        self._process: subprocess.Popen[str] | None = None
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self.starts = 0

    def _start(self) -> subprocess.Popen[str]:
        node = node_path()
        env = dict(os.environ)
        env.pop("HARNESS_ADK_JS_ENTRY", None)
        self.starts += 1
        return subprocess.Popen(
            [node, str(SDK_DIR / "driver.mjs")],
            cwd=SDK_DIR,
            env=env,
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


#: This Python process's Node process (tests replace it to start afresh).
_NODE = _Node()


class _Driver:
    """ADK-JS with one set of fixes: the shared Node process (:data:`_NODE`),
    each request sent with the entry module of the package copy that has
    those fixes (``js_fixes.py``, made once per set; none for the
    package as installed)."""

    def __init__(self, fixes: tuple[str, ...] = ()) -> None:
        #: The ADK-JS fixes this driver runs with (js_fixes.py).
        self.fixes = fixes
        #: The entry module of its package copy, made on the first request
        #: (as a process of its own was started once before).
        self._entry: Path | None = None

    @property
    def _process(self) -> subprocess.Popen[str] | None:
        return _NODE._process

    @property
    def starts(self) -> int:
        return _NODE.starts

    def request(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Send one request (driver.mjs's) on this driver's copy of the
        package and return its answer; raises as :meth:`_Node.request`,
        :class:`AdkJsUnavailable` when Node or the package is missing (the
        process's start checks), and ``JsFixError`` for a fix that does not
        apply."""
        from .js_fixes import patched_package

        if self.fixes and self._entry is None:
            self._entry = patched_package(self.fixes)
        entry = self._entry
        return _NODE.request({**payload, "entry": None if entry is None else str(entry)})

    def close(self) -> None:
        """Stop the shared Node process (the next request starts another)."""
        _NODE.close()


#: One driver per set of ADK-JS fixes, the most recently used last (they
#: share one Node process).
_DRIVERS: dict[tuple[str, ...], _Driver] = {}


def driver(fixes: tuple[str, ...] | None = None) -> _Driver:
    """This process's driver for ``fixes`` (None: :func:`active_fixes`, what
    ``HARNESS_FIXES`` asks for; () the package as published). Tests use it to
    kill and restart the process."""
    fixes = active_fixes() if fixes is None else tuple(fixes)
    found = _DRIVERS.get(fixes)
    if found is None:
        found = _DRIVERS[fixes] = _Driver(fixes)
    return found


def active_fixes() -> tuple[str, ...]:
    """The ADK-JS fixes ``HARNESS_FIXES`` asks for (``js_fixes.active``)."""
    from .js_fixes import active

    return active()


@atexit.register
def _close_drivers() -> None:
    _NODE.close()


# -- script -> timeline ----------------------------------------------------------------
#: Ask/Reply, as ADK-JS 2.0.0's Runner stores them (read from
#: agents/llm_agent.js, agents/functions.js, auth/auth_preprocessor.js and
#: agents/processors/request_confirmation_llm_request_processor.js, and
#: pinned by tests/test_differential_js.py, which runs both flows through the
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
_NOT_REPRESENTED = {
    Rewind: "rewinds: ADK-JS 2.0.0 has no rewind (nothing in dist/ reads one)",
}


_FRAMEWORK = frozenset({REQUEST_CONFIRMATION_CALL, REQUEST_CREDENTIAL_CALL})


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
        self.reply_reused = False
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

    def apply(self, op: Operation) -> None:
        reason = _NOT_REPRESENTED.get(type(op))
        if reason is not None:
            raise NotApplicable(f"ADK-JS cannot represent {reason}")
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

    def _op_open(self, op: Open) -> None:
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

    def _op_ask(self, op: Ask) -> None:
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

    def _op_reply(self, op: Reply) -> None:
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
        asked_at = next(k for k, s in enumerate(self.steps) if request.id in s.call_ids)
        #: Whether a later event reused the asked call's id (ids numbered per
        #: turn): a later call (ADK-JS's Runner then re-runs that newer call),
        #: or, for a confirmation, a later response to another call with it
        #: (the confirmation processor's hasRespondedAfter then skips the
        #: re-run); ``differential_js.RUNNER_CANNOT["reply-reused-id"]``.
        later = self.steps[asked_at + 1 :]
        if request.name == REQUEST_CREDENTIAL_CALL:
            later = later[1:]  # the tool's own placeholder response
        self.reply_reused = any(
            call.id in s.call_ids
            or (request.name == REQUEST_CONFIRMATION_CALL and call.id in s.response_ids)
            for s in later
        )
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
            and any(r.name in _FRAMEWORK for r in before.responses)
            and last.author == AGENT
            and bool(last.responses)
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

    def _op_client_record(self, op: ClientRecord) -> None:
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


# -- running and checking ------------------------------------------------------------------
def _named(part: list[Any], k: int, position: dict[str, str]) -> ShownText:
    """``part[k]`` naming the stored position of the event the driver says
    the part came from (``part[k + 1]``; ``""`` where it says none)."""
    event = part[k + 1] if len(part) > k + 1 else None
    return ShownText(part[k], position.get(event, "") if event is not None else "")


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
    #: The ADK-JS fixes the run had (js_fixes.py).
    fixes: tuple[str, ...] = ()
    #: The same request again with other fixes (classification by fix).
    rerun: Callable[[tuple[str, ...]], JsRun] | None = field(
        default=None, repr=False, compare=False
    )

    def prompt(self, call: dict[str, Any], key: str = "contents") -> Prompt:
        """A call's contents in the checkers' form: a response part names the
        stored position of its event, a text part is a
        :class:`~compaction_harness.spec.model.ShownText` naming the stored
        position of the event it came from (the driver's ``["text", text,
        event id]``; ``""`` for a text no event holds, or a prompt recorded
        before texts named their events), and a call part's tool name is one
        naming its event (the driver's ``["call", id, name, event id]``), so
        P4 is checked by event identity, calls too (see ``adk.PromptPart``)."""
        position = {event_id: str(k) for k, event_id in enumerate(self.ids)}
        return [
            (
                role,
                tuple(
                    (p[0], p[1], p[2], position.get(p[3], p[3]))
                    if p[0] == "response"
                    else ("text", _named(p, 1, position))
                    if p[0] == "text"
                    else ("call", p[1], _named(p, 2, position))
                    if p[0] == "call"
                    else tuple(p)
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
                given = [
                    position[i]
                    for i in s["input"]
                    if i in position
                    and i not in made
                    and not self.events.get(i, {}).get("isCompacted")
                ]
                seeds = [made[i] for i in s["input"] if i in made]
                out.append((len(call["stored_before"]), given, seeds))
        return out


#: The ADK-JS fix after which getContents prunes a function call that the
#: content after it does not answer, as adk-python's prompt builder does by
#: design (``drop_orphaned_function_calls``): with it applied, P4 does not
#: require such a call in the prompt (``pruned`` of
#: :func:`pipeline.check_nothing_lost`).
PRUNES_ORPHANED_CALLS = "unanswered-calls-left-out-of-the-request"


def summary_branch(run: JsRun, made: dict[str, Any]) -> str | None:
    """The branch of the compacted event a summary (an entry of a call's
    ``summaries``) became, as ADK-JS left it in the session (``eventJson``'s
    ``branch``): None, ADK-JS's own (``createCompactedEvent`` gives a summary
    no branch, so every agent reads it), unless a fix gave it one."""
    return (run.events.get(made.get("event") or "") or {}).get("branch") or None


def foreign_records(run: JsRun, length: int | None = None) -> list[int]:
    """Stored positions (among the first ``length``; default all) of the
    compaction records the mapping appended (:func:`client_record_event`: a
    client's or an older session's), not made by ADK-JS's compaction in this
    run; the checkers count the events of their ranges as their writer's
    decision (:func:`pipeline.check_nothing_lost`, as
    ``PipelineRun.foreign_records`` does for adk-python). A summary the
    summariser was given one of them takes it as ADK-JS's own compactors take
    the latest compacted event: in :meth:`JsRun.summaries` it is not a raw
    event given."""
    steps = run.stored.steps[:length]
    return [
        p
        for p, step in enumerate(steps)
        if step.compaction is not None and p < len(run.origin) and run.origin[p] is not None
    ]


def as_adk_js_reads(steps: Session, records: Sequence[int]) -> Session:
    """``steps`` with the range of each foreign compaction record (positions
    ``records``, :func:`foreign_records`) as ADK-JS reads it: from the
    beginning of time to its ``endTime`` (``Compaction.start`` = -inf).

    ADK-JS documents ``getActiveEvents`` (``types/context/compaction_utils.d.ts``)
    as returning "only the active events since the latest compaction",
    "starting with the latest CompactedEvent": the latest compacted event
    replaces the whole history up to it, and the code keeps only raw events
    stamped later than its ``endTime`` (``context/compaction_utils.js``;
    ``startTime``, "the start time of the context that was compacted",
    is read nowhere in ``dist/``). Its own summaries are rolling
    (``TokenBasedContextCompactor.compact`` gives the active compacted event
    to the summariser with the raw events), so each stands for everything
    before it. A record a client or an older session writes in that shape
    therefore claims, in ADK-JS's session, every event stamped up to its
    ``endTime``, whatever its ``startTime`` says: what that hides is its
    writer's decision (P4, P3), as ``pipeline.check_nothing_lost`` counts a
    record for adk-python, which reads ``[start, end]``."""
    chosen = set(records)
    return Session(
        tuple(
            dataclasses.replace(
                step, compaction=dataclasses.replace(step.compaction, start=-math.inf)
            )
            if p in chosen and step.compaction is not None
            else step
            for p, step in enumerate(steps.steps)
        )
    )


def script_seed(script: Script) -> int:
    """The seed of the driver's generators for ``script`` (driver.mjs: event
    ids ADK-JS draws with ``Math.random``, ``randomUUID``'s invocation,
    function-call and session ids): the first 32 bits of the hash
    ``driver.ScriptIds`` seeds adk-python's ids with (SHA-256 of the
    script's configuration, its ``driver`` left out, and not of its
    operations, for the reason given there). The ids are a function of the
    script, so a replay draws them again, while scripts of other
    configurations break an id-decided tie each their own way (DESIGN,
    Determinism)."""
    config = script.config.to_json()
    config.pop("driver", None)
    digest = hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()
    return int(digest[:8], 16)


def representable(script: Script, compactor: JsCompactor) -> _Timeline:
    """The driver actions for ``script`` with ``compactor``, found without
    running Node. Raises :class:`NotApplicable` (one line: why) when ADK-JS
    cannot run it: a compactor with nothing to do in the session model, or
    an operation ADK-JS cannot represent (:func:`timeline`)."""
    if compactor.name == "thought_pruning":
        raise NotApplicable("the session model has no thought parts for thought pruning to prune")
    if compactor.name == "agent_controlled":
        raise NotApplicable("no script operation makes the consolidate_context call")
    return timeline(script)


def run_script(
    script: Script,
    compactor: JsCompactor | None = None,
    *,
    seed: int | None = None,
    storage: str = "memory",
    fixes: tuple[str, ...] | None = None,
) -> JsRun:
    """Run ``script`` on ADK-JS with ``compactor`` (default: :func:`compactor_for`)
    on ``storage``: ``memory`` (``InMemorySessionService``) or ``database``
    (``DatabaseSessionService`` on a fresh SQLite file the driver removes
    afterwards, the session reloaded from it at every invocation's start).
    ``seed``: the driver's generators' seed, :func:`script_seed` unless
    given (tests pass another to see a tie broken the other way).
    ``fixes``: the ADK-JS fixes to run with (None: :func:`active_fixes`).

    Raises :class:`NotApplicable` (the script cannot be represented),
    :class:`AdkJsUnavailable` (no Node or no package) or :class:`RuntimeError`
    (the driver refused the request: a harness fault)."""
    compactor = compactor or compactor_for(script)
    built = representable(script, compactor)
    payload = {
        "id": 0,
        "compactor": compactor.to_json(),
        "summary": script.config.summary,
        "seed": script_seed(script) if seed is None else seed,
        "base_chars": script.config.system_chars + script.config.tools_chars,
        "actions": built.actions,
        "storage": storage,
    }
    return run_request(
        script,
        compactor,
        payload,
        built.openers,
        lambda event_id: _origin(built, event_id),
        fixes=fixes,
    )


def run_request(
    script: Script,
    compactor: JsCompactor,
    payload: dict[str, Any],
    openers: Mapping[int, str | None],
    origin: Callable[[str], int | None],
    *,
    fixes: tuple[str, ...] | None = None,
) -> JsRun:
    """Send one emulating-mode ``payload`` (driver.mjs's request) and read
    the answer as the :class:`JsRun` of ``script`` on ``compactor``:
    ``openers`` (action index -> the text that opened the running
    invocation) marks each model call, ``origin`` (event id -> what stored
    it, None for ADK-JS's own events) each stored event. Raises
    :class:`AdkJsUnavailable` (no Node, no package, or for database storage
    no SQLite driver) or :class:`RuntimeError` (the driver refused the
    request: a harness fault). ``fixes``: as :func:`run_script`'s."""
    fixes = active_fixes() if fixes is None else tuple(fixes)
    answer = driver(fixes).request(payload)
    if not answer.get("ok"):
        error = str(answer.get("error"))
        if payload.get("storage") == "database" and (
            "@mikro-orm/sqlite" in error or "node_sqlite3" in error
        ):
            # The SQLite driver is missing or was never built (npm ci
            # --ignore-scripts, a failed node-gyp build): bad environment.
            raise AdkJsUnavailable(
                "ADK-JS's SQLite driver (@mikro-orm/sqlite and the sqlite3 binding) is "
                "missing or not built in sdks/adk-js: delete sdks/adk-js/node_modules, "
                f"then run `{INSTALL}`"
            )
        raise RuntimeError(f"the ADK-JS driver refused the request: {error}")
    events = answer["events"]
    ids = list(answer["stored"])
    calls = answer["calls"]
    for call in calls:
        call["opener"] = openers.get(call["action"])
    return JsRun(
        script,
        compactor,
        Session(tuple(from_js_event(events[i]) for i in ids)),
        ids,
        calls,
        answer.get("exception"),
        package_version(),
        events,
        [origin(i) for i in ids],
        fixes,
        _memoised(
            lambda other: run_request(script, compactor, payload, openers, origin, fixes=other)
        ),
    )


def _memoised(rerun: Callable[[tuple[str, ...]], JsRun]) -> Callable[[tuple[str, ...]], JsRun]:
    """``rerun`` made once per set of fixes (one run's classification asks
    for the same re-runs for each of its violations)."""
    made: dict[tuple[str, ...], JsRun] = {}

    def once(fixes: tuple[str, ...]) -> JsRun:
        key = tuple(fixes)
        if key not in made:
            made[key] = rerun(key)
        return made[key]

    return once


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


def waiting_call_ids(steps: Session) -> frozenset[str]:
    """Ids of the long-running calls of ``steps`` (a session as stored at a
    model call) that no later event answers yet: calls that wait. P2's
    strict clause leaves them to the model adapter (``check_prompt``'s
    ``adapter_answers``).

    Why, from both SDKs' source: a strict provider (Anthropic, OpenAI)
    refuses a call with no result before the next turn, and a pending
    long-running call has none by design. google-adk keeps such a call in
    its contents (``drop_orphaned_function_calls`` prunes only calls that
    can no longer be answered) and its adapter for strict providers answers
    it with a placeholder (``_ensure_tool_results``, ``models/lite_llm.py``,
    1.24.0 and later). ADK-JS 2.0.0 ships no adapter for a strict provider
    (``dist/esm/models/``: Gemini, Apigee's proxy of the Gemini API, the
    registry): a strict provider is reached through the app's own
    ``BaseLlm``, whose job that placeholder is, as it is LiteLLM's. A call
    the contents keep that can no longer be answered (its tool died, a
    sibling of answered parallel calls) stays under the clause: that is the
    contents' job in both SDKs (``js-unanswered-call``).

    A response answers the latest call before it with its id and tool name
    (with ids numbered per turn, ``call_0`` of one turn is not answered by
    the response to another turn's ``call_0``)."""
    return frozenset(call_id for _, call_id in _waiting_calls(steps))


def _waiting_calls(steps: Sequence[Step]) -> set[tuple[int, str]]:
    """(position, call id) of each long-running call of ``steps`` that no
    later event answers; a response answers the latest call before it with
    its id and tool name."""
    answered: set[tuple[int, str, str]] = set()
    for k, step in enumerate(steps):
        for response in step.responses:
            made = next(
                (
                    q
                    for q in range(k - 1, -1, -1)
                    if (response.id, response.name) in {(c.id, c.name) for c in steps[q].calls}
                ),
                None,
            )
            if made is not None:
                answered.add((made, response.id, response.name))
    return {
        (k, call.id)
        for k, step in enumerate(steps)
        for call in step.calls
        if call.id in step.long_running and (k, call.id, call.name) not in answered
    }


def check_run(run: JsRun) -> list[Violation]:
    """The invariants that apply to ``run.compactor``, at every model call:

    * P0: ADK-JS raised (compaction or contents assembly);
    * P1: each summariser input, as a window of the stored session then,
      splits no live pair (:func:`pipeline.check_range_safety`);
    * P5: no summary was given an event that some agent reading it cannot
      see (:func:`pipeline.check_branch_view`, with the summary's own branch
      as ADK-JS stored it: none, read by every agent, unless a fix gives it
      the branch of the events it holds);
    * P6 (first clause, for the compactors with a trigger): each summary
      covers at least one event no earlier summary was given
      (:func:`pipeline.check_new_work`); P3 and P6's second and third
      clauses (:func:`check_trigger`);
    * P2 (strict clause with ``strict_provider``, on every call the contents
      leave unanswered but one that still waits: see :func:`waiting_call_ids`)
      and, for compactors that do not delete by design, P4 (:func:`pipeline.check_model_prompt`; the
      baseline is ADK-JS's contents of the stored raw events); for the
      truncating compactor, P4 is :func:`check_truncation` instead.

    A P2 or P4 violation's ``details["model_call"]`` is the index of its
    model call in ``run.calls``.
    """
    found: list[Violation] = []
    summaries = run.summaries()
    where = {event_id: k for k, event_id in enumerate(run.ids)}
    summary_positions = [
        where.get(made.get("event") or "", -1) for call in run.calls for made in call["summaries"]
    ]
    number = 0
    strict = run.script.config.strict_provider
    stored = run.stored.steps
    for call in run.calls:
        snapshot = Session(stored[: len(call["stored_before"])])
        for made in call["summaries"]:
            taken = summaries[number][1]
            number += 1
            found += check_range_safety(snapshot, taken)
            found += check_branch_view(snapshot, taken, summary_branch(run, made))
            if run.compactor.name in TRIGGERED:
                # P6 (first clause): ADK-JS rolls every summary forward into
                # the next, so every earlier summary's input counts as covered,
                # up to a compaction record ADK-JS did not make: ADK-JS reads
                # the latest compacted event alone, the record stands for its
                # own range only, and a summary that takes again what the
                # summaries before the record covered is its first summary of
                # them since (as pipeline.check_new_work's callers count for
                # google-adk: a summary of what a record stood for is no waste).
                last_record = max(foreign_records(run, len(snapshot)), default=-1)
                before = {
                    p
                    for k, (_, given, _) in enumerate(summaries[: number - 1])
                    if last_record < 0 or summary_positions[k] > last_record
                    for p in given
                }
                found += check_new_work(taken, before, set(range(len(snapshot))), number - 1)
        if "contents" not in call:
            continue  # ADK-JS raised during this call (P0 below)
        steps = Session(stored[: len(call["stored_after"])])
        records = foreign_records(run, len(steps))
        prompt = run.prompt(call)
        waiting = waiting_call_ids(steps)
        if run.compactor.name in DELETING or call.get("baseline") is None:
            # Without a baseline (ADK-JS's contents of the raw events raised:
            # another event is the newest there) P4 has nothing to compare.
            violations, _ = check_prompt(
                prompt, call["opener"], strict=strict, adapter_answers=waiting
            )
            claimed = covered_by_records(as_adk_js_reads(steps, records), records)
            if any(
                steps[i].author == "user" and steps[i].text == call["opener"] for i in claimed
            ):  # a foreign record hides the opener: its writer's doing (check_model_prompt's rule)
                violations = [v for v in violations if v.details.get("cause") != "opener missing"]
            if run.compactor.name in DELETING:
                violations += check_truncation(run.compactor, call["before"], call["after"])
        else:
            violations, _ = check_model_prompt(
                as_adk_js_reads(steps, records),
                prompt,
                run.prompt(call, "baseline"),
                summaries[:number],
                call["opener"],
                strict=strict,
                adapter_answers=waiting,
                records=records,
                pruned=PRUNES_ORPHANED_CALLS in run.fixes,
            )
        for v in violations:
            v.details["model_call"] = run.calls.index(call)
        found += violations
    found += check_trigger(run)
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


# -- P3 and P6's trigger clauses for the compactors with a trigger ---------------------------
def _event_tokens(event: dict[str, Any]) -> int:
    """``getEventTokens`` (``events/event.js``): the event's
    ``usageMetadata.promptTokenCount`` if it has one, else its text parts'
    characters (thoughts aside) over four, rounded up. Tokens (int)."""
    count = (event.get("usageMetadata") or {}).get("promptTokenCount")
    if count is not None:
        return int(count)
    parts = (event.get("content") or {}).get("parts") or []
    text = "".join(p.get("text") or "" for p in parts if not p.get("thought"))
    return math.ceil(len(text) / 4)


def _active_before(run: JsRun, call: dict[str, Any]) -> list[str]:
    """The ids of ``call``'s ``before`` events that the compactor's
    ``getActiveEvents`` keeps: as the driver recorded them (``active``: what
    the compactor's own getActiveEvents returned, so a fix of it is
    followed), or, for a call recorded without them, as ADK-JS 2.0.0
    computes them (``context/compaction_utils.js``): the latest
    compacted event and the raw events stamped later than its ``endTime``
    (ms); without one, all of them (duplicates kept). The anchored compactor
    has its own (``AnchoredContextCompactor.getActiveEvents``): the latest
    *scratchpad* and the other events, compacted ones included, stamped later
    than its ``endTime``. The two agree while every compacted event is the
    anchored compactor's own scratchpad; a client's record (not a
    scratchpad) is a raw event to it."""
    if call.get("active") is not None:
        return list(call["active"])
    before = list(call["before"])
    anchored = run.compactor.name == "anchored"
    flag = "isScratchpad" if anchored else "isCompacted"
    compacted = [i for i in before if run.events[i].get(flag)]
    if not compacted:
        return before
    latest = compacted[-1]
    end = float(run.events[latest].get("endTime") or 0)
    raw = [
        i
        for i in before
        if not run.events[i].get(flag) and float(run.events[i].get("timestamp") or 0) > end
    ]
    return [latest, *raw]


def _real_count(run: JsRun, k: int) -> int | None:
    """The real prompt count of model call ``k``: the ``promptTokenCount``
    (tokens) of the first event stored after the call that carries one (the
    driver stamps the model's response with the count of the contents the
    call sent, plus the request's base characters, four characters a token),
    or None (the call raised, or no response was recorded)."""
    start = len(run.calls[k]["stored_after"])
    stop = len(run.calls[k + 1]["stored_before"]) if k + 1 < len(run.calls) else len(run.ids)
    steps = run.stored.steps
    return next(
        (steps[p].prompt_tokens for p in range(start, stop) if steps[p].prompt_tokens is not None),
        None,
    )


def _added_tokens(run: JsRun, k: int) -> int:
    """What the events stored between model call ``k - 1``'s compaction and
    model call ``k`` add to the prompt, counted as ``estimatePromptTokenCount``
    (``token_based_context_compactor.js``) counts contents: text characters
    plus ``JSON.stringify`` of each function call and response, four
    characters a token, rounded up (tokens, int; 0 for ``k == 0``)."""
    if k == 0:
        return 0
    start = len(run.calls[k - 1]["stored_after"])
    chars = 0
    for event_id in run.ids[start : len(run.calls[k]["stored_before"])]:
        for part in (run.events[event_id].get("content") or {}).get("parts") or []:
            chars += len(part.get("text") or "")
            for key in ("functionCall", "functionResponse"):
                if part.get(key):
                    chars += len(json.dumps(part[key], separators=(",", ":")))
    return math.ceil(chars / 4)


def backlog_bound(compactor: JsCompactor, backlog: Sequence[Step]) -> int:
    """P3's bound on the live raw events outside every summary right after a
    compaction of a compactor with a trigger (events, int).

    The compactor retains the last ``eventRetentionSize`` (R) raw events and
    summarises the rest, except what the specification keeps with them: a
    call whose response is among the retained events stays with it (a
    summary must not split the pair, P1), and so does every event between
    that call and the retained ones, since ADK-JS summarises a prefix
    (``calculateRetainStartIndex``, ``context/compaction_utils.js``, moves the
    start back). At least one event is allowed for that step back (a
    response retained right after its call), and one more per event with
    both calls and responses (each further step back of
    ``calculateRetainStartIndex`` needs one). A call that waits (a
    long-running call, or a confirmation request, with no response after it
    yet) is not compacted, so each event before the retained part that holds
    one is allowed too; it earns nothing more: it does not shield what comes
    after it (P3, DESIGN.md). A larger backlog means compaction has stalled."""
    retention = max(0, int(compactor.options.get("eventRetentionSize", 0)))
    both = sum(1 for s in backlog if s.calls and s.responses)
    tail = max(0, len(backlog) - retention)
    # Each response among the events kept holds the calls it closes (by id,
    # as the definitions close an obligation: every call with its id before
    # it that no response in between answers; with ids numbered per turn an
    # older turn's unanswered call_0 is one of them) and what lies between:
    # kept too, so their own responses hold their calls in turn (a second
    # answer to a call whose first answer comes earlier reaches back to it).
    start = tail
    while True:
        reach = min(
            (
                made
                for j in range(start, len(backlog))
                for r in backlog[j].responses
                for made in _calls_closed_by(backlog, j, r.id)
            ),
            default=start,
        )
        if reach >= start:
            break
        start = reach
    held = {k for k, _ in _waiting_calls(backlog)} | _pending_requests(backlog)
    waiting = len({k for k in held if k < start})
    return retention + max(1, tail - start) + both + waiting


def _pending_requests(steps: Sequence[Step]) -> set[int]:
    """Indexes of the events of each tool confirmation or credential request
    of ``steps`` that no later event answers: the event that holds the
    request (the tool's placeholder response) and the call it asks about.
    With the synthetic call (a waiting long-running call, see
    :func:`_waiting_calls`) they are one request that waits for a person, and
    a compactor that keeps it keeps all three (google-adk keeps such a request
    while its invocation is the newest, the definitions' protection; ADK-JS's
    fix keeps it until it is answered). Like a waiting call, it does not
    shield what comes after it.

    Answered means: the person answered it, a later response to the request's
    synthetic call (its own ``adk-`` id, in the event that holds the request,
    as ADK-JS stores it); without a synthetic call there, a later response
    with the request's key. The key is the asked-about call's id, which with
    ids numbered per turn another call of the same tool can carry (its result
    answers the key, not this request)."""
    out: set[int] = set()
    for k, step in enumerate(steps):
        synthetic = {c.id for c in step.calls if c.name in SYNTHETIC_HITL_CALL_NAMES}
        for key in (*step.confirmations, *step.auth_requests):
            asked = synthetic or {key}
            if any(asked & set(later.response_ids) for later in steps[k + 1 :]):
                continue
            out.add(k)
            made = preceding_call(steps, k + 1, key)
            if made is not None:
                out.add(made)
    return out


def _calls_closed_by(steps: Sequence[Step], position: int, call_id: str) -> list[int]:
    """Indexes of the events before ``position`` whose call with ``call_id``
    a response at ``position`` holds: the latest such call (a later answer,
    however late, is that call's), and every earlier one that no response
    with the id answers before ``position`` (the open calls it closes, as the
    definitions close obligations by id)."""
    out: list[int] = []
    answered = False
    for i in range(position - 1, -1, -1):
        if any(c.id == call_id for c in steps[i].calls) and (not out or not answered):
            out.append(i)
        if call_id in steps[i].response_ids:
            answered = True
    return out


def _backlogs(run: JsRun) -> Iterator[tuple[int, dict[str, Any], set[int], list[int], int]]:
    """Per model call ``k``: ``(k, call, given, backlog, bound)``: ``given``
    the stored positions of the raw events given to the summaries made up to
    that call (its own included), ``backlog`` the stored raw events that
    existed when it ran, are live (:func:`pipeline.live_positions`), were
    given to none of them, are not claimed by a compaction record ADK-JS
    did not make (what a record stands for is its writer's decision, not
    ADK-JS's backlog, as in ``pipeline.check_liveness``), and that the agent
    making the call sees (``reference.branch_sees``: its compactor may not
    summarise a sibling branch's events, P5), and ``bound``
    :func:`backlog_bound` of that backlog. P3's two forms read it."""
    from ...spec.pipeline_checks import live_positions

    steps = run.stored.steps
    live = live_positions(run.stored)
    summaries = run.summaries()
    given: set[int] = set()
    number = 0
    for k, call in enumerate(run.calls):
        for _ in call["summaries"]:
            given |= set(summaries[number][1])
            number += 1
        length = len(call["stored_before"])
        records = foreign_records(run, length)
        claimed = covered_by_records(as_adk_js_reads(Session(steps[:length]), records), records)
        uncovered = [
            p
            for p in range(length)
            if steps[p].compaction is None
            and p in live
            and p not in given
            and p not in claimed
            and branch_sees(call.get("branch"), steps[p].branch)
        ]
        backlog = _compactable(Session(steps[:length]), uncovered)
        yield (
            k,
            call,
            set(given),
            backlog,
            backlog_bound(run.compactor, [steps[p] for p in backlog]),
        )


def _compactable(session: Session, uncovered: Sequence[int]) -> list[int]:
    """The positions among ``uncovered`` that the definitions allow a
    compactor to summarise (:func:`reference.compactable_around_waiting_calls`,
    the backlog google-adk's P3 holds too): a call that waits is not
    compacted, nor an event a call pair spans that no range can take
    without splitting it (the call stays in view, its later answer too).
    Nor, as :func:`backlog_bound` allows for retained answers, the call of
    an answer that stays for one of those reasons, with the events between
    them: a compactor keeps a call with an answer it keeps (and no range can
    start between them while the call is answered after its start)."""
    live = reference_live_events(session)
    index = {id(step): k for k, step in enumerate(live)}
    window = [p for p in uncovered if id(session[p]) in index]
    # ADK-JS's fix keeps an unanswered confirmation or credential request
    # until it is answered (backlog_bound allows it, _pending_requests), also
    # where the definitions call it dead: what it forces to stay stays too.
    kept = frozenset(_pending_requests([session[p] for p in window]))
    chosen = {
        window[k]
        for k in compactable_around_waiting_calls(
            live, tuple(index[id(session[p])] for p in window), kept
        )
    }
    held = [p for p in window if p not in chosen]
    while held:
        p = held.pop()
        for response in session[p].responses:
            made = preceding_call(session.steps, p, response.id)
            if made is None:
                continue
            between = {q for q in chosen if made <= q < p}
            chosen -= between
            held.extend(between)
    return sorted(chosen)


def check_backlog(run: JsRun) -> list[Violation]:
    """P3 (liveness) for ``token_based`` and ``anchored``: at every model call
    where the trigger fired (a summary was made), the stored raw events that
    existed when it ran, are live (:func:`pipeline.live_positions`) and were
    given to no summary made so far number at most :func:`backlog_bound`.
    Counted by identity, not by timestamp: an event the time filter hides
    without a summary having been given it counts, since no later compaction
    can reach it. Returns P3 violations (``positions``: the backlog;
    ``details["model_call"]``: the call's index in ``run.calls``)."""
    if run.compactor.name not in TRIGGERED:
        return []
    out = []
    for k, call, _, backlog, bound in _backlogs(run):
        if call["summaries"] and len(backlog) > bound:
            out.append(
                Violation(
                    "P3",
                    f"after the summary of model call {k}, {len(backlog)} live raw events are "
                    f"outside every summary; eventRetentionSize "
                    f"{run.compactor.options.get('eventRetentionSize', 0)} allows {bound}",
                    positions=tuple(backlog),
                    expected=f"at most {bound}",
                    observed=len(backlog),
                    details={"cause": "backlog", "model_call": k, "bound": bound},
                )
            )
    return out


def _newest_count(run: JsRun, k: int, given: set[int]) -> int | None:
    """Where the newest real prompt count before model call ``k`` is: the
    stored position of the newest raw event before the call that carries a
    ``promptTokenCount`` and is not in ``given`` (the stored positions some
    summary was given). That is what ``latestPromptTokenCount``
    (``token_based_context_compactor.js``) reads when the time filter hides
    nothing else, and a lower bound of the anchored trigger's sum. A count
    from an event a summary replaced, or one stored before the latest
    summary the calling agent sees (it measured a prompt that summary has
    since compacted), is stale (P6's second clause), so it is not the
    trigger's input. None if no such event carries a count: ADK-JS then
    estimates from the contents, without the system instruction and tool
    declarations, and nothing says the prompt was over the threshold."""
    steps = run.stored.steps[: len(run.calls[k]["stored_before"])]
    branch = run.calls[k].get("branch")
    latest = max(
        (
            p
            for p, s in enumerate(steps)
            if s.compaction is not None and branch_sees(branch, s.branch)
        ),
        default=-1,
    )
    return next(
        (
            p
            for p, s in reversed(list(enumerate(steps)))
            if p > latest
            and s.compaction is None
            and s.prompt_tokens is not None
            and p not in given
        ),
        None,
    )


def check_stall(run: JsRun) -> list[Violation]:
    """P3's stall form for ``token_based`` and ``anchored``: a model call where
    no summary was made although the trigger's newest count
    (:func:`_newest_count`) and the prompt the call then sent
    (:func:`_real_count`) were both above ``tokenThreshold``. The only ways
    ``shouldCompact`` (``context/token_based_context_compactor.js``,
    ``context/anchored_context_compactor.js``) may then decline are no more
    than ``eventRetentionSize`` raw active events, or ``calculateRetainStartIndex``
    stepping back to 0; both leave at most :func:`backlog_bound` live raw
    events outside every summary. More than that is a stall: the prompt
    stays over the threshold and nothing is summarised. Counted by identity,
    as :func:`check_backlog` counts. Returns P3 violations (``positions``: the
    backlog; ``details``: ``cause`` ``"stall"``, ``model_call``, ``bound``)."""
    threshold = run.compactor.options.get("tokenThreshold")
    if run.compactor.name not in TRIGGERED or threshold is None:
        return []
    steps = run.stored.steps
    out = []
    for k, call, given, backlog, bound in _backlogs(run):
        if call["summaries"] or (run.exception and run.exception.get("action") == call["action"]):
            continue
        at, sent = _newest_count(run, k, given), _real_count(run, k)
        newest = steps[at].prompt_tokens if at is not None else None
        if newest is None or sent is None or newest <= threshold or sent <= threshold:
            continue
        if len(backlog) > bound:
            out.append(
                Violation(
                    "P3",
                    f"model call {k} made no summary though the newest prompt count {newest} "
                    f"and the prompt it sent ({sent} tokens) are above tokenThreshold "
                    f"{threshold}; {len(backlog)} live raw events are outside every summary, "
                    f"eventRetentionSize {run.compactor.options.get('eventRetentionSize', 0)} "
                    f"allows {bound} (a stall)",
                    positions=tuple(backlog),
                    expected=f"a summary, or at most {bound} events outside every summary",
                    observed=len(backlog),
                    details={"cause": "stall", "model_call": k, "bound": bound},
                )
            )
    return out


def _stale_counts(run: JsRun, active: Sequence[str]) -> list[str]:
    """The ids among ``active`` (as :func:`_active_before` gives them) of the
    raw events that carry a ``usageMetadata.promptTokenCount`` and were
    stored before the latest summary among them: counts a summary made stale
    (each measured a prompt that held events since summarised). Empty
    without a summary."""
    where = {event_id: p for p, event_id in enumerate(run.ids)}
    compacted = [i for i in active if run.events[i].get("isCompacted")]
    if not compacted:
        return []
    # the newest of them (a fix may keep one per branch, newest first)
    latest = max(where.get(i, -1) for i in compacted)
    return [
        i
        for i in active
        if i not in compacted
        and where.get(i, -1) < latest
        and (run.events[i].get("usageMetadata") or {}).get("promptTokenCount") is not None
    ]


def _summed_tokens(run: JsRun, active: Sequence[str], without: Sequence[str] = ()) -> int:
    """What ``AnchoredContextCompactor.shouldCompact`` compares with
    ``tokenThreshold``: the sum of ``getEventTokens`` (:func:`_event_tokens`)
    over ``active`` (tokens), the events of ``without`` counted as if they
    carried no prompt count (``getEventTokens`` then estimates from text)."""
    return sum(
        _event_tokens({**run.events[i], "usageMetadata": None})
        if i in without
        else _event_tokens(run.events[i])
        for i in active
    )


def check_trigger_counts(run: JsRun) -> list[Violation]:
    """P6 (second clause) for ``token_based`` and ``anchored``: at every model
    call where the trigger fired, it decides the same without the prompt
    counts a summary made stale.

    Stale counts: the ``usageMetadata.promptTokenCount`` of active events
    (:func:`_active_before`) stored before the latest summary among them (a
    retained model response: its count measured a prompt that held events
    since summarised). The trigger as ADK-JS states it:
    ``TokenBasedContextCompactor.shouldCompact`` reads the newest count among
    the active events (``latestPromptTokenCount``), else an estimate of the
    contents; ``AnchoredContextCompactor.shouldCompact`` sums
    ``getEventTokens`` (:func:`_event_tokens`) over the active events. The
    decision without the stale counts is that of the same rule with them
    removed (``getEventTokens`` then estimates from the text); for
    ``token_based`` with no fresh count left (ADK-JS would estimate from
    getContents) the clause is not judged. Returns P6 violations with
    ``details["cause"] == "stale count"``."""
    if run.compactor.name not in TRIGGERED:
        return []
    threshold = run.compactor.options.get("tokenThreshold")
    if threshold is None:
        return []
    where = {event_id: p for p, event_id in enumerate(run.ids)}
    out = []
    for k, call in enumerate(run.calls):
        if not call["summaries"]:
            continue
        active = _active_before(run, call)
        stale = _stale_counts(run, active)
        if not stale:
            continue
        if run.compactor.name == "token_based":
            fresh = [
                _event_tokens(run.events[i])
                for i in active
                if i not in stale
                and (run.events[i].get("usageMetadata") or {}).get("promptTokenCount") is not None
            ]
            if not fresh:
                continue
            without = fresh[-1]
        else:
            without = _summed_tokens(run, active, stale)
        if without <= threshold:
            positions = tuple(sorted(where[i] for i in stale if i in where))
            out.append(
                Violation(
                    "P6",
                    f"the {run.compactor.name} trigger fired at model call {k} because of prompt "
                    f"counts that a summary made stale (steps {list(positions)}); without them "
                    f"the count is {without}, not above the threshold {threshold} (wasted work)",
                    positions=positions,
                    expected="the same decision without the stale counts",
                    observed="fires",
                    details={"cause": "stale count", "model_call": k, "without": without},
                )
            )
    return out


def check_summary_rate(run: JsRun) -> list[Violation]:
    """P6 (third clause) for ``token_based`` and ``anchored``: the summariser
    is not called more often than the configuration implies.

    The bound: at most one summary per model call and branch (the request
    processor runs the first compactor whose ``shouldCompact`` holds, once;
    a compaction that takes events of several branches makes one summary per
    branch, :func:`summary_branch`, since a summary may hold only events
    every agent reading it can see, P5). The trigger
    (``tokenThreshold`` T) needs a count above T, and with turns of bounded
    size the prompt grows by at most S tokens per model call, S the largest
    rise of the real prompt count (:func:`_real_count`) between consecutive
    model calls where the later made no summary, or of what the events stored
    before each model call of the stretch add (:func:`_added_tokens`),
    whichever is larger. After a summary whose model
    call sent P < T tokens, the prompt j calls later is at most P + j * S
    before compaction, so whatever the trigger measures (the newest count,
    an estimate, or the prompt itself) it cannot honestly exceed T before
    j > (T - P) / S: the next summary comes no sooner than
    floor((T - P) / S) + 1 model calls later (never, if S <= 0). A summary
    on every turn while the prompt stays below T is not allowed. When P >= T the
    configuration implies no tighter bound than P3's (what is left is the
    summary and the retained events :func:`backlog_bound` bounds), and the
    clause does not apply to that gap. Returns P6 violations with
    ``details["cause"]`` ``"bound"``."""
    if run.compactor.name not in TRIGGERED:
        return []
    threshold = run.compactor.options.get("tokenThreshold")
    if threshold is None:
        return []
    out = []
    for k, call in enumerate(run.calls):
        branches = [summary_branch(run, made) for made in call["summaries"]]
        for v in once_per_branch(branches, f"model call {k}"):
            v.details.update(cause="bound", model_call=k)
            out.append(v)
    counts = [_real_count(run, k) for k in range(len(run.calls))]
    rises = [
        b - a
        for k, (a, b) in enumerate(itertools.pairwise(counts))
        if a is not None and b is not None and not run.calls[k + 1]["summaries"]
    ]
    made = [k for k, call in enumerate(run.calls) if call["summaries"]]
    for k, j in itertools.pairwise(made):
        sent = counts[k]
        if sent is None or sent >= threshold:
            continue
        rise = max([*rises, *(_added_tokens(run, n) for n in range(k + 1, j + 1))])
        gap = None if rise <= 0 else (threshold - sent) // rise + 1
        if gap is None or j - k < gap:
            out.append(
                Violation(
                    "P6",
                    f"a summary at model call {j}, {j - k} calls after the one at {k} whose "
                    f"prompt was {sent} tokens, below the threshold {threshold}; with turns "
                    f"adding at most {rise} tokens the next may come no sooner than "
                    f"{'never' if gap is None else f'{gap} calls later'} (wasted work)",
                    expected=f"a gap of at least {gap}" if gap is not None else "no summary",
                    observed=j - k,
                    details={"cause": "bound", "model_call": j, "after": k},
                )
            )
    return out


def check_trigger(run: JsRun) -> list[Violation]:
    """P3 (:func:`check_backlog` after a summary, :func:`check_stall` where
    none was made) and P6's second and third clauses
    (:func:`check_trigger_counts`, :func:`check_summary_rate`)."""
    return (
        check_backlog(run) + check_stall(run) + check_trigger_counts(run) + check_summary_rate(run)
    )


# -- known ADK-JS faults ---------------------------------------------------------------
def _catalogued() -> dict[str, tuple[frozenset[str], str]]:
    """ADK-JS's faults of :data:`compaction_harness.faults.catalogue.FAULTS`,
    by id: (the compactors it concerns, what a user sees)."""
    from ...faults.catalogue import JS, faults_of

    return {f.id: (frozenset(f.compactors or ()), f.user_sees) for f in faults_of(JS)}


#: Known upstream faults of ADK-JS 2.0.0, by id: (compactors, explanation:
#: what the source does and what a user sees). A view of the fault catalogue
#: (faults/catalogue.py), where the prose lives.
KNOWN_FAULTS: dict[str, tuple[frozenset[str], str]] = _catalogued()


def _has_fix(fault: str) -> bool:
    from .js_fixes import js_fixes

    return any(fault in f.faults for f in js_fixes().values())


def classified(run: JsRun, violations: Sequence[Violation]) -> list[Any]:
    """``violations`` of ``run`` classified by fix
    (:func:`compaction_harness.faults.classify.classify`): each is re-checked
    on the same request re-run with ADK-JS's fixes (``sdks/adk-js/fixes/``)
    added to those ``run`` had; a violation that a fix removes is that fix's
    fault, with ``details["evidence"] = "fix NAME"``. With
    ``HARNESS_KNOWN_FAULTS=off`` (or a run that cannot be re-run) nothing is
    classified. Raises as :func:`run_script` does, and ``JsFixError`` for a
    fix that does not apply."""
    from ...faults.classify import Classified, classify
    from .js_fixes import js_fixes

    fixes = js_fixes()
    rerun = run.rerun
    if rerun is None or os.environ.get("HARNESS_KNOWN_FAULTS") == "off":
        return [Classified(v, (), ()) for v in violations]
    candidates = [n for n in fixes if n not in run.fixes]
    out = classify(
        violations,
        lambda names: check_run(rerun((*run.fixes, *names))),
        candidates,
        lambda n: fixes[n].faults,
        confirm=True,
    )
    for item in out:
        if not item.new:
            item.violation.details["evidence"] = evidence_of(item.fixes)
    return out


def evidence_of(fixes: Sequence[str]) -> str:
    """``details["evidence"]`` of a violation the fixes ``fixes`` remove
    (``"fix A+B"``), or ``"every fix together"`` for one classified within
    :func:`compaction_harness.faults.classify.known_or_new_only` (no fix named)."""
    return "fix " + "+".join(fixes) if fixes else "every fix together"


def known_fault(run: JsRun, violation: Violation) -> str | None:
    """The id of the known ADK-JS fault that ``violation`` of ``run`` is, or
    None (a new finding): the fault whose fix removes it (:func:`classified`;
    the first, when several fixes only together do), else, among the faults
    that have no fix yet, the one whose recogniser matches (pattern
    evidence, ``details["evidence"] = "pattern"``)."""
    if os.environ.get("HARNESS_KNOWN_FAULTS") == "off":
        return None
    item = classified(run, [violation])[0]
    if not item.new:
        return item.faults[0]
    found = _pattern_fault(run, violation)
    if found is not None:
        violation.details["evidence"] = "pattern"
    return found


def _pattern_fault(run: JsRun, violation: Violation) -> str | None:
    """A fault without a fix whose recogniser matches ``violation``, or None."""
    name = run.compactor.name
    faults = [
        f for f, (compactors, _) in KNOWN_FAULTS.items() if name in compactors and not _has_fix(f)
    ]
    if name != "truncating":
        return None
    # (fault, the violation's cause, what the trace must show the compactor deleted)
    patterns = (
        ("js-truncate-opener", "opener missing", _opener_deleted),
        ("js-truncate-splits-call-pairs", "strict provider", _answers_deleted),
    )
    for fault, cause, deleted in patterns:
        if fault in faults and violation.details.get("cause") == cause and deleted(run, violation):
            return fault
    return None


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


def _answers_deleted(run: JsRun, violation: Violation) -> bool:
    """Whether, for every call the strict clause found unanswered at that
    model call, a response with its id was stored and the truncating
    compactor deleted it (stored, but not in the call's ``after``): the pair
    is split by the deletion, which the trace shows, not by the contents."""
    k = violation.details.get("model_call")
    if k is None or not violation.ids:
        return False
    after = set(run.calls[k].get("after", ()))
    return all(
        any(
            call_id in step.response_ids and run.ids[p] not in after
            for p, step in enumerate(run.stored.steps)
        )
        for call_id in violation.ids
    )


def observed(run: JsRun) -> dict[str, Any]:
    """What a fixture records of ``run`` (the keys ``show`` reads for a script
    fixture): ``session`` (the stored events, summaries included, as a
    :class:`Session` document), ``origin`` (per stored event, the operation
    that appended it, or None for a summary), ``summaries`` (per summary, the
    stored positions of the raw events it was given), ``seeds`` (per summary,
    the numbers of the earlier summaries it was given: the anchored
    compactor's scratchpad, for one), ``prompt`` (the last
    model call's contents: [role, [part tuples]]), ``exception`` (what
    ADK-JS raised, or None) and ``package_version``."""
    last = next((c for c in reversed(run.calls) if "contents" in c), None)
    return {
        "session": run.stored.to_json(),
        "origin": list(run.origin),
        "summaries": [given for _, given, _ in run.summaries()],
        "seeds": [seeds for _, _, seeds in run.summaries()],
        "prompt": [[role, [list(p) for p in parts]] for role, parts in run.prompt(last)]
        if last is not None
        else [],
        "exception": run.exception,
        "package_version": run.version,
    }


def check_case(case: JsCase, *, seed: int | None = None) -> Any:
    """Run ``case`` on ADK-JS and triage what it shows: a
    :class:`~compaction_harness.sdk.python.unit.UnitOutcome` whose ``violations`` are the
    new ones (no known fault explains them), ``known`` the (violation, fault
    id) pairs, ``observed`` as :func:`observed` and ``triaged`` True. Raises
    :class:`NotApplicable`, :class:`AdkJsUnavailable` or :class:`RuntimeError`
    as :func:`run_script` does. With database storage the script also runs
    on ``DatabaseSessionService`` and P7 is judged
    (:func:`check_js_round_trip`)."""
    from ...spec.outcome import UnitOutcome

    run = run_script(case.script, case.compactor, seed=seed)
    new, known = triage(run)
    if case.script.config.storage == "database":
        fresh, explained = check_js_round_trip(case, seed=seed, memory=run)
        new += fresh
        known += explained
    return UnitOutcome(new, {}, observed(run), [], known, True)


def triage(run: JsRun) -> tuple[list[Violation], list[tuple[Violation, str]]]:
    """``run``'s violations (:func:`check_run`) split by fix (:func:`classified`),
    then, for those no fix removes, by the recognisers of faults without a
    fix: ``(new, known)``, ``known`` as (violation, fault id) pairs (a
    violation several fixes remove only together is paired with each of
    their faults)."""
    new: list[Violation] = []
    known: list[tuple[Violation, str]] = []
    if os.environ.get("HARNESS_KNOWN_FAULTS") == "off":
        return check_run(run), []
    for item in classified(run, check_run(run)):
        if not item.new:
            known.extend((item.violation, f) for f in item.faults)
            continue
        fault = _pattern_fault(run, item.violation)
        if fault is None:
            new.append(item.violation)
        else:
            item.violation.details["evidence"] = "pattern"
            known.append((item.violation, fault))
    return new, known


def check_js_round_trip(
    case: JsCase, *, seed: int | None = None, memory: JsRun | None = None
) -> tuple[list[Violation], list[tuple[Violation, str]]]:
    """P7 on ADK-JS: run ``case`` on ``InMemorySessionService`` and on
    ``DatabaseSessionService`` (SQLite, the session reloaded before every
    invocation; ``dist/esm/sessions/database_session_service.js``) and
    compare the prompt of every model call with ``pipeline.check_round_trip``
    (the checker adk-python's P7 uses). Returns ``(new, known)``: the round
    trip's violations (:func:`round_trip_violations`) classified by fix
    (both runs re-run with ADK-JS's fixes added, as :func:`classified`
    does), ``known`` as (violation, fault id) pairs. ``memory``: the
    in-memory run of ``case`` with ``seed`` if the caller made it already
    (the driver is deterministic). Raises as :func:`run_script` does."""
    from ...faults.classify import classify
    from .js_fixes import js_fixes

    memory = memory or run_script(case.script, case.compactor, seed=seed)
    database = run_script(case.script, case.compactor, seed=seed, storage="database")
    found = round_trip_violations(memory, database)
    off = os.environ.get("HARNESS_KNOWN_FAULTS") == "off"
    if off or memory.rerun is None or database.rerun is None:
        return found, []
    fixes = js_fixes()
    m_rerun, d_rerun = memory.rerun, database.rerun
    items = classify(
        found,
        lambda names: round_trip_violations(
            m_rerun((*memory.fixes, *names)), d_rerun((*database.fixes, *names))
        ),
        [n for n in fixes if n not in database.fixes],
        lambda n: fixes[n].faults,
        confirm=True,
    )
    new: list[Violation] = []
    known: list[tuple[Violation, str]] = []
    for item in items:
        if item.new:
            new.append(item.violation)
            continue
        item.violation.details["evidence"] = evidence_of(item.fixes)
        known.extend((item.violation, f) for f in item.faults)
    return new, known


def round_trip_violations(memory: JsRun, database: JsRun) -> list[Violation]:
    """What differs between the in-memory run ``memory`` and the database
    run ``database`` of one script: P0 when only the database run raised;
    else P7 for the first model call whose prompt differs
    (``pipeline.check_round_trip``, prompts compared by event id;
    ``details["call"]`` the call's position), or for a different number of
    model calls when neither run raised. At most one violation; [] when
    the round trip holds."""
    from ...spec.pipeline_checks import check_round_trip

    if database.exception and not memory.exception:
        return [
            Violation(
                "P0",
                f"on DatabaseSessionService ADK-JS raised {database.exception['name']}: "
                f"{database.exception['message']} (at action {database.exception['action']})",
            )
        ]
    for k, (a, b) in enumerate(zip(memory.calls, database.calls, strict=False)):
        if "contents" not in a or "contents" not in b:
            break
        # By event id, not by stored position: the reload may store the same
        # events in another order, and a position is relative to one run.
        found = check_round_trip(_by_event_id(a), _by_event_id(b))
        if found:
            for v in found:
                v.details["call"] = k
            return found
    # A run that raised stops early: its P0 is judged (check_run, or above),
    # and a different number of calls is then no round-trip difference.
    ran_through = not memory.exception and not database.exception
    if ran_through and len(memory.calls) != len(database.calls):
        return [
            Violation(
                "P7",
                f"after a database round trip {len(database.calls)} model calls ran, "
                f"in memory {len(memory.calls)}",
            )
        ]
    return []


def _by_event_id(call: dict[str, Any]) -> Prompt:
    """A call's contents in the checkers' form with each response and text
    part naming its event by id (``e<n>``), comparable across two runs."""
    return [(role, tuple(tuple(p) for p in parts)) for role, parts in call["contents"]]


def new_violations(run: JsRun, found: list[Violation] | None = None) -> list[Violation]:
    """The violations of ``run`` that no known ADK-JS fault explains."""
    found = check_run(run) if found is None else found
    return [v for v in found if known_fault(run, v) is None]


#: What decides whether an ADK-JS violation is a known fault or new (pattern
#: evidence: ADK-JS's faults have no fix yet); ``bench/classifier_size.py``
#: counts these.
CLASSIFICATION = (
    "_has_fix",
    "classified",
    "evidence_of",
    "known_fault",
    "_pattern_fault",
    "_opener_deleted",
    "triage",
    "new_violations",
)


__all__ += [
    "KNOWN_FAULTS",
    "STAND_IN_THRESHOLD",
    "as_adk_js_reads",
    "check_case",
    "check_js_round_trip",
    "check_truncation",
    "client_record_event",
    "foreign_records",
    "known_fault",
    "new_violations",
    "observed",
    "round_trip_violations",
    "run_request",
    "stand_in_for",
    "stand_in_label",
    "triage",
]
