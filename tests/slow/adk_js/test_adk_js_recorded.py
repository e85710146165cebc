"""Recorded google-adk sessions (``pipeline`` fixtures) and client compaction
records on ADK for TypeScript (:mod:`compaction_harness.sdk.js.adk_js_recorded`,
``adk_js.client_record_event``).

A recorded session replays event by event with model calls where the Python
pipeline makes them; the same checkers and the same triage judge it as a
script's run. The tests show one that holds, one that fails only as a known
ADK-JS fault, that the checkers fire on a deliberately broken mapping, that
what ADK-JS cannot hold says so with the step, and that a client's record is
read by ADK-JS as its own compacted events are. Needs Node and the package
(``make js-env``): collected by ``make test SDK=js``.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from compaction_harness.sdk.js import (
    adk_js,
    adk_js_recorded,
    checks,
    differential_js,
    js_fixes,
    trigger,
)
from compaction_harness.sdk.js import events as js_events
from compaction_harness.sdk.js.adk_js import NotApplicable
from compaction_harness.spec.model import Call, Compaction, Response, Session, Step
from compaction_harness.spec.pipeline_case import PipelineCase
from compaction_harness.spec.pipeline_checks import covered_by_records, from_model
from compaction_harness.spec.scripts import (
    Answer,
    Ask,
    Calls,
    ClientRecord,
    Open,
    Reply,
    Script,
    ScriptConfig,
    Skew,
    Text,
)
from compaction_harness.store.fixtures import load_fixture
from compaction_harness.surfaces import cross_sdk

REPROS = Path(__file__).parents[2] / "repros"


def config(threshold=None, retention=None, interval=None, overlap=None) -> dict:
    return {
        "compaction_interval": interval,
        "overlap_size": overlap,
        "token_threshold": threshold,
        "event_retention_size": retention,
    }


#: Two invocations of a user message and a text reply; threshold 1, two
#: events kept: the second model call summarises the first user message only.
HOLDS = PipelineCase(
    config(1, 2),
    Session(
        (
            Step("i1", "user", 1.0, text="user 1"),
            Step("i1", "agent", 2.0, text="model 2", prompt_tokens=5),
            Step("i2", "user", 3.0, text="user 3"),
            Step("i2", "agent", 4.0, text="model 4", prompt_tokens=10),
        )
    ),
    ends=(2,),
)
#: One invocation: a call answered at once, then text; one event kept: the
#: call is kept with its answer, and the running turn's message is summarised.
OPENER_SUMMARISED = PipelineCase(
    config(1, 1),
    Session(
        (
            Step("i1", "user", 1.0, text="user 1"),
            Step("i1", "agent", 2.0, calls=(Call("c1", "lookup"),), prompt_tokens=5),
            Step("i1", "agent", 3.0, responses=(Response("c1", "lookup"),)),
            Step("i1", "agent", 4.0, text="model 4", prompt_tokens=10),
        )
    ),
    ends=(4,),
)


def faults(run: adk_js.JsRun) -> list[str | None]:
    return [adk_js.known_fault(run, v) for v in adk_js.check_run(run)]


def named(run: adk_js.JsRun, violation) -> set[str]:
    """Every known fault the triage names for ``violation`` of ``run``: the
    faults of each fix that removes it (``details["evidence"]``, "fix A+B"),
    else the recogniser's."""
    fault = adk_js.known_fault(run, violation)
    evidence = str(violation.details.get("evidence", ""))
    if evidence.startswith("fix "):
        return {f for n in evidence[4:].split("+") for f in js_fixes.fix_named(n).faults}
    return {fault} if fault else set()


# -- the mapping -------------------------------------------------------------------
def test_a_recorded_session_replays_in_order_with_model_calls_where_the_pipeline_makes_them():
    built = adk_js_recorded.recorded_actions(HOLDS)
    appended = [a["event"]["id"] for a in built.actions if a["do"] == "append"]
    assert appended == ["e0", "e1", "e2", "e3"]
    # One model call right before each step the Python pipeline calls the
    # model for, with the clock at that step's timestamp (ms).
    calls = [(k, a["now"]) for k, a in enumerate(built.actions) if a["do"] == "model_call"]
    for k, now in calls:
        following = built.actions[k + 1]["event"]
        assert following["timestamp"] == now
    expected = [s.timestamp * 1000 for s in HOLDS.session.steps if from_model(s)]
    assert [now for _, now in calls] == expected
    # An invocation starts at each new invocation id; the opener is the user's text.
    assert [a["id"] for a in built.actions if a["do"] == "invocation"] == ["i1", "i2"]
    assert list(built.openers.values()) == ["user 1", "user 3"]
    # The recorded events are sent as recorded (ids, times, counts).
    first_reply = built.actions[3]["event"]
    assert first_reply["usageMetadata"] == {"promptTokenCount": 5}


