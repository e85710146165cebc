"""``python -m compaction_harness check MODULE:ATTR``: is compaction safe for my app?

The command reads a team's own ``App`` (or root agent) as an app shape
(:mod:`compaction_harness.sdk.python.user_app`: agent and tool names and
kinds, trigger values, instruction and declaration sizes), then:

1. prints the app as the harness reads it, and what the reading leaves out;
2. warns where the configuration cannot work (a token threshold that the
   system instruction and tool declarations alone reach);
3. lists the known faults this configuration and release can meet at all,
   judged by their fixtures (:func:`reachable_faults`);
4. runs a campaign through ADK's ``Runner`` on the app's shape for
   ``--seconds``: ``tests/slow/test_app_check.py``'s property under pytest
   with the harness's plugin, every violation a failure (known faults
   included: the excuse is off), each shrunk to a fixture of the app in
   ``--out``; a round that finds a failing invariant is followed by rounds
   that look for the others;
5. reports, per invariant, whether it held, or the fixture that breaks it
   and the known fault it is (classified by fix, as ``replay`` does);
6. profiles what compaction costs on the app's configuration
   (:mod:`.profile`'s seeded workload of 100 invocations, compacted against
   never compacted), in money with ``--price``.

Exit status: 0 every invariant held, 1 one failed (known fault or new), 2
bad input (one line: an app that does not import, an attribute that is not
an app or agent, an app without compaction, a clone without the tests); a
recorded session also 3: it cannot be judged with the app's configuration
(its replay's summaries are not the run's: NOREPRO).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..spec.invariants import invariants_of
from ..spec.scripts import ScriptConfig
from .app_reach import reachable_faults
from .cli_common import CliError
from .partial_reads import read_warnings

__all__ = ["add_parser", "app_config", "check_app", "reachable_faults"]

ROOT = Path(__file__).resolve().parents[3]
#: How each storage is named to the user.
_STORES = {
    "memory": "InMemorySessionService",
    "sqlite": "SqliteSessionService (a fresh file per script, reloaded before every invocation)",
    "postgresql": "DatabaseSessionService on your PostgreSQL server (in its database "
    "harness_check, emptied for every script; reloaded before every invocation)",
    "mariadb": "DatabaseSessionService on your MySQL or MariaDB server (in its database "
    "harness_check, emptied for every script; reloaded before every invocation)",
}
#: The property a check runs, and where it lives in a clone of the harness.
PROPERTY = "tests/slow/test_app_check.py::test_the_app_meets_p0_to_p7"
PIPELINE = invariants_of("pipeline")
#: The shortest campaign: pytest's start and the first round take seconds.
MIN_SECONDS = 10


def app_config(
    reading: Any,
    *,
    excluded: Iterable[str] = (),
    storage: str = "memory",
    recent_events: int | None = None,
) -> ScriptConfig:
    """The script configuration an app fixes (see
    :func:`strategies.app_scripts` for what is drawn around it): its trigger
    values, sizes, provider, shape; ``excluded`` invariants left unchecked;
    ``recent_events``: the ``GetSessionConfig.num_recent_events`` the app
    passes to ``run_async`` (an app's ``RunConfig`` is not part of its
    ``App``, so ``check --recent-events`` says it). Raises
    :class:`CliError` for an app without compaction or a bad value."""
    if reading.triggers is None:
        raise CliError(
            f"{reading.shape.source or reading.shape.name}: no events_compaction_config "
            "(an App without compaction, or a bare agent): nothing to check"
        )
    from ..spec.model import ModelError

    excluded = set(excluded)
    chosen = tuple(i for i in PIPELINE if i not in excluded) if excluded else None
    try:
        return replace(_script_config(reading, storage, chosen), recent_events=recent_events)
    except ModelError as exc:
        raise CliError(str(exc).splitlines()[0]) from None


def _script_config(reading: Any, storage: str, chosen: Any) -> ScriptConfig:
    return ScriptConfig(
        **reading.triggers,
        storage=storage,
        system_chars=min(reading.system_chars, 10_000_000),
        tools_chars=min(reading.tools_chars, 10_000_000),
        strict_provider=reading.strict_provider,
        driver="runner",
        app=reading.shape,
        invariants=chosen or None,
    )


#: ``--session-service-uri`` schemes (as ``adk web`` takes them,
#: ``google/adk/cli/service_registry.py``; any driver after ``+``) -> the
#: script storage that runs that service.
SCHEMES = {
    "memory": "memory",
    "sqlite": "sqlite",
    "postgresql": "postgresql",
    "mysql": "mariadb",
    "mariadb": "mariadb",
}


def storage_of(uri: str | None) -> str:
    """The script storage for a session service URI (None: memory). Raises
    :class:`CliError` for a scheme the check cannot run (one line)."""
    if not uri:
        return "memory"
    scheme, sep, rest = uri.partition("://")
    base = scheme.split("+", 1)[0]
    if not sep or not scheme:
        raise CliError(f"--session-service-uri {uri!r}: expected SCHEME://..., as adk web takes it")
    if base == "sqlite" and rest in ("", "/"):
        return "memory"  # ADK's registry: sqlite:// without a path is in memory
    if base in SCHEMES:
        return SCHEMES[base]
    raise CliError(
        f"--session-service-uri {scheme}://...: unsupported scheme {scheme!r} "
        "(memory://, sqlite:///PATH, postgresql+asyncpg://..., mysql+aiomysql://...)"
    )


@contextlib.contextmanager
def _environment(values: dict[str, str]):
    """``os.environ`` with ``values`` set inside the ``with`` block, as it was after."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _server_environment(storage: str, uri: str | None) -> dict[str, str]:
    """For a database server's URI: the environment naming the scratch
    database the campaign keeps its scripts in on that server (created when
    missing; the database the URI names is never touched). Raises
    :class:`CliError` (one line) when the server refuses."""
    from ..spec.scripts import SERVER_URL_VARIABLES

    if storage not in SERVER_URL_VARIABLES or not uri:
        return {}
    import asyncio

    from ..sdk.python.adk import NotApplicable
    from ..sdk.python.adk_helpers import scratch_database

    try:
        return {SERVER_URL_VARIABLES[storage]: asyncio.run(scratch_database(uri))}
    except NotApplicable as exc:
        raise CliError(f"--session-service-uri: {exc}") from None


