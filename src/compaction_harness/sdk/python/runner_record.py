"""What the runner driver records of a run: the records (:class:`RunnerRun` and
what it holds), the prompt a model call received as the harness reads it,
and :class:`Recording`, the driver's side of ADK's callbacks that makes them.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from google.adk.events.event import Event
from google.genai import types

from ...spec import scripts as ops
from ...spec.invariants import Violation
from ...spec.model import Session
from ...spec.reference import unrewound
from ...spec.tool_runs import ToolRun
from .adk import _prompt_of, from_adk_events, named_copy, prompt_chars, seed_numbers


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
        summaries: how many summariser calls had been recorded when the run
            ended (those of its post-invocation compaction included).
    """

    op: int
    events: tuple[Event, ...]
    snapshot: Session
    prompt: list
    summaries: int = 0


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
        tool_runs: every run of a tool's body, in the order they started
            (:class:`~compaction_harness.spec.tool_runs.ToolRun`; P8).
        violations: every violation the checks found over the record (P0 to
            P8, of the invariants the script checks), nothing classified.
        repairs: one line per operation added or dropped.
        crashed: the exception ADK raised, if any (also a P0 violation).
    """

    script: ops.Script
    tree: str
    session: Session = field(default_factory=Session)
    events: list[Event] = field(default_factory=list)
    origin: list[int | str] = field(default_factory=list)
    summaries: list[RecordedSummary] = field(default_factory=list)
    calls: list[RecordedCall] = field(default_factory=list)
    ends: list[RecordedEnd] = field(default_factory=list)
    triggers: list[RecordedTrigger] = field(default_factory=list)
    tool_runs: list[ToolRun] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    repairs: list[str] = field(default_factory=list)
    crashed: BaseException | None = None

    @property
    def ran(self) -> ops.Script:
        """The script as run, on this driver (``config.driver="runner"``): what
        classification by fix re-runs, after the run, as the record was made."""
        return ops.Script(replace(self.script.config, driver="runner"), self.script.operations)


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


def _rewound_ids(stored: Sequence[Event]) -> set[str]:
    """The ids of the events of the whole stored session ``stored`` that a
    rewind removed (:func:`~compaction_harness.spec.reference.unrewound`):
    a partial read (``GetSessionConfig.num_recent_events``) that no longer
    holds a rewound invocation's first event leaves ADK's own
    ``_apply_rewinds`` nothing to cut from, and its rewound events look live."""
    steps = from_adk_events(list(stored)).steps
    kept = {id(s) for s in unrewound(Session(steps)).steps}
    return {e.id for e, s in zip(stored, steps, strict=True) if id(s) not in kept}


def _restored_prompt(
    held: list[Event],
    sent: list[types.Content],
    agent: str,
    branch: str | None,
    rewound: Collection[str] = (),
) -> tuple[list | None, list]:
    """(the request's contents with call ids restored and each response part
    naming the stored event it came from, ADK's contents assembly of ``held``
    without summaries): both as ``adk.PromptContent`` lists. The first is
    None when the request differs from ADK's own contents assembly of
    ``held`` beyond ids.

    The baseline leaves out the events of ``rewound`` (the whole session's
    rewinds, :func:`_rewound_ids`): P4 asks what compaction lost of the live
    events, and a rewound event a partial read shows again is not one.

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
        [
            e
            for e in tagged_events
            if not (e.actions and e.actions.compaction) and e.id not in rewound
        ],
        held,
        agent,
        branch,
    )
    return (assembled if same else None), baseline


def _cancellation(exc: BaseException) -> bool:
    """Whether ``exc`` is asyncio's ``CancelledError`` (the tool's process
    died). By the class's module and name as well as by identity: with
    coverage.py measuring ADK's context compaction module
    (``make coverage``), the loop's ``CancelledError`` reached a tool's body
    as a class other than this module's ``asyncio.CancelledError`` (same
    module and name, another object), so an ``except`` clause or
    ``isinstance`` alone recorded a died run as returned, and P8 fired on
    ADK's intended replay of it (fixture P1-2.13.0-2fee0759)."""
    kind = type(exc)
    return isinstance(exc, asyncio.CancelledError) or (
        kind.__name__ == "CancelledError" and kind.__module__ == "asyncio.exceptions"
    )


class _ToolRunHandle:
    """What a tool's body tells of its run while it runs (see :meth:`Recording.tool_run`)."""

    def __init__(self) -> None:
        self.ended = "returned"

    def asked(self) -> None:
        """The tool asked the user first (a credential, a confirmation)."""
        self.ended = "asked"


class Recording:
    """What the runner driver does when ADK reports: an event stored, the
    summariser called, a model called, a tool run, a run ended (mixed into
    :class:`~compaction_harness.sdk.python.runner_driver.RunnerDriver`, whose
    state it reads and records into ``record``)."""

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
        seeds = seed_numbers(events, position)
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
                prompt=_assembled(tagged(held), held, self.names.agent, None),
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
        rewound = _rewound_ids(self.appended) if self.config.recent_events else set()
        restored, baseline = _restored_prompt(held, llm_request.contents, agent, branch, rewound)
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
        if self.config.storage != "memory":
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

    @contextlib.contextmanager
    def tool_run(self, context: Any, kind: str) -> Iterator[_ToolRunHandle]:
        """One run of the body of the app's tool of ``kind`` (the ``with``
        block: the harness's tool functions run inside one), recorded as a
        :class:`~compaction_harness.spec.tool_runs.ToolRun` when it starts:
        the call's id (``ToolContext.function_call_id``), the tool's name, the
        newest stored model event with a call of that id to that tool, of the
        run's own invocation (``ToolContext.invocation_id``) where it has one
        (a model that numbers ids per turn gives another turn's call the same
        id: the body that runs says which tool's call it is, the invocation
        which turn's), and how it ended: ``returned``,
        ``asked`` (the body said so: :meth:`_ToolRunHandle.asked`) or ``died``
        (cancelled: the tool's process died; an exception other than a
        cancellation leaves the run ``returned``, as ADK then stores an error
        response)."""
        call_id = getattr(context, "function_call_id", None) or ""
        tool = self.names.tool(kind) or kind
        makers = [
            event
            for event, _ in reversed(self.stored_events)
            if event.author != "user"
            for call in event.get_function_calls()
            if call.id == call_id and call.name == tool
        ]
        # The run's own invocation first: a credential or confirmation granted
        # late resumes the invocation that asked, whose call a later turn's
        # call of the same tool and id (ids numbered per turn) is not.
        invocation = getattr(context, "invocation_id", None)
        own = [e for e in makers if invocation and e.invocation_id == invocation]
        made = (own or makers)[0].id if makers else ""
        number = len(self.record.tool_runs)
        self.record.tool_runs.append(ToolRun(call_id, made, tool, "died", self.current))
        handle = _ToolRunHandle()
        try:
            yield handle
        except BaseException as exc:
            if not _cancellation(exc):
                self.record.tool_runs[number] = replace(
                    self.record.tool_runs[number], ended="returned"
                )
            raise
        self.record.tool_runs[number] = replace(self.record.tool_runs[number], ended=handle.ended)

    def run_ended(self) -> None:
        """A run ended by itself: record the session for P3."""
        held = list(self.view.events) if self.view is not None else []
        self.record.ends.append(
            RecordedEnd(
                op=self.current,
                events=tuple(held),
                snapshot=from_adk_events(held),
                prompt=_assembled(tagged(held), held, self.names.agent, None),
                summaries=len(self.record.summaries),
            )
        )
