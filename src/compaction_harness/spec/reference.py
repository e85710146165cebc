"""The specification as code: obligations, dead calls and safe prefixes.

Every function here is written from the project's definitions (quoted in
full below), by brute force where that is clearer,
and never from ADK's algorithm: a copy would share ADK's bugs. The functions
work on :class:`~compaction_harness.spec.model.Session` objects and never import
``google.adk``.

A *window* is a tuple of step indices into the session, in session order: the
events a compactor considers (ADK never puts a compaction event in one).

Definitions, quoted in full from the project's design document:

* An **obligation** is opened by a function call id, or by a key of
  ``requested_tool_confirmations`` / ``requested_auth_configs``; it is closed
  by a *later* event holding a function response with the same id. Within one
  event, responses count before opens: an event cannot close what it opens.
* A response is **resolved** unless the same event lists its id as a pending
  confirmation or auth request.
* The **newest invocation** is the invocation id of the last non-compaction
  event that has one.
* A call id opened in the window is **provably dead** when no resolved
  response with that id exists anywhere in the session, it is not protected,
  and its call is not in the newest invocation. Protected: a long-running id,
  except a synthetic confirmation/auth call outside the newest invocation; a
  pending confirmation or auth request in the newest invocation. For
  protection, an event with no invocation id counts as part of the newest
  invocation.

One reading is ours and is stated here so that it can be argued with: when a
call id is reused, "its call is not in the newest invocation" is read per
call. The id is provably dead when some call of it in the window lies outside
the newest invocation (and the other clauses hold); an *obligation* with that
id is exempt from safety except the one opened by a call that the newest
invocation made, which may still be in flight and stays live.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .model import Session, Step

__all__ = [
    "ANY_BRANCH",
    "SYNTHETIC_HITL_CALL_NAMES",
    "Obligation",
    "branch_sees",
    "closed_ids",
    "compactable_around_waiting_calls",
    "dead_id_clauses",
    "latest_summary",
    "live_events",
    "longest_self_contained_prefix",
    "newest_invocation",
    "open_obligations",
    "opened_ids",
    "preceding_call",
    "provably_dead_call_ids",
    "resolved_response_ids",
    "safe_token_split",
    "strict_self_contained_prefix",
    "token_candidates",
    "token_seeds",
    "token_threshold_range",
    "unrewound",
    "waiting_ids",
]

#: Names of the synthetic calls ADK's runtime makes for a tool confirmation and
#: an auth request (``google/adk/flows/llm_flows/tools/_functions.py``,
#: ``google/adk/utils/_function_call_names.py``). The definitions exempt exactly
#: these two from long-running protection outside the newest invocation.
SYNTHETIC_HITL_CALL_NAMES = frozenset({"adk_request_confirmation", "adk_request_credential"})


@dataclass(frozen=True, slots=True)
class Obligation:
    """An obligation opened at ``position`` (an index into the window) for ``id``."""

    position: int
    id: str


def opened_ids(step: Step) -> frozenset[str]:
    """Ids whose obligation ``step`` opens: call ids, confirmation and auth keys."""
    return step.call_ids | frozenset(step.confirmations) | frozenset(step.auth_requests)


def closed_ids(step: Step) -> frozenset[str]:
    """Ids whose obligations ``step`` closes: every function response id."""
    return step.response_ids


def resolved_response_ids(step: Step) -> frozenset[str]:
    """Response ids of ``step`` that its own pending requests do not list."""
    return step.response_ids - frozenset(step.confirmations) - frozenset(step.auth_requests)


def live_events(session: Session, isolation_scope: str | None = None) -> Session:
    """The events a compactor and the prompt builder work on: those no
    rewind removed (:func:`unrewound`), of ``isolation_scope`` only."""
    return Session(
        tuple(s for s in unrewound(session).steps if s.isolation_scope == isolation_scope)
    )


def unrewound(session: Session) -> Session:
    """The events no rewind removed, in every isolation scope.

    An event whose ``rewind_before`` names invocation X removes itself and
    every event from the first event of X up to it; a rewind that a later
    rewind removed has no effect, so rewinds are applied from the newest
    back. A rewind naming an invocation that does not come before it removes
    only itself (``_apply_rewinds``, ``google/adk/events/_rewind_events.py``).
    """
    steps = list(session.steps)
    first_of: dict[str, int] = {}
    for index, step in enumerate(steps):
        if step.invocation and step.invocation not in first_of:
            first_of[step.invocation] = index
    removed = [False] * len(steps)
    for index in range(len(steps) - 1, -1, -1):
        step = steps[index]
        if removed[index] or not step.rewind_before:
            continue
        start = first_of.get(step.rewind_before, index)
        for gone in range(min(start, index), index + 1):
            removed[gone] = True
    return Session(tuple(s for s, gone in zip(steps, removed, strict=True) if not gone))


def branch_sees(reader: str | None, branch: str | None) -> bool:
    """Whether an agent running on branch ``reader`` sees an event of ``branch``.

    Branches are dot-separated paths (``ParallelAgent`` gives each sub-agent
    ``<parent>.<sub-agent>``). An agent sees events without a branch, and
    events of its own branch or of an ancestor of it, never a sibling's: the
    rule of ``_is_event_belongs_to_branch`` in ADK's contents assembly
    (``google/adk/flows/llm_flows/contents.py``; ``context/_contents.py`` in
    2.x), which ``ParallelAgent``'s docstring states as "a sub-agent sees the
    events that led to the fan-out and its own, but not those of a sibling".
    """
    if not reader or not branch:
        return True
    inner, outer = reader.split("."), branch.split(".")
    return inner[: len(outer)] == outer


def newest_invocation(session: Session) -> str | None:
    """The invocation id of the last non-compaction event that has one, or None."""
    for step in reversed(session.steps):
        if step.compaction is None and step.invocation:
            return step.invocation
    return None


def _in_newest_for_protection(step: Step, newest: str | None) -> bool:
    return not step.invocation or step.invocation == newest


def _is_protected(call_id: str, session: Session, newest: str | None) -> bool:
    for step in session:
        in_newest = _in_newest_for_protection(step, newest)
        if call_id in step.long_running:
            synthetic = any(
                c.id == call_id and c.name in SYNTHETIC_HITL_CALL_NAMES for c in step.calls
            )
            if in_newest or not synthetic:
                return True
        if in_newest and (call_id in step.confirmations or call_id in step.auth_requests):
            return True
    return False


def dead_id_clauses(session: Session, window: Sequence[int], call_id: str) -> dict[str, bool]:
    """Each clause of "provably dead" for ``call_id``, by name -> whether it holds.

    Clauses: ``opened_in_window``, ``no_resolved_response``, ``not_protected``,
    ``called_outside_newest_invocation``. The id is provably dead iff all hold.
    """
    newest = newest_invocation(session)
    calling = [i for i in window if call_id in session[i].call_ids]
    return {
        "opened_in_window": bool(calling),
        "no_resolved_response": not any(call_id in resolved_response_ids(s) for s in session),
        "not_protected": not _is_protected(call_id, session, newest),
        "called_outside_newest_invocation": any(
            newest is None or session[i].invocation != newest for i in calling
        ),
    }


def provably_dead_call_ids(session: Session, window: Sequence[int]) -> frozenset[str]:
    """Call ids opened in ``window`` that can never be answered (the definitions)."""
    candidates = {cid for i in window for cid in session[i].call_ids}
    return frozenset(
        cid for cid in candidates if all(dead_id_clauses(session, window, cid).values())
    )


def _exempt(step: Step, oid: str, dead: frozenset[str], newest: str | None) -> bool:
    """Whether the obligation ``step`` opens for ``oid`` is exempt as provably dead."""
    if oid not in dead:
        return False
    # A call the newest invocation made may still be answered: it stays live
    # even when an older call with the same id is dead.
    return not (oid in step.call_ids and newest is not None and step.invocation == newest)


def _openings(
    session: Session, window: Sequence[int], exempt_dead: bool
) -> list[tuple[int, str, int | None]]:
    """(position, id, position of the earliest later closer or None) per live opening."""
    steps = [session[i] for i in window]
    dead = provably_dead_call_ids(session, window) if exempt_dead else frozenset()
    newest = newest_invocation(session)
    out = []
    for p, step in enumerate(steps):
        for oid in sorted(opened_ids(step)):
            if _exempt(step, oid, dead, newest):
                continue
            closer = next(
                (q for q in range(p + 1, len(steps)) if oid in closed_ids(steps[q])), None
            )
            out.append((p, oid, closer))
    return out


def open_obligations(
    session: Session, window: Sequence[int], length: int, *, exempt_dead: bool = True
) -> list[Obligation]:
    """Live obligations opened in ``window[:length]`` and not closed inside it.

    With ``exempt_dead`` (the definition of U2), obligations of provably dead
    ids are exempt; without it (a strict compactor), none is. Positions are
    indices into the window, ordered by position, then id.
    """
    return [
        Obligation(p, oid)
        for p, oid, closer in _openings(session, window, exempt_dead)
        if p < length and (closer is None or closer >= length)
    ]


def _longest(session: Session, window: Sequence[int], exempt_dead: bool) -> int:
    # Brute force over every prefix length, longest first, each tested against
    # the definition; the earliest closer of each opening is found once.
    openings = _openings(session, window, exempt_dead)
    for length in range(len(window), -1, -1):
        if all(c is not None and c < length for p, _, c in openings if p < length):
            return length
    raise AssertionError("unreachable: the empty prefix is always self-contained")


def longest_self_contained_prefix(session: Session, window: Sequence[int]) -> int:
    """Length of the longest prefix of ``window`` that is safe to compact.

    Safe (invariant U2): every obligation opened inside the prefix is closed
    inside it, or its id is provably dead. Always at least 0.
    """
    return _longest(session, window, exempt_dead=True)


def strict_self_contained_prefix(session: Session, window: Sequence[int]) -> int:
    """Like :func:`longest_self_contained_prefix` but exempting no dead id.

    This is what a compactor without the provably-dead rule can reach; the
    harness uses it to describe known upstream faults, never as the oracle.
    """
    return _longest(session, window, exempt_dead=False)


def waiting_ids(session: Session, window: Sequence[int]) -> frozenset[str]:
    """Ids of obligations opened in ``window`` that still wait: live (not
    provably dead), protected (a long-running call, a confirmation or auth
    request, as the definitions protect them) and closed by no later event of
    the window. A call or confirmation that waits is not compacted, but it does
    not shield what comes after it (P3)."""
    newest = newest_invocation(session)
    return frozenset(
        oid
        for _, oid, closer in _openings(session, window, exempt_dead=True)
        if closer is None and _is_protected(oid, session, newest)
    )


def compactable_around_waiting_calls(
    session: Session, window: Sequence[int], kept: frozenset[int] = frozenset()
) -> tuple[int, ...]:
    """Positions (indices into ``window``) that a compactor may summarise
    around the calls that wait: the longest self-contained prefix, and every
    event of a range ``window[a:b]`` after it that is self-contained on its own:

    * every live obligation opened inside the range is closed inside it (or
      its id is provably dead), as for a prefix (U2);
    * every live obligation opened before the range is closed before it, or
      waits (:func:`waiting_ids`: it is never closed, so no answer is taken
      away from its call, and the summary's range does not hold the waiting
      event itself);
    * no event of the range answers a call opened before it (unless the
      range opens that id again first): a second answer to a call that is
      already answered replaces the first in the prompt (ADK gives a call the
      last response attributed to it), so summarising it alone would leave
      the call, which stays in the prompt, with the answer it replaced.

    With ``a = 0`` the second clause is empty and the range is a
    self-contained prefix, so this is never less than
    :func:`longest_self_contained_prefix`. Brute force: every start, the
    longest end for it.

    ``kept``: indices into ``window`` of events the compactor keeps as
    waiting beyond the definitions' protection (an SDK that keeps an
    unanswered confirmation request after its invocation, where the
    definitions call its synthetic call provably dead): what they open waits,
    and no range (prefix included) holds them, so a pair that spans one is
    not compactable either."""
    openings = _openings(session, window, exempt_dead=True)
    waiting = set(waiting_ids(session, window))
    first = 1
    if kept:
        listed = {(p, oid) for p, oid, _ in openings}
        for p in sorted(kept):
            for oid in sorted(opened_ids(session[window[p]]) - {o for q, o in listed if q == p}):
                openings.append((p, oid, None))
                waiting.add(oid)
        openings.sort()
        first = 0  # the prefix too is a range that may not hold a kept event
        out: set[int] = set()
    else:
        out = set(range(longest_self_contained_prefix(session, window)))
    for start in range(first, len(window)):
        if not all(
            (closer is not None and closer < start) or (closer is None and oid in waiting)
            for p, oid, closer in openings
            if p < start
        ):
            continue
        before = {oid for p, oid, _ in openings if p < start}
        # a range never holds a kept event, whatever closes what it opens
        limit = min((k for k in kept if k >= start), default=len(window))
        for end in range(limit, start, -1):
            if all(
                closer is not None and closer < end for p, _, closer in openings if start <= p < end
            ) and not _answers_from_before(session, window, before, start, end):
                out.update(range(start, end))
                break
    return tuple(sorted(out))


def _answers_from_before(
    session: Session, window: Sequence[int], ids: set[str], start: int, end: int
) -> bool:
    """Whether an event of ``window[start:end]`` closes one of ``ids``
    (obligations opened before ``start``) before the range opens that id
    again. Within one event, closes count before opens."""
    pending = set(ids)
    for q in range(start, end):
        step = session[window[q]]
        if closed_ids(step) & pending:
            return True
        pending -= opened_ids(step)
    return False


# -- token-threshold compaction ------------------------------------------------
def preceding_call(
    steps: Sequence[Step], position: int, call_id: str, name: str | None = None
) -> int | None:
    """The index of the latest step before ``position`` that calls ``call_id``
    (with ``name``: a call of that tool with that id), or None."""
    return next(
        (
            q
            for q in range(position - 1, -1, -1)
            if any(c.id == call_id and name in (None, c.name) for c in steps[q].calls)
        ),
        None,
    )


def safe_token_split(session: Session, candidates: Sequence[int], retention: int) -> int:
    """U5: where the token-threshold compactor may split ``candidates``.

    The latest split ``s`` with ``s <= len(candidates) - retention`` such that
    every response retained (in ``candidates[s:]``) keeps its call: the
    nearest earlier call with its id among the candidates, if there is one, is
    retained too. A response with no call among the candidates constrains
    nothing (no split can keep a call that is not there). 0 when fewer than
    ``retention`` events would be compacted.
    """
    steps = [session[i] for i in candidates]
    limit = len(steps) - retention
    if limit <= 0:
        return 0
    for split in range(limit, -1, -1):
        if all(
            (call := preceding_call(steps, p, r.id)) is None or call >= split
            for p in range(split, len(steps))
            for r in steps[p].responses
        ):
            return split
    return 0  # unreachable: split 0 retains every call


#: ``branch`` of :func:`latest_summary`: summaries of every branch.
ANY_BRANCH = object()


def latest_summary(session: Session, branch: Any = ANY_BRANCH) -> int | None:
    """Index of the summary that stands for the session's compacted past.

    A summary is superseded by another whose range contains its range (an
    identical range: by the later one); the latest summary is the last one,
    in session order, that no other supersedes. None without summaries.
    ``branch``: only summaries on that branch count (None: those without
    one), each superseded only by another of them; by default every summary.
    """
    summaries = [
        i
        for i, s in enumerate(session)
        if s.compaction is not None and (branch is ANY_BRANCH or (s.branch or None) == branch)
    ]

    def supersedes(j: int, i: int) -> bool:
        a, b = session[i].compaction, session[j].compaction
        contains = b.start <= a.start and a.end <= b.end
        identical = (a.start, a.end) == (b.start, b.end)
        return contains and (not identical or j > i)

    standing = [i for i in summaries if not any(supersedes(j, i) for j in summaries if j != i)]
    return standing[-1] if standing else None


def token_candidates(session: Session) -> tuple[int, ...]:
    """Events a token-threshold compaction may take: every non-summary event
    newer than the end of the latest summary *of its own branch* (all of them
    without one).

    Per branch, from the definitions: P5 lets a summary hold an event only if
    every reader of the summary can see it (a summary on branch S is read by
    the agents on S or below it, an event of branch B seen by the agents on B
    or below it: S on or below B), and P4 lets the prompt builder hide an
    event from a reader only by a kept summary that reader reads and that
    holds it, so a summary that hides an event from every agent that sees it
    is read by all of them (S on or above B). Both together: only a summary
    on the event's own branch takes an event off every prompt it was in. A
    summary of another branch whose range holds the event's timestamp leaves
    the event in the prompt of some agent that sees it, and it is still to be
    compacted."""
    ends: dict[str | None, float] = {}
    for branch in {s.branch or None for s in session if s.compaction is None}:
        latest = latest_summary(session, branch)
        ends[branch] = session[latest].compaction.end if latest is not None else 0.0
    return tuple(
        i
        for i, s in enumerate(session)
        if s.compaction is None and s.timestamp > ends[s.branch or None]
    )


def token_seeds(session: Session, taken: Sequence[int]) -> tuple[int, ...]:
    """The summaries whose rolling-summary seeds lead a token-threshold range
    ``taken``: for each branch of the events in it, the latest summary of that
    branch (:func:`latest_summary`), if it has one. (A summary continues the
    summary of its own branch, the one that stood for what its events' readers
    had compacted; the order of several seeds is not specified.)"""
    branches = dict.fromkeys(session[i].branch or None for i in taken)
    found = (latest_summary(session, branch) for branch in branches)
    return tuple(i for i in found if i is not None)


def token_threshold_range(
    session: Session, retention: int, running: str | None = None
) -> tuple[int, ...]:
    """The events a token-threshold compaction summarises (without the seed).

    The candidates, split by :func:`safe_token_split` (not at all when
    ``retention`` is 0), cut before the first event of ``running`` (the
    invocation still in flight before a model call, whose request P2 keeps in
    the prompt) when given, then cut to their longest self-contained prefix;
    empty when no more than ``retention`` candidates exist. The cut comes
    before the prefix: an obligation opened before the running invocation
    and closed only inside it keeps the range from passing it.
    """
    candidates = token_candidates(session)
    if len(candidates) <= retention:
        return ()
    split = len(candidates) if retention == 0 else safe_token_split(session, candidates, retention)
    window = candidates[:split]
    if running is not None:
        window = window[
            : next((k for k, p in enumerate(window) if session[p].invocation == running), None)
        ]
    return window[: longest_self_contained_prefix(session, window)]
