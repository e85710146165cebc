"""The fixes of google-adk's known faults (``compaction_harness.faults``).

Each fix is a unified diff against the release's own source. These tests
show, per fix, that its diff applies to the installed release, that every
fixture recorded for its fault (``known_fault`` in ``tests/repros/``) shows a
violation on ADK as published and holds with the fix, that the fixes compose
(all of them at once; the two fixes of ``_longest_self_contained_prefix``
together), that no fix makes another fixture fail in a new way, and that
``fixes.applied`` leaves ADK's own functions in place when it ends.

Six fixtures show a second fault once their first one is fixed
(:data:`SECOND_FAULT`), a fault that has a fix too: they hold only with
both fixes.

The fix of compaction-assumes-events-are-stored-in-time-order makes a
session's timestamps follow the order its events are appended; the
database's reordering by timestamp (database-reload-reorders-events-by-
timestamp) then has nothing to reorder, so that fix removes the database
fault's violations as well, and a fixture of the database fault is
classified as both faults (each fix alone removes it).
"""

from __future__ import annotations

import json
import logging
import sys
from functools import cache
from pathlib import Path

import pytest

from compaction_harness.faults import fixes
from compaction_harness.faults.classify import run_with_fixes, same_failure
from compaction_harness.fixtures import load_fixture

REPROS = Path(__file__).parent / "repros"
PYTHON_FIXTURES = sorted(p for p in REPROS.glob("*.json") if "-adk-js-" not in p.name)
DEAD_RETRY = "dead-call-retry-at-every-boundary"
NEWEST_CALL = "newest-invocation-call-never-dead"
DB_ORDER = "database-reads-events-in-append-order"
STAMPS = "session-stamps-events-in-append-order"

#: Fixture -> (the fixes whose run shows the second fault, that fault, why).
SECOND_FAULT = {
    "P3-2.13.0-cb0dec0b808de2d3.json": (
        {"compaction-summarised-around-a-waiting-call"},
        "partial-answer-to-parallel-calls-makes-an-invalid-request",
        "the fix summarises the turns after the still pending export, and the stall (P3) is "
        "gone; the client's answer to one of the two parallel exports still makes a request "
        "that pairs both calls with one response (P2) until that fault's fix",
    ),
    "P6-2.13.0-77a17de9883c3f48.json": (
        {DEAD_RETRY},
        "compaction-assumes-events-are-stored-in-time-order",
        "with the retry, summary#2 takes invocation 3; the confirmation request is stamped "
        "after summary#2's range ends, so invocation 3 counts as new again and summary#3 "
        "repeats summary#2's range; on a clock that never steps back it holds",
    ),
    "P6-2.13.0-6acf84e054d552c5.json": (
        {"summary-leaves-out-branch-events"},
        "token-compaction-summarises-the-running-request",
        "the branch fix removes the leaks (P5); the summary made before the second model "
        "call still takes the running invocation's user message (P2) until that fault's fix "
        "keeps it out, and the wasted summary (P6) goes only with both",
    ),
    "P1-2.13.0-2fee07590c2015ff.json": (
        {"token-compaction-keeps-the-running-invocation"},
        "compaction-assumes-events-are-stored-in-time-order",
        "the Runner stores the confirmation request (stamped later) before the placeholder "
        "response; once the running invocation is kept out, summary#0 ends at the response's "
        "time, and summary#1 is given the request alone, which summary#0 covered",
    ),
    "P4-2.13.0-350c2f39a3aa1b19.json": (
        {DB_ORDER},
        "compaction-assumes-events-are-stored-in-time-order",
        "reloaded in append order, the session still holds a host whose clock lags by 10 s "
        "and ties of a one-second clock: the last summary's range, read by timestamp, hides "
        "the running invocation's user message and reply, which it was never given (P2, P4)",
    ),
    "P7-2.13.0-5167e90ad3141661.json": (
        {DB_ORDER, STAMPS},
        "summary-leaks-branch-events-to-siblings",
        "reloaded in append order, the prompts agree (P7 goes); the summary made at the "
        "invocation's end was still given both sub-agents' branch events (P5) until that "
        "fault's fix leaves them out",
    ),
}


def _known_fault(path: Path) -> str | None:
    return json.loads(path.read_text(encoding="utf-8")).get("known_fault")


