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

Within :func:`known_or_new_only` (the gate's properties, whose verdict is
only whether anything is new) a violation is told known or new by the same
rule at the cost of one re-run with every fix, and its fault is not named:
naming it re-runs the case once per fix, most of a pipeline property's time.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ..invariants import Violation

__all__ = [
    "UNNAMED",
    "Classified",
    "by_fix",
    "classify",
    "known_or_new_only",
    "run_with_fixes",
    "same_failure",
]


#: Invariants whose witness is the events involved, not only call ids: P4
#: names the event lost, P6 the range summarised in vain. A re-run that
#: loses another event, or wastes another range, has removed this failure.
_BY_EVENT = frozenset({"P4", "P6"})


def same_failure(a: Violation, b: Violation) -> bool:
    """Whether ``a`` and ``b`` are one failure: the same invariant and the
    same call ids, for P4 and P6 the same events (positions), for a P2
    without call ids (a user message missing from the prompt) the same
    message: another invocation's opener lost is another failure, and for
    a P0 the same exception (type and message). A P2 that names its model
    call (``details["model_call"]``, both runs) is another failure at
    another model call: ids unanswered at an earlier call (a tool that died)
    are not the failure a later call shows with the same ids (a reused id
    whose answer is hidden there)."""
    if a.invariant != b.invariant or sorted(a.ids) != sorted(b.ids):
        return False
    calls = (a.details.get("model_call"), b.details.get("model_call"))
    if a.invariant == "P2" and None not in calls and calls[0] != calls[1]:
        return False
    if a.invariant == "P2" and not a.ids:
        return a.expected == b.expected
    if a.invariant == "P0":  # the exception is the witness: another one is another failure
        return a.observed == b.observed
    return a.invariant not in _BY_EVENT or a.positions == b.positions


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
    *,
    confirm: bool = False,
) -> list[Classified]:
    """Classify ``violations`` (of one run without fixes) by fix.

    ``rerun(names)`` re-runs the same case with the fixes ``names`` applied
    and returns every violation; ``candidates`` are the fixes the installed
    SDK can take; ``faults_of(fix)`` names the faults a fix removes. Each
    re-run is made once per set of fixes: at most one with every fix, one
    per fix, and the few of the smallest-set search. A violation that every
    fix together leaves is new at the cost of one re-run; one that single
    fixes remove is the fault of each of them (two faults whose fixes each
    remove it are both named). ``confirm``: re-run without fixes too, and
    call a violation that re-run does not show new (the run it came from was
    not the case's own: edited by a test, or not deterministic).

    Within :func:`known_or_new_only` (the gate's properties) only the first
    question is asked, in one re-run with every candidate: a violation it
    removes is paired with :data:`UNNAMED` and no fix (``fixes`` empty, not
    new), the rest are new; ``confirm`` is not asked."""
    violations = list(violations)
    if not violations:
        return []
    if _KNOWN_OR_NEW_ONLY and candidates:
        left = rerun(tuple(sorted(candidates)))
        return [
            Classified(v, () if any(same_failure(v, w) for w in left) else (UNNAMED,), ())
            for v in violations
        ]
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
        if not candidates or not removed(v, candidates) or (confirm and removed(v, ())):
            out.append(Classified(v, (), ()))
            continue
        chosen = [n for n in candidates if removed(v, [n])]
        if not chosen:
            chosen = list(candidates)
            for n in list(chosen):
                rest = [m for m in chosen if m != n]
                if rest and removed(v, rest):
                    chosen = rest
        faults = tuple(dict.fromkeys(f for n in chosen for f in faults_of(n)))
        out.append(Classified(v, faults, tuple(chosen)))
    return out


#: The fault id :func:`by_fix` pairs a known violation with inside
#: :func:`known_or_new_only`: every fix together removes it, which of them
#: was not asked.
UNNAMED = "a known upstream fault, not named (the gate tells known from new only)"

#: Depth of the enclosing :func:`known_or_new_only` blocks.
_KNOWN_OR_NEW_ONLY: list[None] = []


@contextlib.contextmanager
def known_or_new_only() -> Iterator[None]:
    """Within ``with``, :func:`by_fix` decides only whether each violation is
    known or new, as it always does: known when every fix together removes
    it (one re-run), else new unless a fault without a fix recognises it. A
    known one is paired with :data:`UNNAMED` (evidence ``"every fix
    together"``) instead of the faults whose fixes remove it, which would
    take one re-run per fix. For the gate's properties (the pytest plugin),
    whose verdict is whether anything is new; campaigns, replay, the
    fixture a failure writes and the command line name every fault."""
    _KNOWN_OR_NEW_ONLY.append(None)
    try:
        yield
    finally:
        _KNOWN_OR_NEW_ONLY.pop()


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
    "pattern"`` (``"fix NAME"`` otherwise). Within :func:`known_or_new_only`
    the same violations are new, and the known ones are paired with
    :data:`UNNAMED`."""
    import os

    from .fixes import FIXES, active, unavailable

    violations = list(violations)
    if not violations or os.environ.get("HARNESS_KNOWN_FAULTS") == "off":
        return violations, []
    applied_now = set(active())
    candidates = [n for n in FIXES if n not in applied_now and unavailable(n) is None]
    new: list[Violation] = []
    known: list[tuple[Violation, str]] = []
    if _KNOWN_OR_NEW_ONLY:
        # classify()'s first question alone: does every fix together remove it?
        left = run_with_fixes(case, sorted(candidates)) if candidates else []
        for v in violations:
            if candidates and not any(same_failure(v, w) for w in left):
                v.details["evidence"] = "every fix together"
                known.append((v, UNNAMED))
                continue
            pattern = _pattern_fault(case, v)
            if pattern is None:
                new.append(v)
            else:
                v.details["evidence"] = "pattern"
                known.append((v, pattern))
        return new, known
    for item in classify(
        violations,
        lambda names: run_with_fixes(case, names),
        candidates,
        lambda n: FIXES[n].faults,
    ):
        if item.new:
            pattern = _pattern_fault(case, item.violation)
            if pattern is None:
                new.append(item.violation)
            else:
                item.violation.details["evidence"] = "pattern"
                known.append((item.violation, pattern))
            continue
        item.violation.details["evidence"] = "fix " + "+".join(item.fixes)
        known.extend((item.violation, f) for f in item.faults)
    return new, known


def _pattern_fault(case: Any, violation: Violation) -> str | None:
    """A fault without a fix the release can take whose recogniser matches
    (pattern evidence), or None."""
    from ..known_faults import EVERY_RELEASE, pattern_fault

    found = pattern_fault(case, violation, EVERY_RELEASE)
    return found.id if found else None