# -- the campaign -----------------------------------------------------------------------
def _campaign_round(
    spec: str,
    seconds: float,
    out: Path,
    excluded: set[str],
    report: Path,
    cwd: str,
    storage: str,
    triggers: dict[str, Any],
    server: dict[str, str],
    recent_events: int | None = None,
) -> tuple[int, str]:
    """One pytest campaign of the check property; (exit status, its output's
    tail). ``server``: the environment naming a database server's URL;
    ``recent_events``: the app's partial read, if any."""
    env = dict(os.environ)
    env.update(server)
    env.pop("HARNESS_CHECK_RECENT_EVENTS", None)
    if recent_events is not None:
        env["HARNESS_CHECK_RECENT_EVENTS"] = str(recent_events)
    env.update(
        HARNESS_CHECK_APP=spec,
        HARNESS_CHECK_CONFIG=json.dumps(triggers),
        HARNESS_CHECK_EXCLUDE=",".join(sorted(excluded)),
        HARNESS_CHECK_REPORT=str(report),
        HARNESS_CHECK_STORAGE=storage,
        HARNESS_KNOWN_FAULTS="off",  # every violation is a failure: known faults too
        PYTHONPATH=os.pathsep.join(
            [cwd, str(ROOT / "src"), str(ROOT), *filter(None, [env.get("PYTHONPATH")])]
        ),
    )
    env.pop("HARNESS_FIXES", None)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            f"--rootdir={ROOT}",
            "-c",
            str(ROOT / "pyproject.toml"),
            "--hypothesis-profile=fuzz",
            f"--fuzz-seconds={max(1, int(seconds))}",
            f"--repro-dir={out}",
            str(ROOT / PROPERTY),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    return done.returncode, (done.stdout + done.stderr)[-3000:]


