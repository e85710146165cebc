"""Replay every committed repro fixture against the installed google-adk.

Each fixture is judged by :func:`compaction_harness.surfaces.verdicts.judge_fixture`,
the classification `replay`, campaigns and `minimize` share:

* ``ok``: every invariant holds;
* ``XFAIL`` (an expected failure): it fails only as known upstream faults of
  the installed release, including the fault it is marked with when that
  fault applies here;
* ``FAIL``: a violation no known fault explains;
* ``XPASS``: it is marked with a known fault of this release that no longer
  shows. The gate fails then, as for a strict expected failure: the day ADK
  fixes a fault this test turns red, and its entry in `known_faults.py` can go.

ADK-JS fixtures (``sdk: "adk-js"``, named ``*-adk-js-*``) are skipped here,
with the reason: they run on Node, which plain ``make test`` does not need;
``make test SDK=js`` replays them (``tests/corpus/adk_js/``). A fixture of a
google-adk release newer than any the harness knows fails here: its verdict
would rest on known faults never checked on that release.

With ``HARNESS_FIXES`` (``make test FIXES=...``) the session runs with those
fixes applied (the plugin), and a fixture whose fault's fix is among them
must hold ("holds with fix X", ``surfaces.switch.judged_with_fixes``); under
``FIXES=all`` every fault fixture must hold, a fault whose record says why
no fix can exist excepted (``surfaces.switch.gate_expectation``). The replay
is marked ``judges_adk``: ``make test FIXES=...`` runs it and the properties.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from compaction_harness.faults.classify import asking_about
from compaction_harness.sdk.python.adk import ADK_RELEASE, NotApplicable
from compaction_harness.sdk.python.fixes import active, fixes_for
from compaction_harness.sdk.python.known_faults import fault_for
from compaction_harness.sdk.python.unit import InvariantViolation
from compaction_harness.spec.scripts import SERVER_URL_VARIABLES
from compaction_harness.store.fixtures import (
    FixtureError,
    load_fixture,
    newer_than_known,
    unjudged_advice,
)
from compaction_harness.surfaces import switch
from compaction_harness.surfaces.verdicts import judge_fixture

REPROS = Path(__file__).parents[1] / "repros"
FIXTURES = sorted(REPROS.glob("*.json"))


def _judged(fixture):
    """``judge_fixture`` as `replay` judges, asking first only what the gate
    needs of a fixture marked with a fault that one fix removes: does that
    fix remove its violations, and does every fix together remove the rest
    (``classify.asking_about``: one or two re-runs, not one per fix). Where
    that names not the marked fault, or the session runs with fixes, it is
    judged in full, so the verdict is `replay`'s."""
    own = fixes_for(fixture.known_fault) if fixture.known_fault else []
    if active() or len(own) != 1:
        return judge_fixture(fixture)
    with asking_about((own[0].name,)):
        judged = judge_fixture(fixture)
    if judged.label == "XFAIL" and fixture.known_fault in judged.verdict.faults:
        return judged
    return judge_fixture(fixture)


def test_there_are_fixtures_to_replay():
    assert FIXTURES, f"no fixtures in {REPROS}"


@pytest.mark.judges_adk
@pytest.mark.parametrize("path", [pytest.param(p, id=p.stem) for p in FIXTURES])
def test_fixture_holds(path: Path, database_server) -> None:
    try:
        fixture = load_fixture(path)
    except FixtureError as exc:
        pytest.fail(str(exc), pytrace=False)
    storage = getattr(getattr(fixture.case, "config", None), "storage", "memory")
    if storage in SERVER_URL_VARIABLES:  # kept on a PostgreSQL or MariaDB server
        database_server(storage)
    newer = newer_than_known(fixture)
    if newer:  # its verdict would rest on known faults never checked there
        pytest.fail(newer, pytrace=False)
    if fixture.is_js:
        pytest.skip("an ADK-JS fixture: replayed on @google/adk by `make test SDK=js`")
    try:
        judged = _judged(fixture)
    except NotApplicable as exc:
        pytest.skip(f"not applicable: {exc}")
    if active():  # HARNESS_FIXES: the session runs with these fixes
        judged = switch.judged_with_fixes(fixture, judged, active())
        unmet = switch.gate_expectation(fixture, judged, active(), os.environ.get(switch.ENV))
        if unmet:
            pytest.fail(unmet, pytrace=False)
    if judged.label == "FAIL":
        failure = InvariantViolation(fixture.case, judged.verdict.outcome)
        failure.add_note(unjudged_advice(path))
        raise failure
    if judged.label == "XPASS":
        pytest.fail(f"XPASS(strict): {judged.reason}", pytrace=False)
    if (
        not active()
        and fixture.known_fault
        and fault_for(fixture.known_fault).applies_to(ADK_RELEASE)
    ):
        # Recognised by its fault: known, nothing new, the fault it is marked
        # with among those shown (once a second replay in test_known_faults.py).
        assert judged.label == "XFAIL" and fixture.known_fault in judged.verdict.faults, judged
    if judged.label == "XFAIL":
        pytest.xfail(judged.reason)
