"""Session strategies, version 1: invocations built the way ADK's runtime builds them.

Shapes verified against google-adk 2.13.0's runtime
(``google/adk/flows/llm_flows/functions.py`` and ``tools/_functions.py``):
the model's event holds one or several parallel ``function_call`` parts and
is authored by the agent; the tool results come back in one event authored by
the agent too, holding ``function_response`` parts. A user event opens an
invocation; an invocation may instead open with a function response (the
answer to a long-running or earlier call, sent by the client) or with no user
event at all (a resumed or agent-started invocation).

Every random choice goes through Hypothesis, in an order that shrinks well:
the plan (how many invocations, which turns) is drawn as lists, so deleting a
list element deletes events, and dependent choices (which open calls an
answer closes) are drawn while the session is built.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache

from hypothesis import strategies as st

from compaction_harness.model import Call, Compaction, Response, Session, Step
from compaction_harness.unit import UnitCase

AGENT = "agent"
#: A small pool so that call ids collide across invocations on purpose.
ID_POOL = ("c0", "c1", "c2", "c3")
TOOL_NAMES = ("lookup", "search")

# Ordered so that shrinking (towards the first element) removes events.
OPENERS = ("none", "user", "response")
TURNS = ("text", "call", "call_answered", "answer", "compaction")

# Strategies are built once: building one per draw costs more than the draw.
_TICK = st.sampled_from((1.0, 0.0))
_ID_INDEX = st.integers(0, len(ID_POOL))  # len(ID_POOL): a fresh, never-reused id
_NAMES = st.lists(st.sampled_from(TOOL_NAMES), min_size=1, max_size=3)
_LONG_RUNNING = st.integers(0, 4)  # 4: the call is long-running


@cache
def _plan(max_invocations: int, max_turns: int) -> st.SearchStrategy:
    return st.lists(
        st.tuples(
            st.sampled_from(OPENERS),
            st.lists(st.sampled_from(TURNS), max_size=max_turns),
            st.integers(0, 7),  # 7: the invocation's events carry no invocation id
        ),
        min_size=1,
        max_size=max_invocations,
    )


@cache
def _below(n: int) -> st.SearchStrategy[int]:
    return st.integers(0, n - 1)


@cache
def _permutation(n: int) -> st.SearchStrategy[list[int]]:
    return st.permutations(range(n))


@dataclass
class _Builder:
    steps: list[Step] = field(default_factory=list)
    pending: list[Call] = field(default_factory=list)  # calls not answered yet
    clock: float = 0.0
    fresh: int = 0

    def tick(self, draw) -> float:
        # Neighbouring events share a timestamp now and then, as fast tools do.
        self.clock += draw(_TICK)
        return self.clock

    def call_id(self, draw) -> str:
        index = draw(_ID_INDEX)
        if index < len(ID_POOL):
            return ID_POOL[index]
        self.fresh += 1
        return f"f{self.fresh}"

    def answer(self, draw, inv: str, author: str, candidates: list[Call]) -> None:
        """One response event answering a non-empty subset of ``candidates``, in any order."""
        if not candidates:
            return
        order = draw(_permutation(len(candidates)))
        chosen = [candidates[i] for i in order[: 1 + draw(_below(len(candidates)))]]
        for call in chosen:
            if call in self.pending:
                self.pending.remove(call)
        responses = tuple(Response(c.id, c.name) for c in chosen)
        self.steps.append(Step(inv, author, self.tick(draw), responses=responses))


@st.composite
def sessions(draw, max_invocations: int = 6, max_turns: int = 4, max_events: int = 30) -> Session:
    """A realistic session of at most ``max_events`` events.

    Episodes: user-opened, response-opened and user-less invocations; model
    text; single and parallel calls (some long-running); responses now, later
    (in a later invocation, out of order, several calls per event) or never
    (orphans); prior compaction events over earlier ranges; equal timestamps.
    """
    b = _Builder()
    plan = draw(_plan(max_invocations, max_turns))
    for number, (opener, turns, no_id) in enumerate(plan, start=1):
        inv = "" if no_id == 7 else f"i{number}"
        if opener == "user" or (opener == "response" and not b.pending):
            b.steps.append(Step(inv, "user", b.tick(draw), text=f"user {number}"))
        elif opener == "response":
            b.answer(draw, inv, "user", list(b.pending))
        for turn in turns:
            if turn == "text":
                b.steps.append(Step(inv, AGENT, b.tick(draw), text="model text"))
            elif turn in ("call", "call_answered"):
                names = draw(_NAMES)
                calls = []
                for name in names:
                    cid = b.call_id(draw)
                    if all(c.id != cid for c in calls):
                        calls.append(Call(cid, name))
                long_running = tuple(sorted(c.id for c in calls if draw(_LONG_RUNNING) == 4))
                b.steps.append(
                    Step(inv, AGENT, b.tick(draw), calls=tuple(calls), long_running=long_running)
                )
                b.pending.extend(calls)
                if turn == "call_answered":
                    b.answer(draw, inv, AGENT, calls)
            elif turn == "answer":
                b.answer(draw, inv, AGENT, list(b.pending))
            elif turn == "compaction":
                raw = [s for s in b.steps if s.compaction is None]
                if raw:
                    lo = draw(_below(len(raw)))
                    hi = lo + draw(_below(len(raw) - lo))
                    rng = Compaction(raw[lo].timestamp, raw[hi].timestamp)
                    b.steps.append(Step(inv, AGENT, b.tick(draw), compaction=rng))
    # A prefix of a session is a session: cut at the size bound.
    return Session(tuple(b.steps[:max_events]))


@st.composite
def windows(draw, session: Session) -> tuple[int, ...]:
    """A compaction window drawn the way ADK draws one.

    Either an arbitrary contiguous stretch (token threshold: everything after
    the last summary, cut at a retention split) or invocation-aligned
    (sliding window: from the first event of one invocation to the last event
    of a later one). Compaction events are left out, as ADK filters them.
    Both shrink towards the whole session.
    """
    n = len(session)
    if n == 0:
        return ()
    if draw(st.booleans()):
        invs = []
        for s in session:
            if s.compaction is None and s.invocation and s.invocation not in invs:
                invs.append(s.invocation)
        if invs:
            first = draw(_below(len(invs)))
            last = len(invs) - 1 - draw(_below(len(invs) - first))
            start = next(i for i, s in enumerate(session) if s.invocation == invs[first])
            stop = max(i for i, s in enumerate(session) if s.invocation == invs[last]) + 1
            return tuple(i for i in range(start, stop) if session[i].compaction is None)
    start = draw(_below(n))
    stop = n - draw(_below(n - start + 1))
    return tuple(i for i in range(start, stop) if session[i].compaction is None)


@st.composite
def unit_cases(
    draw, max_invocations: int = 6, max_turns: int = 4, max_events: int = 30
) -> UnitCase:
    """A :class:`UnitCase`: a session from :func:`sessions` and a window into it."""
    session = draw(
        sessions(max_invocations=max_invocations, max_turns=max_turns, max_events=max_events)
    )
    return UnitCase(session, draw(windows(session)))