def _run_campaign(
    spec: str,
    seconds: float,
    out: Path,
    cwd: str,
    storage: str,
    triggers: dict[str, Any],
    server: dict[str, str] | None = None,
    recent_events: int | None = None,
) -> dict[str, Any]:
    """Rounds of the campaign until ``seconds`` are spent or every invariant
    failed: {"fixtures": {invariant: path}, "scripts": n, "rounds": n,
    "problems": [...]}."""
    out.mkdir(parents=True, exist_ok=True)
    before = set(out.glob("*.json"))
    found: dict[str, Path] = {}
    problems: list[str] = []
    end = time.monotonic() + seconds
    rounds = 0
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "report.jsonl"
        while time.monotonic() < end - 5 and len(found) < len(PIPELINE):
            rounds += 1
            status, tail = _campaign_round(
                spec,
                end - time.monotonic(),
                out,
                set(found),
                report,
                cwd,
                storage,
                triggers,
                server or {},
                recent_events,
            )
            new = sorted(set(out.glob("*.json")) - before - set(found.values()))
            for path in new:
                invariant = path.name.split("-", 1)[0]
                found.setdefault(invariant, path)
            if status not in (0, 1) or (status == 1 and not new):
                problems.append(tail.strip().splitlines()[-1] if tail.strip() else f"exit {status}")
                break
            if not new:
                break  # the budget was spent without a failure
        scripts = len(report.read_text(encoding="utf-8").splitlines()) if report.exists() else 0
    return {"fixtures": found, "scripts": scripts, "rounds": rounds, "problems": problems}


def _classify(path: Path) -> dict[str, Any]:
    """What the fixture at ``path`` is, by fix (as ``replay`` says it); for a
    violation no fix removes, ``unjudged``: the known faults of its
    invariant whose fix this release cannot take (it may be one of them)."""
    from ..faults.catalogue import fault_for
    from ..sdk import protocol
    from ..store.fixtures import load_fixture
    from .verdicts import judge_fixture, untried_faults

    fixture = load_fixture(path)
    judged = judge_fixture(fixture)
    faults = list(dict.fromkeys(f for _, f in judged.verdict.known))
    out: dict[str, Any] = {"label": judged.label, "reason": judged.reason, "faults": []}
    if not faults:
        sdk = protocol.sdk_named(fixture.sdk)
        out["unjudged"] = untried_faults(sdk, fixture.invariant, judged.verdict.release)
    for fault_id in faults:
        fault = fault_for(fault_id)
        out["faults"].append(
            {
                "id": fault_id,
                "title": getattr(fault, "title", ""),
                "user_sees": getattr(fault, "user_sees", ""),
                "fix": getattr(fault, "fix", None),
                "releases": list(getattr(fault, "releases", ()) or ()),
            }
        )
    return out


def also_met(table: dict[str, Any], reachable: list[dict[str, Any]]) -> list[str]:
    """The faults the campaign's verdicts name (``table``: per invariant)
    that the list of reachable faults, judged from the fixtures, left out:
    met, so reachable by this app after all."""
    listed = {entry["id"] for entry in reachable}
    named = (f["id"] for row in table.values() for f in row.get("faults", ()))
    return [f for f in dict.fromkeys(named) if f not in listed]


def _clock_of(path: Path) -> str:
    """What the fixture at ``path`` needs of the clock, when it is not a fine one."""
    from ..store.fixtures import load_fixture

    resolution = getattr(getattr(load_fixture(path).case, "config", None), "resolution", 1e-6)
    if resolution < 1e-3:
        return ""
    return (
        f"needs a clock of {resolution:g} s ticks (events in one tick share a timestamp; "
        "ADK stores microseconds, but a host's clock may be that coarse)"
    )


