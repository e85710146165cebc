"""ADK for TypeScript's driver behind the driver protocol (:mod:`compaction_harness.sdk.protocol`).

``adk-js`` runs a :class:`~.case.JsCase` (a script and the ADK-JS
compactor it runs with) through the Node driver on the installed
``@google/adk``, with ADK-JS's fixes (:mod:`.js_fixes`) applied to a copy
of the package, and checks the invariants that apply to the compactor over
the whole run (:func:`.checks.check_run`).
"""

from __future__ import annotations

from typing import Any

from ..protocol import CannotRun, Trace
from . import js_fixes
from .case import JsCase, NotApplicable
from .checks import check_run
from .node import package_version
from .run import representable, run_script

__all__ = ["AdkJsDriver"]


class AdkJsDriver:
    """ADK-JS through Node (``sdks/adk-js/driver.mjs``)."""

    name = "adk-js"
    sdk = "adk-js"

    def version(self) -> str:
        return package_version()

    def fixes(self) -> tuple[str, ...]:
        return tuple(js_fixes.js_fixes())

    def fixes_of(self, fault: str) -> tuple[str, ...]:
        return tuple(n for n, fix in js_fixes.js_fixes().items() if fault in fix.faults)

    def cannot_run(self, case: Any) -> str | None:
        """Why ADK-JS cannot run ``case``: not a JS case, a compactor with
        nothing to do in the session model, or an operation ADK-JS cannot
        represent (found without running Node)."""
        if not isinstance(case, JsCase):
            return f"the adk-js driver runs ADK-JS cases, not {type(case).__name__}"
        try:
            representable(case.script, case.compactor)
        except NotApplicable as exc:
            return str(exc).splitlines()[0]
        return None

    def run(self, case: Any, fixes: tuple[str, ...] = ()) -> Trace:
        why = self.cannot_run(case)
        if why is not None:
            raise CannotRun(why)
        run = run_script(case.script, case.compactor, fixes=tuple(fixes))
        violations = check_run(run)
        exception = run.exception
        return Trace(
            driver=self.name,
            sdk=self.sdk,
            version=run.version,
            fixes=tuple(n for n in js_fixes.js_fixes() if n in fixes),
            stored=run.stored,
            violations=tuple(violations),
            exception=(
                f"{exception.get('name')}: {exception.get('message', '')}".splitlines()[0]
                if exception
                else None
            ),
        )
