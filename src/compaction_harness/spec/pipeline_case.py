"""A recorded session as a case: the configuration and the events a real session is driven with.

A :class:`PipelineCase` is what a fixture of kind ``pipeline`` stores: a
session that a pipeline recorded (or a sub-sequence of one, when
``minimize`` shrinks it), the ``EventsCompactionConfig`` trigger values it
ran with, and after how many appended events an invocation ended. It is
plain data: :func:`compaction_harness.sdk.python.pipeline.run_pipeline_case` replays it
on google-adk, :mod:`compaction_harness.sdk.js.adk_js_recorded` on ADK-JS.

What a recorded session tells by itself, for both: the ranges of the
summaries it stored (:func:`summary_ranges`, and how a replay's differ:
:func:`compaction_difference`), its agents (:func:`recorded_agents`,
:func:`check_agents`) and where a new run of ADK's ``Runner`` starts
(:func:`resumes_or_opens`).

Parsing is strict (:class:`~compaction_harness.spec.model.ModelError` names the
field) and executes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .invariants import PIPELINE_INVARIANTS
from .model import ModelError, Session, Step

__all__ = [
    "CHECK_CONFIGURATION",
    "CONFIG_KEYS",
    "PipelineCase",
    "check_agents",
    "compaction_difference",
    "recorded_agents",
    "resumes_or_opens",
    "summary_ranges",
]

#: The ``EventsCompactionConfig`` trigger values a pipeline case configures.
CONFIG_KEYS = ("compaction_interval", "overlap_size", "token_threshold", "event_retention_size")


@dataclass(frozen=True)
class PipelineCase:
    """A configuration and the operations that drive a real session.

    Attributes:
        config: ``EventsCompactionConfig`` trigger values (the keys of
            :data:`CONFIG_KEYS`, None where unset).
        session: the events appended, in order.
        ends: after how many appended events an invocation ended (compaction ran).
        max_invocation_events: the most events one invocation appends (no
            longer read: P3's bound comes from the session itself; kept so
            older fixtures load).
        invariants: the pipeline invariants checked (None: all of P1 to P7);
            a campaign narrowed by HARNESS_PIPELINE_INVARIANTS records its
            choice, so a replay checks what the campaign checked.
        agents: the names of the app's agents, the root first (empty: the
            harness's own root ``agent``). A recorded session carries the
            names its app gave them (``assistant``, say): the replay's root
            agent has the root's name, so ADK reads the root's events as its
            own (its token counts, its replies), and an event authored by a
            listed sub-agent is preceded by that sub-agent's model call.
        summary_sizes: a recorded session's summaries as (start, end,
            characters), in the order the run stored them (empty: the
            harness's own ``summary#N``). The replay's summaries take their
            sizes: ADK's choice whether a range is worth compacting weighs it
            against the previous summary's size.
        recorded: the summaries the recorded run stored, as (how many of the
            session's events preceded each, start, end); None when there is
            nothing to compare (a sub-sequence, a fixture). The replay's
            summaries are compared with them
            (:func:`compaction_difference`): they
            are evidence of the configuration the session ran with.
    """

    config: Mapping[str, int | None]
    session: Session
    ends: tuple[int, ...]
    max_invocation_events: int = 6
    invariants: tuple[str, ...] | None = None
    origin: Session | None = field(default=None, compare=False, repr=False)
    agents: tuple[str, ...] = ()
    summary_sizes: tuple[tuple[float, float, int], ...] = ()
    recorded: tuple[tuple[int, float, float], ...] | None = field(
        default=None, compare=False, repr=False
    )

    def __post_init__(self) -> None:
        if set(self.config) != set(CONFIG_KEYS):
            raise ModelError(f"call.config: expected exactly the keys {', '.join(CONFIG_KEYS)}")
        for key, value in self.config.items():
            if value is not None and (type(value) is not int or value < 0):
                raise ModelError(f"call.config.{key}: expected a non-negative integer or null")
        if any(not 0 <= e <= len(self.session) for e in self.ends) or list(self.ends) != sorted(
            self.ends
        ):
            raise ModelError("call.ends: expected sorted positions within the session")
        if self.invariants is not None and (
            not self.invariants or not set(self.invariants) <= set(PIPELINE_INVARIANTS)
        ):
            raise ModelError(
                f"call.invariants: expected a non-empty list of {', '.join(PIPELINE_INVARIANTS)}"
            )
        if len(set(self.agents)) != len(self.agents) or any(
            not isinstance(a, str) or not a or a == "user" for a in self.agents
        ):
            raise ModelError("call.agents: expected distinct agent names (not 'user'), root first")

    @property
    def root(self) -> str:
        """The root agent's name."""
        return self.agents[0] if self.agents else "agent"

    @property
    def window(self) -> tuple[int, ...]:
        return ()

    def call_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "config": dict(self.config),
            "ends": list(self.ends),
            "max_invocation_events": self.max_invocation_events,
        }
        if self.invariants is not None:
            out["invariants"] = list(self.invariants)
        if self.agents:
            out["agents"] = list(self.agents)
        if self.summary_sizes:
            out["summary_sizes"] = [list(size) for size in self.summary_sizes]
        return out

    def render(self) -> str:
        lines = self.session.render().splitlines()
        out = []
        for k, line in enumerate(lines):
            out.append(line)
            out += ["  ---- end of invocation: compaction runs"] * list(self.ends).count(k + 1)
        agents = f"\nagents: {', '.join(self.agents)} (root first)" if self.agents else ""
        return "\n".join(out) + f"\nconfig: {dict(self.config)}" + agents

    def __repr__(self) -> str:
        return f"PipelineCase({dict(self.config)!r}, {self.session!r}, ends={self.ends!r})"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))


