"""A user's own app through ADK's ``Runner``: the property ``check`` runs.

``python -m compaction_harness check MODULE:ATTR`` runs
:func:`test_the_app_meets_p0_to_p7` as a campaign on the app it names
(``HARNESS_CHECK_APP``); the gate and ``make fuzz`` run it on the example
app (``examples.support:app``). The rest of the module holds the app
reading and the runner driver on a user's app to what they claim.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_adk_runner import judge_on_the_runner

from compaction_harness.sdk.python.adk import NotApplicable, helper_availability
from compaction_harness.sdk.python.adk_runner import run_script_outcome, run_script_with_runner
from compaction_harness.sdk.python.cases import judge
from compaction_harness.sdk.python.user_app import AppError, load, read_app
from compaction_harness.spec.app_shape import AppShape
from compaction_harness.spec.model import ModelError
from compaction_harness.spec.scripts import (
    Ask,
    Calls,
    Delegate,
    FanOut,
    Open,
    Reply,
    Script,
    ScriptConfig,
    Text,
)
from compaction_harness.surfaces.app_check import app_config
from strategies import app_scripts

REPROS = Path(__file__).resolve().parents[1] / "repros"

#: The app the property checks: ``check``'s, or the example app.
APP = os.environ.get("HARNESS_CHECK_APP") or "examples.support:app"
#: Invariants a ``check`` campaign already found failing (its later rounds
#: look for the others).
EXCLUDED = {i for i in os.environ.get("HARNESS_CHECK_EXCLUDE", "").split(",") if i}

pytestmark = pytest.mark.skipif(
    helper_availability()["_events_to_compact_for_token_threshold"] is not None,
    reason="the example app uses token-threshold compaction (1.26.0 and later)",
)


def _config() -> ScriptConfig:
    """The app's configuration, with ``check --config``'s trigger values
    (``HARNESS_CHECK_CONFIG``), session service (``HARNESS_CHECK_STORAGE``)
    and partial read (``HARNESS_CHECK_RECENT_EVENTS``: ``--recent-events``)."""
    reading = read_app(load(APP), APP)
    if os.environ.get("HARNESS_CHECK_CONFIG"):
        reading = replace(reading, triggers=json.loads(os.environ["HARNESS_CHECK_CONFIG"]))
    storage = (
        os.environ.get("HARNESS_CHECK_STORAGE") or os.environ.get("HARNESS_STORAGE") or "memory"
    )
    recent = os.environ.get("HARNESS_CHECK_RECENT_EVENTS")
    return app_config(
        reading,
        excluded=EXCLUDED,
        storage=storage,
        recent_events=int(recent) if recent else None,
    )


def _report(script: Script, found: list) -> None:
    """One line per script run in ``check``'s report (``HARNESS_CHECK_REPORT``)."""
    path = os.environ.get("HARNESS_CHECK_REPORT")
    if path:
        line = {"operations": len(script.operations), "violations": [v.invariant for v in found]}
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps(line) + "\n")


@pytest.mark.property(weight=2)
@settings(max_examples=10)
@given(script=st.deferred(lambda: app_scripts(_config(), call_ids=False)))
def test_the_app_meets_p0_to_p7(script: Script) -> None:
    """P0 to P7 on the app's shape, through the ``Runner``; a failure's
    fixture is a script on the app (``config.app``), as run."""
    judge_on_the_runner(script, report=_report)


# -- reading an app ---------------------------------------------------------------
def test_the_example_app_reads_as_its_agents_tools_and_triggers() -> None:
    reading = read_app(load("examples.support:app"), "examples.support:app")
    assert reading.shape == AppShape(
        name="support_desk",
        agent="support",
        tools=(
            ("plain", "lookup_order"),
            ("long_running", "request_refund_approval"),
            ("confirmation", "issue_store_credit"),
        ),
        team="specialists",
        branches=("billing", "shipping"),
        source="examples.support:app",
    )
    assert reading.triggers == {
        "compaction_interval": 3,
        "overlap_size": 1,
        "token_threshold": 1_500,
        "event_retention_size": 4,
    }
    assert reading.system_chars > 200 and reading.tools_chars > 300
    assert any("credential" in note for note in reading.notes)


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ("examples.support", "expected MODULE:ATTR"),
        ("examples.nowhere:app", "does not import: ModuleNotFoundError"),
        ("examples.support:nothing", "has no attribute 'nothing'"),
        ("examples.support:MODEL", "is a str, not a google.adk App or agent"),
        ("examples.support:lookup_order", "is a function, not a google.adk App or agent"),
    ],
)
def test_an_app_that_cannot_be_loaded_is_one_line(spec: str, said: str) -> None:
    with pytest.raises(AppError, match=said) as refused:
        load(spec)
    assert "\n" not in str(refused.value)


