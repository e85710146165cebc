"""Real sessions, recorded by ADK's own ``Runner`` (``recorded_app``), judged
with the configuration and the agents they ran with: no false alarm where the
real run was right, the violation where it was not."""

from __future__ import annotations

import dataclasses
import json
import shlex
from importlib import metadata

import pytest
import recorded_app
from recorded_app import (
    CONFIRM,
    CONFIRM_AT_ONCE,
    CRASH,
    FAULT5,
    LONG_RUNNING,
    PARTIAL,
    PLAIN,
    TOKEN_CONFIG,
    record,
)

from compaction_harness.sdk.python.adk import (
    ShownText,
    from_adk_events,
    session_from_json,
    to_adk_event,
)
from compaction_harness.sdk.python.cases import judge
from compaction_harness.sdk.python.pipeline import (
    PipelineRun,
    ended_by_failure,
    recorded_case,
    run_pipeline_case,
)
from compaction_harness.spec.model import Call, Response, Session, Step
from compaction_harness.spec.pipeline_case import recorded_agents
from compaction_harness.spec.pipeline_checks import from_model
from compaction_harness.spec.prompt_checks import check_nothing_lost
from compaction_harness.store.fixtures import load_fixture
from compaction_harness.surfaces.cli import main

on_2_13 = pytest.mark.skipif(
    metadata.version("google-adk") != "2.13.0", reason="outcomes recorded for google-adk 2.13.0"
)
SLIDING = {"compaction_interval": 2, "overlap_size": 1}
#: A window at which PARTIAL's pause is no invocation end that compacts: the
#: session shows fault 7 alone (with SLIDING, the end-of-run compaction at the
#: pause also takes the paused invocation's message, see
#: test_a_paused_invocations_message_summarised_at_its_pause_is_the_waiting_invocation_fault).
SLIDING_3 = {"compaction_interval": 3, "overlap_size": 1}


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
    assert summaries(run_pipeline_case(case)) == []
    # Judged as the harness's own agent `agent` (what replay did before the
    # case carried its agents), ADK reads assistant's events as another
    # agent's: four false "opener missing" alarms.
    as_agent = run_pipeline_case(dataclasses.replace(case, agents=()))
    assert len(summaries(as_agent)) == 4
    assert all(
        "that opened the running invocation is not in the prompt" in s for s in summaries(as_agent)
    )


@on_2_13
def test_the_recorded_fault_5_still_fires():
    case = recorded_case(session_from_json(record(TOKEN_CONFIG, FAULT5)), TOKEN_CONFIG)
    found = summaries(run_pipeline_case(case))
    assert found == [
        "P2: the user message 'And in Oslo?' that opened the running invocation is not in the "
        "prompt"
    ]
    triaged = judge(case, run_pipeline_case(case))
    assert triaged.violations == []
    assert [f for _, f in triaged.known] == ["token-compaction-summarises-the-running-request"]


@on_2_13
def test_a_model_that_repeats_its_reply_gets_no_false_p4():
    # The client answers a long-running call after an "OK." turn: ADK's prompt
    # builder drops the events between the call and its newest answer
    # (_rearrange_events_for_latest_function_response), from the baseline as
    # from the prompt. Compared by text, another turn's "OK." made the
    # baseline seem to show two dropped "OK." events: two false P4 alarms.
    # (The one violation is real: the request of the resumed "Export again."
    # held only the summary, as the run's own requests show.)
    case = recorded_case(session_from_json(record(TOKEN_CONFIG, LONG_RUNNING)), TOKEN_CONFIG)
    assert recorded_app.lost_openers() == ["Export again."]
    assert summaries(run_pipeline_case(case)) == [
        "P2: the user message 'Export again.' that opened the running invocation is not in "
        "the prompt"
    ]


# -- a tool that raises: ADK's error event is no model reply -----------------------------
#: With this configuration the run where ``audit_ledger`` raises is right:
#: every request holds its running user message. With retention 0 it is not:
#: the compaction before the model call of "Hello?" summarises it.
CRASH_CONFIG = {"token_threshold": 30, "event_retention_size": 1}


def _replayed_requests(case) -> int:
    """How many model calls the replay of ``case`` makes for its agents."""
    run = PipelineRun(case.config, agents=case.agents)
    try:
        previous = None
        for step in case.session:
            run.append(step, opens_invocation=step.invocation != previous)
            previous = step.invocation
        return len(run.requests)
    finally:
        run.close()


