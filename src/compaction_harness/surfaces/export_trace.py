"""A pipeline fixture's run on the installed ADK, traced call by call (for export).

:func:`trace` runs a ``script`` or ``pipeline`` fixture again with the
emulating driver (:mod:`compaction_harness.sdk.python.driver`, or
:func:`compaction_harness.sdk.python.pipeline.run_pipeline_case` for recorded
sessions), nothing classified (a run never classifies), and records each ADK call the
driver makes (a :class:`TracedCall`): the stored session before it (deep
copies of the real ``Event`` objects), the summaries it made and what the
checks found after it. :func:`failing_call` picks the first call after which
the fixture's invariant is broken: the call
:mod:`compaction_harness.surfaces.export_pipeline` writes a test for.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ..spec.invariants import Violation
from ..store.fixtures import Fixture

__all__ = ["TracedCall", "failing_call", "trace"]


@dataclass
class TracedCall:
    """One ADK call the driver made, as :func:`trace` saw it.

    Attributes:
        kind: ``end`` (compaction at an invocation's end), ``model`` (the
            compaction request processor before a model call) or
            ``request`` (the contents assembly of a model call).
        agent: the agent's name; branch: its branch (None for the root).
        before: the stored events before the call (deep copies of ADK's).
        given: for each summary the call made, the positions in ``before``
            of the stored events it was given.
        texts: the summaries' texts; stamps: their timestamps.
        violations: what the checks found after the call (every invariant,
            no triage).
        opener: the text of the user message that opened the running
            invocation (``request``), if one did.
        covered: positions in ``before`` that kept summaries stood for.
        live: positions in ``before`` that no rewind removed.
        processor: for a ``request``, the ``model`` call right before it
            whose result it judges (None when the flow stored events in
            between, or ran no processor).

    For ``end``, ``violations`` include P3, judged after the compaction.
    """

    kind: str
    agent: str
    branch: str | None
    before: list[Any]
    given: list[tuple[int, ...]] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    stamps: list[float] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    opener: str | None = None
    covered: set[int] = field(default_factory=set)
    live: set[int] = field(default_factory=set)
    processor: TracedCall | None = None


@contextmanager
def _tracing(calls: list[TracedCall]) -> Iterator[None]:
    """Within ``with``, every PipelineRun records its ADK calls into ``calls``."""
    from ..sdk.python.pipeline import PipelineRun
    from ..spec import pipeline_checks as P

    originals = {
        name: getattr(PipelineRun, name) for name in ("_compact", "end_invocation", "check_request")
    }

    def snapshot(run: Any) -> list[Any]:
        return [e.model_copy(deep=True) for e in run.pipeline.session.events]

    def compact(self, compact_fn, *, before_model_call, check_stale=True, agent=("agent", None)):
        before = snapshot(self)
        steps = self.pipeline.steps()
        prompt = self.pipeline.prompt()
        made = len(self.pipeline.summaries)
        traced = TracedCall(
            "model" if before_model_call else "end",
            agent[0],
            agent[1],
            before,
            covered=P.covered_by_kept(prompt, self.pipeline.summaries),
            live=P.live_positions(steps),
        )
        found = originals["_compact"](
            self,
            compact_fn,
            before_model_call=before_model_call,
            check_stale=check_stale,
            agent=agent,
        )
        known = {e.id for e in before}
        new = [e for e in self.pipeline.session.events if e.id not in known]
        traced.given = [tuple(t) for _, t, _ in self.pipeline.summaries[made:]]
        traced.texts = list(self.pipeline.summary_texts[made:])
        traced.stamps = [e.timestamp for e in new if e.actions and e.actions.compaction]
        traced.violations = list(found)
        calls.append(traced)
        return found

    def end_invocation(self):
        found = originals["end_invocation"](self)
        if calls and calls[-1].kind == "end":
            calls[-1].violations = list(found)
        return found

    def check_request(self, agent_name="agent", branch=None):
        before = snapshot(self)
        traced = TracedCall("request", agent_name, branch, before, opener=self.opener)
        steps = self.pipeline.steps()
        traced.covered = P.covered_by_kept(self.pipeline.prompt(), self.pipeline.summaries)
        traced.live = P.live_positions(steps)
        previous = calls[-1] if calls else None
        if (
            previous is not None
            and previous.kind == "model"
            and (previous.agent, previous.branch) == (agent_name, branch)
        ):
            known = [e.id for e in previous.before]
            now = [e.id for e in before]
            if now[: len(known)] == known and all(
                e.actions and e.actions.compaction for e in before[len(known) :]
            ):
                traced.processor = previous
        found = originals["check_request"](self, agent_name, branch)
        traced.violations = list(found)
        calls.append(traced)
        return found

    PipelineRun._compact = compact
    PipelineRun.end_invocation = end_invocation
    PipelineRun.check_request = check_request
    try:
        yield
    finally:
        for name, original in originals.items():
            setattr(PipelineRun, name, original)


def trace(fixture: Fixture) -> list[TracedCall]:
    """The ADK calls the emulating driver makes for ``fixture`` on the
    installed release, in order (see :class:`TracedCall`). Raises
    :class:`~compaction_harness.sdk.python.adk.NotApplicable` where the release cannot
    run it."""
    from ..sdk.python.driver import run_script
    from ..sdk.python.pipeline import run_pipeline_case
    from ..spec.scripts import Script

    calls: list[TracedCall] = []
    case = fixture.case
    with _tracing(calls):
        if isinstance(case, Script):
            run_script(case)
        else:
            run_pipeline_case(case)
    return calls


def failing_call(fixture: Fixture, calls: list[TracedCall]) -> tuple[TracedCall, Violation] | None:
    """The first call after which the fixture's invariant is broken, with the
    violation: one whose one-line summary the fixture recorded if there is
    one, else the first of the invariant."""
    recorded = set(fixture.violations)
    for wanted in (lambda v: v.summary() in recorded, lambda v: True):
        for traced in calls:
            for v in traced.violations:
                if v.invariant == fixture.invariant and wanted(v):
                    return traced, v
    return None