def test_an_end_starts_a_new_invocation_even_with_the_same_id():
    steps = Session((Step("i1", "user", 1.0, text="u"), Step("i1", "agent", 2.0, text="m")))
    built = adk_js_recorded.recorded_actions(PipelineCase(config(1, 1), steps, ends=(1,)))
    assert [a["do"] for a in built.actions] == [
        "invocation",
        "append",
        "invocation",
        "model_call",
        "append",
    ]
    # The invocation the end opened has no user message: the call has no opener.
    assert list(built.openers.values()) == [None]


def test_a_sub_agent_step_is_preceded_by_that_sub_agent_model_call_on_its_branch():
    steps = Session(
        (
            Step("i1", "user", 1.0, text="u"),
            Step("i1", "a", 2.0, calls=(Call("c1", "lookup"),), branch="team.a"),
            Step("i1", "a", 3.0, responses=(Response("c1", "lookup"),), branch="team.a"),
            Step("i1", "a", 4.0, text="a says", branch="team.a"),
        )
    )
    built = adk_js_recorded.recorded_actions(PipelineCase(config(1, 1), steps, ends=()))
    calls = [a for a in built.actions if a["do"] == "model_call"]
    # Before the call and the text, not before the tool's result.
    assert [(c["agent"], c["branch"], c["now"]) for c in calls] == [
        ("a", "team.a", 2000.0),
        ("a", "team.a", 4000.0),
    ]
    assert list(built.openers.values()) == [None, None]  # only the root agent's is checked


def test_a_recorded_session_that_holds_on_adk_js():
    run = adk_js_recorded.run_recorded(HOLDS)
    assert run.compactor == adk_js.JsCompactor(
        "token_based", {"tokenThreshold": 1, "eventRetentionSize": 2}
    )
    assert run.exception is None
    assert [len(c["summaries"]) for c in run.calls] == [0, 1]
    assert run.summaries() == [(3, [0], [])]  # the first user message, alone
    # Per stored event, the recorded step it came from (None: ADK-JS's summary).
    assert run.origin == [0, 1, 2, None, 3]
    assert run.prompt(run.calls[1]) == [
        ("user", (("text", "[Previous Context Summary]:\nsummary#0"),)),
        ("model", (("text", "model 2"),)),
        ("user", (("text", "user 3"),)),
    ]
    assert adk_js.check_run(run) == []
    assert adk_js_recorded.check_recorded(HOLDS).violations == []


def test_a_recorded_session_that_fails_only_as_a_known_adk_js_fault():
    run = adk_js_recorded.run_recorded(OPENER_SUMMARISED)
    found = adk_js.check_run(run)
    assert [(v.invariant, v.details.get("cause")) for v in found] == [("P2", "opener missing")]
    assert faults(run) == ["js-opener-summarised"]
    outcome = adk_js_recorded.check_recorded(OPENER_SUMMARISED)
    assert outcome.violations == [] and [f for _, f in outcome.known] == ["js-opener-summarised"]


def test_the_checkers_fire_on_a_deliberately_broken_mapping():
    def loses_the_second_message(case: PipelineCase) -> adk_js_recorded.RecordedActions:
        built = adk_js_recorded.recorded_actions(case)
        # The user's message of i2 is never stored (an invocation start in
        # its place keeps every action's index, so the openers stay put).
        built.actions = [
            {"do": "invocation", "id": "i2"}
            if a["do"] == "append" and a["event"]["id"] == "e2"
            else a
            for a in built.actions
        ]
        return built

    run = adk_js_recorded.run_recorded(HOLDS, mapping=loses_the_second_message)
    (violation,) = adk_js.new_violations(run)
    assert (violation.invariant, violation.details["cause"]) == ("P2", "opener missing")
    assert adk_js.known_fault(run, violation) is None


