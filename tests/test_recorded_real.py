"""Real sessions, recorded by ADK's own ``Runner`` (``recorded_app``), judged
with the configuration and the agents they ran with: no false alarm where the
real run was right, the violation where it was not."""

from __future__ import annotations

import dataclasses
from importlib import metadata

import pytest
from recorded_app import FAULT5, PLAIN, TOKEN_CONFIG, record

from compaction_harness.adk import session_from_json
from compaction_harness.pipeline import recorded_agents, recorded_case, run_pipeline_case

on_2_13 = pytest.mark.skipif(
    metadata.version("google-adk") != "2.13.0", reason="outcomes recorded for google-adk 2.13.0"
)
SLIDING = {"compaction_interval": 2, "overlap_size": 1}


def summaries(outcome) -> list[str]:
    return [v.summary() for v in outcome.violations]


@pytest.fixture(scope="module")
def plain_token_session():
    return session_from_json(record(TOKEN_CONFIG, PLAIN))


def test_a_recorded_session_names_its_agents(plain_token_session):
    assert recorded_agents(plain_token_session) == ("assistant",)
    case = recorded_case(plain_token_session, TOKEN_CONFIG)
    assert case.root == "assistant" and case.call_json()["agents"] == ["assistant"]
    assert all(s.compaction is None for s in case.session)  # the replay compacts again


@on_2_13
def test_a_session_of_an_agent_named_assistant_replays_without_false_alarms(plain_token_session):
    # Every violation, known fault or not (triage off): the real run was right.
    case = recorded_case(plain_token_session, TOKEN_CONFIG)
    assert summaries(run_pipeline_case(case, triage=False)) == []
    # Judged as the harness's own agent `agent` (what replay did before the
    # case carried its agents), ADK reads assistant's events as another
    # agent's: four false "opener missing" alarms.
    as_agent = run_pipeline_case(dataclasses.replace(case, agents=()), triage=False)
    assert len(summaries(as_agent)) == 4
    assert all(
        "that opened the running invocation is not in the prompt" in s for s in summaries(as_agent)
    )


@on_2_13
def test_the_recorded_fault_5_still_fires():
    case = recorded_case(session_from_json(record(TOKEN_CONFIG, FAULT5)), TOKEN_CONFIG)
    found = summaries(run_pipeline_case(case, triage=False))
    assert found == [
        "P2: the user message 'And in Oslo?' that opened the running invocation is not in the "
        "prompt"
    ]
    triaged = run_pipeline_case(case)
    assert triaged.violations == []
    assert [f for _, f in triaged.known] == ["token-compaction-summarises-the-running-request"]
