"""The driver protocol: what every SDK's driver offers, and the registry of drivers.

A *driver* runs a case of the specification on one SDK and returns a
:class:`Trace`. The case is what the driver's fixtures record as their case
(a :class:`~compaction_harness.spec.scripts.Script` for google-adk's
drivers; an ``adk_js.JsCase``, a script with the ADK-JS compactor it runs
with, for ADK-JS). Every driver:

* has a ``name`` (the registry's key and a fixture's ``driver``), the SDK it
  drives (``sdk``: ``"google-adk"`` or ``"adk-js"``) and the release it
  drives (:meth:`Driver.version`);
* says whether it can run a case, and why not (:meth:`Driver.cannot_run`: a
  reason in one line, or None), and refuses exactly those cases
  (:meth:`Driver.run` raises :class:`CannotRun` with that reason);
* runs a case with a set of its SDK's fixes (:meth:`Driver.fixes` names
  them: the patches of the SDK's own code that follow the specification,
  one per known fault, ``faults/``), and returns the same trace for the
  same case and fixes on every run.

:func:`drivers` is the registry: name -> driver, each SDK's drivers imported
only when asked for (google-adk's import ``google.adk``; ADK-JS's start
Node when they run). :mod:`.conformance` checks that a driver keeps this
protocol, after Hypothesis's ``run_conformance_test`` for backends: a
driver for another SDK (ADK for Go, say) registers here and gets the suite.

This module imports only :mod:`compaction_harness.spec`; the registry
imports the drivers' modules when called.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ..spec.invariants import Violation
from ..spec.model import Session

__all__ = ["CannotRun", "Driver", "Trace", "driver_named", "drivers"]


class CannotRun(Exception):
    """A driver cannot run this case; the message says why, in one line
    (what the SDK or the driver cannot represent)."""


@dataclass(frozen=True)
class Trace:
    """What one run of a case did, as every driver reports it.

    Attributes:
        driver, sdk, version: who ran it (:class:`Driver`'s attributes).
        fixes: the fixes the SDK ran with, in the driver's order.
        stored: the session as the SDK stored it when the run ended
            (summaries included), in the session model.
        violations: what the invariants' checkers found over the run, in the
            order found (a google-adk driver stops at the first operation
            that breaks an invariant; ADK-JS's checks the whole run).
        exception: the SDK's exception (P0) in one line, or None.
    """

    driver: str
    sdk: str
    version: str
    fixes: tuple[str, ...]
    stored: Session
    violations: tuple[Violation, ...]
    exception: str | None

    def key(self) -> tuple[Any, ...]:
        """What two runs of one case must share (:mod:`.conformance`): the
        stored session and each violation's invariant, message and
        positions."""
        return (
            self.driver,
            self.fixes,
            self.stored.to_json(),
            tuple((v.invariant, v.message, tuple(v.positions)) for v in self.violations),
            self.exception,
        )


@runtime_checkable
class Driver(Protocol):
    """One SDK's driver (see the module's docstring)."""

    name: str
    sdk: str

    def version(self) -> str:
        """The SDK release this driver runs (``"2.13.0"``)."""
        ...

    def fixes(self) -> tuple[str, ...]:
        """The fixes this driver can apply, by name (``FIXES=`` names)."""
        ...

    def fixes_of(self, fault: str) -> tuple[str, ...]:
        """The fixes (of :meth:`fixes`) that remove known fault ``fault``."""
        ...

    def cannot_run(self, case: Any) -> str | None:
        """Why this driver cannot run ``case`` (one line), or None."""
        ...

    def run(self, case: Any, fixes: tuple[str, ...] = ()) -> Trace:
        """Run ``case`` with ``fixes`` applied. Raises :class:`CannotRun`
        exactly when :meth:`cannot_run` gives a reason."""
        ...


#: name -> "module:attribute" of a zero-argument factory of the driver.
_REGISTRY = {
    "emulated": "compaction_harness.sdk.python.drivers:EmulatedDriver",
    "runner": "compaction_harness.sdk.python.drivers:RunnerDriver",
    "adk-js": "compaction_harness.sdk.js.drivers:AdkJsDriver",
}


def drivers() -> dict[str, str]:
    """The registered drivers: name -> where its factory lives
    (``module:attribute``); :func:`driver_named` makes one."""
    return dict(_REGISTRY)


def driver_named(name: str) -> Driver:
    """The driver registered as ``name``. Raises ``KeyError`` (one line
    naming the registered ones) for an unknown name."""
    if name not in _REGISTRY:
        raise KeyError(f"no driver {name!r}; registered: {', '.join(sorted(_REGISTRY))}")
    module, attribute = _REGISTRY[name].split(":")
    made = getattr(importlib.import_module(module), attribute)()
    if not isinstance(made, Driver):
        raise TypeError(f"{_REGISTRY[name]} does not make a Driver")
    return made