@on_2_13
def test_a_tool_that_raises_gets_no_false_p2():
    # ADK stores the call, then a content-less error event of the root, and
    # calls no model after it. Read as a model reply, the replay invented a
    # model call there, ran token compaction before it and reported the
    # running 'Audit my ledger.' lost from a prompt that was never sent.
    session = session_from_json(record(CRASH_CONFIG, CRASH))
    assert recorded_app.lost_openers() == []  # every real request held its message
    errors = [(s.author, s.error, s.text, s.calls) for s in session if s.error is not None]
    assert errors == [("assistant", "LedgerUnreachable", None, ())]
    case = recorded_case(session, CRASH_CONFIG)
    assert summaries(run_pipeline_case(case)) == []
    assert _replayed_requests(case) == len(recorded_app.REQUESTS)


@on_2_13
def test_a_tool_that_raises_then_a_real_loss_is_reported():
    # Retention 0: the real run's request for "Hello?" held only the summary.
    # The replay reported the imaginary 'Audit my ledger.' and missed it.
    config = {**CRASH_CONFIG, "event_retention_size": 0}
    case = recorded_case(session_from_json(record(config, CRASH)), config)
    assert recorded_app.lost_openers() == ["Hello?"]
    assert summaries(run_pipeline_case(case)) == [
        "P2: the user message 'Hello?' that opened the running invocation is not in the prompt"
    ]


@on_2_13
def test_a_model_call_that_raises_ends_its_invocation_without_compaction():
    # The node runner stores Event(error_code=<class name>) when the model
    # call raises, and run_async raises: the Runner compacts nothing at that
    # end. Counted as a completed invocation, the replay compacted there and
    # its summaries were not the run's (NOREPRO with the right configuration).
    config = {"compaction_interval": 2, "overlap_size": 0}
    session = session_from_json(record(config, recorded_app.MODEL_RAISES))
    errors = [(s.author, s.error, s.text, s.calls) for s in session if s.error is not None]
    assert errors == [("assistant", "ModelUnreachable", None, ())]
    assert len(recorded_app.REQUESTS) == 7  # the raising call was sent
    outcome = run_pipeline_case(recorded_case(session, config))
    assert "recorded_differs" not in outcome.observed, outcome.observed.get("recorded_differs")
    assert summaries(outcome) == []


def test_only_an_error_code_the_model_sets_is_a_completed_model_call():
    # A finish or block reason (google.genai's FinishReason, BlockedReason)
    # comes with a response the model sent: the invocation completes.
    for code in ("SAFETY", "MAX_TOKENS", "PROHIBITED_CONTENT", "JAILBREAK"):
        assert not ended_by_failure(Step("i1", "assistant", 2.0, error=code))
    # A status or class name is an exception the node runner caught.
    for code in ("ModelUnreachable", "RESOURCE_EXHAUSTED", "INVOCATION_ABORTED"):
        assert ended_by_failure(Step("i1", "assistant", 2.0, error=code))
    # An error event with content is a reply, whatever its code.
    assert not ended_by_failure(Step("i1", "assistant", 2.0, text="Sorry.", error="Other"))


@on_2_13
@pytest.mark.parametrize("turns", [PARTIAL, (("Hi.", ["OK."]), *PARTIAL)])
@pytest.mark.parametrize("interval", [1, 2, 3])
def test_a_paused_invocations_message_summarised_at_its_pause_is_the_waiting_invocation_fault(
    turns, interval
):
    # The Runner compacts after every run_async, the one that paused too: a
    # sliding window there can take the paused invocation's user message, and
    # the model call that resumes it gets only the summary (P2). The replay
    # reports exactly what the real run's requests lost (recorded_app's log),
    # and, with no token threshold, not as fault 5 (token-threshold compaction
    # before a model call), whose fix cannot remove it: the fix that restores
    # a resumed invocation's request removes each loss, so each is that fault.
    config = {"compaction_interval": interval, "overlap_size": 1}
    case = recorded_case(session_from_json(record(config, turns)), config)
    found = run_pipeline_case(case)
    lost = recorded_app.lost_openers()
    assert "recorded_differs" not in found.observed
    openers = [
        f"P2: the user message {m!r} that opened the running invocation is not in the prompt"
        for m in lost
    ]
    assert [s for s in (str(v).splitlines()[0] for v in found.violations) if s in openers] == (
        openers
    )
    outcome = judge(case, run_pipeline_case(case))
    assert outcome.violations == []
    lost_by = {str(v).splitlines()[0]: f for v, f in outcome.known if v.expected in lost}
    assert lost_by == dict.fromkeys(openers, "compaction-summarises-a-waiting-invocations-request")