@pytest.mark.parametrize(
    ("step", "reason"),
    [
        (Step("i1", "user", 2.0, rewind_before="i1"), "rewinds"),
        (
            Step("i1", "agent", 2.0, responses=(Response("c", "t"),), confirmations=("c",)),
            "adk-python's tool confirmation here: the placeholder does not follow its call",
        ),
        (
            Step("i1", "agent", 2.0, calls=(Call("adk-1", "adk_request_credential"),)),
            "adk-python's tool confirmation and credential request events",
        ),
        (Step("i1", "agent", 2.0, text="m", isolation_scope="s"), "isolation scopes"),
    ],
    ids=["rewind", "confirmation", "credential", "isolation-scope"],
)
def test_a_step_adk_js_cannot_represent_says_so_and_names_it(step, reason):
    steps = Session((Step("i1", "user", 1.0, text="u"), step))
    with pytest.raises(NotApplicable, match=rf"ADK-JS cannot represent {reason}.*recorded step 1"):
        adk_js_recorded.recorded_actions(PipelineCase(config(1, 1), steps, ends=()))


def test_the_compactor_is_the_one_a_script_of_the_same_configuration_gets():
    compactor, label = adk_js_recorded.compactor_of(HOLDS)
    assert compactor == adk_js.compactor_for(
        Script(ScriptConfig(token_threshold=1, event_retention_size=2))
    )
    assert label == ""
    sliding = PipelineCase(config(20, 0, interval=2, overlap=3), HOLDS.session, ends=())
    compactor, label = adk_js_recorded.compactor_of(sliding)
    assert compactor.options == {"tokenThreshold": 0, "eventRetentionSize": 3}
    assert label == "stand-in: token_based threshold=0, retention=3"
    with pytest.raises(NotApplicable, match="no compaction trigger"):
        adk_js_recorded.compactor_of(PipelineCase(config(), HOLDS.session, ends=()))


# -- the cross-SDK table's recorded rows ------------------------------------------------
def test_the_recorded_fixtures_get_a_verdict_on_adk_js():
    row = cross_sdk.cross_row(load_fixture(REPROS / "P6-2.2.0-c6bea3ce436d7466.json"), {})
    assert (row.verdict, row.detail) == (
        "holds",
        "(stand-in: token_based threshold=0, retention=1)",
    )
    row = cross_sdk.cross_row(load_fixture(REPROS / "P2-2.13.0-3c3afe701381041f.json"), {})
    assert (row.verdict, row.detail) == ("known", "js-retention-zero")


def test_a_recorded_fixture_fails_for_what_no_known_adk_js_fault_explains(monkeypatch):
    fixture = load_fixture(REPROS / "P3-2.11.0-b05d345640cc27ad.json")
    row = cross_sdk.cross_row(fixture, {})
    assert (row.verdict, row.detail) == (
        "known",
        "js-opener-summarised (stand-in: token_based threshold=0, retention=1)",
    )
    # Classified by fix, a fault is known by its fix in the index, not by its
    # entry in KNOWN_FAULTS: with the triage off nothing explains the P2.
    monkeypatch.setenv("HARNESS_KNOWN_FAULTS", "off")
    row = cross_sdk.cross_row(fixture, {})
    assert row.verdict == "FAILS" and row.detail.startswith("P2:")


# -- recorded tool confirmations, translated into ADK-JS's shape ---------------------------
#: adk-python's confirmation: the call, the tool's placeholder response
#: carrying the confirmation key, the synthetic long-running call; the
#: invocation ends; the user's reply to the synthetic id opens the next one,
#: then the tool's real result and the model's reply.
CONFIRMED = PipelineCase(
    config(1000, 1),
    Session(
        (
            Step("i1", "user", 1.0, text="user 1"),
            Step("i1", "agent", 2.0, calls=(Call("call_0", "transfer"),), prompt_tokens=5),
            Step(
                "i1",
                "agent",
                3.0,
                responses=(Response("call_0", "transfer"),),
                confirmations=("call_0",),
            ),
            Step(
                "i1",
                "agent",
                4.0,
                calls=(Call("adk-r", "adk_request_confirmation"),),
                long_running=("adk-r",),
            ),
            Step("i2", "user", 5.0, responses=(Response("adk-r", "adk_request_confirmation"),)),
            Step("i2", "agent", 6.0, responses=(Response("call_0", "transfer"),)),
            Step("i2", "agent", 7.0, text="model 1", prompt_tokens=10),
        )
    ),
    ends=(4,),
)
#: The same conversation as a script (ids numbered per turn, as recorded).
ASKED = Script(
    ScriptConfig(token_threshold=1000, event_retention_size=1, call_ids="per_turn"),
    (Open(), Ask(), Reply(), Text()),
)


