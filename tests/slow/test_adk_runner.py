"""The runner driver: scripts through ADK's own ``Runner``, and the checks on
what it really did (P0, P1, P2, P4, P5)."""

from __future__ import annotations

import inspect
from dataclasses import replace

import google.adk.apps.compaction as compaction
import pytest
from hypothesis import assume, event, given, settings

from compaction_harness.sdk.python.adk import (
    ADK_RELEASE,
    NotApplicable,
    helper_availability,
    prunes_orphaned_calls,
)
from compaction_harness.sdk.python.adk_runner import (
    Inexpressible,
    answers_continue_invocation,
    reads_part_of_sessions,
    run_script_outcome,
    run_script_with_runner,
)
from compaction_harness.sdk.python.cases import by_fix, judge
from compaction_harness.sdk.python.pipeline import chosen_invariants
from compaction_harness.sdk.python.unit import InvariantViolation
from compaction_harness.spec.scripts import (
    Answer,
    Ask,
    Calls,
    Delegate,
    End,
    FanOut,
    Open,
    Reply,
    Script,
    ScriptConfig,
    Text,
    Tie,
)
from compaction_harness.surfaces.checks import met_all, sought_only, timed
from strategies import differential_scripts


def _has_database() -> bool:
    try:
        import google.adk.sessions.database_session_service  # noqa: F401
    except ImportError:
        return False
    return True


def narrowed(script: Script) -> Script:
    """``script`` checking only what HARNESS_PIPELINE_INVARIANTS names."""
    chosen = chosen_invariants()
    if not chosen:
        return script
    return Script(replace(script.config, invariants=tuple(sorted(chosen))), script.operations)


pytestmark = pytest.mark.skipif(
    helper_availability()["_events_to_compact_for_token_threshold"] is not None,
    reason="the scripts use token-threshold compaction (1.26.0 and later)",
)
SLIDING = ScriptConfig(compaction_interval=1, overlap_size=0)


def test_a_run_records_events_summaries_and_requests() -> None:
    script = Script(SLIDING, (Open(), Calls(count=2), Text(), Open(), Ask(), Reply(), Text()))
    run = run_script_with_runner(script)
    assert [s.author for s in run.session if s.compaction is None] == [
        "user", "agent", "agent", "agent",  # user 1, two calls, their results, text
        "user", "agent", "agent", "agent",  # user 2, the call, ADK's request, placeholder
        "user", "agent", "agent",  # the user's confirmation, the real result, text
    ]  # fmt: skip
    assert len(run.calls) == 4 and all(c.prompt is not None for c in run.calls)
    assert [c.op for c in run.calls] == [1, 2, 4, 6]
    assert run.summaries and all(s.where == "at an invocation end" for s in run.summaries)
    # Each stored event is traced to the operation that stored it.
    assert run.origin[0] == 0 and run.origin.count(1) == 2
    assert not run.violations and run.crashed is None


def test_the_clock_is_deterministic() -> None:
    script = Script(SLIDING, (Open(), Text(), Open(), Tie(), Calls(), Text()))
    first = run_script_with_runner(script, tree="director")
    second = run_script_with_runner(script, tree="director")
    assert [s.timestamp for s in first.session] == [s.timestamp for s in second.session]
    # Tie: the model's event is stamped with the user message's time.
    stamps = [s.timestamp for s in first.session if s.compaction is None]
    assert stamps[1] < stamps[2] == stamps[3] < stamps[4]


def test_what_the_runner_cannot_run_is_refused_or_repaired() -> None:
    # The root LlmAgent's run ends at its final text: a second text needs a new turn.
    script = Script(SLIDING, (Open(), Text(), Text()))
    with pytest.raises(Inexpressible, match=r"operation 2 \(text\)"):
        run_script_with_runner(script)
    run = run_script_with_runner(script, repair=True)
    assert run.script.operations == (Open(), Text(), End(), Text())
    assert run.repairs == ["op 2: added end: the Runner ends the invocation at a final text"]
    # After tool results ADK calls the model again before an invocation can end.
    run = run_script_with_runner(Script(SLIDING, (Open(), Calls(), End())), repair=True)
    assert run.script.operations == (Open(), Calls(), Text(), End())
    # Sub-agents need tree 'director'.
    run = run_script_with_runner(Script(SLIDING, (Open(), Delegate(), Text())), repair=True)
    assert run.script.operations == (Open(), Text())


