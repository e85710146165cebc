"""How often ADK's ``Runner`` runs each tool per call (the runner driver's
``tool_runs``), and P8 over it: it holds on the real google-adk, and fails on
one deliberately broken to run a finished call's tool again."""

from __future__ import annotations

from collections import Counter

import pytest

from compaction_harness.sdk.protocol import driver_named
from compaction_harness.sdk.python.adk import ADK_RELEASE
from compaction_harness.sdk.python.adk_runner import run_script_with_runner
from compaction_harness.spec.scripts import (
    Answer,
    Ask,
    Calls,
    Open,
    Reply,
    Script,
    ScriptConfig,
    Text,
)

CONFIG = ScriptConfig(compaction_interval=1, overlap_size=0)
#: Whether the installed release's flow runs a dead turn's unanswered call
#: again when a client's answer resumes a (non-resumable) invocation
#: (``core/_resume.py``: 2.13.0 does, 2.11.0 does not).
RERUN = ADK_RELEASE != "2.11.0"

#: A model turn that looks something up and starts an approval (a mixed
#: turn), then the model replies; a client posts the approval later.
MIXED = Script(CONFIG, (Open(), Calls(kind="mixed", count=2), Text(), Answer(), Text()))


def _endings(run) -> dict[str, list[str]]:
    """Each call's tool and how each of its runs ended, in run order."""
    out: dict[str, list[str]] = {}
    for r in run.tool_runs:
        out.setdefault(f"{r.tool}:{r.call_id}", []).append(r.ended)
    return out


def _p8(run) -> list:
    return [v for v in run.violations if v.invariant == "P8"]


def test_each_tool_of_a_mixed_turn_runs_once() -> None:
    run = run_script_with_runner(MIXED, repair=True)
    assert sorted(Counter(r.tool for r in run.tool_runs).items()) == [("export", 1), ("lookup", 1)]
    assert all(r.ended == "returned" and r.op == 1 for r in run.tool_runs)
    # Both calls are the model event's, the one stored event that made them.
    made = [e.id for e in run.events if e.get_function_calls()]
    assert {r.call_event for r in run.tool_runs} == {made[0]}
    assert _p8(run) == []


@pytest.mark.parametrize(
    ("ops", "expected"),
    [
        # A credential: the tool runs to ask, and again with the credential.
        ((Open(), Ask(kind="auth"), Reply(), Text()), [["asked", "returned"]]),
        # A confirmation: ADK answers for the tool until the user confirms;
        # the tool runs once, after.
        ((Open(), Ask(), Reply(), Text()), [["returned"]]),
        # Two plain calls whose tools' process died; a client answers one,
        # and the resumed invocation runs the other again (2.13.0's flow;
        # 2.11.0's does for resumable apps only: RERUN).
        (
            (Open(), Calls(count=2, fate="later"), Answer(), Text()),
            [["died"], ["died", "returned"] if RERUN else ["died"]],
        ),
        # The same beside a long-running call that returned nothing yet: its
        # answer resumes the invocation, which runs the dead plain call again,
        # never the long-running one.
        (
            (Open(), Calls(kind="mixed", count=2, fate="later"), Answer(picks=(0, 1)), Text()),
            [["died", "returned"] if RERUN else ["died"], ["returned"]],
        ),
        # Interim results, both answered later, one of them twice: no re-run.
        (
            (Open(), Calls(kind="interim", count=2), Text(), Answer(picks=(0, 1)), Text()),
            [["returned"], ["returned"]],
        ),
    ],
    ids=["credential", "confirmation", "dead-process", "mixed-dead-process", "interim"],
)
def test_a_tool_runs_again_only_where_adk_means_it_to(ops, expected) -> None:
    run = run_script_with_runner(Script(CONFIG, ops), repair=True)
    assert sorted(_endings(run).values()) == sorted(expected)
    assert _p8(run) == []


def test_the_trace_of_the_runner_driver_holds_the_tool_runs() -> None:
    trace = driver_named("runner").run(MIXED)
    assert trace.tool_runs is not None and len(trace.tool_runs) == 2
    assert driver_named("emulated").run(MIXED).tool_runs is None  # it runs no tool


def _rerun_on_every_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    """Break ADK's flow (``base_llm_flow.decide_step_resume``): when a
    client's function response resumes an invocation, run the newest call
    event's calls again, all of them, whatever they answered already."""
    from google.adk.flows.llm_flows import base_llm_flow
    from google.adk.flows.llm_flows.core._resume import ResumeAction, ResumeDecision

    real = base_llm_flow.decide_step_resume

    def broken(context, tools_dict):
        events = context._get_events(current_invocation=True, current_branch=True)
        if events and events[-1].author == "user" and events[-1].get_function_responses():
            calls = [e for e in events if e.author != "user" and e.get_function_calls()]
            if calls:
                return ResumeDecision(ResumeAction.REPLAY_CALLS, calls[-1])
        return real(context, tools_dict)

    monkeypatch.setattr(base_llm_flow, "decide_step_resume", broken)


def test_p8_fails_on_a_flow_that_runs_a_finished_call_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _rerun_on_every_answer(monkeypatch)
    run = run_script_with_runner(MIXED, repair=True)
    found = _p8(run)
    # The plain lookup answered at once and the export returned: the client's
    # answer to the export re-ran both.
    assert sorted(v.message.split("'")[1] for v in found) == ["export", "lookup"]
    assert all(v.observed == ["returned", "returned"] for v in found)
    assert sorted(_endings(run).values()) == [["returned", "returned"]] * 2
    # The answer resumes the invocation; the flow's next step, which the next
    # operation (the model's text) lets run, replays the calls.
    answer = next(k for k, op in enumerate(run.script.operations) if isinstance(op, Answer))
    assert {v.details["op"] for v in found} == {answer + 1}
    assert isinstance(run.script.operations[answer + 1], Text)
    made = next(i for i, e in enumerate(run.events) if e.get_function_calls())
    assert all(v.positions == (made,) for v in found)
