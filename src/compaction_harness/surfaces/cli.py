"""Command line: ``python -m compaction_harness COMMAND`` (show, replay, export, minimize,
profile, faults, check).

Exit status: 0 when every fixture holds (or fails only as a recorded known
upstream fault of the installed release), 1 when one fails an invariant, 2 for
bad input (a fixture that cannot be loaded, an unknown release, a release
without the helper a fixture needs) -- always with one line naming the
problem, never a traceback; ``replay --driver`` exits 3 when that driver
cannot reproduce a fixture's shape (``NOREPRO``, see ``verdicts.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import NoReturn

from ..envs import EnvError
from ..sdk.protocol import FixDoesNotApply, RegistryError
from ..spec.invariants import invariants_of
from ..store.fixtures import Fixture, FixtureError, load_fixture
from . import app_check
from .cli_common import (
    CONFIG_FLAGS,
    MAX_SESSION_BYTES,
    MAX_SESSION_EVENTS,
    CliError,
    _error,
    _load_each,
    _minimize_config,
    _natural,
    _positive,
    _whole,
    read_session_text,
)
from .render import render_fixture
from .replay import _cmd_replay

__all__ = ["main"]


#: The pipeline-level invariants, as minimize --invariant takes them.
PIPELINE_NAMES = invariants_of("pipeline")


def _cmd_show(args: argparse.Namespace) -> int:
    status = 0
    shown = 0
    for _, fixture in _load_each(args.fixtures):
        if fixture is None:
            status = 2
            continue
        print(("\n" if shown else "") + render_fixture(fixture), flush=True)
        if getattr(args, "fixes_applied", ()) and fixture.sdk_entry().applies_cli_fixes:
            print(_fixes_note(fixture, args.fixes_applied), flush=True)
        shown += 1
    return status


def _cmd_export(args: argparse.Namespace) -> int:
    from .export import export_patch, export_test
    from .export_head import ExportError, fault_fixes, name_of_test, patch_name

    fixture = load_fixture(args.fixture)
    try:
        if args.patch:
            print(export_patch(fixture), end="")
            return 0
        source = export_test(fixture)
        patch = export_patch(fixture) if fault_fixes(fixture) else None
    except ExportError as exc:
        raise CliError(str(exc)) from None
    if args.out is None:
        print(source, end="")
        return 0
    out = Path(args.out)
    written = [out / f"{name_of_test(fixture)}.py"]
    try:
        out.mkdir(parents=True, exist_ok=True)
        written[0].write_text(source, encoding="utf-8")
        if patch is not None:
            written.append(out / patch_name(fixture))
            written[1].write_text(patch, encoding="utf-8")
    except OSError as exc:
        raise CliError(f"--out: cannot write into {out}: {exc.strerror or exc}") from None
    for path in written:
        print(f"wrote {path}")
    if patch is None:
        try:
            export_patch(fixture)  # refuses, saying why as `export --patch` does
        except ExportError as exc:
            print(exc)
    return 0


def _cmd_minimize(args: argparse.Namespace) -> int:
    from ..sdk.python.adk import ADK_RELEASE, session_from_json
    from ..store.fixtures import Fixture, unwritable, write_fixture
    from .minimize import MinimizeError, also_fails, minimize

    path = Path(args.session)
    out = Path(args.out)
    problem = unwritable(out)  # refuse an unusable --out now, not after the search
    if problem:
        raise CliError(f"--out: {problem}")
    if path.is_file() and path.stat().st_size > MAX_SESSION_BYTES:
        raise CliError(f"{path}: larger than {MAX_SESSION_BYTES} bytes; cut the session first")
    try:
        session = session_from_json(read_session_text(path))
    except (CliError, ValueError) as exc:
        raise CliError(f"{path}: {exc}") from None
    if len(session) > MAX_SESSION_EVENTS:
        raise CliError(
            f"{path}: {len(session)} events; minimize searches at most {MAX_SESSION_EVENTS} "
            "(cut the session to the stretch around the failure first)"
        )
    config = _minimize_config(args)
    where = f"google-adk {ADK_RELEASE}"
    if getattr(args, "fixes_applied", ()):
        from .switch import described

        where += f" {described(args.fixes_applied)}"
    if config is None:
        if args.agent:
            raise CliError("--agent names the agents of a configuration: give --config too")
        if args.invariant is None or args.invariant not in invariants_of("unit", "token"):
            raise CliError(
                "--invariant U1-U5 is required without a configuration (with --config or the "
                "trigger flags every invariant that applies is judged, P0-P7 included)"
            )
        try:
            found = minimize(session, args.invariant, max_examples=args.max_examples)
        except MinimizeError as exc:
            raise CliError(str(exc)) from None
        if found is None:
            print(
                f"{path} holds: no call ADK's compaction makes on its {len(session)} events "
                f"(every invocation-aligned window, or for U5 every invocation end and retention) "
                f"breaks {args.invariant} on {where}"
            )
            print(
                "judged: only that invariant, with no configuration (give the session's with "
                "--config to judge every invariant that applies to it, P0-P7 included)"
            )
            return 1
    else:
        from ..sdk.python.adk import NotApplicable
        from ..spec.model import ModelError
        from .minimize import Differs, Holds, minimize_recorded

        try:
            found = minimize_recorded(
                session,
                config,
                agents=args.agent or (),
                invariant=args.invariant,
                max_examples=args.max_examples,
                pipeline_examples=args.replay_examples,
            )
        except MinimizeError as exc:
            raise CliError(str(exc)) from None
        except (ModelError, NotApplicable) as exc:
            raise CliError(f"{path}: cannot be replayed with this configuration: {exc}") from None
        if isinstance(found, Holds):
            print(f"{path} holds on {where}: {found.covered}")
            return 1
        if isinstance(found, Differs):
            print(f"{path} cannot be judged on {where}: {found.reason}")
            return 3
    given = found.given
    invariant = given.violation.invariant
    print(f"{path} fails {invariant} on {where} as given: {given.violation.summary()}")
    if given.fault:
        print(f"this is the known upstream fault {given.fault} of {where}")
    for line in also_fails(found, path, config, args.agent or ()):  # each one a session breaks
        print(line)
    smallest = found.smallest
    if found.shrunk:
        print(
            f"shrunk to {len(smallest.case.session)} events with the same failure "
            f"({invariant}, ids {', '.join(smallest.violation.ids) or 'none'})"
        )
    else:
        print(
            "no smaller session shows the same failure (searched "
            f"{args.replay_examples if invariant.startswith('P') else args.max_examples} "
            "examples): the fixture is the failing call as given"
        )
    from .verdicts import check

    verdict = check(smallest.case)
    kind = "pipeline" if invariant.startswith("P") else "token" if invariant == "U5" else "unit"
    fixture = Fixture(
        kind=kind,
        invariant=invariant,
        adk_release=ADK_RELEASE,
        case=smallest.case,
        expected=verdict.outcome.expected,
        observed=verdict.outcome.observed,
        violations=tuple(v.summary() for v in [*verdict.new, *(v for v, _ in verdict.known)]),
        known_fault=smallest.fault,
        note=f"minimized from a {len(session)}-event session, anonymised",
    )
    try:
        written, new = write_fixture(fixture, out)
    except OSError as exc:  # the folder changed during the search
        raise CliError(
            f"--out: cannot write the fixture into {out}: {exc.strerror or exc}"
        ) from None
    print(
        f"{'wrote' if new else 'already present'}: {written} ({len(smallest.case.session)} events)"
    )
    print(render_fixture(replace(fixture, path=written)))
    return 0


#: profile --invocations: at most this many. The time grows faster than the
#: session (each step assembles the whole prompt): on 2.13.0, 300 invocations
#: took 19 to 25 s and 1000 took 340 s (sliding), measured 2026-12-01.
MAX_PROFILE_INVOCATIONS = 300


def _cmd_profile(args: argparse.Namespace) -> int:
    from .profile import (
        CONFIGS,
        MissingExtra,
        ProfileError,
        config_named,
        dumps,
        plot_profile,
        profile_case,
        profile_script,
        render_table,
        seeded_script,
        standard_costs,
    )

    seed = _whole("--seed", args.seed, 0)
    invocations = _whole("--invocations", args.invocations, 1, MAX_PROFILE_INVOCATIONS)
    chosen = [x for x in (args.fixture, args.seed, args.standard or None) if x is not None]
    if len(chosen) != 1:
        raise CliError("profile takes one workload: a FIXTURE, --seed N or --standard")
    try:
        config = config_named(args.config) if args.config is not None else CONFIGS["sliding"]
    except ProfileError as exc:
        raise CliError(str(exc)) from None
    if args.fixture is not None and (args.config is not None or invocations is not None):
        raise CliError(
            "--config and --invocations shape a --seed run; a fixture is profiled with its own "
            "configuration and operations"
        )
    if args.standard and (args.plot or args.config is not None or invocations is not None):
        raise CliError(
            "--standard runs the standard configurations only: no --config, --invocations or --plot"
        )
    try:
        if args.plot:
            from .profile import _pyplot

            _pyplot()  # refuse before the run, not after it
            folder = Path(args.plot).parent
            if not folder.is_dir():
                raise CliError(f"--plot {args.plot}: no folder {str(folder)!r} to write it in")
        if args.standard:
            costs = standard_costs()
            print(json.dumps(costs, indent=2) if args.json else _standard_table(costs))
            return 0
        if args.fixture is not None:
            fixture = load_fixture(args.fixture)
            sdk = fixture.sdk_entry()
            if not sdk.applies_cli_fixes:  # not the SDK this process runs: google-adk's
                noun = sdk.fixture_noun(fixture.kind).split(" (")[0]
                raise CliError(
                    f"{args.fixture}: {noun} cannot be profiled: profile measures "
                    f"google-adk's compaction (replay runs it on {sdk.package})"
                )
            try:
                profile = profile_case(fixture.case, source=str(args.fixture))
            except ProfileError as exc:  # the release refuses what the fixture asks of it
                raise CliError(f"{args.fixture}: {exc}") from None
        else:
            name = args.config or "sliding"
            script = seeded_script(seed, invocations or 50, config)
            profile = profile_script(
                script, source=f"seed {seed}, {invocations or 50} invocations, --config {name}"
            )
        print(dumps(profile) if args.json else render_table(profile), flush=True)
        if args.plot:
            try:
                plot_profile(profile, args.plot)
            except OSError as exc:
                raise CliError(
                    f"--plot {args.plot}: cannot write there: {exc.strerror or exc}"
                ) from None
            if not args.json:
                print(f"plot: {args.plot}")
    except MissingExtra as exc:
        raise CliError(str(exc)) from None
    except ProfileError as exc:
        raise CliError(str(exc)) from None
    if profile.stopped:
        _error(f"profile cut short: {profile.stopped}")
        return 1
    return 0


def _standard_table(costs: dict) -> str:
    """standard_costs' figures as a text table, one row per configuration."""
    heads = ("config", "calls_per_100", "steady_prompt", "peak_before", "input", "summary", "s")
    keys = (
        "summariser_calls_per_100",
        "steady_state_prompt",
        "peak_prompt_before",
        "summariser_input",
        "summary_tokens",
        "seconds",
    )
    rows = [list(heads)]
    notes = []
    for name, figures in costs["configurations"].items():
        if "not_applicable" in figures:
            notes.append(f"{name}: not applicable: {figures['not_applicable']}")
            continue
        rows.append([name, *(str(figures[k]) for k in keys)])
        if "stopped" in figures:
            notes.append(f"{name}: cut short: {figures['stopped']}")
    widths = [max(len(r[k]) for r in rows) for k in range(len(heads))]
    lines = [
        f"standard cost figures of google-adk {costs['adk_release']}: seed {costs['seed']}, "
        f"{costs['invocations']} invocations; tokens: ADK's character estimate / 4"
    ]
    for k, row in enumerate(rows):
        lines.append("  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)))
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines + notes)