def _fixtures_of(fault_id: str) -> list[Path]:
    return [p for p in PYTHON_FIXTURES if _known_fault(p) == fault_id]


@cache
def _case(path: Path):
    return load_fixture(path).case


@cache
def _violations(path: Path, names: tuple[str, ...]):
    logging.disable(logging.WARNING)  # ADK logs every dropped call; not the subject here
    try:
        return run_with_fixes(_case(path), list(names))
    finally:
        logging.disable(logging.NOTSET)


def _second_fault_shows(path: Path, names: set[str]) -> bool:
    entry = SECOND_FAULT.get(path.name)
    return entry is not None and bool(entry[0] & names)


FAULT_FIXTURES = [
    pytest.param(name, path, id=f"{name}:{path.stem}")
    for name, fix in fixes.FIXES.items()
    for fault_id in fix.faults
    for path in _fixtures_of(fault_id)
]


@pytest.mark.parametrize("name", list(fixes.FIXES))
def test_the_diff_applies_to_the_installed_release(name):
    assert fixes.unavailable(name) is None
    assert fixes.fix_named(name).diff_text().startswith("--- a/google/adk/")


@pytest.mark.parametrize("name", list(fixes.FIXES))
def test_every_fix_has_fixtures_of_its_faults(name):
    for fault_id in fixes.FIXES[name].faults:
        assert _fixtures_of(fault_id), fault_id


@pytest.mark.parametrize(("name", "path"), FAULT_FIXTURES)
def test_the_faults_fixture_fails_without_its_fix_and_holds_with_it(name, path):
    before = _violations(path, ())
    assert before, f"{path.name} shows no violation on ADK as published"
    after = _violations(path, (name,))
    kept = [v for v in before if any(same_failure(v, w) for w in after)]
    if _second_fault_shows(path, {name}):
        assert after, "the second fault no longer shows: drop its SECOND_FAULT entry"
        assert len(kept) < len(before), "the fix removes none of the fixture's violations"
        # What the fix leaves is the second fault's: its fix, where it has one,
        # removes the rest of what ADK as published shows.
        second = SECOND_FAULT[path.name][1]
        theirs = tuple(n for n, f in fixes.FIXES.items() if second in f.faults)
        if theirs:
            both = _violations(path, (name, *theirs))
            assert not [v for v in before if any(same_failure(v, w) for w in both)]
    else:
        assert not kept
        assert after == [], [v.message for v in after]


def test_the_second_fault_of_the_dead_retry_fixture_is_time_order():
    from compaction_harness.driver import run_script

    path = REPROS / "P6-2.13.0-77a17de9883c3f48.json"
    with fixes.applied([DEAD_RETRY]):
        (left,) = run_script(_case(path), triage=False).violations
        steady = run_script(_case(path), triage=False, monotonic=True).violations
    (before,) = _violations(path, ())
    assert left.invariant == before.invariant == "P6"
    assert "summary#3" in left.message and "summary#2" in before.message
    assert steady == []


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(p, id=p.stem)
        for fault_id in (
            "dead-call-retry-skipped-at-invocation-boundary",
            "reused-call-id-unprotects-newest-invocation-call",
        )
        for p in _fixtures_of(fault_id)
    ],
)
def test_the_two_fixes_of_the_prefix_helper_apply_together(path):
    names = (DEAD_RETRY, NEWEST_CALL)
    before = _violations(path, ())
    after = _violations(path, names)
    assert not [v for v in before if any(same_failure(v, w) for w in after)]
    assert after == [] or _second_fault_shows(path, set(names))


def test_all_fixes_apply_together_and_compose_hunk_by_hunk():
    names = list(fixes.FIXES)
    text = fixes.patch_text(names)
    for name in names:
        for line in fixes.fix_named(name).diff_text().splitlines():
            if line.startswith("+") and not line.startswith("+++"):
                assert line in text.splitlines(), (name, line)
    with fixes.applied(names):
        assert set(fixes.active()) == set(names)
    assert fixes.active() == ()


