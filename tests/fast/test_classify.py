"""Classification by fix (``faults/classify.py``) with a stand-in runner:
which re-runs it makes, and that a fix which cannot change a run is never
re-run alone, with the same verdict."""

from __future__ import annotations

from compaction_harness.faults.classify import UNNAMED, classify, naming_budget
from compaction_harness.spec.invariants import Violation

V = Violation("P4", "an event is lost", ids=("c1",))
FAULTS = {"a": ("fault-a",), "b": ("fault-b",), "c": ("fault-c",)}


def _runner(removing: set[str]):
    """A case whose violation V goes when any fix of ``removing`` is
    applied; the fixes asked for, in the order asked."""
    asked: list[tuple[str, ...]] = []

    def rerun(names):
        asked.append(tuple(names))
        return [] if set(names) & removing else [V]

    return rerun, asked


def test_every_single_fix_is_tried_without_a_word_on_which_could_change_the_run() -> None:
    rerun, asked = _runner({"b"})
    (item,) = classify([V], rerun, ["a", "b", "c"], FAULTS.__getitem__)
    assert item.faults == ("fault-b",) and item.fixes == ("b",)
    assert asked == [("a", "b", "c"), ("a",), ("b",), ("c",)]


def test_a_fix_that_cannot_change_the_run_is_not_rerun_and_the_verdict_stays() -> None:
    rerun, asked = _runner({"b"})
    could = {"a": False, "b": True, "c": False}
    (item,) = classify([V], rerun, ["a", "b", "c"], FAULTS.__getitem__, could_change=could.get)
    assert item.faults == ("fault-b",) and item.fixes == ("b",)
    assert asked == [("a", "b", "c"), ("b",)]


def test_a_new_violation_asks_nothing_of_single_fixes() -> None:
    rerun, asked = _runner(set())

    def never(name: str) -> bool:
        raise AssertionError("asked about a single fix")

    (item,) = classify([V], rerun, ["a", "b"], FAULTS.__getitem__, could_change=never)
    assert item.new and asked == [("a", "b")]


def test_a_search_for_one_fault_fails_on_it_alone(monkeypatch) -> None:
    # HARNESS_SOUGHT_FAULT (bench/fault_times.py): the sought fault's
    # violations are what the property raises on; every other one, known or
    # new, is left with the known ones and the example goes on.
    from compaction_harness.spec.outcome import UnitOutcome
    from compaction_harness.surfaces.checks import NOT_SOUGHT, SOUGHT, sought_only

    sought, other, new = V, Violation("P2", "x", ids=("c2",)), Violation("P0", "boom")
    judged = UnitOutcome([new], {}, {}, known=[(sought, "fault-a"), (other, "fault-b")])
    monkeypatch.delenv(SOUGHT, raising=False)
    assert sought_only(judged) is judged
    monkeypatch.setenv(SOUGHT, "fault-a")
    seen = sought_only(judged)
    assert seen.violations == [sought]
    assert seen.known == [(other, "fault-b"), (new, NOT_SOUGHT)]
    monkeypatch.setenv(SOUGHT, "fault-c")  # not met: nothing fails
    assert sought_only(judged).violations == []


def test_past_its_naming_budget_a_campaign_asks_only_known_or_new() -> None:
    # Naming re-runs once per fix; past its share of the time, classify asks
    # one question (every fix together) and names no fault.
    rerun, asked = _runner({"b"})
    with naming_budget(0.0) as budget:
        budget.seconds = 1.0  # naming has taken its share, and more
        (item,) = classify([V], rerun, ["a", "b", "c"], FAULTS.__getitem__)
        assert item.faults == (UNNAMED,) and not item.new and asked == [("a", "b", "c")]
        asked.clear()
        (new,) = classify([V], _runner(set())[0], ["a"], FAULTS.__getitem__)
        assert new.new  # a new violation is new still
    with naming_budget(1.0) as budget:  # within its share: named, and its time counted
        (item,) = classify([V], rerun, ["a", "b", "c"], FAULTS.__getitem__)
        assert item.faults == ("fault-b",) and budget.seconds > 0
