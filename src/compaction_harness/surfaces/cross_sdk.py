"""Every Python fixture replayed on ADK for TypeScript: the cross-SDK table.

``python -m compaction_harness.surfaces.cross_sdk [--markdown | --write docs/drivers.md]
[FIXTURE_DIR]`` (default ``tests/repros``) runs each Python fixture of kind ``script`` whose script
ADK-JS can represent, and each of kind ``pipeline`` (a recorded google-adk
session, replayed event by event by :mod:`compaction_harness.sdk.js.adk_js_recorded`)
whose steps it can represent, on ADK-JS (:mod:`compaction_harness.sdk.js.adk_js`, the Node
driver), with the compactor that stands for its configuration
(:func:`~compaction_harness.sdk.js.adk_js.compactor_for`: the token-threshold
trigger is ``TokenBasedContextCompactor`` with the same threshold and
retention), and judges what it shows against ``adk_js.KNOWN_FAULTS``. A
sliding-window script (ADK-JS 2.0.0 has no sliding-window compactor) runs on
the labelled stand-in :func:`~compaction_harness.sdk.js.adk_js.stand_in_for`
(``TokenBasedContextCompactor`` firing at every model call, retention = the
overlap size): its verdict ends in ``(stand-in: token_based threshold=0,
retention=<r>)``. A recorded session whose tool confirmations were
translated into the events ADK-JS's Runner stores for the same conversation
(adk-python's placeholder response dropped) says so in the same
parentheses: ``(translated: adk-python's confirmation placeholder dropped,
as ADK-JS stores a confirmation)``.

Each row: the fixture's file name, the google-adk releases on which the last
release matrix (``docs/release-matrix.json``) found it ``known fault`` or
``fails`` (``-`` when none; "not in the matrix" for a fixture newer than
it), and the ADK-JS verdict, one of:

* ``holds``: every invariant ADK-JS is checked on holds;
* ``known: <fault ids>``: it fails only as known ADK-JS faults;
* ``FAILS: <violations>``: a violation no known ADK-JS fault explains (a
  finding: the exit status is 1);
* ``n/a: <reason>``: ADK-JS cannot represent it (a unit-level kind, a
  rewind, a tool confirmation, ...; a recorded session's
  reason starts ``recorded session:`` and names the step).

A script with database storage also runs on ADK-JS's
``DatabaseSessionService`` and is judged on P7 (``adk_js.check_case``).

``--write FILE`` (``make tables``) rewrites what lies between the markers
:data:`BEGIN` and :data:`END` in ``FILE`` (:data:`PAGE`, ``docs/drivers.md``,
the page on ADK for TypeScript) with the summary line and the table
(:func:`generated`); :func:`stale` says in one line, naming the file, when
a file's copy is not what the command writes (the JS gate's check).

Exit status: 0 the table was made, 1 a fixture FAILS on ADK-JS (``--write``
writes the table all the same), 2 bad input or no Node (one line on
standard error).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..sdk.js import adk_js
from ..store.fixtures import Fixture, FixtureError, load_fixture

__all__ = [
    "BEGIN",
    "END",
    "PAGE",
    "CrossRow",
    "cross_row",
    "cross_table",
    "generated",
    "main",
    "markdown",
    "python_releases",
    "stale",
    "summary",
    "write",
]

ROOT = Path(__file__).resolve().parents[3]
CORPUS = ROOT / "tests" / "repros"
MATRIX = ROOT / "docs" / "release-matrix.json"
#: The page that holds the cross-SDK summary and table (``make tables`` writes it).
PAGE = ROOT / "docs" / "drivers.md"
#: The markers around what ``--write`` (``make tables``) writes into :data:`PAGE`.
BEGIN = "<!-- written by `make tables`: edit cross_sdk.py, not this -->"
END = "<!-- end of what `make tables` writes -->"


@dataclass(frozen=True)
class CrossRow:
    """One Python fixture's row: ``fixture`` (file name), ``python`` (the
    google-adk releases the matrix found it known or failing on, oldest
    first; None when the matrix has no row for it), ``verdict`` (``holds``,
    ``known``, ``FAILS`` or ``n/a``) and ``detail`` (the known fault ids,
    the new violations or the reason it is not applicable)."""

    fixture: str
    python: tuple[str, ...] | None
    verdict: str
    detail: str = ""
    #: the fixture's kind (``script``, ``pipeline``, ``unit``, ...)
    kind: str = ""

    @property
    def adk_js(self) -> str:
        """The verdict as the table prints it."""
        return f"{self.verdict}: {self.detail}" if self.detail else self.verdict


def python_releases(name: str, matrix: dict[str, Any]) -> tuple[str, ...] | None:
    """The releases whose cell of fixture ``name`` in ``matrix`` (the
    document ``make matrix`` writes) is ``known fault`` or ``fails``, in the
    matrix's order; None when the matrix has no row for it."""
    row = matrix.get("rows", {}).get("fixtures", {}).get(name)
    if row is None:
        return None
    return tuple(
        r for r in matrix["releases"] if row.get(r, {}).get("state") in ("known fault", "fails")
    )