def summary_ranges(steps: Session) -> list[tuple[int, float, float]]:
    """The summaries in ``steps``: (how many other events precede each,
    start, end), in order."""
    out: list[tuple[int, float, float]] = []
    before = 0
    for step in steps:
        if step.compaction is None:
            before += 1
        else:
            out.append((before, step.compaction.start, step.compaction.end))
    return out


def compaction_difference(case: PipelineCase, stored: Session, upto: int | None) -> str | None:
    """How the summaries of ``case``'s replay (``stored``: the session as the
    replay stored it) differ from those the recorded run stored
    (``case.recorded``), in one line; None when they agree. ``upto``: the
    replay stopped after that many events, so only the summaries made before
    the latest of them are compared (None: it ran to the end)."""
    if case.recorded is None or (not len(stored) and len(case.session)):
        return None  # nothing recorded, or nothing readable to compare

    def before(summaries: Sequence[tuple[int, float, float]]) -> list[tuple[float, float]]:
        return [(s, e) for k, s, e in summaries if upto is None or k < upto]

    recorded, replayed = before(case.recorded), before(summary_ranges(stored))
    if recorded == replayed:
        return None
    first = next(
        (k for k, (r, p) in enumerate(zip(recorded, replayed, strict=False)) if r != p),
        min(len(recorded), len(replayed)),
    )

    def covers(ranges: list[tuple[float, float]]) -> str:
        if first >= len(ranges):
            return "none"
        start, end = ranges[first]
        inside = [k for k, step in enumerate(case.session) if start <= step.timestamp <= end]
        return f"#{inside[0]}-#{inside[-1]}" if inside else "no event"

    return (
        f"the replay's compactions differ from the recorded run's: recorded {len(recorded)}, "
        f"replayed {len(replayed)}, first difference at summary {first + 1} (recorded "
        f"covers {covers(recorded)}, replayed {covers(replayed)}); {CHECK_CONFIGURATION}"
    )


#: What :func:`compaction_difference` advises: the replay was given another
#: configuration (or other agents) than the run had, or it differs itself.
CHECK_CONFIGURATION = (
    "check --config / --agent (if they are right, the replay itself differs: event sizes it "
    "does not carry, say)"
)


def recorded_agents(session: Session) -> tuple[str, ...]:
    """The agents that wrote a recorded session's events, in order of their
    first event (the first taken as the root): what a session tells of its
    app's agents when nothing else does. ADK stores no agent tree, so a
    root that never writes an event (a custom orchestrator) must be named."""
    names: list[str] = []
    for step in session:
        if step.compaction is None and step.author != "user" and step.author not in names:
            names.append(step.author)
    return tuple(names)


def check_agents(session: Session, agents: Sequence[str]) -> None:
    """Refuse agent names that a recorded session does not bear out.

    Each name given (``agents``, the root first) must have written an event
    of ``session``, except a root named before the agents it runs (a custom
    orchestrator writes no event of its own). A name the session never
    mentions, a typo say, would be judged as an agent with no events: ADK
    (``_latest_prompt_token_count(agent_name=...)`` of ``apps/compaction.py``)
    finds no prompt count for it and estimates one, and the verdict is about
    a run that never happened.

    Raises :class:`ModelError` (one line) naming the agent and the session's
    own agents.
    """
    authors = recorded_agents(session)
    for k, name in enumerate(agents):
        if name == "user":
            raise ModelError(
                "agent 'user': that is the author of the user's events; name the app's "
                "agents (not 'user'), the root first"
            )
        if name not in authors and not (k == 0 and len(agents) > 1):
            raise ModelError(
                f"agent {name!r} wrote no event of this session "
                f"(its agents: {', '.join(authors) or 'none'})"
            )


def resumes_or_opens(last: Step, step: Step) -> bool:
    """Whether ``step``, appended after ``last``, starts a new ``run_async``
    of ADK's ``Runner``: it belongs to another invocation, or it is the user's
    event (a function response, a confirmation's answer) after the agent's
    events of the same one. A paused invocation (a long-running call, a
    confirmation asked) ends its ``run_async``, and the Runner compacts then
    (``_run_with_trace``); the answer resumes the invocation in a new
    ``run_async`` under the same id (``_resolve_invocation_id``)."""
    return step.invocation != last.invocation or (step.author == "user" and last.author != "user")