def shapes(run: adk_js.JsRun) -> list[tuple]:
    """Per stored event: author, role, calls, responses (framework request
    ids by their order), long-running ids and request keys; texts as
    ``("text",)`` (the script pads its texts)."""
    events = [run.events[i] for i in run.ids]
    names = differential_js._request_names(events)
    out = []
    for event in events:
        author, role, parts, *rest = differential_js._signature(event, names)
        out.append((author, role, tuple(p[:1] if p[0] == "text" else p for p in parts), *rest))
    return out


def keeps_the_placeholder(case: PipelineCase) -> adk_js_recorded.RecordedActions:
    built = adk_js_recorded.recorded_actions(case)
    k = next(i for i, a in enumerate(built.actions) if a.get("event", {}).get("id") == "e3")
    built.actions.insert(
        k, {"do": "append", "event": js_events.to_js_event(case.session.steps[2], "e2")}
    )
    return built


def loses_the_real_result(case: PipelineCase) -> adk_js_recorded.RecordedActions:
    built = adk_js_recorded.recorded_actions(case)
    built.actions = [a for a in built.actions if a.get("event", {}).get("id") != "e5"]
    return built


def test_a_recorded_confirmation_translates_to_what_the_emulating_mapping_stores():
    translation = adk_js_recorded.translate_confirmations(CONFIRMED)
    assert translation.dropped == (2,)
    assert translation.positions == (0, 1, 3, 4, 5, 6)
    assert translation.case.ends == (3,)
    asked = translation.case.session.steps[2]
    assert (asked.calls[0].name, asked.confirmations) == ("adk_request_confirmation", ("call_0",))
    built = adk_js_recorded.recorded_actions(CONFIRMED)
    timeline = adk_js.timeline(ASKED)
    # The same actions: invocations, model calls and appends in one order.
    assert [a["do"] for a in built.actions] == [a["do"] for a in timeline.actions]
    events = {a["event"]["id"]: a["event"] for a in built.actions if a["do"] == "append"}
    assert "e2" not in events  # the placeholder
    theirs = [a["event"] for a in timeline.actions if a["do"] == "append"]
    assert events["e3"]["content"]["parts"][0]["functionCall"]["args"].keys() == {
        "originalFunctionCall",
        "toolConfirmation",
    }
    assert events["e3"]["actions"] == theirs[2]["actions"]
    reply = events["e4"]["content"]["parts"][0]["functionResponse"]["response"]
    assert reply == theirs[3]["content"]["parts"][0]["functionResponse"]["response"]
    # What the driver stores, event by event: author, role, calls,
    # responses, long-running ids and keys.
    ours, emulated = adk_js_recorded.run_recorded(CONFIRMED), adk_js.run_script(ASKED)
    assert shapes(ours) == shapes(emulated)
    authors = [s.author for s in ours.stored.steps]
    assert authors == ["user", "agent", "agent", "user", "agent", "agent"]
    assert ours.origin == [0, 1, 3, 4, 5, 6]
    assert adk_js_recorded.confirmation_problems(built.actions) == []
    assert adk_js_recorded.confirmation_problems(timeline.actions) == []
    assert adk_js.check_run(ours) == []


def test_two_pending_confirmations_as_the_recorded_p4_holds_them_are_what_the_runner_stores():
    # The shape of P4-2.13.0-bb3254462fe73bf8 (two confirmations pending at
    # once, a message between, replies oldest first): the emulating mapping,
    # whose shape the translation reproduces, agrees with ADK-JS's Runner.
    script = Script(
        ScriptConfig(token_threshold=1, event_retention_size=1),
        (Open(), Ask(), Open(), Open(), Ask(), Reply(), Reply(), Text()),
    )
    comparable = differential_js.comparable(script)
    assert sum(isinstance(op, Reply) for op in comparable.operations) == 2
    assert differential_js.compare_script(comparable) == []


