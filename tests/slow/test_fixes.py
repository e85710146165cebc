"""The fixes of google-adk's known faults (``compaction_harness.faults``).

Each fix is a unified diff against the release's own source (one per release
whose source needs its own; a fault of older releases only has diffs written
against the newest release it lives on). These tests show, per fix, that its
diff written against the installed release applies to it, that every
fixture recorded for its fault (``known_fault`` in ``tests/repros/``) shows a
violation on ADK as published and holds with the fix, that the fixes compose
(all of them at once; the two fixes of ``_longest_self_contained_prefix``
together), that no fix makes another fixture fail in a new way, and that
``fixes.applied`` leaves ADK's own functions in place when it ends. A test
of a fix the installed release cannot take (its diffs are written against
other releases, and none applies) skips, saying why: run it on the release
the diff names (``make env ADK=2.11.0``).

Several fixtures show a second fault once their first one is fixed
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

from compaction_harness.faults.classify import same_failure
from compaction_harness.sdk.python import fixes
from compaction_harness.sdk.python.adk import ADK_RELEASE, NotApplicable
from compaction_harness.sdk.python.cases import run_with_fixes
from compaction_harness.store.fixtures import load_fixture

REPROS = Path(__file__).parents[1] / "repros"
PYTHON_FIXTURES = sorted(p for p in REPROS.glob("*.json") if "-adk-js-" not in p.name)
DEAD_RETRY = "dead-call-retry-at-every-boundary"
NEWEST_CALL = "newest-invocation-call-never-dead"
RESTORED = "running-request-restored-after-compaction"
DB_ORDER = "database-reads-events-in-append-order"
STAMPS = "session-stamps-events-in-append-order"

#: Fixture -> (the fixes whose run shows the second fault, that fault, why).
SECOND_FAULT = {
    "P2-2.13.0-74df539e2950de4e.json": (
        {"running-request-restored-after-compaction"},
        "credential-grant-runs-another-turns-call",
        "the restored request removes P2; the credential granted for the first "
        "invocation's calendar call_0 still runs the second invocation's lookup call_0, a "
        "call that returned, a second time (P8 on the runner's tool runs) until that "
        "fault's fix resumes the call the request asked about",
    ),
    "P3-2.13.0-cb0dec0b808de2d3.json": (
        {
            "compaction-summarised-around-a-waiting-call",
            "summarised-call-restored-before-its-response",
        },
        "partial-answer-to-parallel-calls-makes-an-invalid-request",
        "the fix summarises the turns after the still pending export, and the stall (P3) is "
        "gone; the client's answer to one of the two parallel exports still makes a request "
        "that pairs both calls with one response (P2) until that fault's fix. On 2.4.0 the "
        "run stops at the prompt builder's raise; with the restored call it goes on, and "
        "shows the faults the fixture is marked with (their fixes are 2.13.0's)",
    ),
    **{
        fixture: (
            {"summarised-call-restored-before-its-response"},
            "sliding-window-splits-call-pairs",
            "on 1.27.5 the restored call removes the raise (P0); the range that split the "
            "pair (P1) is the other fault's, and goes with its fix",
        )
        for fixture in ("P0-1.16.0-0bc95882cbdd14e8.json", "P1-1.16.0-8ccf32ff6c0bbcf8.json")
    },
    "P6-2.13.0-77a17de9883c3f48.json": (
        {DEAD_RETRY, "orphaned-call-retries-past-dead-calls"},
        "compaction-assumes-events-are-stored-in-time-order",
        "with the retry (on 2.11.0: the retry its fix adds, which runs at every boundary "
        "too), summary#2 takes invocation 3; the confirmation request is stamped "
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
    "P4-2.13.0-ec0ef013e096b78a.json": (
        {"summary-leaves-out-branch-events"},
        "token-compaction-summarises-the-running-request",
        "the branch fix writes one summary per branch (P5 goes); the summary made before "
        "a model call still takes the running invocation's user message (P2) until that "
        "fault's fix keeps it out",
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


#: A fix -> (the fix it needs beside it, the fixture that shows why): where a
#: release takes the first and not the second (2.13.0's token-split diff
#: applies to 2.4.0, the sliding window's refusal does not), the fixture shows
#: what the second fix removes.
COMPANIONS = {
    "token-split-ignores-callless-responses": (
        "sliding-window-refuses-a-range-with-nothing-new",
        "P6-2.13.0-823b5d1be61c9fc9.json",
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


#: The waiting-invocation fault beside a fixture's own: the fixture resumes an
#: invocation (a client's answer, the user's approval) after the summary at its
#: pause took the user's request, and the resumed turn's model calls are sent
#: the summary without it (P2) until running-request-restored-after-compaction.
#: Seen since the drivers keep an invocation's opener for the turns that resume
#: it (before, a resumed turn was checked for no request at all).
WAITING = "compaction-summarises-a-waiting-invocations-request"
RESUMED = {
    "P4-2.13.0-559982f908d1158b.json": "responses-follow-only-their-own-call-turn",
    "P2-2.13.0-e5fcf62560426260.json": "pending-call-left-out-beside-answered-siblings",
    "P4-2.13.0-a18174061704bbf3.json": "pending-call-left-out-beside-answered-siblings",
    "P3-2.13.0-cb0dec0b808de2d3.json": "compaction-summarised-around-a-waiting-call",
    "P0-2.13.0-1574f6cf381756d6.json": "confirmation-resolves-the-call-it-asked-about",
}
#: More faults beside a fixture's own, in SECOND_FAULT's form, where one fixture
#: shows several: the fixes after which each shows, and the fault.
MORE_FAULTS: dict[str, list[tuple[set[str], str, str]]] = {
    name: [({fix}, WAITING, "the approval or answer resumes a summarised request")]
    for name, fix in RESUMED.items()
}
MORE_FAULTS["P2-2.13.0-17d677ecb03a9246.json"] = [
    (
        {STAMPS},
        fault,
        "stamped in order, the skew hides nothing; the client's answers then resume the "
        "summarised invocation (P2) and one answers calls of several turns (P2)",
    )
    for fault in (WAITING, "one-answer-to-several-turns-makes-an-invalid-request")
]
MORE_FAULTS["P3-2.13.0-e8fa0949822ee1b3.json"] = [
    (
        {"partial-read-loads-the-answered-call"},
        fault,
        "with the answered call's invocation loaded the client's answer runs, and the token "
        "trigger before the resumed invocation's model call summarises its user message (P2), "
        "each until its fix",
    )
    for fault in ("token-compaction-summarises-the-running-request", WAITING)
]
MORE_FAULTS["P4-2.13.0-7cfbc5401201b973.json"] = [
    (
        {"token-compaction-keeps-the-running-invocation"},
        fault,
        "with the running invocation kept and the latest update of the first export "
        "re-injected, the client's answer to one of the two parallel exports is paired "
        "with both calls (P2), the resumed invocation's summarised request stays out (P2), "
        "and the sliding window stalls behind the waiting export (P3), each until its fix",
    )
    for fault in (
        "partial-answer-to-parallel-calls-makes-an-invalid-request",
        WAITING,
        "compaction-stops-while-a-call-waits",
    )
]
MORE_FAULTS["P1-2.13.0-2fee07590c2015ff.json"] = [
    (
        {NEWEST_CALL},
        "token-compaction-summarises-the-running-request",
        "with the newest invocation's call protected, the summary made before a model call "
        "of the running invocation takes its user message (P2) until that fault's fix",
    )
]


#: Fixtures whose violation only several fixes remove together (classification
#: names every fault of the smallest such set): the fixture's own fault's fix
#: is needed, and so are these.
TOGETHER = {
    # The authorised tool runs with its own fix; its answer (calendar's call_0)
    # still follows lookup's call_0 until responses are paired by id and tool
    # name, and the resumed invocation's summarised request stays out until it
    # is restored.
    "P2-2.13.0-dbc399bf4f4bca55.json": (
        "responses-follow-only-their-own-call-turn",
        "running-request-restored-after-compaction",
    ),
    # The restored request lies between invocation 3's call_0 and invocation
    # 1's result until that result is attributed to its own invocation's call.
    "P2-2.13.0-043e7a7ba8ff8648.json": ("responses-follow-only-their-own-call-turn",),
    # Nothing loaded before the user's confirmation (num_recent_events=0): it
    # raises until the answered call is loaded, and the resumed invocation's
    # summarised request stays out until it is restored.
    "P6-2.13.0-5143d9ff5f0f1e0e.json": (
        "partial-read-loads-the-answered-call",
        "running-request-restored-after-compaction",
    ),
}


def _entries(path: Path, names: set[str]) -> list[tuple[set[str], str, str]]:
    """The SECOND_FAULT and MORE_FAULTS entries of ``path`` that any of the
    fixes ``names`` brings out."""
    entries = [SECOND_FAULT[path.name]] if path.name in SECOND_FAULT else []
    entries += MORE_FAULTS.get(path.name, [])
    return [e for e in entries if e[0] & names]


def _second_fault_shows(path: Path, names: set[str]) -> bool:
    return bool(_entries(path, names))


FAULT_FIXTURES = [
    pytest.param(name, path, id=f"{name}:{path.stem}")
    for name, fix in fixes.FIXES.items()
    for fault_id in fix.faults
    for path in _fixtures_of(fault_id)
]

#: The fixes the installed release can take (on the pinned release: every fix
#: with a diff written against it, which the first test asks of each).
AVAILABLE = tuple(n for n in fixes.FIXES if fixes.unavailable(n) is None)


def _needs(name: str) -> None:
    """Skip unless the installed release can take the fix ``name``; a fix
    with a diff written against the installed release must apply (the first
    test fails otherwise, and so does the test that calls this)."""
    if ADK_RELEASE in fixes.fix_named(name).diffs():
        return
    why = fixes.unavailable(name)
    if why is not None:
        pytest.skip(why)


@pytest.mark.parametrize("name", list(fixes.FIXES))
def test_the_diff_applies_to_the_installed_release(name):
    fix = fixes.fix_named(name)
    if ADK_RELEASE not in fix.diffs():
        pytest.skip(f"the diffs of {name} are written against {', '.join(fix.diffs())}")
    assert fixes.unavailable(name) is None
    assert fixes.diff_release(name) == ADK_RELEASE
    assert fix.diff_text().startswith("--- a/google/adk/")


@pytest.mark.parametrize("name", list(fixes.FIXES))
def test_each_diff_is_written_against_a_release_its_fault_lives_on(name):
    # The pinned release's diff fixes a fault of the pinned release; a diff of
    # an older release, a fault the release matrix shows there.
    from compaction_harness import DEFAULT_ADK_RELEASE
    from compaction_harness.faults.catalogue import fault_for

    fix = fixes.fix_named(name)
    assert fix.diffs(), name
    for release, path in fix.diffs().items():
        assert path.read_text(encoding="utf-8").startswith("--- a/google/adk/"), path
        if release != DEFAULT_ADK_RELEASE:
            assert any(release in fault_for(f).releases for f in fix.faults), (name, release)


@pytest.mark.parametrize("name", list(fixes.FIXES))
def test_every_fix_has_fixtures_of_its_faults(name):
    for fault_id in fixes.FIXES[name].faults:
        assert _fixtures_of(fault_id), fault_id


@pytest.mark.parametrize(("name", "path"), FAULT_FIXTURES)
def test_the_faults_fixture_fails_without_its_fix_and_holds_with_it(name, path):
    _needs(name)
    before = _violations(path, ())
    recorded_on = load_fixture(path).adk_release
    if not before and recorded_on != ADK_RELEASE:
        pytest.skip(f"{path.name} (recorded on {recorded_on}) holds on {ADK_RELEASE}")
    assert before, f"{path.name} shows no violation on ADK as published"
    after = _violations(path, (name,))
    kept = [v for v in before if any(same_failure(v, w) for w in after)]
    if path.name in TOGETHER:
        others = TOGETHER[path.name]
        assert _violations(path, others), "the other fixes alone remove it: drop TOGETHER's entry"
        assert _violations(path, (name, *others)) == []
    elif _second_fault_shows(path, {name}):
        assert after, "the second fault no longer shows: drop its SECOND_FAULT entry"
        assert len(kept) < len(before), "the fix removes none of the fixture's violations"
        # What the fix leaves is the second fault's: its fix, where it has one,
        # removes the rest of what ADK as published shows.
        seconds = {entry[1] for entry in _entries(path, {name})}
        theirs = tuple(n for n, f in fixes.FIXES.items() if seconds & set(f.faults))
        if theirs:
            both = _violations(path, (name, *theirs))
            assert not [v for v in before if any(same_failure(v, w) for w in both)]
    else:
        assert not kept
        assert after == [], [v.message for v in after]


def test_the_second_fault_of_the_dead_retry_fixture_is_time_order():
    from compaction_harness.sdk.python.driver import run_script

    _needs(DEAD_RETRY)

    path = REPROS / "P6-2.13.0-77a17de9883c3f48.json"
    with fixes.applied([DEAD_RETRY]):
        (left,) = run_script(_case(path)).violations
        steady = run_script(_case(path), monotonic=True).violations
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
    for name in names:
        _needs(name)
    before = _violations(path, ())
    # A second fault the two bring out goes with its own fix.
    seconds = {entry[1] for entry in _entries(path, set(names))}
    theirs = tuple(n for n, f in fixes.FIXES.items() if seconds & set(f.faults))
    after = _violations(path, (*names, *theirs))
    assert not [v for v in before if any(same_failure(v, w) for w in after)]
    assert after == [] or _second_fault_shows(path, set(names))


def test_all_fixes_apply_together_and_compose_hunk_by_hunk():
    names = list(AVAILABLE)
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
    recorded_on = load_fixture(path).adk_release
    if recorded_on != ADK_RELEASE:
        # On another release the fixes that apply there make other code run
        # (1.27.5's pair protection stops at a waiting call as 2.13.0 does):
        # what shows then is judged by that release's own fixtures.
        pytest.skip(f"{path.name} is recorded on {recorded_on}")
    before = _violations(path, ())
    every = AVAILABLE
    if _second_fault_shows(path, set(every)):
        return
    for fix, companion in COMPANIONS.items():
        if path.name == companion[1] and fix in every and companion[0] not in every:
            pytest.skip(
                f"with {fix}, {path.name} needs {companion[0]}, which google-adk "
                f"{ADK_RELEASE} cannot take (test_a_fix_that_lets_token_compaction_run...)"
            )
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
    for name in (
        "responses-follow-only-their-own-call-turn",
        "pending-call-left-out-beside-answered-siblings",
        "summary-priced-by-the-summarizers-own-output",
    ):
        _needs(name)
    from google.adk.apps import compaction
    from google.adk.flows.llm_flows.context import _contents
    from google.adk.flows.llm_flows.tools import _rearranger

    originals = _adk_functions()
    rearrange = _rearranger.rearrange_events_for_async_function_responses_in_history
    with fixes.applied(AVAILABLE):
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
    # (Every run here has the waiting-invocation fault's fix: the client's
    # answer resumes an invocation whose request the window summarised, P2.)
    _needs("token-split-ignores-callless-responses")
    _needs("sliding-window-refuses-a-range-with-nothing-new")
    _needs(RESTORED)
    path = REPROS / "P6-2.13.0-823b5d1be61c9fc9.json"
    assert {v.invariant for v in _violations(path, ())} == {"P2"}
    assert _violations(path, (RESTORED,)) == []
    (wasted,) = _violations(path, (RESTORED, "token-split-ignores-callless-responses"))
    assert wasted.invariant == "P6" and "covers no live event" in wasted.message
    both = (
        RESTORED,
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
    from compaction_harness.surfaces.cli import main

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
    from compaction_harness.sdk.python.adk_runner import run_script_outcome

    logging.disable(logging.WARNING)
    try:
        # (With the waiting-invocation fault's fix: the confirmation resumes
        # the transfer's invocation, whose request the window summarised.)
        with fixes.applied([CONFIRM, RESTORED]):
            outcome = run_script_outcome(_case(CONFIRMED_REUSED_ID))
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
    from compaction_harness.sdk.python.driver import run_script
    from compaction_harness.spec.scripts import Script

    script = Script.from_json(PENDING_BESIDE_ANSWERED)
    runs = []
    logging.disable(logging.WARNING)
    try:
        published, *others = run_script(script).violations
        with fixes.applied(AVAILABLE):
            fixed = run_script(script, stop=lambda _, run: runs.append(run))
    finally:
        logging.disable(logging.NOTSET)
    assert published.invariant == "P2" and published.ids == ("call_1",)
    # and the answer resumes the first invocation, whose request was summarised
    assert others and {v.details.get("cause") for v in others} == {"opener missing"}
    assert fixed.violations == []
    calls = [
        [(p[1], p[2].event) for _, parts in prompt for p in parts if p[0] == "call"]
        for _, _, prompt in runs[-1].run.requests
    ]
    second = calls[-2:]  # the model calls after each answer
    assert second[0][-1:] == [("call_0", "4")]
    assert second[1][-2:] == [("call_0", "4"), ("call_1", "4")]


def test_the_branch_fix_keeps_branch_summaries_stored_before_a_calls_latest_answer():
    # Found by make fuzz FIXES=all: with one summary per branch, the branch
    # summaries #8 and #9 are stored after lookup's call (#3) and before a
    # client's second answer to it (#10). The latest-response rearrangement
    # keeps the events up to #3 and merges the responses; before the branch
    # fix kept what lies between, both summaries went, and the branch replies
    # #1 and #2 they hide were lost (P4). The rearrangement as published is
    # put back inside the fixes to show the loss.
    from google.adk.flows.llm_flows.tools import _rearranger

    from compaction_harness.sdk.python.driver import run_script

    script = _case(REPROS / "P4-2.13.0-ec0ef013e096b78a.json")
    both = ("summary-leaves-out-branch-events", "token-compaction-keeps-the-running-invocation")
    published = _rearranger.rearrange_events_for_latest_function_response
    runs = []
    logging.disable(logging.WARNING)
    try:
        with fixes.applied(both):
            kept = run_script(script, stop=lambda _, run: runs.append(run)).violations
            patched = _rearranger.rearrange_events_for_latest_function_response
            assert patched is not published
            bound = [
                (module, attr)
                for name, module in list(sys.modules.items())
                if name.startswith("google.adk") and module is not None
                for attr, value in list(vars(module).items())
                if value is patched
            ]
            for module, attr in bound:
                setattr(module, attr, published)
            try:
                dropped = run_script(script).violations
            finally:
                for module, attr in bound:
                    setattr(module, attr, patched)
    finally:
        logging.disable(logging.NOTSET)
    assert kept == []
    assert sorted(v.positions for v in dropped if v.invariant == "P4") == [(1,), (2,)]
    prompt = [
        (role, [p[1] if p[0] == "text" else p[0] for p in parts])
        for role, parts in runs[-1].run.requests[-1][2]
    ]
    # both summaries (and the client's record) stay, in order, before the call
    assert prompt[-4:] == [
        ("model", ["summary#0"]),
        ("model", ["summary#1"]),
        ("model", ["call"]),
        ("user", ["response"]),
    ]


#: Faults that only releases older than the pinned one have: (fixture, a
#: release its fix has a diff written against, the fix). Each replays as the
#: known fault on that release as published, and holds there with the fix.
OLDER_RELEASES = [
    *(
        (fixture, release, "orphaned-call-retries-past-dead-calls")
        for release in ("2.11.0", "2.4.0")
        for fixture in (
            "P3-2.11.0-b05d345640cc27ad.json",
            "P6-2.11.0-6b20c57ef2b3b8fe.json",
            "U3-2.11.0-fa8ad53970ec0bb0.json",
        )
    ),
    # On 1.27.5 the fixture shows both of its faults: the split pair (P1) is
    # sliding-window-splits-call-pairs, the raise (P0) both faults (each fix
    # removes it); it holds only with both fixes (test below).
    ("P1-1.16.0-8ccf32ff6c0bbcf8.json", "1.27.5", "compaction-ranges-keep-call-pairs"),
    ("P0-1.18.0-d92d9374b63113a8.json", "1.21.0", "reloaded-actions-validated"),
]


@pytest.mark.parametrize(
    ("fixture", "release", "name"),
    [pytest.param(f, r, n, id=f"{r}:{f}") for f, r, n in OLDER_RELEASES],
)
def test_replay_on_an_older_release_is_the_fault_without_its_fix_and_holds_with_it(
    fixture, release, name, capsys
):
    from compaction_harness.surfaces import cli

    if release != ADK_RELEASE:
        pytest.skip(f"the fix {name} is written against google-adk {release}")
    path = str(REPROS / fixture)
    fault = _known_fault(REPROS / fixture)
    assert cli.main(["replay", path]) == 0
    out = capsys.readouterr().out
    assert f"XFAIL {path} on google-adk {release}: known upstream fault" in out
    assert f"{fault} (fix {name})" in out
    assert cli.main(["replay", "--fixes", name, path]) == 0
    assert f"holds with fix {name}" in capsys.readouterr().out
    assert fixes.diff_release(name) == release


def test_a_fix_takes_the_diff_written_against_the_installed_release_else_one_that_applies(
    tmp_path, monkeypatch
):
    import difflib

    path = "google/adk/apps/compaction.py"
    head = fixes._installed_source(path).splitlines(keepends=True)[:4]
    fixed = [head[0], "# fixed\n", *head[1:]]  # a comment: no definition changes
    good = "".join(difflib.unified_diff(head, fixed, f"a/{path}", f"b/{path}"))
    stale = f"--- a/{path}\n+++ b/{path}\n@@ -1,1 +1,1 @@\n-no line reads so\n+nor so\n"
    monkeypatch.setattr(fixes, "PATCHES", tmp_path)

    def write(release: str, name: str, text: str) -> None:
        (tmp_path / release).mkdir(exist_ok=True)
        (tmp_path / release / name).write_text(text, encoding="utf-8")

    # No diff for the installed release: the newest that applies.
    write("9.9.9", "older.diff", stale)
    write("0.0.1", "older.diff", good)
    older = fixes.Fix("older-releases", ("f",), "diffs of other releases", "older.diff")
    monkeypatch.setitem(fixes.FIXES, older.name, older)
    assert list(older.diffs()) == ["9.9.9", "0.0.1"]
    assert fixes.diff_release(older.name) == "0.0.1"
    assert fixes.unavailable(older.name) is None
    # A diff for the installed release is the one: another that applies is not tried.
    write(ADK_RELEASE, "own.diff", stale)
    write("0.0.1", "own.diff", good)
    own = fixes.Fix("own-release", ("f",), "a stale diff of the installed release", "own.diff")
    monkeypatch.setitem(fixes.FIXES, own.name, own)
    with pytest.raises(NotApplicable):
        fixes.diff_release(own.name)
    why = fixes.unavailable(own.name)
    assert why == (
        f"the fix own-release does not apply to google-adk {ADK_RELEASE}'s own source "
        f"(its diff written against {ADK_RELEASE})"
    )


def test_on_1_27_5_the_raise_is_both_faults_and_the_fixture_holds_only_with_both_fixes():
    if ADK_RELEASE != "1.27.5":
        pytest.skip("the fixes of the two faults are written against google-adk 1.27.5")
    restore, pairs = (
        "summarised-call-restored-before-its-response",
        "compaction-ranges-keep-call-pairs",
    )
    for fixture in ("P0-1.16.0-0bc95882cbdd14e8.json", "P1-1.16.0-8ccf32ff6c0bbcf8.json"):
        path = REPROS / fixture
        before = _violations(path, ())
        assert sorted(v.invariant for v in before) == ["P0", "P1"], fixture
        # The restored call removes the raise; the split pair stays.
        assert [v.invariant for v in _violations(path, (restore,))] == ["P1"]
        assert _violations(path, (pairs,)) == []  # no pair split, nothing to raise on
        assert _violations(path, (restore, pairs)) == []


def test_on_2_4_0_the_restored_call_removes_the_raise():
    # On 2.4.0 the fault shows on a 2.13.0 fixture of other faults: its P0 goes
    # with the fix; what shows then is the faults the fixture is marked with,
    # whose fixes are written against 2.13.0.
    if ADK_RELEASE != "2.4.0":
        pytest.skip("the fix's diff is written against google-adk 2.4.0 (and 1.27.5)")
    path = REPROS / "P3-2.13.0-cb0dec0b808de2d3.json"
    before = _violations(path, ())
    assert [v.invariant for v in before] == ["P0"]
    assert "No function call event found" in before[0].message
    after = _violations(path, ("summarised-call-restored-before-its-response",))
    assert after and not [v for v in after if v.invariant == "P0"]


@pytest.mark.skipif(ADK_RELEASE != "2.13.0", reason="the fixture and its fixes are 2.13.0's")
def test_a_module_first_imported_under_a_fix_keeps_none_of_it():
    # An ADK module imported for the first time while a fix is on (here: by
    # the script's run) binds the fixed functions by name; when the fix ends
    # it must get ADK's own back. It kept them once: a later replay of
    # P4-2.13.0-a8419d14ef6e4140 then met a known fault where alone it holds.
    # A fresh interpreter, so that the run imports those modules under the fix.
    import subprocess

    script = f"""
