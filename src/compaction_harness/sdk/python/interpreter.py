"""google-adk's interpreter of pipeline scripts: what both of its drivers share.

A :class:`~compaction_harness.spec.scripts.Script` runs on google-adk two
ways: the emulating driver (:class:`compaction_harness.sdk.python.driver.ScriptRun`)
appends the events ADK's ``Runner`` stores, the runner driver
(:mod:`compaction_harness.sdk.python.runner_driver`) makes ADK's own
``Runner`` store them. Both are an :class:`Interpreter`, which holds what a
script means whoever carries it out:

* the walk (:func:`walk`) and the dispatch (:meth:`Interpreter.handler`: an
  operation named ``op`` goes to the backend's ``_op_<op>``; every
  operation of :data:`~compaction_harness.spec.scripts.OPERATIONS` has one);
* the bookkeeping: the running invocation, the invocations in the order
  they were opened, the calls pending and answered (:class:`Pending`), the
  requests waiting for the user (:class:`Asked`), the texts' numbering;
* what an operation picks, as :mod:`~compaction_harness.spec.scripts` defines
  it: the calls an ``Answer`` answers, the request a ``Reply`` answers, the
  invocation a ``Rewind`` goes back before, the tool a ``Calls`` or ``Ask``
  calls, the ids the model gives its calls;
* the clock's arithmetic (:class:`Clock`: a true time read at the script's
  resolution through the host's offset; ``Skew`` moves the offset) and
  ``Tie`` and ``Skew`` themselves;
* the ids (:class:`ScriptIds`, :func:`sdk_ids`): every id of a run, the
  harness's and ADK's own, is a function of the script.

What differs stays in the backends: how an operation's events come to be
stored (appended, or made by the ``Runner``), when an invocation ends, what
is checked and when.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sys
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from ...spec import reference
from ...spec import scripts as ops
from ...spec.app_shape import HARNESS_APP, AppShape
from ...spec.model import Call, Session

__all__ = [
    "AGENT",
    "EPOCH",
    "STEP",
    "THINK",
    "TOOLS",
    "Asked",
    "Clock",
    "Interpreter",
    "Pending",
    "ScriptIds",
    "sdk_ids",
    "walk",
]

#: Where the run's clock starts (seconds since the epoch: November 2023).
EPOCH = 1_700_000_000.0
#: Seconds between two events of a run, and before a user's next message.
STEP = 0.0004
THINK = 7.0
#: The root agent, whose model the script's ``Text``, ``Calls`` and ``Ask`` call.
AGENT = "agent"
#: The root agent's tools, by the names the scripted model calls them.
TOOLS = ("lookup", "export", "transfer", "calendar")


# -- ids --------------------------------------------------------------------------
class ScriptIds:
    """The ids of one run of a script: the n-th id of a kind is a hash of the
    script's configuration (its ``driver`` left out: both drivers, and a
    fixture of either, draw the same), the kind and n, formatted as a uuid.

    The operations are left out of the seed on purpose: the runner driver
    records the script as it ran it (with the operations it had to add), and
    that script makes the same ADK calls in the same order, so it draws the
    same ids as the script it was given; a seed that hashed the operations
    would give its replay other ids, and a tie broken one way in the campaign
    could break the other way in the replay."""

    def __init__(self, script: ops.Script) -> None:
        config = script.config.to_json()
        config.pop("driver", None)
        text = json.dumps(config, sort_keys=True)
        self.seed = hashlib.sha256(text.encode()).hexdigest()[:16]
        self.counts: dict[str, int] = {}

    def __call__(self, kind: str) -> str:
        number = self.counts[kind] = self.counts.get(kind, 0) + 1
        digest = hashlib.sha256(f"{self.seed}:{kind}:{number}".encode()).hexdigest()
        return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"

    def sdk_draw(self, depth: int) -> str:
        """An id ADK draws: its kind is the function that asked for it
        (``new_id`` for ``Event.new_id``, ``new_invocation_context_id``,
        ``generate_client_function_call_id``, ``create_session``, ...: the
        frame ``depth`` levels up), so each kind keeps its own count."""
        return self("adk." + sys._getframe(depth).f_code.co_name)


@contextlib.contextmanager
def sdk_ids(ids: ScriptIds) -> Iterator[None]:
    """Every id ADK draws while the block runs comes from ``ids``: through
    ``google.adk.platform.uuid``'s provider (a context variable: tasks
    created inside the block inherit it), or, on releases without it, by
    standing in for ``uuid.uuid4``. Restored when the block ends."""
    try:
        from google.adk.platform import uuid as platform_uuid
    except ImportError:
        platform_uuid = None
    var = getattr(platform_uuid, "_id_provider_context_var", None)
    if var is not None:
        previous = var.get()
        # (sdk_draw <- this lambda <- new_uuid <- the function that wants the id)
        var.set(lambda: ids.sdk_draw(3))
        try:
            yield
        finally:
            var.set(previous)
        return
    real = uuid.uuid4
    uuid.uuid4 = lambda: uuid.UUID(ids.sdk_draw(2))  # (sdk_draw <- lambda <- the caller)
    try:
        yield
    finally:
        uuid.uuid4 = real


# -- the clock -------------------------------------------------------------------
class Clock:
    """A run's clock: true time starts at :data:`EPOCH` and is read through the
    host's offset at the script's resolution. How it moves between readings,
    and what ``Tie`` holds, is the backend's (:meth:`tie`)."""

    def __init__(self, resolution: float) -> None:
        self.true = EPOCH
        self.offset = 0.0
        self.resolution = resolution

    def read(self, true: float) -> float:
        """``true`` as this host's clock shows it, at the script's resolution."""
        return ops.at_resolution(true + self.offset, self.resolution)

    def think(self) -> None:
        """A client's next message comes ``THINK`` seconds later."""
        self.true += THINK

    def skew(self, seconds: float) -> None:
        """From here on, a host whose clock is ``seconds`` behind stamps events."""
        self.offset -= seconds

    def tie(self, stored: Sequence[float]) -> None:  # pragma: no cover - each backend's
        """The next event is stored in the same tick as the one stored last
        (``stored``: the timestamps of what is stored so far)."""
        raise NotImplementedError


