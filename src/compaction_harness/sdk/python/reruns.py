"""How classification re-runs each kind of google-adk case: the runners, by case kind.

Classification by fix (:mod:`compaction_harness.sdk.python.triage`) re-runs the case it
classifies once per set of fixes, and the known faults' recognisers
(:mod:`compaction_harness.sdk.python.known_faults`) replay it under a counterfactual.
Both find here how a case of each kind runs: once, every violation kept and
nothing classified, as every runner runs (:mod:`~compaction_harness.sdk.python.unit`:
unit and token cases; :mod:`~compaction_harness.sdk.python.metamorphic`;
:mod:`~compaction_harness.sdk.python.pipeline`: recorded sessions;
:mod:`~compaction_harness.sdk.python.driver`: scripts on the emulating driver;
:mod:`~compaction_harness.sdk.python.adk_runner`: scripts on ADK's ``Runner``).
The runners are named here, on the classification's side, and imported
when a case of their kind is first re-run: no runner imports this module or
the classification (the drivers run and record only; ``tests/test_project.py``
checks). :func:`register` adds or replaces one (a test's stand-in).

Imports the case types only.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from ...spec.pipeline_case import PipelineCase
from ...spec.scripts import Script
from .metamorphic import MetamorphicCase
from .unit import TokenCase, UnitCase

__all__ = ["register", "rerun"]

_HERE = __name__.rsplit(".", 1)[0]

#: (case type, a script's driver or None) -> run the case once, nothing
#: classified: a callable, or the "module:attribute" of one (imported when used).
_RUNNERS: dict[tuple[type, str | None], Callable[[Any], Any] | str] = {
    (UnitCase, None): f"{_HERE}.unit:run_unit_case",
    (TokenCase, None): f"{_HERE}.unit:run_token_case",
    (MetamorphicCase, None): f"{_HERE}.metamorphic:run_metamorphic_case",
    (PipelineCase, None): f"{_HERE}.pipeline:run_pipeline_case",
    (Script, "emulated"): f"{_HERE}.driver:run_script",
    (Script, "runner"): f"{_HERE}.adk_runner:run_script_outcome",
}


def register(kind: type, run: Callable[[Any], Any], *, driver: str | None = None) -> None:
    """``run(case)`` runs a case of type ``kind`` once, every violation kept and
    nothing classified, and returns its outcome; ``driver``: for a
    :class:`~compaction_harness.spec.scripts.Script`, the ``config.driver`` it runs."""
    _RUNNERS[(kind, driver)] = run


def _runner(target: Callable[[Any], Any] | str) -> Callable[[Any], Any]:
    if not isinstance(target, str):
        return target
    module, attribute = target.split(":")
    return getattr(importlib.import_module(module), attribute)


def rerun(case: Any, *, driver: str | None = None) -> Any:
    """``case`` run once more, nothing classified, by its kind's runner: a
    script's by the runner of ``driver`` (default: the script's own
    ``config.driver``). Raises ``LookupError`` for a kind no runner runs."""
    if not isinstance(case, Script):
        driver = None
    elif driver is None:
        driver = case.config.driver
    for (kind, runs), run in _RUNNERS.items():
        if isinstance(case, kind) and runs == driver:
            return _runner(run)(case)
    what = type(case).__name__ + (f" on driver {driver!r}" if driver else "")
    raise LookupError(f"no runner is registered for a {what}")
