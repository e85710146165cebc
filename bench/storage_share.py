"""Where the pipeline property's time goes, by storage kind (memory, database).

Draws the same derandomised scripts the gate draws (``strategies.scripts``,
the ``gate`` profile's seed), runs each as the gate does
(``surfaces.checks.check_case``) and prints, per storage kind, how many
scripts were drawn, the seconds they took, the mean per script and the share
of the total. ``strategies._scripts.DATABASE_ONE_IN`` is chosen from these
figures: no storage kind should take more than half of the pipeline's time.

Usage: ``python bench/storage_share.py [--examples N]`` from the project's
root, with the environment's interpreter (``PYTHONPATH=src``). A benchmark,
never a test: the figures depend on the machine.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=300, help="scripts to draw (default 300)")
    args = parser.parse_args(argv)

    from hypothesis import HealthCheck, Phase, given, settings

    from compaction_harness.sdk.python.adk import NotApplicable
    from compaction_harness.surfaces.checks import check_case
    from strategies import scripts

    seconds: dict[str, list[float]] = collections.defaultdict(list)

    @settings(
        max_examples=args.examples,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(script=scripts())
    def run(script) -> None:
        start = time.perf_counter()
        with contextlib.suppress(NotApplicable):
            check_case(script)
        seconds[script.config.storage].append(time.perf_counter() - start)

    run()
    total = sum(sum(v) for v in seconds.values()) or 1.0
    print(f"{'storage':10} {'scripts':>8} {'seconds':>8} {'mean s':>7} {'share':>6}")
    for kind, values in sorted(seconds.items()):
        share = sum(values) / total
        mean = sum(values) / len(values)
        print(f"{kind:10} {len(values):8d} {sum(values):8.1f} {mean:7.3f} {share:6.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
