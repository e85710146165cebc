"""Partial reads: a script that loads only the session's latest events
(``config.recent_events``: ``RunConfig(get_session_config=GetSessionConfig(
num_recent_events=N))`` on every ``Runner.run_async``), hand-worked.

The invariants judge the session each request holds (the latest N stored
events and what the request appends): an older event the read leaves out is
the configuration's doing, which ``check`` warns of, not a loss by
compaction (``docs/invariants.md``, partial reads). What the read does hold
is judged as ever.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from compaction_harness.sdk.python.adk import NotApplicable, helper_availability
from compaction_harness.sdk.python.adk_runner import reads_part_of_sessions, run_script_with_runner
from compaction_harness.sdk.python.driver import run_script
from compaction_harness.sdk.python.drivers import EmulatedDriver
from compaction_harness.spec.scripts import Answer, Calls, Open, Script, ScriptConfig, Text
from compaction_harness.store.fixtures import load_fixture
from compaction_harness.surfaces.app_check import _warnings

pytestmark = pytest.mark.skipif(
    helper_availability()["_events_to_compact_for_token_threshold"] is not None
    or not reads_part_of_sessions(),
    reason="partial reads need RunConfig.get_session_config (google-adk 2.13.0 has it)",
)

#: Six invocations of a message and a reply; a summary after every second.
TURNS = (Open(), Text()) * 6
SLIDING = ScriptConfig(compaction_interval=2, overlap_size=0, driver="runner")


REPROS = Path(__file__).resolve().parents[1] / "repros"


def _label(text: str) -> str:
    """A text cut to its label: ``user 3``, ``model 3``, ``summary#0``."""
    return " ".join(text.split()[:2])[:9]


def _texts(call) -> list[str]:
    """The labels of the texts a model call was sent (:func:`_label`)."""
    return [_label(p[1]) for _, parts in call.sent for p in parts if p[0] == "text"]


def test_a_read_that_holds_the_newest_summary_and_its_turns_is_judged_and_holds() -> None:
    # Stored: u1 m1 u2 m2 S0 u3 m3 u4 m4 S1 u5 m5 u6 m6 S2 (Sk: a summary).
    # The read of 3 loads S0 u3 m3 before invocation 4 and u4 m4 S1 before
    # invocation 5, whose call then holds S1 (u4 m4 hidden by it), not S0.
    whole = run_script_with_runner(Script(SLIDING, TURNS))
    part = run_script_with_runner(Script(replace(SLIDING, recent_events=3), TURNS))
    assert not whole.violations and not part.violations
    # The Runner really loaded part of the session: at the last call it held
    # 3 loaded events and the 2 the request appended, of 13 stored.
    assert len(whole.calls[-1].snapshot) == 13 and len(part.calls[-1].snapshot) == 4
    assert len(part.session) == len(whole.session) == 15  # the record keeps every event
    # Up to the fourth invocation both send the same; from the fifth the read
    # has S1 and the turns after it, the whole session S0 too.
    assert [_texts(c) for c in part.calls[:4]] == [_texts(c) for c in whole.calls[:4]]
    assert _texts(whole.calls[4]) == ["summary#0", "summary#1", "user 5"]
    assert _texts(part.calls[4]) == ["summary#1", "user 5"]


def test_a_read_smaller_than_what_compaction_keeps_raw_is_warned_of_not_reported() -> None:
    # One event a request: before invocation 2 the read holds m1 alone, so the
    # summary made at its end is given m1 u2 m2, and u1 is in no prompt and
    # no summary from then on.
    config = replace(SLIDING, recent_events=1)
    run = run_script_with_runner(Script(config, TURNS))
    assert _texts(run.calls[1]) == ["model 1", "user 2"]
    given = [_label(s.snapshot[p].text) for s in run.summaries for p in s.positions]
    assert "model 1" in given and "user 1" not in given
    assert all("user 1" not in _texts(c) for c in run.calls[1:])
    # The definitions judge what each request holds: nothing it held was lost.
    assert not run.violations
    # ... and check says in plain words that this read cannot keep the history.
    (said,) = _warnings(config)
    assert "recent_events 1 with a sliding window" in said
    assert "misses even the newest summary" in said and "below 3 events" in said
    assert _warnings(replace(config, recent_events=None)) == []
    (wide,) = _warnings(replace(config, recent_events=3))
    assert "the oldest fall out of the read" in wide and "misses even" not in wide