def test_shapes_refuse_names_adk_would_refuse() -> None:
    with pytest.raises(ModelError, match="identifier"):
        AppShape(agent="my agent")
    with pytest.raises(ModelError, match="differ"):
        AppShape(agent="a", helper="a")
    with pytest.raises(ModelError, match="two branches"):
        AppShape(team="t")
    shape = AppShape(name="x", agent="y", tools=(("plain", "z"),), source="m:a")
    assert AppShape.from_json(shape.to_json()) == shape


# -- the runner driver on a user's app ----------------------------------------------
SHOP = AppShape(
    name="shop",
    agent="clerk",
    tools=(("plain", "find_item"), ("confirmation", "charge_card")),
    helper="auditor",
    root="front_desk",
)


def _on(shape: AppShape, *ops) -> Script:
    config = ScriptConfig(compaction_interval=1, overlap_size=0, driver="runner", app=shape)
    return Script(config, (Open(), *ops))


def test_a_run_on_a_users_app_stores_its_agent_and_tool_names() -> None:
    run = run_script_with_runner(
        _on(SHOP, Calls(), Text(), Open(), Ask(), Reply(), Text(), Open(), Delegate(), Text()),
        tree="director",
    )
    authors = {s.author for s in run.session if s.compaction is None}
    assert authors == {"user", "clerk", "auditor"}
    names = {c.name for s in run.session for c in s.calls}
    assert names == {"find_item", "charge_card", "adk_request_confirmation"}
    assert run.summaries, "the app's compaction ran"
    assert not run.violations


def test_what_the_app_lacks_is_dropped_and_said() -> None:
    """No long-running tool, no credential tool, no parallel agent: those
    operations do nothing, and the run says so (a script drawn for the app
    never has them; a hand-edited one is repaired, never misnamed)."""
    script = _on(SHOP, Calls(kind="long_running"), Ask(kind="auth"), FanOut(), Text())
    run = run_script_with_runner(script, tree="director", repair=True)
    assert [op.op for op in run.script.operations] == ["open", "text"]
    assert any("has no long_running tool" in r for r in run.repairs)
    assert any("has no parallel agent" in r for r in run.repairs)


def test_the_emulating_driver_refuses_a_users_app() -> None:
    from compaction_harness.sdk.python.driver import run_script

    with pytest.raises(NotApplicable, match="runs through ADK's Runner"):
        run_script(replace(_on(SHOP, Text()), config=replace(_on(SHOP).config, driver="emulated")))


# -- a second app, written only for this test --------------------------------------
def test_a_second_app_is_read_with_its_own_tree_and_tools() -> None:
    reading = read_app(load("travel_app:app"), "travel_app:app")
    assert reading.shape == AppShape(
        name="travel",
        agent="researcher",
        tools=(("plain", "search_flights"), ("long_running", "hold_booking")),
        helper="writer",
        root="trip_planner",
        source="travel_app:app",
    )
    assert reading.triggers["compaction_interval"] == 2
    assert reading.triggers["token_threshold"] is None
    notes = " ".join(reading.notes)
    assert "search_hotels is plain" in notes and "critic" in notes and "SequentialAgent" in notes


SECOND = []


@settings(max_examples=8, derandomize=True, database=None, deadline=None)
@given(
    script=st.deferred(
        lambda: app_scripts(app_config(read_app(load("travel_app:app"), "travel_app:app")))
    )
)
def _second_app_scripts(script: Script) -> None:
    outcome = judge(script, run_script_outcome(script))
    SECOND.append((script, outcome))