def test_the_runner_meets_known_upstream_faults() -> None:
    # P5: ParallelAgent sub-agents' branch events go into a summary every agent reads.
    run = run_script_with_runner(Script(SLIDING, (Open(), FanOut(), End())), tree="director")
    _, known = by_fix(run.ran, run.violations)
    assert "summary-leaks-branch-events-to-siblings" in {f for _, f in known}
    # P2: token compaction before the turn's second model call summarises the
    # turn's own request.
    config = ScriptConfig(token_threshold=20, event_retention_size=0, system_chars=400)
    run = run_script_with_runner(Script(config, (Open(), Calls(), Text())))
    if ADK_RELEASE in ("2.11.0", "2.13.0"):
        _, known = by_fix(run.ran, run.violations)
        assert "token-compaction-summarises-the-running-request" in {f for _, f in known}


@pytest.mark.skipif(not prunes_orphaned_calls(), reason="the release sends orphaned calls")
def test_an_orphaned_call_with_a_reused_id_is_pruned_not_lost() -> None:
    # Call ids numbered per turn: invocation 2 reuses call_0 for a call whose
    # tool's process dies. Without compaction invocation 1's answer to call_0
    # keeps it in the contents; with invocation 1 summarised ADK prunes it as
    # the orphan it is. P4 once called that a loss (runner item, 600 s).
    script = Script(
        replace(SLIDING, call_ids="per_turn"),
        (Open(), Calls(), Text(), Open(), Calls(fate="later"), Open(), Text()),
    )
    run = run_script_with_runner(script)
    last = run.calls[-1]
    orphan = ("call", "call_0", "lookup")
    assert orphan in {p for _, parts in last.baseline for p in parts}
    assert orphan not in {p for _, parts in last.prompt for p in parts}
    assert not run.violations, run.violations


def test_the_checks_fire_on_a_broken_runner(monkeypatch: pytest.MonkeyPatch) -> None:
    # Compaction that keeps no call pair together (as releases before 1.28.0):
    # the summariser is given a long-running call still waiting for its answer.
    monkeypatch.setattr(
        compaction, "_longest_self_contained_prefix", lambda events, all_events=None: events
    )
    script = Script(SLIDING, (Open(), Calls(kind="long_running"), Answer(), Text()))
    run = run_script_with_runner(script)
    assert "P1" in {v.invariant for v in run.violations}


def test_an_exception_adk_raises_is_p0(monkeypatch: pytest.MonkeyPatch) -> None:
    async def broken(*args, **kwargs):
        raise RuntimeError("compaction broke")
        yield  # pragma: no cover

    monkeypatch.setattr(compaction, "_run_compaction_for_sliding_window", broken)
    run = run_script_with_runner(Script(SLIDING, (Open(), Text(), Open(), Text())))
    assert run.crashed is not None
    assert [v.invariant for v in run.violations] == ["P0"]


# -- the runner item of a campaign ------------------------------------------------
@pytest.mark.gate_first  # among the gate's longest items
@pytest.mark.property(weight=3)
@settings(max_examples=30)
@given(
    script=differential_scripts(
        database=_has_database(),
        answers=answers_continue_invocation("agent"),
        final_text=True,
        recent_events=reads_part_of_sessions(),
        hitl=True,
    )
)
def test_runner_pipeline_scripts_meet_p0_to_p7(script: Script) -> None:
    """The pipeline property through ADK's own ``Runner`` (P0 to P7 on what
    the model was really sent), partial reads (``config.recent_events``)
    included where the release has them; a failure's fixture records the
    script as the runner ran it, with ``config.driver="runner"``."""
    script = narrowed(script)
    judge_on_the_runner(Script(replace(script.config, driver="runner"), script.operations))


