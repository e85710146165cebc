"""google-adk's drivers behind the driver protocol (:mod:`compaction_harness.sdk.protocol`).

``emulated`` appends events as ADK's runtime does (:func:`.driver.run_script`)
and ``runner`` runs ADK's own ``Runner`` with a scripted model
(:func:`.adk_runner.run_script_outcome`), both on the installed release,
with google-adk's fixes (:mod:`.fixes`) applied for the run. A run runs
and records: its trace holds every violation the checkers found, in
operation order (a run stops only where ADK raised, P0), nothing
classified (classification by fix is the caller's: ``faults/``,
:mod:`.triage`, which re-run a case through these drivers' runners).
"""

from __future__ import annotations

from typing import Any

from ...spec.model import Session
from ...spec.scripts import Script
from ...spec.tool_runs import ToolRun
from ..protocol import CannotRun, Trace
from .adk import ADK_RELEASE, NotApplicable
from .fixes import FIXES, applied, fixes_for, unavailable
from .refusals import refusal

__all__ = ["EmulatedDriver", "RunnerDriver"]


class _GoogleAdkDriver:
    name = ""
    sdk = "google-adk"

    def version(self) -> str:
        return ADK_RELEASE

    def fixes(self) -> tuple[str, ...]:
        """The registered fixes the installed release can take."""
        return tuple(name for name in FIXES if unavailable(name) is None)

    def fixes_of(self, fault: str) -> tuple[str, ...]:
        return tuple(f.name for f in fixes_for(fault) if unavailable(f.name) is None)

    def cannot_run(self, case: Any) -> str | None:
        """Only scripts run here (a recorded session or a unit case is
        replayed, not driven); on a release that lacks what the script
        needs, the run says so (:class:`CannotRun`)."""
        if not isinstance(case, Script):
            return f"the {self.name} driver runs scripts, not {type(case).__name__}"
        return None

    def run(self, case: Any, fixes: tuple[str, ...] = ()) -> Trace:
        why = self.cannot_run(case)
        if why is not None:
            raise CannotRun(why)
        try:
            with applied(fixes):
                outcome = self._outcome(case)
        except NotApplicable as exc:
            raise CannotRun(str(exc).splitlines()[0]) from exc
        stored = Session.from_json(outcome.observed.get("session", {"steps": []}))
        runs = outcome.observed.get("tool_runs")
        crashed = [v for v in outcome.violations if v.invariant == "P0"]
        return Trace(
            driver=self.name,
            sdk=self.sdk,
            version=self.version(),
            fixes=tuple(n for n in FIXES if n in fixes),
            stored=stored,
            violations=tuple(outcome.violations),
            exception=crashed[0].message.splitlines()[0] if crashed else None,
            tool_runs=None if runs is None else tuple(ToolRun.from_json(r) for r in runs),
        )

    def _outcome(self, script: Script):  # pragma: no cover - overridden
        raise NotImplementedError


class EmulatedDriver(_GoogleAdkDriver):
    """The emulating driver (fast; writes what clients, hosts and old sessions write too)."""

    name = "emulated"

    def cannot_run(self, case: Any) -> str | None:
        """As every google-adk driver, and never a script on a user's app's
        shape (``config.app``: only the ``Runner`` builds the user's app), nor
        one that reads part of the session (``config.recent_events``)."""
        if isinstance(case, Script):
            refused = refusal(case.config)
            if refused is not None:
                return refused
        return super().cannot_run(case)

    def _outcome(self, script: Script):
        from .driver import run_script

        return run_script(script)


class RunnerDriver(_GoogleAdkDriver):
    """ADK's own ``Runner`` with a scripted model: the ground truth."""

    name = "runner"

    def _outcome(self, script: Script):
        from .adk_runner import run_script_outcome

        return run_script_outcome(script)
