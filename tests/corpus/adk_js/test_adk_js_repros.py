"""The ADK-JS fixtures of tests/repros/ replayed on ADK-JS (``@google/adk``).

The JS twin of ``tests/corpus/test_repros.py``: the same judge, on ADK-JS;
a fixture marked with a known fault that no longer shows fails (strict
XPASS). Needs Node and the package (``make js-env``): collected by
``make test SDK=js``. (Moved out of ``tests/slow/adk_js/test_adk_js.py``,
which keeps the check that each known fault's minimal script is a fixture.)
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from compaction_harness.sdk.js import node
from compaction_harness.sdk.python.unit import InvariantViolation
from compaction_harness.store.fixtures import load_fixture, unjudged_advice
from compaction_harness.surfaces.verdicts import judge_fixture

REPROS = Path(__file__).parents[2] / "repros"
JS_FIXTURES = sorted(REPROS.glob("*-adk-js-*.json"))


@pytest.mark.parametrize("path", [pytest.param(p, id=p.stem) for p in JS_FIXTURES])
def test_adk_js_fixture_holds(path: Path) -> None:
    # The same judge as test_repros.py, on ADK-JS; a fixture
    # marked with a known fault that no longer shows fails (strict XPASS).
    # Under HARNESS_FIXES (make test SDK=js FIXES=...) with ADK-JS's fixes.
    from compaction_harness.surfaces import switch

    fixture = load_fixture(path)
    judged = judge_fixture(fixture)
    if node.active_fixes():
        judged = switch.judged_with_fixes(fixture, judged, ())
        unmet = switch.gate_expectation(fixture, judged, (), os.environ.get(switch.ENV))
        if unmet:
            pytest.fail(unmet, pytrace=False)
        if judged.label == "ok":
            return
    if judged.label == "FAIL":
        failure = InvariantViolation(fixture.case, judged.verdict.outcome)
        failure.add_note(unjudged_advice(path))
        raise failure
    if judged.label == "XPASS":
        pytest.fail(f"XPASS(strict): {judged.reason}", pytrace=False)
    assert judged.label == "XFAIL"
    if not node.active_fixes():
        assert fixture.known_fault in judged.verdict.faults
    pytest.xfail(judged.reason)
