"""Per-function branch coverage of ADK's compaction code (``make coverage``).

Reads the JSON report of coverage.py (7.5 or later, which records functions)
and prints, for every function of the measured ADK modules, the branches the
suite reached. Exit status 1 when a ``--require``d function (and every
function nested in it) is not at 100% branch coverage, or was not found; 2
for an unreadable report.

    python -m compaction_harness.surfaces.coverage_report build/coverage.json \\
        --require _longest_self_contained_prefix --require _provably_dead_call_ids
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def _short(path: str) -> str:
    marker = "google/adk/"
    return "google/adk/" + path.split(marker, 1)[1] if marker in path else path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m compaction_harness.surfaces.coverage_report",
        description="Print per-function branch coverage and enforce 100%% on required functions.",
    )
    parser.add_argument("report", help="coverage.py's JSON report (coverage json -o FILE)")
    parser.add_argument(
        "--require",
        action="append",
        default=[],
        metavar="FUNCTION",
        help="a function that must reach 100%% branch coverage (nested functions included)",
    )
    args = parser.parse_args(argv)
    try:
        files = json.loads(Path(args.report).read_text())["files"]
    except (OSError, ValueError, KeyError) as exc:
        print(f"error: {args.report}: not a coverage.py JSON report ({exc})", file=sys.stderr)
        return 2
    found: dict[str, list[tuple[int, int, list]]] = {name: [] for name in args.require}
    for path, data in sorted(files.items()):
        functions = data.get("functions")
        if functions is None:
            print(f"error: {args.report}: no per-function data (coverage.py 7.5+)", file=sys.stderr)
            return 2
        print(f"\n{_short(path)}")
        print(f"  {'function':58} {'branches':>10} {'lines':>6}")
        for name, info in functions.items():
            if not name:
                continue  # module-level code
            summary = info["summary"]
            covered, total = summary["covered_branches"], summary["num_branches"]
            share = f"{covered}/{total}" if total else "-"
            print(f"  {name:58} {share:>10} {summary['percent_covered_display']:>5}%")
            for required in args.require:
                if name == required or name.startswith(required + "."):
                    found[required].append((covered, total, info["missing_branches"]))
    failed = False
    print()
    for required, rows in found.items():
        if not rows:
            print(f"FAIL {required}: not found in the measured modules")
            failed = True
            continue
        covered = sum(r[0] for r in rows)
        total = sum(r[1] for r in rows)
        missing = [b for r in rows for b in r[2]]
        if missing:
            arcs = ", ".join(f"{a}->{b}" for a, b in missing)
            print(f"FAIL {required}: {covered}/{total} branches; not reached: {arcs}")
            failed = True
        else:
            print(f"ok   {required}: {covered}/{total} branches (100%)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
