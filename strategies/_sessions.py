"""Session strategies: invocations built the way ADK's runtime builds them.

A session is drawn as a plan (a list of invocations, each an opener and a list
of turns) and built by :class:`_Builder`, which places the episodes of
``_episodes.py`` and delivers their follow-ups later, out of order, merged or
never. An invocation opens with a user message, with a function response (the
client answering an earlier long-running call or request), or with nothing (a
resumed or agent-started invocation). Some invocations carry no invocation id,
a branch or an isolation scope; some end with a rewind.

Every random choice goes through Hypothesis, in an order that shrinks well:
the plan is drawn as lists, so deleting an element deletes events, and the
first choice of every ``sampled_from`` is the harmless one.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cache

from hypothesis import strategies as st

from compaction_harness.sdk.python.metamorphic import MetamorphicCase, interleave_scope
from compaction_harness.sdk.python.unit import TokenCase, UnitCase
from compaction_harness.spec import reference
from compaction_harness.spec.model import Compaction, Session, Step

from ._episodes import (
    AGENT,
    NEW_ID,
    NEW_SYNTHETIC_ID,
    USER,
    Episode,
    Template,
    auth_episode,
    confirmation_episode,
    function_calls,
    long_running_episode,
    model_text,
    response_without_call,
    rotated,
)

#: A small pool so that call ids collide across invocations on purpose.
ID_POOL = ("c0", "c1", "c2", "c3")

# Ordered so that shrinking (towards the first element) removes events.
OPENERS = ("none", "user", "response")
TURNS = ("text", "call", "answer", "call", "answer", "compaction", "ghost_response", "rewind")
# What a tool call turns into: drawn *after* the call, so that shrinking it to
# "none" turns a long-running, confirmation or auth episode back into the plain
# call it was built on, with every earlier choice unchanged.
HITL = ("none", "none", "long_running", "confirmation", "auth")
RANGE_KINDS = ("range", "nested", "overlap", "repeat", "odd")

# Strategies are built once: building one per draw costs more than the draw.
#: Which events share their predecessor's timestamp (positions in the
#: session): drawn once per session, shrinking towards none.
_TIES = st.frozensets(st.integers(1, 29), max_size=4)
#: A call id: from the pool (shrinks to "c0"), or a fresh one never used before.
IDS = st.sampled_from((*ID_POOL, NEW_ID))
SYNTHETIC_IDS = st.just(NEW_SYNTHETIC_ID)
_ATTRS = st.integers(0, 11)  # 11: no invocation id, 10: a branch, 9: an isolation scope
_RANGE_KIND = st.sampled_from(RANGE_KINDS)
_ODD = st.sampled_from(("backwards", "zero", "negative", "future"))
_RETENTION = st.integers(0, 6)
_HITL = st.sampled_from(HITL)
_OTHER_TOKENS = st.sampled_from((None, 0, 10**9))


@cache
def _plan(max_invocations: int, max_turns: int) -> st.SearchStrategy:
    return st.lists(
        st.tuples(
            st.sampled_from(OPENERS),
            st.lists(st.sampled_from(TURNS), max_size=max_turns),
            _ATTRS,
        ),
        min_size=1,
        max_size=max_invocations,
    )


@cache
def _below(n: int) -> st.SearchStrategy[int]:
    return st.integers(0, n - 1)


@dataclass
class _Builder:
    steps: list[Step] = field(default_factory=list)
    chains: list[list[Template]] = field(default_factory=list)  # follow-ups not delivered
    clock: float = 0.0
    fresh: int = 0
    synthetic: int = 0
    branch: str | None = None
    scope: str | None = None
    ties: frozenset[int] = frozenset()

    def tick(self, draw) -> float:
        # Neighbouring events share a timestamp now and then, as fast tools do.
        if len(self.steps) not in self.ties:
            self.clock += 1.0
        return self.clock

    def place(self, draw, inv: str, template: Template) -> None:
        self.steps.append(
            template.place(inv, self.tick(draw), branch=self.branch, isolation_scope=self.scope)
        )

    def rename(self, episode: Episode) -> Episode:
        """The episode with its placeholder ids made unique in the session."""
        names: dict[str, str] = {}
        if any(NEW_ID in _ids(t) for t in _templates(episode)):
            self.fresh += 1
            names[NEW_ID] = f"f{self.fresh}"
        if any(NEW_SYNTHETIC_ID in x for t in _templates(episode) for x in _ids(t)):
            self.synthetic += 1
            names[NEW_SYNTHETIC_ID] = f"adk-{self.synthetic}"
            names[f"ghost-{NEW_SYNTHETIC_ID}"] = f"ghost-{self.synthetic}"
        if not names:
            return episode
        return Episode(
            episode.name,
            tuple(_renamed(t, names) for t in episode.now),
            tuple(tuple(_renamed(t, names) for t in chain) for chain in episode.later),
        )

    def run(self, draw, inv: str, episode: Episode) -> None:
        episode = self.rename(episode)
        for template in episode.now:
            self.place(draw, inv, template)
        self.chains.extend(list(chain) for chain in episode.later)

    def deliver(self, draw, inv: str, author: str | None = None) -> bool:
        """Deliver the next part of some pending chains; False if none fits.

        Plain answers from several chains may share one event (one response
        event answering calls made in different turns); anything else arrives
        alone. ``author`` restricts which chains may deliver (an invocation
        opened by a response is opened by the client).
        """
        ready = [c for c in self.chains if author is None or c[0].author == author]
        if not ready:
            return False
        if len(ready) > 1:
            ready = rotated(ready, draw(_below(len(ready))), draw(st.booleans()))
        chosen = ready[: 1 + draw(_below(len(ready)))]
        heads = [c[0] for c in chosen]
        if len(heads) > 1 and all(h.is_plain_answer and h.author == heads[0].author for h in heads):
            merged = Template(
                author=heads[0].author, responses=tuple(r for h in heads for r in h.responses)
            )
        else:
            chosen, merged = chosen[:1], heads[0]
        self.place(draw, inv, merged)
        for chain in chosen:
            chain.pop(0)
            if not chain:
                self.chains.remove(chain)
        return True

    def summary(self, draw, inv: str) -> None:
        raw = [s for s in self.steps if s.compaction is None]
        if not raw:
            return
        last = next((s.compaction for s in reversed(self.steps) if s.compaction), None)
        kind = draw(_RANGE_KIND)
        lo = draw(_below(len(raw)))
        hi = lo + draw(_below(len(raw) - lo))
        start, end = raw[lo].timestamp, raw[hi].timestamp
        if kind == "nested" and last is not None:
            start = end = (last.start + last.end) / 2
        elif kind == "overlap" and last is not None:
            start, end = (last.start + last.end) / 2, max(end, last.end + 1)
        elif kind == "repeat" and last is not None:
            start, end = last.start, last.end
        elif kind == "odd":
            odd = draw(_ODD)
            start, end = {
                "backwards": (end, start - 1),
                "zero": (0.0, 0.0),
                "negative": (-5.0, -1.0),
                "future": (start, self.clock + 100),
            }[odd]
        self.steps.append(
            Step(
                inv,
                AGENT,
                self.tick(draw),
                compaction=Compaction(start, end),
                branch=self.branch,
                isolation_scope=self.scope,
            )
        )

    def rewind(self, draw, number: int) -> None:
        earlier = list(dict.fromkeys(s.invocation for s in self.steps if s.invocation))
        if not earlier:
            return
        target = earlier[draw(_below(len(earlier)))]
        rewind_inv = f"r{number}"
        self.steps.append(Step(rewind_inv, USER, self.tick(draw), rewind_before=target))


def _templates(episode: Episode):
    yield from episode.now
    for chain in episode.later:
        yield from chain


def _ids(t: Template) -> list[str]:
    return [
        *(c.id for c in t.calls),
        *(r.id for r in t.responses),
        *t.long_running,
        *t.confirmations,
        *t.auth_requests,
    ]


def _renamed(t: Template, names: dict[str, str]) -> Template:
    def n(x: str) -> str:
        return names.get(x, x)

    return replace(
        t,
        calls=tuple(replace(c, id=n(c.id)) for c in t.calls),
        responses=tuple(replace(r, id=n(r.id)) for r in t.responses),
        long_running=tuple(map(n, t.long_running)),
        confirmations=tuple(map(n, t.confirmations)),
        auth_requests=tuple(map(n, t.auth_requests)),
    )


_PLAIN_CALLS = function_calls(IDS)


@st.composite
def _tool_call(draw) -> Episode:
    """A function-call episode, or a long-running, confirmation or auth
    episode built on its first call."""
    plain = draw(_PLAIN_CALLS)
    kind = draw(_HITL)
    first = plain.now[0].calls[0]
    if kind == "long_running":
        return long_running_episode(first, draw(st.booleans()))
    if kind == "confirmation":
        return confirmation_episode(first, NEW_SYNTHETIC_ID)
    if kind == "auth":
        return auth_episode(first, NEW_SYNTHETIC_ID)
    return plain


_EPISODES = {
    "text": model_text(),
    "call": _tool_call(),
    "ghost_response": response_without_call(SYNTHETIC_IDS),
}


@st.composite
def sessions(draw, max_invocations: int = 6, max_turns: int = 4, max_events: int = 30) -> Session:
    """A realistic session of at most ``max_events`` events.

    Every episode of ``_episodes.py`` can appear; follow-ups arrive later, out
    of order, merged into one event, or never (orphans and pending requests).
    Also: invocations opened by a user message, a response or nothing; prior
    summaries whose ranges nest, overlap, repeat or hold odd values; equal
    timestamps; call ids reused across invocations; rewinds; branches and
    isolation scopes.
    """
    b = _Builder(ties=draw(_TIES))
    for number, (opener, turns, attrs) in enumerate(draw(_plan(max_invocations, max_turns)), 1):
        inv = "" if attrs == 11 else f"i{number}"
        b.branch = "root.helper" if attrs == 10 else None
        b.scope = "task-1" if attrs == 9 else None
        if opener == "user" or (opener == "response" and not b.deliver(draw, inv, USER)):
            b.place(draw, inv, Template(author=USER, text=f"user {number}"))
        for turn in turns:
            if turn in _EPISODES:
                b.run(draw, inv, draw(_EPISODES[turn]))
            elif turn == "answer":
                b.deliver(draw, inv)
            elif turn == "compaction":
                b.summary(draw, inv)
            elif turn == "rewind":
                b.rewind(draw, number)
                break  # a rewind ends the invocation; the next one starts afresh
        if len(b.steps) >= max_events:
            break
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
    raw = draw(
        sessions(max_invocations=max_invocations, max_turns=max_turns, max_events=max_events)
    )
    # ADK's compactors work on the live events of one isolation scope: rewinds
    # applied, other scopes left out (google/adk/apps/compaction.py callers).
    session = reference.live_events(raw, isolation_scope=None)
    return UnitCase(session, draw(windows(session)), origin=raw)


@st.composite
def token_cases(
    draw, max_invocations: int = 6, max_turns: int = 4, max_events: int = 30
) -> TokenCase:
    """A :class:`TokenCase`: the live events of a session and an
    ``event_retention_size`` from 0 to 6."""
    raw = draw(
        sessions(max_invocations=max_invocations, max_turns=max_turns, max_events=max_events)
    )
    live = reference.live_events(raw, isolation_scope=None)
    return TokenCase(live, draw(_RETENTION), origin=raw)


@st.composite
def metamorphic_cases(draw, relation: str) -> MetamorphicCase:
    """A :class:`MetamorphicCase` for ``relation`` (see ``metamorphic.RELATIONS``).

    ``added_response`` inserts a response outside the window, to an id the
    session calls (or a fresh one); ``isolation_scope`` interleaves copies of
    the session's own events, moved to another scope and with prompt-token
    counts of their own, into a session whose newest event is over the token
    threshold.
    """
    case = draw(unit_cases())
    if relation in ("rename", "texts", "bare_actions"):
        return MetamorphicCase(case.session, relation, case.window, origin=case.origin)
    if relation == "added_response":
        n, window = len(case.session), case.window
        outside = (
            list(range(n + 1))
            if not window
            else [
                *range(window[0] + 1),
                *range(window[-1] + 1, n + 1),
            ]
        )
        called = sorted({c.id for s in case.session for c in s.calls}) or ["fresh"]
        return MetamorphicCase(
            case.session,
            relation,
            window,
            index=outside[draw(_below(len(outside)))],
            call_id=called[draw(_below(len(called)))],
            origin=case.origin,
        )
    own = case.session
    if own.steps:
        own = own.replace_step(len(own) - 1, replace(own[-1], prompt_tokens=1_000_000))
    copies = draw(st.lists(st.tuples(_below(max(len(own), 1)), _OTHER_TOKENS), max_size=4))
    extra = [
        replace(own[k], isolation_scope="task-1", prompt_tokens=tokens)
        for k, tokens in copies
        if own.steps
    ]
    after = [k for k, _ in copies][: len(extra)]
    mixed = interleave_scope(own, extra, after)
    return MetamorphicCase(mixed, relation, retention=draw(_RETENTION), origin=case.origin)