def test_a_token_read_no_longer_than_the_retention_is_warned_of() -> None:
    config = ScriptConfig(token_threshold=100, event_retention_size=4, recent_events=4)
    (said,) = _warnings(config)
    assert "no more than event_retention_size 4" in said
    (said,) = _warnings(replace(config, recent_events=5))
    assert "the read itself drops the older turns" in said
    (said,) = _warnings(replace(config, recent_events=0))
    assert "loads no event of the session" in said


def test_an_opener_the_request_did_not_load_is_the_reads_doing() -> None:
    # u1, call a, its result, call b (long-running, paused); the client's
    # answer to b starts a request that loads the latest 2 events (the
    # result of a and call b), so the invocation's opener u1 is not held.
    ops = (Open(), Calls(), Calls(kind="long_running", fate="later"), Answer(), Text())
    run = run_script_with_runner(Script(replace(SLIDING, recent_events=2), ops))
    assert "user 1" not in _texts(run.calls[-1])
    assert len(run.calls[-1].snapshot) == 3  # the 2 loaded and the client's answer
    assert not run.violations, run.violations
    # With the whole session read the opener is held, and reaches the model.
    whole = run_script_with_runner(Script(SLIDING, ops))
    assert "user 1" in _texts(whole.calls[-1]) and not whole.violations


def test_p2_still_asks_for_an_opener_the_request_loaded() -> None:
    # The opener clause asks only for an opener the request loaded: where the
    # read holds it, a summary that hides it still breaks P2 (google-adk
    # 2.13.0's compaction-summarises-a-waiting-invocations-request, its
    # fixture replayed with a read of 100 events, which loads them all).
    fixture = load_fixture(next(REPROS.glob("P2-2.13.0-043e7a7b*.json")))
    script = Script(replace(fixture.case.config, recent_events=100), fixture.case.operations)
    run = run_script_with_runner(script)
    assert any(
        v.invariant == "P2" and "opened the running invocation" in v.message for v in run.violations
    ), run.violations


def test_p4_still_judges_what_the_read_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    # A broken summariser whose summary claims to reach far past what it was
    # given: its range hides loaded events no summary was given (P4).
    from google.adk.apps.llm_event_summarizer import LlmEventSummarizer

    real = LlmEventSummarizer.maybe_summarize_events

    async def overreaching(self, *, events):
        made = await real(self, events=events)
        if made is not None and made.actions.compaction is not None:
            made.actions.compaction.end_timestamp += 10**6
        return made

    monkeypatch.setattr(LlmEventSummarizer, "maybe_summarize_events", overreaching)
    run = run_script_with_runner(Script(replace(SLIDING, recent_events=3), TURNS))
    assert "P4" in {v.invariant for v in run.violations}


def test_only_the_runner_runs_a_partial_read() -> None:
    script = Script(ScriptConfig(compaction_interval=1, overlap_size=0, recent_events=3), TURNS)
    with pytest.raises(NotApplicable, match="recent_events"):
        run_script(script)
    assert "config.recent_events" in (EmulatedDriver().cannot_run(script) or "")


def test_the_fix_loads_the_answered_calls_invocation_beside_the_read_and_nothing_else() -> None:
    # No compaction (interval 100); invocation 2's export waits while
    # invocation 3 runs; a client then answers it, a request that loads 1
    # event. As published the Runner raises (the call is not loaded:
    # partial-read-loses-the-call-a-response-answers). The fix loads the
    # answered call's invocation (user 2, the export call and its interim
    # result) beside the read, not invocation 1: a whole read put every event
    # the read leaves out back in that prompt (P3-2.13.0-e8fa0949).
    from compaction_harness.sdk.python import fixes

    ops = (
        Open(),
        Text(),
        Open(),
        Calls(kind="interim", fate="later"),
        Text(),
        Open(),
        Text(),
        Answer(picks=(0,)),
        Text(),
    )
    config = ScriptConfig(compaction_interval=100, overlap_size=0, driver="runner")
    script = Script(replace(config, recent_events=1), ops)
    published = run_script_with_runner(script, repair=True)
    assert published.crashed is not None and "Function call not found" in str(published.crashed)
    with fixes.applied(["partial-read-loads-the-answered-call"]):
        run = run_script_with_runner(script, repair=True)
    assert not run.violations and run.crashed is None
    sent = _texts(run.calls[-1])
    assert "user 2" in sent and "user 1" not in sent and "model 1" not in sent
