"""Pipeline scripts as data: a configuration and a list of operations.

A whole script is drawn at once, so Hypothesis's shrinker works on plain
lists: deleting an operation deletes what it stored, and every operation
stays valid whatever was deleted before it (see
:mod:`compaction_harness.spec.scripts`). Each field's first value is the harmless
one, so shrinking a value moves towards the plainest run: a user message,
text replies, tools answered at once, sliding-window compaction every
invocation, a fine clock, tiny summaries, in-memory storage.

Every realism dimension of the issue that asked for them is a field here:
time (``resolution``, ``Tie``, ``Skew``; ADK's own backward steps come with
``Ask`` and ``FanOut``), responses (``Answer`` picks: several turns at once,
any order, partial, twice), tokens (sizes in characters, system instruction
and tool declarations, summary sizes, replies without usage metadata),
agents (``FanOut``, ``Delegate``), storage (``database``: reloaded before
every invocation) and configurations (every trigger, edge values included).
"""

from __future__ import annotations

import os
from dataclasses import replace
from functools import cache

from hypothesis import strategies as st

from compaction_harness.spec.app_shape import AppShape
from compaction_harness.spec.scripts import (
    CLOCK_RESOLUTIONS,
    SERVER_URL_VARIABLES,
    STORAGES,
    SUMMARY_SIZES,
    Answer,
    Ask,
    Calls,
    ClientRecord,
    Delegate,
    End,
    FanOut,
    Open,
    Reply,
    Rewind,
    Script,
    ScriptConfig,
    Skew,
    Text,
    Tie,
)

#: Sizes of texts and payloads, in characters (a token is about four).
SIZES = (20, 200, 2000, 5)
#: Context sizes: system instruction, tool declarations.
CONTEXT_SIZES = (0, 400, 4000)

_SIZE = st.sampled_from(SIZES)
_USAGE = st.sampled_from((True, False))


@cache
def _sliding() -> st.SearchStrategy[dict]:
    return st.fixed_dictionaries(
        {"compaction_interval": st.integers(1, 4), "overlap_size": st.integers(0, 3)}
    )


@cache
def _token() -> st.SearchStrategy[dict]:
    # Edge values included: a threshold of 1 (every call is over it), small
    # ones that a few turns reach, large ones that only big payloads reach.
    threshold = st.one_of(st.integers(50, 400), st.just(1), st.integers(401, 5000))
    return st.fixed_dictionaries(
        {"token_threshold": threshold, "event_retention_size": st.integers(0, 5)}
    )


#: One script in DATABASE_ONE_IN stores its session in a database (reloaded
#: before every invocation): ``DatabaseSessionService`` or
#: ``SqliteSessionService`` (what ``adk web`` uses), one as often as the
#: other; the rest in memory. The rule: no storage kind takes more than half
#: of the pipeline's time. Measured with
#: ``bench/storage_share.py`` (google-adk 2.13.0, the gate's 300 scripts):
#: drawn one in two, database scripts took 93% of it (0.76 s a script against
#: 0.06 s in memory); one in twelve, 35 of the 300 and 37% of the time.
DATABASE_ONE_IN = 12
#: ``make fuzz STORAGE=sqlite`` (``HARNESS_STORAGE``): every script stores its
#: session so (a campaign on one backend); unset: drawn as above.
FORCED_STORAGE = os.environ.get("HARNESS_STORAGE") or None
if FORCED_STORAGE is not None and FORCED_STORAGE not in STORAGES:
    raise ValueError(f"HARNESS_STORAGE={FORCED_STORAGE}: expected one of {', '.join(STORAGES)}")


def stored_kinds() -> tuple[str, ...]:
    """The storage kinds a stored script is drawn among: SQLite through
    ``DatabaseSessionService`` and ``SqliteSessionService``, and each database
    server the run has started (``HARNESS_SERVERS``: the environment names
    its URL; ``make fuzz`` starts PostgreSQL and MariaDB), one as often as
    another. The gate starts none before it draws, so its derandomised
    examples never depend on what is installed."""
    return (
        "database",
        "sqlite",
        *tuple(kind for kind, variable in SERVER_URL_VARIABLES.items() if os.environ.get(variable)),
    )


#: ``recent_events`` (``GetSessionConfig.num_recent_events``) as drawn for
#: runner-driver scripts: one script in three reads part of the session (the
#: whole session is what it shrinks to), mostly small values that the raw
#: events compaction keeps exceed (an invocation stores 2 to 6 events), 0
#: (nothing loaded) and a few larger ones.
RECENT_EVENTS = st.sampled_from(("whole", "whole", "read")).flatmap(
    lambda read: (
        st.none()
        if read == "whole"
        else st.one_of(st.integers(1, 8), st.just(0), st.integers(9, 30))
    )
)