def cross_row(fixture: Fixture, matrix: dict[str, Any]) -> CrossRow:
    """Run ``fixture`` (a Python fixture) on ADK-JS and make its row. Raises
    :class:`~compaction_harness.sdk.js.adk_js.AdkJsUnavailable` without Node."""
    return replace(_row(fixture, matrix), kind=fixture.kind)


def _row(fixture: Fixture, matrix: dict[str, Any]) -> CrossRow:
    name = fixture.path.name if fixture.path else fixture.file_name()
    python = python_releases(name, matrix)
    if fixture.kind == "pipeline":
        return _recorded_row(name, python, fixture)
    if fixture.kind != "script":
        reason = (
            "a unit-level case: it calls adk-python's compaction helpers, which ADK-JS "
            "does not have"
        )
        return CrossRow(name, python, "n/a", f"{fixture.kind} fixture: {reason}")
    script = fixture.case
    label = ""
    try:
        if script.config.compaction_interval is not None:
            compactor = adk_js.stand_in_for(script)
            label = adk_js.stand_in_label(compactor)
        else:
            compactor = adk_js.compactor_for(script)
        outcome = adk_js.check_case(adk_js.JsCase(script, compactor))
    except adk_js.NotApplicable as exc:
        return CrossRow(name, python, "n/a", str(exc))
    return _verdict(name, python, outcome, label)


def _recorded_row(name: str, python: tuple[str, ...] | None, fixture: Fixture) -> CrossRow:
    """The row of a ``pipeline`` fixture (a recorded google-adk session):
    replayed on ADK-JS by :func:`compaction_harness.sdk.js.adk_js_recorded.check_recorded`
    with the compactor a script of the same configuration gets (the
    stand-in, labelled, for a sliding window), or n/a with the reason. A
    session whose confirmations were translated into ADK-JS's shape
    (``adk_js_recorded.translate_confirmations``) carries
    ``adk_js_recorded.TRANSLATED_LABEL`` after the stand-in's label."""
    from ..sdk.js import adk_js_recorded

    try:
        compactor, label = adk_js_recorded.compactor_of(fixture.case)
        translated = adk_js_recorded.translation_label(fixture.case)
        label = "; ".join(x for x in (label, translated) if x)
        outcome = adk_js_recorded.check_recorded(fixture.case, compactor)
    except adk_js.NotApplicable as exc:
        return CrossRow(name, python, "n/a", f"recorded session: {exc}")
    return _verdict(name, python, outcome, label)


def _verdict(name: str, python: tuple[str, ...] | None, outcome: Any, label: str) -> CrossRow:
    """The row for a triaged outcome (``adk_js.check_case``'s): FAILS with
    the new violations, known with the fault ids, else holds; ``label``
    (the stand-in's, or empty) is appended in parentheses."""
    suffix = f" ({label})" if label else ""
    if outcome.violations:
        shown = "; ".join(v.summary() for v in outcome.violations)[:300]
        return CrossRow(name, python, "FAILS", shown + suffix)
    faults = list(dict.fromkeys(f for _, f in outcome.known))
    if faults:
        return CrossRow(name, python, "known", ", ".join(faults) + suffix)
    return CrossRow(name, python, "holds", label and f"({label})")


def cross_table(corpus: Path = CORPUS, matrix_path: Path = MATRIX) -> list[CrossRow]:
    """A row for every Python fixture of ``corpus`` (ADK-JS fixtures are
    skipped), by file name. Raises ``FixtureError`` for a fixture that cannot
    be loaded, ``AdkJsUnavailable`` without Node."""
    matrix = json.loads(matrix_path.read_text(encoding="utf-8")) if matrix_path.exists() else {}
    rows = []
    for path in sorted(corpus.glob("*.json")):
        fixture = load_fixture(path)
        if not fixture.is_js:
            rows.append(cross_row(fixture, matrix))
    return rows


def markdown(rows: Sequence[CrossRow], version: str) -> str:
    """The table as Markdown: fixture, Python releases, ADK-JS ``version``."""
    lines = [
        f"| fixture | Python releases (known fault or fails) | ADK-JS {version} |",
        "| --- | --- | --- |",
    ]
    for row in rows:
        python = "not in the matrix" if row.python is None else ", ".join(row.python) or "-"
        shown = row.adk_js.replace("|", "\\|")
        lines.append(f"| `{row.fixture}` | {python} | {shown} |")
    return "\n".join(lines) + "\n"


