"""The ADK adapter: model <-> real `Event`, and how the real helpers are called."""

from __future__ import annotations

import inspect

import pytest
from builders import answer, call, session, text, user
from google.adk.apps import compaction as adk_compaction
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from hypothesis import given, settings
from hypothesis import strategies as st

from compaction_harness.sdk.python import adk
from compaction_harness.spec.model import Call, Compaction, Response, Session, Step
from strategies import sessions

deterministic = settings(derandomize=True, database=None)


def release(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".")[:3])


# -- round trip ----------------------------------------------------------------
# Older releases' events lack some fields the model has (e.g. isolation_scope);
# the adapter raises NotApplicable for those, which these tests do not cover.
_EVENT_FIELDS = {"isolation_scope", "branch", "long_running_tool_ids"}
_ACTION_FIELDS = {
    "requested_tool_confirmations",
    "requested_auth_configs",
    "rewind_before_invocation_id",
    "compaction",
}
_LACKING = sorted(
    (_EVENT_FIELDS - set(Event.model_fields)) | (_ACTION_FIELDS - set(EventActions.model_fields))
)
needs_every_event_field = pytest.mark.skipif(
    bool(_LACKING), reason=f"google-adk {adk.ADK_RELEASE} lacks {', '.join(_LACKING)}"
)


@needs_every_event_field
@deterministic
@given(s=sessions())
def test_generated_sessions_survive_the_adapter(s: Session) -> None:
    events = adk.to_adk_events(s)
    assert all(isinstance(e, Event) for e in events)
    assert len({id(e) for e in events}) == len(events)  # one fresh Event per step
    assert adk.from_adk_events(events) == s


ids = st.lists(st.sampled_from(("a", "b", "c0")), unique=True, max_size=2).map(
    lambda xs: tuple(sorted(xs))
)
names = st.text(max_size=4)
every_field_steps = st.builds(
    Step,
    invocation=names,
    author=st.sampled_from(("user", "agent", "")),
    timestamp=st.floats(-1e9, 1e9, allow_nan=False),
    text=st.none() | st.text(max_size=8),
    calls=st.lists(st.builds(Call, names, names), max_size=2).map(tuple),
    responses=st.lists(st.builds(Response, names, names), max_size=2).map(tuple),
    long_running=ids,
    confirmations=ids,
    auth_requests=ids,
    # A non-empty summary: an empty one comes back as the default "summary".
    compaction=st.none()
    | st.builds(Compaction, st.floats(0, 10), st.floats(0, 10), st.text(min_size=1, max_size=8)),
    rewind_before=st.none() | names,
    branch=st.none() | names,
    isolation_scope=st.none() | names,
    prompt_tokens=st.none() | st.integers(0, 10**6),
)


@needs_every_event_field
@deterministic
@given(s=st.lists(every_field_steps, max_size=4).map(lambda xs: Session(tuple(xs))))
def test_every_field_survives_the_adapter(s: Session) -> None:
    assert adk.from_adk_events(adk.to_adk_events(s)) == s


# -- to_adk_event field by field -----------------------------------------------
FULL = Step(
    invocation="i7",
    author="planner",
    timestamp=12.5,
    text="thinking",
    calls=(Call("c1", "lookup"), Call("c2", "search")),
    responses=(Response("c0", "lookup"),),
    long_running=("c2",),
    confirmations=("c1",),
    auth_requests=("c2", "c3"),
    compaction=Compaction(1.0, 5.0, "the summary"),
    rewind_before="i3",
    branch="root.planner",
    isolation_scope="scope-1",
    prompt_tokens=321,
)