@st.composite
def script_configs(
    draw, *, token: bool = True, database: bool = True, recent_events: bool = False
) -> ScriptConfig:
    """A :class:`ScriptConfig`. ``token``: the release has token-threshold
    compaction (1.26.0 and later); ``database``: it can store sessions in
    SQLite (the ``[db]`` extra), one script in :data:`DATABASE_ONE_IN` (it
    shrinks to memory); ``recent_events``: the script may read only the
    session's latest events (:data:`RECENT_EVENTS`; only ADK's ``Runner``
    runs such a script: pass it for runner-driver scripts alone). Without
    it nothing more is drawn, so the other properties' examples stay as
    they were."""
    kinds = ("sliding window", "token threshold", "both triggers") if token else ("sliding window",)
    kind = draw(st.sampled_from(kinds))
    triggers: dict = {}
    if kind != "token threshold":
        triggers.update(draw(_sliding()))
    if kind != "sliding window":
        triggers.update(draw(_token()))
    stored = database and draw(st.integers(1, DATABASE_ONE_IN)) == DATABASE_ONE_IN
    storage = draw(st.sampled_from(stored_kinds())) if stored else "memory"
    if FORCED_STORAGE is not None and database:
        storage = FORCED_STORAGE
    return ScriptConfig(
        **triggers,
        storage=storage,
        resolution=draw(st.sampled_from(CLOCK_RESOLUTIONS)),
        system_chars=draw(st.sampled_from(CONTEXT_SIZES)),
        tools_chars=draw(st.sampled_from(CONTEXT_SIZES)),
        summary=draw(st.sampled_from(SUMMARY_SIZES)),
        strict_provider=draw(st.booleans()),
        call_ids=draw(st.sampled_from(("unique", "per_turn"))),
        recent_events=draw(RECENT_EVENTS) if recent_events else None,
    )


_PICKS = st.lists(st.integers(0, 7), min_size=1, max_size=5).map(tuple)

_TEXT = st.builds(Text, chars=_SIZE, usage=_USAGE)
_OPEN = st.builds(Open, opener=st.sampled_from(("user", "agent")), chars=_SIZE)
_CALLS = st.builds(
    Calls,
    count=st.integers(1, 3),
    # Tools with an interim result keep the invocation going, so a turn can
    # leave calls pending for a client to answer together later; so does a
    # mixed turn (a plain call answered at once beside long-running ones).
    kind=st.sampled_from(("plain", "interim", "long_running", "interim", "mixed")),
    fate=st.sampled_from(("now", "later")),
    chars=_SIZE,
    usage=_USAGE,
)
_ANSWER = st.builds(Answer, picks=_PICKS, again=st.booleans())
#: After how many operations a client answers pending calls (None: never).
_LATER = st.sampled_from((None, 0, 1, 3))
#: When the user answers a confirmation or credential request (None: never):
#: a number of operations later, as a client posts a result, or at the end
#: of the turn that asked or of one or two turns after it, as a person
#: answers an approval while the conversation goes on.
_REPLY_LATER = st.sampled_from((None, 0, ("turns", 0), 1, ("turns", 1), ("turns", 2)))
_FOLLOW_UP = st.builds(Answer, picks=_PICKS)

#: A user's request: a tool confirmation or a credential.
_ASK = st.builds(Ask, kind=st.sampled_from(("confirmation", "auth")))

