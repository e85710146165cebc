"""Classification of ADK-JS's violations by fix: a violation is the known
fault whose fix removes it when the same request is run again with that fix
(:func:`classified`, after :func:`compaction_harness.faults.classify.classify`;
the fixes are ``sdks/adk-js/fixes/``, applied by :mod:`.js_fixes`), else,
for a fault without a fix, the fault whose recogniser matches. Also
ADK-JS's view of the fault catalogue (:data:`KNOWN_FAULTS`), and what runs
and triages a case (:func:`check_case`, :func:`check_js_round_trip`). The
driver modules (:mod:`.node`, :mod:`.timeline`, :mod:`.run`,
:mod:`.checks`, :mod:`.drivers`) import nothing of it."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from ...spec.invariants import Violation
from .case import JsCase
from .checks import check_run, round_trip_violations
from .run import JsRun, observed, run_script

__all__ = [
    "CLASSIFICATION",
    "KNOWN_FAULTS",
    "check_case",
    "check_js_round_trip",
    "classified",
    "evidence_of",
    "known_fault",
    "new_violations",
    "triage",
]


def _catalogued() -> dict[str, tuple[frozenset[str], str]]:
    """ADK-JS's faults of :data:`compaction_harness.faults.catalogue.FAULTS`,
    by id: (the compactors it concerns, what a user sees)."""
    from ...faults.catalogue import JS, faults_of

    return {f.id: (frozenset(f.compactors or ()), f.user_sees) for f in faults_of(JS)}


#: Known upstream faults of ADK-JS 2.0.0, by id: (compactors, explanation:
#: what the source does and what a user sees). A view of the fault catalogue
#: (faults/catalogue.py), where the prose lives.
KNOWN_FAULTS: dict[str, tuple[frozenset[str], str]] = _catalogued()


def _has_fix(fault: str) -> bool:
    from .js_fixes import js_fixes

    return any(fault in f.faults for f in js_fixes().values())


def classified(run: JsRun, violations: Sequence[Violation]) -> list[Any]:
    """``violations`` of ``run`` classified by fix
    (:func:`compaction_harness.faults.classify.classify`): each is re-checked
    on the same request re-run with ADK-JS's fixes (``sdks/adk-js/fixes/``)
    added to those ``run`` had; a violation that a fix removes is that fix's
    fault, with ``details["evidence"] = "fix NAME"``. With
    ``HARNESS_KNOWN_FAULTS=off`` (or a run that cannot be re-run) nothing is
    classified. Raises as :func:`run_script` does, and ``JsFixError`` for a
    fix that does not apply."""
    from ...faults.classify import Classified, classify
    from .js_fixes import js_fixes

    fixes = js_fixes()
    rerun = run.rerun
    if rerun is None or os.environ.get("HARNESS_KNOWN_FAULTS") == "off":
        return [Classified(v, (), ()) for v in violations]
    candidates = [n for n in fixes if n not in run.fixes]
    asked = {v.invariant for v in violations}  # a re-run is compared on these alone
    out = classify(
        violations,
        lambda names: check_run(rerun((*run.fixes, *names)), only=asked),
        candidates,
        lambda n: fixes[n].faults,
        confirm=True,
    )
    for item in out:
        if not item.new:
            item.violation.details["evidence"] = evidence_of(item.fixes)
    return out


def evidence_of(fixes: Sequence[str]) -> str:
    """``details["evidence"]`` of a violation the fixes ``fixes`` remove
    (``"fix A+B"``), or ``"every fix together"`` for one classified within
    :func:`compaction_harness.faults.classify.known_or_new_only` (no fix named)."""
    return "fix " + "+".join(fixes) if fixes else "every fix together"


def known_fault(run: JsRun, violation: Violation) -> str | None:
    """The id of the known ADK-JS fault that ``violation`` of ``run`` is, or
    None (a new finding): the fault whose fix removes it (:func:`classified`;
    the first, when several fixes only together do), else, among the faults
    that have no fix yet, the one whose recogniser matches (pattern
    evidence, ``details["evidence"] = "pattern"``)."""
    if os.environ.get("HARNESS_KNOWN_FAULTS") == "off":
        return None
    item = classified(run, [violation])[0]
    if not item.new:
        return item.faults[0]
    found = _pattern_fault(run, violation)
    if found is not None:
        violation.details["evidence"] = "pattern"
    return found


def _pattern_fault(run: JsRun, violation: Violation) -> str | None:
    """A fault without a fix whose recogniser matches ``violation``, or None."""
    name = run.compactor.name
    faults = [
        f for f, (compactors, _) in KNOWN_FAULTS.items() if name in compactors and not _has_fix(f)
    ]
    if name != "truncating":
        return None
    # (fault, the violation's causes, what the trace must show the compactor
    # deleted). A call whose answer the compactor deleted is left unanswered
    # (the strict clause), or, when a later turn reused its id (ids numbered
    # per turn) and that turn's answer stands in for the one deleted, one of
    # parallel calls is answered alone (a partial answer, which Gemini
    # rejects too): the trace shows the same deletion either way.
    patterns = (
        ("js-truncate-opener", {"opener missing"}, _opener_deleted),
        ("js-truncate-splits-call-pairs", {"strict provider", "partial answer"}, _answers_deleted),
    )
    for fault, causes, deleted in patterns:
        if fault in faults and violation.details.get("cause") in causes and deleted(run, violation):
            return fault
    return None


def _opener_deleted(run: JsRun, violation: Violation) -> bool:
    """Whether the truncating compactor deleted the missing opener from the
    invocation's events at that model call (it is stored, but not in ``after``)."""
    k = violation.details.get("model_call")
    if k is None:
        return False
    call = run.calls[k]
    after = set(call.get("after", ()))
    return any(
        run.ids[p] not in after
        for p, s in enumerate(run.stored.steps)
        if s.author == "user" and s.text == call["opener"]
    )