def test_the_confirmation_checker_fires_on_a_broken_translation():
    kept = adk_js_recorded.confirmation_problems(keeps_the_placeholder(CONFIRMED).actions)
    assert [line.split(":")[0] for line in kept] == ["e2", "e3"]
    assert "placeholder" in kept[0]
    lost = adk_js_recorded.confirmation_problems(loses_the_real_result(CONFIRMED).actions)
    assert lost == [
        "e4: the reply to adk-r is not ADK-JS's (the user's, opening a run, then the agent's "
        "real result for call_0 in it)"
    ]
    for broken in (keeps_the_placeholder, loses_the_real_result):
        with pytest.raises(RuntimeError, match="stores a confirmation otherwise than ADK-JS"):
            adk_js_recorded.run_recorded(CONFIRMED, mapping=broken)


def _replaced(k: int, step: Step | None, ends=(4,)) -> PipelineCase:
    steps = list(CONFIRMED.session.steps)
    if step is None:
        del steps[k]
    else:
        steps[k] = step
    return PipelineCase(CONFIRMED.config, Session(tuple(steps)), ends=ends)


@pytest.mark.parametrize(
    ("case", "reason"),
    [
        (
            _replaced(
                4,
                Step("i1", "user", 5.0, responses=(Response("adk-r", "adk_request_confirmation"),)),
                ends=(),
            ),
            "a reply recorded inside a running invocation.*recorded step 4",
        ),
        (_replaced(5, None), "not followed, in its invocation, by the tool's real result.*step 4"),
        (
            _replaced(3, Step("i1", "agent", 4.0, text="m")),
            "not followed by the synthetic call.*step 2",
        ),
        (
            _replaced(3, None, ends=(3,)),
            "not followed by the synthetic call alone in its invocation.*recorded step 2",
        ),
    ],
    ids=["reply-in-running-invocation", "no-real-result", "no-synthetic-call", "end-between"],
)
def test_a_confirmation_shape_the_translation_does_not_cover_names_the_step(case, reason):
    with pytest.raises(NotApplicable, match=reason):
        adk_js_recorded.recorded_actions(case)


def test_a_call_id_reused_before_the_reply_is_not_translated():
    steps = list(CONFIRMED.session.steps)
    steps[4:4] = [
        Step("i9", "user", 4.5, text="again"),
        Step("i9", "agent", 4.6, calls=(Call("call_0", "lookup"),)),
    ]
    case = PipelineCase(CONFIRMED.config, Session(tuple(steps)), ends=(4, 6))
    with pytest.raises(NotApplicable, match=r"call_0 was reused before the reply.*step 6"):
        adk_js_recorded.recorded_actions(case)


def test_the_translated_fixtures_get_a_verdict_labelled_as_a_translation():
    label = adk_js_recorded.TRANSLATED_LABEL
    assert label.startswith("translated: adk-python's confirmation placeholder dropped")
    row = cross_sdk.cross_row(load_fixture(REPROS / "P6-2.11.0-6b20c57ef2b3b8fe.json"), {})
    assert (row.verdict, row.detail) == (
        "holds",
        f"(stand-in: token_based threshold=0, retention=1; {label})",
    )
    fixture = load_fixture(REPROS / "P4-2.13.0-bb3254462fe73bf8.json")
    row = cross_sdk.cross_row(fixture, {})
    assert (row.verdict, row.detail) == (
        "known",
        "js-late-answer, js-record-pending-call "
        f"(stand-in: token_based threshold=0, retention=1; {label})",
    )
    # c3's call (and its request) is summarised before its real result, the
    # newest event at i8's model call: getContents raises, as js-late-answer says
    # (the crash goes with the fix that drops a newest answer whose call is gone).
    run = adk_js_recorded.run_recorded(fixture.case)
    assert (
        "No function call event found for function responses ids: c3" in (run.exception["message"])
    )
    # Each of two fixes removes the crash: calls kept with their answers (c3 is
    # not summarised) and the newest answer whose call is gone dropped.
    found = adk_js.check_run(run)
    (crash,) = [v for v in found if v.invariant == "P0"]
    assert named(run, crash) == {"js-late-answer", "js-record-pending-call"}
    assert {f for v in found for f in named(run, v)} == {"js-late-answer", "js-record-pending-call"}
    # Untranslated sessions carry no label.
    assert adk_js_recorded.translation_label(HOLDS) == ""


