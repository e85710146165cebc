"""An SDK entry of the registry (:class:`~.protocol.Sdk`) built from one driver.

:class:`DriverSdk` answers everything the store and the surfaces ask of an
SDK from a driver (:class:`~.protocol.Driver`) and the SDK's known faults:
a fixture of it is of kind ``script``, its case wraps a pipeline script
(:attr:`DriverSdk.case_type`, built by ``case_type(script)``, with a
``script`` attribute), a case runs on the driver, and a violation the run
shows is a known fault when the fault's fixes remove it
(:func:`compaction_harness.faults.classify.classify`, the one rule). An SDK
overrides what it does otherwise: google-adk (``sdk.python.entry``) reads
five kinds of fixture and classifies as its runners do; ADK-JS
(``sdk.js.entry``) reads its compactor beside the script.

Imports :mod:`compaction_harness.spec`, :mod:`compaction_harness.faults`
(the classification rule only) and :mod:`.protocol`.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

from ..faults.classify import classify
from ..spec.model import ModelError
from ..spec.scripts import Script
from .protocol import CannotRun, Checked, Driver, NotApplicable, driver_named

__all__ = ["RELEASE", "DriverSdk", "Outcome"]

#: What a release or package version looks like (``2.13.0``, ``2.0.0rc1``).
RELEASE = re.compile(r"^\d+\.\d+\.\d+((a|b|rc)\d+)?$")


class Outcome:
    """A run's outcome as the surfaces read it (the fields of
    ``sdk.python.unit.UnitOutcome``): ``violations`` (the new ones),
    ``expected``, ``observed``, ``not_applicable``, ``known``, ``triaged``."""

    def __init__(self, violations, observed, known) -> None:
        self.violations = list(violations)
        self.expected: dict[str, Any] = {}
        self.observed = observed
        self.not_applicable: list[str] = []
        self.known = list(known)
        self.triaged = True
        self.labels: list[str] = []


class DriverSdk:
    """One SDK as the registry offers it, from its driver.

    Attributes (class attributes a subclass sets):
        name: a fixture's ``sdk`` field, the registry's key.
        title: the SDK in a sentence (``"ADK-JS"``).
        package: what its releases are releases of (``"@google/adk"``).
        release_field: the fixture field naming the release it was found on.
        fields: every top-level field of its fixtures beyond the common ones
            (``release_field`` and ``sdk`` included).
        kinds: the fixture kinds it reads.
        file_tag: what its fixtures' file names carry before the release
            (``"adk-js-"``): ``<invariant>-<tag><release>-<hash>.json``.
        fault_registry: where its known faults are registered (messages).
        faults: known fault id -> (title, what a user sees).
        test_folder: the name of the folder its own tests live in below
            each purpose folder (``tests/*/<folder>/``), or None: a run of
            them alone is a run of this SDK (the pytest plugin, the Makefile).
        unavailable_hint: how to install it, for a replay that cannot run.
        driver_name: the driver its cases run on.
        drivers: driver name -> ``module:attribute``, registered with it
            (:func:`~.protocol.register_sdk`).
        case_type: its case: ``case_type(script)``, with ``.script``.
    """

    name = ""
    title = ""
    package = ""
    release_field = "package_version"
    fields: tuple[str, ...] = ("sdk", "package_version")
    kinds: tuple[str, ...] = ("script",)
    file_tag = ""
    fault_registry = ""
    faults: dict[str, tuple[str, str]] = {}
    test_folder: str | None = None
    unavailable_hint = ""
    driver_name = ""
    drivers: dict[str, str] = {}
    case_type: Any = None
    #: How the Makefile targets it (``"SDK=js"``), or "" (no such target).
    make_target = ""
    #: Whether ``--fixes`` of the command line applies this SDK's fixes in
    #: the harness's process (google-adk); else its driver reads
    #: ``HARNESS_FIXES`` itself.
    applies_cli_fixes = False

    # -- the store: reading and writing fixtures ------------------------------------------
    def owns(self, case: Any) -> bool:
        """Whether ``case`` is a case of this SDK."""
        return self.case_type is not None and isinstance(case, self.case_type)

    def kind_of(self, case: Any) -> str:
        """The fixture kind of a case of this SDK."""
        return self.kinds[0]

    def read(self, data: dict[str, Any]) -> tuple[str, Any]:
        """A fixture document of this SDK (checked by the store for what
        every fixture shares) -> (the release it was found on, its case).
        Raises :class:`~compaction_harness.spec.model.ModelError`."""
        if data["kind"] not in self.kinds:
            noun = self.fixture_noun(data["kind"]).split(" (")[0]
            raise ModelError(
                f"kind: {noun} is of kind {' or '.join(repr(k) for k in self.kinds)}, "
                f"not {data['kind']!r}"
            )
        if "session" in data:
            raise ModelError("session: a script fixture's input is its script (in 'call')")
        release = self.read_release(data)
        return release, self.case_type(Script.from_json(data["call"], "call"))

    def read_release(self, data: dict[str, Any]) -> str:
        key = self.release_field
        if key not in data:
            raise ModelError(f"missing field {key!r} (required for sdk {self.name!r})")
        release = data[key]
        if not isinstance(release, str) or not RELEASE.match(release):
            raise ModelError(f"{key}: expected a version like 2.0.0, got {release!r}")
        return release

    def write(self, release: str, case: Any) -> dict[str, Any]:
        """The top-level fields a fixture of ``case`` found on ``release``
        carries for this SDK, in the order written."""
        return {"sdk": self.name, self.release_field: release}

    def fault(self, fault_id: str) -> tuple[str, str] | None:
        """Known fault ``fault_id`` of this SDK as (title, what a user sees),
        or None when it is not one of its registered faults."""
        return self.faults.get(fault_id)

    def newer_than_known(self, release: str) -> str | None:
        """The newest release the harness knows when ``release`` is newer
        (its known faults were never checked there), else None."""
        return None

    # -- the verdicts: running and classifying ---------------------------------------------
    def driver(self) -> Driver:
        """The driver its cases run on: one it declares (:attr:`drivers`), or
        one of the registry's."""
        target = self.drivers.get(self.driver_name)
        if target is None:
            return driver_named(self.driver_name)
        module, attribute = target.split(":")
        return getattr(importlib.import_module(module), attribute)()

    def installed(self) -> str:
        """The release installed here (what a replay runs)."""
        return self.driver().version()

    def check(self, case: Any, release: str | None = None) -> Checked:
        """Run ``case`` on the installed release and classify what it shows
        by fix. Raises :class:`~.protocol.NotApplicable` for a case it cannot
        run, :class:`~.protocol.Unavailable` when it is not installed."""
        driver = self.driver()
        try:
            trace = driver.run(case)
        except CannotRun as exc:
            raise NotApplicable(f"{self.title}: {exc}") from None
        candidates = driver.fixes()

        def faults_of(fix: str) -> tuple[str, ...]:
            return tuple(f for f in self.faults if fix in driver.fixes_of(f))

        def rerun(names) -> list:
            return list(driver.run(case, tuple(names)).violations)

        new, known = [], []
        for item in classify(trace.violations, rerun, candidates, faults_of):
            if item.new:
                new.append(item.violation)
            else:
                item.violation.details["evidence"] = "fix " + "+".join(item.fixes)
            known += [(item.violation, fault) for fault in item.faults]
        observed = {"session": trace.stored.to_json()}
        if trace.exception:
            observed["exception"] = trace.exception
        return Checked(trace.version, tuple(new), tuple(known), Outcome(new, observed, known))

    def expects(self, fault_id: str, case: Any, release: str) -> bool:
        """Whether a fixture of ``case`` marked with ``fault_id`` must show
        it on ``release`` (the fault applies there)."""
        return fault_id in self.faults

    def when_fixed(self) -> str:
        """What to do when a marked fault no longer shows (XPASS's advice)."""
        return f"remove it from {self.fault_registry}"

    def unfixable(self, fault_id: str) -> str | None:
        """Why no fix of ``fault_id`` can run on the installed release, so
        that a violation of it cannot be told by fix there (None: one can,
        or the fault has no fix at all). By default every fix applies."""
        return None

    def describe(self, release: str) -> str:
        """A release of this SDK in a sentence (``@google/adk 2.0.0``)."""
        return f"{self.package} {release}"

    def found_on(self, release: str) -> str:
        """Where a fixture was found, in ``show``'s header."""
        return self.describe(release)

    def replayed_on(self, found: str, release: str) -> str:
        """Where ``replay`` ran a fixture found on ``found``: ``release``,
        and the release it was found on when they differ (one package is
        installed: a fixture written on another replays on it)."""
        if found == release:
            return self.describe(release)
        return f"{self.describe(release)} (found on {self.describe(found)})"

    def fixture_noun(self, kind: str) -> str:
        """A fixture of this SDK and ``kind`` in a sentence."""
        article = "an" if self.title[:1].upper() in "AEIOU" else "a"
        return f"{article} {self.title} fixture (it runs on the {self.driver_name} driver)"

    def campaign_target(self) -> str:
        """What a campaign of this SDK's own tests ran against (its summary)."""
        try:
            return self.describe(self.installed())
        except Exception as exc:  # not installed: said, not raised
            return f"{self.package} (not installed: {exc})"

    def recorded_driver(self, case: Any) -> str | None:
        """The driver a fixture of ``case`` records, when ``replay --driver``
        can run it on another of this SDK's drivers; else None."""
        return None

    def on_driver(self, case: Any, driver: str) -> Any:
        """``case`` run on ``driver`` instead (see :meth:`recorded_driver`)."""
        return case

    def shortfall(self, case, driver, outcome, recorded, own, fault) -> str:
        """Why ``driver`` cannot reproduce what ``recorded`` shows (NOREPRO)."""
        return "its run differs from the recorded driver's"

    def script_of(self, case: Any) -> Any:
        """The pipeline script a script fixture's case runs (``show``)."""
        return getattr(case, "script", case)

    def show_lines(self, case: Any, observed: dict[str, Any]) -> list[str]:
        """What ``show`` prints of a script fixture before its script."""
        exception = observed.get("exception")
        return [f"{self.title} raised: {exception}"] if exception else []

    def active_fixes(self, cli_fixes: tuple[str, ...]) -> tuple[str, ...]:
        """The fixes a replay of this SDK runs with: ``cli_fixes`` (``--fixes``
        or ``HARNESS_FIXES`` as the command line applied them) when it
        :attr:`applies_cli_fixes`, else what its driver reads."""
        return tuple(cli_fixes) if self.applies_cli_fixes else ()

    def preflight(self) -> str | None:
        """Why this SDK's tests cannot run here (one line), or None."""
        return None
