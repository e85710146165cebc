"""Replay every committed repro fixture against the installed google-adk.

A fixture holds when every invariant holds on its case. A fixture marked with
a `known_fault` that applies to the installed release is a *strict* expected
failure: it must still fail, so the day ADK fixes the fault this test turns
red and the entry in `known_faults.py` can go.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from compaction_harness.adk import ADK_RELEASE, NotApplicable
from compaction_harness.cases import run_case
from compaction_harness.fixtures import FixtureError, load_fixture
from compaction_harness.known_faults import fault_for
from compaction_harness.unit import InvariantViolation

REPROS = Path(__file__).parent / "repros"
FIXTURES = sorted(REPROS.glob("*.json"))


def test_there_are_fixtures_to_replay():
    assert FIXTURES, f"no fixtures in {REPROS}"


def _marks(path: Path):
    try:
        fixture = load_fixture(path)
    except FixtureError:
        return []  # the test itself reports the problem
    fault = fault_for(fixture.known_fault) if fixture.known_fault else None
    if fault and fault.applies_to(ADK_RELEASE):
        return [pytest.mark.xfail(raises=InvariantViolation, strict=True, reason=fault.title)]
    return []


@pytest.mark.parametrize("path", [pytest.param(p, id=p.stem, marks=_marks(p)) for p in FIXTURES])
def test_fixture_holds(path: Path) -> None:
    try:
        fixture = load_fixture(path)
    except FixtureError as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        outcome = run_case(fixture.case)
    except NotApplicable as exc:
        pytest.skip(f"not applicable: {exc}")
    if outcome.violations:
        raise InvariantViolation(fixture.case, outcome)