# -- client compaction records ------------------------------------------------------------
def token(threshold: int = 1000, retention: int = 1) -> ScriptConfig:
    return ScriptConfig(token_threshold=threshold, event_retention_size=retention)


def test_a_client_record_is_the_compacted_event_shape_adk_js_reads():
    step = Step("p-1", "user", 5.0, compaction=Compaction(3.0, 4.0, "client"))
    event = adk_js.client_record_event(step, "e7")
    assert event["isCompacted"] is True
    assert (event["startTime"], event["endTime"], event["timestamp"]) == (3000.0, 4000.0, 5000.0)
    assert event["compactedContent"] == "client"
    assert event["content"] == {"role": "model", "parts": [{"text": "client"}]}
    with pytest.raises(NotApplicable, match="also holds parts"):
        adk_js.client_record_event(
            Step("p-1", "user", 5.0, text="t", compaction=Compaction(3.0, 4.0)), "e7"
        )


def test_adk_js_reads_a_client_record_as_its_own_summary_of_everything_up_to_its_end():
    # The record's range is the model's reply alone (back=1); ADK-JS sends it
    # as its own conversion of a compacted event, and hides every raw event
    # stamped up to its endTime: the user message before its range as well.
    script = Script(token(), (Open(), Text(), ClientRecord(back=1), Open(), Text()))
    run = adk_js.run_script(script)
    reply = run.stored.steps[1]
    assert run.stored.steps[2].compaction == Compaction(reply.timestamp, reply.timestamp, "client")
    assert adk_js.foreign_records(run) == [2]
    assert run.prompt(run.calls[-1]) == [
        ("user", (("text", "[Previous Context Summary]:\nclient"),)),
        ("user", (("text", "user 2 xxxxxxxxxxxxx"),)),
    ]
    # As ADK-JS reads it, the record stands for both: its writer's decision.
    (read,) = [s.compaction for s in adk_js.as_adk_js_reads(run.stored, [2]).steps if s.compaction]
    assert (read.start, read.end) == (-math.inf, reply.timestamp)
    assert adk_js.check_run(run) == []


def test_what_a_client_record_does_not_claim_is_still_judged(monkeypatch):
    script = Script(token(), (Open(), Text(), ClientRecord(back=1), Open(), Text()))
    run = adk_js.run_script(script)
    # Judged as if ADK-JS had made the record (no writer to excuse it), both
    # events it hides are lost.
    for module in (checks, trigger):  # the checkers that read the records
        monkeypatch.setattr(module, "foreign_records", lambda run, length=None: [])
    assert sorted(v.positions for v in adk_js.check_run(run) if v.invariant == "P4") == [
        (0,),
        (1,),
    ]
    monkeypatch.undo()
    # P4's baseline where a record is stored (the driver's
    # baseline_unclaimed) leaves out what the record claims in the same
    # reading: both events, not the second invocation's message.
    (last,) = [c for c in run.calls if c.get("baseline_unclaimed") is not None]
    shown = {run.ids.index(p[-1]) for _, parts in last["baseline_unclaimed"] for p in parts}
    claimed = covered_by_records(adk_js.as_adk_js_reads(run.stored, [2]), [2])
    assert claimed == {0, 1} and shown == {3}
    # Read with adk-python's [start, end] instead (and the baseline of every
    # raw event), the user message before the range is lost: the claim is
    # ADK-JS's reading, no wider.
    for call in run.calls:
        call.pop("baseline_unclaimed", None)
    for module in (checks, trigger):
        monkeypatch.setattr(module, "as_adk_js_reads", lambda steps, records: steps)
    assert [v.positions for v in adk_js.check_run(run)] == [(0,)]