#: Operation strategies with their weights, plainest first (``sampled_from``
#: shrinks towards the first): model replies, calls and invocations dominate,
#: as they do in real sessions.
_WEIGHTED = (
    (_TEXT, 4),
    (_OPEN, 5),
    (_CALLS, 4),
    (st.just(End()), 1),
    (_ANSWER, 2),
    (_ASK, 1),
    (st.builds(Reply, pick=st.integers(0, 3)), 1),
    (st.builds(FanOut, order=st.sampled_from(("ab", "ba")), chars=_SIZE), 1),
    (st.builds(Delegate, chars=_SIZE), 1),
    (st.builds(Rewind, back=st.integers(1, 3)), 1),
    (st.just(Tie()), 1),
    (st.builds(Skew, seconds=st.sampled_from((10, 60, 1))), 1),
    (st.builds(ClientRecord, back=st.integers(1, 4)), 1),
)
#: Human in the loop as the runner's campaign item draws it
#: (``differential_scripts(hitl=True)``): a user's request (``Ask``: a tool
#: confirmation or a credential) weighs :data:`HITL_ASKS` among the
#: operations (1 elsewhere), and the user answers after one to three later
#: turns in three answers of seven (:data:`_HITL_REPLY_LATER`; two of six
#: elsewhere). The ``Runner`` is the one driver where ADK's request
#: processors run on the user's answer (``flows/llm_flows/tools/
#: _confirmation.py``, ``auth/auth_preprocessor.py``); the emulating driver
#: stores the same events without them. Two faults live there, and the fault
#: benchmark found them in 4 and 3 of 5 trials (``docs/fault-times/``).
#: Measured on the runner item's scripts (8 seeded runs of 200 examples each,
#: google-adk 2.13.0 with every fix but the fault's), runs that met the fault:
#: ``confirmation-of-a-reused-call-id-raises`` 1 of 8 as elsewhere, 4 with
#: the weight alone; ``credential-grant-runs-another-turns-call`` 1 of 8, 2
#: with the weight alone (2 with a weight of 5), 5 with both. Each ``Ask``
#: and ``Reply`` shrinks away like any operation.
HITL_ASKS = 3
_HITL_REPLY_LATER = st.sampled_from(
    (None, 0, ("turns", 0), 1, ("turns", 1), ("turns", 2), ("turns", 3))
)


@cache
def operations(asks: int = 1) -> st.SearchStrategy:
    """One operation of any kind, the common ones more often; ``asks``: the
    weight of a user's request (:data:`HITL_ASKS` for ``hitl`` scripts)."""
    pool = tuple(
        strategy
        for strategy, weight in _WEIGHTED
        for _ in range(asks if strategy is _ASK else weight)
    )
    return st.sampled_from(pool).flatmap(lambda strategy: strategy)


@st.composite
def scripts(
    draw,
    *,
    max_operations: int = 24,
    token: bool = True,
    database: bool = True,
    recent_events: bool = False,
    hitl: bool = False,
) -> Script:
    """A :class:`~compaction_harness.spec.scripts.Script`: a configuration (see
    :func:`script_configs`, which says what ``recent_events`` draws), a first
    invocation opened by a user, then up to ``max_operations`` operations
    (``hitl``: user requests and late answers as ADK's ``Runner`` is given
    them, :data:`HITL_ASKS`)."""
    config = draw(script_configs(token=token, database=database, recent_events=recent_events))
    ops = draw(_turns(max_operations, HITL_ASKS if hitl else 1))
    replies = _HITL_REPLY_LATER if hitl else _REPLY_LATER
    return Script(config, (Open(), *_answered_later(draw, ops, replies)))


#: Most turns a script draws after its first (each opened by a user or an agent).
MAX_TURNS = 6


@cache
def _turns(max_operations: int, asks: int = 1) -> st.SearchStrategy[list]:
    """The operations after a script's first ``Open``, drawn turn by turn:
    the first turn's operations, then up to :data:`MAX_TURNS` more turns,
    each an ``Open`` and the operations of that turn, at most
    ``max_operations`` in all. Drawn as one flat list, Hypothesis's lists
    average six elements whatever their bound, so a script held two
    invocations in the median (measured: 13% held four or more), and the
    faults that need compaction to fire turn after turn behind a waiting
    call (``compaction-stops-while-a-call-waits``: P3) took 90 s to find.
    Drawn by turns, a script holds five invocations in the median (measured
    over 1,000 drawn scripts). The client's and the user's answers
    (:func:`_answered_later`) come on top of ``max_operations``. Deleting a
    turn, or any operation in one, leaves a valid script: it shrinks as
    before."""
    turn = st.tuples(_OPEN, st.lists(operations(asks), max_size=5)).map(lambda t: [t[0], *t[1]])
    first = st.lists(operations(asks), min_size=1, max_size=5)
    later = st.lists(turn, max_size=MAX_TURNS)
    return st.tuples(first, later).map(
        lambda drawn: [*drawn[0], *(op for t in drawn[1] for op in t)][:max_operations]
    )