def test_an_error_event_survives_json_and_adk_events():
    step = Step("i1", "assistant", 2.0, error="RuntimeError")
    assert step.to_json() == {
        "invocation": "i1",
        "author": "assistant",
        "timestamp": 2.0,
        "error": "RuntimeError",
    }
    assert Step.from_json(step.to_json()) == step
    event = to_adk_event(step)
    assert (event.error_code, event.content) == ("RuntimeError", None)
    assert from_adk_events([event]).steps == (step,)
    assert "error=RuntimeError" in Session((step,)).render()
    # An event without an error writes no "error" key (fixtures keep their hash).
    plain = Step("i1", "assistant", 2.0, text="OK.")
    assert "error" not in plain.to_json() and to_adk_event(plain).error_code is None
    assert from_adk_events([to_adk_event(plain)]).steps == (plain,)


def test_only_an_error_after_a_call_or_adks_abort_seal_is_no_model_reply():
    call = Step("i1", "assistant", 1.0, calls=(Call("c1", "audit"),))
    failed = Step("i1", "assistant", 2.0, error="RuntimeError")
    # The tool raised: the flow was running the call's tools, no model call.
    assert not from_model(failed, before=call)
    # ADK's seal of an aborted invocation is the framework's, not the model's.
    assert not from_model(Step("i1", "assistant", 2.0, error="INVOCATION_ABORTED"))
    # After a user message or a function response, the model was called: its
    # response carried an error code (SAFETY, say) or the call raised.
    user = Step("i1", "user", 0.5, text="hi")
    answered = Step("i1", "assistant", 1.5, responses=(Response("c1", "audit"),))
    assert from_model(Step("i1", "assistant", 2.0, error="SAFETY"), before=user)
    assert from_model(failed, before=answered)
    assert from_model(Step("i1", "assistant", 2.0, text="OK.", error="MAX_TOKENS"), before=call)
    # The Runner compacts after an invocation only when its run completed.
    session = Session((user, call, failed, Step("i2", "user", 3.0, text="next")))
    assert recorded_case(session, TOKEN_CONFIG).ends == (4,)
    sealed = Step("i1", "assistant", 2.0, error="INVOCATION_ABORTED")
    assert recorded_case(Session((user, sealed)), TOKEN_CONFIG).ends == ()
    refused = Step("i1", "assistant", 2.0, error="SAFETY")
    assert recorded_case(Session((user, refused)), TOKEN_CONFIG).ends == (2,)


def _prompt(*contents):
    return [(role, tuple(("text", ShownText(t, e)) for t, e in parts)) for role, parts in contents]


def test_p4_tells_two_events_with_one_text_apart():
    steps = Session(
        (
            Step("i1", "user", 1.0, text="hi"),
            Step("i1", "agent", 2.0, text="OK."),
            Step("i2", "user", 3.0, text="again"),
            Step("i2", "agent", 4.0, text="OK."),
        )
    )
    baseline = _prompt(
        ("user", [("hi", "0")]),
        ("model", [("OK.", "1")]),
        ("user", [("again", "2")]),
        ("model", [("OK.", "3")]),
    )
    # The first "OK." is gone and no summary took it: lost, although the
    # prompt still carries its text (the second reply's).
    lost = _prompt(("user", [("hi", "0")]), ("user", [("again", "2")]), ("model", [("OK.", "3")]))
    assert [v.positions for v in check_nothing_lost(steps, lost, [], baseline)] == [(1,)]
    assert check_nothing_lost(steps, baseline, [], baseline) == []
    # A text part that names no event (relayed context) shows its text's events.
    relayed = _prompt(("user", [("hi", ""), ("OK.", ""), ("again", "")]))
    assert check_nothing_lost(steps, relayed, [], baseline) == []


# -- minimize with the configuration the session ran with ---------------------------------
def _minimize(capsys, tmp_path, text: str, *argv: str) -> tuple[int, str, str]:
    path = tmp_path / "session.json"
    path.write_text(text, encoding="utf-8")
    code = main(["minimize", str(path), "--out", str(tmp_path / "out"), *argv])
    out, err = capsys.readouterr()
    return code, out, err