# -- cost ---------------------------------------------------------------------------
def _costs(config: ScriptConfig, price: tuple[float, float] | None) -> dict[str, Any]:
    """The seeded workload (100 invocations) on the app's configuration,
    compacted and never compacted; tokens per invocation, and money per
    1,000 invocations with ``price`` (input, output: per million tokens)."""
    from .profile import ProfileError, profile_script, seeded_script

    # The profile runs on the emulating driver, which reads whole sessions.
    base = replace(config, app=None, driver="emulated", invariants=None, recent_events=None)
    never = replace(
        base, compaction_interval=10_000, overlap_size=0, token_threshold=None,
        event_retention_size=None,
    )  # fmt: skip
    figures: dict[str, Any] = {}
    for name, chosen in (("compacted", base), ("not compacted", never)):
        try:
            profile = profile_script(seeded_script(0, 100, chosen), source=name)
        except ProfileError as exc:
            return {"error": str(exc)}
        rows = profile.rows or ()
        ends = max(1, len(rows))
        totals = profile.totals()
        model_in = sum(r.prompt_before for r in rows) / ends
        summariser_in = totals["summariser_input"] / ends
        summary_out = totals["summary_tokens"] / ends
        entry = {
            "summariser_calls_per_100": totals["summariser_calls_per_100"],
            "model_input_per_invocation": round(model_in),
            "summariser_input_per_invocation": round(summariser_in),
            "summary_output_per_invocation": round(summary_out),
            "steady_state_prompt": totals["steady_state_prompt"],
        }
        if price is not None:
            cost = ((model_in + summariser_in) * price[0] + summary_out * price[1]) / 1e6
            entry["money_per_1000_invocations"] = round(1000 * cost, 4)
        figures[name] = entry
    return figures


def _warnings(config: ScriptConfig) -> list[str]:
    """Plain-words warnings of a configuration that cannot work (one line
    each): a token threshold the fixed prompt already passes, a sliding
    window that re-summarises every invocation, and a partial read
    (:func:`.partial_reads.read_warnings`)."""
    from .profile import TOKEN_CHARS  # the token model's (imported late: it imports ADK)

    fixed = (config.system_chars + config.tools_chars) // TOKEN_CHARS
    out = []
    if config.token_threshold is not None and config.token_threshold <= fixed:
        out.append(
            f"token_threshold {config.token_threshold} is at or below what the system "
            f"instruction and tool declarations alone take ({fixed} tokens): every prompt "
            "is over it, so the summariser runs at every invocation end"
        )
    if config.compaction_interval == 1 and config.overlap_size:
        out.append(
            "compaction_interval 1 with an overlap: every invocation summarises the "
            "previous summary's events again"
        )
    return out + read_warnings(config)