# -- the bookkeeping ---------------------------------------------------------------
@dataclass
class Pending:
    """A call the model made: pending until answered (``long_running``: its
    tool is long-running)."""

    call: Call
    invocation: str
    long_running: bool


@dataclass
class Asked:
    """A request waiting for the user: the tool ``call`` needs confirmation or
    a credential, and ``request`` is ADK's synthetic call asking for it (with
    its arguments ``args``), made in ``invocation``."""

    call: Call
    request: Call
    invocation: str
    args: dict = field(default_factory=dict)


def walk(
    operations: Sequence[ops.Operation],
) -> Iterator[tuple[int, ops.Operation, ops.Operation | None]]:
    """Each operation of a script with its index and the one after it (None after the last)."""
    for index, op in enumerate(operations):
        yield index, op, operations[index + 1] if index + 1 < len(operations) else None


class Interpreter:
    """The shared part of google-adk's two drivers (see the module docstring).

    A backend defines ``_op_<name>`` for every operation but ``tie`` and
    ``skew`` (done here on :attr:`clock`), and :meth:`stored_timestamps`.
    """

    clock: Clock

    def __init__(self, config: ops.ScriptConfig) -> None:
        self.config = config
        #: The app's agent and tool names (the harness's own unless the
        #: script runs on a user's app: ``config.app``).
        self.names: AppShape = config.app or HARNESS_APP
        #: The invocation the script's operations act in, if one runs.
        self.running: str | None = None
        #: The invocations, in the order they were opened.
        self.invocations: list[str] = []
        self.pending: list[Pending] = []
        self.answered: list[Pending] = []
        self.asked: list[Asked] = []
        #: Each invocation's opener: the text of the user message that opened
        #: it (None: an agent, a client's answer or a rewind opened it). A turn
        #: a reply or an answer resumes runs in the invocation that asked, and
        #: P2 wants that message at each of its model calls too.
        self.openers: dict[str, str | None] = {}
        #: User messages and model replies so far (their texts are numbered).
        self.counts = {"user": 0, "model": 0}

    # -- dispatch -----------------------------------------------------------------
    def handler(self, op: ops.Operation) -> Callable:
        """The backend's method that carries out ``op``."""
        return getattr(self, f"_op_{op.op}")

    def _op_tie(self, op: ops.Tie) -> None:
        self.clock.tie(self.stored_timestamps())

    def _op_skew(self, op: ops.Skew) -> None:
        self.clock.skew(op.seconds)

    def stored_timestamps(self) -> Sequence[float]:  # pragma: no cover - each backend's
        """The timestamps of every event stored so far."""
        raise NotImplementedError

    # -- texts, tools and ids --------------------------------------------------------
    @staticmethod
    def text(prefix: str, chars: int) -> str:
        head = f"{prefix} "
        return head + "x" * max(0, chars - len(head))

    def user_text(self, chars: int) -> str:
        """The next user message's text."""
        self.counts["user"] += 1
        return self.text(f"user {self.counts['user']}", chars)

    def reply_text(self, agent: str, chars: int) -> str:
        """The text of ``agent``'s next reply (replies are numbered across agents)."""
        self.counts["model"] += 1
        prefix = "model" if agent == self.names.agent else f"{agent} says"
        return self.text(f"{prefix} {self.counts['model']}", chars)

    def tool_of(self, op: ops.Calls | ops.Ask) -> str | None:
        """The tool the model calls for ``op`` (None: the app has no tool of
        that kind, and ``op`` does nothing)."""
        if isinstance(op, ops.Ask):
            kind = "confirmation" if op.kind == "confirmation" else "credential"
        else:
            kind = "plain" if op.kind == "plain" else "long_running"
        return self.names.tool(kind)

    def tools_of(self, op: ops.Calls) -> tuple[str | None, ...]:
        """The tool each call of ``op`` goes to, in call order
        (:meth:`~compaction_harness.spec.scripts.Calls.tool_kinds`; None where
        the app has no tool of that kind)."""
        return tuple(self.names.tool(kind) for kind in op.tool_kinds())

    def model_call_id(self, k: int) -> str | None:
        """The id the model gives its k-th call of a reply: the provider's
        per-turn numbering, or None (ADK makes an ``adk-<uuid>`` id)."""
        return f"call_{k}" if self.config.call_ids == "per_turn" else None

    # -- what an operation picks -----------------------------------------------------
    def pick_answer(self, op: ops.Answer) -> tuple[list[Pending], list[Pending]]:
        """(the pending calls of the invocation ``op`` answers, those it
        answers), as :class:`~compaction_harness.spec.scripts.Answer` says;
        both empty when nothing is there to answer."""
        # One message answers calls of one invocation (the Runner refuses
        # "function responses resolve to multiple invocations"): the first
        # pick chooses the invocation, the others its calls (oldest first).
        return op.pick(self.answered if op.again else self.pending)

    @staticmethod
    def answer_resolves_elsewhere(stored: Session, ids: Sequence[str], invocation: str) -> bool:
        """Whether a client's responses with ``ids`` would continue another
        invocation than ``invocation``, the one the script means (the model
        reused the ids: per-turn ids); ``stored``: the session as the Runner
        loads it for the request (a database gives it back in timestamp
        order). ``Runner._resolve_invocation_id_from_fr`` continues the
        invocation of each id's newest live call in the session, and refuses
        a message that spans several. Both drivers ask it before a client's
        answer."""
        live = reference.live_events(stored)
        resolved = {
            next((s.invocation for s in reversed(live) if i in s.call_ids), "") for i in ids
        }
        return resolved != {invocation}

    def mark_answered(self, items: Sequence[Pending]) -> None:
        for item in items:
            self.pending.remove(item)
            self.answered.append(item)

    def pick_request(self, op: ops.Reply) -> Asked | None:
        """The request the user's ``op`` answers (no longer waiting), or None."""
        if not self.asked:
            return None
        return self.asked.pop(op.pick % len(self.asked))

    def rewind_target(self, op: ops.Rewind) -> str | None:
        """The invocation ``op`` rewinds to before, or None when none was opened."""
        if not self.invocations:
            return None
        return self.invocations[-min(op.back, len(self.invocations))]

    def forget_rewound(self, stored: Session) -> None:
        """After a rewind (``stored``: the session as stored then): calls and
        requests whose events the rewind undid wait for nothing (nor can a
        client answer them again: ADK refuses a response whose call the session
        no longer holds), and a turn that resumes a rewound invocation later
        has no request to keep: the rewind annulled the user message that
        opened it. A call counts as undone by its own event, not by its
        invocation: a rewind before a later invocation also undoes the turns
        that resumed an earlier one after it (``_apply_rewinds`` removes
        events by position), while that invocation's first events stay."""
        steps = reference.live_events(stored).steps
        live = {s.invocation for s in steps}
        made = {(s.invocation, c.id, c.name) for s in steps for c in s.calls}

        def kept(invocation: str, call: Call) -> bool:
            return (invocation, call.id, call.name) in made

        self.pending = [p for p in self.pending if kept(p.invocation, p.call)]
        self.answered = [p for p in self.answered if kept(p.invocation, p.call)]
        self.asked = [a for a in self.asked if kept(a.invocation, a.request)]
        self.openers = {i: (o if i in live else None) for i, o in self.openers.items()}
