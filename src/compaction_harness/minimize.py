"""Shrink a real session to a minimal failing fixture, with Hypothesis's shrinker.

``python -m compaction_harness minimize SESSION.json --invariant U3`` reads a
session as ADK's session services store it and anonymises it (texts, tool
names, call ids, invocation ids, agent names, branches and scopes replaced
consistently; timestamps shifted to start at 1; arguments and results are
never read). Then, in two steps:

1. **The session as given.** The invariant is checked where ADK's compaction
   would check it on this session: for U1 to U4 every invocation-aligned
   window (the first event of an invocation to the last event of the same or
   a later one, as the sliding window draws them), with the session as it
   stood when that window's last invocation ended as ``all_events``; for U5
   the session as it stood at each invocation's end, with every
   ``event_retention_size`` from 0 to 6. The first failing call, shortest
   window first, is *the* failure, named by :func:`~compaction_harness.verdicts.signature`:
   the invariant, the known upstream fault that explains it (or none) and
   the call ids involved. A session where nothing fails *holds*, and nothing
   is searched.
2. **Shrinking.** Hypothesis searches sub-sequences of the events for the
   same failure and shrinks what it finds. A sub-sequence never separates
   what belongs together: an event is kept with every event that answers
   what it opens, and with every event that opened what it answers, so
   dropping an event can never turn an answered call into an orphan, or an
   answer into one without its call, and manufacture a failure the session
   does not have. When the search finds nothing smaller, the failing call as
   given is the fixture.

No shrinking algorithm is written here: Hypothesis's :func:`~hypothesis.find`
does the search and the shrinking.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal

from hypothesis import HealthCheck, Phase, find, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

from . import reference
from .invariants import Violation
from .metamorphic import canonical_names, rename
from .model import Compaction, Session
from .unit import TokenCase, UnitCase
from .verdicts import check, signature

__all__ = [
    "MAX_RETENTION",
    "Failure",
    "MinimizeError",
    "Minimized",
    "anonymise",
    "failure_as_given",
    "minimize",
]

#: The ``event_retention_size`` values tried for U5.
MAX_RETENTION = 6
UNIT_LEVEL = ("U1", "U2", "U3", "U4", "U5")


class MinimizeError(ValueError):
    """The invariant cannot be minimised (one-line message)."""


@dataclass(frozen=True)
class Failure:
    """A failing call: the case, its first violation of the invariant, and the
    known upstream fault that explains it (None: a new failure)."""

    case: UnitCase | TokenCase
    violation: Violation
    fault: str | None

    @property
    def signature(self) -> tuple[str, str | None, tuple[str, ...]]:
        return signature(self.violation, self.fault)


@dataclass(frozen=True)
class Minimized:
    """``minimize``'s answer: the failure as given, and the smallest case found
    that shows the same failure (``shrunk`` False: the search found nothing
    smaller, and ``smallest`` is the failure as given)."""

    given: Failure
    smallest: Failure
    shrunk: bool


def _shift(timestamp: float, origin: float) -> float:
    # Exact decimal difference, so order and ties survive the shift.
    return float(Decimal(repr(timestamp)) - Decimal(repr(origin)) + 1)


def anonymise(session: Session) -> Session:
    """``session`` with every name, text and absolute time replaced, consistently.

    Call ids become ``id0, id1, ...``, tool names ``tool0, ...`` (ADK's
    synthetic ``adk_request_*`` names keep their meaning), invocation ids
    ``i1, ...``, agent authors ``agent0, ...`` (``user`` stays), texts
    ``text 1, ...``, summaries ``summary``, branches and scopes ``branch0`` and
    ``scope0``. Timestamps (and compaction ranges) are shifted so that the
    first event is at 1: order, ties and gaps stay, the date goes.
    """
    ids, tools = canonical_names(session)
    renamed = rename(session, ids, tools)
    origin = session.origin
    names: dict[str, dict[str, str]] = {
        "inv": {},
        "author": {"user": "user"},
        "branch": {},
        "scope": {},
    }

    def name(kind: str, value: str | None, prefix: str, start: int = 0) -> str | None:
        if value is None or value == "":
            return value
        table = names[kind]
        return table.setdefault(value, f"{prefix}{len(table) + start}")

    steps = []
    for k, s in enumerate(renamed, start=1):
        steps.append(
            replace(
                s,
                invocation=name("inv", s.invocation, "i", 1),
                author=name("author", s.author, "agent", -1),
                timestamp=_shift(s.timestamp, origin),
                text=None if s.text is None else f"text {k}",
                compaction=None
                if s.compaction is None
                else Compaction(
                    _shift(s.compaction.start, origin), _shift(s.compaction.end, origin)
                ),
                rewind_before=None
                if s.rewind_before is None
                else name("inv", s.rewind_before, "i", 1),
                branch=name("branch", s.branch, "branch"),
                isolation_scope=name("scope", s.isolation_scope, "scope"),
            )
        )
    return Session(tuple(steps))


def _invocations(session: Session) -> list[tuple[int, int]]:
    """(first index, index after the last) of each run of events of one invocation."""
    runs: list[tuple[int, int]] = []
    for index, step in enumerate(session):
        if runs and session[runs[-1][0]].invocation == step.invocation:
            runs[-1] = (runs[-1][0], index + 1)
        else:
            runs.append((index, index + 1))
    return runs


def _unit_calls(session: Session, first: int, last: int) -> UnitCase:
    """The call ADK makes for the window of invocations ``first``..``last``:
    their non-summary events, with the session as it stood at the end of
    ``last`` as ``all_events``."""
    runs = _invocations(session)
    start, stop = runs[first][0], runs[last][1]
    prefix = Session(session.steps[:stop])
    window = tuple(i for i in range(start, stop) if prefix[i].compaction is None)
    return UnitCase(prefix, window)


def _calls_as_given(live: Session, invariant: str) -> Iterator[UnitCase | TokenCase]:
    """Every call the invariant is checked on for the session as given."""
    runs = _invocations(live)
    if invariant == "U5":
        for _, stop in runs:
            for retention in range(MAX_RETENTION + 1):
                yield TokenCase(Session(live.steps[:stop]), retention)
        return
    for length in range(1, len(runs) + 1):  # shortest windows first
        for first in range(len(runs) - length + 1):
            case = _unit_calls(live, first, first + length - 1)
            if case.window:
                yield case


def _first_failure(case: UnitCase | TokenCase, invariant: str) -> Failure | None:
    verdict = check(case)
    for violation in verdict.new:
        if violation.invariant == invariant:
            return Failure(case, violation, None)
    for violation, fault in verdict.known:
        if violation.invariant == invariant:
            return Failure(case, violation, fault)
    return None


def _failures(case: UnitCase | TokenCase) -> Iterator[Failure]:
    verdict = check(case)
    for violation in verdict.new:
        yield Failure(case, violation, None)
    for violation, fault in verdict.known:
        yield Failure(case, violation, fault)


def failure_as_given(session: Session, invariant: str) -> Failure | None:
    """The first failure of ``invariant`` on ``session`` as given (see the
    module's step 1), or None when the session holds."""
    live = reference.live_events(session)
    for case in _calls_as_given(live, invariant):
        found = _first_failure(case, invariant)
        if found is not None:
            return found
    return None


def _closed(session: Session, keep: Sequence[bool]) -> Session:
    """The kept events plus everything that belongs with them: the events that
    answer what a kept event opens, and the events that opened what a kept
    event answers (repeated until nothing changes)."""
    kept = set(i for i, k in enumerate(keep) if k)
    openers: dict[str, set[int]] = {}
    closers: dict[str, set[int]] = {}
    for index, step in enumerate(session):
        for oid in reference.opened_ids(step):
            openers.setdefault(oid, set()).add(index)
        for oid in reference.closed_ids(step):
            closers.setdefault(oid, set()).add(index)
    todo = list(kept)
    while todo:
        step = session[todo.pop()]
        linked = set()
        for oid in reference.opened_ids(step):
            linked |= closers.get(oid, set())
        for oid in reference.closed_ids(step):
            linked |= openers.get(oid, set())
        for index in linked - kept:
            kept.add(index)
            todo.append(index)
    return Session(tuple(s for i, s in enumerate(session) if i in kept))


@st.composite
def _cases(draw, session: Session, invariant: str) -> UnitCase | TokenCase:
    """A sub-sequence of ``session`` closed under answers (each event kept or
    dropped, shrinking towards dropped), then the call: for U1 to U4 a window
    of invocations (shrinking towards all of them, so that the shrinker's
    work is dropping events), for U5 the session at an invocation's end and a
    retention size."""
    keep = draw(st.lists(st.booleans(), min_size=len(session), max_size=len(session)))
    live = reference.live_events(_closed(session, keep))
    runs = _invocations(live)
    if not runs:
        return UnitCase(live, ())
    last = len(runs) - 1 - draw(st.integers(0, len(runs) - 1))
    if invariant == "U5":
        return TokenCase(Session(live.steps[: runs[last][1]]), draw(st.integers(0, MAX_RETENTION)))
    first = draw(st.integers(0, last))
    return _unit_calls(live, first, last)


def minimize(session: Session, invariant: str, max_examples: int = 2000) -> Minimized | None:
    """The failure of ``invariant`` that ``session`` shows, and the smallest
    case Hypothesis finds that shows the same failure (the same invariant,
    known fault and call ids); None when the session holds.

    The session is anonymised first (:func:`anonymise`). Raises
    :class:`MinimizeError` for an invariant that is not checked on one session
    (U6 and the pipeline invariants need more than a session).
    """
    if invariant not in UNIT_LEVEL:
        raise MinimizeError(f"--invariant {invariant}: expected one of {', '.join(UNIT_LEVEL)}")
    anonymous = anonymise(session)
    given = failure_as_given(anonymous, invariant)
    if given is None:
        return None
    target = given.signature

    def same_failure(case: UnitCase | TokenCase) -> bool:
        return any(found.signature == target for found in _failures(case))

    try:
        case = find(
            _cases(anonymous, invariant),
            same_failure,
            settings=settings(
                max_examples=max_examples,
                database=None,
                derandomize=True,  # the same session gives the same fixture
                deadline=None,
                phases=[Phase.generate, Phase.shrink],
                suppress_health_check=list(HealthCheck),
            ),
        )
    except NoSuchExample:
        return Minimized(given, given, shrunk=False)
    smallest = next(f for f in _failures(case) if f.signature == target)
    if len(smallest.case.session) >= len(given.case.session):
        return Minimized(given, given, shrunk=False)
    return Minimized(given, smallest, shrunk=True)
