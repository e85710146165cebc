"""Pipeline scripts: their JSON form, their robustness to deletion, and the
shapes the emulating driver stores for each operation."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compaction_harness.sdk.python.adk import helper_availability
from compaction_harness.sdk.python.driver import EPOCH, ScriptRun, run_script
from compaction_harness.spec.model import (
    REQUEST_CONFIRMATION_CALL,
    REQUEST_CREDENTIAL_CALL,
    ModelError,
    Session,
)
from compaction_harness.spec.scripts import (
    Answer,
    Ask,
    Calls,
    FanOut,
    Open,
    Reply,
    Rewind,
    Script,
    ScriptConfig,
    Text,
    Tie,
)
from strategies import scripts

pytestmark = pytest.mark.skipif(
    helper_availability()["_events_to_compact_for_token_threshold"] is not None,
    reason="drives token-threshold compaction (1.26.0 and later)",
)
SLIDING = ScriptConfig(compaction_interval=100, overlap_size=0)


def stored(script: Script) -> Session:
    """The events the driver stored for ``script`` (checks not judged)."""
    outcome = run_script(script)
    return Session.from_json(outcome.observed["session"])


# -- JSON -----------------------------------------------------------------------
@settings(max_examples=200, suppress_health_check=list(HealthCheck))
@given(script=scripts())
def test_every_drawn_script_survives_a_json_round_trip(script: Script) -> None:
    text = json.dumps(script.to_json())
    assert Script.from_json(json.loads(text)) == script


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda d: d.update(operations=[{"op": "dance"}]), "unknown operation 'dance'"),
        (lambda d: d["operations"].append({"op": "text", "chars": -1}), "integer from 0"),
        (lambda d: d["operations"].append({"op": "calls", "kind": "x"}), "expected one of"),
        (lambda d: d["operations"].append({"op": "answer", "picks": []}), "1 to 16 integers"),
        (lambda d: d["operations"].append({"op": "end", "extra": 1}), "unknown field 'extra'"),
        (lambda d: d["config"].update(storage="tape"), "config.storage"),
        (lambda d: d["config"].update(resolution=0), "config.resolution"),
        (lambda d: d["config"].update(invariants=["P9"]), "config.invariants"),
        (lambda d: d["config"].update(recent_events=-1), "config.recent_events"),
        (lambda d: d["config"].update(recent_events=2.0), "config.recent_events"),
        (lambda d: d["config"].update(recent_events=True), "config.recent_events"),
        (lambda d: d.pop("config"), "missing field 'config'"),
        (lambda d: d.update(operations={}), "expected a list"),
    ],
)
def test_a_malformed_script_is_refused_naming_where(change, problem) -> None:
    data = Script(SLIDING, (Open(), Text())).to_json()
    change(data)
    with pytest.raises(ModelError, match=problem):
        Script.from_json(data)


def test_a_partial_read_round_trips_through_json_and_a_fixture(tmp_path) -> None:
    from compaction_harness.store.fixtures import Fixture, load_fixture, write_fixture

    config = ScriptConfig(compaction_interval=2, overlap_size=0, driver="runner", recent_events=3)
    script = Script(config, (Open(), Text()))
    assert script.to_json()["config"]["recent_events"] == 3
    assert "recent_events" not in SLIDING.to_json()  # the default (whole sessions) is not written
    assert Script.from_json(json.loads(json.dumps(script.to_json()))) == script
    assert Script.from_json({**script.to_json(), "config": {**config.to_json(),
                             "recent_events": None}}).config.recent_events is None  # fmt: skip
    fixture = Fixture("script", "P4", "2.13.0", script, {}, {"session": {"steps": []}})
    path, new = write_fixture(fixture, tmp_path)
    loaded = load_fixture(path)
    assert new and loaded.case == script and loaded.case.config.recent_events == 3
    # The read is part of what identifies a failure: another read, another file.
    other = Fixture("script", "P4", "2.13.0", Script(SLIDING, script.operations), {}, {})
    assert other.file_name() != fixture.file_name()


def test_adk_js_refuses_a_partial_read_saying_why() -> None:
    from compaction_harness.sdk.js.adk_js import NotApplicable, compactor_for
    from compaction_harness.sdk.js.run import representable

    script = Script(ScriptConfig(token_threshold=100, event_retention_size=1, recent_events=3), ())
    with pytest.raises(NotApplicable, match="always loads the whole session"):
        representable(script, compactor_for(script))


# -- deleting any operation leaves a valid script ------------------------------------
@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(script=scripts(max_operations=12, database=False), data=st.data())
def test_deleting_any_operation_leaves_a_script_the_driver_runs(script, data) -> None:
    # What the shrinker does: the shorter script runs to its end, or stops at a
    # violation; the harness itself never raises.
    k = data.draw(st.integers(0, len(script.operations) - 1))
    shorter = Script(script.config, script.operations[:k] + script.operations[k + 1 :])
    outcome = run_script(shorter)
    assert not any(v.invariant == "P0" for v in outcome.violations)


def test_operations_with_nothing_to_act_on_do_nothing() -> None:
    # No pending call, no request, no running invocation: nothing is stored.
    script = Script(SLIDING, (Answer(picks=(3, 1)), Reply(pick=2), Text(), Calls()))
    assert len(stored(script)) == 0


# -- the shapes the Runner stores ---------------------------------------------------
def test_a_user_message_and_a_reply_are_stored_as_the_runner_stores_them() -> None:
    session = stored(Script(SLIDING, (Open(chars=40), Text(chars=30))))
    user, reply = session.steps
    assert (user.author, reply.author) == ("user", "agent")
    assert user.invocation == reply.invocation and user.invocation.startswith("e-")
    assert len(user.text) == 40 and len(reply.text) == 30
    assert user.timestamp < reply.timestamp
    assert reply.prompt_tokens == 40 // 4  # the token model: the prompt's characters / 4


def test_parallel_results_are_one_event_stamped_once() -> None:
    session = stored(Script(SLIDING, (Open(), Calls(count=3, fate="now"))))
    _, calls, results = session.steps
    assert len(calls.calls) == 3 and [r.id for r in results.responses] == [
        c.id for c in calls.calls
    ]
    assert results.author == "agent" and calls.timestamp < results.timestamp


def test_a_long_running_call_pauses_and_a_client_answer_resumes_its_invocation() -> None:
    session = stored(Script(SLIDING, (Open(), Calls(kind="long_running"), Answer(picks=(0,)))))
    user, call, answer = session.steps
    assert call.long_running == tuple(c.id for c in call.calls)
    assert answer.author == "user" and answer.response_ids == call.call_ids
    # The Runner resolves the invocation from the call it answers.
    assert answer.invocation == call.invocation == user.invocation


@pytest.mark.parametrize(
    ("kind", "name", "field"),
    [
        ("confirmation", REQUEST_CONFIRMATION_CALL, "confirmations"),
        ("auth", REQUEST_CREDENTIAL_CALL, "auth_requests"),
    ],
)
def test_a_request_to_the_user_is_stored_before_the_response_it_was_built_after(
    kind, name, field
) -> None:
    script = Script(SLIDING, (Open(), Ask(kind=kind), Reply(pick=0)))
    _, call, request, placeholder, answer, result = stored(script).steps
    assert [c.name for c in request.calls] == [name] and request.long_running
    assert getattr(placeholder, field) == tuple(call.call_ids)
    # Stored first, stamped later: ADK's own backward step.
    assert request.timestamp > placeholder.timestamp
    assert answer.author == "user" and answer.response_ids == request.call_ids
    assert result.author == "agent" and result.response_ids == call.call_ids
    assert len({call.invocation, answer.invocation, result.invocation}) == 1


def test_parallel_sub_agents_are_stored_as_they_finish_and_stamped_as_they_start() -> None:
    session = stored(Script(SLIDING, (Open(), FanOut(order="ba"))))
    _, first, second = session.steps
    assert (first.author, first.branch) == ("b", "team.b")
    assert (second.author, second.branch) == ("a", "team.a")
    assert second.timestamp < first.timestamp


def test_the_clock_gives_ties_and_resolution() -> None:
    coarse = ScriptConfig(compaction_interval=100, overlap_size=0, resolution=1.0)
    session = stored(Script(coarse, (Open(), Text(), Text())))
    assert len({s.timestamp for s in session}) == 1
    assert all(s.timestamp == int(s.timestamp) for s in session)
    fine = stored(Script(SLIDING, (Open(), Tie(), Text(), Text())))
    assert fine[0].timestamp == fine[1].timestamp < fine[2].timestamp
    assert fine[0].timestamp > EPOCH


def test_a_rewind_is_a_user_event_of_its_own_invocation() -> None:
    session = stored(Script(SLIDING, (Open(), Text(), Open(), Rewind(back=1))))
    rewind = session[-1]
    assert rewind.author == "user" and rewind.rewind_before == session[2].invocation
    assert rewind.invocation not in {s.invocation for s in session.steps[:-1]}


def test_a_database_run_reloads_before_every_invocation() -> None:
    config = ScriptConfig(compaction_interval=100, overlap_size=0, storage="database")
    run = ScriptRun(Script(config, (Open(), Text(), Open())))
    try:
        for index, op in enumerate(run.script.operations):
            assert run.apply(index, op) == []
        assert "storage: reloaded before an invocation" in run.all_labels()
        assert run.run.database_round_trip() == []
    finally:
        run.close()


def test_responses_keep_their_names_when_a_reload_reorders_the_session() -> None:
    # A one-second clock puts a whole invocation in one tick; the database
    # hands the events back ordered by their ids, so positions move. Each
    # response part must still name its event where it now stands.
    config = ScriptConfig(
        compaction_interval=100, overlap_size=0, storage="database", resolution=1.0
    )
    run = ScriptRun(Script(config, (Open(), Calls(count=2), Text(), Open(), Text())))
    try:
        for index, op in enumerate(run.script.operations):
            run.apply(index, op)
        steps = run.run.pipeline.steps()
        for _, parts in run.run.pipeline.prompt():
            for part in parts:
                if part[0] == "response":
                    assert part[1] in steps[int(part[3])].response_ids
    finally:
        run.close()


def _answers_drawn(tools: tuple[tuple[str, str], ...]) -> int:
    """How many of 200 derandomised app scripts on an app with ``tools`` hold a client's Answer."""
    from dataclasses import replace

    from compaction_harness.spec.app_shape import AppShape
    from compaction_harness.spec.scripts import Answer, ScriptConfig
    from strategies import app_scripts

    config = replace(
        ScriptConfig(token_threshold=200, event_retention_size=1), app=AppShape(tools=tools)
    )
    drawn: list = []

    @settings(max_examples=200, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(app_scripts(config))
    def draw(script) -> None:
        drawn.append(any(isinstance(op, Answer) for op in script.operations))

    draw()
    return sum(drawn)


def test_app_scripts_draw_a_clients_answers_only_where_the_app_has_a_long_running_tool() -> None:
    # A client answers the calls an app leaves to it; an app whose tools all
    # return at once has none (found by a newcomer's app of one plain tool,
    # where a client's second answer to a finished call revived its turn).
    assert _answers_drawn((("plain", "lookup"),)) == 0
    assert _answers_drawn((("plain", "lookup"), ("long_running", "export"))) > 0


def test_a_rewind_forgets_the_requests_of_the_turns_it_undid_not_of_their_invocation() -> None:
    # From a newcomer's fresh-clone campaign (P0-2.13.0-362c857d, examples.support):
    # invocation a waits for a client; b opens; the client's answer resumes a,
    # which asks for a confirmation; a rewind before b undoes b and the resumed
    # turn of a (ADK's _apply_rewinds removes events by position), while a's
    # first events stay. The user cannot answer the undone request (ADK raises
    # "Function call not found"), nor a client answer the undone call again.
    from builders import answer, call, session, user

    from compaction_harness.sdk.python.interpreter import Asked, Interpreter, Pending
    from compaction_harness.spec.model import Call, Step

    first = Call("x", "export")
    undone = Call("t", "transfer")
    request = Call("r", "adk_request_confirmation")
    stored = session(
        user("a", 1),
        call("a", 2, "x", long_running=("x",), name="export"),
        user("b", 3),
        answer("a", 4, "x", author="user"),
        Step("a", "agent", 5, calls=(undone,)),
        Step("a", "agent", 6, calls=(request,), long_running=("r",)),
        Step("rw", "user", 7, rewind_before="b"),
    )
    run = Interpreter.__new__(Interpreter)
    run.pending = [Pending(first, "a", True)]
    run.answered = [Pending(undone, "a", False)]
    run.asked = [Asked(undone, request, "a")]
    run.openers = {"a": "hi", "b": "hi"}
    run.forget_rewound(stored)
    assert run.asked == [] and run.answered == []
    assert run.pending == [Pending(first, "a", True)]  # a's first events stay
    assert run.openers == {"a": "hi", "b": None}