@pytest.mark.parametrize("path", [pytest.param(p, id=p.stem) for p in PYTHON_FIXTURES])
def test_no_fix_makes_a_fixture_fail_in_a_new_way(path):
    # Under every fix at once (each fix alone on its own fault's fixtures above).
    before = _violations(path, ())
    every = tuple(fixes.FIXES)
    if _second_fault_shows(path, set(every)):
        return
    new = [w for w in _violations(path, every) if not any(same_failure(v, w) for v in before)]
    assert new == [], [w.message for w in new]


def _adk_functions() -> dict[tuple[str, str], object]:
    return {
        (module.__name__, attr): value
        for module in list(sys.modules.values())
        if (getattr(module, "__name__", None) or "").startswith("google.adk")
        for attr, value in list(vars(module).items())
        if callable(value)
    }


def test_applied_puts_every_function_back():
    from google.adk.apps import compaction
    from google.adk.flows.llm_flows.context import _contents
    from google.adk.flows.llm_flows.tools import _rearranger

    originals = _adk_functions()
    rearrange = _rearranger.rearrange_events_for_async_function_responses_in_history
    with fixes.applied(list(fixes.FIXES)):
        fixed = _rearranger.rearrange_events_for_async_function_responses_in_history
        assert fixed is not rearrange
        # Every name bound to it in ADK's modules is the fixed function, the
        # aliases too (_contents imports an alias of it).
        assert _rearranger._rearrange_events_for_async_function_responses_in_history is fixed
        assert _contents._rearrange_events_for_async_function_responses_in_history is fixed
        assert _contents.drop_orphaned_function_calls is _rearranger.drop_orphaned_function_calls
        assert (
            compaction._previous_summary_chars
            is not originals[("google.adk.apps.compaction", "_previous_summary_chars")]
        )
    after = _adk_functions()
    changed = [key for key, value in originals.items() if after.get(key) is not value]
    assert changed == []
    assert set(after) == set(originals)


def test_a_fix_that_lets_token_compaction_run_needs_the_window_to_refuse_nothing_new():
    # Found by `make fuzz FIXES=all`: the release as published holds; the
    # token-split fix alone makes the sliding window summarise a resumed
    # invocation's covered events again (P6); with the fix of that mechanism
    # too, nothing is wasted.
    path = REPROS / "P6-2.13.0-823b5d1be61c9fc9.json"
    assert _violations(path, ()) == []
    (wasted,) = _violations(path, ("token-split-ignores-callless-responses",))
    assert wasted.invariant == "P6" and "covers no live event" in wasted.message
    both = (
        "token-split-ignores-callless-responses",
        "sliding-window-refuses-a-range-with-nothing-new",
    )
    assert _violations(path, both) == []


def _appended(service_factory, stamps: list[tuple[str, float]]):
    """The events a session service gives back after appending events with
    ids and timestamps ``stamps`` in that order, and those events as appended."""
    import asyncio

    from google.adk.events.event import Event

    async def run():
        service = service_factory()
        try:
            session = await service.create_session(app_name="a", user_id="u")
            appended = []
            for event_id, stamp in stamps:
                event = Event(id=event_id, author="user", invocation_id="i", timestamp=stamp)
                appended.append(await service.append_event(session, event))
            again = await service.get_session(app_name="a", user_id="u", session_id=session.id)
            return [(e.id, e.timestamp) for e in again.events], appended
        finally:
            engine = getattr(service, "db_engine", None)
            if engine is not None:
                await engine.dispose()

    return asyncio.run(run())


#: Appended in this order: a lagging host's event, then a tie whose id sorts first.
_OUT_OF_TIME_ORDER = [("z", 1_700_000_010.0), ("b", 1_700_000_005.0), ("a", 1_700_000_005.0)]


def test_the_database_gives_events_back_in_append_order_with_their_own_stamps(tmp_path):
    from google.adk.sessions.database_session_service import DatabaseSessionService

    def service():
        return DatabaseSessionService(
            f"sqlite+aiosqlite:///{tmp_path}/{len(list(tmp_path.iterdir()))}.db"
        )

    published, _ = _appended(service, _OUT_OF_TIME_ORDER)
    assert [i for i, _ in published] == ["a", "b", "z"]  # by timestamp, ties by id
    with fixes.applied([DB_ORDER]):
        fixed, _ = _appended(service, _OUT_OF_TIME_ORDER)
    assert fixed == _OUT_OF_TIME_ORDER  # as appended, each event's own timestamp