@on_2_13
def test_minimize_judges_a_sliding_window_session_without_token_splits(capsys, tmp_path):
    # Without its configuration, minimize tried every retention at every
    # invocation end and called this session a U5 failure (fault 3), though
    # its App has no token threshold: ADK never makes that call on it.
    # What it reports instead is real: the requests of the two resumed
    # exports held no "Export ..." message (the run's own requests show it).
    text = record(SLIDING, LONG_RUNNING)
    assert recorded_app.lost_openers() == ["Export the report.", "Export again."]
    code, out, err = _minimize(
        capsys, tmp_path, text, "--compaction-interval", "2", "--overlap-size", "1"
    )
    assert (code, err) == (0, ""), out
    assert "U5" not in out
    assert "fails P2 on google-adk 2.13.0 as given" in out
    assert "'compaction_interval': 2, 'overlap_size': 1, 'token_threshold': None" in out
    code, out, err = _minimize(
        capsys, tmp_path, text, "--config", json.dumps(SLIDING), "--invariant", "U5"
    )
    assert (code, out) == (2, "") and err.count("\n") == 1 and "does not apply" in err


@on_2_13
def test_minimize_judges_token_splits_with_the_configured_retention(capsys, tmp_path):
    code, out, err = _minimize(
        capsys, tmp_path, record(TOKEN_CONFIG, PLAIN), "--config", json.dumps(TOKEN_CONFIG)
    )
    assert (code, err) == (1, ""), out
    assert "U5 on the 1 token-threshold split(s) ADK made" in out
    assert "token_threshold=110, event_retention_size=2" in out


@on_2_13
@pytest.mark.parametrize(
    ("config", "turns", "fault"),
    [
        (SLIDING_3, PARTIAL, "partial-answer-to-parallel-calls-makes-an-invalid-request"),
        (TOKEN_CONFIG, FAULT5, "token-compaction-summarises-the-running-request"),
    ],
)
def test_minimize_reports_the_pipeline_fault_the_real_run_had(
    capsys, tmp_path, config, turns, fault
):
    # Checking only U1 to U5, minimize said these sessions hold.
    text = record(config, turns)
    code, out, err = _minimize(
        capsys, tmp_path, text, "--config", json.dumps(config), "--replay-examples", "30"
    )
    assert (code, err) == (0, ""), out
    assert " fails P2 on google-adk 2.13.0 as given: P2: " in out
    assert f"this is the known upstream fault {fault}" in out
    (path,) = (tmp_path / "out").glob("P2-*.json")
    fixture = load_fixture(path)
    assert fixture.kind == "pipeline" and fixture.known_fault == fault
    assert fixture.case.agents == ("agent0",) and fixture.case.config["compaction_interval"] == (
        config.get("compaction_interval")
    )
    assert "assistant" not in path.read_text(encoding="utf-8")  # anonymised
    assert main(["replay", str(path)]) == 0  # XFAIL: judged with its configuration and agents
    assert "XFAIL" in capsys.readouterr().out


@on_2_13
def test_minimize_gives_every_invariant_a_session_breaks_as_given(capsys, tmp_path, monkeypatch):
    # A newcomer's recorded session broke U5, P2 and P3; `check SESSION.json`
    # (minimize with the app's configuration) named only U5, the first. A P3
    # planted beside the session's real P2 (fault 5) is now reported too.
    from compaction_harness.spec.invariants import Violation
    from compaction_harness.surfaces import minimize as minimize_module

    real = minimize_module.check
    stall = Violation("P3", "a stall planted by this test")

    def with_a_stall(case):
        verdict = real(case)
        known = (*verdict.known, (stall, "compaction-stops-while-a-call-waits"))
        return dataclasses.replace(verdict, known=known)

    monkeypatch.setattr(minimize_module, "check", with_a_stall)
    text = record(TOKEN_CONFIG, FAULT5)
    code, out, err = _minimize(
        capsys, tmp_path, text, "--config", json.dumps(TOKEN_CONFIG), "--replay-examples", "5"
    )
    assert (code, err) == (0, ""), out
    assert " fails P2 on google-adk 2.13.0 as given: P2: " in out
    (line,) = [line for line in out.splitlines() if line.startswith("it also fails")]
    assert line.startswith(
        "it also fails P3 as given (known upstream fault compaction-stops-while-a-call-waits): "
        "P3: a stall planted by this test (`python -m compaction_harness minimize "
    ), line
    # The hint is a command that runs as printed (a newcomer's `minimize
    # --invariant P3` alone was refused: no configuration): it shrinks the P3.
    command = line.split("(`", 1)[1].rsplit("` shrinks that one)", 1)[0]
    assert f"--config '{json.dumps(TOKEN_CONFIG)}'" in command and command.endswith(
        "--invariant P3"
    )
    argv = shlex.split(command)[3:]  # after `python -m compaction_harness`
    assert main([*argv, "--replay-examples", "5", "--out", str(tmp_path / "p3")]) == 0
    assert "fails P3 on google-adk 2.13.0 as given: P3: a stall planted" in capsys.readouterr().out


