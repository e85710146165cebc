"""Unit-level cases: one session, one window, the real helpers, invariants U1-U4.

A :class:`UnitCase` is what a unit property generates and what a unit fixture
stores. :func:`run_unit_case` converts it to real ADK events, calls the
installed helpers (or injected stand-ins, for the tests that show an
invariant firing), and checks every applicable invariant.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import reference
from .invariants import (
    Violation,
    check_dead_ids,
    check_prefix_liveness,
    check_prefix_safety,
    check_prefix_shape,
)
from .model import ModelError, Session

__all__ = ["Helpers", "InvariantViolation", "UnitCase", "UnitOutcome", "run_unit_case"]


@dataclass(frozen=True)
class UnitCase:
    """A session and a window into it.

    Attributes:
        session: the whole session (``all_events`` for ADK).
        window: step indices of the events the compactor considers, strictly
            increasing, never a compaction event.
    """

    session: Session
    window: tuple[int, ...]

    def __post_init__(self) -> None:
        n = len(self.session)
        if any(not (0 <= i < n) for i in self.window):
            raise ModelError(f"window: index out of range for a session of {n} steps")
        if any(b <= a for a, b in zip(self.window, self.window[1:], strict=False)):
            raise ModelError("window: indices must be strictly increasing")
        if any(self.session[i].compaction is not None for i in self.window):
            raise ModelError("window: a compaction event cannot be in a compaction window")

    def __repr__(self) -> str:
        return f"UnitCase({self.session!r}, window={self.window!r})"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:  # Hypothesis / IPython
        printer.text(repr(self))

    def to_json(self) -> dict[str, Any]:
        return {"session": self.session.to_json(), "window": list(self.window)}

    @classmethod
    def from_json(cls, data: Any, where: str = "case") -> UnitCase:
        if not isinstance(data, dict):
            raise ModelError(f"{where}: expected an object")
        for key in ("session", "window"):
            if key not in data:
                raise ModelError(f"{where}: missing field {key!r}")
        window = data["window"]
        if not isinstance(window, list) or any(type(i) is not int for i in window):
            raise ModelError(f"{where}.window: expected a list of integers")
        return cls(Session.from_json(data["session"], f"{where}.session"), tuple(window))

    def render(self) -> str:
        """The session timeline with window members marked ``W``."""
        return self.session.render({i: "W" for i in self.window})


@dataclass(frozen=True)
class Helpers:
    """The two helpers under test, as callables over real ADK events.

    ``provably_dead_call_ids`` is ``None`` on releases that lack it. The
    defaults come from :mod:`compaction_harness.adk`; tests inject broken
    stand-ins to show each invariant fires.
    """

    longest_self_contained_prefix: Callable[[list[Any], list[Any]], list[Any]]
    provably_dead_call_ids: Callable[[list[Any], list[Any], str | None], set[str]] | None

    @classmethod
    def installed(cls) -> Helpers:
        from . import adk

        try:
            adk._helper("_provably_dead_call_ids")
            dead = adk.provably_dead_call_ids
        except adk.NotApplicable:
            dead = None
        return cls(adk.longest_self_contained_prefix, dead)


@dataclass
class UnitOutcome:
    """What one run of a case produced."""

    violations: list[Violation]
    expected: dict[str, Any]
    observed: dict[str, Any]
    not_applicable: list[str] = field(default_factory=list)


class InvariantViolation(AssertionError):
    """Raised by a property when a case breaks an invariant; carries the case.

    The pytest plugin reads ``case`` and ``outcome`` from the exception that
    Hypothesis re-raises for the minimal example and writes the fixture.
    """

    def __init__(self, case: Any, outcome: UnitOutcome, kind: str = "unit") -> None:
        self.case = case
        self.outcome = outcome
        self.kind = kind
        body = "\n".join(str(v) for v in outcome.violations)
        super().__init__(f"{len(outcome.violations)} violation(s):\n{body}\n\n{case.render()}")


def run_unit_case(case: UnitCase, helpers: Helpers | None = None) -> UnitOutcome:
    """Run the helpers on ``case`` and check U1-U4.

    Returns every violation found; U2/U3 are skipped when U1 already fails
    (there is no prefix length to judge), U4 when the release lacks the helper.
    """
    from . import adk

    helpers = helpers or Helpers.installed()
    session, window = case.session, case.window
    events = adk.to_adk_events(session)
    window_events = [events[i] for i in window]
    expected: dict[str, Any] = {
        "prefix_length": reference.longest_self_contained_prefix(session, window),
        "dead_ids": sorted(reference.provably_dead_call_ids(session, window)),
    }
    observed: dict[str, Any] = {}
    outcome = UnitOutcome([], expected, observed)

    result = helpers.longest_self_contained_prefix(list(window_events), events)
    shape = check_prefix_shape(window_events, result)
    outcome.violations += shape
    if not shape:
        observed["prefix_length"] = len(result)
        outcome.violations += check_prefix_safety(session, window, len(result))
        outcome.violations += check_prefix_liveness(session, window, len(result))
    else:
        observed["prefix_length"] = None

    if helpers.provably_dead_call_ids is None:
        outcome.not_applicable.append("U4: the installed release has no _provably_dead_call_ids")
    else:
        newest = reference.newest_invocation(session)
        dead = helpers.provably_dead_call_ids(list(window_events), events, newest)
        observed["dead_ids"] = sorted(dead)
        outcome.violations += check_dead_ids(session, window, dead)
    return outcome
