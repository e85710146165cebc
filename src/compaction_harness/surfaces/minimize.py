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
   window first, is *the* failure, named by :func:`~compaction_harness.surfaces.verdicts.signature`:
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

**With the configuration the session ran with** (:func:`minimize_recorded`;
``minimize --config``): the session is judged as its app ran it, not with
configurations it never ran with. The session (its own summaries left out)
is replayed through ADK's compaction with those trigger values and its
agents' names (:func:`~compaction_harness.sdk.python.pipeline.recorded_case`), and

* U1 to U4 are checked on exactly the calls of the prefix helper
  (``_longest_self_contained_prefix``) that replay made, and U5 on exactly
  the token-threshold splits it made (``_events_to_compact_for_token_threshold``,
  with the configured ``event_retention_size``): none where the
  configuration has no such trigger, or where ADK's trigger never fired;
* every pipeline invariant (P0 to P7) is checked on the replay itself, known
  upstream faults classified as ``replay`` does.

The first failing helper call, else the first pipeline violation, is the
failure. A unit-level failure shrinks as above (U5 keeping the configured
retention); a pipeline-level one shrinks over sub-sequences of the session,
each replayed with the same configuration and agents, and its fixture is a
``pipeline`` fixture that ``replay`` judges with them. A session that holds
is reported with the invariants and the configuration covered
(:class:`Holds`). The replay's summaries have the sizes of the session's own
(ADK weighs a range against the previous summary's size before it compacts),
and the session's summaries are evidence of its configuration: when the
replay's are not the session's (their ranges), nothing is judged and the
difference is the answer (:class:`Differs`).

No shrinking algorithm is written here: Hypothesis's :func:`~hypothesis.find`
does the search and the shrinking.
"""

from __future__ import annotations

import contextlib
import json
import shlex
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

from hypothesis import HealthCheck, Phase, find, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

from ..faults.classify import asking_about
from ..sdk.python.metamorphic import canonical_names, rename
from ..sdk.python.pipeline import recorded_case
from ..sdk.python.unit import TokenCase, UnitCase
from ..spec import reference
from ..spec.invariants import PIPELINE_INVARIANTS, Violation, invariants_of
from ..spec.model import Compaction, ModelError, Session
from ..spec.pipeline_case import CONFIG_KEYS, PipelineCase
from .verdicts import check, signature

__all__ = [
    "MAX_RETENTION",
    "Differs",
    "Failure",
    "Holds",
    "MinimizeError",
    "Minimized",
    "also_fails",
    "anonymise",
    "anonymous_agents",
    "failure_as_given",
    "minimize",
    "minimize_recorded",
]

#: The ``event_retention_size`` values tried for U5.
MAX_RETENTION = 6
UNIT_LEVEL = invariants_of("unit", "token")


class MinimizeError(ValueError):
    """The invariant cannot be minimised (one-line message)."""


@dataclass(frozen=True)
class Failure:
    """A failing call: the case, its first violation of the invariant, and the
    known upstream fault that explains it (None: a new failure)."""

    case: UnitCase | TokenCase | PipelineCase
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
    #: A recorded session's first failure of each other invariant it breaks
    #: as given, in the order the invariants are judged (unshrunk:
    #: ``minimize --invariant X`` shrinks one of them).
    others: tuple[Failure, ...] = ()


def _shift(timestamp: float, origin: float) -> float:
    # Exact decimal difference, so order and ties survive the shift.
    return float(Decimal(repr(timestamp)) - Decimal(repr(origin)) + 1)


def _author_names(session: Session, agents: Sequence[str] = ()) -> dict[str, str]:
    """Author -> anonymous name (``user`` stays): ``agent0, agent1, ...`` in
    order of first appearance, then the ``agents`` that wrote no event."""
    table = {"user": "user"}
    for author in [s.author for s in session if s.author] + list(agents):
        table.setdefault(author, f"agent{len(table) - 1}")
    return table


def anonymous_agents(session: Session, agents: Sequence[str]) -> tuple[str, ...]:
    """``agents`` (names of ``session``'s app) as :func:`anonymise` names them."""
    table = _author_names(session, agents)
    return tuple(table[a] for a in agents)


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
        "author": _author_names(session),
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
def _cases(
    draw, session: Session, invariant: str, retention: int | None = None
) -> UnitCase | TokenCase:
    """A sub-sequence of ``session`` closed under answers (each event kept or
    dropped, shrinking towards dropped), then the call: for U1 to U4 a window
    of invocations (shrinking towards all of them, so that the shrinker's
    work is dropping events), for U5 the session at an invocation's end and a
    retention size (``retention``: that one, the configured size)."""
    keep = draw(st.lists(st.booleans(), min_size=len(session), max_size=len(session)))
    live = reference.live_events(_closed(session, keep))
    runs = _invocations(live)
    if not runs:
        return UnitCase(live, ())
    last = len(runs) - 1 - draw(st.integers(0, len(runs) - 1))
    if invariant == "U5":
        size = draw(st.integers(0, MAX_RETENTION)) if retention is None else retention
        return TokenCase(Session(live.steps[: runs[last][1]]), size)
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
    return _shrink(given, _cases(anonymous, invariant), _failures, max_examples)


def _shrink(
    given: Failure,
    strategy: st.SearchStrategy[Any],
    failures: Callable[[Any], Iterator[Failure]],
    examples: int,
) -> Minimized:
    """The smallest case of ``strategy`` that Hypothesis's :func:`~hypothesis.find`
    finds failing as ``given`` does (the same signature among ``failures``),
    within ``examples`` examples; ``given`` itself when none is smaller."""
    target = given.signature
    # Shrinking asks of each candidate only whether it is this failure: the
    # fix that names the given one removes it (or, for a new or pattern-known
    # one, every fix together leaves it), not which fixes remove it each.
    evidence = str(given.violation.details.get("evidence", ""))
    asked: tuple[str, ...] | None = (
        ()
        if given.fault is None or evidence == "pattern"
        else (evidence[4:],)
        if evidence.startswith("fix ") and "+" not in evidence
        else None
    )

    def same_failure(candidate: Any) -> bool:
        with asking_about(asked) if asked is not None else contextlib.nullcontext():
            return any(found.signature == target for found in failures(candidate))

    try:
        case = find(
            strategy,
            same_failure,
            settings=settings(
                max_examples=examples,
                database=None,
                derandomize=True,  # the same session gives the same fixture
                deadline=None,
                phases=[Phase.generate, Phase.shrink],
                suppress_health_check=list(HealthCheck),
            ),
        )
    except NoSuchExample:
        return Minimized(given, given, shrunk=False)
    smallest = next(f for f in failures(case) if f.signature == target)
    if len(smallest.case.session) >= len(given.case.session):
        return Minimized(given, given, shrunk=False)
    return Minimized(given, smallest, shrunk=True)


def also_fails(
    found: Minimized,
    path: object = "SESSION.json",
    config: Mapping[str, Any] | None = None,
    agents: Sequence[str] = (),
) -> list[str]:
    """One line for each invariant other than the one shrunk that a recorded
    session breaks as given (:attr:`Minimized.others`): its first violation,
    its known fault if any, and the command that shrinks it: ``minimize`` of
    the session at ``path`` with its configuration ``config`` (the trigger
    values it was judged with) and ``agents``, and ``--invariant X``."""
    command = f"python -m compaction_harness minimize {shlex.quote(str(path))}"
    if config is not None:
        command += f" --config {shlex.quote(json.dumps(config))}"
    command += "".join(f" --agent {shlex.quote(agent)}" for agent in agents)
    lines = []
    for other in found.others:
        invariant = other.violation.invariant
        known = f" (known upstream fault {other.fault})" if other.fault else ""
        lines.append(
            f"it also fails {invariant} as given{known}: {other.violation.summary()} "
            f"(`{command} --invariant {invariant}` shrinks that one)"
        )
    return lines


# -- with the configuration the session ran with ---------------------------------------
#: The invariants each trigger makes ADK check (the helper calls it makes).
SLIDING_LEVEL = invariants_of("unit")


@dataclass(frozen=True)
class Differs:
    """A session whose replay with the configuration given makes other
    summaries than the run stored: the configuration (or the agents) is not
    the one it ran with, so nothing the replay shows is judged. ``reason``:
    the one line that says how they differ."""

    reason: str


@dataclass(frozen=True)
class Holds:
    """A session that holds: ``covered`` says which invariants were judged,
    on which calls, with which configuration and agents."""

    covered: str


def describe_config(config: Mapping[str, int | None], agents: Sequence[str]) -> str:
    """``compaction_interval=2, overlap_size=1, ...; agents assistant (root)``."""
    values = ", ".join(f"{k}={config.get(k)}" for k in CONFIG_KEYS)
    names = ", ".join(agents) if agents else "agent"
    return f"{values}; agents {names} (root first)"


def applicable(config: Mapping[str, int | None]) -> tuple[str, ...]:
    """The invariants that apply to a session run with ``config``: U1 to U4
    with a sliding window (and with a token threshold, whose range ADK trims
    with the same prefix helper), U5 with a token threshold, and every
    pipeline invariant."""
    out: list[str] = []
    if config.get("compaction_interval") is not None or config.get("token_threshold") is not None:
        out += SLIDING_LEVEL
    if config.get("token_threshold") is not None:
        out.append("U5")
    return (*out, *PIPELINE_INVARIANTS)


def helper_calls(
    case: PipelineCase, differs: list[str] | None = None
) -> list[UnitCase | TokenCase]:
    """The unit-level calls ADK's compaction makes when ``case`` is replayed:
    each call of ``_longest_self_contained_prefix`` (as a :class:`UnitCase`:
    the events it was given as the window of ``all_events``) and of
    ``_events_to_compact_for_token_threshold`` (as a :class:`TokenCase` of the
    events it was given and the retention it was asked for), in order. Calls
    on the copies that P6's counterfactual makes are not ADK's and are left
    out; the replay classifies nothing (a run never does), so no known-fault predicate's
    counterfactual runs either.

    ``differs``: where the replay's summaries differ from those the recorded
    run stored (``case.recorded``), the one line that says how is appended
    to it (see :func:`~compaction_harness.spec.pipeline_case.compaction_difference`)."""
    from ..sdk.python import adk
    from ..sdk.python.adk import _compaction, from_adk_events
    from ..sdk.python.pipeline import run_pipeline_case

    calls: list[UnitCase | TokenCase] = []
    counterfactual = [False]
    prefix = getattr(_compaction, "_longest_self_contained_prefix", None)
    token = getattr(_compaction, "_events_to_compact_for_token_threshold", None)
    counting = adk.summariser_called

    def recorded_prefix(events, *args, **kwargs):
        if not counterfactual[0]:
            everything = list(kwargs.get("all_events") or (args[0] if args else None) or events)
            position = {id(e): i for i, e in enumerate(everything)}
            if all(id(e) in position for e in events):
                window = tuple(position[id(e)] for e in events)
                calls.append(UnitCase(from_adk_events(everything), window))
        return prefix(events, *args, **kwargs)

    def recorded_token(*args, **kwargs):
        if not counterfactual[0]:
            events = kwargs.get("events", args[0] if args else None)
            retention = kwargs.get("event_retention_size", args[1] if len(args) > 1 else None)
            if events is not None and retention is not None:
                calls.append(TokenCase(from_adk_events(list(events)), retention))
        return token(*args, **kwargs)

    def not_adks(*args, **kwargs):
        counterfactual[0] = True
        try:
            return counting(*args, **kwargs)
        finally:
            counterfactual[0] = False

    def install(prefix_helper, token_helper, summariser_called) -> None:
        # A helper the installed release lacks stays absent.
        if prefix is not None:
            _compaction._longest_self_contained_prefix = prefix_helper
        if token is not None:
            _compaction._events_to_compact_for_token_threshold = token_helper
        adk.summariser_called = summariser_called

    try:
        install(recorded_prefix, recorded_token, not_adks)
        replayed = run_pipeline_case(case)
        if differs is not None and "recorded_differs" in replayed.observed:
            differs.append(replayed.observed["recorded_differs"])
    finally:
        install(prefix, token, counting)
    return calls


def _unless_the_fixes_moved_it(case: PipelineCase, differs: str) -> str:
    """Why the replay of a recorded ``case`` is not the run (``differs``: its
    replay, with the fixes applied now, made other summaries than the run
    stored): with fixes applied, the replay again as the release is
    published tells whether the fixes moved the compactions
    (:func:`.switch.moved_by_fixes`) or the advice to check the
    configuration holds."""
    from ..sdk.python.fixes import active, withheld
    from ..sdk.python.pipeline import run_pipeline_case
    from .switch import moved_by_fixes

    names = active()
    if not names:
        return differs
    with withheld():
        published = run_pipeline_case(case)
    return differs if "recorded_differs" in published.observed else moved_by_fixes(differs, names)


def _pipeline_failures(case: PipelineCase, invariants: Sequence[str]) -> list[Failure]:
    """The first failure of each of ``invariants`` that the replay of ``case``
    shows, new ones first, then known ones."""
    verdict = check(case)
    found: dict[str, Failure] = {}
    for violation, fault in [*((v, None) for v in verdict.new), *verdict.known]:
        if violation.invariant in invariants:
            found.setdefault(violation.invariant, Failure(case, violation, fault))
    return list(found.values())


@st.composite
def _recorded_cases(
    draw,
    session: Session,
    config: Mapping[str, int | None],
    agents: Sequence[str],
    sizes: tuple[tuple[float, float, int], ...],
) -> PipelineCase:
    """A sub-sequence of ``session`` closed under answers, as a recorded case
    replayed with ``config`` and ``agents``."""
    keep = draw(st.lists(st.booleans(), min_size=len(session), max_size=len(session)))
    case = recorded_case(_closed(session, keep), config, agents=agents, evidence=False)
    # A sub-sequence makes summaries of its own, each the size of the run's
    # summary of that number (the run's summaries as a whole, not the kept ones).
    return replace(case, summary_sizes=sizes)


def minimize_recorded(
    session: Session,
    config: Mapping[str, Any],
    *,
    agents: Sequence[str] = (),
    invariant: str | None = None,
    max_examples: int = 2000,
    pipeline_examples: int = 200,
) -> Minimized | Holds | Differs:
    """The failure ``session`` shows when judged with the configuration it
    ran with (``config``: trigger values, the keys of
    :data:`~compaction_harness.spec.pipeline_case.CONFIG_KEYS`; ``agents``: its app's
    agent names, the root first, default the authors of its events), and the
    smallest case Hypothesis finds with the same failure; :class:`Holds`
    when nothing applicable fails; :class:`Differs` when the replay makes
    other summaries than the session stored (see the module's docstring).

    ``invariant``: only that one (it must apply to the configuration);
    default every invariant that applies. ``max_examples``: the search's
    examples for a unit-level failure, ``pipeline_examples`` for a
    pipeline-level one (each replays the session through ADK).
    """
    from ..spec.pipeline_case import check_agents, recorded_agents

    unknown = sorted(set(config) - set(CONFIG_KEYS))
    if unknown:
        raise MinimizeError(
            f"--config: unknown key {unknown[0]!r} (expected {', '.join(CONFIG_KEYS)})"
        )
    full = {k: config.get(k) for k in CONFIG_KEYS}
    for key, value in full.items():
        if value is not None and (type(value) is not int or value < 0):
            raise MinimizeError(f"--config: {key}: expected a non-negative integer or null")
    if full["compaction_interval"] is None and full["token_threshold"] is None:
        raise MinimizeError(
            "--config: no trigger: give compaction_interval (a sliding window) or "
            "token_threshold, as the session's EventsCompactionConfig had them"
        )
    judged = applicable(full)
    if invariant is not None and invariant not in judged:
        raise MinimizeError(
            f"--invariant {invariant}: does not apply to a session run with this configuration "
            f"(applicable: {', '.join(judged)})"
        )
    chosen = (invariant,) if invariant else judged
    try:
        check_agents(session, agents)
    except ModelError as error:
        raise MinimizeError(f"--agent: {error}") from None
    names = tuple(agents) or recorded_agents(session)
    anonymous = anonymise(session)
    anonymous_names = anonymous_agents(session, names)
    case = recorded_case(anonymous, full, agents=anonymous_names, texts=session)
    differs: list[str] = []
    calls = helper_calls(case, differs)
    if differs:
        return Differs(_unless_the_fixes_moved_it(case, differs[0]))
    # Every invariant is judged as given, the first failure of each kept: the
    # first of all is shrunk, the others are reported (a verdict per invariant).
    shown: dict[str, Failure] = {}
    for call in calls:
        level = "U5" if isinstance(call, TokenCase) else SLIDING_LEVEL
        for inv in [i for i in chosen if i in level and i not in shown]:
            failure = _first_failure(call, inv)
            if failure is not None:
                shown[inv] = failure
    pipeline_level = [i for i in chosen if i in PIPELINE_INVARIANTS]
    if pipeline_level:
        shown.update((f.violation.invariant, f) for f in _pipeline_failures(case, pipeline_level))
    failing = list(shown.values())
    given = failing[0] if failing else None
    setting = describe_config(full, names)
    if given is None:
        prefix = sum(isinstance(c, UnitCase) for c in calls)
        token = len(calls) - prefix
        parts = []
        units = [i for i in chosen if i in SLIDING_LEVEL]
        if units:
            parts.append(f"{', '.join(units)} on the {prefix} prefix-helper call(s) ADK made")
        if "U5" in chosen:
            parts.append(f"U5 on the {token} token-threshold split(s) ADK made")
        if pipeline_level:
            parts.append(f"{', '.join(pipeline_level)} on the replay")
        return Holds(f"{'; '.join(parts)}; with {setting}")

    if isinstance(given.case, PipelineCase):
        strategy = _recorded_cases(anonymous, full, anonymous_names, case.summary_sizes)
        examples = pipeline_examples

        def failures(candidate: Any) -> Iterator[Failure]:
            verdict = check(candidate)
            for violation in verdict.new:
                yield Failure(candidate, violation, None)
            for violation, fault in verdict.known:
                yield Failure(candidate, violation, fault)

    else:
        strategy = _cases(anonymous, given.violation.invariant, full["event_retention_size"])
        examples = max_examples
        failures = _failures

    return replace(_shrink(given, strategy, failures, examples), others=tuple(failing[1:]))