def summary(rows: Sequence[CrossRow]) -> str:
    """The sentence above the cross-SDK table (in :data:`PAGE`): how many Python fixtures get a
    verdict (scripts and recorded sessions, how many of them on the stand-in
    or translated) and what the verdicts are."""
    judged = [r for r in rows if r.verdict != "n/a"]
    scripts = [r for r in judged if r.kind == "script"]
    recorded = [r for r in judged if r.kind == "pipeline"]

    def on_stand_in(some: list[CrossRow]) -> int:
        return sum("stand-in:" in r.detail for r in some)

    count = {v: sum(r.verdict == v for r in rows) for v in ("holds", "known", "FAILS", "n/a")}
    return (
        f"Of the {len(rows)} Python fixtures, {len(judged)} get a verdict: "
        f"{len(scripts)} scripts ({on_stand_in(scripts)} sliding-window on the stand-in) and "
        f"{len(recorded)} recorded sessions ({on_stand_in(recorded)} on the stand-in, "
        f"{sum('translated:' in r.detail for r in recorded)} translated); "
        f"{count['holds']} hold, {count['known']} show only known ADK-JS faults, "
        f"{count['FAILS'] or 'none'} FAILS. The other {count['n/a']} are n/a."
    )


def generated(rows: Sequence[CrossRow], version: str) -> str:
    """What ``--write`` puts between :data:`BEGIN` and :data:`END`: the
    summary sentence and the table."""
    return f"{summary(rows)}\n\n{markdown(rows, version)}"


def _parts(text: str, name: str) -> tuple[str, str, str]:
    """``text`` cut at the markers: (before and BEGIN, between, END and after)."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"{name} has no cross-SDK table between the markers {BEGIN} and {END}")
    start += len(BEGIN)
    return text[:start], text[start:end], text[end:]


def _shown(path: Path) -> str:
    """``path`` as a message names it: relative to the project
    (``docs/drivers.md``) when it lies inside it, else its file name."""
    try:
        return path.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return path.name


def stale(path: Path, rows: Sequence[CrossRow], version: str) -> str | None:
    """None when ``path`` holds what ``--write`` would write; else one line
    saying so, naming the file and the command (``ValueError`` without the
    markers)."""
    _, between, _ = _parts(path.read_text(encoding="utf-8"), _shown(path))
    if between == f"\n{generated(rows, version)}":
        return None
    return f"{_shown(path)}'s cross-SDK table is stale: run `make tables`"


def write(path: Path, rows: Sequence[CrossRow], version: str) -> bool:
    """Rewrite what lies between the markers in ``path``; whether it changed
    (``ValueError`` without the markers)."""
    text = path.read_text(encoding="utf-8")
    before, between, after = _parts(text, path.name)
    fresh = f"\n{generated(rows, version)}"
    if between == fresh:
        return False
    path.write_text(before + fresh + after, encoding="utf-8")
    return True


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m compaction_harness.surfaces.cross_sdk",
        description="Replay every Python script fixture on ADK for TypeScript and print the "
        "cross-SDK table (fixture, Python releases, ADK-JS verdict).",
    )
    parser.add_argument("corpus", nargs="?", default=str(CORPUS), help="fixture folder")
    shown = parser.add_mutually_exclusive_group()
    shown.add_argument("--markdown", action="store_true", help="print the table")
    shown.add_argument(
        "--write",
        metavar="FILE",
        help="rewrite the summary and the table between the markers in FILE "
        "(make tables: docs/drivers.md)",
    )
    args = parser.parse_args(argv)
    target = Path(args.write) if args.write else None
    try:
        if target is not None:
            _parts(target.read_text(encoding="utf-8"), str(target))  # refuse before running
        rows = cross_table(Path(args.corpus))
        version = adk_js.package_version()
    except (FixtureError, adk_js.AdkJsUnavailable, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    failing = sum(r.verdict == "FAILS" for r in rows)
    if target is not None:
        changed = write(target, rows, version)
        print(f"{target}: {'rewritten' if changed else 'unchanged'}: {summary(rows)}")
        if failing:
            print(f"{failing} Python fixtures FAIL on ADK-JS (a finding)", file=sys.stderr)
    elif args.markdown:
        print(markdown(rows, version), end="")
    else:
        for row in rows:
            print(f"{row.verdict:6} {row.fixture}  {row.detail}")
        counts = {v: sum(r.verdict == v for r in rows) for v in ("holds", "known", "FAILS", "n/a")}
        print(
            f"{len(rows)} Python fixtures on @google/adk {version}: "
            + ", ".join(f"{n} {v}" for v, n in counts.items())
        )
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