def test_a_client_record_hiding_the_opener_is_its_writer_doing_on_the_truncating_compactor(
    monkeypatch,
):
    truncating = adk_js.JsCompactor("truncating", {"threshold": 100, "preserveLeadingEvents": 0})
    script = Script(token(), (Open(), ClientRecord(back=1), Text()))
    run = adk_js.run_script(script, truncating)
    assert run.prompt(run.calls[-1]) == [
        ("user", (("text", "[Previous Context Summary]:\nclient"),)),
    ]
    assert adk_js.check_run(run) == []
    # Without the writer to excuse it, the running turn's message is missing.
    for module in (checks, trigger):  # the checkers that read the records
        monkeypatch.setattr(module, "foreign_records", lambda run, length=None: [])
    (violation,) = adk_js.check_run(run)
    assert violation.details["cause"] == "opener missing"


def test_a_client_record_given_to_the_summariser_is_not_a_raw_event_given():
    script = Script(token(1, 1), (Open(), Text(), ClientRecord(back=1), Open(), Text(), Text()))
    run = adk_js.run_script(script)
    inputs = [s["input"] for c in run.calls for s in c["summaries"]]
    assert inputs and inputs[0][0] == "e2"  # ADK-JS hands the record over first
    assert all(run.ids[p] != "e2" for _, given, _ in run.summaries() for p in given)


def test_a_record_over_a_pending_call_fails_the_answer_run_as_a_known_fault():
    script = Script(token(), (Open(), Calls(kind="long_running"), ClientRecord(), Answer(), Text()))
    run = adk_js.run_script(script)
    assert "No function call event found" in run.exception["message"]
    # Removed by dropping the newest answer whose call is gone, and by
    # restoring the call the record hid before its answer.
    (crash,) = adk_js.check_run(run)
    assert named(run, crash) == {"js-late-answer", "js-record-pending-call"}
    # Without the record the same session holds: no ADK-JS compaction runs.
    assert (
        adk_js.check_run(
            adk_js.run_script(
                Script(token(), (Open(), Calls(kind="long_running"), Answer(), Text()))
            )
        )
        == []
    )


def test_a_record_claims_a_pending_call_stamped_before_its_range_too():
    # The record's range is only the model's reply to the second message; the
    # pending call, stamped before it, is claimed all the same (ADK-JS reads
    # the record as everything up to its endTime).
    script = Script(
        token(),
        (
            Open(),
            Calls(kind="long_running"),
            Open(),
            Text(),
            ClientRecord(back=1),
            Answer(),
            Text(),
        ),
    )
    run = adk_js.run_script(script)
    assert "No function call event found" in run.exception["message"]
    # Removed by dropping the newest answer whose call is gone, and by
    # restoring the call the record hid before its answer.
    (crash,) = adk_js.check_run(run)
    assert named(run, crash) == {"js-late-answer", "js-record-pending-call"}


SCRATCHPAD_BEHIND_RECORD = Script(
    token(1, 1), (Open(), Skew(seconds=1), Text(), ClientRecord(back=2), Text())
)
ANCHORED = adk_js.JsCompactor("anchored", {"tokenThreshold": 1, "eventRetentionSize": 1})


def test_the_anchored_scratchpad_retained_behind_a_client_record_is_hidden():
    run = adk_js.run_script(SCRATCHPAD_BEHIND_RECORD, ANCHORED)
    call = run.calls[-1]
    # The anchored compactor summarised the message and its reply into the
    # scratchpad and kept the record (a compacted event it takes for raw)
    # after it; the prompt reads the record alone.
    assert [run.events[i].get("isScratchpad") for i in call["after"]] == [True, False]
    assert run.events[call["after"][1]]["isCompacted"] is True
    assert run.prompt(call) == [("user", (("text", "[Previous Context Summary]:\nclient"),))]
    found = adk_js.check_run(run)
    assert sorted((v.invariant, v.details.get("cause")) for v in found) == [
        ("P2", "opener missing"),
        ("P4", None),
    ]
    # Each of two fixes removes both: the anchored compactor reading the
    # record as its latest compacted event, and the rebuild moving only the
    # retained events (the scratchpad no longer lands before the record).
    # The branch fix (compactors-leave-out-branch-events) removes the P4 too:
    # its anchored compactor leaves every compacted event, the record
    # included, out of the raw events it retains, as the anchored fix does.
    assert [named(run, v) for v in found] == [
        {"js-anchored-duplicates", "js-scratchpad-behind-record"},
        {"js-anchored-duplicates", "js-scratchpad-behind-record", "js-branch"},
    ]
    # The token-based compactor reads the record as its latest summary and
    # rolls it into its own: nothing is lost.
    assert adk_js.check_run(adk_js.run_script(SCRATCHPAD_BEHIND_RECORD)) == []


