"""bench/fault_times.py's arithmetic and its errors (the benchmark itself is
`make bench-faults`, never a test: its times depend on the machine)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SPEC = importlib.util.spec_from_file_location("fault_times", ROOT / "bench" / "fault_times.py")
fault_times = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(fault_times)


def _found(trial: int, first: float, shrink: float, events: int) -> dict:
    return {
        "trial": trial,
        "found": True,
        "first_failure": first,
        "shrink": shrink,
        "events": events,
        "operations": events + 1,
        "item": "test_x[shard0]",
    }


def test_a_faults_line_counts_its_trials_and_takes_medians_of_the_found_ones() -> None:
    trials = [_found(0, 10.0, 4.0, 3), _found(1, 30.0, 8.0, 5), {"trial": 2, "found": False}]
    row = fault_times.summary("f", "2.13.0", trials)
    assert (row["found"], row["trials"]) == (2, 3)
    assert row["median_seconds_to_find"] == 20.0
    assert row["worst_seconds_to_find"] is None  # a trial missed: longer than any found
    assert fault_times.table({"faults": [row], "settings": {"seconds": 120}}).count("> 120") == 1
    every = fault_times.summary("f", "2.13.0", trials[:2])
    assert every["worst_seconds_to_find"] == 30.0
    assert row["median_seconds_to_shrink"] == 6.0 and row["median_events"] == 4.0
    assert row["found_by"] == ["test_x[shard0]"]


def test_the_table_puts_faults_found_every_time_first_then_by_median() -> None:
    rows = [
        fault_times.summary("slow", "1", [_found(0, 50.0, 1.0, 2)]),
        fault_times.summary("missed", "1", [{"trial": 0, "found": False}]),
        fault_times.summary("fast", "1", [_found(0, 5.0, 1.0, 2)]),
    ]
    text = fault_times.table({"faults": rows})
    order = [line.split("`")[1] for line in text.splitlines()[2:]]
    assert order == ["fast", "slow", "missed"]
    assert "| 0 of 1 | - | - |" in text


def test_an_unknown_fault_is_one_line_and_exit_2() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "fault_times.py"), "--faults", "no-such-fault"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "no-such-fault" in done.stderr
