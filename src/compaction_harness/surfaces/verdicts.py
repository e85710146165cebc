"""One classification of failures, shared by every surface of the harness.

A property, ``make fuzz``'s summary, the gate's fixture replay, ``replay``,
``minimize`` and the campaign's check before it writes a fixture all decide
the same question the same way: of the violations a case shows on a release,
which are known upstream faults (``faults/catalogue.py``, told by their fixes) and
which are new. This module is where that decision lives.

* :func:`check` runs a case on the installed release of its SDK and
  classifies what it shows (the SDK's entry of the driver registry does,
  ``sdk.protocol.Sdk.check``; no SDK is named here). A run records every
  violation and classifies nothing; after it, a google-adk pipeline run's
  violations are classified by fix and the new ones of the first operation
  that has any are reported, as the campaign reports them, so a replay
  meets exactly what the campaign met.
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

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..faults.classify import UNNAMED
from ..sdk import protocol
from ..spec.invariants import Violation

__all__ = [
    "FixtureVerdict",
    "Verdict",
    "check",
    "installed_release",
    "judge_fixture",
    "signature",
]


@dataclass(frozen=True)
class Verdict:
    """What a case shows on one release.

    Attributes:
        release: the release of the case's SDK it ran on.
        new: violations no known fault of ``release`` explains.
        known: (violation, known fault id) for the explained ones.
        outcome: the run's outcome (expected and observed answers; its
            ``violations`` are the new ones).
    """

    release: str
    new: tuple[Violation, ...]
    known: tuple[tuple[Violation, str], ...]
    outcome: Any

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
    """The google-adk release under test (the default SDK's installed release)."""
    return protocol.sdk_named(next(iter(protocol.sdks()))).installed()


def check(case: Any, release: str | None = None) -> Verdict:
    """Run ``case`` on the SDK it belongs to (the registry's
    :func:`~compaction_harness.sdk.protocol.sdk_of_case`) and classify what
    it shows (:meth:`~compaction_harness.sdk.protocol.Sdk.check`).

    ``release`` names the release whose known faults apply (default: the
    installed one; the two differ only in tests). Raises
    :class:`~compaction_harness.sdk.protocol.NotApplicable` when the release
    cannot run the case, :class:`~compaction_harness.sdk.protocol.Unavailable`
    when its SDK is not installed here.
    """
    checked = protocol.sdk_of_case(case).check(case, release)
    return Verdict(checked.release, checked.new, checked.known, checked.outcome)


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
    there, the SDK fixed nothing, and the verdict is ``NOREPRO`` with the
    reason the SDK's ``shortfall`` finds, never the advice to edit the
    fault's releases."""
    sdk = protocol.sdk_named(fixture.sdk)
    recorded = sdk.recorded_driver(fixture.case)
    if driver is None or recorded is None or driver == recorded:
        return _judge(fixture, release)
    moved = replace(fixture, case=sdk.on_driver(fixture.case, driver))
    judged = _judge(moved, release)
    if judged.label != "XPASS":
        return judged
    own = _judge(fixture, release)
    if fixture.known_fault not in own.verdict.faults:
        return judged  # its own driver does not show it either: the SDK may have fixed it
    why = sdk.shortfall(
        moved.case,
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


#: A FAIL's reason when every fix was tried and none removes the violation.
UNEXPLAINED = "a violation no known upstream fault explains"


def untried_faults(sdk: Any, invariant: str, release: str) -> list[str]:
    """The catalogued faults of ``invariant`` that show on ``release`` (by
    its minor release, as the matrix derives them) and whose fix ``sdk``
    cannot run there (``sdk.unfixable``): a violation of theirs reads as new
    on that release, since classification is by fix alone."""
    from ..faults.catalogue import FAULTS

    minor = ".".join(str(release).split(".")[:2])
    return [
        f.id
        for f in FAULTS
        if invariant in f.invariants
        and (not f.releases or minor in {".".join(r.split(".")[:2]) for r in f.releases})
        and sdk.unfixable(f.id)
    ]


def _judge(fixture: Any, release: str | None) -> FixtureVerdict:
    sdk = protocol.sdk_named(fixture.sdk)
    verdict = check(fixture.case, release)
    differs = verdict.outcome.observed.get("recorded_differs")
    if differs:  # the configuration given is not the one the session ran with
        return FixtureVerdict("NOREPRO", verdict, differs)
    marked_id = fixture.known_fault
    # A fault's releases are derived, never typed: what changes them is the
    # SDK's (the matrix for google-adk, the pinned package for ADK-JS).
    expects = bool(marked_id) and sdk.expects(marked_id, fixture.case, verdict.release)
    if verdict.new:
        if marked_id and (why := sdk.unfixable(marked_id)):
            # The marked fault may be what shows, but its fix cannot run here:
            # without it no re-run can tell, and a guess is not evidence.
            return FixtureVerdict(
                "FAIL",
                verdict,
                f"a violation no fix this release can take removes; the fixture's fault "
                f"{marked_id} cannot be told by its fix here: {why}",
            )
        untried = untried_faults(sdk, fixture.invariant, verdict.release)
        if untried:
            return FixtureVerdict(
                "FAIL",
                verdict,
                "a violation no fix this release can take removes (or one of "
                f"{', '.join(untried)}: their fixes do not apply to "
                f"{sdk.describe(verdict.release)}, so they cannot be told by fix here)",
            )
        return FixtureVerdict("FAIL", verdict, UNEXPLAINED)
    if expects and marked_id not in verdict.faults:
        where = sdk.when_fixed()
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
        named = [f"{f} ({e})" for f, e in verdict.evidence.items() if f != UNNAMED]
        if UNNAMED not in verdict.evidence:
            return FixtureVerdict("XFAIL", verdict, "known upstream fault " + ", ".join(named))
        unnamed = "not named: every fix together removes it"  # only known or new was asked
        return FixtureVerdict(
            "XFAIL",
            verdict,
            f"known upstream fault {', '.join(named)}, and another, {unnamed}"
            if named
            else f"a known upstream fault, {unnamed}",
        )
    return FixtureVerdict("ok", verdict)