def _fixes_argument(parser: argparse.ArgumentParser) -> None:
    """--fixes: the google-adk fixes to run with (replay, show, minimize)."""
    parser.add_argument(
        "--fixes",
        metavar="all|NAME,...",
        help="run google-adk with these fixes applied (sdk/python/patches/): all = every "
        "registered fix the installed release can take, none = the release as published "
        "(default: the environment variable HARNESS_FIXES, which `make ... FIXES=` sets; "
        "else none). A fixture whose known fault's fix is applied must hold: `holds with fix "
        "X`. An unknown fix, or one the installed release cannot take: one line, exit 2",
    )


@contextlib.contextmanager
def _fixes_applied(args: argparse.Namespace) -> Iterator[None]:
    """The fixes of ``--fixes`` (or HARNESS_FIXES) applied for the command;
    ``args.fixes_applied`` names them. Raises :class:`CliError` for a name
    that is unknown or that the installed release cannot take."""
    if not hasattr(args, "fixes") or getattr(args, "adk", None) or getattr(args, "adk_src", None):
        yield  # no such option; or replay re-runs itself in the target, which applies them
        return
    from .switch import ENV, FixesError, parse

    spec = args.fixes if args.fixes is not None else os.environ.get(ENV)
    try:
        names = parse(spec, origin="--fixes" if args.fixes is not None else ENV)
    except FixesError as exc:
        raise CliError(str(exc)) from None
    args.fixes_applied = names
    from ..sdk.python.adk import NotApplicable
    from ..sdk.python.fixes import applied

    with contextlib.ExitStack() as stack:
        if names:
            try:  # each fix applies alone (parse checked it); together they may not
                stack.enter_context(applied(names))
            except NotApplicable as exc:
                raise CliError(f"--fixes {','.join(names)}: {exc}") from None
        if args.fixes is not None:  # ADK-JS fixtures: the harness's ADK-JS driver reads it
            stack.enter_context(_environment(ENV, args.fixes))
        yield


