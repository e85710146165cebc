"""google-adk's triage: violations told known or new by re-running the case with fixes.

The rule is :mod:`compaction_harness.faults.classify`'s, whatever the SDK: a
violation is fault X when the same case, re-run with X's fix applied, no
longer shows it. This module applies it to google-adk: the candidates are
the registered fixes (:mod:`compaction_harness.sdk.python.fixes`) the installed
release can take, a re-run goes through its case kind's runner
(:mod:`compaction_harness.sdk.python.reruns`), and a violation no fix
removes may still be a fault without a fix, by its recogniser (pattern
evidence, :func:`compaction_harness.sdk.python.known_faults.pattern_fault`).

Classification comes after a run, never during one: a runner (the drivers,
the recorded-session replay, the unit cases) runs and records every
violation, and :func:`judge` classifies what its outcome recorded, re-running
the case as far as the run went. No runner imports this module; it imports
them only through :mod:`.reruns`, when a case is re-run.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from ...faults.classify import classify, file_unfixed
from ...spec.invariants import Violation
from ...spec.outcome import UnitOutcome
from .fixes import FIXES, active, applied, could_change, unavailable
from .known_faults import EVERY_RELEASE, pattern_fault
from .reruns import rerun

__all__ = ["by_fix", "judge", "run_with_fixes"]


def run_with_fixes(case: Any, names: Sequence[str]) -> list[Violation]:
    """Every violation ``case`` shows on the installed google-adk with the fixes
    ``names`` applied (none: the release as published), the run never stopped
    at a violation and nothing classified (:func:`~compaction_harness.sdk.python.reruns.rerun`:
    a script on the driver its configuration names). Raises ``NotApplicable``
    where the release cannot run the case or take a fix."""
    with applied(names):
        outcome = rerun(case)
    return list(outcome.violations)


def by_fix(
    case: Any, violations: Iterable[Violation]
) -> tuple[list[Violation], list[tuple[Violation, str]]]:
    """Split ``violations`` of a google-adk ``case`` into ``(new, [(violation,
    fault id)])`` by re-running the case with fixes (:func:`classify`); a
    violation removed by several fixes only together is paired with each of
    their faults. The candidates are every registered fix the installed
    release can take and that is not applied already (``FIXES=all``: none,
    so everything is new). With ``HARNESS_KNOWN_FAULTS=off`` nothing is
    classified (rediscovery campaigns). A violation no fix removes may still
    be a fault with no fix yet (or none the installed release can take), by
    its recogniser: *pattern evidence*, marked ``details["evidence"] =
    "pattern"`` (``"fix NAME"`` otherwise). Within
    :func:`~compaction_harness.faults.classify.known_or_new_only` the same
    violations are new, and the known ones are paired with
    :data:`~compaction_harness.faults.classify.UNNAMED`."""
    violations = list(violations)
    if not violations or os.environ.get("HARNESS_KNOWN_FAULTS") == "off":
        return violations, []
    candidates = [n for n in FIXES if n not in set(active()) and unavailable(n) is None]
    new: list[Violation] = []
    known: list[tuple[Violation, str]] = []
    for item in classify(
        violations,
        lambda names: run_with_fixes(case, names),
        candidates,
        lambda n: FIXES[n].faults,
        could_change=could_change(lambda: run_with_fixes(case, ()), candidates),
    ):
        if item.new:
            file_unfixed(item.violation, _pattern_fault(case, item.violation), new, known)
            continue
        item.violation.details["evidence"] = (
            "fix " + "+".join(item.fixes) if item.fixes else "every fix together"
        )
        known.extend((item.violation, f) for f in item.faults)
    return new, known


def _pattern_fault(case: Any, violation: Violation) -> str | None:
    """A fault without a fix the release can take whose recogniser matches
    (pattern evidence), or None."""
    found = pattern_fault(case, violation, EVERY_RELEASE)
    return found.id if found else None


def judge(case: Any, outcome: UnitOutcome) -> UnitOutcome:
    """What a run of ``case`` recorded (``outcome``: its runner's, nothing
    classified), classified by fix after the run (:func:`by_fix`, re-running
    the case as far as the run went: ``outcome.ran``, else ``case``).

    Returns a copy with ``triaged`` set, ``known`` holding (violation, fault
    id) for every known violation and ``violations`` the new ones a verdict
    reports: of a run grouped by operation (``outcome.batches``: the
    pipeline drivers), the new ones of the first operation that found any,
    as a campaign reports the first new violation; otherwise every new one.
    A replay of a recorded session that differs from its run
    (``observed["recorded_differs"]``) is returned unclassified.
    """
    found = list(outcome.violations)
    if "recorded_differs" in outcome.observed:
        # A recorded session whose replay is not its run is not judged
        # (NOREPRO, ``verdicts``): nothing of it is worth a re-run.
        return replace(outcome, triaged=True, batches=None)
    ran = case if outcome.ran is None else outcome.ran
    new, known = by_fix(ran, found) if found else ([], [])
    if outcome.batches is not None:  # the first operation with a new one
        fresh, start, first = {id(v) for v in new}, 0, []
        for size in outcome.batches:
            first = [v for v in found[start : start + size] if id(v) in fresh]
            start += size
            if first:
                break
        new = first
    return replace(outcome, violations=new, known=known, triaged=True, batches=None)