def _answers_deleted(run: JsRun, violation: Violation) -> bool:
    """Whether, for every call the violation names at that model call (left
    unanswered, or unanswered beside an answered sibling), a response with
    its id was stored and the truncating compactor deleted it (stored, but
    not in the call's ``after``): the pair is split by the deletion, which
    the trace shows, not by the contents."""
    k = violation.details.get("model_call")
    if k is None or not violation.ids:
        return False
    after = set(run.calls[k].get("after", ()))
    return all(
        any(
            call_id in step.response_ids and run.ids[p] not in after
            for p, step in enumerate(run.stored.steps)
        )
        for call_id in violation.ids
    )


def check_case(case: JsCase, *, seed: int | None = None) -> Any:
    """Run ``case`` on ADK-JS and triage what it shows: a
    :class:`~compaction_harness.spec.outcome.UnitOutcome` whose ``violations`` are the
    new ones (no known fault explains them), ``known`` the (violation, fault
    id) pairs, ``observed`` as :func:`observed` and ``triaged`` True. Raises
    :class:`NotApplicable`, :class:`AdkJsUnavailable` or :class:`RuntimeError`
    as :func:`run_script` does. With database storage the script also runs
    on ``DatabaseSessionService`` and P7 is judged
    (:func:`check_js_round_trip`)."""
    from ...spec.outcome import UnitOutcome

    run = run_script(case.script, case.compactor, seed=seed)
    new, known = triage(run)
    if case.script.config.storage == "database":
        fresh, explained = check_js_round_trip(case, seed=seed, memory=run)
        new += fresh
        known += explained
    return UnitOutcome(new, {}, observed(run), [], known, True)


def triage(run: JsRun) -> tuple[list[Violation], list[tuple[Violation, str]]]:
    """``run``'s violations (:func:`check_run`) split by fix (:func:`classified`),
    then, for those no fix removes, by the recognisers of faults without a
    fix: ``(new, known)``, ``known`` as (violation, fault id) pairs (a
    violation several fixes remove only together is paired with each of
    their faults)."""
    from ...faults.classify import file_unfixed

    new: list[Violation] = []
    known: list[tuple[Violation, str]] = []
    if os.environ.get("HARNESS_KNOWN_FAULTS") == "off":
        return check_run(run), []
    for item in classified(run, check_run(run)):
        if not item.new:
            known.extend((item.violation, f) for f in item.faults)
            continue
        file_unfixed(item.violation, _pattern_fault(run, item.violation), new, known)
    return new, known


def check_js_round_trip(
    case: JsCase, *, seed: int | None = None, memory: JsRun | None = None
) -> tuple[list[Violation], list[tuple[Violation, str]]]:
    """P7 on ADK-JS: run ``case`` on ``InMemorySessionService`` and on
    ``DatabaseSessionService`` (SQLite, the session reloaded before every
    invocation; ``dist/esm/sessions/database_session_service.js``) and
    compare the prompt of every model call with ``pipeline.check_round_trip``
    (the checker adk-python's P7 uses). Returns ``(new, known)``: the round
    trip's violations (:func:`round_trip_violations`) classified by fix
    (both runs re-run with ADK-JS's fixes added, as :func:`classified`
    does), ``known`` as (violation, fault id) pairs. ``memory``: the
    in-memory run of ``case`` with ``seed`` if the caller made it already
    (the driver is deterministic). Raises as :func:`run_script` does."""
    from ...faults.classify import classify
    from .js_fixes import js_fixes

    memory = memory or run_script(case.script, case.compactor, seed=seed)
    database = run_script(case.script, case.compactor, seed=seed, storage="database")
    found = round_trip_violations(memory, database)
    off = os.environ.get("HARNESS_KNOWN_FAULTS") == "off"
    if off or memory.rerun is None or database.rerun is None:
        return found, []
    fixes = js_fixes()
    m_rerun, d_rerun = memory.rerun, database.rerun
    items = classify(
        found,
        lambda names: round_trip_violations(
            m_rerun((*memory.fixes, *names)), d_rerun((*database.fixes, *names))
        ),
        [n for n in fixes if n not in database.fixes],
        lambda n: fixes[n].faults,
        confirm=True,
    )
    new: list[Violation] = []
    known: list[tuple[Violation, str]] = []
    for item in items:
        if item.new:
            new.append(item.violation)
            continue
        item.violation.details["evidence"] = evidence_of(item.fixes)
        known.extend((item.violation, f) for f in item.faults)
    return new, known


def new_violations(run: JsRun, found: list[Violation] | None = None) -> list[Violation]:
    """The violations of ``run`` that no known ADK-JS fault explains."""
    found = check_run(run) if found is None else found
    return [v for v in found if known_fault(run, v) is None]


#: What decides whether an ADK-JS violation is a known fault or new (pattern
#: evidence: ADK-JS's faults have no fix yet); ``bench/classifier_size.py``
#: counts these.
CLASSIFICATION = (
    "_has_fix",
    "classified",
    "evidence_of",
    "known_fault",
    "_pattern_fault",
    "_opener_deleted",
    "triage",
    "new_violations",
)