def test_the_anchored_trigger_view_starts_at_its_scratchpad_not_at_a_client_record():
    run = adk_js.run_script(SCRATCHPAD_BEHIND_RECORD, ANCHORED)
    call = run.calls[1]  # the record (e2) is stored; no scratchpad yet
    assert call["before"] == ["e0", "e1", "e2"]
    # AnchoredContextCompactor.getActiveEvents reads scratchpads only: the
    # record is a raw event to it, and every event is active (as the driver
    # records the compactor's own view).
    assert call["active"] == trigger._active_before(run, call) == ["e0", "e1", "e2"]
    # compaction_utils.getActiveEvents (the token-based compactor's) starts at
    # the record and keeps the message stamped after its endTime.
    token_based = adk_js.JsCompactor("token_based", ANCHORED.options)
    run = adk_js.run_script(SCRATCHPAD_BEHIND_RECORD, token_based)
    call = run.calls[1]
    assert call["before"] == ["e0", "e1", "e2"]
    assert trigger._active_before(run, call) == ["e2", "e0"]


def test_a_client_record_between_a_call_and_its_answer_splits_them_for_the_anchored_compactor():
    # Found with ClientRecord drawn (shrunk): the anchored compactor takes the
    # record for a raw event, so the answer is not the event right after the
    # call, and calculateRetainStartIndex summarises the call alone. Once the
    # late-answer recogniser's; by fix, the anchored compactor's reading of a
    # record as raw (anchored-reads-the-latest-compacted-event removes it).
    config = ScriptConfig(
        token_threshold=937,
        event_retention_size=2,
        resolution=0.001,
        tools_chars=4000,
        strict_provider=True,
        call_ids="per_turn",
    )
    script = Script(
        config,
        (
            Open(chars=5),
            Calls(count=2, kind="long_running", chars=5),
            ClientRecord(back=2),
            Answer(picks=(5,)),
            Calls(kind="long_running", chars=2000, usage=False),
        ),
    )
    anchored = adk_js.JsCompactor("anchored", {"tokenThreshold": 937, "eventRetentionSize": 2})
    run = adk_js.run_script(script, anchored)
    split = [v for v in adk_js.check_run(run) if v.invariant == "P1"]
    assert sorted(v.ids for v in split) == [("call_0",), ("call_1",)]
    # Each of two fixes removes it: the anchored compactor reading the record
    # as its latest compacted event (the answer follows the call again), and
    # calls kept with their answers (the call is retained with its answer).
    # The branch fix's anchored compactor leaves the record out of its raw
    # events too, so it removes the split as well.
    assert [named(run, v) for v in split] == [
        {"js-late-answer", "js-scratchpad-behind-record", "js-branch"}
    ] * 2
    assert adk_js.new_violations(run) == []


def test_a_summary_taking_again_what_a_client_record_brought_back_is_no_waste():
    # Found by a campaign with ClientRecord drawn: the message (stamped 10 s
    # ahead) is summarised, then a client's record ending before it becomes
    # the latest compacted event, so getActiveEvents brings the message back
    # and the next summary takes it again. Once called waste (the record form
    # of js-reactivated, new for want of a fix); decided at e2bf5f8 as
    # google-adk's P6 counts: a summary covers only while ADK reads it, and
    # ADK-JS reads the latest compacted event alone, the record, which stands
    # for its own range only. The second summary is the message's first since
    # the record (a FIXES=all campaign met it again:
    # tests/repros/P6-adk-js-2.0.0-cc64489a353da3cd.json).
    script = Script(
        token(1, 1), (Open(), Skew(seconds=10), Text(), Text(), ClientRecord(), Text(), Text())
    )
    run = adk_js.run_script(script)
    assert [given for _, given, _ in run.summaries()] == [[0], [0]]
    assert [v for v in adk_js.check_run(run) if v.invariant == "P6"] == []
    fixed = adk_js.run_script(script, fixes=("summaries-hide-what-they-were-given",))
    assert [v for v in adk_js.check_run(fixed) if v.invariant == "P6"] == []
