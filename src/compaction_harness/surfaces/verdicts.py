"""One classification of failures, shared by every surface of the harness.

A property, ``make fuzz``'s summary, the gate's fixture replay, ``replay``,
``minimize`` and the campaign's check before it writes a fixture all decide
the same question the same way: of the violations a case shows on a release,
which are known upstream faults (``faults/catalogue.py``, told by their fixes) and
which are new. This module is where that decision lives.

* :func:`classify` sorts violations into known and new.
* :func:`check` runs a case on the installed release and classifies what it
  shows. A pipeline run goes on past a violation of a known fault and stops
  at the first new one, as the campaign does, so a replay meets exactly what
  the campaign met.
* :func:`judge_fixture` gives a fixture's verdict on the installed release:

  ========= =============================================================
  verdict   meaning (exit status of ``replay``)
  ========= =============================================================
  ``ok``    every invariant holds (0)
  ``XFAIL`` it fails only as known upstream faults of this release, and
            shows the fault it is marked with, if that fault applies (0)
  ``FAIL``  it shows a violation no known fault explains (1)
  ``XPASS`` it is marked with a known fault of this release that no
            longer shows: ADK may have fixed it (1)
  ``NOREPRO`` replayed on a driver other than the one it records, it does
            not show its known fault, which the fixture's own driver still
            shows on this release: that driver cannot reproduce the
            fixture's shape (the reason says why), and ADK fixed nothing;
            or a recorded session replayed with a configuration (``replay
            --config``) makes other summaries than the run stored: the
            configuration or the agents given are not the ones it ran with,
            and nothing it shows is judged as ADK's (3)
  ========= =============================================================
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..spec.invariants import Violation
from ..spec.outcome import UnitOutcome

__all__ = [
    "FixtureVerdict",
    "Verdict",
    "check",
    "classify",
    "installed_release",
    "judge_fixture",
    "signature",
]


@dataclass(frozen=True)
class Verdict:
    """What a case shows on one release.

    Attributes:
        release: the google-adk release it ran on.
        new: violations no known fault of ``release`` explains.
        known: (violation, known fault id) for the explained ones.
        outcome: the run's outcome (expected and observed answers; its
            ``violations`` are the new ones).
    """

    release: str
    new: tuple[Violation, ...]
    known: tuple[tuple[Violation, str], ...]
    outcome: UnitOutcome

    @property
    def status(self) -> str:
        """``"fails"`` (something new), ``"known"`` (known faults only) or ``"holds"``."""
        return "fails" if self.new else "known" if self.known else "holds"

    @property
    def faults(self) -> tuple[str, ...]:
        """The known fault ids met, in order of first appearance."""
        return tuple(dict.fromkeys(f for _, f in self.known))

    @property
    def evidence(self) -> dict[str, str]:
        """Each fault met -> what shows it is that fault: ``"fix NAME"``
        (re-running with that fix, or ``+``-joined fixes together, removed
        its violations) or ``"pattern"`` (no fix yet: its recogniser)."""
        out: dict[str, str] = {}
        for v, f in self.known:
            out.setdefault(f, v.details.get("evidence", "pattern"))
        return out


def installed_release() -> str:
    """The google-adk release under test."""
    from ..sdk.python.adk import ADK_RELEASE

    return ADK_RELEASE


def classify(
    case: Any, violations: Iterable[Violation], release: str
) -> tuple[list[Violation], list[tuple[Violation, str]]]:
    """Split ``violations`` of ``case`` into (new, [(known, fault id)]) by
    re-running the case with the known faults' fixes
    (:func:`compaction_harness.sdk.python.triage.by_fix`); ``release`` names
    the installed release the case ran on (the fixes are applied to it)."""
    from ..sdk.python.cases import by_fix

    return by_fix(case, violations)


def check(case: Any, release: str | None = None) -> Verdict:
    """Run ``case`` on the installed google-adk and classify what it shows.

    ``release`` names the release whose known faults apply (default: the
    installed one; the two differ only in tests). Raises
    :class:`~compaction_harness.sdk.python.adk.NotApplicable` when the release cannot
    run the case.
    """
    from ..sdk.js.adk_js import JsCase

    if isinstance(case, JsCase):
        return _check_js(case)
    from ..sdk.python.cases import run_case

    release = release or installed_release()
    outcome = run_case(case, release=release)
    if outcome.triaged:
        new, known = list(outcome.violations), list(outcome.known)
    else:
        new, known = classify(case, outcome.violations, release)
    return Verdict(
        release,
        tuple(new),
        tuple(known),
        UnitOutcome(new, outcome.expected, outcome.observed, outcome.not_applicable, known, True),
    )


def _check_js(case: Any) -> Verdict:
    """:func:`check` for an ADK-JS case: run through the Node driver, triaged
    against ``adk_js.KNOWN_FAULTS``; ``release`` is the installed
    ``@google/adk`` version. Raises ``adk.NotApplicable`` (what ADK-JS cannot
    represent) or ``adk_js.AdkJsUnavailable`` (no Node, or no ``make js-env``)."""
    from ..sdk.js import adk_js
    from ..sdk.python.adk import NotApplicable

    try:
        outcome = adk_js.check_case(case)
    except adk_js.NotApplicable as exc:
        raise NotApplicable(f"ADK-JS: {exc}") from None
    return Verdict(
        adk_js.package_version(), tuple(outcome.violations), tuple(outcome.known), outcome
    )


def signature(violation: Violation, fault: str | None) -> tuple[str, str | None, tuple[str, ...]]:
    """What makes two violations "the same failure" for ``minimize``: the
    invariant, the known fault (None: new) and the call ids involved."""
    return (violation.invariant, fault, tuple(sorted(violation.ids)))


@dataclass(frozen=True)
class FixtureVerdict:
    """A fixture's verdict on one release (see the module's table)."""

    label: str
    verdict: Verdict
    reason: str = ""
    lines: Sequence[str] = field(default_factory=tuple)

    @property
    def failed(self) -> bool:
        return self.label in ("FAIL", "XPASS")


def judge_fixture(
    fixture: Any, release: str | None = None, *, driver: str | None = None
) -> FixtureVerdict:
    """Replay ``fixture`` (a :class:`~compaction_harness.store.fixtures.Fixture`) and
    judge it as the gate does. Raises ``NotApplicable`` like :func:`check`.

    ``driver``: run a script fixture on that driver (``emulated`` or
    ``runner``) instead of the one it records. Where that gives ``XPASS``,
    the fixture is run on its own driver too: when the marked fault shows
    there, ADK fixed nothing, and the verdict is ``NOREPRO`` with the reason
    :func:`compaction_harness.sdk.python.driver.shortfall` finds, never the advice to
    edit the fault's releases."""
    recorded = _recorded_driver(fixture)
    if driver is None or recorded is None or driver == recorded:
        return _judge(fixture, release)
    judged = _judge(_on(fixture, driver), release)
    if judged.label != "XPASS":
        return judged
    own = _judge(fixture, release)
    if fixture.known_fault not in own.verdict.faults:
        return judged  # its own driver does not show it either: ADK may have fixed it
    from ..sdk.python.driver import shortfall

    why = shortfall(
        _on(fixture, driver).case,
        driver,
        judged.verdict.outcome,
        recorded,
        own.verdict.outcome,
        fixture.known_fault,
    )
    return FixtureVerdict(
        "NOREPRO",
        judged.verdict,
        f"the {driver} driver cannot reproduce this fixture's shape: {why} (on its own "
        f"{recorded} driver it shows {fixture.known_fault}: ADK fixed nothing)",
    )


