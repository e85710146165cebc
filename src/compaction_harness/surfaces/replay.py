"""``python -m compaction_harness replay``: fixtures (or sessions) judged on the installed SDK.

Each fixture is judged by :func:`.verdicts.judge_fixture` on the SDK its
``sdk`` names (the driver registry's entry runs and classifies it): one line
per fixture (``ok``, ``XFAIL``, ``FAIL``, ``XPASS``, ``NOREPRO``) and a
summary, or ``--json``. Exit status: 0, 1 for a failure, 2 for bad input or
an SDK that is not installed here, 3 for ``NOREPRO`` (see ``cli.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from ..sdk import protocol
from ..store.fixtures import Fixture
from .cli_common import (
    CONFIG_FLAGS,
    MAX_SESSION_BYTES,
    CliError,
    _error,
    _expand,
    _load_each,
    _minimize_config,
    read_session_text,
)

__all__ = ["_cmd_replay"]


def _load_sessions(
    args: argparse.Namespace, config: dict[str, int | None]
) -> list[tuple[Path, Fixture | None]]:
    """Each named recorded session as a ``pipeline`` fixture replayed with
    ``config`` and ``args.agent`` (see ``pipeline.recorded_case``), or None
    after its one-line error on stderr."""
    from ..sdk.python.adk import ADK_RELEASE, session_from_json
    from ..sdk.python.pipeline import recorded_case
    from ..spec.model import ModelError
    from ..spec.pipeline_case import check_agents

    if config.get("compaction_interval") is None and config.get("token_threshold") is None:
        raise CliError(
            "--config: no trigger: give compaction_interval (a sliding window) or "
            "token_threshold, as the session's EventsCompactionConfig had them"
        )
    loaded: list[tuple[Path, Fixture | None]] = []
    for path in _expand(args.fixtures):
        try:
            if path.is_file() and path.stat().st_size > MAX_SESSION_BYTES:
                raise CliError(f"larger than {MAX_SESSION_BYTES} bytes")
            session = session_from_json(read_session_text(path))
            check_agents(session, args.agent or ())
            case = recorded_case(session, config, agents=args.agent or ())
        except (OSError, UnicodeDecodeError) as exc:
            _error(f"{path}: cannot read: {getattr(exc, 'strerror', None) or exc}")
            loaded.append((path, None))
            continue
        except (ValueError, ModelError, CliError) as exc:
            _error(f"{path}: {exc}")
            loaded.append((path, None))
            continue
        fixture = Fixture(
            kind="pipeline",
            invariant="P0",
            adk_release=ADK_RELEASE,
            case=case,
            expected={},
            observed={},
            note="a recorded session, replayed with the configuration it ran with",
            path=path,
        )
        loaded.append((path, fixture))
    return loaded


def _cmd_replay(args: argparse.Namespace) -> int:
    if args.adk or args.adk_src:
        return _reexec_in_target(args)
    from .switch import described, judged_with_fixes
    from .verdicts import UNEXPLAINED, installed_release, judge_fixture

    fixes_applied = tuple(getattr(args, "fixes_applied", ()))
    default = protocol.sdk_named(next(iter(protocol.sdks())))
    replayed: dict[str, tuple[str, tuple[str, ...]]] = {}  # sdk -> (release, fixes)
    counts = {"ok": 0, "FAIL": 0, "XFAIL": 0, "XPASS": 0, "NOREPRO": 0, "bad": 0}
    unavailable: dict[str, int] = {}  # of counts["bad"]: fixtures whose SDK is not installed
    moved = 0  # of counts["NOREPRO"]: recorded sessions whose compactions the fixes move
    status = 0
    report: list[dict[str, Any]] = []
    config = _minimize_config(args)
    if config is None and args.agent:
        raise CliError(
            "--agent names the agents of a recorded session's configuration: give --config too"
        )
    if config is not None and args.driver is not None:
        raise CliError("--driver replays script fixtures; a recorded session has none")
    loaded = _load_each(args.fixtures) if config is None else _load_sessions(args, config)
    for path, fixture in loaded:
        if fixture is None:
            counts["bad"] += 1
            status = 2
            report.append({"path": str(path), "label": "bad", "reason": "unreadable fixture"})
            continue
        sdk = fixture.sdk_entry()
        if args.driver is not None and sdk.recorded_driver(fixture.case) is None:
            message = (
                f"--driver {args.driver} replays script fixtures only; this is "
                + sdk.fixture_noun(fixture.kind)
            )
            _error(f"{path}: {message}")
            counts["bad"] += 1
            status = 2
            report.append({"path": str(path), "label": "bad", "reason": message})
            continue
        recorded = fixture
        if args.driver is not None:
            fixture = _with_driver(fixture, args.driver)
        applied_here = sdk.active_fixes(fixes_applied)
        _say_when_long(path, fixture)
        try:
            judged = judge_fixture(recorded, driver=args.driver)
            if applied_here:
                judged = judged_with_fixes(recorded, judged, fixes_applied)
        except protocol.NotApplicable as exc:
            _error(f"{path}: cannot be replayed here: {exc}")
            counts["bad"] += 1
            status = 2
            report.append({**_about(path, fixture), "label": "n/a", "reason": str(exc)})
            continue
        except protocol.Unavailable as exc:  # its SDK is not installed here (no Node, say)
            noun = sdk.fixture_noun(fixture.kind).split(" (")[0]
            _error(f"{path}: {noun} cannot be replayed here: {exc}")
            counts["bad"] += 1
            unavailable[sdk.name] = unavailable.get(sdk.name, 0) + 1
            status = 2
            report.append({**_about(path, fixture), "label": "n/a", "reason": str(exc)})
            continue
        if applied_here and "recorded_differs" in judged.verdict.outcome.observed:
            judged = _unless_the_fixes_moved_it(fixture, judged, applied_here)
            moved += judged.reason != judged.verdict.outcome.observed["recorded_differs"]
        counts[judged.label] += 1
        replayed[sdk.name] = (judged.verdict.release, applied_here)
        if judged.failed:
            status = _worst(status, 1)
        elif judged.label == "NOREPRO":
            status = _worst(status, 3)
        if args.json:
            report.append(_replay_entry(path, fixture, judged))
            continue
        with_fixes = f" {described(applied_here, short=True)}" if applied_here else ""
        where = f"{path} on {sdk.replayed_on(fixture.adk_release, judged.verdict.release)}"
        where += with_fixes
        reason = f": {judged.reason}" if judged.label in ("XFAIL", "XPASS", "NOREPRO") else ""
        if (
            judged.label == "FAIL"
            and judged.reason
            and (fixture.known_fault or judged.reason != UNEXPLAINED)
        ):
            # The marked fault, or the faults whose fix cannot run here, and why.
            reason = f": {judged.reason}"
        if applied_here and judged.reason and not reason:  # "holds with fix X", "still fails"
            reason = f": {judged.reason}"
        print(f"{judged.label:5} {where}{reason}")
        verdict = judged.verdict
        if "recorded_differs" in verdict.outcome.observed:
            continue  # another configuration's violations: the reason line says it all
        shown = list(verdict.new) if verdict.new else [v for v, _ in verdict.known]
        observer = getattr(fixture.case, "observer", "ADK")  # "ADK-JS" for ADK-JS's
        for violation in shown:
            print("      " + violation.render(observer).replace("\n", "\n      "))
        for line in _faults_also_met(judged):
            print(f"      {line}")
        for repair in verdict.outcome.observed.get("repairs", []):
            print(f"      runner: {repair}")
        for reason in verdict.outcome.not_applicable:
            print(f"      not applicable: {reason}")
        sys.stdout.flush()
    if args.json:
        document: dict[str, Any] = {"release": installed_release(), "fixes": list(fixes_applied)}
        for name in protocol.sdks():  # each other SDK's fixes, as its driver reads them
            if name != default.name:
                key = f"{name.replace('-', '_')}_fixes"
                document[key] = list(protocol.sdk_named(name).active_fixes(fixes_applied))
        print(json.dumps({**document, "counts": counts, "fixtures": report}, indent=1))
        return status
    if counts["bad"] and sum(counts.values()) == counts["bad"]:
        return status  # nothing was replayed: the error lines say it all
    missing = sum(unavailable.values())
    fixed = [
        f" ({protocol.sdk_named(name).describe(release)} {described(fixes)})"
        for name, (release, fixes) in replayed.items()
        if fixes
    ]
    if fixes_applied and default.name not in replayed:
        fixed.insert(0, f" ({default.describe(installed_release())} {described(fixes_applied)})")
    print(
        f"{counts['ok']} held, {counts['FAIL']} failed, {counts['XFAIL']} known upstream "
        f"faults, {counts['XPASS']} known faults no longer seen"
        + "".join(fixed)
        + (
            f", {counts['NOREPRO']} not reproducible on the {args.driver} driver"
            if counts["NOREPRO"] and args.driver
            else f", {counts['NOREPRO'] - moved} not replayed as recorded "
            "(check --config / --agent)"
            if counts["NOREPRO"] > moved
            else ""
        )
        + (f", {moved} not judged with these fixes (they move where ADK compacts)" if moved else "")
        + (
            f", {counts['bad'] - missing} not replayed (bad input)"
            if counts["bad"] > missing
            else ""
        )
        + "".join(
            f", {n} {protocol.sdk_named(name).title} fixtures not replayed "
            f"({protocol.sdk_named(name).unavailable_hint})"
            for name, n in unavailable.items()
        )
    )
    return status


def _faults_also_met(judged: Any) -> list[str]:
    """One line per known upstream fault the run met, with what shows it is
    that fault (the fix that removes it, or its pattern), where the verdict's
    own line does not name them so: every label but ``XFAIL``, whose reason
    lists them with their fixes. A ``FAIL`` prints only its new violations,
    so without these lines the text would hide what ``--json`` says in
    ``faults`` and ``evidence``."""
    if judged.label == "XFAIL":
        return []
    verdict = judged.verdict
    broken: dict[str, list[str]] = {}
    for violation, fault in verdict.known:
        names = broken.setdefault(fault, [])
        if violation.invariant not in names:
            names.append(violation.invariant)
    lines = []
    for fault, evidence in verdict.evidence.items():
        how = "no fix yet, known by its pattern" if evidence == "pattern" else evidence
        lines.append(f"also met known upstream fault {fault} ({', '.join(broken[fault])}): {how}")
    return lines


#: Which exit status of ``replay`` wins when fixtures differ: bad input, then a
#: failure, then a driver that cannot reproduce a fixture's shape, then 0.
_SEVERITY = {0: 0, 3: 1, 1: 2, 2: 3}


def _worst(status: int, other: int) -> int:
    return max(status, other, key=_SEVERITY.__getitem__)


def _about(path: Path, fixture: Fixture) -> dict[str, Any]:
    """What identifies a fixture in ``replay --json``."""
    return {
        "path": str(path),
        "kind": fixture.kind,
        "invariant": fixture.invariant,
        "found_on": fixture.adk_release,
        "sdk": fixture.sdk,
        "known_fault": fixture.known_fault,
    }


def _replay_entry(path: Path, fixture: Fixture, judged: Any) -> dict[str, Any]:
    """One fixture's result in ``replay --json``: its verdict on the installed
    release (``label``, ``reason``, ``faults``: the known faults met),
    ``shows``: the same faults (classification by fix does not depend on
    the faults' recorded releases; the release matrix derives those lists
    from it), ``evidence``: for each fault, ``"fix NAME"`` (the fix whose
    re-run removed its violations; several joined by ``+``) or
    ``"pattern"`` (a fault with no fix yet, by its recogniser), ``new``: the
    violations no known fault explains, and ``invariants``: the invariants
    broken."""
    verdict = judged.verdict
    broken = [*verdict.new, *(v for v, _ in verdict.known)]
    return {
        **_about(path, fixture),
        "label": judged.label,
        "reason": judged.reason,
        "faults": list(verdict.faults),
        "shows": list(verdict.faults),
        "evidence": verdict.evidence,
        "new": [v.summary() for v in verdict.new],
        "invariants": sorted({v.invariant for v in broken}),
        "not_applicable": list(verdict.outcome.not_applicable),
    }


def _unless_the_fixes_moved_it(fixture: Fixture, judged: Any, names: tuple[str, ...]) -> Any:
    """A recorded session whose replay with the fixes ``names`` made other
    summaries than its run stored (``NOREPRO``, advising to check --config
    and --agent): replayed again as the release is published, it tells
    whether the fixes moved the compactions (it makes the run's summaries
    then: the reason says so, :func:`.switch.moved_by_fixes`) or the
    advice holds (it differs without them too: ``judged`` as it is)."""
    from dataclasses import replace

    from ..sdk.python.fixes import withheld
    from ..sdk.python.pipeline import run_pipeline_case
    from .switch import moved_by_fixes

    with withheld():
        published = run_pipeline_case(fixture.case)
    if "recorded_differs" in published.observed:
        return judged
    differs = judged.verdict.outcome.observed["recorded_differs"]
    return replace(judged, reason=moved_by_fixes(differs, names))


def _with_driver(fixture, driver: str):
    """A script fixture whose case runs on ``driver`` (its SDK's ``on_driver``)."""
    from dataclasses import replace

    return replace(fixture, case=fixture.sdk_entry().on_driver(fixture.case, driver))


#: From this many events a recorded session's replay says on a terminal that
#: it has started: ADK's compaction runs over every event, and classifying a
#: violation runs it again under fixes (minutes for a few hundred events).
LONG_SESSION = 200


def _is_terminal() -> bool:
    return sys.stderr.isatty()


def _say_when_long(path: Any, fixture: Any) -> None:
    """One line on stderr, on a terminal only, before a long recorded
    session's replay starts (:data:`LONG_SESSION` events or more)."""
    session = getattr(fixture.case, "session", None)
    if session is None or len(session) < LONG_SESSION or not _is_terminal():
        return
    print(
        f"replaying {path}: {len(session)} events through the SDK's compaction; "
        "this can take minutes ...",
        file=sys.stderr,
        flush=True,
    )


def _reexec_in_target(args: argparse.Namespace) -> int:
    from .. import envs

    target = argparse.Namespace(adk=args.adk, adk_src=args.adk_src)
    python = envs.ensure(target)
    argv = [str(python), "-m", "compaction_harness", "replay", *args.fixtures]
    if args.driver is not None:
        argv += ["--driver", args.driver]
    if args.config is not None:
        argv += ["--config", args.config]
    for flag in CONFIG_FLAGS:
        value = getattr(args, flag.replace("-", "_"))
        if value is not None:
            argv += [f"--{flag}", str(value)]
    for name in args.agent or ():
        argv += ["--agent", name]
    if args.fixes is not None:  # checked there, against that release
        argv += ["--fixes", args.fixes]
    if args.json:
        argv.append("--json")
    sys.stdout.flush()
    os.execv(str(python), argv)
    return 2  # unreachable