# -- the command --------------------------------------------------------------------
def check_app(
    spec: str,
    *,
    seconds: float = 60.0,
    out: str | Path = "build/check",
    config: str | None = None,
    price: tuple[float, float] | None = None,
    session_service_uri: str | None = None,
    recent_events: int | None = None,
    say: Any = None,
) -> dict[str, Any]:
    """Check the app ``spec`` (``MODULE:ATTR``) as the ``check`` command does
    and return its result (the JSON ``check --json`` prints): ``app``,
    ``adk_release``, ``config``, ``tree``, ``left_out``, ``warnings``,
    ``reachable_faults``, ``campaign``, ``invariants`` (each ``holds``, or a
    ``fixture`` and what it is: ``label``, ``reason``, ``faults``) and
    ``cost``. ``say`` (a function of one line) hears the progress. A team's
    own test suite calls it through the plugin's fixture ``compaction_check``.
    ``recent_events``: the ``GetSessionConfig(num_recent_events=...)`` the
    app passes to ``run_async`` (None: it loads whole sessions); every
    script of the campaign reads the session so. Raises :class:`CliError`
    (one line) for bad input."""
    from ..sdk.python.adk import ADK_RELEASE
    from ..sdk.python.user_app import AppError, load, read_app

    say = say or (lambda *_: None)
    cwd = os.getcwd()
    out = Path(out).resolve()  # the campaign runs from the harness's folder
    if not seconds >= MIN_SECONDS:
        raise CliError(f"--seconds {seconds:g}: a campaign needs at least {MIN_SECONDS} seconds")
    storage = storage_of(session_service_uri)
    try:
        reading = read_app(load(spec), spec)
    except AppError as exc:
        raise CliError(str(exc)) from None
    if config:
        reading = _with_config(reading, config)
    chosen = app_config(reading, storage=storage, recent_events=recent_events)
    if not (ROOT / PROPERTY.split("::")[0]).is_file():
        raise CliError(f"check runs from a clone of the harness: {PROPERTY} is not there")
    result: dict[str, Any] = {
        "app": reading.shape.to_json(),
        "adk_release": ADK_RELEASE,
        "config": {k: v for k, v in chosen.triggers.items() if v is not None},
        "storage": storage,
        "recent_events": recent_events,
        "tree": list(reading.tree),
        "left_out": list(reading.notes),
        "warnings": _warnings(chosen),
        "reachable_faults": [
            {"id": f.id, "title": f.title, "fixture": name}
            for f, name in reachable_faults(chosen, ADK_RELEASE)
        ],
    }
    say(f"app {reading.shape.name} ({spec}) on google-adk {ADK_RELEASE}")
    say("  " + "\n  ".join(reading.tree))
    say("config: " + ", ".join(f"{k}={v}" for k, v in result["config"].items()))
    say(f"session service: {_STORES[storage]}")
    if recent_events is not None:
        say(
            f"session read: the latest {recent_events} events per request "
            "(GetSessionConfig.num_recent_events)"
        )
    for note in reading.notes:
        say(f"left out: {note}")
    for warning in result["warnings"]:
        say(f"warning: {warning}")
    say(f"known faults this configuration can meet on {ADK_RELEASE}:")
    for entry in result["reachable_faults"] or [{"id": "none", "title": "", "fixture": ""}]:
        say(f"  {entry['id']}" + (f": {entry['title']}" if entry["title"] else ""))
    server = _server_environment(storage, session_service_uri)
    say(f"campaign: {seconds:g} s through ADK's Runner ...")
    campaign = _run_campaign(
        spec, seconds, out, cwd, storage, reading.triggers, server, recent_events
    )
    if not campaign["scripts"] and not campaign["fixtures"]:
        why = "; ".join(campaign["problems"]) or "the budget ended first"
        raise CliError(f"the campaign ran no script ({why}): nothing was checked")
    table: dict[str, Any] = {}
    for invariant in PIPELINE:
        path = campaign["fixtures"].get(invariant)
        if path is None:
            table[invariant] = {"holds": True}
        else:
            table[invariant] = {"holds": False, "fixture": os.path.relpath(path, cwd)}
            # Classified here, by re-running the fixture under fixes: on the
            # campaign's server, if it ran on one.
            with _environment(server):
                table[invariant].update(_classify(path))
            table[invariant]["clock"] = _clock_of(path)
    result["campaign"] = {
        "scripts": campaign["scripts"],
        "rounds": campaign["rounds"],
        "problems": campaign["problems"],
    }
    result["invariants"] = table
    say(f"{campaign['scripts']} scripts run (shrinking included), {campaign['rounds']} rounds")
    for problem in campaign["problems"]:
        say(f"problem: {problem}")
    say("invariant  verdict")
    for invariant, row in table.items():
        if row["holds"]:
            say(f"{invariant:<10} holds")
            continue
        named = ", ".join(f["id"] for f in row["faults"]) or "a new violation"
        say(f"{invariant:<10} FAILS: {named} ({row['fixture']})")
        if row.get("clock"):
            say(f"           {row['clock']}")
        if row.get("unjudged"):
            say(
                f"           (or one of {', '.join(row['unjudged'])}: their fixes do not "
                f"apply to google-adk {ADK_RELEASE}, so the fixture cannot be tried under them)"
            )
        for fault in row["faults"]:
            say(f"           {fault['title']}")
            say(f"           fix: {fault['fix'] or 'none yet'} (see: faults --json)")
    beyond = also_met(table, result["reachable_faults"])
    if beyond:
        result["reachable_faults"] += [{"id": f, "title": "", "met": True} for f in beyond]
        say(f"also met by this campaign, beyond the faults its fixtures reach: {', '.join(beyond)}")
    result["cost"] = _costs(chosen, price)
    say(
        "cost (seeded workload, 100 invocations; tokens per invocation; the harness's "
        "summaries are a few tokens, a real summariser's are longer):"
    )
    for name, row in result["cost"].items():
        if name == "error":
            say(f"  not profiled: {row}")
            continue
        money = row.get("money_per_1000_invocations")
        say(
            f"  {name:<14} summariser calls/100 {row['summariser_calls_per_100']:>5}, "
            f"model input {row['model_input_per_invocation']:>6}, summariser input "
            f"{row['summariser_input_per_invocation']:>5}, steady prompt "
            f"{row['steady_state_prompt']:>6}"
            + (f", {money} per 1,000 invocations" if money is not None else "")
        )
    return result


