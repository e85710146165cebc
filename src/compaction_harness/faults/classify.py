"""Classification by fix: which known faults a violation is, shown by re-running the case.

A violation of a case is fault X when the same case, re-run on the same
release with X's fix applied, no longer shows it: same
invariant, same call ids (:func:`same_failure`), and it shows without the
fix. When no single fix removes it but several together do, it is all of
them: the smallest such set this module finds (every fix, then each one
left out in turn while the rest still remove it, as Elle names every
anomaly of a history). When even every fix together leaves it, it is new.
No pattern of the violation and no release list enter the decision; only
what no fix removes is then asked of the recognisers of faults without a
fix (:func:`file_unfixed`: known by pattern, or new).

This module is the rule alone, whatever the SDK: :func:`classify` is given
the re-run, the candidate fixes and the faults each removes. google-adk's
cases are classified with it by :func:`compaction_harness.sdk.python.triage.by_fix`
(its fixes, :mod:`compaction_harness.sdk.python.fixes`), ADK-JS's by
``compaction_harness.sdk.js.adk_js`` (the Node fixes). Imports only the
specification's :class:`~compaction_harness.spec.invariants.Violation`.

Within :func:`known_or_new_only` (the gate's properties, whose verdict is
only whether anything is new) a violation is told known or new by the same
rule at the cost of one re-run with every fix, and its fault is not named:
naming it re-runs the case once per fix, most of a pipeline property's time.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from ..spec.invariants import Violation

__all__ = [
    "UNNAMED",
    "Classified",
    "asking_about",
    "classify",
    "file_unfixed",
    "known_or_new_only",
    "naming_budget",
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


def file_unfixed(
    violation: Violation,
    fault: str | None,
    new: list[Violation],
    known: list[tuple[Violation, str]],
) -> None:
    """Files a violation no fix removes: with ``fault`` (the id a recogniser
    of a fault without a fix names), in ``known`` paired with it, evidence
    ``"pattern"``; without, in ``new``."""
    if fault is None:
        new.append(violation)
    else:
        violation.details["evidence"] = "pattern"
        known.append((violation, fault))


def classify(
    violations: Iterable[Violation],
    rerun: Callable[[Sequence[str]], list[Violation]],
    candidates: Sequence[str],
    faults_of: Callable[[str], tuple[str, ...]],
    *,
    confirm: bool = False,
    could_change: Callable[[str], bool] = lambda _: True,
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
    ``could_change(fix)``: whether the fix could change the case's run at
    all; one that cannot is not re-run alone, as it would show what the run
    without it showed (the SDK's runner knows: google-adk's asks, once and
    only when a single fix is first tried, which of the fixes' functions
    the run calls).

    Within :func:`known_or_new_only` (the gate's properties) only the first
    question is asked, in one re-run with every candidate: a violation it
    removes is paired with :data:`UNNAMED` and no fix (``fixes`` empty, not
    new), the rest are new; ``confirm`` is not asked."""
    violations = list(violations)
    if not violations:
        return []
    if _ASKING and _ASKING[-1] is not None and candidates:
        return _asked(violations, rerun, candidates, faults_of, _ASKING[-1])
    if _BUDGETS and candidates and _BUDGETS[-1].spent():
        return _asked(violations, rerun, candidates, faults_of, ())
    started = time.perf_counter()
    try:
        return _named(violations, rerun, candidates, faults_of, confirm, could_change)
    finally:
        if _BUDGETS:
            _BUDGETS[-1].seconds += time.perf_counter() - started


def _named(
    violations: list[Violation],
    rerun: Callable[[Sequence[str]], list[Violation]],
    candidates: Sequence[str],
    faults_of: Callable[[str], tuple[str, ...]],
    confirm: bool,
    could_change: Callable[[str], bool],
) -> list[Classified]:
    """:func:`classify` naming every fault, as its docstring says."""
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
        chosen = [n for n in candidates if could_change(n) and removed(v, [n])]
        if not chosen:
            chosen = list(candidates)
            for n in list(chosen):
                rest = [m for m in chosen if m != n]
                if rest and removed(v, rest):
                    chosen = rest
        faults = tuple(dict.fromkeys(f for n in chosen for f in faults_of(n)))
        out.append(Classified(v, faults, tuple(chosen)))
    return out