@contextlib.contextmanager
def _environment(name: str, value: str) -> Iterator[None]:
    """``name=value`` in the environment for the block, as it was after it."""
    before = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before


def _fixes_note(fixture: Fixture, names: Sequence[str]) -> str:
    """show --fixes: whether the fixture's fault's fix is among ``names``."""
    from ..sdk.python.fixes import fixes_for
    from .switch import described, own_fixes

    if not fixture.known_fault:
        return f"applied: {described(names)[5:]}; the fixture is marked with no known fault"
    own = own_fixes(fixture.known_fault, names)
    if own:
        return (
            f"applied: {described(names)[5:]}; the fault's own fix {'+'.join(own)} is among "
            "them: `replay --fixes` expects the fixture to hold"
        )
    mine = [f.name for f in fixes_for(fixture.known_fault)]
    return f"applied: {described(names)[5:]}; the fault's own fix " + (
        f"{', '.join(mine)} is not among them" if mine else "does not exist yet"
    )


def _session_config_arguments(parser: argparse.ArgumentParser) -> None:
    """--config, the trigger flags and --agent: the configuration a recorded
    session ran with (minimize, replay)."""
    parser.add_argument(
        "--config",
        metavar="JSON",
        help="the session's EventsCompactionConfig trigger values as a JSON object (keys "
        "compaction_interval, overlap_size, token_threshold, event_retention_size; a missing "
        "key or null: unset), or the path of a file holding one; the flags below override it",
    )
    for flag in CONFIG_FLAGS:
        parser.add_argument(
            f"--{flag}",
            metavar="N",
            type=_natural,
            help=f"the session's EventsCompactionConfig.{flag.replace('-', '_')}",
        )
    parser.add_argument(
        "--agent",
        action="append",
        metavar="NAME",
        help="an agent of the session's app, the root first (repeat for sub-agents; default: "
        "the authors of its events in order of their first event, the first as the root); "
        "only with a configuration",
    )


