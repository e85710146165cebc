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

:func:`sdks` is the second registry: a fixture's ``sdk`` field -> an
:class:`Sdk`, what the store, the verdicts, the command line and the pytest
plugin ask instead of branching on the SDK: how a fixture of that SDK is
read and written (its fields, kinds and case type), how it names its known
faults, how a case of it is run and classified, how its releases are named,
which test files are its own. :class:`~.generic.DriverSdk` builds one from a
driver; google-adk's (``sdk.python.entry``) and ADK-JS's (``sdk.js.entry``)
are registered here. Another SDK registers with one line, in the package
(:data:`_SDKS`), from a test (:func:`register_sdk`), or for a process such
as ``python -m compaction_harness replay`` through the environment
(``HARNESS_SDKS=name=module:attribute``, comma-separated): the module is
the user's, named by the user; nothing in a fixture names a module.

This module imports only :mod:`compaction_harness.spec`; the registries
import the drivers' and SDKs' modules when called.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ..spec.invariants import Violation
from ..spec.model import Session
from ..spec.tool_runs import ToolRun

__all__ = [
    "ENV",
    "CannotRun",
    "Checked",
    "Driver",
    "FixDoesNotApply",
    "NotApplicable",
    "RegistryError",
    "Sdk",
    "Trace",
    "Unavailable",
    "all_sdks",
    "driver_named",
    "drivers",
    "patch_binary",
    "register_driver",
    "register_sdk",
    "sdk_named",
    "sdk_of_case",
    "sdk_of_test_files",
    "sdks",
]


class CannotRun(Exception):
    """A driver cannot run this case; the message says why, in one line
    (what the SDK or the driver cannot represent)."""


class NotApplicable(Exception):
    """The installed release of an SDK lacks what a case needs (a helper, a
    representable shape); ``str()`` says what. google-adk's adapter raises
    it as ``sdk.python.adk.NotApplicable`` (this class)."""


class FixDoesNotApply(ValueError):
    """A fix of an SDK cannot be applied to the installed release (its diff
    does not apply, alone or after the others): ``str()`` names the fix, in
    one line. ADK-JS's ``JsFixError`` is one."""


class RegistryError(ValueError):
    """``HARNESS_SDKS`` names an SDK that cannot be registered (malformed, or
    its module cannot be imported): ``str()`` says which, in one line."""


class Unavailable(Exception):
    """The SDK a case runs on is not installed here (no Node, no package):
    ``str()`` says what, in one line; :attr:`Sdk.unavailable_hint` says how
    to install it."""


def patch_binary(found: str | None, needed_for: str, error: Callable[[str], Exception]) -> str:
    """GNU patch, which both SDKs' fixes (diffs) are applied with: ``found``
    (the caller's ``shutil.which("patch")``; tests take it away there), or,
    when there is none, raises ``error`` of one line: ``needed_for`` needs it."""
    if found is None:
        raise error(f"{needed_for} needs GNU patch on PATH (as root: apt-get install patch)")
    return found


