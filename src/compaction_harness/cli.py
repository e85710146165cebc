"""Command line: ``python -m compaction_harness {show,replay} ...``.

Exit status: 0 when every fixture holds (or fails only as a recorded known
upstream fault of the installed release), 1 when one fails an invariant, 2 for
bad input (a fixture that cannot be loaded, an unknown release, a release
without the helper a fixture needs) -- always with one line naming the
problem, never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from dataclasses import replace

from . import reference
from .envs import EnvError
from .fixtures import Fixture, FixtureError, load_fixture

__all__ = ["main"]


class CliError(Exception):
    """Bad input or an unusable target: one line, exit status 2."""


#: minimize's limits: Hypothesis draws one choice per event, and the search
#: replays ADK on every candidate.
MAX_SESSION_EVENTS = 1_000
MAX_SESSION_BYTES = 50_000_000


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected at least 1, got {value}")
    return value


def _cmd_show(args: argparse.Namespace) -> int:
    fixtures = [load_fixture(path) for path in args.fixtures]  # all load, or exit 2
    print("\n\n".join(render_fixture(f) for f in fixtures))
    return 0


def _length(value: object) -> int | None:
    return len(value) if isinstance(value, list) else None


def _pipeline_timeline(fixture: Fixture) -> list[str]:
    """A pipeline run as stored in the session: the appended events and, where
    ADK put them, the summaries with the events each was given (the numbering
    the violations use)."""
    case = fixture.case
    stored = fixture.observed.get("stored")
    summaries = fixture.observed.get("summaries", [])
    if not isinstance(stored, list):  # a fixture written before "stored" was recorded
        lines = ["timeline (the events appended; summaries not shown):", case.render()]
        for n, given in enumerate(summaries):
            lines.append(f"summary#{n} was given the stored events {given}")
        return lines
    rendered = [line.split(None, 1)[1] for line in case.session.render().splitlines()]
    ends = list(case.ends)
    lines = [
        "timeline (numbered as stored, summaries included; an event the model wrote "
        "follows a model call, before which token-threshold compaction may run):"
    ]
    ended = False
    for position, entry in enumerate(stored):
        if isinstance(entry, int) and 0 <= entry < len(rendered):
            lines.append(f"#{position:<4}{rendered[entry]}")
            ended = (entry + 1) in ends
            if ended:
                lines.append("  ---- end of invocation: the runner's compaction runs")
            continue
        number = str(entry).rsplit("#", 1)[-1]
        given = summaries[int(number)] if number.isdigit() and int(number) < len(summaries) else []
        when = "at that end" if ended else "before the next model call"
        lines.append(
            f"#{position:<4}{entry}: a summary made {when}, given "
            + (", ".join(f"#{i}" for i in given) or "nothing")
        )
    lines.append(f"config: {dict(case.config)}")
    prompt = fixture.observed.get("prompt")
    if isinstance(prompt, list) and prompt:
        lines.append("prompt at the last check (role: parts):")
        for content in prompt:
            role, parts = content[0], content[1]
            shown = "; ".join(" ".join(str(x) for x in part) for part in parts)
            lines.append(f"  {role}: {shown}")
    return lines


def render_fixture(fixture: Fixture) -> str:
    """The fixture for a person: header, violations, and the annotated timeline."""
    case = fixture.case
    session, window = case.session, case.window
    if fixture.kind == "token":
        expected = _length(fixture.expected.get("range"))
        observed = _length(fixture.observed.get("range"))
    else:
        expected = fixture.expected.get("prefix_length")
        observed = fixture.observed.get("prefix_length")
    lines = [
        f"fixture    {fixture.path}",
        f"invariant  {fixture.invariant}   found on google-adk {fixture.adk_release}",
    ]
    if fixture.known_fault:
        from .known_faults import fault_for

        fault = fault_for(fixture.known_fault)
        title = f" ({fault.title}; see known_faults.py)" if fault else ""
        lines.append(f"known upstream fault: {fixture.known_fault}{title}")
    if fixture.note:
        lines.append(f"note: {fixture.note}")
    lines += ["", "violations:"] + [f"  {v}" for v in fixture.violations] + [""]
    if fixture.kind == "pipeline":
        return "\n".join(lines + _pipeline_timeline(fixture))
    lines.append(
        "timeline (W = in the compaction window; open = obligations still open after the "
        "event when no id is exempted as provably dead):"
    )
    dead = reference.provably_dead_call_ids(session, window)
    position = {step: pos for pos, step in enumerate(window)}
    for index, line in enumerate(session.render({i: "W" for i in window}).splitlines()):
        note = ""
        if index in position:
            pos = position[index]
            still_open = reference.open_obligations(session, window, pos + 1, exempt_dead=False)
            opened = sorted({o.id for o in still_open})
            note = f"   open={{{','.join(opened)}}}" if opened else ""
        lines.append(line + note)
        if index in position:
            cut = position[index] + 1
            if cut == expected:
                lines.append(f"  ---- reference cut: compact {expected} window event(s)")
            if cut == observed:
                lines.append(f"  ---- ADK cut: compacted {observed} window event(s)")
    if expected == 0:
        lines.append("  (reference: compact nothing)")
    if observed == 0:
        lines.append("  (ADK: compacted nothing)")
    if fixture.kind == "token":
        lines.append(f"event_retention_size: {fixture.case.retention}")
        lines.append(
            f"split (reference): {fixture.expected.get('split')}   "
            f"split (ADK): {fixture.observed.get('split')}"
        )
    lines.append(f"dead ids (reference): {sorted(dead) or 'none'}")
    if "dead_ids" in fixture.observed:
        lines.append(f"dead ids (ADK):       {fixture.observed['dead_ids'] or 'none'}")
    return "\n".join(lines)


def _cmd_replay(args: argparse.Namespace) -> int:
    if args.adk or args.adk_src:
        return _reexec_in_target(args)
    fixtures = [load_fixture(path) for path in args.fixtures]  # all load, or exit 2
    from .adk import ADK_RELEASE, NotApplicable
    from .cases import run_case
    from .known_faults import fault_for

    counts = {"held": 0, "failed": 0, "known": 0, "fixed": 0}
    for fixture in fixtures:
        try:
            outcome = run_case(fixture.case)
        except NotApplicable as exc:
            raise CliError(f"{fixture.path}: cannot be replayed here: {exc}") from None
        fault = fault_for(fixture.known_fault) if fixture.known_fault else None
        expected_to_fail = fault is not None and fault.applies_to(ADK_RELEASE)
        where = f"{fixture.path} on google-adk {ADK_RELEASE}"
        if outcome.violations and expected_to_fail:
            counts["known"] += 1
            print(f"XFAIL {where}: known upstream fault {fault.id}")
        elif outcome.violations:
            counts["failed"] += 1
            print(f"FAIL  {where}")
        elif expected_to_fail:
            counts["fixed"] += 1
            print(
                f"XPASS {where}: the known fault {fault.id} no longer shows; if ADK fixed it, "
                "remove its entry from known_faults.py"
            )
        else:
            counts["held"] += 1
            print(f"ok    {where}")
        for violation in outcome.violations:
            print("      " + str(violation).replace("\n", "\n      "))
        for reason in outcome.not_applicable:
            print(f"      not applicable: {reason}")
    print(
        f"{counts['held']} held, {counts['failed']} failed, {counts['known']} known upstream "
        f"faults, {counts['fixed']} known faults no longer seen"
    )
    return 1 if counts["failed"] or counts["fixed"] else 0


def _cmd_export(args: argparse.Namespace) -> int:
    from .export import ExportError, export_test

    fixture = load_fixture(args.fixture)
    try:
        print(export_test(fixture), end="")
    except ExportError as exc:
        raise CliError(str(exc)) from None
    return 0


def _cmd_minimize(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .adk import ADK_RELEASE, session_from_json
    from .cases import run_case
    from .fixtures import Fixture, write_fixture
    from .minimize import MinimizeError, minimize

    path = Path(args.session)
    out = Path(args.out)
    try:  # refuse an unusable --out now, not after the search
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CliError(f"--out {out}: cannot write there: {exc.strerror or exc}") from None
    if path.is_file() and path.stat().st_size > MAX_SESSION_BYTES:
        raise CliError(f"{path}: larger than {MAX_SESSION_BYTES} bytes; cut the session first")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"{path}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        session = session_from_json(text)
    except ValueError as exc:
        raise CliError(f"{path}: {exc}") from None
    if len(session) > MAX_SESSION_EVENTS:
        raise CliError(
            f"{path}: {len(session)} events; minimize searches at most {MAX_SESSION_EVENTS} "
            "(cut the session to the stretch around the failure first)"
        )
    try:
        case = minimize(session, args.invariant, max_examples=args.max_examples)
    except MinimizeError as exc:
        print(f"{path}: {exc}")
        return 1
    outcome = run_case(case)
    from .known_faults import matching_fault

    faults = {matching_fault(case, v, ADK_RELEASE) for v in outcome.violations}
    known = next(iter(faults)) if len(faults) == 1 and None not in faults else None
    if known is not None:
        print(f"this is the known upstream fault {known.id} of google-adk {ADK_RELEASE}")
    fixture = Fixture(
        kind="token" if hasattr(case, "retention") else "unit",
        invariant=args.invariant,
        adk_release=ADK_RELEASE,
        case=case,
        expected=outcome.expected,
        observed=outcome.observed,
        violations=tuple(v.summary() for v in outcome.violations),
        known_fault=known.id if known else None,
        note=f"minimized from a {len(session)}-event session ({path.name}), anonymised",
    )
    written, new = write_fixture(fixture, out)
    print(f"{'wrote' if new else 'already present'}: {written} ({len(case.session)} events)")
    print(render_fixture(replace(fixture, path=written)))
    return 0


def _reexec_in_target(args: argparse.Namespace) -> int:
    from . import envs

    target = argparse.Namespace(adk=args.adk, adk_src=args.adk_src)
    python = envs.ensure(target)
    argv = [str(python), "-m", "compaction_harness", "replay", *args.fixtures]
    sys.stdout.flush()
    os.execv(str(python), argv)
    return 2  # unreachable


def build_parser() -> argparse.ArgumentParser:
    invoked = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    parser = argparse.ArgumentParser(
        # The console script keeps its own name; `python -m` shows as __main__.py.
        prog=invoked
        if invoked.startswith("compaction-harness")
        else "python -m compaction_harness",
        description="Show, replay and export JSON repro fixtures of ADK event-compaction "
        "failures, and minimise real sessions into new ones.",
        epilog="Exit status of show, replay and export: 0 all hold, 1 a fixture fails an "
        "invariant, 2 bad input; minimize: 0 a fixture written, 1 nothing fails, 2 bad input. "
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
        "fixtures", nargs="+", metavar="FIXTURE", help="fixture files (tests/repros/*.json)"
    )
    show.set_defaults(func=_cmd_show)
    replay = sub.add_parser(
        "replay",
        help="re-check fixtures against the installed (or another) google-adk",
        description="Re-run each fixture's call against real ADK and check every invariant. "
        "A fixture marked with a known upstream fault of the installed release is expected to "
        "fail (XFAIL). Exit 0 when all hold or fail only as expected; 1 when one fails, or a "
        "known fault no longer shows (XPASS); 2 for bad input.",
    )
    replay.add_argument("fixtures", nargs="+", metavar="FIXTURE", help="fixture files")
    target = replay.add_mutually_exclusive_group()
    target.add_argument("--adk", metavar="RELEASE", help="replay in that release's environment")
    target.add_argument("--adk-src", metavar="PATH", help="replay against an adk-python checkout")
    replay.set_defaults(func=_cmd_replay)
    export = sub.add_parser(
        "export",
        help="print a fixture as a pytest test for adk-python's own suite",
        description="Print a self-contained pytest test in the style of ADK's unit tests "
        "(Event objects built directly, two-space indentation) that asserts the correct "
        "outcome: it fails while ADK has the fault and passes once it is fixed. Unit and "
        "token fixtures only.",
    )
    export.add_argument("fixture", metavar="FIXTURE", help="a fixture file")
    export.set_defaults(func=_cmd_export)
    mini = sub.add_parser(
        "minimize",
        help="shrink a real session to a minimal anonymised failing fixture",
        description="Read a session as ADK's session services store it (a Session JSON "
        "document, or a JSON list of events), anonymise it, and let Hypothesis's shrinker "
        "find a minimal sub-sequence of its events that breaks the invariant (at most "
        f"{MAX_SESSION_EVENTS} events). Writes the fixture, marked when it is a known upstream "
        "fault; exit 0 when a fixture was written, 1 when no sub-sequence breaks the "
        "invariant, 2 for bad input.",
    )
    mini.add_argument("session", metavar="SESSION.json", help="the recorded session")
    mini.add_argument(
        "--invariant",
        required=True,
        choices=["U1", "U2", "U3", "U4", "U5"],
        help="the unit-level invariant the minimal session must break (U6 and the pipeline "
        "invariants P1-P7 need more than a session: shrink those with `make fuzz`)",
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
    mini.set_defaults(func=_cmd_minimize)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    import logging
    import warnings

    # ADK logs what its prompt builder drops and warns that compaction is
    # experimental; the command's own output says what matters.
    logging.getLogger("google_adk").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", message=r".*EXPERIMENTAL.*")
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (FixtureError, EnvError, CliError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