def _check_session(args: argparse.Namespace) -> int:
    """``check SESSION.json --app MODULE:ATTR``: the recorded session judged
    with the app's trigger values and agents, every invariant that applies
    (``minimize`` with them: the failure, if any, shrunk to a fixture)."""
    from ..sdk.python.user_app import AppError, load, read_app

    if not args.app_of_session:
        raise CliError(f"check {args.app}: a recorded session needs --app MODULE:ATTR")
    if args.json:
        raise CliError(
            f"check {args.app}: --json is for an app's campaign (check MODULE:ATTR); a recorded "
            "session's verdict is printed as text, its failure written as a fixture"
        )
    try:
        reading = read_app(load(args.app_of_session), args.app_of_session)
    except AppError as exc:
        raise CliError(str(exc)) from None
    if args.config:
        reading = _with_config(reading, args.config)
    if reading.triggers is None:
        app_config(reading)  # raises: nothing to judge with
    triggers = {k: v for k, v in reading.triggers.items() if v is not None}
    argv = ["minimize", args.app, "--config", json.dumps(triggers), "--out", args.out]
    argv += ["--replay-examples", str(args.replay_examples)]
    for name in _agents_that_ran(reading.agents, Path(args.app)):
        argv += ["--agent", name]
    # minimize's statuses (0 a fixture written, 1 the session holds) read as
    # check's: 0 every invariant held, 1 one failed; 2 and 3 as they are.
    return {0: 1, 1: 0}.get(status := args.run(argv), status)


def _agents_that_ran(agents: tuple[str, ...], path: Path) -> tuple[str, ...]:
    """The app's agents, root first, less those that wrote no event of the
    session at ``path``: a session seldom reaches every sub-agent, and
    ``minimize --agent`` refuses a name the session does not bear out
    (``pipeline_case.check_agents``; the root may write none). All of them
    when the session cannot be read here (minimize then says why, in one line)."""
    from ..sdk.python.adk import session_from_json
    from ..spec.pipeline_case import recorded_agents

    try:
        authors = set(recorded_agents(session_from_json(path.read_text(encoding="utf-8"))))
    except (OSError, UnicodeDecodeError, ValueError):
        return agents
    ran = tuple(name for k, name in enumerate(agents) if k == 0 or name in authors)
    return ran if len(ran) > 1 or ran[0] in authors else agents


def _cmd_check(args: argparse.Namespace) -> int:
    if args.app.endswith(".json"):
        return _check_session(args)
    if args.app_of_session:
        raise CliError("--app names the app of a recorded session: check SESSION.json --app ...")
    result = check_app(
        args.app,
        seconds=args.seconds,
        out=args.out,
        config=args.config,
        price=tuple(args.price) if args.price else None,
        session_service_uri=args.session_service_uri,
        recent_events=args.recent_events,
        say=None if args.json else (lambda text="": print(text, flush=True)),
    )
    if args.json:
        print(json.dumps(result, indent=2, default=str))
    failing = any(row["holds"] is False for row in result["invariants"].values())
    return 1 if failing or result["campaign"]["problems"] else 0


def _with_config(reading: Any, text: str) -> Any:
    """``reading`` with ``--config``'s trigger values (a JSON object, or a
    file holding one), which google-adk's own ``EventsCompactionConfig`` must
    accept. Raises :class:`CliError` (one line)."""
    from ..sdk.python.adk import compaction_config
    from ..spec.scripts import TRIGGER_KEYS

    if not text.lstrip().startswith("{") and Path(text).is_file():
        text = Path(text).read_text(encoding="utf-8")
    try:
        values = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CliError(f"--config: not JSON, nor a file of JSON ({exc.msg})") from None
    if not isinstance(values, dict) or not set(values) <= set(TRIGGER_KEYS):
        raise CliError(f"--config: expected an object of {', '.join(TRIGGER_KEYS)}")
    triggers = {key: values.get(key) for key in TRIGGER_KEYS}
    _accepted_by_adk(triggers, compaction_config, "--config")
    return replace(reading, triggers=triggers)


