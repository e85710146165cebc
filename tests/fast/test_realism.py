"""The episode strategies against ADK's own builders: the generator must not
drift from what ADK's runtime writes.

Each test draws an episode, places it as the session builder does, converts
it with the adapter, and compares it field by field with the event ADK's
helper in `google/adk/flows/llm_flows/tools/_functions.py` builds from the
same inputs. Ids ADK generates itself are compared by structure (which call
is long-running), not by value.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compaction_harness.sdk.python import adk
from strategies import auth_request, function_calls, long_running_call, tool_confirmation

functions = pytest.importorskip(
    "google.adk.flows.llm_flows.tools._functions",
    reason="the installed release has no tools/_functions.py builders",
)

IDS = st.sampled_from(("c0", "c1", "f1"))
SYNTHETIC = st.sampled_from(("adk-1", "adk-2"))
few = settings(max_examples=25, derandomize=True, database=None, deadline=None)


@pytest.fixture(scope="module")
def context():
    from google.adk.agents.invocation_context import InvocationContext
    from google.adk.agents.llm_agent import LlmAgent
    from google.adk.sessions.in_memory_session_service import InMemorySessionService
    from google.adk.sessions.session import Session

    return InvocationContext(
        session_service=InMemorySessionService(),
        invocation_id="i1",
        agent=LlmAgent(name="agent", model="gemini-2.0-flash"),
        session=Session(id="s", app_name="app", user_id="u"),
    )


def placed(episode) -> list:
    steps = [t.place("i1", float(k)) for k, t in enumerate(episode.now, start=1)]
    return [adk.to_adk_event(s) for s in steps]


def same_shape(ours, theirs) -> None:
    assert ours.author == theirs.author
    assert ours.invocation_id == theirs.invocation_id
    assert ours.branch == theirs.branch
    assert ours.content.role == theirs.content.role
    assert [c.name for c in ours.get_function_calls()] == [
        c.name for c in theirs.get_function_calls()
    ]
    # The synthetic call, and only it, is long-running.
    for event in (ours, theirs):
        assert event.long_running_tool_ids == {c.id for c in event.get_function_calls()}


@few
@given(data=st.data())
def test_tool_confirmation_matches_generate_request_confirmation_event(context, data):
    episode = data.draw(tool_confirmation(IDS, SYNTHETIC))
    call_event, response_event, request_event = placed(episode)
    assert set(response_event.actions.requested_tool_confirmations) == {
        c.id for c in call_event.get_function_calls()
    }
    theirs = functions.generate_request_confirmation_event(context, call_event, response_event)
    same_shape(request_event, theirs)
    # ADK's synthetic call names the original call in its arguments.
    (original,) = call_event.get_function_calls()
    (request,) = theirs.get_function_calls()
    assert request.args["originalFunctionCall"]["id"] == original.id


@few
@given(data=st.data())
def test_auth_request_matches_generate_auth_event(context, data):
    episode = data.draw(auth_request(IDS, SYNTHETIC))
    _, response_event, request_event = placed(episode)
    theirs = functions.generate_auth_event(context, response_event)
    same_shape(request_event, theirs)
    (request,) = theirs.get_function_calls()
    assert request.args["functionCallId"] in response_event.actions.requested_auth_configs


@few
@given(data=st.data())
def test_long_running_ids_match_get_long_running_function_calls(data):
    from google.adk.tools.long_running_tool import LongRunningFunctionTool

    def export() -> dict:
        return {"status": "pending"}

    tools = {"export": LongRunningFunctionTool(export)}
    episode = data.draw(long_running_call(IDS))
    call_event = placed(episode)[0]
    theirs = functions.get_long_running_function_calls(call_event.get_function_calls(), tools)
    assert call_event.long_running_tool_ids == theirs


@few
@given(data=st.data())
def test_function_call_and_response_events_have_adks_roles(data):
    # The model's call event is role "model"; the tool's result event is
    # authored by the agent with role "user" (tools/_caller.py).
    episode = data.draw(function_calls(IDS))
    events = placed(episode)
    assert events[0].content.role == "model" and events[0].author == "agent"
    for event in events[1:]:
        assert event.get_function_responses()
        assert (event.author, event.content.role) == ("agent", "user")