def test_the_session_stamps_an_event_after_the_latest_one_it_holds():
    from google.adk.sessions.in_memory_session_service import InMemorySessionService

    published, _ = _appended(InMemorySessionService, _OUT_OF_TIME_ORDER)
    assert published == _OUT_OF_TIME_ORDER
    with fixes.applied([STAMPS]):
        fixed, appended = _appended(InMemorySessionService, _OUT_OF_TIME_ORDER)
    assert [i for i, _ in fixed] == ["z", "b", "a"]
    stamps = [t for _, t in fixed]
    assert stamps[0] == _OUT_OF_TIME_ORDER[0][1] and stamps[0] < stamps[1] < stamps[2]
    assert stamps[2] - stamps[0] < 1e-5  # a microsecond apart
    assert [e.timestamp for e in appended] == stamps  # the caller's events carry them


def test_a_database_fixture_without_compaction_holds_under_either_fix():
    # A tie of the Runner's clock, reloaded from SQLite (no summary at all):
    # the database's fix reads it back as appended; the time-order fix stamps
    # the tied reply after the message, so there is no tie to reorder.
    path = REPROS / "P7-2.13.0-ecaecf05a54d0f74.json"
    assert [v.invariant for v in _violations(path, ())] == ["P7"]
    assert _violations(path, (DB_ORDER,)) == []
    assert _violations(path, (STAMPS,)) == []


# -- confirmation-of-a-reused-call-id-raises ---------------------------------------------
CONFIRM = "confirmation-resolves-the-call-it-asked-about"
CONFIRMED_REUSED_ID = REPROS / "P0-2.13.0-1574f6cf381756d6.json"


def test_replay_json_classifies_the_reused_id_confirmation_by_its_fix(capsys):
    from compaction_harness.cli import main

    assert main(["replay", "--json", str(CONFIRMED_REUSED_ID)]) == 0
    (entry,) = json.loads(capsys.readouterr().out)["fixtures"]
    fault = "confirmation-of-a-reused-call-id-raises"
    assert entry["label"] == "XFAIL" and entry["invariants"] == ["P0"], entry
    assert entry["faults"] == [fault] and entry["new"] == [], entry
    assert entry["evidence"] == {fault: f"fix {CONFIRM}"}, entry


def test_with_the_fix_the_confirmed_call_runs_after_the_reuse():
    # Not only no exception: the user's confirmation resumes the transfer the
    # first invocation asked about (its real result is stored, in the
    # invocation that asked), and the later lookup with the same id is left be.
    from compaction_harness.adk_runner import run_script_outcome

    logging.disable(logging.WARNING)
    try:
        with fixes.applied([CONFIRM]):
            outcome = run_script_outcome(_case(CONFIRMED_REUSED_ID), triage=False)
    finally:
        logging.disable(logging.NOTSET)
    assert outcome.violations == []
    steps = outcome.observed["session"]["steps"]
    asked = next(s for s in steps if s.get("confirmations") == ["call_0"])
    confirmed = next(
        k for k, s in enumerate(steps) if "adk_request_confirmation" in str(s.get("responses"))
    )
    (result,) = [s for s in steps[confirmed + 1 :] if s.get("responses")]
    assert result["responses"] == [{"id": "call_0", "name": "transfer"}]
    assert result["invocation"] == asked["invocation"]


def _confirmation_events(first: str, confirmed: str, later: str):
    """A call ``call_0`` to ``first``, the framework's request to confirm a call
    ``call_0`` to ``confirmed``, then a later call that reuses ``call_0`` for
    ``later``; and the user's answer."""
    from google.adk.events.event import Event
    from google.genai import types

    def call(name: str, call_id: str, args: dict | None = None) -> Event:
        part = types.Part(function_call=types.FunctionCall(id=call_id, name=name, args=args))
        return Event(author="agent", content=types.Content(role="model", parts=[part]))

    original = {"id": "call_0", "name": confirmed, "args": {}}
    request = call("adk_request_confirmation", "adk-1", {"originalFunctionCall": original})
    return [call(first, "call_0"), request, call(later, "call_0")]