def test_a_second_app_runs_through_the_runner_under_its_own_names() -> None:
    SECOND.clear()
    _second_app_scripts()
    stored = [s for _, o in SECOND for s in o.observed["session"]["steps"]]
    authors = {s["author"] for s in stored}
    assert authors == {"user", "researcher", "writer"}  # Delegate ran the writer
    tools = {c["name"] for s in stored for c in s.get("calls", [])}
    assert tools and tools <= {"search_flights", "hold_booking"}
    assert not [v for _, o in SECOND for v in o.violations], "a new violation on a plain app"


# -- the command's bad input: one line, exit 2 -------------------------------------
@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["examples.nowhere:app"], "module 'examples.nowhere' does not import"),
        (["examples.support:MODEL"], "is a str, not a google.adk App or agent"),
        (["examples.support:support"], "no events_compaction_config"),
        (["examples.support:app", "--config", "{"], "--config: not JSON"),
        (["examples.support:app", "--config", '{"interval": 3}'], "--config: expected an object"),
        (
            [
                "examples.support:app",
                "--session-service-uri",
                "postgresql+asyncpg://u@127.0.0.1:1/db",
            ],
            "cannot create the scratch database harness_check",
        ),
        (
            ["examples.support:app", "--session-service-uri", "redis://localhost"],
            "unsupported scheme 'redis'",
        ),
        (["examples.support:app", "--session-service-uri", "session.db"], "expected SCHEME://"),
        (["examples.support:app", "--seconds", "3"], "a campaign needs at least 10 seconds"),
        (["examples.support:app", "--config", "{}"], "no trigger"),
        (
            ["examples.support:app", "--config", '{"compaction_interval": 3}'],
            "compaction_interval and overlap_size must be set together",
        ),
        (
            ["examples.support:app", "--config", '{"compaction_interval": "3", "overlap_size": 1}'],
            "config.compaction_interval: expected a non-negative integer",
        ),
    ],
)
def test_check_refuses_bad_input_in_one_line(capsys, argv: list[str], said: str) -> None:
    from compaction_harness.surfaces.cli import main

    assert main(["check", "--seconds", "10", *argv]) == 2  # argv's own --seconds wins
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and said in err, err


# -- the known faults a configuration can meet ---------------------------------------
def test_reachable_faults_follow_the_apps_triggers_and_tools() -> None:
    from compaction_harness.surfaces.app_check import reachable_faults

    example = app_config(read_app(load("examples.support:app"), "examples.support:app"))
    both = {f.id for f, _ in reachable_faults(example, "2.13.0")}
    assert "token-compaction-summarises-the-running-request" in both
    assert "summary-leaks-branch-events-to-siblings" in both
    # The stall is a fault of 2.3.0 to 2.11.0 (the release matrix says so).
    assert "orphaned-call-stalls-compaction-for-good" not in both
    assert "orphaned-call-stalls-compaction-for-good" in {
        f.id for f, _ in reachable_faults(example, "2.11.0")
    }
    # No token threshold: no fault whose every fixture needs one.
    sliding = replace(example, token_threshold=None, event_retention_size=None)
    assert "token-compaction-summarises-the-running-request" not in {
        f.id for f, _ in reachable_faults(sliding, "2.13.0")
    }
    # A stored session's faults only on the store the check runs on.
    assert "database-reload-reorders-events-by-timestamp" not in both
    on_sqlite = {f.id for f, _ in reachable_faults(replace(example, storage="sqlite"), "2.13.0")}
    assert "database-reload-reorders-events-by-timestamp" in on_sqlite
    # The branch leak needs a parallel pair: not for the app without its team
    # (found by a newcomer: a session fixture of branch events, which has no
    # operations to tell, was listed for any app).
    alone = replace(example, app=replace(example.app, team=None, branches=()))
    assert "summary-leaks-branch-events-to-siblings" not in {
        f.id for f, _ in reachable_faults(alone, "2.13.0")
    }


# -- the session service ------------------------------------------------------------
def test_session_service_uris_as_adk_web_takes_them() -> None:
    from compaction_harness.surfaces.app_check import storage_of

    assert storage_of(None) == storage_of("memory://") == "memory"
    assert storage_of("sqlite:///.adk/session.db") == "sqlite"
    assert storage_of("sqlite://") == "memory"  # ADK's registry: no path, in memory
    assert storage_of("postgresql+asyncpg://u@db.internal/sessions") == "postgresql"
    assert storage_of("mysql+aiomysql://u@db.internal/sessions") == "mariadb"


