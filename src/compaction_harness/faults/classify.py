"""Classification by fix: which known faults a violation is, shown by re-running the case.

A violation of a case is fault X when the same case, re-run on the same
release with X's fix applied (:mod:`.fixes`), no longer shows it: same
invariant, same call ids (:func:`same_failure`), and it shows without the
fix. When no single fix removes it but several together do, it is all of
them: the smallest such set this module finds (every fix, then each one
left out in turn while the rest still remove it, as Elle names every
anomaly of a history). When even every fix together leaves it, it is new.
No pattern of the violation and no release list enter the decision.

Works for every case kind of :mod:`compaction_harness.cases` on google-adk;
ADK-JS cases go through their own driver with the Node fixes
(``compaction_harness.adk_js``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..invariants import Violation

__all__ = ["Classified", "classify", "run_with_fixes", "same_failure"]


def same_failure(a: Violation, b: Violation) -> bool:
    """Whether ``a`` and ``b`` are one failure: the same invariant and the same call ids."""
    return a.invariant == b.invariant and tuple(sorted(a.ids)) == tuple(sorted(b.ids))


def run_with_fixes(case: Any, names: Sequence[str]) -> list[Violation]:
    """Every violation ``case`` shows on the installed google-adk with the fixes
    ``names`` applied (none: the release as published), the run never stopped
    at a violation and nothing classified. Raises ``NotApplicable`` where the
    release cannot run the case or take a fix."""
    from ..cases import case_kind
    from .fixes import applied

    kind = case_kind(case)
    with applied(names):
        if kind == "script" and case.config.driver == "runner":
            from ..adk_runner import run_script_outcome

            outcome = run_script_outcome(case, triage=False)
        elif kind == "script":
            from ..driver import run_script

            outcome = run_script(case, triage=False)
        elif kind == "pipeline":
            from ..pipeline import run_pipeline_case

            outcome = run_pipeline_case(case, triage=False)
        else:
            from ..cases import run_case

            outcome = run_case(case)
    return list(outcome.violations)


@dataclass(frozen=True)
class Classified:
    """One violation and what removes it.

    Attributes:
        violation: as the run without fixes showed it.
        faults: the known fault ids whose fixes remove it (empty: new).
        fixes: those fixes' names.
    """

    violation: Violation
    faults: tuple[str, ...]
    fixes: tuple[str, ...]

    @property
    def new(self) -> bool:
        return not self.faults


def classify(
    violations: Iterable[Violation],
    rerun: Callable[[Sequence[str]], list[Violation]],
    candidates: Sequence[str],
    faults_of: Callable[[str], tuple[str, ...]],
) -> list[Classified]:
    """Classify ``violations`` (of one run without fixes) by fix.

    ``rerun(names)`` re-runs the same case with the fixes ``names`` applied
    and returns every violation; ``candidates`` are the fixes the installed
    SDK can take; ``faults_of(fix)`` names the faults a fix removes. Each
    re-run is made once per set of fixes."""
    violations = list(violations)
    if not violations:
        return []
    memo: dict[tuple[str, ...], list[Violation]] = {}

    def shown(names: Sequence[str]) -> list[Violation]:
        key = tuple(sorted(names))
        if key not in memo:
            memo[key] = rerun(key)
        return memo[key]

    def removed(v: Violation, names: Sequence[str]) -> bool:
        return not any(same_failure(v, w) for w in shown(names))

    out: list[Classified] = []
    for v in violations:
        singles = [n for n in candidates if removed(v, [n])]
        if singles:
            chosen = singles
        elif len(candidates) > 1 and removed(v, candidates):
            chosen = list(candidates)
            for n in list(chosen):
                rest = [m for m in chosen if m != n]
                if rest and removed(v, rest):
                    chosen = rest
        else:
            chosen = []
        faults = tuple(dict.fromkeys(f for n in chosen for f in faults_of(n)))
        out.append(Classified(v, faults, tuple(chosen)))
    return out