def test_minimize_refuses_user_as_an_agent_in_one_line(capsys, tmp_path):
    code, out, err = _minimize(
        capsys,
        tmp_path,
        "[]",
        "--token-threshold",
        "10",
        "--event-retention-size",
        "1",
        "--agent",
        "user",
    )
    assert (code, out) == (2, "") and err.count("\n") == 1 and "not 'user'" in err, err


def test_minimize_without_a_configuration_needs_a_unit_invariant(capsys, tmp_path):
    code, out, err = _minimize(capsys, tmp_path, "[]", "--agent", "assistant", "--invariant", "U3")
    assert (code, out) == (2, "") and err.count("\n") == 1 and "--config" in err
    code, out, err = _minimize(capsys, tmp_path, "[]", "--invariant", "P2")
    assert (code, out) == (2, "") and err.count("\n") == 1 and "required without" in err


@pytest.mark.parametrize(
    ("config", "problem"),
    [
        ("{", "invalid JSON"),
        ('{"interval": 2}', "unknown key 'interval'"),
        ('{"token_threshold": -1}', "token_threshold: expected a non-negative integer"),
        ("[1]", "neither a JSON object nor a readable file"),
        ('{"overlap_size": 1}', "no trigger"),
    ],
)
def test_minimize_bad_configuration_is_exit_2_and_one_line(capsys, tmp_path, config, problem):
    code, out, err = _minimize(capsys, tmp_path, "[]", "--config", config)
    assert (code, out) == (2, "") and err.count("\n") == 1 and problem in err, err


# -- replay of a recorded session with its configuration ---------------------------------
@on_2_13
def test_replay_judges_recorded_sessions_with_their_configuration(capsys, tmp_path):
    sessions = {
        "plain": record(TOKEN_CONFIG, PLAIN),
        "fault5": record(TOKEN_CONFIG, FAULT5),
        "long": record(TOKEN_CONFIG, LONG_RUNNING),
    }
    for name, text in sessions.items():
        (tmp_path / f"{name}.json").write_text(text, encoding="utf-8")
    code = main(["replay", str(tmp_path), "--config", json.dumps(TOKEN_CONFIG)])
    out, err = capsys.readouterr()
    assert (code, err) == (0, ""), out
    labels = {
        line.split()[1]: line.split()[0] for line in out.splitlines() if "on google-adk" in line
    }
    assert labels == {
        str(tmp_path / "fault5.json"): "XFAIL",
        # The resumed "Export again." request held only the summary.
        str(tmp_path / "long.json"): "XFAIL",
        str(tmp_path / "plain.json"): "ok",
    }
    assert "token-compaction-summarises-the-running-request" in out


@on_2_13
def test_replay_of_a_recorded_session_reads_its_agents_names(capsys, tmp_path):
    path = tmp_path / "partial.json"
    path.write_text(record(SLIDING_3, PARTIAL), encoding="utf-8")
    code = main(["replay", str(path), "--compaction-interval", "3", "--overlap-size", "1"])
    out = capsys.readouterr().out
    assert code == 0 and "XFAIL" in out and "partial-answer-to-parallel-calls" in out
    # Named wrongly, ADK would read the root's own calls as another agent's
    # and the fault the real run had would go unseen (the names decide the
    # verdict): a name no event of the session bears out is refused instead.
    for wrong in (["--agent", "agent"], ["--agent", "asistant", "--agent", "agent"]):
        code = main(["replay", str(path), "--config", json.dumps(SLIDING_3), *wrong])
        out, err = capsys.readouterr()
        assert (code, out) == (2, "") and err.count("\n") == 1, err
        assert "wrote no event of this session (its agents: assistant)" in err


@on_2_13
def test_minimize_refuses_an_agent_the_session_does_not_bear_out(capsys, tmp_path):
    session = tmp_path / "session.json"
    session.write_text(record(SLIDING, PARTIAL), encoding="utf-8")
    # A typo of the only agent: judged as an agent with no events, a run that
    # never happened (a newcomer's minimize wrote a U5 fixture from one).
    argv = ["minimize", str(session), "--config", json.dumps(SLIDING), "--agent", "asistant"]
    code = main([*argv, "--out", str(tmp_path / "out")])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "") and err.count("\n") == 1, err
    assert "--agent: agent 'asistant' wrote no event of this session" in err
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


