"""Every registered driver keeps the driver protocol (``sdk/protocol.py``):
the conformance suite (``sdk/conformance.py``) on each, over cases from the
fixture corpus (scripts each driver runs, and cases it must refuse), with
one fix toggled per driver on a fixture of that fix's fault; and the suite
itself fails on drivers that break each rule (small broken stand-ins)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from compaction_harness.sdk import conformance
from compaction_harness.sdk.conformance import ConformanceError, run_conformance_test
from compaction_harness.sdk.protocol import CannotRun, Trace, driver_named, drivers
from compaction_harness.spec.invariants import Violation
from compaction_harness.spec.model import Session
from compaction_harness.store.fixtures import load_fixture

REPROS = Path(__file__).parents[1] / "repros"


def _fixture(name: str):
    return load_fixture(REPROS / name)


#: Per driver: fixtures whose case it runs (its own kind) and fixtures of
#: another kind it must refuse, and (fixture, fix) to toggle.
CASES = {
    "emulated": (
        ["P3-2.13.0-5b7603de3944ebea.json", "P4-2.13.0-a18174061704bbf3.json"],
        ["P4-adk-js-2.0.0-e24187cf9b6250bb.json"],
        ("P4-2.13.0-a18174061704bbf3.json", "pending-call-left-out-beside-answered-siblings"),
    ),
    "runner": (
        ["P3-2.13.0-cfcb42a3a1fd06bb.json"],
        ["P4-adk-js-2.0.0-e24187cf9b6250bb.json"],
        ("P3-2.13.0-cfcb42a3a1fd06bb.json", "compaction-summarised-around-a-waiting-call"),
    ),
}
#: ADK-JS's driver needs Node and the npm package: its run is in
#: tests/conformance/adk_js/test_driver_conformance_js.py, with the ADK-JS gate
#: (``make test SDK=js``).
JS_CASES = (
    ["P4-adk-js-2.0.0-e24187cf9b6250bb.json", "P2-adk-js-2.0.0-93ecd1924cb47668.json"],
    ["P3-2.13.0-5b7603de3944ebea.json"],
    ("P4-adk-js-2.0.0-4989ecf73c6ca939.json", "retention-zero-retains-nothing"),
)


def _case(name: str):
    """The case a fixture records (a Script for google-adk's, a JsCase for ADK-JS's)."""
    return _fixture(name).case


def check_driver(name: str, runs: list[str], refused: list[str], toggle: tuple[str, str]) -> None:
    """The conformance suite on driver ``name``: ``runs`` are fixtures whose
    case it runs, ``refused`` fixtures whose case it must refuse, ``toggle``
    a fixture and the fix of its fault."""
    driver = driver_named(name)
    toggled, fix = toggle
    # the fix toggled is the one the driver names for the fixture's fault
    assert fix in driver.fixes_of(_fixture(toggled).known_fault)
    cases = [(f, _case(f)) for f in runs + refused]
    assert [f for f, c in cases if driver.cannot_run(c) is not None] == refused
    made = run_conformance_test(driver, cases, [(toggled, _case(toggled), fix)])
    assert made == 2 * len(runs) + 3


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_google_adk_driver_passes_the_conformance_suite(name: str) -> None:
    check_driver(name, *CASES[name])


def test_every_registered_driver_is_checked() -> None:
    assert set(drivers()) == {*CASES, "adk-js"}


def test_the_registry_names_each_driver_once_and_refuses_an_unknown_one() -> None:
    assert sorted(drivers()) == ["adk-js", "emulated", "runner"]
    with pytest.raises(KeyError, match="no driver 'go'; registered: adk-js, emulated, runner"):
        driver_named("go")


# -- the suite fires on drivers that break the protocol --------------------------
class _Stand:
    """A tiny driver whose behaviour each test breaks in one way."""

    name = "stand"
    sdk = "none"

    def __init__(self, **broken):
        self.broken = broken
        self.count = 0
        self.applied: tuple[str, ...] = ()

    def version(self) -> str:
        return "0"

    def fixes(self) -> tuple[str, ...]:
        return ("f",)

    def fixes_of(self, fault: str) -> tuple[str, ...]:
        return ("f",)

    def cannot_run(self, case):
        return "no such case" if case == "refused" else None

    def run(self, case, fixes=()):
        if case == "refused" and not self.broken.get("runs_refused"):
            raise CannotRun("no such case")
        if self.broken.get("sticky"):
            self.applied = self.applied or tuple(fixes)
        else:
            self.applied = tuple(fixes)
        self.count += 1
        steps = Session(())
        message = f"run {self.count}" if self.broken.get("nondeterministic") else "same"
        found = (
            ()
            if "f" in self.applied and not self.broken.get("fix_ignored")
            else (Violation("X9" if self.broken.get("unknown_invariant") else "P2", message),)
        )
        return Trace("stand", "none", "0", self.applied, steps, found, None)


@pytest.mark.parametrize(
    ("broken", "rule"),
    [
        ({}, None),
        ({"runs_refused": True}, "but it ran"),
        ({"nondeterministic": True}, "determinism"),
        ({"unknown_invariant": True}, "unknown invariant 'X9'"),
        ({"fix_ignored": True}, "the fix was not applied"),
        ({"sticky": True}, "the fix stayed applied"),
    ],
)
def test_the_suite_fails_a_driver_that_breaks_a_rule(broken: dict, rule: str | None) -> None:
    stand = _Stand(**broken)
    cases = [("ok", "case"), ("refused", "refused")]
    if rule is None:
        assert run_conformance_test(stand, cases, [("toggle", "case", "f")]) == 5
        return
    with pytest.raises(ConformanceError, match=rule):
        run_conformance_test(stand, cases, [("toggle", "case", "f")])


def test_a_trace_with_positions_outside_the_session_is_not_well_formed() -> None:
    trace = Trace(
        "stand", "none", "0", (), Session(()), (Violation("P4", "m", positions=(3,)),), None
    )
    with pytest.raises(ConformanceError, match="positions"):
        conformance._well_formed(_Stand(), "x", trace, ())
    fine = dataclasses.replace(trace, violations=())
    conformance._well_formed(_Stand(), "x", fine, ())
