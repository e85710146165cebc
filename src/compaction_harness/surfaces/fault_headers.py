"""The releases and the fix of each known fault, as docs/known-faults.md states them: written.

``python -m compaction_harness.surfaces.fault_headers --write docs/known-faults.md``
(run by ``make tables``) rewrites the parenthesis that follows each known
fault's name in the numbered list of known upstream faults (:data:`PAGE`),
``N. **`<fault id>`** (<invariants>; <releases>; <fix>)``, from the fault
catalogue (:data:`compaction_harness.faults.catalogue.FAULTS`): the fault's
invariants, its releases (derived from the release matrix record), written
as runs over the matrix's releases (``docs/release-matrix.json``, oldest
first): ``1.26.0 to 2.13.0``, ``2.12.0, 2.13.0``, or ``all 43 releases``,
and its fix (``fix <name>``, ``no fix: <why>`` or ``no fix yet``).
``--check docs/known-faults.md`` writes nothing and says in one line when
the page differs from what ``--write`` would write.

Exit status: 0 written or current, 1 stale (``--check``), 2 bad input (a
missing file, no release matrix), each a one-line error.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..faults.catalogue import FAULTS, PYTHON, Fault, fix_text, release_order, release_runs

ROOT = Path(__file__).resolve().parents[3]
MATRIX = ROOT / "docs" / "release-matrix.json"
#: The page that holds the numbered list of known upstream faults.
PAGE = ROOT / "docs" / "known-faults.md"

#: ``N. **`fault-id`**`` then the parenthesis (it may wrap over lines, and
#: hold parentheses one deep: a no-fix reason may).
_HEADER = re.compile(
    r"^(?P<lead>\d+\. \*\*`(?P<id>[a-z0-9-]+)`\*\*\s*)"
    r"\((?P<inside>(?:[^()]|\([^()]*\))*)\)",
    re.M,
)


def spans(releases: Sequence[str], order: Sequence[str]) -> str:
    """``releases`` as runs of consecutive entries of ``order`` (the matrix's
    releases, oldest first): ``"A to B"`` for a run of three or more,
    ``"A, B"`` for two, ``"A"`` for one, runs joined by ``", "``; ``"all N
    releases"`` when ``releases`` is every one of ``order``. Releases that
    ``order`` does not hold are written after the runs, as given.

    >>> spans(["1.2", "1.3", "1.4", "2.0"], ["1.1", "1.2", "1.3", "1.4", "1.9", "2.0"])
    '1.2 to 1.4, 2.0'
    """
    runs, others = release_runs(releases, order)
    if order and sum(len(run) for run in runs) == len(order):
        return f"all {len(order)} releases"
    words = [f"{run[0]} to {run[-1]}" if len(run) > 2 else ", ".join(run) for run in runs]
    return ", ".join([*words, *others])


def fix_words(fault: Fault) -> str:
    """The header's last part: ``fix <name>``, ``no fix: <why>`` where none
    can exist, ``no fix yet`` otherwise (:func:`~compaction_harness.faults.catalogue.fix_text`)."""
    return f"fix {fault.fix}" if fault.fix else fix_text(fault)


def header(fault_id: str, order: Sequence[str]) -> str | None:
    """What the parenthesis after fault ``fault_id``'s name holds
    (``"P2; 1.26.0 to 2.13.0; no fix yet"``; an ADK-JS fault's releases run
    over its own versions, not ``order``); None for an id that is no known
    fault."""
    for fault in FAULTS:
        if fault.id == fault_id:
            over = order if fault.sdk == PYTHON else release_order(fault.sdk)
            return (
                f"{', '.join(fault.invariants)}; {spans(fault.releases, over)}; {fix_words(fault)}"
            )
    return None


def rewritten(text: str, order: Sequence[str]) -> str:
    """``text`` with every known fault's parenthesis as :func:`header` writes it
    (a current one, other numbered entries and the rest of the text as they are)."""

    def one(match: re.Match[str]) -> str:
        said = header(match["id"], order)
        if said is None or " ".join(match["inside"].split()) == said:
            return match[0]  # as it is, wrapped as it was
        return f"{match['lead']}({said})"

    return _HEADER.sub(one, text)


def stale_headers(text: str, order: Sequence[str]) -> list[str]:
    """The ids of the known faults whose parenthesis in ``text`` differs from
    :func:`header` (whitespace aside: a parenthesis may wrap over lines)."""
    out = []
    for match in _HEADER.finditer(text):
        said = header(match["id"], order)
        if said is not None and " ".join(match["inside"].split()) != said:
            out.append(match["id"])
    return out


def matrix_order(path: Path = MATRIX) -> list[str]:
    """The releases of the committed release matrix, oldest first (a column of
    a release with every fix applied is no release). Raises :class:`OSError`
    or :class:`ValueError` for a missing or unreadable one."""
    from ..faults.matrix_record import FIXED

    document: Mapping[str, object] = json.loads(path.read_text(encoding="utf-8"))
    releases = document.get("releases")
    if not isinstance(releases, list) or not all(isinstance(r, str) for r in releases):
        raise ValueError(f"{path}: no list of releases")
    return [r for r in releases if not r.endswith(FIXED)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m compaction_harness.surfaces.fault_headers",
        description=(
            "Write each known fault's invariants, releases and fix into the parenthesis after "
            "its name in docs/known-faults.md's list of known upstream faults, from the fault "
            "catalogue (faults/catalogue.py) and the release matrix's order (make tables runs "
            "--write docs/known-faults.md)."
        ),
    )
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", metavar="FILE", type=Path, help="rewrite FILE in place")
    mode.add_argument("--check", metavar="FILE", type=Path, help="exit 1 when FILE is stale")
    args = parser.parse_args(argv)
    path: Path = args.write or args.check
    try:
        order = matrix_order()
    except (OSError, ValueError) as error:
        print(f"error: release matrix {MATRIX.name}: {error}", file=sys.stderr)
        return 2
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        print(
            f"error: {path}: cannot read: {getattr(error, 'strerror', None) or error}",
            file=sys.stderr,
        )
        return 2
    if args.check:
        stale = stale_headers(text, order)
        if stale:
            print(
                f"{path}'s known-fault releases are stale ({', '.join(stale)}): run `make tables`",
                file=sys.stderr,
            )
            return 1
        return 0
    new = rewritten(text, order)
    if new != text:
        path.write_text(new, encoding="utf-8")
    print(f"{path}: known-fault releases {'rewritten' if new != text else 'unchanged'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