def _cmd_faults(args: argparse.Namespace) -> int:
    if args.pages is not None:  # the catalogue as pages (docs/faults), as fault_pages writes them
        from .fault_pages import main as fault_pages

        if args.sdk or args.json:
            raise CliError("--pages writes every fault's page: no --sdk or --json")
        return fault_pages(["--write", args.pages])
    from ..faults.catalogue import FAULTS, faults_of, fix_text, ranges, release_order

    chosen = faults_of(args.sdk) if args.sdk else FAULTS
    if args.json:
        print(json.dumps([f.record() for f in chosen], indent=1))
        return 0
    orders = {sdk: release_order(sdk) for sdk in {f.sdk for f in chosen}}
    rows = [("FAULT", "SDK", "FAMILY", "INVARIANTS", "RELEASES", "FIX")]
    rows += [
        (
            f.id,
            f.sdk,
            f.family or "-",
            ",".join(f.invariants),
            ranges(f.releases, orders[f.sdk]) or "none recorded",
            fix_text(f),
        )
        for f in chosen
    ]
    widths = [max(len(row[k]) for row in rows) for k in range(len(rows[0]) - 1)]
    for row in rows:
        print("  ".join([*(c.ljust(w) for c, w in zip(row, widths, strict=False)), row[-1]]))
    fixed = sum(1 for f in chosen if f.fix)
    print(f"{len(chosen)} known faults, {fixed} with a fix")
    return 0


