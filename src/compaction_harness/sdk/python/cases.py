"""Every kind of case the harness runs, by fixture ``kind``.

=========== ================================================= ==================
kind        case                                              invariants
=========== ================================================= ==================
unit        :class:`~.unit.UnitCase`                          U1-U4
token       :class:`~.unit.TokenCase`                         U5
metamorphic :class:`~.metamorphic.MetamorphicCase`            U6
pipeline    :class:`~compaction_harness.spec.pipeline_case.   P1-P7 (a recorded
            PipelineCase`                                     session, replayed)
script      :class:`~compaction_harness.spec.scripts.Script`  P0-P7
=========== ================================================= ==================

A script runs on the driver its configuration names (``config.driver``):
the emulating driver, or ADK's own ``Runner``
(:func:`compaction_harness.sdk.python.adk_runner.run_script_outcome`).

Every runner runs and records, nothing classified (a pipeline or script
run: every violation, operation by operation); classification by fix comes
after the run (:func:`judge`, :func:`by_fix`, :func:`run_with_fixes`: those
of :mod:`.triage`, which re-runs a case through its kind's runner,
:mod:`.reruns`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...spec.scripts import Script
from .driver import run_script
from .metamorphic import MetamorphicCase, run_metamorphic_case
from .pipeline import PipelineCase, run_pipeline_case
from .triage import by_fix, judge, run_with_fixes
from .unit import TokenCase, UnitCase, UnitOutcome, run_token_case, run_unit_case

__all__ = ["CASE_KINDS", "by_fix", "case_kind", "judge", "run_case", "run_with_fixes"]

#: Fixture ``kind`` -> (case type, runner).
CASE_KINDS: dict[str, tuple[type, Callable[..., UnitOutcome]]] = {
    "unit": (UnitCase, run_unit_case),
    "token": (TokenCase, run_token_case),
    "metamorphic": (MetamorphicCase, run_metamorphic_case),
    "pipeline": (PipelineCase, run_pipeline_case),
    "script": (Script, run_script),
}


def case_kind(case: Any) -> str:
    """The fixture ``kind`` of a case object."""
    return next(kind for kind, (cls, _) in CASE_KINDS.items() if isinstance(case, cls))


def run_case(case: Any) -> UnitOutcome:
    """Run any case against the installed release and check its invariants:
    every violation, nothing classified (:func:`judge` classifies the
    outcome after the run). A script runs on the driver its configuration
    names."""
    kind = case_kind(case)
    if kind == "script" and case.config.driver == "runner":
        from .adk_runner import run_script_outcome

        return run_script_outcome(case)
    return CASE_KINDS[kind][1](case)
