"""ADK for TypeScript as the driver registry offers it (``sdk.protocol.Sdk``).

An ADK-JS fixture (``sdk: "adk-js"``) is of kind ``script`` and, instead
of ``adk_release``, carries ``package_version`` (the ``@google/adk`` it was
found on) and ``compactor`` (the ADK-JS compactor and its options,
:class:`~.adk_js.JsCompactor`); its case is an :class:`~.adk_js.JsCase`,
its known faults ``adk_js.KNOWN_FAULTS``' (a view of the catalogue: a fault
applies to the compactors it names, on the pinned package). Loading it
needs no Node; a replay runs it through the Node driver
(:func:`.adk_js.check_case`), triaged by ADK-JS's fixes.
"""

from __future__ import annotations

from typing import Any

from ...spec.model import ModelError, _one_line
from ...spec.scripts import Script
from ..generic import DriverSdk
from ..protocol import Checked, NotApplicable, Unavailable
from . import adk_js

__all__ = ["AdkJs"]


class AdkJs(DriverSdk):
    """ADK-JS (``@google/adk`` through ``sdks/adk-js``)."""

    name = "adk-js"
    title = "ADK-JS"
    package = adk_js.PACKAGE
    release_field = "package_version"
    fields = ("sdk", "package_version", "compactor")
    kinds = ("script",)
    file_tag = "adk-js-"
    fault_registry = "adk_js.KNOWN_FAULTS"
    #: The folders of the tests that run ADK-JS through Node: ``tests/*/adk_js/``
    #: (the Makefile's ADKJS_TESTS).
    test_folder = "adk_js"
    unavailable_hint = "no Node or no package: `make js-env`"
    make_target = "SDK=js"
    driver_name = "adk-js"
    case_type = adk_js.JsCase

    @property
    def faults(self) -> dict[str, tuple[str, str]]:  # type: ignore[override]
        return {f: ("ADK-JS", why) for f, (_, why) in adk_js.KNOWN_FAULTS.items()}

    def read(self, data: dict[str, Any]) -> tuple[str, Any]:
        if data["kind"] != "script":
            raise ModelError(f"kind: an ADK-JS fixture is of kind 'script', not {data['kind']!r}")
        if "adk_release" in data:
            raise ModelError("adk_release: an ADK-JS fixture names its package_version instead")
        if "session" in data:
            raise ModelError("session: a script fixture's input is its script (in 'call')")
        for key in ("package_version", "compactor"):
            if key not in data:
                raise ModelError(f"missing field {key!r} (required for sdk 'adk-js')")
        version = self.read_release(data)
        compactor = adk_js.JsCompactor.from_json(data["compactor"])
        return version, adk_js.JsCase(Script.from_json(data["call"], "call"), compactor)

    def write(self, release: str, case: Any) -> dict[str, Any]:
        return {
            "sdk": self.name,
            "package_version": release,
            "compactor": case.compactor.to_json(),
        }

    def installed(self) -> str:
        return adk_js.package_version()

    def check(self, case: Any, release: str | None = None) -> Checked:
        """Run ``case`` through the Node driver, triaged against
        ``adk_js.KNOWN_FAULTS``; the release is the installed package's.
        Raises :class:`~..protocol.NotApplicable` (what ADK-JS cannot
        represent) or :class:`~..protocol.Unavailable` (no Node, or no
        ``make js-env``)."""
        try:
            outcome = adk_js.check_case(case)
            version = adk_js.package_version()
        except adk_js.NotApplicable as exc:
            raise NotApplicable(f"ADK-JS: {exc}") from None
        except adk_js.AdkJsUnavailable as exc:
            raise Unavailable(str(exc)) from exc
        return Checked(version, tuple(outcome.violations), tuple(outcome.known), outcome)

    def expects(self, fault_id: str, case: Any, release: str) -> bool:
        compactors = adk_js.KNOWN_FAULTS.get(fault_id, (frozenset(), ""))[0]
        return case.compactor.name in compactors

    def when_fixed(self) -> str:
        return (
            "run `make test SDK=js` on the release that fixed it and give the fixture "
            "that release's package_version"
        )

    def found_on(self, release: str) -> str:
        return f"{self.describe(release)} (ADK for TypeScript)"

    def fixture_noun(self, kind: str) -> str:
        return "an ADK-JS fixture (it runs on the Node driver)"

    def show_lines(self, case: Any, observed: dict[str, Any]) -> list[str]:
        lines = [f"ADK-JS compactor: {case.compactor.to_json()}"]
        exception = observed.get("exception")
        if isinstance(exception, dict):
            lines.append(
                f"{self.package} raised {exception.get('name')} at driver action "
                f"{exception.get('action')}: {_one_line(str(exception.get('message')))[:300]}"
            )
        return lines

    def active_fixes(self, cli_fixes: tuple[str, ...]) -> tuple[str, ...]:
        from .js_fixes import active

        return tuple(active())  # HARNESS_FIXES (or --fixes), read by the Node driver

    def preflight(self) -> str | None:
        try:
            adk_js.node_path()
        except adk_js.AdkJsUnavailable as exc:
            return str(exc)
        return None

    def campaign_target(self) -> str:
        """What a campaign of this SDK's tests ran against (its summary)."""
        try:
            version = adk_js.package_version()
        except adk_js.AdkJsUnavailable:
            version = "(not installed)"
        return f"{self.package} {version}, ADK for TypeScript"