def judge_on_the_runner(script: Script, report=None) -> None:
    """The body of a property through ADK's ``Runner``: run ``script``, judge
    it by fix, label the example (its labels, the known faults it met), hand
    every violation to ``report`` when given, and raise
    :class:`InvariantViolation` for a new one, with the script as the Runner
    ran it. A script the release cannot run is rejected as an example."""
    try:
        with timed(script):
            outcome = sought_only(judge(script, run_script_outcome(script)))
    except NotApplicable as exc:
        event(f"not applicable: {exc}")
        assume(False)
        return
    if report is not None:
        report(script, [*outcome.violations, *(v for v, _ in outcome.known)])
    for label in outcome.labels:
        event(label)
    met_all(outcome.known)
    if outcome.violations:
        as_run = outcome.observed.get("script")
        case = Script.from_json(as_run) if as_run is not None else script
        raise InvariantViolation(case, outcome)


# -- P3, P6 and P7 through the Runner fire on deliberately broken ADK functions ---------
def test_p3_fires_when_the_runner_stops_compacting(monkeypatch: pytest.MonkeyPatch) -> None:
    original = compaction._run_compaction_for_sliding_window
    if inspect.isasyncgenfunction(original):

        async def idle(*args, **kwargs):
            return
            yield  # pragma: no cover

    else:

        async def idle(*args, **kwargs):
            return None

    monkeypatch.setattr(compaction, "_run_compaction_for_sliding_window", idle)
    ops = (Open(), Text(), Open(), Text(), Open(), Text(), Open(), Text())
    run = run_script_with_runner(Script(SLIDING, ops))
    assert not run.summaries
    assert "P3" in {v.invariant for v in run.violations}
    # The same script with ADK's own compaction holds.
    monkeypatch.setattr(compaction, "_run_compaction_for_sliding_window", original)
    assert not run_script_with_runner(Script(SLIDING, ops)).violations


def test_p3_fires_when_the_runners_token_threshold_stops_compacting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A token threshold alone: the first model call counts 5 prompt tokens
    # (the trigger is quiet at the first end), every later one more than 10,
    # so the trigger fires at every later end, and P3 holds the backlog to
    # the retained event. ADK's own compaction holds; a token path that never
    # finds a range (the stall's shape) breaks P3 at every end after the first
    # that fires (a quiet end carries nothing to the next).
    config = ScriptConfig(token_threshold=10, event_retention_size=1)
    ops = (Open(), Text()) * 5
    run = run_script_with_runner(Script(config, ops))
    assert run.summaries and not run.violations
    monkeypatch.setattr(compaction, "_events_to_compact_for_token_threshold", lambda **k: [])
    run = run_script_with_runner(Script(config, ops))
    assert not run.summaries
    stalled = [v for v in run.violations if v.invariant == "P3"]
    assert len(stalled) == len(run.ends) - 2 and "(bound 1)" in stalled[-1].message


def test_p6_fires_when_the_token_trigger_reads_a_wrong_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A trigger that always reads a huge prompt count summarises below the threshold.
    monkeypatch.setattr(compaction, "_latest_prompt_token_count", lambda *a, **k: 10**9)
    config = ScriptConfig(token_threshold=10_000, event_retention_size=0)
    run = run_script_with_runner(Script(config, (Open(), Text(), Open(), Text())))
    found = [v for v in run.violations if v.invariant == "P6"]
    assert found and "below the threshold" in found[0].message


def test_p6_fires_when_the_runners_token_trigger_reads_stale_counts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # As google-adk 2.2.0 does: the newest count wins even when a summary came
    # after it. Tool declarations make invocation 1's counted request (about
    # 210 tokens) larger than ADK's estimate of its contents, so it is
    # summarised at its end only; invocation 2's request is estimated far
    # under the threshold, but a trigger that reads the stale count
    # summarises again.
    real = compaction._latest_prompt_token_count

    def reads_stale_counts(events, **kwargs):
        for e in reversed(events):
            if e.actions and e.actions.compaction:
                continue  # the summariser's own count is not the agent's
            if e.usage_metadata and e.usage_metadata.prompt_token_count is not None:
                return e.usage_metadata.prompt_token_count
        return real(events, **kwargs)

    config = ScriptConfig(token_threshold=200, event_retention_size=0, tools_chars=800)
    script = Script(config, (Open(), Text(), Open(), Text()))
    for broken in (False, True):
        if broken:
            monkeypatch.setattr(compaction, "_latest_prompt_token_count", reads_stale_counts)
        run = run_script_with_runner(script)
        assert run.triggers, "the trigger was consulted on stale counts"
        stale = [v for v in run.violations if "made stale" in v.message]
        assert bool(stale) == broken, run.violations


