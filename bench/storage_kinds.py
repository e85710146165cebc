"""Seconds a script on each session service, through each google-adk driver.

Draws ``--examples`` derandomised scripts that both drivers run
(``strategies.differential_scripts``, a fixed seed), then runs every one of
them on each storage kind (``memory``, ``database``, ``sqlite``,
``postgresql``, ``mariadb``) through the emulating driver and ADK's
``Runner``, as the gate judges them (``surfaces.checks.check_case``; set
``HARNESS_KNOWN_FAULTS=off`` to leave classification by fix out of the
figures), and prints the mean seconds a script. PostgreSQL and MariaDB are
servers of the benchmark's own (``compaction_harness.store.servers``),
stopped at the end; a kind whose server is not installed is skipped, said
in one line.

Usage: ``python bench/storage_kinds.py [--examples N]`` from the project's
root, with the environment's interpreter. A benchmark, never a test: the
figures depend on the machine and what else runs on it.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import time
import warnings
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

KINDS = ("memory", "database", "sqlite", "postgresql", "mariadb")
DRIVERS = ("emulated", "runner")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=12, help="scripts to draw (default 12)")
    args = parser.parse_args(argv)
    # ADK logs every call and response its prompt builder drops: not the figures.
    logging.getLogger("google_adk").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore")

    from hypothesis import HealthCheck, given, settings

    from compaction_harness.sdk.python.adk import NotApplicable
    from compaction_harness.sdk.python.unit import InvariantViolation
    from compaction_harness.spec.scripts import SERVER_URL_VARIABLES, Script
    from compaction_harness.store import servers
    from compaction_harness.surfaces.checks import check_case
    from strategies import differential_scripts

    drawn: list[Script] = []

    @settings(
        max_examples=args.examples,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(differential_scripts())
    def collect(script: Script) -> None:
        drawn.append(script)

    collect()
    started = []
    kinds = []
    for kind in KINDS:
        if kind in SERVER_URL_VARIABLES and not os.environ.get(SERVER_URL_VARIABLES[kind]):
            try:
                server = servers.start(kind)
            except servers.ServerError as exc:
                print(f"{kind}: skipped: {exc}", file=sys.stderr)
                continue
            started.append(server)
            os.environ[SERVER_URL_VARIABLES[kind]] = server.url
        kinds.append(kind)
    try:
        print(f"{'storage':12} {'driver':9} {'scripts':>7} {'s/script':>9}")
        for kind in kinds:
            for driver in DRIVERS:
                begun, ran = time.perf_counter(), 0
                for script in drawn:
                    config = replace(script.config, storage=kind, driver=driver)
                    # A script a kind cannot run, or one that fails, still took its time.
                    with contextlib.suppress(NotApplicable, InvariantViolation):
                        check_case(Script(config, script.operations))
                    ran += 1
                took = (time.perf_counter() - begun) / max(ran, 1)
                print(f"{kind:12} {driver:9} {ran:7} {took:9.3f}", flush=True)
    finally:
        for server in started:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