@pytest.mark.parametrize("kind", ("postgresql", "mariadb"))
def test_check_on_a_users_server_keeps_to_a_scratch_database(
    kind, database_server, monkeypatch, tmp_path
) -> None:
    """``--session-service-uri`` naming a user's server: the campaign runs in
    the database harness_check there (created on first use), and the
    database the URI names, with a table of the user's, is left as it was."""
    import asyncio

    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import create_async_engine

    from compaction_harness.sdk.python.adk_helpers import database_url
    from compaction_harness.spec.scripts import SERVER_URL_VARIABLES
    from compaction_harness.surfaces import app_check
    from compaction_harness.surfaces.cli_common import CliError

    database_server(kind)
    users = database_url(kind)  # the server's own database stands for the user's
    monkeypatch.delenv(SERVER_URL_VARIABLES[kind])

    async def sql(statement: str) -> list:
        engine = create_async_engine(users)
        try:
            async with engine.begin() as connection:
                result = await connection.execute(text(statement))
                return list(result) if result.returns_rows else []
        finally:
            await engine.dispose()

    asyncio.run(sql("CREATE TABLE orders (id INT)"))
    asyncio.run(sql("INSERT INTO orders VALUES (7)"))
    seen = {}

    def run(argv, **kwargs):
        seen.update(env=kwargs["env"])
        # What the campaign's first script does on its store: empty it.
        scripts = {k: v for k, v in kwargs["env"].items() if k == SERVER_URL_VARIABLES[kind]}
        with monkeypatch.context() as m:
            for k, v in scripts.items():
                m.setenv(k, v)
            from compaction_harness.sdk.python.adk_helpers import database_service, empty_database

            async def empty() -> None:
                service = database_service(kind)
                await empty_database(service)
                await service.db_engine.dispose()

            asyncio.run(empty())
        return subprocess.CompletedProcess(argv, 5, "no tests ran", "")

    monkeypatch.setattr(app_check.subprocess, "run", run)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(CliError, match="the campaign ran no script"):
        app_check.check_app("examples.support:app", seconds=10, session_service_uri=users)
    assert seen["env"]["HARNESS_CHECK_STORAGE"] == kind
    assert seen["env"][SERVER_URL_VARIABLES[kind]].endswith("/harness_check")
    assert asyncio.run(sql("SELECT id FROM orders")) == [(7,)]


def test_a_users_app_runs_on_sqlite_session_service_reloaded_at_every_request(monkeypatch) -> None:
    """``SqliteSessionService`` (adk web's default store): a fresh service
    reads the session at every request, and P7 compares it with memory."""
    from google.adk.sessions.sqlite_session_service import SqliteSessionService

    loads = []
    real = SqliteSessionService.get_session

    async def get_session(self, **kwargs):
        loads.append(kwargs["session_id"])
        return await real(self, **kwargs)

    monkeypatch.setattr(SqliteSessionService, "get_session", get_session)
    shop = ScriptConfig(
        compaction_interval=1, overlap_size=0, storage="sqlite", driver="runner", app=SHOP
    )
    script = Script(shop, (Open(), Calls(), Text(), Open(), Ask(), Reply(), Text(), Open(), Text()))
    run = run_script_with_runner(script)
    assert len(loads) >= 4  # a request per invocation, and the confirmation's answer
    assert run.summaries and not run.violations
    assert {s.author for s in run.session if s.compaction is None} == {"user", "clerk"}


# -- a session the app recorded -----------------------------------------------------
def test_check_judges_a_session_the_app_recorded_with_its_configuration(tmp_path) -> None:
    """``check SESSION.json --app`` is ``minimize SESSION.json`` with the app's
    trigger values and agents, root first (what ``minimize --config`` does
    with them is held in tests/slow/test_recorded_real.py, on sessions ADK's
    Runner recorded: fault 5 among them)."""
    from compaction_harness.surfaces.cli import build_parser

    session = str(tmp_path / "session.json")
    argv = ["check", session, "--app", "travel_app:app", "--out", str(tmp_path)]
    args = build_parser().parse_args([*argv, "--replay-examples", "30"])
    asked = []
    args.run = lambda given: asked.append(given) or 1  # minimize: the session holds
    assert args.func(args) == 0  # check: every invariant held
    assert asked == [
        [
            "minimize", session, "--config", '{"compaction_interval": 2, "overlap_size": 0}',
            "--out", str(tmp_path), "--replay-examples", "30",
            "--agent", "trip_planner", "--agent", "researcher", "--agent", "writer",
            "--agent", "polish", "--agent", "critic",
        ]
    ]  # fmt: skip


