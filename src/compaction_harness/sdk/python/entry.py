"""google-adk as the driver registry offers it (:class:`~compaction_harness.sdk.protocol.Sdk`).

The fixtures google-adk's properties and campaigns write (``sdk`` absent or
``"python"``): five kinds (``unit``, ``token``, ``metamorphic``,
``pipeline``, ``script``; :mod:`.cases`), found on the google-adk release
in ``adk_release``; their known faults are :mod:`.known_faults`' (a view of
the catalogue). A case runs on the installed release (:func:`.cases.run_case`:
run and recorded, nothing classified), and what the run recorded is
classified by fix after it (:func:`.cases.judge`); a script fixture can be
replayed on the other driver (``replay --driver``).

Loading imports the case types (and with them google.adk's adapter) only;
running imports the runners.
"""

from __future__ import annotations

import re
from typing import Any

from ... import DEFAULT_ADK_RELEASE
from ...envs import FIRST_RELEASE_WITH_COMPACTION
from ...spec.model import ModelError, Session
from ...spec.pipeline_case import PipelineCase
from ...spec.scripts import Script
from ..generic import RELEASE, DriverSdk
from ..protocol import Checked
from .metamorphic import MetamorphicCase
from .unit import TokenCase, UnitCase

__all__ = ["NEWEST_KNOWN_RELEASE", "GoogleAdk"]

#: The newest google-adk release the harness knows: its pin (the default
#: target; the release matrix and the known faults go no further, a test
#: checks).
NEWEST_KNOWN_RELEASE = DEFAULT_ADK_RELEASE
_KINDS = ("unit", "token", "metamorphic", "pipeline", "script")