import sys, types
from compaction_harness.sdk.python import fixes
from compaction_harness.sdk.python.driver import run_script
from compaction_harness.store.fixtures import load_fixture
case = load_fixture({str(REPROS / "P4-2.13.0-a18174061704bbf3.json")!r}).case
names = ["pending-call-left-out-beside-answered-siblings",
         "compaction-summarised-around-a-waiting-call"]
with fixes.applied(names):
    run_script(case)
left = sorted(
    f"{{m.__name__}}.{{k}}"
    for m in list(sys.modules.values())
    if (getattr(m, "__name__", None) or "").startswith("google.adk")
    for k, v in list(vars(m).items())
    if getattr(getattr(v, "__func__", v), "__harness_fix__", False)
)
print("left:", left)
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().endswith("left: []"), done.stdout[-2000:]


def test_a_fix_is_tried_alone_only_where_the_run_calls_what_it_replaces() -> None:
    """``fixes.could_change``: a deterministic run that calls none of a
    fix's replaced functions runs the same code with the fix applied, so the
    fix cannot change it; one that calls them can. The fixture of the
    dead-call retry calls ADK's prefix helper, never a session service."""
    from compaction_harness.sdk.python.cases import run_case
    from compaction_harness.sdk.python.fixes import could_change

    fixture = load_fixture(REPROS / "U3-2.13.0-e3f99bee2b15adeb.json")
    runs = []
    could = could_change(lambda: runs.append(run_case(fixture.case)), AVAILABLE)
    assert runs == []  # nothing is run before the first question
    assert could("dead-call-retry-at-every-boundary")
    assert not could("database-reads-events-in-append-order")
    assert not could("session-stamps-events-in-append-order")
    assert len(runs) == 1  # one run answers every question
    assert runs[0].violations  # the run as it ran: the fault shows