class _OneLineParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line on standard error (exit
    2): a bad option value names itself, without the usage (``--help`` has
    it). Its subcommands' parsers are of the same class."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    invoked = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    parser = _OneLineParser(
        # The console script keeps its own name; `python -m` shows as __main__.py.
        prog=invoked
        if invoked.startswith("compaction-harness")
        else "python -m compaction_harness",
        description="Show, replay and export JSON repro fixtures of ADK event-compaction "
        "failures, minimise real sessions into new ones, profile what compaction costs, and "
        "list the known upstream faults.",
        epilog="Exit status: show and export: 0 done, 2 bad input (show never re-checks a "
        "fixture); replay: 0 all hold or fail only as known upstream faults, 1 a fixture "
        "fails or a known fault no longer shows, 2 bad input (each readable fixture is "
        "replayed all the same), 3 --driver names a driver that cannot reproduce a "
        "fixture's shape, or a recorded session's replay with --config makes other summaries "
        "than its run stored (NOREPRO); minimize: 0 a fixture written, 1 the session holds, 2 "
        "bad input, 3 its replay with --config makes other summaries than it stored; "
        "profile: 0 profiled, 1 google-adk raised during the run, 2 bad input; faults: 0. "
        "Inside an environment made by `make env`: .venv/adk-<release>/bin/python -m "
        "compaction_harness ...",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    show = sub.add_parser(
        "show",
        help="print a fixture as an annotated timeline",
        description="Print a fixture: its violations and the session as a timeline, one line "
        "per event, with the window, open obligations and where ADK and the reference cut.",
    )
    show.add_argument(
        "fixtures",
        nargs="+",
        metavar="FIXTURE",
        help="fixture files, or directories of them (tests/repros)",
    )
    _fixes_argument(show)
    show.set_defaults(func=_cmd_show)
    replay = sub.add_parser(
        "replay",
        help="re-check fixtures against the installed (or another) google-adk",
        description="Re-run each fixture's call against real ADK and check every invariant. "
        "A fixture that fails only as known upstream faults of the installed release is an "
        "expected failure (XFAIL). Every readable fixture is replayed; an unreadable one is "
        "reported in one line. Exit 0 when all hold or fail only as expected; 1 when one "
        "fails, or the known fault a fixture is marked with no longer shows (XPASS); 2 for "
        "bad input; 3 when --driver names a driver that cannot reproduce a fixture's shape "
        "(NOREPRO: the fault it is marked with does not show there, but still shows on the "
        "fixture's own driver, so ADK fixed nothing and its releases stay as they are). The "
        "worst status wins: 2, then 1, then 3. With the configuration a recorded session ran "
        "with (--config or the trigger flags, and --agent), each FIXTURE is instead a session "
        "as ADK's session services store it, replayed through ADK's compaction with that "
        "configuration and its agents' names (its own summaries left out) and judged on "
        "P0-P7 as a pipeline fixture is. The replay's summaries have the sizes of the run's "
        "(ADK weighs a range against the previous summary's size before it compacts), and "
        "the ones the run stored are evidence of its configuration: when the replay's "
        "summaries (their ranges) are not the run's, the verdict is NOREPRO (exit 3) in one "
        "line naming the first difference, and nothing the replay shows is judged as ADK's: "
        "check --config and --agent (if they are right, the harness's replay differs from the "
        "run, e.g. in the sizes of events it does not carry: not a verdict on ADK). Fixes "
        "apply to a recorded session only where they leave its compactions as the run made "
        "them: when the session replays as recorded without them, the NOREPRO line says the "
        "fixes change where ADK compacts.",
    )
    replay.add_argument(
        "fixtures", nargs="+", metavar="FIXTURE", help="fixture files, or directories of them"
    )
    _session_config_arguments(replay)
    replay.add_argument(
        "--json",
        action="store_true",
        help="print one JSON document instead of text: the release, the counts, and per "
        "fixture its label (ok, FAIL, XFAIL, XPASS, NOREPRO, n/a, bad), the known faults met, the "
        "known faults it shows whatever releases they are recorded on, the new violations "
        "and the invariants broken (the exit status is the same)",
    )
    replay.add_argument(
        "--driver",
        choices=("runner", "emulated"),
        help="run script fixtures on this driver (default: the one each fixture records): "
        "runner = ADK's own Runner with a scripted model and real tools, emulated = the "
        "fast emulating driver; other fixture kinds are refused. A fixture whose known "
        "fault shows on its own driver but not on this one is NOREPRO (exit 3), with the "
        "reason this driver cannot reproduce its shape",
    )
    target = replay.add_mutually_exclusive_group()
    target.add_argument("--adk", metavar="RELEASE", help="replay in that release's environment")
    target.add_argument("--adk-src", metavar="PATH", help="replay against an adk-python checkout")
    _fixes_argument(replay)
    replay.set_defaults(func=_cmd_replay)
    export = sub.add_parser(
        "export",
        help="print a fixture as a pytest test for adk-python's own suite",
        description="Print a self-contained pytest module for adk-python's test suite that "
        "asserts the correct outcome: it fails while ADK has the fault and passes once it is "
        "fixed. It imports only google.adk, google.genai and the standard library, carries "
        "ADK's Apache-2.0 header, and passes adk-python's pyink settings (80 columns, "
        "two-space indentation) and pyflakes checks unchanged. Unit and token fixtures: the "
        "compaction helper called on Event objects built directly. Script and pipeline "
        "fixtures: the fixture is run again on the installed google-adk to find the ADK call "
        "that breaks its invariant (compaction at an invocation's end, the compaction request "
        "processor before a model call, or the contents assembly); the test builds the "
        "session as it stood before that call, makes it, and asserts the invariant in plain "
        "terms. Refused with one line and exit status 2: metamorphic fixtures, Runner-driver "
        "scripts, database storage (P7), and a pipeline fixture that does not fail on the "
        "installed release (run export with the release it fails on: "
        ".venv/adk-<release>/bin/python -m compaction_harness export FIXTURE).",
    )
    export.add_argument("fixture", metavar="FIXTURE", help="a fixture file")
    written = export.add_mutually_exclusive_group()
    written.add_argument(
        "--out",
        metavar="DIR",
        help="write the test as DIR/test_<fixture>.py and, when the fixture's known fault has "
        "a fix, the fix beside it as DIR/test_<fixture>.patch (a diff of the installed "
        "release's own source: `patch -p1` in adk-python's src/), instead of printing the test",
    )
    written.add_argument(
        "--patch",
        action="store_true",
        help="print the fixture's known fault's fix as that patch instead of the test (exit 2 "
        "when the fault has no fix)",
    )
    export.set_defaults(func=_cmd_export)
    mini = sub.add_parser(
        "minimize",
        help="shrink a real session to a minimal anonymised failing fixture",
        description="Read a session as ADK's session services store it (a Session JSON "
        "document, or a JSON list of events; at most "
        f"{MAX_SESSION_EVENTS} events), anonymise it, and check the invariant on the session "
        "as given: every invocation-aligned window, with the session as it stood when the "
        "window's last invocation ended (U5: every invocation end and event_retention_size "
        "0-6). If it fails, Hypothesis's shrinker finds a minimal sub-sequence of its events "
        "with the same failure (invariant, known upstream fault, call ids); an event is never "
        "dropped apart from the events that answer it or that it answers. Writes the fixture, "
        "marked when it is a known upstream fault. That judges the session with every "
        "configuration at once; give the configuration it ran with (--config, or the trigger "
        "flags) and it is judged as its app ran it instead: replayed through ADK's compaction "
        "with those trigger values and its agents' names, U1-U4 checked on exactly the "
        "prefix-helper calls and U5 on exactly the token-threshold splits that replay made "
        "(none where the configuration has no such trigger), and every pipeline invariant "
        "P0-P7 on the replay itself; a pipeline-level failure shrinks to a `pipeline` fixture "
        "that replay judges with the same configuration and agents. A session that holds is "
        "reported with the invariants and the configuration covered. The replay's summaries "
        "have the sizes of the session's own; when they are not the session's (their ranges), "
        "the configuration or the agents given are not the ones it ran with, nothing is "
        "judged, and one line names the first difference. Exit 0 when a fixture was written, "
        "1 when the session holds, 2 for bad input, 3 when the replay's summaries are not the "
        "session's.",
        epilog="Example: minimize session.json --token-threshold 110 --event-retention-size 2 "
        '--agent assistant (or --config \'{"token_threshold": 110, "event_retention_size": '
        "2}'). Without a configuration, --invariant (U1-U5) is required.",
    )
    mini.add_argument("session", metavar="SESSION.json", help="the recorded session")
    mini.add_argument(
        "--invariant",
        choices=[*invariants_of("unit", "token"), *PIPELINE_NAMES],
        help="the invariant the minimal session must break. Without a configuration: one of "
        "U1-U5 (required). With one: any invariant that applies to it (default: every one "
        "that applies: U1-U4 with either trigger, U5 with a token threshold, P0-P7)",
    )
    _session_config_arguments(mini)
    mini.add_argument(
        "--replay-examples",
        type=_positive,
        default=200,
        help="Hypothesis examples to search for a pipeline-level failure (200; each replays "
        "the session through ADK)",
    )
    mini.add_argument(
        "--out", default="build/repros", help="fixture folder (default: build/repros)"
    )
    mini.add_argument(
        "--max-examples",
        type=_positive,
        default=2000,
        help="Hypothesis examples to search (2000)",
    )
    _fixes_argument(mini)
    mini.set_defaults(func=_cmd_minimize)
    prof = sub.add_parser(
        "profile",
        help="what compaction costs: prompt size and summariser calls per invocation",
        description="Run a workload on the installed google-adk and print, for every "
        "invocation end (where the runner's post-invocation compaction runs), the root agent's "
        "prompt before and after compaction, the summariser's calls, the tokens given to it and "
        "the tokens its summaries add, with running totals. Units: tokens of the harness's "
        "token model: characters as ADK's own estimate counts them (text, tool names, the JSON "
        "of arguments and responses; prompts also count the system instruction and tool "
        "declarations), four characters a token, rounded down. 'before': the prompt with the "
        "summaries that invocation made left out; 'after': what the next invocation starts "
        "from; 'input': the events given to the summariser (a rolling summary's seed included, "
        "its instruction not). A script fixture runs on the emulating driver, a pipeline "
        "fixture as recorded; nothing is judged (replay does that).",
        epilog="Workloads: FIXTURE (a script or pipeline fixture), --seed N (a reproducible "
        "script of plain invocations: a user message, up to two turns of parallel tool calls, a "
        "text reply), or --standard (the three configurations on seed 0, 100 invocations: "
        "summariser calls per 100 invocations and the steady-state prompt, the median prompt "
        "after compaction over the last half). Exit status: 0 profiled, 1 google-adk raised "
        "during the run (the table up to there is printed), 2 bad input, a release without "
        "event compaction or one that refuses the configuration.",
    )
    prof.add_argument("fixture", nargs="?", metavar="FIXTURE", help="a script or pipeline fixture")
    prof.add_argument("--seed", metavar="N", help="profile a seeded script instead of a fixture")
    prof.add_argument(
        "--invocations",
        metavar="K",
        help=f"invocations of the seeded script (default 50, at most {MAX_PROFILE_INVOCATIONS})",
    )
    prof.add_argument(
        "--config",
        metavar="NAME|JSON",
        help="the seeded script's configuration: your own as JSON (trigger values, such as "
        '{"token_threshold": 1500, "event_retention_size": 4}), or sliding '
        "(compaction_interval=2, "
        "overlap_size=1; the default), token-small (token_threshold=2000, "
        "event_retention_size=2, tiny summaries) or token-large (the same, each summary larger "
        "than the threshold); the token configurations also carry compaction_interval=10000, "
        "which never fires, for the releases that require it; all with a 500-token system "
        "instruction and 300 tokens of tools",
    )
    prof.add_argument(
        "--standard",
        action="store_true",
        help="the standard figures of the installed release (the three configurations)",
    )
    prof.add_argument("--json", action="store_true", help="print JSON instead of the table")
    prof.add_argument(
        "--plot",
        metavar="PATH",
        help="also write a PNG of the prompt size and the summariser calls over the "
        "invocation ends (needs matplotlib: the `report` extra)",
    )
    prof.set_defaults(func=_cmd_profile)
    faults = sub.add_parser(
        "faults",
        help="list the known upstream faults of both SDKs, with their fixes and releases",
        description="Print the fault catalogue (src/compaction_harness/faults/catalogue.py): "
        "every known upstream fault of google-adk and of ADK-JS (@google/adk), one line each: "
        "its id, its SDK, its family (the fault of the other SDK with the same mechanism, or "
        "-), the invariants it breaks, the releases it shows on and its fix. Releases are "
        "derived, never typed: google-adk's from the committed release matrix record "
        "(docs/release-matrix.json, written by `make matrix`), as runs of consecutive matrix "
        "releases (1.26.0\u20132.13.0); ADK-JS's from the @google/adk version of the fault's "
        "fixtures in tests/repros/. The fix is the name of the fix that removes the fault "
        "(google-adk: sdk/python/python_fixes.py; ADK-JS: sdks/adk-js/fixes/index.json), "
        "'no fix: <why>' where none can exist, or 'no fix yet'.",
        epilog="Exit status: 0. Nothing is run: the catalogue is read as it is.",
    )
    faults.add_argument(
        "--sdk",
        choices=("google-adk", "adk-js"),
        help="only the faults of this SDK (default: both)",
    )
    faults.add_argument(
        "--json",
        action="store_true",
        help="print a JSON list of records instead, one per fault with every field (id, "
        "sdk, family, invariants, title, user_sees, compactors, fix, no_fix_reason, "
        "releases)",
    )
    faults.add_argument(
        "--pages",
        metavar="DIR",
        help="write the catalogue as Markdown pages instead: DIR/<fault id>.md for every "
        "known fault and the index DIR/README.md, as docs/faults holds them (made if absent; "
        "other *.md files there are deleted); nothing is run",
    )
    faults.set_defaults(func=_cmd_faults)
    app_check.add_parser(sub, main)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    import logging
    import warnings

    # ADK logs what its prompt builder drops, and the traceback of an exception
    # its Runner catches (which the harness reports as P0 in one line), and warns
    # that compaction is experimental; the command's own output says what matters.
    logging.getLogger("google_adk").setLevel(logging.CRITICAL)
    warnings.filterwarnings("ignore", message=r".*EXPERIMENTAL.*")
    # Older releases import Google Cloud libraries that warn about Python and
    # package versions on every start (1.16.0: fourteen lines): not ours to act on.
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", category=UserWarning, module=r"google\.|vertexai")
    args = build_parser().parse_args(argv)
    try:
        with _fixes_applied(args):
            return args.func(args)
    except (FixtureError, EnvError, CliError, RegistryError, FixDoesNotApply) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader stopped reading (`... | head -1`): stop quietly, as Unix
        # tools do when SIGPIPE ends them. Whatever was written to disk stays.
        _silence_stdout()
        return 128 + 13  # 128 + SIGPIPE, the status a shell reports for such a tool


def _silence_stdout() -> None:
    """Point standard output at /dev/null, so the interpreter's final flush of
    what is still buffered cannot raise BrokenPipeError again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout is not a file (a test's capture)
        pass
