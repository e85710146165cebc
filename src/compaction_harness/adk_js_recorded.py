"""Recorded google-adk sessions (``pipeline`` fixtures) replayed on ADK-JS.

A ``pipeline`` fixture is not a script: it is a session that adk-python's
pipeline recorded (:class:`~compaction_harness.pipeline.PipelineCase`: the
steps appended, in order, ``ends`` = after how many appended steps an
invocation ended, and the trigger configuration). This module maps such a
session to one request of the Node driver (``sdks/adk-js/driver.mjs``), so
that :func:`compaction_harness.adk_js.check_run`, ``new_violations`` and
``known_fault`` judge it exactly as they judge a script's run.

The mapping (:func:`recorded_actions`), step by step, in the recorded order:

* Every recorded step is appended as the ADK-JS event
  :func:`~compaction_harness.adk_js.to_js_event` makes of it: the recorded
  invocation id, author, branch, texts, calls, responses, long-running ids
  and timestamp (seconds, sent as milliseconds), and the recorded
  ``prompt_tokens`` as ``usageMetadata.promptTokenCount`` (tokens; kept as
  recorded, not re-measured: the session is replayed, not re-run). Its id is
  ``e<k>``, ``k`` the step's position, so the run's ``origin`` of a stored
  event is the recorded step it came from (None for a summary ADK-JS made).
* A model call comes right before every step the Python pipeline makes one
  for (:func:`compaction_harness.pipeline.from_model`: an agent's event that
  is not a tool result and not only framework calls), with the clock
  (``now``) at that step's timestamp, by the agent that authored the step
  (the root agent ``agent`` is the only one whose call is checked against
  the running invocation's opener, as in the script mapping). ADK-JS runs
  compaction there, as in every script (``ContextCompactorRequestProcessor``
  before the content processor, ``agents/llm_agent.js``).
* One difference from the Python pipeline: a step on a branch that the
  model wrote (a parallel sub-agent's reply or call, by the same rule) is
  preceded by that sub-agent's own model call on its branch. The Python
  pipeline makes none there only because it assembles the root agent's
  prompt alone; ADK-JS compacts before every agent's model
  call, and the script mapping (``FanOut``) makes the same calls.
* A step opens an invocation (the driver fetches the stored session, as
  ``Runner.runAsync`` does per run) when its invocation id differs from the
  previous step's, or when an ``end`` came just before it (as
  ``pipeline.run_pipeline_case`` decides); the opener is its text when the
  user wrote it. ``ends`` make no compaction: ADK-JS 2.0.0 has none at an
  invocation's end.
* A recorded compaction record (a client's, or an older session's): see
  :func:`compaction_harness.adk_js.client_record_event`.

What ADK-JS cannot represent raises :class:`~compaction_harness.adk_js.NotApplicable`
naming the step, with the reasons of :data:`REFUSED`: a rewind (ADK-JS 2.0.0
has none), a tool confirmation or credential request (a step with
``confirmations``, ``auth_requests`` or a framework call:
``adk_request_confirmation`` / ``adk_request_credential``; ADK-JS's Runner
stores these differently, and recorded ones are not translated), an
isolation scope (the driver's model calls run in no isolation scope).

The compactor is the one a script of the same configuration gets
(:func:`compactor_of`): ``compactor_for`` for the token threshold, the
labelled stand-in ``stand_in_for`` for a sliding window.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import adk_js
from .adk_js import AGENT, JsCompactor, JsRun, NotApplicable
from .model import Session, Step
from .pipeline import FRAMEWORK_CALLS, PipelineCase, from_model
from .scripts import Script, ScriptConfig

__all__ = [
    "REFUSED",
    "RecordedActions",
    "check_recorded",
    "compactor_of",
    "recorded_actions",
    "recorded_script",
    "run_recorded",
]


def recorded_script(case: PipelineCase) -> Script:
    """A script with ``case``'s trigger configuration and no operations: what
    :func:`compaction_harness.adk_js.compactor_for` / ``stand_in_for`` read,
    and what the :class:`~compaction_harness.adk_js.JsRun` carries as its
    ``script`` (memory storage, no strict provider: a pipeline fixture
    records neither)."""
    return Script(ScriptConfig(**dict(case.config)), ())


def compactor_of(case: PipelineCase) -> tuple[JsCompactor, str]:
    """The ADK-JS compactor for ``case`` and its verdict label: a sliding
    window gets the stand-in and its ``stand_in_label``; a token threshold
    alone gets ``compactor_for`` and ``""``. Raises :class:`NotApplicable`
    when no trigger is configured."""
    script = recorded_script(case)
    if case.config.get("compaction_interval") is not None:
        compactor = adk_js.stand_in_for(script)
        return compactor, adk_js.stand_in_label(compactor)
    return adk_js.compactor_for(script), ""


@dataclass
class RecordedActions:
    """The driver actions for a recorded session: ``actions`` (as the driver
    reads them), ``openers`` (model-call action index -> the opener text the
    call is judged against, or None) and ``steps`` (the recorded steps, whose
    positions are the ``e<k>`` ids)."""

    actions: list[dict[str, Any]] = field(default_factory=list)
    openers: dict[int, str | None] = field(default_factory=dict)
    steps: tuple[Step, ...] = ()


#: Why a recorded step cannot be replayed, by shape (exact for ADK-JS 2.0.0).
REFUSED = {
    "rewind": "rewinds: ADK-JS 2.0.0 has no rewind (nothing in dist/ reads one)",
    "confirmation": "adk-python's tool confirmation and credential request events: ADK-JS's "
    "Runner stores a confirmation as the synthetic adk_request_confirmation call alone (no "
    "placeholder response), and this mapping does not translate recorded ones",
    "isolation scope": "isolation scopes here: the driver's model calls run in no isolation "
    "scope (InvocationContext.isolationScope unset)",
}


def _refuse(step: Step, k: int) -> None:
    """Raise :class:`NotApplicable` for a recorded step ADK-JS cannot hold:
    ``ADK-JS cannot represent <REFUSED reason> (recorded step <k>)``."""
    shape = None
    if step.rewind_before is not None:
        shape = "rewind"
    elif (
        step.confirmations
        or step.auth_requests
        or any(c.name in FRAMEWORK_CALLS for c in step.calls)
        or any(r.name in FRAMEWORK_CALLS for r in step.responses)
    ):
        shape = "confirmation"
    elif step.isolation_scope is not None:
        shape = "isolation scope"
    if shape is not None:
        raise NotApplicable(f"ADK-JS cannot represent {REFUSED[shape]} (recorded step {k})")


def recorded_actions(case: PipelineCase) -> RecordedActions:
    """The driver actions that replay ``case``'s steps in order, with model
    calls where the module docstring says. Raises :class:`NotApplicable`
    for a step ADK-JS cannot represent (the reason names the step)."""
    out = RecordedActions(steps=tuple(case.session.steps))
    ends = list(case.ends)
    previous: str | None = None
    opener: str | None = None
    for k, step in enumerate(case.session.steps):
        _refuse(step, k)
        while ends and ends[0] == k:
            ends.pop(0)
            previous = None
        if step.invocation != previous:
            out.actions.append({"do": "invocation", "id": step.invocation})
            opener = step.text if step.author == "user" else None
        previous = step.invocation
        if from_model(dataclasses.replace(step, branch=None)):
            out.openers[len(out.actions)] = opener if step.author == AGENT else None
            out.actions.append(
                {
                    "do": "model_call",
                    "agent": step.author,
                    "branch": step.branch,
                    "now": adk_js._ms(step.timestamp),
                }
            )
        if step.compaction is not None:
            event = adk_js.client_record_event(step, f"e{k}")
        else:
            event = adk_js.to_js_event(step, f"e{k}")
        out.actions.append({"do": "append", "event": event})
    return out


def run_recorded(
    case: PipelineCase,
    compactor: JsCompactor | None = None,
    *,
    seed: int = 0,
    mapping: Callable[[PipelineCase], RecordedActions] = recorded_actions,
) -> JsRun:
    """Replay ``case`` on ADK-JS with ``compactor`` (default: :func:`compactor_of`).

    ``mapping`` builds the actions (tests pass a deliberately broken one).
    Returns a :class:`~compaction_harness.adk_js.JsRun` whose ``script`` is
    :func:`recorded_script` and whose ``origin`` gives, per stored event, the
    recorded step's position (None: ADK-JS made it). Raises
    :class:`NotApplicable`, :class:`~compaction_harness.adk_js.AdkJsUnavailable`
    or :class:`RuntimeError` (the driver refused the request) as
    ``adk_js.run_script`` does."""
    compactor = compactor or compactor_of(case)[0]
    if compactor.name == "thought_pruning":
        raise NotApplicable("the session model has no thought parts for thought pruning to prune")
    if compactor.name == "agent_controlled":
        raise NotApplicable("no recorded step makes the consolidate_context call")
    script = recorded_script(case)
    built = mapping(case)
    answer = adk_js.driver().request(
        {
            "id": 0,
            "compactor": compactor.to_json(),
            "summary": script.config.summary,
            "seed": seed,
            "base_chars": 0,
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

    def origin(event_id: str) -> int | None:
        if event_id.startswith("e") and event_id[1:].isdigit():
            k = int(event_id[1:])
            return k if k < len(built.steps) else None
        return None

    return JsRun(
        script,
        compactor,
        Session(tuple(adk_js.from_js_event(events[i]) for i in ids)),
        ids,
        calls,
        answer.get("exception"),
        adk_js.package_version(),
        events,
        [origin(i) for i in ids],
    )


def check_recorded(case: PipelineCase, compactor: JsCompactor | None = None, *, seed: int = 0):
    """Replay ``case`` on ADK-JS and triage it as ``adk_js.check_case``
    triages a script: a :class:`~compaction_harness.unit.UnitOutcome` with
    the new violations, the (violation, fault id) pairs in ``known``,
    ``observed`` as ``adk_js.observed`` and ``triaged`` True. Raises as
    :func:`run_recorded` does."""
    from .unit import UnitOutcome

    run = run_recorded(case, compactor, seed=seed)
    new, known = [], []
    for violation in adk_js.check_run(run):
        fault = adk_js.known_fault(run, violation)
        if fault is None:
            new.append(violation)
        else:
            known.append((violation, fault))
    return UnitOutcome(new, {}, adk_js.observed(run), [], known, True)
