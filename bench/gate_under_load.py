"""Run the gate several times under full CPU load and compare the outcomes.

    python bench/gate_under_load.py [--runs 5] [--workers N]

Starts ``stress-ng`` (from the system packages; ``make gate-under-load``
installs it) with one CPU hog per core, runs ``make test`` ``--runs`` times
while the load lasts, stops ``stress-ng``, and compares the outcome of every
test item across the runs (read from pytest's JUnit XML). The gate must give
identical outcomes every time: timing belongs to ``make bench``, never to the
gate. Exit status 0 when every run passed with identical outcomes, 1 otherwise.
Each run's wall clock is printed, which shows what the load cost.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "build" / "gate-under-load"


def outcomes(junit: Path) -> dict[str, str]:
    """test id -> passed / failed / skipped / xfailed, from a JUnit XML report."""
    result = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = f"{case.get('classname')}::{case.get('name')}"
        kinds = [child.tag for child in case]
        if "failure" in kinds or "error" in kinds:
            result[name] = "failed"
        elif "skipped" in kinds:
            skipped = case.find("skipped")
            xfail = skipped is not None and skipped.get("type") == "pytest.xfail"
            result[name] = "xfailed" if xfail else "skipped"
        else:
            result[name] = "passed"
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args(argv)
    if shutil.which("stress-ng") is None:
        print("error: stress-ng is not installed (`make gate-under-load` installs it)")
        return 2
    OUT.mkdir(parents=True, exist_ok=True)
    stress = subprocess.Popen(
        ["stress-ng", "--cpu", str(args.workers), "--timeout", "0", "--quiet"],
        start_new_session=True,
    )
    runs: list[dict[str, str]] = []
    statuses = []
    try:
        for k in range(1, args.runs + 1):
            junit = OUT / f"run-{k}.xml"
            started = time.monotonic()
            done = subprocess.run(
                ["make", "test", f"PYTEST_ARGS=--junitxml={junit} -q"],
                cwd=ROOT,
                capture_output=True,
                text=True,
            )
            took = time.monotonic() - started
            statuses.append(done.returncode)
            tail = done.stdout.strip().splitlines()[-1:] or ["(no output)"]
            print(f"run {k}: status {done.returncode} in {took:.0f} s under load: {tail[0]}")
            runs.append(outcomes(junit) if junit.exists() else {})
    finally:
        os.killpg(stress.pid, signal.SIGTERM)
        stress.wait(timeout=30)
    names = sorted(set().union(*runs))
    differing = [n for n in names if len({r.get(n, "missing") for r in runs}) > 1]
    for name in differing:
        print(f"differs: {name}: " + ", ".join(r.get(name, "missing") for r in runs))
    print(
        f"{len(names)} test items, {len(differing)} with differing outcomes across "
        f"{len(runs)} runs; statuses {statuses}"
    )
    return 0 if not differing and all(s == 0 for s in statuses) else 1


if __name__ == "__main__":
    sys.exit(main())