def _answered_later(draw, ops: list, replies: st.SearchStrategy = _REPLY_LATER) -> list:
    """``ops`` with a client's answer after some long-running calls, a few
    operations later, as a client usually does post their results (a plain
    call left pending is one whose tool's process died: nobody has its
    result), and the user's answer (``Reply``, to the oldest request
    waiting) after some confirmation and credential requests. Drawn alone,
    a ``Reply`` rarely lands after an ``Ask`` (measured on ADK-JS's scripts:
    0 effective replies in 300), so the resumed tool, where
    ``credential-grant-runs-another-turns-call`` and
    ``confirmation-of-a-reused-call-id-raises`` live, went untested (the
    fault benchmark: neither found in 120 s). A user's answer comes a few
    operations later, or at the end of the turn that asked or of one or two
    turns after it (:data:`_REPLY_LATER`): counted in operations alone, it
    landed after a later turn's calls in 0.6% of the runner item's scripts
    (12 of 2,000), where the faults of a resumed tool live. ``replies``: when
    the user answers (:data:`_REPLY_LATER`, or :data:`_HITL_REPLY_LATER`)."""
    followed: list = []
    for op in ops:
        followed.append(op)
        if isinstance(op, Calls) and op.kind != "plain":
            later = draw(_LATER)
            if later is not None:
                followed.append((later, draw(_FOLLOW_UP)))
        elif isinstance(op, Ask):
            later = draw(replies)
            if isinstance(later, tuple):
                followed.append(["turns", later[1], Reply()])
            elif later is not None:
                followed.append(["ops", later, Reply()])
    placed: list = []
    waiting: list = []
    for item in followed:
        if isinstance(item, tuple):
            item = ["ops", *item]
        if isinstance(item, list):
            waiting.append(item)
            continue
        if isinstance(item, Open):  # a turn ends: answers due at its end come first
            for entry in waiting:
                entry[1] -= entry[0] == "turns"
            placed += [e[2] for e in waiting if e[0] == "turns" and e[1] < 0]
            waiting = [e for e in waiting if not (e[0] == "turns" and e[1] < 0)]
        placed.append(item)
        for entry in waiting:
            entry[1] -= entry[0] == "ops"
        placed += [e[2] for e in waiting if e[0] == "ops" and e[1] < 0]
        waiting = [e for e in waiting if not (e[0] == "ops" and e[1] < 0)]
    return placed + [e[2] for e in waiting]


def _comparable(script: Script, answers: bool, final_text: bool) -> Script:
    """``script`` cut to what the emulating driver and ADK's ``Runner`` can be
    compared on (see :func:`differential_scripts`)."""
    config, ops = script.config, script.operations
    if final_text:
        followed: list = []
        for op, after in zip(ops, (*ops[1:], None), strict=True):
            followed.append(op)
            if isinstance(op, Text) and isinstance(after, Text | Calls | Ask):
                followed.append(Open())
        ops = tuple(followed)
    resolution = 1e-6 if config.resolution == 1e-3 else config.resolution
    if config.storage != "memory":
        resolution = 1e-6
        ops = tuple(op for op in ops if not isinstance(op, Tie))
    if not answers:
        ops = tuple(op for op in ops if not isinstance(op, Answer | Reply))
    return Script(replace(config, resolution=resolution), ops)


def differential_scripts(
    *,
    max_operations: int = 16,
    token: bool = True,
    database: bool = True,
    answers: bool = True,
    final_text: bool = False,
    recent_events: bool = False,
    hitl: bool = False,
) -> st.SearchStrategy[Script]:
    """Scripts (as :func:`scripts` draws them) that both drivers run
    comparably, so their stored sessions can be compared event by event:

    * a millisecond clock is drawn as a fine one: whether two events fall in
      one millisecond depends on how many times a driver reads its clock
      between them (the ``Runner`` reads it a few times per event), and ADK's
      compaction reads timestamp ranges, so such ties change what is
      compacted; a fine clock (no ties) and a one-second clock (every event
      of an invocation in one tick) mean the same to both drivers;
    * with database storage, a fine clock and no ``Tie``: the database gives
      events of equal timestamp back in the order of their ids, which each
      driver draws in a sequence of its own (``driver.ScriptIds``: a function
      of the script, but not the same ids for both);
    * ``answers=False`` leaves out ``Answer`` and ``Reply``, for ``Runner``
      paths on which a client's function response starts an invocation of
      its own (``adk_runner.answers_continue_invocation``);
    * ``final_text=True``, for a root ``LlmAgent`` (whose run ends at its
      first text reply): a user message follows a text that more model
      replies follow, as the user of such an agent sends one (the runner
      driver would otherwise end the invocation there, and the model replies
      after it would do nothing);
    * ``recent_events=True`` draws partial reads too (``config.recent_events``),
      which only the runner driver runs: for the runner's own property, never
      for the differential test;
    * ``hitl=True``: user requests and late answers as the runner's own
      property draws them (:data:`HITL_ASKS`).
    """
    drawn = scripts(
        max_operations=max_operations,
        token=token,
        database=database,
        recent_events=recent_events,
        hitl=hitl,
    )
    return drawn.map(lambda script: _comparable(script, answers, final_text))