def _accepted_by_adk(triggers: dict[str, Any], make: Any, where: str) -> None:
    """Raise :class:`CliError` unless the trigger values name a trigger and
    google-adk's ``EventsCompactionConfig`` (through ``make``) accepts them."""
    if triggers.get("compaction_interval") is None and triggers.get("token_threshold") is None:
        raise CliError(f"{where}: no trigger: give compaction_interval or token_threshold")
    try:
        make(None, {k: v for k, v in triggers.items() if v is not None})
    except Exception as exc:  # pydantic's ValidationError, ADK's ValueError
        first = " ".join(str(exc).split())[:200]
        raise CliError(f"{where}: {first}") from None


def add_parser(sub: Any, run: Any) -> None:
    """The ``check`` subcommand, on the CLI's subparsers ``sub``; ``run`` is
    the CLI's ``main`` (a recorded session is judged by ``minimize``)."""
    check = sub.add_parser(
        "check",
        help="check your own ADK app: fuzz scripts shaped to it through ADK's Runner",
        description="Import MODULE:ATTR (a google-adk App, or a root agent with --config), "
        "read what compaction sees of it (agent tree, tool names and kinds, trigger values, "
        "instruction and declaration sizes), and fuzz scripts shaped to it through ADK's own "
        "Runner: every model is replaced by a scripted one, every tool body by scripted "
        "outcomes (answer now, answer later from a client, hang, interim results) and the "
        "summariser by the harness's. Your code is imported, never copied, and nothing of it "
        "runs beyond its import, the objects' construction and the tool declarations. Prints "
        "the app as read and what the reading leaves out, warnings, the known faults the "
        "configuration can meet on the installed release, a verdict per invariant (a failure "
        "with a fixture of your app, classified by fix) and a cost profile. Runs from a clone "
        "of the harness (the campaign is a pytest run of tests/slow/test_app_check.py).",
        epilog="Exit status: 0 every invariant held, 1 one failed (a known fault or a new "
        "violation), 2 bad input; with SESSION.json also 3, the session cannot be judged with "
        "the app's configuration (NOREPRO). Another release: make check APP=... ADK=2.11.0.",
    )
    check.add_argument(
        "app",
        metavar="MODULE:ATTR|SESSION.json",
        help="your App (or root agent); or a session your app recorded (a Session JSON "
        "document, as its session service stores it), judged with --app's configuration",
    )
    check.add_argument(
        "--app",
        dest="app_of_session",
        metavar="MODULE:ATTR",
        help="with SESSION.json: the app that recorded it (its trigger values and agents)",
    )
    check.add_argument(
        "--seconds", type=float, default=60.0, help="the campaign's budget (default 60)"
    )
    check.add_argument(
        "--out",
        default="build/check",
        help="where fixtures of failures are written (default build/check)",
    )
    check.add_argument(
        "--config",
        metavar="JSON",
        help="trigger values instead of the app's: "
        '\'{"compaction_interval": 3, "overlap_size": 1}\' (needed for a bare agent)',
    )
    check.add_argument(
        "--price",
        nargs=2,
        type=float,
        metavar=("INPUT", "OUTPUT"),
        help="money per million input and output tokens, for the cost profile",
    )
    check.add_argument(
        "--session-service-uri",
        metavar="URI",
        help="the session service, as adk web takes it: memory:// (the default), "
        "sqlite:///PATH (SqliteSessionService, adk web's default; each script gets a "
        "fresh file of its own, reloaded before every invocation as a server does, and "
        "P7 compares it with memory), or postgresql+asyncpg://... or mysql+aiomysql://... "
        "(DatabaseSessionService on that server, in a database harness_check the check "
        "creates beside the one named and empties for every script: yours is never touched)",
    )
    check.add_argument(
        "--recent-events",
        type=int,
        metavar="N",
        help="the app reads sessions partially: it passes "
        "RunConfig(get_session_config=GetSessionConfig(num_recent_events=N)) to run_async; "
        "every script loads only the latest N events per request, and check warns when N "
        "is fewer than compaction keeps raw",
    )
    check.add_argument(
        "--replay-examples",
        type=int,
        default=200,
        metavar="N",
        help="with SESSION.json: examples to search for a smaller session with the same "
        "failure (default 200; each replays the session through ADK)",
    )
    check.add_argument(
        "--json",
        action="store_true",
        help="print the whole result as JSON (an app's campaign; not for a recorded session)",
    )
    check.set_defaults(func=_cmd_check, run=run)
