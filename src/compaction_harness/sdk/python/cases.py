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

This module imports every runner (ADK's ``Runner`` driver only for a script
that names it), so each kind's runner is registered for re-runs
(:mod:`.reruns`): a caller outside a driver's run classifies a case by fix
here (:func:`by_fix`, :func:`run_with_fixes`: those of :mod:`.triage`, once
the case's runner is loaded).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ...spec.invariants import Violation
from ...spec.scripts import Script
from . import triage
from .driver import run_script
from .metamorphic import MetamorphicCase, run_metamorphic_case
from .pipeline import PipelineCase, run_pipeline_case
from .unit import TokenCase, UnitCase, UnitOutcome, run_token_case, run_unit_case

__all__ = ["CASE_KINDS", "by_fix", "case_kind", "run_case", "run_with_fixes"]

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


def run_case(case: Any, *, release: str | None = None) -> UnitOutcome:
    """Run any case against the installed release and check its invariants.

    ``release``: for a pipeline case, the release whose known upstream faults
    the run goes on past (see :func:`~compaction_harness.sdk.python.pipeline.run_pipeline_case`);
    other kinds return every violation and ignore it.
    """
    kind = case_kind(case)
    if kind == "script" and case.config.driver == "runner":
        from .adk_runner import run_script_outcome

        return run_script_outcome(case, release=release)
    if kind in ("pipeline", "script"):
        return CASE_KINDS[kind][1](case, release=release)
    return CASE_KINDS[kind][1](case)


def _load_runner(case: Any) -> None:
    """Import the runner of ``case``'s kind, which registers it: ADK's
    ``Runner`` driver, which this module imports only for a script that
    names it (every other runner is imported above)."""
    if isinstance(case, Script) and case.config.driver == "runner":
        from . import adk_runner  # noqa: F401  (registers the runner driver)


def run_with_fixes(case: Any, names: Sequence[str]) -> list[Violation]:
    """:func:`compaction_harness.sdk.python.triage.run_with_fixes`, its runner loaded."""
    _load_runner(case)
    return triage.run_with_fixes(case, names)


def by_fix(
    case: Any, violations: Iterable[Violation]
) -> tuple[list[Violation], list[tuple[Violation, str]]]:
    """:func:`compaction_harness.sdk.python.triage.by_fix`, its runner loaded."""
    _load_runner(case)
    return triage.by_fix(case, violations)