def _app_operations(app: AppShape, size: st.SearchStrategy) -> st.SearchStrategy:
    """The operations a user's app can run (see :func:`app_scripts`), texts
    and payloads of ``size`` characters."""
    text = st.builds(Text, chars=size, usage=_USAGE)
    opened = st.builds(Open, opener=st.sampled_from(("user", "agent")), chars=size)
    kinds = [k for k, present in (("plain", "plain"), ("interim", "long_running"),
             ("long_running", "long_running")) if app.tool(present)]  # fmt: skip
    if app.tool("plain") and app.tool("long_running"):
        kinds.append("mixed")  # one model turn with both
    asks = [k for k, tool in (("confirmation", "confirmation"), ("auth", "credential"))
            if app.tool(tool)]  # fmt: skip
    weighted: list[tuple[st.SearchStrategy, int]] = [
        (text, 4),
        (opened, 5),
        (st.just(End()), 1),
        (st.builds(Rewind, back=st.integers(1, 3)), 1),
        (st.just(Tie()), 1),
    ]
    if kinds:
        weighted.append(
            (
                st.builds(
                    Calls,
                    count=st.integers(1, 3),
                    kind=st.sampled_from(kinds),
                    fate=st.sampled_from(("now", "later")),
                    chars=size,
                    usage=_USAGE,
                ),
                4,
            )
        )
    if app.tool("long_running"):
        # A client answers what the app leaves to it: a long-running tool's
        # calls. An app whose tools all return at once has no such client (a
        # plain call left pending is one whose tool's process died).
        weighted.append((_ANSWER, 2))
    if asks:
        weighted += [
            (st.builds(Ask, kind=st.sampled_from(asks)), 1),
            (st.builds(Reply, pick=st.integers(0, 3)), 1),
        ]
    if app.team is not None:
        weighted.append((st.builds(FanOut, order=st.sampled_from(("ab", "ba")), chars=size), 1))
    if app.helper is not None:
        weighted.append((st.builds(Delegate, chars=size), 1))
    pool = tuple(strategy for strategy, weight in weighted for _ in range(weight))
    return st.sampled_from(pool).flatmap(lambda strategy: strategy)


@st.composite
def app_scripts(
    draw, config: ScriptConfig, *, call_ids: bool = True, max_operations: int = 24
) -> Script:
    """Scripts on a user's app: ``config`` fixes what the app fixes (its
    ``app`` shape, trigger values, instruction and declaration sizes, its
    provider's strictness, the storage); the rest is drawn as :func:`scripts`
    draws it: the clock's resolution, the summaries' size, the provider's call
    ids (``call_ids=False``: ``config``'s, as a Gemini model gives none and
    ADK makes unique ones). Only what the app has is drawn: calls of the
    kinds of tool it has, a client's answers where it has a long-running
    tool, confirmations and credential requests where it has such tools,
    ``FanOut`` with a parallel agent, ``Delegate`` with a second LLM agent;
    never a client's own compaction record nor a host's clock skew
    (a harness shape, not an app's). Sizes are :data:`SIZES` and, with a
    token threshold, half of it in characters: a few large tool results or
    messages reach the app's own threshold, however large it is. Runs on
    ADK's ``Runner`` (``driver="runner"``)."""
    app = config.app
    if app is None:
        raise ValueError("app_scripts needs a config with an app shape (config.app)")
    drawn = replace(
        config,
        driver="runner",
        resolution=draw(st.sampled_from(CLOCK_RESOLUTIONS)),
        summary=draw(st.sampled_from(SUMMARY_SIZES)),
        call_ids=draw(st.sampled_from(("unique", "per_turn"))) if call_ids else config.call_ids,
    )
    sizes = SIZES
    if config.token_threshold is not None:
        sizes += (min(100_000, config.token_threshold * 2),)  # half the threshold, in characters
    ops = draw(
        st.lists(_app_operations(app, st.sampled_from(sizes)), min_size=1, max_size=max_operations)
    )
    return Script(drawn, (Open(), *_answered_later(draw, ops)))
