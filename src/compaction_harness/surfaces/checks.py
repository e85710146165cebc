"""What properties, fixture replay and the command line share.

:func:`check_unit_case` is the body of every unit property: it runs a case
against the installed ADK, labels violations of known upstream faults (as
Hypothesis events, when called inside a test) and raises
:class:`~compaction_harness.sdk.python.unit.InvariantViolation` for anything new.
:func:`fixture_from_failure` turns that exception into a fixture.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from hypothesis import event
from hypothesis.control import currently_in_test_context

from ..sdk.python.cases import judge, run_case
from ..sdk.python.unit import (
    Helpers,
    InvariantViolation,
    TokenCase,
    TokenHelpers,
    UnitCase,
    run_token_case,
    run_unit_case,
)
from ..spec.outcome import UnitOutcome
from ..store.fixtures import Fixture
from .verdicts import installed_release

__all__ = [
    "CASES_BY_KIND",
    "KNOWN_FAULTS_MET",
    "SECONDS_BY_KIND",
    "check_case",
    "check_js_case",
    "check_token_case",
    "check_unit_case",
    "fixture_from_failure",
    "installed_release",
    "met",
    "met_all",
    "report_first_failure",
    "report_sought",
    "sought_only",
    "timed",
]

#: The environment variable of a search for one known fault (``bench/fault_times.py``).
SOUGHT = "HARNESS_SOUGHT_FAULT"


def check_unit_case(
    case: UnitCase, helpers: Helpers | None = None, *, release: str | None = None
) -> UnitOutcome:
    """Run ``case`` and raise :class:`InvariantViolation` on any violation not
    explained by a known upstream fault of ``release`` (default: installed).

    Returns the outcome, classified by fix after the run (the known
    violations in ``known``), when nothing new failed.
    """
    return _check(case, run_unit_case(case, helpers), injected=helpers is not None, release=release)


def check_token_case(
    case: TokenCase, helpers: TokenHelpers | None = None, *, release: str | None = None
) -> UnitOutcome:
    """:func:`check_unit_case` for token-threshold cases (invariant U5)."""
    return _check(
        case, run_token_case(case, helpers), injected=helpers is not None, release=release
    )


def check_case(case: Any, *, release: str | None = None) -> UnitOutcome:
    """Run any case (see :mod:`compaction_harness.sdk.python.cases`) and raise on anything new."""
    with timed(case):
        return _check(case, run_case(case), injected=False, release=release)


#: Seconds spent running and classifying cases in this process, and how
#: many, by where they ran: ``"<driver> / <storage>"`` for a script (the
#: emulating driver, ADK's ``Runner``, ADK-JS's Node driver, and the session
#: service), the case's kind otherwise. The campaign summary prints each
#: one's share of the campaign (pytest_plugin, campaign_report).
SECONDS_BY_KIND: Counter[str] = Counter()
CASES_BY_KIND: Counter[str] = Counter()


def _kind(case: Any) -> str:
    config = getattr(case, "config", None)
    if config is None or not hasattr(config, "storage"):
        return type(case).__name__
    driver = "adk-js" if hasattr(case, "compactor") else config.driver
    return f"{driver} / {config.storage}"


@contextmanager
def timed(case: Any):
    """Add the time of the ``with`` block to :data:`SECONDS_BY_KIND` under
    ``case``'s kind (a property that runs and judges scripts itself wraps
    its run in it, as :func:`check_case` does)."""
    kind, started = _kind(case), time.perf_counter()
    try:
        yield
    finally:
        SECONDS_BY_KIND[kind] += time.perf_counter() - started
        CASES_BY_KIND[kind] += 1


def _check(case, outcome: UnitOutcome, *, injected: bool, release: str | None) -> UnitOutcome:
    release = release or installed_release()
    if not injected:  # classification by fix, after the run
        outcome = sought_only(judge(case, outcome))
    # (a deliberately broken stand-in: nothing it does is a known fault)
    new = list(outcome.violations)
    met_all(outcome.known)
    if currently_in_test_context():
        for reason in outcome.not_applicable:
            event(f"not applicable: {reason}")
    if new:
        raise InvariantViolation(
            case, UnitOutcome(new, outcome.expected, outcome.observed), planted=injected
        )
    return outcome


def sought_only(outcome: UnitOutcome) -> UnitOutcome:
    """``outcome`` (judged: ``known`` classified by fix) as a search for the
    one fault ``HARNESS_SOUGHT_FAULT`` names sees it; unchanged without it.

    The sought fault is not excused: its violations become ``violations``
    (what a property raises on, shrinks and writes). Every other violation,
    known or new, is left in ``known`` (new ones paired with the fault id
    ``"not the sought fault"``) and the example goes on: a benchmark of the
    time to find fault X runs the SDK with every fix but X's
    (``HARNESS_FIXES=all,-X's fix``), where anything else it meets is another
    fault without its fix or a finding of its own, not X."""
    fault = os.environ.get(SOUGHT)
    if not fault:
        return outcome
    hit = [v for v, f in outcome.known if f == fault]
    rest = [(v, f) for v, f in outcome.known if f != fault]
    rest += [(v, NOT_SOUGHT) for v in outcome.violations]
    return replace(outcome, violations=hit, known=rest)


#: The fault id :func:`sought_only` pairs a new violation with.
NOT_SOUGHT = "not the sought fault"


def report_first_failure(nodeid: str, at: float) -> None:
    """In a search for one fault (:data:`SOUGHT` and ``HARNESS_SOUGHT_REPORT``
    set), append the item's first failing example, as it happens, to the
    report: ``{"fault", "item", "first_failure"}``, seconds since the
    campaign started (``at`` is ``time.time()``). Another item may find the
    fault first and finish shrinking last: the benchmark takes the earliest."""
    _append_sought(lambda started: {"item": nodeid, "first_failure": round(at - started, 2)})


def report_sought(
    nodeid: str,
    exc: InvariantViolation,
    fixture: Fixture,
    path: Any,
    first_failure_at: float | None,
    cut_short: bool,
) -> None:
    """A search for one fault (:data:`SOUGHT`, ``bench/fault_times.py``) found
    it, and its shrunk fixture (unjudged: its replay would call it known) is
    written at ``path``: append one JSON line to ``HARNESS_SOUGHT_REPORT``
    (nothing without it). The line holds the seconds since the campaign
    started (``HARNESS_CAMPAIGN_STARTED``) to the first failing example
    (``first_failure_at``, ``time.time()``) and to now (shrinking done),
    whether the budget cut shrinking short, the item, the invariant, and the
    fixture's size: operations of a script (None for other cases) and events
    stored (summaries left out)."""
    case = exc.case
    script = getattr(case, "script", case)
    operations = getattr(script, "operations", None)
    session = exc.outcome.observed.get("session")
    if isinstance(session, dict):
        events = sum(1 for step in session.get("steps", ()) if not step.get("compaction"))
    else:
        events = len(getattr(case, "session", ()) or ())
    _append_sought(
        lambda started: {
            "item": nodeid,
            "invariant": fixture.invariant,
            "first_failure": round((first_failure_at or time.time()) - started, 2),
            "shrunk": round(time.time() - started, 2),
            "cut_short": cut_short,
            "operations": len(operations) if operations is not None else None,
            "events": events,
            "fixture": str(path),
        }
    )


def _append_sought(line) -> None:
    """Append ``line(started)`` (``started``: the campaign's start,
    ``HARNESS_CAMPAIGN_STARTED``) with the sought fault's id as one JSON line
    to ``HARNESS_SOUGHT_REPORT``; nothing outside a search for one fault."""
    import json

    report = os.environ.get("HARNESS_SOUGHT_REPORT")
    if not report or not os.environ.get(SOUGHT):
        return
    data = {"fault": os.environ[SOUGHT], **line(float(os.environ["HARNESS_CAMPAIGN_STARTED"]))}
    with open(report, "a", encoding="utf-8") as out:
        out.write(json.dumps(data) + "\n")


#: Known upstream faults met in this process, by fault id -> examples (runs).
#: The campaign summary reads the change over each item (pytest_plugin).
KNOWN_FAULTS_MET: Counter[str] = Counter()


def met(fault_id: str, evidence: str = "") -> None:
    """Record that an example met the known upstream fault ``fault_id``: a
    Hypothesis event when inside a test (with its ``evidence``: ``"fix
    NAME"`` or ``"pattern"``), and a count for the campaign summary."""
    KNOWN_FAULTS_MET[fault_id] += 1
    if evidence:
        FAULT_EVIDENCE.setdefault(fault_id, evidence)
    if currently_in_test_context():
        event(f"known upstream fault: {fault_id}" + (f" ({evidence})" if evidence else ""))


def met_all(known: Any) -> None:
    """:func:`met` for each fault of ``known`` ((violation, fault id) pairs)
    once, with the evidence of its first violation (``details["evidence"]``,
    ``"pattern"`` when none is recorded)."""
    for fault, evidence in {f: v.details.get("evidence", "pattern") for v, f in known}.items():
        met(fault, evidence)


#: The evidence first seen for each fault met in this process.
FAULT_EVIDENCE: dict[str, str] = {}


def check_js_case(case: Any) -> UnitOutcome:
    """The body of an ADK-JS property: run ``case`` (an
    :class:`~compaction_harness.sdk.js.adk_js.JsCase`) through the Node driver,
    record the known ADK-JS faults it meets (:func:`met`) and raise
    :class:`InvariantViolation` for any violation no entry of
    ``adk_js.KNOWN_FAULTS`` explains. Returns the outcome otherwise."""
    from ..sdk.js.adk_js import check_case as run_js

    with timed(case):
        outcome = sought_only(run_js(case))
    met_all(outcome.known)
    if outcome.violations:
        raise InvariantViolation(case, outcome)
    return outcome


def fixture_from_failure(exc: InvariantViolation, release: str | None = None) -> Fixture:
    """The fixture recording a failing case (the first violation names it),
    of the SDK whose case it is (the driver registry's ``sdk_of_case``):
    its kind, its installed release (``release`` overrides google-adk's, the
    default SDK's, only) and its ``sdk``; an ADK-JS case gives an
    ``sdk: "adk-js"`` fixture of kind ``script`` on the installed ``@google/adk``."""
    from ..sdk import protocol

    outcome = exc.outcome
    sdk = protocol.sdk_of_case(exc.case)
    default = next(iter(protocol.sdks())) == sdk.name
    return Fixture(
        kind=sdk.kind_of(exc.case),
        invariant=outcome.violations[0].invariant,
        adk_release=(release or installed_release()) if default else sdk.installed(),
        case=exc.case,
        expected=outcome.expected,
        observed=outcome.observed,
        violations=tuple(v.summary() for v in outcome.violations),
        sdk=sdk.name,
    )
