"""A stand-in third SDK: it stores a script's events and never compacts.

What another SDK needs to be judged by the harness: a case type, a driver
that keeps the driver protocol (``sdk/protocol.py``), and an entry of the
registry of SDKs (here a :class:`~compaction_harness.sdk.generic.DriverSdk`)
naming its fixtures' fields and its known faults. It is registered by one
line (``protocol.register_sdk("stand-in", "standin_sdk:StandIn")``, or
``HARNESS_SDKS=stand-in=standin_sdk:StandIn`` for a process), and verdicts,
the store, the command line and the plugin then read, write, replay and
classify its fixtures without naming it (``tests/conformance/test_third_sdk.py``).

Its one known fault: it never compacts, so a script whose configuration
names a trigger grows without bound (P3). Its one fix, ``compacts``, makes
it store a summary of what came before once the trigger would fire.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from compaction_harness.sdk.generic import DriverSdk
from compaction_harness.sdk.protocol import CannotRun, Trace
from compaction_harness.spec.invariants import Violation
from compaction_harness.spec.model import Compaction, Session, Step
from compaction_harness.spec.scripts import Script

FAULT = "stand-in-never-compacts"
FIX = "compacts"
#: How many live events a trigger lets pile up before the stand-in must compact.
BOUND = 3


@dataclass(frozen=True)
class StandInCase:
    """A script, run on the stand-in."""

    script: Script
    observer: ClassVar[str] = "stand-in"

    def call_json(self) -> dict[str, Any]:
        return self.script.call_json()

    def render(self) -> str:
        return self.script.render()


class StandInDriver:
    name = "stand-in"
    sdk = "stand-in"

    def version(self) -> str:
        return "0.1.0"

    def fixes(self) -> tuple[str, ...]:
        return (FIX,)

    def fixes_of(self, fault: str) -> tuple[str, ...]:
        return (FIX,) if fault == FAULT else ()

    def cannot_run(self, case: Any) -> str | None:
        if not isinstance(case, StandInCase):
            return f"the stand-in runs stand-in cases, not {type(case).__name__}"
        return None

    def run(self, case: Any, fixes: tuple[str, ...] = ()) -> Trace:
        why = self.cannot_run(case)
        if why is not None:
            raise CannotRun(why)
        steps, invocation = [], 0
        for index, op in enumerate(case.script.operations):
            author = "user" if op.op == "open" else "agent"
            steps.append(Step(f"i{invocation}", author, float(index), text=f"op {index} {op.op}"))
            invocation += op.op == "end"
        config = case.script.config
        trigger = config.compaction_interval is not None or config.token_threshold is not None
        violations = []
        if trigger and len(steps) > BOUND:
            if FIX in fixes:  # one summary of everything but the newest event
                summary = Compaction(0.0, steps[-2].timestamp, "summary of the stand-in")
                steps.append(Step("", "agent", steps[-1].timestamp, compaction=summary))
            else:
                violations.append(
                    Violation(
                        "P3",
                        f"the stand-in never compacts: {len(steps)} live events outside any "
                        "summary while the trigger keeps firing",
                        positions=(len(steps) - 1,),
                    )
                )
        return Trace(
            driver=self.name,
            sdk=self.sdk,
            version=self.version(),
            fixes=tuple(f for f in self.fixes() if f in fixes),
            stored=Session(tuple(steps)),
            violations=tuple(violations),
            exception=None,
        )


class StandIn(DriverSdk):
    """The stand-in as the registry of SDKs offers it."""

    name = "stand-in"
    title = "stand-in"
    package = "stand-in-sdk"
    file_tag = "stand-in-"
    fault_registry = "standin_sdk.py"
    faults = {FAULT: ("the stand-in never compacts", "the prompt grows until it no longer fits")}
    driver_name = "stand-in"
    drivers = {"stand-in": "standin_sdk:StandInDriver"}
    case_type = StandInCase