def _recorded_driver(fixture: Any) -> str | None:
    """The driver a google-adk script fixture records; None for other fixtures."""
    if fixture.kind != "script" or getattr(fixture, "sdk", "python") != "python":
        return None
    return fixture.case.config.driver


def _on(fixture: Any, driver: str) -> Any:
    """``fixture`` with its script run on ``driver``."""
    from dataclasses import replace

    from ..spec.scripts import Script

    script = fixture.case
    if script.config.driver == driver:
        return fixture
    return replace(fixture, case=Script(replace(script.config, driver=driver), script.operations))


def _judge(fixture: Any, release: str | None) -> FixtureVerdict:
    from ..sdk.python.known_faults import fault_for

    verdict = check(fixture.case, release)
    differs = verdict.outcome.observed.get("recorded_differs")
    if differs:  # the configuration given is not the one the session ran with
        return FixtureVerdict("NOREPRO", verdict, differs)
    if getattr(fixture, "sdk", "python") == "adk-js":
        from ..sdk.js.adk_js import KNOWN_FAULTS as JS_FAULTS

        # An ADK-JS fault applies to the compactors it names, on the pinned package.
        compactors = JS_FAULTS.get(fixture.known_fault or "", (frozenset(), ""))[0]
        expects = fixture.case.compactor.name in compactors
        marked_id = fixture.known_fault
    else:
        marked = fault_for(fixture.known_fault) if fixture.known_fault else None
        expects = marked is not None and marked.applies_to(verdict.release)
        marked_id = marked.id if marked is not None else None
    if verdict.new:
        return FixtureVerdict("FAIL", verdict, "a violation no known upstream fault explains")
    if expects and marked_id not in verdict.faults:
        # A fault's releases are derived, never typed: what changes them is
        # the matrix (google-adk) or the fixture's pinned package (ADK-JS).
        where = (
            "run `make test SDK=js` on the release that fixed it and give the fixture "
            "that release's package_version"
            if getattr(fixture, "sdk", "python") == "adk-js"
            else "run `make matrix`: the fault's releases are derived from it"
        )
        if verdict.faults:
            # Other known faults show instead: one of them can hide the marked
            # one (a run that raises stops early), so "ADK fixed it" is only
            # one of two readings.
            return FixtureVerdict(
                "XPASS",
                verdict,
                f"the known fault {marked_id} no longer shows, but {', '.join(verdict.faults)} "
                f"does, which can hide it: if the fixture was edited, mark it with the fault "
                f"it shows; if ADK fixed {marked_id}, {where}",
            )
        return FixtureVerdict(
            "XPASS",
            verdict,
            f"the known fault {marked_id} no longer shows on {verdict.release}; if ADK fixed "
            f"it, {where}",
        )
    if verdict.known:
        shown = ", ".join(f"{f} ({e})" for f, e in verdict.evidence.items())
        return FixtureVerdict("XFAIL", verdict, "known upstream fault " + shown)
    return FixtureVerdict("ok", verdict)
