"""The conformance suite for drivers, after Hypothesis's ``run_conformance_test`` for backends.

:func:`run_conformance_test` checks that a driver keeps the protocol of
:mod:`.protocol` on the cases it is given:

* **honest refusal**: a case the driver says it cannot run
  (:meth:`~.protocol.Driver.cannot_run`) raises :class:`~.protocol.CannotRun`
  with that reason, and a case it says it can run does not;
* **well-formed traces**: the trace names the driver, its SDK, its release
  and the fixes it ran with; every violation names an invariant of the
  registry (:data:`compaction_harness.spec.invariants.INVARIANTS`) and
  positions inside the stored session (P0 excepted: an exception has none);
* **determinism**: the same case with the same fixes gives the same trace
  (:meth:`~.protocol.Trace.key`) on a second run;
* **fixes toggle**: for each ``(case, fix)`` of ``toggles``, a violation
  the case shows without any fix is gone with the fix (same invariant,
  message and ids, as classification by fix compares them; the fix may
  uncover others): the fix is applied for the run it is asked for, and only
  for it (a run without fixes after it gives the first run's trace).

Each broken rule raises :class:`ConformanceError` naming the driver, the
rule and the case. This module imports :mod:`compaction_harness.spec` and
:mod:`.protocol` only.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..spec.invariants import INVARIANTS
from .protocol import CannotRun, Driver, Trace

__all__ = ["ConformanceError", "run_conformance_test"]


class ConformanceError(AssertionError):
    """A driver broke the protocol: the message names the driver, the rule and the case."""


def run_conformance_test(
    driver: Driver,
    cases: Iterable[tuple[str, Any]],
    toggles: Iterable[tuple[str, Any, str]] = (),
) -> int:
    """Check ``driver`` on ``cases`` (``(label, case)`` pairs) and
    ``toggles`` (``(label, case, fix name)``: a case that breaks an
    invariant without fixes, and a fix of the driver that removes it).
    Returns how many runs it made. Raises :class:`ConformanceError`."""
    runs = 0
    for label, case in cases:
        why = driver.cannot_run(case)
        if why is not None:
            _refuses(driver, label, case, why)
            continue
        first = _run(driver, label, case, ())
        _well_formed(driver, label, first, ())
        second = _run(driver, label, case, ())
        runs += 2
        if first.key() != second.key():
            raise ConformanceError(
                f"{driver.name}: {label}: two runs of one case differ (determinism)"
            )
    declared = set(driver.fixes())
    for label, case, fix in toggles:
        if fix not in declared:
            raise ConformanceError(f"{driver.name}: {label}: {fix} is not a fix it declares")
        without = _run(driver, label, case, ())
        fixed = _run(driver, label, case, (fix,))
        _well_formed(driver, label, fixed, (fix,))
        again = _run(driver, label, case, ())
        runs += 3
        if not without.violations:
            raise ConformanceError(f"{driver.name}: {label}: no violation without {fix}")
        if not _shown(without) - _shown(fixed):
            raise ConformanceError(
                f"{driver.name}: {label}: {fix} removes none of the violations found without "
                "it: the fix was not applied"
            )
        if again.key() != without.key():
            raise ConformanceError(
                f"{driver.name}: {label}: a run without fixes after one with {fix} differs "
                "from the first: the fix stayed applied"
            )
    return runs


def _refuses(driver: Driver, label: str, case: Any, why: str) -> None:
    if not why or "\n" in why:
        raise ConformanceError(f"{driver.name}: {label}: a refusal is one line, got {why!r}")
    try:
        driver.run(case)
    except CannotRun as exc:
        if str(exc) != why:
            raise ConformanceError(
                f"{driver.name}: {label}: cannot_run says {why!r}, run says {str(exc)!r}"
            ) from exc
        return
    raise ConformanceError(f"{driver.name}: {label}: cannot_run says {why!r}, but it ran")


def _run(driver: Driver, label: str, case: Any, fixes: tuple[str, ...]) -> Trace:
    try:
        trace = driver.run(case, fixes)
    except CannotRun as exc:
        raise ConformanceError(
            f"{driver.name}: {label}: refused a case cannot_run accepts: {exc}"
        ) from exc
    if not isinstance(trace, Trace):
        raise ConformanceError(f"{driver.name}: {label}: run returned {type(trace).__name__}")
    return trace


def _well_formed(driver: Driver, label: str, trace: Trace, fixes: tuple[str, ...]) -> None:
    said = (trace.driver, trace.sdk, trace.version, set(trace.fixes))
    if said != (driver.name, driver.sdk, driver.version(), set(fixes)):
        raise ConformanceError(f"{driver.name}: {label}: the trace says it is {said}")
    known = set(INVARIANTS)
    size = len(trace.stored)
    for v in trace.violations:
        if v.invariant not in known:
            raise ConformanceError(f"{driver.name}: {label}: unknown invariant {v.invariant!r}")
        if any(not 0 <= p < max(size, 1) for p in v.positions):
            raise ConformanceError(
                f"{driver.name}: {label}: {v.invariant} names positions {v.positions} of a "
                f"stored session of {size} events"
            )
    crashed = any(v.invariant == "P0" for v in trace.violations)
    if crashed != (trace.exception is not None):
        raise ConformanceError(
            f"{driver.name}: {label}: P0 and the trace's exception disagree "
            f"({crashed}, {trace.exception!r})"
        )


def _shown(trace: Trace) -> set[tuple[str, str, tuple[str, ...]]]:
    """The violations of ``trace`` as the classification by fix compares
    them: invariant, message and ids."""
    return {(v.invariant, v.message, tuple(v.ids)) for v in trace.violations}