@needs_every_event_field
def test_to_adk_event_maps_every_field() -> None:
    event = adk.to_adk_event(FULL)
    assert isinstance(event, Event)
    assert event.invocation_id == "i7"
    assert event.author == "planner"
    assert event.timestamp == 12.5
    assert [(c.id, c.name) for c in event.get_function_calls()] == [
        ("c1", "lookup"),
        ("c2", "search"),
    ]
    assert [(r.id, r.name) for r in event.get_function_responses()] == [("c0", "lookup")]
    assert event.long_running_tool_ids == {"c2"}
    assert set(event.actions.requested_tool_confirmations) == {"c1"}
    assert set(event.actions.requested_auth_configs) == {"c2", "c3"}
    assert event.actions.compaction.start_timestamp == 1.0
    assert event.actions.compaction.end_timestamp == 5.0
    assert [p.text for p in event.actions.compaction.compacted_content.parts] == ["the summary"]
    assert event.actions.rewind_before_invocation_id == "i3"
    assert event.branch == "root.planner"
    assert event.isolation_scope == "scope-1"
    assert event.usage_metadata.prompt_token_count == 321
    assert event.content.role == "user"  # it holds a function response
    # Parts: text first, then calls, then responses.
    kinds = [
        "text" if p.text is not None else "call" if p.function_call else "response"
        for p in event.content.parts
    ]
    assert kinds == ["text", "call", "call", "response"]


def test_user_events_have_the_user_role() -> None:
    assert adk.to_adk_event(Step("i1", "user", 1.0, text="hi")).content.role == "user"
    as_user = Step("i1", "user", 1.0, responses=(Response("c0", "lookup"),))
    assert adk.to_adk_event(as_user).content.role == "user"
    assert adk.to_adk_event(Step("i1", "User", 1.0, text="hi")).content.role == "model"
    # ADK's function response events: authored by the agent, role "user".
    agent_answer = Step("i1", "agent", 1.0, responses=(Response("c0", "lookup"),))
    assert adk.to_adk_event(agent_answer).content.role == "user"
    agent_call = Step("i1", "agent", 1.0, calls=(Call("c0", "lookup"),))
    assert adk.to_adk_event(agent_call).content.role == "model"


@needs_every_event_field
def test_a_default_step_sets_nothing() -> None:
    event = adk.to_adk_event(Step())
    assert event.invocation_id == ""
    assert event.author == "user"
    assert event.timestamp == 0.0
    assert event.content is None
    assert event.get_function_calls() == []
    assert not event.long_running_tool_ids
    assert not event.actions.requested_tool_confirmations
    assert not event.actions.requested_auth_configs
    assert event.actions.compaction is None
    assert event.actions.rewind_before_invocation_id is None
    assert event.branch is None
    assert event.isolation_scope is None
    assert event.usage_metadata is None


@needs_every_event_field
def test_the_full_step_comes_back() -> None:
    assert adk.from_adk_events([adk.to_adk_event(FULL)]) == Session((FULL,))


# -- the installed helpers ------------------------------------------------------
def test_helper_availability_follows_the_release_table() -> None:
    installed = release(adk.ADK_RELEASE)
    available = adk.helper_availability()
    first_release = {
        "_longest_self_contained_prefix": (2, 3, 0),
        "_provably_dead_call_ids": (2, 12, 0),
        "_safe_token_compaction_split_index": (1, 26, 0),
        "_events_to_compact_for_token_threshold": (1, 26, 0),
    }
    assert set(available) == set(first_release)
    for helper, first in first_release.items():
        assert (available[helper] is None) == (installed >= first), helper


@pytest.mark.skipif(adk.ADK_RELEASE != "2.13.0", reason="the default target release")
def test_every_helper_is_present_on_2_13_0() -> None:
    assert set(adk.helper_availability().values()) == {None}
    assert adk._accepts("_longest_self_contained_prefix", "all_events") is True


def test_a_missing_helper_is_not_applicable() -> None:
    with pytest.raises(adk.NotApplicable) as info:
        adk._helper("_no_such_helper")
    assert str(info.value) == (
        f"google-adk {adk.ADK_RELEASE} has no google.adk.apps.compaction._no_such_helper"
    )


needs_prefix_helper = pytest.mark.skipif(
    adk.helper_availability()["_longest_self_contained_prefix"] is not None,
    reason="the installed release has no _longest_self_contained_prefix",
)


