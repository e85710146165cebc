"""Unit-level cases: one session, one window, the real helpers, invariants U1-U4.

A :class:`UnitCase` is what a unit property generates and what a unit fixture
stores. :func:`run_unit_case` converts it to real ADK events, calls the
installed helpers (or injected stand-ins, for the tests that show an
invariant firing), and checks every applicable invariant.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from ...spec import reference
from ...spec.invariants import (
    Violation,
    check_dead_ids,
    check_prefix_liveness,
    check_prefix_safety,
    check_prefix_shape,
    check_token_range,
    check_token_split,
)
from ...spec.model import ModelError, Session
from ...spec.outcome import UnitOutcome

__all__ = [
    "Helpers",
    "InvariantViolation",
    "TokenCase",
    "UnitCase",
    "UnitOutcome",
    "run_token_case",
    "run_unit_case",
]


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
    #: The session as generated, before rewinds and scope filtering made
    #: ``session`` (for labels only; not part of equality or fixtures).
    origin: Session | None = field(default=None, compare=False, repr=False)

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

    def call_json(self) -> dict[str, Any]:
        return {"window": list(self.window)}

    def render(self) -> str:
        """The session timeline with window members marked ``W``."""
        return self.session.render({i: "W" for i in self.window})


@dataclass(frozen=True)
class TokenCase:
    """A session for token-threshold compaction, and the configured
    ``event_retention_size`` (at least 0).

    The candidates (events newer than the latest summary of their branch) and the split are
    derived from the session, as ADK derives them.
    """

    session: Session
    retention: int
    #: As on :class:`UnitCase`: the generated session, for labels only.
    origin: Session | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if type(self.retention) is not int or self.retention < 0:
            raise ModelError(f"retention: expected a non-negative integer, got {self.retention!r}")

    @property
    def window(self) -> tuple[int, ...]:
        """The token-threshold candidates: what a fixture marks ``W``."""
        return reference.token_candidates(self.session)

    def __repr__(self) -> str:
        return f"TokenCase({self.session!r}, retention={self.retention!r})"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:  # Hypothesis / IPython
        printer.text(repr(self))

    def call_json(self) -> dict[str, Any]:
        return {"retention": self.retention}

    def render(self) -> str:
        """The session timeline with the candidates marked ``W``."""
        return self.session.render({i: "W" for i in self.window}) + (
            f"\nevent_retention_size={self.retention}"
        )


@dataclass(frozen=True)
class Helpers:
    """The two helpers under test, as callables over real ADK events.

    ``provably_dead_call_ids`` is ``None`` on releases that lack it. The
    defaults come from :mod:`compaction_harness.sdk.python.adk`; tests inject broken
    stand-ins to show each invariant fires.
    """

    longest_self_contained_prefix: Callable[[list[Any], list[Any]], list[Any]]
    provably_dead_call_ids: Callable[[list[Any], list[Any], str | None], set[str]] | None

    @classmethod
    def installed(cls) -> Helpers:
        from . import adk

        present = adk.helper_availability()["_provably_dead_call_ids"] is None
        return cls(
            adk.longest_self_contained_prefix, adk.provably_dead_call_ids if present else None
        )


class InvariantViolation(AssertionError):
    """Raised by a property when a case breaks an invariant; carries the case.

    The pytest plugin reads ``case`` and ``outcome`` from the exception that
    Hypothesis re-raises for the minimal example and writes the fixture.
    """

    def __init__(self, case: Any, outcome: UnitOutcome, *, planted: bool = False) -> None:
        self.case = case
        self.outcome = outcome
        #: The failure came from a deliberately broken stand-in (a test showing
        #: an invariant fire), which a replay on real ADK cannot reproduce.
        self.planted = planted
        observer = getattr(case, "observer", "ADK")  # ADK-JS's cases say "ADK-JS"
        body = "\n".join(v.render(observer) for v in outcome.violations)
        super().__init__(f"{len(outcome.violations)} violation(s):\n{body}\n\n{case.render()}")


def _window_only(violation: Violation) -> Violation:
    return replace(violation, message=f"called without all_events: {violation.message}")


def run_unit_case(
    case: UnitCase, helpers: Helpers | None = None, *, bare_actions: bool = False
) -> UnitOutcome:
    """Run the helpers on ``case`` and check U1-U4.

    Returns every violation found; U2/U3 are skipped when U1 already fails
    (there is no prefix length to judge), U4 when the release lacks the helper.
    On releases whose helper takes ``all_events=``, the window-only call
    (documented to run the strict pass alone) is checked for U1 and U2 too:
    safety holds however the helper is called. ``bare_actions``: events with
    nothing in their actions carry ``actions=None`` (see the U6 relation
    ``bare_actions``).
    """
    from . import adk

    installed = helpers is None
    helpers = helpers or Helpers.installed()
    session, window = case.session, case.window
    events = adk.to_adk_events(session, bare_actions=bare_actions)
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

    if installed and adk.accepts_all_events():
        strict = adk.longest_self_contained_prefix_window_only(list(window_events))
        shape = check_prefix_shape(window_events, strict)
        outcome.violations += [_window_only(v) for v in shape]
        if not shape:
            found = check_prefix_safety(session, window, len(strict))
            outcome.violations += [_window_only(v) for v in found]

    if helpers.provably_dead_call_ids is None:
        outcome.not_applicable.append("U4: the installed release has no _provably_dead_call_ids")
    else:
        newest = reference.newest_invocation(session)
        dead = helpers.provably_dead_call_ids(list(window_events), events, newest)
        observed["dead_ids"] = sorted(dead)
        outcome.violations += check_dead_ids(session, window, dead)
    return outcome


def run_token_case(case: TokenCase, helpers: TokenHelpers | None = None) -> UnitOutcome:
    """Run the token-threshold helpers on ``case`` and check U5."""
    from . import adk

    split_fn = helpers.safe_token_split if helpers else adk.safe_token_split
    range_fn = helpers.events_to_compact if helpers else adk.events_to_compact_for_token_threshold
    session, retention = case.session, case.retention
    events = adk.to_adk_events(session)
    candidates = reference.token_candidates(session)
    expected = {
        "split": reference.safe_token_split(session, candidates, retention),
        "range": list(reference.token_threshold_range(session, retention)),
    }
    observed: dict[str, Any] = {}
    outcome = UnitOutcome([], expected, observed)

    if retention > 0:
        # ADK's only caller never asks for a split with retention 0: it takes
        # every candidate itself (_events_to_compact_for_token_threshold).
        split = split_fn([events[i] for i in candidates], retention)
        observed["split"] = split
        outcome.violations += check_token_split(session, candidates, retention, split)
    else:
        outcome.not_applicable.append("U5 split: retention 0 never reaches the split helper")

    returned = range_fn(list(events), retention)
    index_of = {id(e): i for i, e in enumerate(events)}
    # The leading events that are not the session's: rolling-summary seeds,
    # one per branch of the range that has a summary (reference.token_seeds).
    seeds = []
    while returned and id(returned[0]) not in index_of:
        first = returned.pop(0)
        parts = first.content.parts if first.content and first.content.parts else []
        seeds.append(
            {
                "author": first.author,
                "timestamp": first.timestamp,
                "summary": " ".join(p.text for p in parts if p.text),
            }
        )
    taken = [index_of.get(id(e)) for e in returned]
    taken_ok = None if any(i is None for i in taken) else taken
    observed["range"] = taken_ok
    # One seed as before (a fixture's "seed"); several as a list.
    observed["seed"] = seeds[0] if len(seeds) == 1 else (seeds or None)
    outcome.violations += check_token_range(session, retention, taken_ok, seeds)
    return outcome


@dataclass(frozen=True)
class TokenHelpers:
    """Stand-ins for the token-threshold helpers (tests inject broken ones)."""

    safe_token_split: Callable[[list[Any], int], int]
    events_to_compact: Callable[[list[Any], int], list[Any]]