def test_check_of_a_session_reads_minimizes_statuses_as_its_own(tmp_path) -> None:
    # minimize: 0 a fixture written (the session fails), 1 it holds, 3 it
    # cannot be judged; check: 0 every invariant held, 1 one failed (found by
    # a newcomer: a failing session exited 0, as a CI job would take for a pass).
    from compaction_harness.surfaces.cli import build_parser

    argv = ["check", str(tmp_path / "session.json"), "--app", "travel_app:app"]
    for minimize_said, check_says in ((0, 1), (1, 0), (2, 2), (3, 3)):
        args = build_parser().parse_args(argv)
        args.run = lambda given, said=minimize_said: said
        assert args.func(args) == check_says


def test_check_of_a_session_names_only_the_agents_that_ran(tmp_path) -> None:
    # A session that reached two of the app's sub-agents: the root (a
    # SequentialAgent, which writes no event) and those two are named;
    # polish and critic, never reached, are not (minimize refuses a name the
    # session does not bear out).
    from compaction_harness.surfaces.cli import build_parser

    def event(author: str, t: int) -> dict:
        role = "user" if author == "user" else "model"
        return {
            "author": author,
            "invocation_id": "i1",
            "timestamp": t,
            "content": {"role": role, "parts": [{"text": f"{author} {t}"}]},
        }

    session = tmp_path / "session.json"
    session.write_text(json.dumps([event("user", 1), event("researcher", 2), event("writer", 3)]))
    args = build_parser().parse_args(["check", str(session), "--app", "travel_app:app"])
    asked = []
    args.run = lambda given: asked.append(given) or 1
    assert args.func(args) == 0
    named = [asked[0][k + 1] for k, word in enumerate(asked[0]) if word == "--agent"]
    assert named == ["trip_planner", "researcher", "writer"]


def test_check_of_a_session_needs_its_app(capsys, tmp_path) -> None:
    from compaction_harness.surfaces.cli import main

    assert main(["check", str(tmp_path / "session.json")]) == 2
    assert "a recorded session needs --app MODULE:ATTR" in capsys.readouterr().err


def test_the_campaign_gets_the_configuration_and_an_absolute_out(monkeypatch, tmp_path) -> None:
    """What ``check`` hands its pytest campaign: ``--config``'s trigger
    values, the session service, and ``--out`` made absolute (the campaign
    runs from the harness's folder, not the user's); a campaign that ran no
    script is an error, never a column of ``holds``."""
    import subprocess

    from compaction_harness.surfaces import app_check
    from compaction_harness.surfaces.cli_common import CliError

    seen = {}

    def run(argv, **kwargs):
        seen.update(argv=argv, env=kwargs["env"], cwd=kwargs["cwd"])
        return subprocess.CompletedProcess(argv, 5, "no tests ran", "")

    monkeypatch.setattr(app_check.subprocess, "run", run)
    monkeypatch.chdir(tmp_path)
    mine = '{"compaction_interval": 5, "overlap_size": 2}'
    with pytest.raises(CliError, match=r"the campaign ran no script .*nothing was checked"):
        app_check.check_app(
            "examples.support:app",
            seconds=10,
            out="found",
            config=mine,
            session_service_uri="sqlite:///.adk/session.db",
        )
    assert f"--repro-dir={tmp_path / 'found'}" in seen["argv"]
    assert json.loads(seen["env"]["HARNESS_CHECK_CONFIG"])["compaction_interval"] == 5
    assert seen["env"]["HARNESS_CHECK_STORAGE"] == "sqlite"
    assert str(tmp_path) in seen["env"]["PYTHONPATH"].split(os.pathsep)  # the user's modules


