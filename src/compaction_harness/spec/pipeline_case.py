"""A recorded session as a case: the configuration and the events a real session is driven with.

A :class:`PipelineCase` is what a fixture of kind ``pipeline`` stores: a
session that a pipeline recorded (or a sub-sequence of one, when
``minimize`` shrinks it), the ``EventsCompactionConfig`` trigger values it
ran with, and after how many appended events an invocation ended. It is
plain data: :func:`compaction_harness.sdk.python.pipeline.run_pipeline_case` replays it
on google-adk, :mod:`compaction_harness.sdk.js.adk_js_recorded` on ADK-JS.

Parsing is strict (:class:`~compaction_harness.spec.model.ModelError` names the
field) and executes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .invariants import PIPELINE_INVARIANTS
from .model import ModelError, Session

__all__ = ["CONFIG_KEYS", "PipelineCase"]

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
            (:func:`compaction_harness.sdk.python.pipeline.compaction_difference`): they
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
