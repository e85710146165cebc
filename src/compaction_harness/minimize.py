"""Shrink a real session to a minimal failing fixture, with Hypothesis's shrinker.

``python -m compaction_harness minimize SESSION.json --invariant U3`` reads a
session as ADK's session services store it, anonymises it (texts, tool names,
call ids, invocation ids, agent names, branches and scopes replaced
consistently; arguments and results are never read), and lets Hypothesis
search sub-sequences of its events, plus a window (or a retention size for
U5), for one that breaks the invariant. Hypothesis shrinks what it finds:
deleting events, narrowing the window. No shrinking algorithm is written here.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, Phase, find, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

from . import reference
from .cases import run_case
from .invariants import INVARIANTS
from .metamorphic import canonical_names, rename
from .model import Compaction, Session
from .unit import TokenCase, UnitCase

__all__ = ["MinimizeError", "anonymise", "minimize"]


class MinimizeError(ValueError):
    """The session does not show the invariant failing (one-line message)."""


def anonymise(session: Session) -> Session:
    """``session`` with every name and text replaced, consistently.

    Call ids become ``id0, id1, ...``, tool names ``tool0, ...`` (ADK's
    synthetic ``adk_request_*`` names keep their meaning), invocation ids
    ``i1, ...``, agent authors ``agent0, ...`` (``user`` stays), texts
    ``text 1, ...``, summaries ``summary``, branches and scopes ``branch0`` and
    ``scope0``.
    """
    ids, tools = canonical_names(session)
    renamed = rename(session, ids, tools)
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
                text=None if s.text is None else f"text {k}",
                compaction=None
                if s.compaction is None
                else Compaction(s.compaction.start, s.compaction.end),
                rewind_before=None
                if s.rewind_before is None
                else name("inv", s.rewind_before, "i", 1),
                branch=name("branch", s.branch, "branch"),
                isolation_scope=name("scope", s.isolation_scope, "scope"),
            )
        )
    return Session(tuple(steps))


@st.composite
def _cases(draw, session: Session, invariant: str) -> UnitCase | TokenCase:
    """A sub-sequence of ``session`` (each event kept or dropped; shrinks
    towards dropping), then a contiguous window of its live events (shrinks
    towards the whole) or, for U5, a retention size."""
    keep = draw(st.lists(st.booleans(), min_size=len(session), max_size=len(session)))
    sub = Session(tuple(s for s, k in zip(session, keep, strict=True) if k))
    live = reference.live_events(sub)
    if invariant == "U5":
        return TokenCase(live, draw(st.integers(0, 6)))
    n = len(live)
    start = draw(st.integers(0, max(n - 1, 0)))
    stop = n - draw(st.integers(0, max(n - start, 0)))
    window = tuple(i for i in range(start, stop) if live[i].compaction is None)
    return UnitCase(live, window)


def minimize(session: Session, invariant: str, max_examples: int = 2000) -> UnitCase | TokenCase:
    """A minimal case built from ``session``'s events that breaks ``invariant``.

    Raises :class:`MinimizeError` when no sub-sequence (searched with
    ``max_examples`` examples) shows it.
    """
    if invariant not in INVARIANTS or invariant == "U6":
        raise MinimizeError(f"--invariant {invariant}: expected one of U1 to U5")
    anonymous = anonymise(session)

    def fails(case) -> bool:
        return any(v.invariant == invariant for v in run_case(case).violations)

    try:
        return find(
            _cases(anonymous, invariant),
            fails,
            settings=settings(
                max_examples=max_examples,
                database=None,
                deadline=None,
                phases=[Phase.generate, Phase.shrink],
                suppress_health_check=list(HealthCheck),
            ),
        )
    except NoSuchExample:
        raise MinimizeError(
            f"no sub-sequence of the {len(session)} events breaks {invariant} "
            f"(searched {max_examples} examples)"
        ) from None