@dataclass(frozen=True)
class Trace:
    """What one run of a case did, as every driver reports it.

    Attributes:
        driver, sdk, version: who ran it (:class:`Driver`'s attributes).
        fixes: the fixes the SDK ran with, in the driver's order.
        stored: the session as the SDK stored it when the run ended
            (summaries included), in the session model.
        violations: what the invariants' checkers found over the run, in the
            order found, nothing classified (a driver runs and records;
            classification by fix re-runs the case after the run). A run
            may stop where going on means nothing (google-adk's drivers stop
            where the SDK raised).
        exception: the SDK's exception (P0) in one line, or None.
        tool_runs: every run of a tool's body, in the order the runs started
            (:class:`~compaction_harness.spec.tool_runs.ToolRun`: the call's
            id and event, the tool, how the run ended), what P8 reads; None
            from a driver that runs no tool body (an emulating one).
    """

    driver: str
    sdk: str
    version: str
    fixes: tuple[str, ...]
    stored: Session
    violations: tuple[Violation, ...]
    exception: str | None
    tool_runs: tuple[ToolRun, ...] | None = None

    def key(self) -> tuple[Any, ...]:
        """What two runs of one case must share (:mod:`.conformance`): the
        stored session, each violation's invariant, message and positions,
        and the tool runs."""
        return (
            self.driver,
            self.fixes,
            self.stored.to_json(),
            tuple((v.invariant, v.message, tuple(v.positions)) for v in self.violations),
            self.exception,
            None if self.tool_runs is None else tuple(r.to_json().items() for r in self.tool_runs),
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


@dataclass(frozen=True)
class Checked:
    """A case run on an SDK and classified (:meth:`Sdk.check`).

    Attributes:
        release: the SDK release it ran on.
        new: violations no known fault explains.
        known: (violation, known fault id) for the explained ones.
        outcome: the run's outcome: ``violations`` (the new ones),
            ``expected``, ``observed``, ``not_applicable``, ``known``
            (``sdk.python.unit.UnitOutcome``'s fields).
    """

    release: str
    new: tuple[Violation, ...]
    known: tuple[tuple[Violation, str], ...]
    outcome: Any


@runtime_checkable
class Sdk(Protocol):
    """What the store and the surfaces ask of one SDK instead of naming it
    (see the module's docstring; :class:`~.generic.DriverSdk` documents each
    member and gives every one from a driver)."""

    # naming: a fixture's `sdk`, the SDK in a sentence, its package, how the
    # Makefile targets it, the folder of its own tests, how to install it
    name: str
    title: str
    package: str
    make_target: str
    test_folder: str | None
    unavailable_hint: str
    drivers: dict[str, str]
    applies_cli_fixes: bool

    # the store: its fixtures' fields, kinds, file names, cases, known faults
    release_field: str
    fields: tuple[str, ...]
    kinds: tuple[str, ...]
    file_tag: str
    fault_registry: str

    def owns(self, case: Any) -> bool: ...
    def kind_of(self, case: Any) -> str: ...
    def read(self, data: dict[str, Any]) -> tuple[str, Any]: ...
    def write(self, release: str, case: Any) -> dict[str, Any]: ...
    def fault(self, fault_id: str) -> tuple[str, str] | None: ...
    def newer_than_known(self, release: str) -> str | None: ...

    # the verdicts: running, classifying, judging a marked fixture
    def installed(self) -> str: ...
    def check(self, case: Any, release: str | None = None) -> Checked: ...
    def expects(self, fault_id: str, case: Any, release: str) -> bool: ...
    def when_fixed(self) -> str: ...
    def unfixable(self, fault_id: str) -> str | None: ...
    def recorded_driver(self, case: Any) -> str | None: ...
    def on_driver(self, case: Any, driver: str) -> Any: ...
    def shortfall(self, case, driver, outcome, recorded, own, fault) -> str: ...

    # the command line and the plugin: what they print, which fixes apply
    def describe(self, release: str) -> str: ...
    def found_on(self, release: str) -> str: ...
    def replayed_on(self, found: str, release: str) -> str: ...
    def fixture_noun(self, kind: str) -> str: ...
    def script_of(self, case: Any) -> Any: ...
    def show_lines(self, case: Any, observed: dict[str, Any]) -> list[str]: ...
    def active_fixes(self, cli_fixes: tuple[str, ...]) -> tuple[str, ...]: ...
    def preflight(self) -> str | None: ...
    def campaign_target(self) -> str: ...


#: name -> "module:attribute" of a zero-argument factory of the driver.
_REGISTRY = {
    "emulated": "compaction_harness.sdk.python.drivers:EmulatedDriver",
    "runner": "compaction_harness.sdk.python.drivers:RunnerDriver",
    "adk-js": "compaction_harness.sdk.js.drivers:AdkJsDriver",
}


#: a fixture's ``sdk`` -> "module:attribute" of a zero-argument factory of
#: its :class:`Sdk`; the first is the default (a fixture without ``sdk``).
_SDKS = {
    "python": "compaction_harness.sdk.python.entry:GoogleAdk",
    "adk-js": "compaction_harness.sdk.js.entry:AdkJs",
}

#: The environment variable that registers SDKs for a process:
#: ``name=module:attribute[,name=module:attribute...]``.
ENV = "HARNESS_SDKS"

#: (name, "module:attribute") -> the SDK made from it.
_MADE: dict[tuple[str, str], Sdk] = {}


def _extra_sdks() -> dict[str, str]:
    """The SDKs ``HARNESS_SDKS`` registers (beside :data:`_SDKS`)."""
    out = {}
    for item in filter(None, (x.strip() for x in os.environ.get(ENV, "").split(","))):
        name, _, target = item.partition("=")
        if not name or ":" not in target:
            raise RegistryError(f"{ENV}: expected name=module:attribute, got {item!r}")
        out[name.strip()] = target.strip()
    return out


def _sdk_targets() -> dict[str, str]:
    return {**_SDKS, **{k: v for k, v in _extra_sdks().items() if k not in _SDKS}}


def _make(target: str, kind: type, what: str) -> Any:
    module, attribute = target.split(":")
    made = getattr(importlib.import_module(module), attribute)()
    if not isinstance(made, kind):
        raise TypeError(f"{target} does not make {what}")
    return made


def sdks() -> dict[str, str]:
    """The registered SDKs: a fixture's ``sdk`` -> where its :class:`Sdk`
    lives (``module:attribute``), the default first."""
    return _sdk_targets()


def sdk_named(name: str) -> Sdk:
    """The SDK registered as ``name`` (made once). Raises ``KeyError`` for
    an unknown name."""
    targets = _sdk_targets()
    if name not in targets:
        raise KeyError(f"no SDK {name!r}; registered: {', '.join(targets)}")
    key = (name, targets[name])
    if key not in _MADE:
        try:
            _MADE[key] = _make(targets[name], Sdk, "an Sdk")
        except (ImportError, AttributeError, TypeError) as exc:
            if name in _SDKS:
                raise
            raise RegistryError(f"{ENV}: {name}={targets[name]}: {exc}") from None
    return _MADE[key]


def all_sdks() -> Iterator[Sdk]:
    """Every registered SDK, the default first (each imported when reached)."""
    for name in _sdk_targets():
        yield sdk_named(name)


def sdk_of_case(case: Any) -> Sdk:
    """The SDK whose case ``case`` is (:meth:`Sdk.owns`). Raises ``TypeError``."""
    for sdk in all_sdks():
        if sdk.owns(case):
            return sdk
    raise TypeError(f"no registered SDK runs a {type(case).__name__}")


def sdk_of_test_files(paths: list[str]) -> Sdk | None:
    """The SDK whose own tests (:attr:`Sdk.test_folder`: a folder of that
    name below each purpose folder, ``tests/*/<folder>/``) hold every one of
    ``paths`` (test files, folders or node ids' files), or None (no paths,
    or not one SDK's alone)."""
    if not paths:
        return None
    for sdk in all_sdks():
        if sdk.test_folder and all(sdk.test_folder in Path(p).parts for p in paths):
            return sdk
    return None


@contextmanager
def register_sdk(name: str, target: str) -> Iterator[None]:
    """Within ``with``, the SDK ``name`` is registered (``module:attribute``
    of a zero-argument factory of an :class:`Sdk`), and the drivers it
    declares (:attr:`Sdk.drivers`) with it: a test's stand-in."""
    before = _SDKS.get(name)
    _SDKS[name] = target
    added = dict(_make(target, Sdk, "an Sdk").drivers)
    kept = {n: _REGISTRY[n] for n in added if n in _REGISTRY}
    _REGISTRY.update(added)
    try:
        yield
    finally:
        for n in added:
            _REGISTRY.pop(n, None)
        _REGISTRY.update(kept)
        _SDKS.pop(name)
        if before is not None:
            _SDKS[name] = before
        _MADE.pop((name, target), None)


@contextmanager
def register_driver(name: str, target: str) -> Iterator[None]:
    """Within ``with``, the driver ``name`` is registered (``module:attribute``)."""
    before = _REGISTRY.get(name)
    _REGISTRY[name] = target
    try:
        yield
    finally:
        _REGISTRY.pop(name)
        if before is not None:
            _REGISTRY[name] = before


def _driver_targets() -> dict[str, str]:
    out = dict(_REGISTRY)
    for name in _extra_sdks():
        if name not in _SDKS:
            out.update({k: v for k, v in sdk_named(name).drivers.items() if k not in out})
    return out


def drivers() -> dict[str, str]:
    """The registered drivers: name -> where its factory lives
    (``module:attribute``); :func:`driver_named` makes one."""
    return _driver_targets()


def driver_named(name: str) -> Driver:
    """The driver registered as ``name``. Raises ``KeyError`` (one line
    naming the registered ones) for an unknown name."""
    targets = _driver_targets()
    if name not in targets:
        raise KeyError(f"no driver {name!r}; registered: {', '.join(sorted(targets))}")
    return _make(targets[name], Driver, "a Driver")