# -- the recorded summaries: their sizes, and evidence of the configuration ----------------
EVERY_TURN = {"compaction_interval": 1, "overlap_size": 0}
#: A real summariser's summary: far longer than the harness's ``summary#N``.
LONG_SUMMARY = "The user asked about the weather in several cities. " * 6


def _recorded_ranges(session: Session) -> list[tuple[float, float]]:
    return [(s.compaction.start, s.compaction.end) for s in session if s.compaction is not None]


@on_2_13
def test_a_recording_with_long_summaries_replays_the_summaries_it_stored():
    # ADK weighs the next range against the previous summary's size
    # (_is_range_worth_compacting): the run skipped compactions after its long
    # summaries that a replay with 9-character summary#N texts made (9, not 4).
    session = session_from_json(record(EVERY_TURN, PLAIN, summary=LONG_SUMMARY))
    stored = _recorded_ranges(session)
    assert len(stored) == 4
    outcome = run_pipeline_case(recorded_case(session, EVERY_TURN))
    assert summaries(outcome) == []
    steps = [s for s in session if s.compaction is None]
    stored_as = outcome.observed["stored"]  # per stored position, the appended step's index
    times = [[steps[stored_as[p]].timestamp for p in g] for g in outcome.observed["summaries"]]
    replayed = [(min(t), max(t)) for t in times]
    assert replayed == stored
    assert "recorded_differs" not in outcome.observed


@on_2_13
@pytest.mark.parametrize(
    "config",
    [
        {"compaction_interval": 2, "overlap_size": 0},
        {"token_threshold": 100, "event_retention_size": 1},
    ],
)
def test_a_recording_replayed_with_another_configuration_is_not_judged(capsys, tmp_path, config):
    # The summaries the run stored are evidence of its configuration: a
    # replay that makes others was given the wrong one, and what it shows is
    # not ADK's fault (with a token threshold it said "ok").
    path = tmp_path / "session.json"
    path.write_text(record(EVERY_TURN, PLAIN, summary=LONG_SUMMARY), encoding="utf-8")
    code = main(["replay", str(path), "--config", json.dumps(config)])
    out, err = capsys.readouterr()
    assert (code, err) == (3, ""), out
    verdict, total = out.splitlines()
    assert verdict.startswith(f"NOREPRO {path} on google-adk 2.13.0: the replay's compactions ")
    assert "differ from the recorded run's: recorded 4, replayed " in verdict
    assert "first difference at summary 1 (recorded covers #0-#3, replayed " in verdict
    assert verdict.endswith(
        "); check --config / --agent (if they are right, the replay itself differs: "
        "event sizes it does not carry, say)"
    )
    assert total.endswith("1 not replayed as recorded (check --config / --agent)")
    code, out, err = _minimize(capsys, tmp_path, path.read_text(), "--config", json.dumps(config))
    assert (code, err) == (3, "") and out.count("\n") == 1, out
    assert "cannot be judged on google-adk 2.13.0: the replay's compactions differ" in out
    assert not list((tmp_path / "out").glob("*.json"))  # no fixture written
    # With the configuration it ran with, the same session holds.
    assert main(["replay", str(path), "--config", json.dumps(EVERY_TURN)]) == 0
    assert capsys.readouterr().out.startswith("ok ")


@on_2_13
def test_minimize_shrinks_with_the_recorded_summaries_sizes(capsys, tmp_path):
    # The fixture minimize writes carries the sizes, so replay judges it as
    # minimize did.
    text = record(EVERY_TURN, PARTIAL, summary=LONG_SUMMARY)
    code, out, err = _minimize(
        capsys, tmp_path, text, "--config", json.dumps(EVERY_TURN), "--replay-examples", "20"
    )
    assert (code, err) == (0, ""), out
    (path,) = (tmp_path / "out").glob("P2-*.json")
    sizes = load_fixture(path).case.summary_sizes
    assert sizes and {c for _, _, c in sizes} == {len(LONG_SUMMARY)}
    assert main(["replay", str(path)]) == 0