def test_p7_fires_when_the_database_reorders_the_session(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if not _has_database():
        pytest.skip("no DatabaseSessionService (the [db] extra)")
    from google.adk.sessions.database_session_service import DatabaseSessionService

    config = ScriptConfig(compaction_interval=5, overlap_size=0, storage="database")
    ops = (Open(), Calls(), Text(), Open(), Text())
    assert not run_script_with_runner(Script(config, ops)).violations
    original = DatabaseSessionService.get_session

    async def reversed_session(self, **kwargs):
        session = await original(self, **kwargs)
        if session is not None:
            session.events.reverse()
        return session

    monkeypatch.setattr(DatabaseSessionService, "get_session", reversed_session)
    run = run_script_with_runner(Script(config, ops))
    assert "P7" in {v.invariant for v in run.violations}


@pytest.mark.skipif(ADK_RELEASE != "2.13.0", reason="the fixture's violations are 2.13.0's")
def test_a_runner_verdict_reports_the_new_violations_of_the_first_operation(monkeypatch) -> None:
    # As the emulating driver's: the Runner driver checks the whole record
    # after the run, orders what it found by the operation running when it
    # was recorded, and a verdict reports the new violations of the first
    # operation that found any. (Known faults off: every violation is new.)
    from pathlib import Path

    from compaction_harness.sdk.python.adk_runner import run_script_outcome
    from compaction_harness.store.fixtures import load_fixture

    monkeypatch.setenv("HARNESS_KNOWN_FAULTS", "off")
    path = Path(__file__).parents[1] / "repros" / "P3-2.13.0-cb0dec0b808de2d3.json"
    script = load_fixture(path).case
    outcome = run_script_outcome(script)
    assert outcome.batches is not None and len(outcome.batches) > 1
    assert sum(outcome.batches) == len(outcome.violations)
    # The P3 judged at the run's last end comes after the model calls' P2s.
    assert [v.invariant for v in outcome.violations][-1] == "P3"
    judged = judge(script, outcome)
    assert judged.violations == outcome.violations[: outcome.batches[0]]
    assert len(judged.violations) < len(outcome.violations)


def test_p3_prices_the_wait_by_the_summary_the_summariser_wrote_though_a_record_hides_it(
    monkeypatch,
):
    # Found by make fuzz FIXES=all (tests/repros/P3-2.13.0-5b5ca993c5415245.json):
    # a client's record with the range of ADK's large summary hides it from the
    # prompt; the fixed ADK prices the next summary by the summariser's own
    # last output (summary-priced-by-the-summarizers-own-output) and waits
    # until the backlog outgrows it. P3 priced the wait by summaries shown in
    # the prompt alone, found none, and called the wait a stall.
    from pathlib import Path

    from compaction_harness.sdk.python import runner_checks
    from compaction_harness.sdk.python.fixes import applied
    from compaction_harness.store.fixtures import load_fixture
    from compaction_harness.surfaces import switch
    from compaction_harness.surfaces.verdicts import check

    monkeypatch.delenv("HARNESS_KNOWN_FAULTS", raising=False)
    path = Path(__file__).parents[1] / "repros" / "P3-2.13.0-5b5ca993c5415245.json"
    case = load_fixture(path).case
    with applied(switch.parse("all")):
        assert not check(case).new
        # The emulating driver prices it so too.
        assert not check(replace(case, config=replace(case.config, driver="emulated"))).new
        # Priced by the summaries the prompt shows alone (none here), the wait
        # is a stall.
        priced = runner_checks._waits_to_save_prompt

        def by_the_prompt(violation, end):
            texts = [p[1] for _, ps in end.prompt for p in ps if p[0] == "text"]
            shown = any(
                s.compaction is not None
                and runner_checks.summary_number(s.compaction.summary) is not None
                and any(s.compaction.summary.split("\n", 1)[0] in t for t in texts)
                for s in end.snapshot
            )
            return shown and priced(violation, end)

        monkeypatch.setattr(runner_checks, "_waits_to_save_prompt", by_the_prompt)
        assert [v.invariant for v in check(case).new] == ["P3"]


def _longer_reply(script: Script, chars: int) -> Script:
    """``script`` with the text after its answer ``chars`` long."""
    ops = list(script.operations)
    at = next(i for i, op in enumerate(ops) if isinstance(op, Answer)) + 1
    assert isinstance(ops[at], Text)
    ops[at] = replace(ops[at], chars=chars)
    return replace(script, operations=tuple(ops))


def test_p3_weighs_a_wait_as_the_request_carries_the_range_and_the_summary(monkeypatch):
    # Found by make fuzz in a fresh clone (tests/repros/P3-2.13.0-37c4fadd391ace2d.json):
    # token threshold alone, a 20-character reply (#6) is a range of its own
    # behind a waiting export; the latest summary's text is 9 characters.
    # ADK with every fix refuses the range (_is_range_worth_compacting): the
    # reply's content takes 58 characters in a request, the summary's 47,
    # and ADK prices the range against an empty summary (27 of framing).
    from pathlib import Path

    from compaction_harness.sdk.python import adk_prompt, fixes
    from compaction_harness.sdk.python.driver import run_script
    from compaction_harness.store.fixtures import load_fixture
    from compaction_harness.surfaces import switch

    path = Path(__file__).parents[1] / "repros" / "P3-2.13.0-37c4fadd391ace2d.json"
    script = load_fixture(path).case
    emulated = replace(script, config=replace(script.config, driver="emulated"))
    with fixes.applied(switch.parse("all")):
        assert run_script_with_runner(script, repair=True).violations == []
        assert run_script(emulated).violations == []
        # Without the framing's slack, the 58 characters outweigh the 47.
        with monkeypatch.context() as m:
            m.setattr(adk_prompt, "EMPTY_SUMMARY_CHARS", 0)
            found = run_script_with_runner(script, repair=True).violations
            assert [v.invariant for v in found] == ["P3"]
        # A compactor that refuses every range once it has written a summary
        # waits rightly while the reply is within the summary and its framing
        # (36 characters: 74 <= 47 + 27), and stalls by P3 once it outgrows
        # them (37 characters: 75).
        first = compaction._previous_summary_chars
        monkeypatch.setattr(
            compaction, "_is_range_worth_compacting", lambda *, events, **_: first(events) == 0
        )
        assert run_script_with_runner(_longer_reply(script, 36), repair=True).violations == []
        found = run_script_with_runner(_longer_reply(script, 37), repair=True).violations
        assert [(v.invariant, v.positions) for v in found] == [("P3", (6,))]
        assert [v.invariant for v in run_script(_longer_reply(emulated, 37)).violations] == ["P3"]


def test_p8_tells_two_turns_calls_of_one_tool_and_id_apart_by_invocation(monkeypatch):
    # Written by make matrix's campaign under every fix
    # (tests/data/P8-2.13.0-e4314cb9b6c09e28.json):
    # call ids numbered per turn; two invocations each call calendar as call_0
    # and ask for a credential; the user grants both, and ADK with every fix
    # runs each invocation's own call once. The run of the first grant was
    # recorded as the newest calendar call_0 (the second invocation's), so the
    # second grant's run read as that call's tool running again (P8).
    from pathlib import Path

    from compaction_harness.sdk.python import fixes, runner_record
    from compaction_harness.store.fixtures import load_fixture
    from compaction_harness.surfaces import switch

    path = Path(__file__).parents[1] / "data" / "P8-2.13.0-e4314cb9b6c09e28.json"
    script = load_fixture(path).case
    with fixes.applied(switch.parse("all")):
        run = run_script_with_runner(script, repair=True)
        assert [v.invariant for v in run.violations] == []
        calendar = [r for r in run.tool_runs if r.tool == "calendar"]
        assert len(calendar) == 4 and len({r.call_event for r in calendar}) == 2
        # Read by the newest call of the id alone (no invocation), P8 fires.
        recorded = runner_record.Recording.tool_run

        def newest_call_only(self, context, kind):
            bare = type("Bare", (), {"function_call_id": context.function_call_id})()
            return recorded(self, bare, kind)

        monkeypatch.setattr(runner_record.Recording, "tool_run", newest_call_only)
        found = run_script_with_runner(script, repair=True).violations
        assert [v.invariant for v in found] == ["P8"]
