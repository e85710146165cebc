"""Benchmarks of the harness (a script, not a test): run through `make bench`.

    python bench/bench.py throughput [--examples N] [--repeat R]
    python bench/bench.py time-to-failure [--seeds N]
    python bench/bench.py steps [--examples N]
    python bench/bench.py pipeline-time-to-failure [--seeds N] [--invariants P3]

``throughput`` measures examples per second of the unit property on one core
(a single process), for sessions of at most 30 events, with Hypothesis
generating and checking as in a campaign (no example database, no shrinking
needed because nothing fails on a healthy release). It also reports the
generation-only rate, so the cost of the checks is visible.

``time-to-failure`` runs the unit property against the installed release
(``make bench`` runs it on google-adk 2.11.0, whose stall the harness must
rediscover) under N different seeds and reports, per seed, the seconds to the
first failing example, the seconds including shrinking, and the size of the
shrunk example; then the medians.

``steps`` measures rule executions per second of the pipeline state machine.
``pipeline-time-to-failure`` runs the state machine through pytest once per
seed (``--hypothesis-seed``) and reports the seconds to the first failing run,
the seconds including shrinking, and the size of the fixture written; on
google-adk 2.11.0 it measures how the stateful search finds the stall of
releases before 2.12.0 (``--invariants P3``: through liveness alone).

Results are printed as a table and written as JSON to ``bench/results/``.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the top-level `strategies` package

from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402

from compaction_harness.adk import ADK_RELEASE  # noqa: E402
from compaction_harness.checks import check_unit_case  # noqa: E402
from compaction_harness.unit import InvariantViolation  # noqa: E402
from strategies import unit_cases  # noqa: E402

MAX_EVENTS = 30


def _settings(examples: int, *, shrink: bool = False) -> settings:
    phases = [Phase.generate, Phase.shrink] if shrink else [Phase.generate]
    return settings(
        max_examples=examples,
        database=None,
        deadline=None,
        derandomize=False,
        phases=phases,
        report_multiple_bugs=False,
        suppress_health_check=list(HealthCheck),
    )


def _rate(body, examples: int, repeat: int) -> dict[str, float]:
    rates = []
    for _ in range(repeat):
        count = 0

        @_settings(examples)
        @given(case=unit_cases(max_events=MAX_EVENTS))
        def run(case):
            nonlocal count
            count += 1
            body(case)

        started = time.perf_counter()
        run()
        rates.append(count / (time.perf_counter() - started))
    return {"median": statistics.median(rates), "min": min(rates), "max": max(rates)}


def throughput(args: argparse.Namespace) -> dict:
    results = {
        "unit property U1-U4 (generate + real ADK + checks)": _rate(
            check_unit_case, args.examples, args.repeat
        ),
        "generation only": _rate(lambda case: None, args.examples, args.repeat),
    }
    print(f"examples per second on one core, google-adk {ADK_RELEASE}, sessions <= {MAX_EVENTS}")
    print(f"({args.examples} examples per run, median of {args.repeat} runs)")
    for name, r in results.items():
        print(f"  {r['median']:8.1f} /s  (min {r['min']:.1f}, max {r['max']:.1f})  {name}")
    return {
        "kind": "throughput",
        "examples": args.examples,
        "repeat": args.repeat,
        "results": results,
    }


def _one_seed(s: int) -> dict:
    """Run the property under seed ``s`` until it fails (or 100000 examples)."""
    first: float | None = None
    started = time.perf_counter()

    @seed(s)
    @_settings(100_000, shrink=True)
    @given(case=unit_cases(max_events=MAX_EVENTS))
    def run(case):
        nonlocal first
        try:
            check_unit_case(case)
        except InvariantViolation:
            if first is None:
                first = time.perf_counter() - started
            raise

    try:
        run()
    except InvariantViolation as exc:
        return {
            "seed": s,
            "found": True,
            "invariant": exc.outcome.violations[0].invariant,
            "seconds_to_first_failure": first,
            "seconds_with_shrinking": time.perf_counter() - started,
            "shrunk_events": len(exc.case.session),
        }
    return {"seed": s, "found": False}


def time_to_failure(args: argparse.Namespace) -> dict:
    rows = []
    for s in range(args.seeds):
        row = _one_seed(s)
        rows.append(row)
        if row["found"]:
            print(
                f"  seed {s}: {row['invariant']} first failing example after "
                f"{row['seconds_to_first_failure']:.2f} s, shrunk after "
                f"{row['seconds_with_shrinking']:.2f} s to {row['shrunk_events']} events"
            )
        else:
            print(f"  seed {s}: no failure in 100000 examples")
    found = [r for r in rows if r["found"]]
    summary = {}
    if found:
        summary = {
            "median_seconds_to_first_failure": statistics.median(
                r["seconds_to_first_failure"] for r in found
            ),
            "median_seconds_with_shrinking": statistics.median(
                r["seconds_with_shrinking"] for r in found
            ),
            "median_shrunk_events": statistics.median(r["shrunk_events"] for r in found),
        }
    print(
        f"google-adk {ADK_RELEASE}: found in {len(found)} of {len(rows)} seeds; "
        + ", ".join(f"{k} {v:.2f}" for k, v in summary.items())
    )
    return {"kind": "time-to-failure", "seeds": rows, "summary": summary}


def steps(args: argparse.Namespace) -> dict:
    """Rule executions per second of the pipeline state machine (one core)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from hypothesis.stateful import run_state_machine_as_test
    from test_pipeline import CompactionMachine

    from compaction_harness import pipeline

    counted = {"append": 0, "end_invocation": 0}
    originals = {name: getattr(pipeline.PipelineRun, name) for name in counted}

    def counting(name):
        def wrapper(self, *a, **kw):
            counted[name] += 1
            return originals[name](self, *a, **kw)

        return wrapper

    for name in counted:
        setattr(pipeline.PipelineRun, name, counting(name))
    started = time.perf_counter()
    try:
        run_state_machine_as_test(CompactionMachine, settings=_settings(args.examples))
    finally:
        for name, fn in originals.items():
            setattr(pipeline.PipelineRun, name, fn)
    seconds = time.perf_counter() - started
    total = sum(counted.values())
    print(
        f"pipeline state machine, google-adk {ADK_RELEASE}: {total} steps "
        f"({counted['end_invocation']} with compaction) in {seconds:.1f} s = "
        f"{total / seconds:.1f} steps per second"
    )
    return {"kind": "steps", "steps": total, "seconds": seconds, "per_second": total / seconds}