@pytest.fixture
def confirmation_context():
    from google.adk.agents.invocation_context import InvocationContext
    from google.adk.agents.llm_agent import LlmAgent
    from google.adk.sessions.in_memory_session_service import InMemorySessionService
    from google.adk.sessions.session import Session
    from google.adk.tools.function_tool import FunctionTool
    from google.adk.tools.tool_confirmation import ToolConfirmation

    def transfer() -> str:
        return "done"

    def lookup() -> str:
        return "found"

    context = InvocationContext(
        session_service=InMemorySessionService(),
        invocation_id="i1",
        agent=LlmAgent(name="agent", model="gemini-2.0-flash"),
        session=Session(id="s", app_name="app", user_id="u"),
    )
    tools = {
        "transfer": FunctionTool(transfer, require_confirmation=True),
        "lookup": FunctionTool(lookup, require_confirmation=True),
    }
    return context, tools, {"adk-1": ToolConfirmation(confirmed=True)}


def _resolve(context, events, tools, confirmations):
    import asyncio

    from google.adk.flows.llm_flows.tools import _confirmation

    return asyncio.run(
        _confirmation._resolve_confirmation_targets(
            context, events, {"adk-1"}, confirmations, tools
        )
    )


def test_the_fix_checks_the_confirmation_against_the_call_it_asked_about(confirmation_context):
    context, tools, confirmations = confirmation_context
    events = _confirmation_events("transfer", "transfer", "lookup")
    with pytest.raises(ValueError, match="Function call name mismatch for ID 'call_0'"):
        _resolve(context, events, tools, confirmations)
    with fixes.applied([CONFIRM]):
        confirmed, calls = _resolve(context, events, tools, confirmations)
    assert set(confirmed) == {"call_0"} and calls["call_0"].name == "transfer"


def test_the_fix_still_refuses_a_confirmation_that_names_another_call(confirmation_context):
    # The check stays: a request that names a tool the call before it did not
    # call is refused, whatever a later call with the id calls.
    context, tools, confirmations = confirmation_context
    events = _confirmation_events("lookup", "transfer", "transfer")
    refused = pytest.raises(ValueError, match="history has 'lookup', confirmation has 'transfer'")
    with fixes.applied([CONFIRM]), refused:
        _resolve(context, events, tools, confirmations)


# -- P4 and a pending call the fixed prompt builder leaves out ------------------------------
PENDING_BESIDE_ANSWERED = {
    "config": {"compaction_interval": 1, "overlap_size": 0, "call_ids": "per_turn"},
    "operations": [
        {"op": "open", "opener": "user", "chars": 20},
        {"op": "calls", "count": 2, "kind": "interim"},
        {"op": "text"},
        {"op": "calls", "count": 2, "kind": "long_running"},
        {"op": "answer", "picks": [0]},
        {"op": "text"},
        {"op": "answer", "picks": [0]},
        {"op": "text"},
    ],
}


def test_a_pending_call_left_out_beside_its_answered_sibling_is_not_lost():
    # Found by make fuzz FIXES=all. Call ids numbered per turn: the second
    # turn's calls reuse the first turn's ids. With fault 7's fix the pending
    # call_1 of the second turn stays out of the request while its sibling's
    # answer follows the call turn (P2), with compaction and without: P4 took
    # the first turn's call_1, in the baseline only, for the second turn's,
    # and called the second turn lost. Once call_1 is answered, the second
    # turn is sent whole again.
    from compaction_harness.driver import run_script
    from compaction_harness.scripts import Script

    script = Script.from_json(PENDING_BESIDE_ANSWERED)
    runs = []
    logging.disable(logging.WARNING)
    try:
        (published,) = run_script(script, triage=False).violations
        with fixes.applied(list(fixes.FIXES)):
            fixed = run_script(script, triage=False, stop=lambda _, run: runs.append(run))
    finally:
        logging.disable(logging.NOTSET)
    assert published.invariant == "P2" and published.ids == ("call_1",)
    assert fixed.violations == []
    calls = [
        [(p[1], p[2].event) for _, parts in prompt for p in parts if p[0] == "call"]
        for _, _, prompt in runs[-1].run.requests
    ]
    second = calls[-2:]  # the model calls after each answer
    assert second[0][-1:] == [("call_0", "4")]
    assert second[1][-2:] == [("call_0", "4"), ("call_1", "4")]