def test_a_token_threshold_alone_has_every_invariant_judged(monkeypatch, tmp_path) -> None:
    """An app with only a token threshold gets a verdict on P3 like every
    other invariant: P3's bound is the token threshold's there
    (``liveness_checks.token_liveness_bound``), not a blind spot. The campaign
    is stood in for (a clean run, nothing found) and gets the app's triggers."""
    from compaction_harness.surfaces import app_check

    seen = {}

    def campaign(spec, seconds, out, cwd, storage, triggers, *rest):
        seen["triggers"] = triggers
        return {"fixtures": {}, "scripts": 3, "rounds": 1, "problems": []}

    monkeypatch.setattr(app_check, "_run_campaign", campaign)
    monkeypatch.setattr(app_check, "_costs", lambda config, price: {})
    monkeypatch.chdir(tmp_path)
    lines: list[str] = []
    result = app_check.check_app(
        "examples.support:app",
        seconds=10,
        config='{"token_threshold": 1500, "event_retention_size": 4}',
        say=lines.append,
    )
    assert seen["triggers"]["compaction_interval"] is None
    assert seen["triggers"]["token_threshold"] == 1500
    assert result["invariants"]["P3"] == {"holds": True}
    assert all(row == {"holds": True} for row in result["invariants"].values())
    assert "P3         holds" in lines
    assert not [line for line in lines if "not checked" in line]


def test_check_classifies_a_fixture_on_the_campaigns_server(
    database_server, monkeypatch, tmp_path
) -> None:
    """A fixture the campaign found on the user's server is classified (re-run
    under fixes) by check's own process on that server too: its scratch
    database is named in the environment while it is judged, and only then."""
    from compaction_harness.sdk.python.adk_helpers import database_url
    from compaction_harness.surfaces import app_check

    database_server("postgresql")
    users = database_url("postgresql")
    monkeypatch.delenv("HARNESS_POSTGRESQL_URL")  # check's process knows only the URI
    found = json.loads(next(REPROS.glob("P7-2.13.0-8df41159*.json")).read_text())
    found["call"]["config"]["storage"] = "postgresql"
    path = tmp_path / "P7-2.13.0-on-postgresql.json"
    path.write_text(json.dumps(found))

    def campaign(*args):
        return {"fixtures": {"P7": path}, "scripts": 1, "rounds": 1, "problems": []}

    monkeypatch.setattr(app_check, "_run_campaign", campaign)
    monkeypatch.setattr(app_check, "_costs", lambda config, price: {})
    monkeypatch.chdir(tmp_path)
    result = app_check.check_app("examples.support:app", seconds=10, session_service_uri=users)
    assert "database-reload-reorders-events-by-timestamp" in {
        f["id"] for f in result["invariants"]["P7"]["faults"]
    }
    assert "HARNESS_POSTGRESQL_URL" not in os.environ


def test_a_threshold_the_fixed_prompt_already_passes_is_warned_of() -> None:
    from compaction_harness.surfaces.app_check import _warnings

    example = app_config(read_app(load("examples.support:app"), "examples.support:app"))
    assert _warnings(example) == []  # 1,500 tokens against about 360 fixed
    tight = replace(example, token_threshold=300)
    (said,) = _warnings(tight)
    assert "token_threshold 300 is at or below" in said and "every invocation end" in said


def test_a_fault_the_campaign_met_is_reachable_whatever_the_fixtures_said() -> None:
    from compaction_harness.surfaces.app_check import also_met

    table = {
        "P2": {"holds": True},
        "P4": {"holds": False, "faults": [{"id": "time-order"}, {"id": "branch"}]},
        "P6": {"holds": False, "faults": [{"id": "time-order"}]},
    }
    assert also_met(table, [{"id": "branch"}]) == ["time-order"]
    assert also_met(table, [{"id": "branch"}, {"id": "time-order"}]) == []


def test_check_of_a_session_refuses_json_in_one_line(capsys, tmp_path) -> None:
    # A newcomer's: --json with a recorded session printed text as if asked for none.
    from compaction_harness.surfaces.cli import main

    argv = ["check", str(tmp_path / "session.json"), "--app", "travel_app:app", "--json"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--json is for an app's campaign" in err and len(err.strip().splitlines()) == 1