def pipeline_time_to_failure(args: argparse.Namespace) -> dict:
    """The pipeline state machine as a user runs it: pytest with the ``dev``
    profile and ``--hypothesis-seed``, once per seed (in this process, so the
    first failing run can be timed); the seconds to the first failing run, the
    seconds including shrinking, and the size of the fixture written.
    ``--invariants P3`` fails runs on P3 only (HARNESS_PIPELINE_INVARIANTS)."""
    import tempfile

    import pytest

    sys.path.insert(0, str(ROOT / "tests"))
    import test_pipeline

    from compaction_harness.fixtures import load_fixture

    machine = test_pipeline.CompactionMachine
    machine.only = frozenset(args.invariants.split(",")) if args.invariants else None
    first: list[float] = []
    original = machine._raise_new

    def timed(self, violations):
        try:
            return original(self, violations)
        except InvariantViolation:
            first.append(time.perf_counter())
            raise

    machine._raise_new = timed
    rows = []
    try:
        for s in range(args.seeds):
            first.clear()
            with tempfile.TemporaryDirectory() as repros:
                started = time.perf_counter()
                pytest.main(
                    [
                        *("-p", "no:cacheprovider", "-p", "no:xdist", "-q", "--no-header"),
                        *("--hypothesis-profile=dev", f"--hypothesis-seed={s}"),
                        f"--repro-dir={repros}",
                        str(ROOT / "tests" / "test_pipeline.py"),
                    ]
                )
                seconds = time.perf_counter() - started
                written = sorted(Path(repros).glob("*.json"))
                if not written:
                    rows.append({"seed": s, "found": False, "seconds": seconds})
                    continue
                fixture = load_fixture(written[0])
            case = fixture.case
            rows.append(
                {
                    "seed": s,
                    "found": True,
                    "invariant": fixture.invariant,
                    "seconds_to_first_failure": first[0] - started,
                    "seconds_with_shrinking": seconds,
                    "shrunk_events": len(case.session),
                    "shrunk_invocations": len({step.invocation for step in case.session}),
                }
            )
    finally:
        machine._raise_new = original
    for row in rows:
        if row["found"]:
            print(
                f"  seed {row['seed']}: {row['invariant']} first failing run after "
                f"{row['seconds_to_first_failure']:.1f} s, shrunk after "
                f"{row['seconds_with_shrinking']:.1f} s to {row['shrunk_events']} events in "
                f"{row['shrunk_invocations']} invocations"
            )
        else:
            print(f"  seed {row['seed']}: no failure ({row['seconds']:.0f} s)")
    found = [r for r in rows if r["found"]]
    keys = (
        "seconds_to_first_failure",
        "seconds_with_shrinking",
        "shrunk_events",
        "shrunk_invocations",
    )
    summary = {k: statistics.median(r[k] for r in found) for k in keys} if found else {}
    only = f" (failing on {args.invariants} only)" if args.invariants else ""
    print(
        f"pipeline, google-adk {ADK_RELEASE}{only}: found in {len(found)} of {len(rows)} "
        "seeds; " + ", ".join(f"median {k} {v:.1f}" for k, v in summary.items())
    )
    return {
        "kind": "pipeline-time-to-failure",
        "invariants": args.invariants or "all",
        "seeds": rows,
        "summary": summary,
    }


def main() -> int:
    import logging

    # ADK logs each call or response its prompt builder drops; pytest captures
    # that in the test suite, here it would flood the report.
    logging.getLogger("google_adk").setLevel(logging.ERROR)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("throughput", help="examples per second of the unit property")
    t.add_argument("--examples", type=int, default=2000)
    t.add_argument("--repeat", type=int, default=3)
    f = sub.add_parser("time-to-failure", help="seconds to the first failure, per seed")
    f.add_argument("--seeds", type=int, default=5)
    m = sub.add_parser("steps", help="pipeline state-machine steps per second")
    m.add_argument("--examples", type=int, default=50)
    p = sub.add_parser(
        "pipeline-time-to-failure",
        help="seconds for the pipeline state machine to find and shrink a failure, per seed",
    )
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--invariants", default="", help="fail runs on these only, e.g. P3")
    args = parser.parse_args()
    commands = {
        "throughput": throughput,
        "time-to-failure": time_to_failure,
        "steps": steps,
        "pipeline-time-to-failure": pipeline_time_to_failure,
    }
    result = commands[args.command](args)
    result.update(adk_release=ADK_RELEASE, python=platform.python_version(), unix_time=time.time())
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    only = getattr(args, "invariants", "")
    path = (
        out / f"{args.command}{'-' + only.replace(',', '-') if only else ''}-adk-{ADK_RELEASE}.json"
    )
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(f"written: {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