def test_replay_bad_configuration_is_exit_2_and_one_line(capsys, tmp_path):
    path = tmp_path / "session.json"
    path.write_text("[]", encoding="utf-8")
    for argv in (
        ["--agent", "assistant"],
        ["--config", '{"overlap_size": 1}'],
        ["--config", "{"],
        ["--token-threshold", "10", "--driver", "runner"],
        ["--token-threshold", "10", "--agent", "user"],
    ):
        code = main(["replay", str(path), *argv])
        out, err = capsys.readouterr()
        assert (code, out) == (2, "") and err.count("\n") == 1, (argv, err)


def test_a_listed_sub_agents_reply_follows_its_own_model_call():
    from compaction_harness.sdk.python.pipeline import PipelineRun

    steps = (
        Step("i1", "user", 1.0, text="hi"),
        Step("i1", "assistant", 2.0, text="OK.", prompt_tokens=5),
        Step("i1", "helper", 3.0, text="OK.", prompt_tokens=7),
        Step("i1", "stranger", 4.0, text="OK."),
    )
    run = PipelineRun(
        TOKEN_CONFIG | {"compaction_interval": None, "overlap_size": None},
        agents=("assistant", "helper"),
    )
    try:
        for k, step in enumerate(steps):
            assert run.append(step, opens_invocation=k == 0) == []
        # An author the case does not list is judged as the root's (as before).
        assert [(agent, branch) for agent, branch, _ in run.requests] == [
            ("assistant", None),
            ("helper", None),
            ("assistant", None),
        ]
    finally:
        run.close()


@on_2_13
def test_a_sub_agent_is_compacted_for_as_itself_before_its_model_call():
    # ADK's flow compacts before a model call for the agent making it, by that
    # agent's own latest count (_latest_prompt_token_count(agent_name=...)):
    # the helper's count is over the threshold, the root's is not.
    from compaction_harness.sdk.python.pipeline import PipelineRun

    steps = [Step("i1", "user", 1.0, text="hi")]
    for k in range(4):
        steps.append(Step("i1", "assistant", 2.0 + k, text=f"root {k}", prompt_tokens=5))
        steps.append(Step("i1", "helper", 2.5 + k, text=f"helper {k}", prompt_tokens=500))
    run = PipelineRun(
        {"compaction_interval": None, "overlap_size": None} | TOKEN_CONFIG,
        agents=("assistant", "helper"),
    )
    try:
        for k, step in enumerate(steps):
            run.append(step, opens_invocation=k == 0)
        assert run.pipeline.summaries, "no summary before the helper's model calls"
    finally:
        run.close()


def test_the_u5_search_keeps_the_configured_retention():
    # Without a configuration the shrinker drew the retention too: a session
    # run with event_retention_size=2 came back as a fixture with 5.
    from hypothesis import find, settings
    from hypothesis.errors import NoSuchExample

    from compaction_harness.sdk.python.unit import TokenCase
    from compaction_harness.surfaces.minimize import _cases

    session = Session(tuple(Step("i1" if k < 3 else "i2", "user", float(k)) for k in range(6)))
    seen: set[int] = set()

    def note(case) -> bool:
        if isinstance(case, TokenCase):  # an empty sub-sequence draws no call
            seen.add(case.retention)
        return False

    with pytest.raises(NoSuchExample):  # nothing is sought: every draw is seen
        find(_cases(session, "U5", 2), note, settings=settings(max_examples=50, database=None))
    assert seen == {2}


def test_an_exported_error_event_keeps_its_error_code():
    from google.adk.events.event import Event
    from google.genai import types

    from compaction_harness.surfaces._pysource import Strings
    from compaction_harness.surfaces.export import _events_lines

    step = Step("i1", "assistant", 2.0, error="RuntimeError")
    source = "\n".join(line.strip() for line in _events_lines(Session((step,)), Strings()))
    scope: dict = {"Event": Event, "types": types}
    exec(source, scope)
    assert from_adk_events(scope["events"]).steps == (step,)


@on_2_13
def test_replay_of_a_session_where_a_tool_raised(capsys, tmp_path):
    # What a user runs on such a session: `replay SESSION --config CONFIG`.
    for retention, verdict in ((1, "ok "), (0, "XFAIL ")):
        config = {**CRASH_CONFIG, "event_retention_size": retention}
        path = tmp_path / f"crash-r{retention}.json"
        path.write_text(record(config, CRASH), encoding="utf-8")
        code = main(["replay", str(path), "--config", json.dumps(config), "--agent", "assistant"])
        out = capsys.readouterr().out
        assert code == 0 and out.startswith(verdict), out
        assert "'Audit my ledger.'" not in out
        assert ("'Hello?'" in out) == (retention == 0), out


