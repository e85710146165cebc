"""How closely `make fuzz` keeps its FUZZ_SECONDS budget, quiet or under load.

    python bench/fuzz_budget.py [--load] [--seconds 10 30 60] [--workers N]

Runs ``make fuzz FUZZ_SECONDS=<s>`` once per budget (``-q``, a fresh example
database and repro folder in a temporary directory each time, so no run
replays another's failures and nothing is written to tests/repros/), and
prints each run's wall clock against its budget: the overshoot and the load
average over the run. With ``--load``, ``stress-ng`` (from the system
packages; ``make gate-under-load`` installs it) runs one CPU hog per core for
the whole measurement, as ``make gate-under-load`` does. The environment must
exist already (its creation is outside the budget). Exit status 0, or 2 when
stress-ng is missing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--load", action="store_true", help="one stress-ng CPU hog per core")
    parser.add_argument("--seconds", type=float, nargs="+", default=[10.0, 30.0, 60.0])
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args(argv)
    stress = None
    if args.load:
        if shutil.which("stress-ng") is None:
            print("error: stress-ng is not installed (`make gate-under-load` installs it)")
            return 2
        stress = subprocess.Popen(
            ["stress-ng", "--cpu", str(args.workers), "--timeout", "0", "--quiet"],
            start_new_session=True,
        )
        time.sleep(2)  # the hogs are running before the first campaign starts
    try:
        for budget in args.seconds:
            with tempfile.TemporaryDirectory(prefix="fuzz-budget-") as scratch:
                env = {**os.environ, "HARNESS_FUZZ_DB": str(Path(scratch) / "db")}
                env.pop("HARNESS_CAMPAIGN_STARTED", None)
                load_before = os.getloadavg()[0]
                started = time.monotonic()
                done = subprocess.run(
                    [
                        "make",
                        "fuzz",
                        f"FUZZ_SECONDS={budget:g}",
                        f"PYTEST_ARGS=-q --repro-dir={Path(scratch) / 'repros'}",
                    ],
                    cwd=ROOT,
                    env=env,
                    capture_output=True,
                    text=True,
                )
                took = time.monotonic() - started
                load_after = os.getloadavg()[0]
            print(
                f"FUZZ_SECONDS={budget:g}: wall clock {took:.1f} s (over by {took - budget:+.1f} s,"
                f" {100 * (took - budget) / budget:+.0f}%), status {done.returncode}, "
                f"load {load_before:.1f} -> {load_after:.1f}"
                + (" under stress-ng" if stress else ""),
                flush=True,
            )
    finally:
        if stress is not None:
            os.killpg(stress.pid, signal.SIGTERM)
            stress.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
