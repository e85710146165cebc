"""google-adk's triage: violations told known or new by re-running the case with fixes.

The rule is :mod:`compaction_harness.faults.classify`'s, whatever the SDK: a
violation is fault X when the same case, re-run with X's fix applied, no
longer shows it. This module applies it to google-adk: the candidates are
the registered fixes (:mod:`compaction_harness.sdk.python.fixes`) the installed
release can take, a re-run goes through the runner its case's kind
registered (:mod:`compaction_harness.sdk.python.reruns`), and a violation no fix
removes may still be a fault without a fix, by its recogniser (pattern
evidence, :func:`compaction_harness.sdk.python.known_faults.pattern_fault`).

The drivers triage their runs as they go with :func:`by_fix`
(:class:`compaction_harness.sdk.python.pipeline.Triage`); this module imports none of
them, and re-runs through the registry they fill.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any

from ...faults.classify import (
    UNNAMED,
    classify,
    file_unfixed,
    same_failure,
    telling_known_from_new_only,
)
from ...spec.invariants import Violation
from .fixes import FIXES, active, applied, unavailable
from .known_faults import EVERY_RELEASE, pattern_fault
from .reruns import rerun

__all__ = ["by_fix", "run_with_fixes"]


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
    applied_now = set(active())
    candidates = [n for n in FIXES if n not in applied_now and unavailable(n) is None]
    new: list[Violation] = []
    known: list[tuple[Violation, str]] = []
    if telling_known_from_new_only():
        # classify()'s first question alone: does every fix together remove it?
        left = run_with_fixes(case, sorted(candidates)) if candidates else []
        for v in violations:
            if candidates and not any(same_failure(v, w) for w in left):
                v.details["evidence"] = "every fix together"
                known.append((v, UNNAMED))
                continue
            file_unfixed(v, _pattern_fault(case, v), new, known)
        return new, known
    for item in classify(
        violations,
        lambda names: run_with_fixes(case, names),
        candidates,
        lambda n: FIXES[n].faults,
    ):
        if item.new:
            file_unfixed(item.violation, _pattern_fault(case, item.violation), new, known)
            continue
        item.violation.details["evidence"] = "fix " + "+".join(item.fixes)
        known.extend((item.violation, f) for f in item.faults)
    return new, known


def _pattern_fault(case: Any, violation: Violation) -> str | None:
    """A fault without a fix the release can take whose recogniser matches
    (pattern evidence), or None."""
    found = pattern_fault(case, violation, EVERY_RELEASE)
    return found.id if found else None
