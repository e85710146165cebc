"""Each kind of google-adk case run again without triage: a registry its runners fill.

Classification by fix (:mod:`compaction_harness.sdk.python.triage`) re-runs the case it
classifies once per set of fixes, and the known faults' recognisers
(:mod:`compaction_harness.sdk.python.known_faults`) replay it under a counterfactual.
The modules that run cases triage their own runs through that
classification, so it cannot import them: each registers here, when it is
imported, how a case of its kind runs with every violation kept and nothing
classified (:mod:`~compaction_harness.sdk.python.unit`: unit and token cases;
:mod:`~compaction_harness.sdk.python.metamorphic`; :mod:`~compaction_harness.sdk.python.pipeline`:
recorded sessions; :mod:`~compaction_harness.sdk.python.driver`: scripts on the
emulating driver; :mod:`~compaction_harness.sdk.python.adk_runner`: scripts on ADK's
``Runner``). A case reaches a classification only once a module of its kind
has run it, so its runner is registered by then; :func:`rerun` raises
``LookupError`` naming the kind otherwise.

Imports only the script format.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...spec.scripts import Script

__all__ = ["register", "rerun"]

#: (case type, a script's driver or None) -> run the case without triage.
_RUNNERS: dict[tuple[type, str | None], Callable[[Any], Any]] = {}


def register(kind: type, run: Callable[[Any], Any], *, driver: str | None = None) -> None:
    """``run(case)`` runs a case of type ``kind`` once, every violation kept and
    nothing classified, and returns its outcome; ``driver``: for a
    :class:`~compaction_harness.spec.scripts.Script`, the ``config.driver`` it runs."""
    _RUNNERS[(kind, driver)] = run


def rerun(case: Any, *, driver: str | None = None) -> Any:
    """``case`` run once more without triage by its kind's runner: a script's
    by the runner of ``driver`` (default: the script's own ``config.driver``)."""
    if not isinstance(case, Script):
        driver = None
    elif driver is None:
        driver = case.config.driver
    for (kind, runs), run in _RUNNERS.items():
        if isinstance(case, kind) and runs == driver:
            return run(case)
    what = type(case).__name__ + (f" on driver {driver!r}" if driver else "")
    raise LookupError(f"no runner is registered for a {what}")