@needs_prefix_helper
def test_the_adapter_calls_the_real_helpers() -> None:
    s = session(user("i1", 1), call("i1", 2, "a"), answer("i1", 3, "a"), text("i2", 4))
    events = adk.to_adk_events(s)
    prefix = adk.longest_self_contained_prefix(events[:3], events)
    assert prefix == events[:3]
    if adk.helper_availability()["_provably_dead_call_ids"] is None:
        assert adk.provably_dead_call_ids(events, events, "i2") == set()


# -- which signature the adapter uses -------------------------------------------
@pytest.fixture
def fresh_signature_cache():
    adk._takes.cache_clear()
    yield
    adk._takes.cache_clear()


@pytest.fixture
def window_and_events() -> tuple[list[Event], list[Event]]:
    events = adk.to_adk_events(session(user("i1", 1), text("i1", 2), user("i2", 3)))
    return events[:2], events


def test_all_events_is_passed_when_the_helper_accepts_it(
    monkeypatch: pytest.MonkeyPatch, fresh_signature_cache, window_and_events
) -> None:
    window, events = window_and_events
    calls = []

    def fake(events, *, all_events=None):
        calls.append((events, all_events))
        return events[:1]

    monkeypatch.setattr(adk_compaction, "_longest_self_contained_prefix", fake, raising=False)
    result = adk.longest_self_contained_prefix(window, events)
    assert len(calls) == 1
    assert calls[0][0] is window
    assert calls[0][1] is events
    assert result == window[:1]


def test_all_events_is_not_passed_when_the_helper_takes_the_window_only(
    monkeypatch: pytest.MonkeyPatch, fresh_signature_cache, window_and_events
) -> None:
    window, events = window_and_events
    calls = []

    def fake(events):
        calls.append(events)
        return []

    monkeypatch.setattr(adk_compaction, "_longest_self_contained_prefix", fake, raising=False)
    assert adk.longest_self_contained_prefix(window, events) == []
    assert len(calls) == 1
    assert calls[0] is window


@needs_prefix_helper
def test_the_real_signature_decides_on_this_release(
    monkeypatch: pytest.MonkeyPatch, fresh_signature_cache, window_and_events
) -> None:
    window, events = window_and_events
    real = adk_compaction._longest_self_contained_prefix
    takes_all_events = "all_events" in inspect.signature(real).parameters
    assert takes_all_events == (release(adk.ADK_RELEASE) >= (2, 12, 0))
    seen = []

    def spy(*args, **kwargs):
        seen.append(sorted(kwargs))
        return real(*args, **kwargs)

    spy.__signature__ = inspect.signature(real)  # what the adapter inspects
    monkeypatch.setattr(adk_compaction, "_longest_self_contained_prefix", spy)
    assert adk.longest_self_contained_prefix(window, events) == window
    assert seen == [["all_events"] if takes_all_events else []]


def _reply(chars: int) -> Event:
    from google.genai import types

    return Event(
        author="agent", content=types.Content(role="model", parts=[types.Part(text="r" * chars)])
    )


def test_a_wait_is_weighed_as_the_request_carries_range_and_summary() -> None:
    # Worked by hand: {"parts":[{"text":"<n>"}],"role":"model"} takes n + 38
    # characters; {"parts":[],"role":"model"} 27. A 9-character summary takes
    # 47, and a range may wait while it takes at most 47 + 27 = 74: a reply of
    # 36 characters (74), not one of 37 (75). By text alone 20 > 9 would not wait.
    assert adk.EMPTY_SUMMARY_CHARS == 27
    assert adk.request_chars([_reply(20).content]) == 58
    summary = "summary#1"
    assert adk.waits_to_save_prompt([[_reply(20)]], summary)
    assert adk.waits_to_save_prompt([[_reply(36)]], summary)
    assert not adk.waits_to_save_prompt([[_reply(37)]], summary)
    # A range is weighed whole (two replies of 20: 116), and each range on its own.
    assert not adk.waits_to_save_prompt([[_reply(20), _reply(20)]], summary)
    assert adk.waits_to_save_prompt([[_reply(20)], [_reply(20)]], summary)
    assert not adk.waits_to_save_prompt([[_reply(20)], [_reply(37)]], summary)
    # Before any summary nothing prices a wait.
    assert not adk.waits_to_save_prompt([[_reply(1)]], None)