def _version(release: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", release)[:3])


class GoogleAdk(DriverSdk):
    """google-adk (``sdk/python``): the default SDK of a fixture."""

    name = "python"
    title = "google-adk"
    package = "google-adk"
    release_field = "adk_release"
    fields = ("adk_release",)
    kinds = _KINDS
    file_tag = ""
    fault_registry = "known_faults.py"
    test_folder = None
    unavailable_hint = "google-adk is not installed: `make env`"
    driver_name = "emulated"
    applies_cli_fixes = True

    def owns(self, case: Any) -> bool:
        return isinstance(case, UnitCase | TokenCase | MetamorphicCase | PipelineCase | Script)

    def kind_of(self, case: Any) -> str:
        if isinstance(case, Script):
            return "script"
        if isinstance(case, PipelineCase):
            return "pipeline"
        if isinstance(case, MetamorphicCase):
            return "metamorphic"
        return "token" if isinstance(case, TokenCase) else "unit"

    def read(self, data: dict[str, Any]) -> tuple[str, Any]:
        if "adk_release" not in data:
            raise ModelError("missing field 'adk_release'")
        release = data["adk_release"]
        if not isinstance(release, str) or not RELEASE.match(release):
            raise ModelError(f"adk_release: expected a release number like 2.13.0, got {release!r}")
        if _version(release) < FIRST_RELEASE_WITH_COMPACTION:
            first = ".".join(map(str, FIRST_RELEASE_WITH_COMPACTION))
            raise ModelError(f"adk_release {release}: event compaction exists only from {first} on")
        if data["kind"] == "script":
            if "session" in data:
                raise ModelError("session: a script fixture's input is its script (in 'call')")
            return release, Script.from_json(data["call"], "call")
        if "session" not in data:
            raise ModelError("missing field 'session'")
        session = Session.from_json(data["session"], "session")
        return release, _parse_case(data["kind"], data["call"], session)

    def write(self, release: str, case: Any) -> dict[str, Any]:
        return {"adk_release": release}  # no `sdk`: a version 2 reader reads it

    def fault(self, fault_id: str) -> tuple[str, str] | None:
        from .known_faults import fault_for

        fault = fault_for(fault_id)
        return None if fault is None else (fault.title, "")

    def newer_than_known(self, release: str) -> str | None:
        return NEWEST_KNOWN_RELEASE if _version(release) > _version(NEWEST_KNOWN_RELEASE) else None

    def installed(self) -> str:
        from .adk import ADK_RELEASE

        return ADK_RELEASE

    def check(self, case: Any, release: str | None = None) -> Checked:
        """Run ``case`` on the installed google-adk, then classify what the
        run recorded by fix (:func:`.cases.judge`: a pipeline run's new
        violations are those of the first operation that found any).
        ``release`` names the release the verdict is on (default: the
        installed one; they differ in tests). Raises
        :class:`~.adk.NotApplicable`."""
        from .cases import judge, run_case
        from .unit import UnitOutcome

        release = release or self.installed()
        outcome = judge(case, run_case(case))
        new, known = list(outcome.violations), list(outcome.known)
        return Checked(
            release,
            tuple(new),
            tuple(known),
            UnitOutcome(
                new, outcome.expected, outcome.observed, outcome.not_applicable, known, True
            ),
        )

    def expects(self, fault_id: str, case: Any, release: str) -> bool:
        from .known_faults import fault_for

        fault = fault_for(fault_id)
        return fault is not None and fault.applies_to(release)

    def when_fixed(self) -> str:
        return "run `make matrix`: the fault's releases are derived from it"

    def unfixable(self, fault_id: str) -> str | None:
        from .fixes import fixes_for, unavailable

        fixes = fixes_for(fault_id)
        why = [unavailable(f) for f in fixes]
        if not fixes or any(w is None for w in why):
            return None
        return "; ".join(w for w in why if w)

    def describe(self, release: str) -> str:
        return f"google-adk {release}"

    def replayed_on(self, found: str, release: str) -> str:
        return self.describe(release)  # the fixture's own release is in its name

    def fixture_noun(self, kind: str) -> str:
        return f"a {kind} fixture"

    def recorded_driver(self, case: Any) -> str | None:
        return case.config.driver if isinstance(case, Script) else None

    def on_driver(self, case: Any, driver: str) -> Any:
        from dataclasses import replace

        if case.config.driver == driver:
            return case
        return Script(replace(case.config, driver=driver), case.operations)

    def shortfall(self, case, driver, outcome, recorded, own, fault) -> str:
        from .driver import shortfall

        return shortfall(case, driver, outcome, recorded, own, fault)

    def show_lines(self, case: Any, observed: dict[str, Any]) -> list[str]:
        return []


def _parse_case(kind: str, call: Any, session: Session) -> Any:
    """The case a fixture's ``call`` describes, by ``kind``:

    * ``unit``: ``{"window": [step indices]}``;
    * ``token``: ``{"retention": event_retention_size}``;
    * ``metamorphic``: ``{"relation", "window"}``, plus ``index`` and
      ``call_id`` (``added_response``) or ``retention`` (``isolation_scope``);
    * ``pipeline``: ``{"config", "ends", "max_invocation_events"}``, and
      optionally ``invariants`` and ``agents`` (the app's agent names, the
      root first; a recorded session's own).
    """
    if kind == "metamorphic":
        return _parse_metamorphic(call, session)
    if kind == "pipeline":
        return _parse_pipeline(call, session)
    fields = {"unit": "window", "token": "retention"}[kind]
    if not isinstance(call, dict) or set(call) != {fields}:
        raise ModelError(f"call: expected an object with exactly the field {fields!r}")
    value = call[fields]
    if kind == "token":
        if type(value) is not int or value < 0:
            raise ModelError(f"call.retention: expected a non-negative integer, got {value!r}")
        return TokenCase(session, value)
    if not isinstance(value, list) or any(type(i) is not int for i in value):
        raise ModelError("call.window: expected a list of integers")
    return UnitCase(session, tuple(value))


def _parse_pipeline(call: Any, session: Session) -> PipelineCase:
    if not isinstance(call, dict) or not {"config", "ends"} <= set(call):
        raise ModelError("call: expected an object with the fields 'config' and 'ends'")
    extra = sorted(
        set(call)
        - {"config", "ends", "max_invocation_events", "invariants", "agents", "summary_sizes"}
    )
    if extra:
        raise ModelError(f"call: unknown field {extra[0]!r}")
    invariants = call.get("invariants")
    if invariants is not None and (
        not isinstance(invariants, list) or not all(isinstance(i, str) for i in invariants)
    ):
        raise ModelError("call.invariants: expected a list of invariant ids")
    config, ends = call["config"], call["ends"]
    if not isinstance(config, dict):
        raise ModelError("call.config: expected an object")
    if not isinstance(ends, list) or any(type(i) is not int for i in ends):
        raise ModelError("call.ends: expected a list of integers")
    limit = call.get("max_invocation_events", 6)
    if type(limit) is not int or limit < 1:
        raise ModelError("call.max_invocation_events: expected a positive integer")
    agents = call.get("agents", [])
    if not isinstance(agents, list) or not all(isinstance(a, str) for a in agents):
        raise ModelError("call.agents: expected a list of agent names, the root first")
    sizes = call.get("summary_sizes", [])
    if not isinstance(sizes, list) or not all(
        isinstance(size, list)
        and len(size) == 3
        and all(type(x) in (int, float) for x in size[:2])
        and type(size[2]) is int
        and size[2] >= 0
        for size in sizes
    ):
        raise ModelError(
            "call.summary_sizes: expected a list of [start, end, characters] of recorded summaries"
        )
    return PipelineCase(
        config,
        session,
        tuple(ends),
        limit,
        None if invariants is None else tuple(invariants),
        agents=tuple(agents),
        summary_sizes=tuple((float(s), float(e), c) for s, e, c in sizes),
    )


def _parse_metamorphic(call: Any, session: Session) -> MetamorphicCase:
    if not isinstance(call, dict) or not {"relation", "window"} <= set(call):
        raise ModelError("call: expected an object with the fields 'relation' and 'window'")
    extra = sorted(set(call) - {"relation", "window", "index", "call_id", "retention"})
    if extra:
        raise ModelError(f"call: unknown field {extra[0]!r}")
    window = call["window"]
    if not isinstance(window, list) or any(type(i) is not int for i in window):
        raise ModelError("call.window: expected a list of integers")
    for key, kind in (("relation", str), ("call_id", str), ("index", int), ("retention", int)):
        if key in call and type(call[key]) is not kind:
            raise ModelError(f"call.{key}: expected {'a string' if kind is str else 'an integer'}")
    return MetamorphicCase(
        session,
        call["relation"],
        tuple(window),
        call.get("index", 0),
        call.get("call_id", ""),
        call.get("retention", 0),
    )