def test_the_case_a_run_hands_to_known_fault_checks_keeps_the_summary_sizes():
    # A known fault's predicate replays run.case(): without the sizes it
    # would replay the session with summary#N texts, which ADK compacts after
    # where the run's summaries did not.
    from compaction_harness.sdk.python.pipeline import PipelineRun

    sizes = ((1.0, 2.0, 300),)
    run = PipelineRun(
        EVERY_TURN | {"token_threshold": None, "event_retention_size": None}, summary_sizes=sizes
    )
    try:
        run.append(Step("i1", "user", 1.0, text="hi"), opens_invocation=True)
        assert run.case().summary_sizes == sizes
    finally:
        run.close()


def test_a_fixture_with_malformed_summary_sizes_is_refused_in_one_line():
    from compaction_harness.sdk.python.entry import _parse_pipeline
    from compaction_harness.spec.model import ModelError

    config = {**EVERY_TURN, "token_threshold": None, "event_retention_size": None}
    case = _parse_pipeline(
        {"config": config, "ends": [], "summary_sizes": [[1.0, 2.0, 30]]}, Session()
    )
    assert case.summary_sizes == ((1.0, 2.0, 30),)
    for bad in ([[1.0, 2.0]], [[1.0, 2.0, -1]], [[1.0, 2.0, "30"]], {"a": 1}):
        with pytest.raises(ModelError, match=r"call\.summary_sizes: expected a list of"):
            _parse_pipeline({"config": config, "ends": [], "summary_sizes": bad}, Session())


def _confirmation_ends(case) -> list[int]:
    """Where the replay of ``case`` ends an invocation just before the
    user's answer of the same invocation (a resumption)."""
    steps = case.session
    return [
        k
        for k in case.ends
        if 0 < k < len(steps)
        and steps[k].author == "user"
        and steps[k].invocation == steps[k - 1].invocation
    ]


@on_2_13
def test_a_pause_for_confirmation_ends_its_run_async():
    # The Runner compacts after every run_async that completes, the one that
    # paused for the confirmation too; the user's answer resumes the same
    # invocation id in a new run_async. Read as one run, the replay had no
    # end at the pause and made other summaries than the run (NOREPRO).
    config = {"compaction_interval": 2, "overlap_size": 0}
    session = session_from_json(record(config, CONFIRM_AT_ONCE))
    case = recorded_case(session, config)
    outcome = run_pipeline_case(case)
    assert "recorded_differs" not in outcome.observed
    assert len(_confirmation_ends(case)) == 1
    # A summary sits at the pause: the run stored it before the answer.
    pause = _confirmation_ends(case)[0]
    assert pause in [k for k, _, _ in case.recorded]


@on_2_13
def test_a_resumed_invocation_keeps_its_opener_for_p2():
    # "Pay the bill." pauses for a confirmation, "Hello?" runs and its
    # compaction summarises "Pay the bill."; the confirmation resumes that
    # invocation, whose request holds only the summary. The resumed run of
    # the invocation starts with the user's function response, so the replay
    # judged it without its opener and said nothing.
    config = {"compaction_interval": 1, "overlap_size": 0}
    case = recorded_case(session_from_json(record(config, CONFIRM)), config)
    assert recorded_app.lost_openers() == ["Pay the bill."]
    outcome = run_pipeline_case(case)
    assert "recorded_differs" not in outcome.observed
    assert summaries(outcome) == [
        "P2: the user message 'Pay the bill.' that opened the running invocation is not in "
        "the prompt"
    ]
    # Resumed right away, with another window: the pause's own compaction
    # summarises the message (the run lost it too).
    config = {"compaction_interval": 2, "overlap_size": 0}
    case = recorded_case(session_from_json(record(config, CONFIRM_AT_ONCE)), config)
    assert recorded_app.lost_openers() == ["Pay the bill."]
    assert summaries(run_pipeline_case(case)) == [
        "P2: the user message 'Pay the bill.' that opened the running invocation is not in "
        "the prompt"
    ]


@on_2_13
def test_a_resumed_invocation_that_kept_its_opener_is_ok():
    config = {"compaction_interval": 1, "overlap_size": 0}
    case = recorded_case(session_from_json(record(config, CONFIRM_AT_ONCE)), config)
    assert recorded_app.lost_openers() == []
    assert _confirmation_ends(case)
    outcome = run_pipeline_case(case)
    assert summaries(outcome) == [] and "recorded_differs" not in outcome.observed