def _asked(
    violations: list[Violation],
    rerun: Callable[[Sequence[str]], list[Violation]],
    candidates: Sequence[str],
    faults_of: Callable[[str], tuple[str, ...]],
    asked: tuple[str, ...],
) -> list[Classified]:
    """:func:`classify` within :func:`asking_about`: a violation the fix
    ``asked`` (one, or none) removes is its faults (as :func:`classify` names
    them: the fix alone removes it); any other is known (:data:`UNNAMED`)
    when every fix together removes it, else new. One or two re-runs."""
    out: list[Classified] = []
    left = rerun(asked) if asked and set(asked) <= set(candidates) else None
    together: list[Violation] | None = None
    for v in violations:
        if left is not None and not any(same_failure(v, w) for w in left):
            out.append(Classified(v, tuple(dict.fromkeys(faults_of(asked[0]))), asked))
            continue
        if together is None:
            together = rerun(tuple(sorted(candidates)))
        removed = not any(same_failure(v, w) for w in together)
        out.append(Classified(v, (UNNAMED,) if removed else (), ()))
    return out


@contextlib.contextmanager
def asking_about(fixes: Sequence[str]) -> Iterator[None]:
    """Within ``with``, :func:`classify` asks of each violation only what a
    search for one failure needs (``minimize`` shrinking towards the failure
    it was given): whether the fix ``fixes`` names (the evidence of the
    failure sought: one fix; none for a new failure) removes it, then
    whether every fix together does. A violation the fix removes is that
    fix's faults, as :func:`classify` would name among them; another known
    one is :data:`UNNAMED`, and new stays new. One or two re-runs instead of
    one per fix. Evidence of several fixes together is asked in full."""
    _ASKING.append(tuple(fixes) if len(fixes) <= 1 else None)
    try:
        yield
    finally:
        _ASKING.pop()


#: The fix asked about in each enclosing :func:`asking_about` (None: ask in full).
_ASKING: list[tuple[str, ...] | None] = []


class _NamingBudget:
    """The time :func:`classify` may spend naming faults within
    :func:`naming_budget`: ``share`` of the time since the budget began."""

    def __init__(self, share: float) -> None:
        self.share = share
        self.began = time.perf_counter()
        self.seconds = 0.0

    def spent(self) -> bool:
        return self.seconds > self.share * (time.perf_counter() - self.began)


@contextlib.contextmanager
def naming_budget(share: float) -> Iterator[_NamingBudget]:
    """Within ``with``, :func:`classify` names the faults of a violation (one
    re-run per fix that could change the run, several dozen seconds of a
    pipeline item's minute) only while the time it has spent naming is under
    ``share`` of the time since the block began; past it, it asks only
    whether each violation is known or new (one re-run with every fix,
    :data:`UNNAMED` for a known one), until naming is back under its share.
    For campaigns (the pytest plugin): measured on ADK-JS, whose 18 fixes
    were each re-run for nearly every example, naming took nine tenths of a
    campaign's time. A fault met early is named; what a campaign writes and
    replays is judged in full."""
    budget = _NamingBudget(share)
    _BUDGETS.append(budget)
    try:
        yield budget
    finally:
        _BUDGETS.pop()


#: The enclosing :func:`naming_budget`\ s, innermost last.
_BUDGETS: list[_NamingBudget] = []


#: The fault id :func:`~compaction_harness.sdk.python.triage.by_fix` pairs a known
#: violation with inside :func:`known_or_new_only`: every fix together
#: removes it, which of them was not asked.
UNNAMED = "a known upstream fault, not named (only known or new was asked)"


def known_or_new_only() -> contextlib.AbstractContextManager[None]:
    """Within ``with``, :func:`~compaction_harness.sdk.python.triage.by_fix` decides only
    whether each violation is known or new, as it always does: known when
    every fix together removes it (one re-run), else new unless a fault
    without a fix recognises it. A
    known one is paired with :data:`UNNAMED` (evidence ``"every fix
    together"``) instead of the faults whose fixes remove it, which would
    take one re-run per fix. For the gate's properties (the pytest plugin),
    whose verdict is whether anything is new; campaigns, replay, the
    fixture a failure writes and the command line name every fault."""
    return asking_about(())
