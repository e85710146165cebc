"""Pipeline-level invariants P1 to P7 over a real session driven step by step.

A :class:`PipelineCase` is a compaction configuration and a sequence of
operations (append an event; end the invocation, which runs ADK's
post-invocation compaction). An event the model wrote is preceded by a model
call, before which ADK's flow runs token-threshold compaction (2.2.0 and
later). :func:`run_pipeline_case` replays it on a real
``InMemorySessionService`` session through :class:`~compaction_harness.sdk.python.adk.Pipeline`
and checks, after every operation:

* **P1 range safety** -- every summariser input, taken as a window of the
  session at that moment, satisfies U2.
* **P2 prompt validity** -- in ADK's assembled prompt every content with
  function responses comes directly after the model content whose calls it
  answers, with exactly those ids; no response appears without its call or
  twice; the user message that opened the running invocation is a user turn.
  Calls left without a response are reported, not failed (pending,
  long-running).
* **P3 liveness** -- with sliding-window compaction every ``N`` invocations,
  the backlog that the definitions allow to compact stays bounded (see
  :func:`liveness_bound`).
* **P4 nothing lost** -- by event identity (its text, its call ids, or the
  event each response part names), not by timestamp: every event the prompt
  builder shows without compaction is in the prompt, or in the input of a
  summary that is.
* **P5 same view** -- the summariser is given only events the reading agent
  can see: none a rewind removed, and none of a branch that some agent reading
  the summary cannot see (isolation scopes: see U6).
* **P6 no wasted work** -- (a) every compaction covers at least one live event
  no kept summary covered before; (b) the token trigger is driven by the
  newest real prompt count: its decision does not change when the counts a
  summary made stale are removed; (c) the summariser writes at most one
  summary per branch at one invocation end or model call (one per branch,
  since P5 keeps sibling branches apart), and with a token threshold alone (always so
  before a model call) never while the newest real prompt count is below it
  (see :func:`check_summariser_calls` for the bound this implies).
* **P7 round trip** -- the session stored in and reloaded from ADK's
  ``DatabaseSessionService`` on SQLite yields the same prompt.

The checkers here are pure; only the adapter touches ADK.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from ...spec import reference
from ...spec.invariants import PIPELINE_INVARIANTS, Violation
from ...spec.model import (
    REQUEST_CONFIRMATION_CALL,
    REQUEST_CREDENTIAL_CALL,
    Call,
    ModelError,
    Session,
    Step,
    summary_number,
)
from ...spec.pipeline_case import CONFIG_KEYS, PipelineCase
from . import reruns
from .unit import UnitOutcome

__all__ = [
    "ABORT_ERROR",
    "PIPELINE_INVARIANTS",
    "PipelineCase",
    "PipelineRun",
    "Triage",
    "check_branch_view",
    "check_liveness",
    "check_model_prompt",
    "check_new_work",
    "check_nothing_lost",
    "check_prompt",
    "check_range_safety",
    "check_round_trip",
    "check_same_view",
    "check_stale_counts",
    "check_summariser_calls",
    "check_summary_bound",
    "chosen_invariants",
    "ended_by_failure",
    "from_model",
    "liveness_bound",
    "newest_real_count",
    "once_per_branch",
    "parts_of",
    "resumes_or_opens",
    "run_pipeline_case",
    "stale_counts",
    "summary_branch",
    "tool_failed",
]


def chosen_invariants() -> tuple[str, ...]:
    """The pipeline invariants named by the environment variable
    HARNESS_PIPELINE_INVARIANTS (comma- or space-separated; empty: none named,
    so all apply). Unknown names are returned as given: the caller refuses them."""
    return tuple(os.environ.get("HARNESS_PIPELINE_INVARIANTS", "").replace(",", " ").split())


FRAMEWORK_CALLS = frozenset({REQUEST_CONFIRMATION_CALL, REQUEST_CREDENTIAL_CALL})

Prompt = Sequence[tuple[str, tuple[tuple[str, ...], ...]]]


def liveness_bound(config: Mapping[str, int | None], steps: Session) -> int | None:
    """P3's bound on the compactable backlog at an invocation's end, or None
    without a sliding window.

    Reasoning: the runner compacts after an invocation once
    ``compaction_interval`` (N) invocations are new since the last summary,
    and the summary covers everything the definitions allow up to its end.
    So at any invocation's end the events that could be compacted (the
    longest self-contained prefix of the events no summary covers, dead calls
    exempt, and the self-contained ranges after a call that waits: see
    :func:`check_liveness`) belong to at most the N newest invocations, which no summary has
    had to take yet; one more is allowed for slack. "Newest" two ways, since
    ADK's window (``_run_compaction_for_sliding_window``, 2.13.0) counts an
    invocation as new by its latest event (a resumed invocation is new again)
    but ends its range at the last event of the last new invocation in order
    of first appearance, so a resumed older invocation's later events wait for
    the next invocation's end: the N + 1 newest by latest event and the N + 1
    newest by first event both count. The bound is their events as stored
    (live, summaries aside). The overlap only re-covers events already
    covered, so it does not enter the bound.

    With a token threshold as well, token-threshold compaction takes
    precedence, and a summary of it leaves the last ``event_retention_size``
    raw events uncompacted by design ("when it is configured and it produces
    a summary, this returns without a sliding-window summary", the same
    function): those are allowed on top. A larger backlog means compaction
    has stalled.
    """
    interval = config.get("compaction_interval")
    if interval is None or config.get("overlap_size") is None:
        return None
    live = [s for s in reference.live_events(steps) if s.compaction is None]
    first_event: dict[str, int] = {}
    newest_event: dict[str, int] = {}
    for position, step in enumerate(live):
        first_event.setdefault(step.invocation, position)
        newest_event[step.invocation] = position
    newest = {
        invocation
        for order in (newest_event, first_event)
        for invocation in sorted(order, key=order.__getitem__)[-(interval + 1) :]
    }
    bound = sum(1 for step in live if step.invocation in newest)
    if config.get("token_threshold") is not None:
        bound += config.get("event_retention_size") or 0
    return bound


#: ``error_code`` of the events ADK's framework writes to seal an aborted
#: invocation (``google.adk.events._abort_events``, 2.x): no model call
#: precedes them.
ABORT_ERROR = "INVOCATION_ABORTED"


def from_model(step: Step, before: Step | None = None) -> bool:
    """Whether ``step`` is the model's output, so a model call (with a prompt)
    came just before it: an agent-authored event that is not a function
    response (the tool wrote it) and not only synthetic calls the framework
    makes to ask the user (``adk_request_confirmation``, ``adk_request_credential``).
    A step on a branch came from a sub-agent's model call, whose prompt is the
    sub-agent's, not the one this pipeline assembles for the root agent.

    An error event without content (``step.error``; ``before``: the event
    appended just before it) is no reply when it seals an aborted invocation
    (:data:`ABORT_ERROR`) or comes right after a call event of its agent and
    invocation: a tool raised. Between a call event and its answer ADK's flow
    only runs the tools; the exception ends the node, and the node runner
    stores ``Event(error_code=<status or class name>, error_message=...)``
    (``workflow/_node_runner.py``, 2.x) with no model call. Any other error
    event came from a model call that was sent: a response whose error code
    the model set (a finish or block reason) or a call that raised."""
    if step.author == "user" or step.responses or step.branch is not None:
        return False
    if step.error == ABORT_ERROR or tool_failed(step, before):
        return False
    return not step.calls or any(c.name not in FRAMEWORK_CALLS for c in step.calls)


def tool_failed(step: Step, before: Step | None) -> bool:
    """Whether ``step`` is the error event ADK stores when a tool of the call
    event ``before`` raised: an error without content, of the call's agent,
    branch and invocation, right after it (see :func:`from_model`)."""
    return (
        step.error is not None
        and step.text is None
        and not step.calls
        and not step.responses
        and before is not None
        and bool(before.calls)
        and not before.responses
        and (before.author, before.branch, before.invocation)
        == (step.author, step.branch, step.invocation)
    )


def live_positions(steps: Session) -> set[int]:
    """Positions of the events that survive rewinds (isolation scope None)."""
    live = {id(s) for s in reference.live_events(steps)}
    return {i for i, s in enumerate(steps) if id(s) in live}


def check_same_view(snapshot: Session, taken: Sequence[int]) -> list[Violation]:
    """P5: the summariser was given only events the reading agent can see
    (none that a rewind removed, none of another isolation scope)."""
    visible = live_positions(snapshot)
    hidden = [i for i in taken if i not in visible]
    if not hidden:
        return []
    return [
        Violation(
            "P5",
            f"the summariser was given events the agent cannot see (rewound or of another "
            f"scope): steps {hidden}",
            positions=tuple(hidden),
            expected="only live events",
            observed=list(taken),
        )
    ]


def check_branch_view(
    snapshot: Session, taken: Sequence[int], branch: str | None
) -> list[Violation]:
    """P5 for branches: every agent that sees a summary (of ``branch``) could
    see each event the summary was given (:func:`reference.branch_sees`).

    A summary without a branch is read by every agent, so an event of a
    sub-agent's branch in it reaches that sub-agent's siblings, which the
    contents assembly otherwise keeps from them.
    """
    # The readers of a summary on branch S are the agents on S or below it
    # (every agent when S is None); all of them see an event of branch B
    # exactly when B is None or S lies on or below B.
    foreign = [
        i
        for i in taken
        if snapshot[i].branch is not None
        and (branch is None or not reference.branch_sees(branch, snapshot[i].branch))
    ]
    if not foreign:
        return []
    readers = "every agent" if branch is None else f"agents on branch {branch!r}"
    branches = sorted({snapshot[i].branch or "" for i in foreign})
    return [
        Violation(
            "P5",
            f"the summary is read by {readers} but was given events of branches {branches} "
            f"that some of them cannot see: steps {foreign}",
            positions=tuple(foreign),
            expected="only events every reader of the summary can see",
            observed=list(taken),
            details={"cause": "branch", "summary_branch": branch},
        )
    ]


def check_new_work(
    taken: Sequence[int],
    covered_before: set[int],
    live: set[int],
    number: int,
) -> list[Violation]:
    """P6 (first clause): a compaction covers at least one live event that no
    kept summary covered before it."""
    if any(i in live and i not in covered_before for i in taken):
        return []
    return [
        Violation(
            "P6",
            f"summary#{number} covers no live event that a kept summary did not cover already "
            "(wasted work)",
            positions=tuple(taken),
            expected="at least one newly covered event",
            observed=list(taken),
        )
    ]


def newest_real_count(steps: Session, agent: str = "") -> int | None:
    """``prompt_tokens`` of the newest live event that carries one, provided no
    live summary comes after it; None otherwise (no real count since the latest
    summary: ADK falls back to an estimate then, 2.11.0 and later).

    ``agent``: only counts that agent's model calls recorded (its own events):
    a count measures the prompt of the agent that made the call, and another
    agent's prompt is another context (ADK 2.13.0 reads counts the same way
    before an agent's model call: ``_latest_prompt_token_count``). ``""``:
    any agent's, as the runner's check at an invocation's end reads them.
    """
    live = live_positions(steps)
    for i in sorted(live, reverse=True):
        if steps[i].compaction is not None:
            return None
        if steps[i].prompt_tokens is not None and (not agent or steps[i].author == agent):
            return steps[i].prompt_tokens
    return None


def stale_counts(steps: Session) -> frozenset[int]:
    """Positions of the prompt counts a summary made stale, when they are the
    newest counts there are: counts recorded before the latest live summary,
    provided no live count follows it. Empty when the newest count is fresh."""
    live = live_positions(steps)
    latest = max((i for i in live if steps[i].compaction is not None), default=None)
    if latest is None or any(steps[i].prompt_tokens is not None for i in live if i > latest):
        return frozenset()
    return frozenset(i for i in range(latest) if steps[i].prompt_tokens is not None)


def check_stale_counts(fires: bool, fires_without: bool, stale: frozenset[int]) -> list[Violation]:
    """P6 (second clause): the token trigger decides the same whether or not
    the counts a summary made stale (``stale``, positions) are there.

    ``fires``: whether ADK's token-threshold compaction calls the summariser
    on the session as it is; ``fires_without``: on a copy without those counts.
    A count recorded before a summary measured a prompt that the summary has
    since replaced: a trigger that reads it compacts again at every invocation
    end until a new model call records a fresh count (google-adk 2.2.0 reads
    it; 2.11.0 and later stop at the latest summary and estimate instead).
    """
    if fires == fires_without:
        return []
    return [
        Violation(
            "P6",
            f"the token trigger {'fires' if fires else 'stays quiet'} because of prompt counts "
            f"that a summary made stale (steps {sorted(stale)}); without them it "
            f"{'stays quiet' if fires else 'fires'} (wasted work)",
            positions=tuple(sorted(stale)),
            expected="the same decision without the stale counts",
            observed="fires" if fires else "quiet",
        )
    ]


def once_per_branch(branches: Sequence[str | None], point: str) -> list[Violation]:
    """P6 (third clause, its first part): at most one summary per branch at
    one compaction point (``point`` names it in the message: "invocation
    end", "model call 3"); ``branches``: the branch of each summary made
    there (see :func:`check_summariser_calls` for why the bound is per
    branch). Used by both SDKs' checks."""
    out = []
    counts: dict[str | None, int] = {}
    for branch in branches:
        counts[branch] = counts.get(branch, 0) + 1
    for branch, count in counts.items():
        if count > 1:
            on = "without a branch" if branch is None else f"on branch {branch!r}"
            out.append(
                Violation(
                    "P6",
                    f"the summariser ran {count} times at one {point} for summaries {on} "
                    "(at most once per branch)",
                    expected=1,
                    observed=count,
                    details={"branch": branch},
                )
            )
    return out


def check_summariser_calls(
    branches: Sequence[str | None],
    config: Mapping[str, int | None],
    newest: int | None,
    *,
    token_only: bool = False,
) -> list[Violation]:
    """P6 (third clause): the summariser is not called more than the
    configuration implies.

    ``branches``: the branch of each summary made at one compaction point (one
    invocation end, or before one model call; ``token_only``: only the token
    trigger runs there), None for a summary without a branch or one ADK did not
    store (see :func:`summary_branch`); ``newest``: the newest real prompt
    count before it (:func:`newest_real_count`).

    The bound: at most one summary per branch per compaction point. It comes
    from P5 and P6 together (the specification's, not ADK's code): P6 asks that
    the prompt be compacted when the trigger fires, and P5 forbids a summary to
    hold an event some of its readers cannot see, where a summary on branch S
    is read by every agent on S or below it (ADK's branch filter,
    ``_is_event_belongs_to_branch``) and one without a branch by every agent.
    A range holding events of two sibling branches therefore needs one summary
    per branch, each on its own branch: together they are one compaction, not
    wasted work. Two summaries on the *same* branch at one point are wasted
    work: one summary could have taken everything the other took (the runner
    tries the token threshold first and the sliding window only if that made
    none; before a model call the flow runs the token threshold alone).

    With the token threshold alone, no summary where the newest real count is
    below the threshold, so over a run the compaction points that summarise
    number at most the ends at which the newest count (real, or ADK's estimate
    when there is none since the latest summary) reached the threshold. With a
    sliding window the configuration implies no tighter bound than one per end
    and branch together with P6's first clause: a window trimmed at a pending
    call leaves invocations that count as new at the next end, so a summary may
    follow after fewer than ``compaction_interval`` invocations and still cover
    something new.
    """
    out = once_per_branch(branches, "model call" if token_only else "invocation end")
    threshold = config.get("token_threshold")
    token_alone = threshold is not None and (
        token_only or config.get("compaction_interval") is None
    )
    if branches and token_alone and newest is not None and newest < threshold:
        out.append(
            Violation(
                "P6",
                f"the token trigger fired with the newest prompt count {newest} below the "
                f"threshold {threshold} (wasted work)",
                expected=f"no summary below {threshold}",
                observed=newest,
            )
        )
    return out


def summary_branch(steps: Session, number: int, foreign: Collection[int] = ()) -> str | None:
    """The branch of the summary the harness's summariser wrote at its call
    ``number``, as stored in ``steps``; None when it has none, or when ADK
    stored no summary from that call.

    Matched by what the summariser wrote (its text starts ``summary#N``, see
    :func:`~compaction_harness.spec.model.summary_number`), not by where the session
    stood at the call: compaction may call the summariser once per branch
    before it stores any of the summaries (the ``Runner`` stores a sliding
    window's summaries as it reads them), so several calls see the same
    session length. ``foreign``: positions of compaction records a client
    appended, which are never a summariser's."""
    for i, step in enumerate(steps):
        if (
            step.compaction is not None
            and i not in foreign
            and summary_number(step.compaction.summary) == number
        ):
            return step.branch
    return None


def check_summary_bound(after: int, floor: int, threshold: int, number: int) -> list[Violation]:
    """P6 (third clause): a token-threshold summary brings the prompt below the
    threshold, whenever the configuration lets it.

    ``after``: the prompt's token count right after summary ``number`` (the
    token model: ADK's character count of the prompt plus the system
    instruction and tool declarations, four characters a token); ``floor``:
    what no compaction may remove, counted the same way (the summary itself,
    the last ``event_retention_size`` events, everything an open call pins,
    before a model call the running invocation from its first event on, the
    system instruction and tool declarations).

    The bound this implies: with turns adding at most S tokens, a summary
    that leaves the prompt at P below the threshold T is followed by another
    only after at least ceil((T - P) / S) turns, so the summariser is not
    called on every turn. A summary that leaves the prompt at or above T
    although ``floor`` is below it removed less than it could, and since the
    next count is again over T, every later turn summarises again: that is a
    violation. When ``floor`` itself reaches T (large summaries, large
    retained events) the configuration implies no such bound, and the clause
    does not apply.
    """
    if after < threshold or floor >= threshold:
        return []
    return [
        Violation(
            "P6",
            f"summary#{number} left the prompt at {after} tokens, at or above the threshold "
            f"{threshold}, though what may not be compacted comes to only {floor}: every later "
            "turn will summarise again (wasted work)",
            expected=f"below {threshold}",
            observed=after,
            details={"cause": "bound"},
        )
    ]


def check_round_trip(
    in_memory: Prompt, reloaded: Prompt, time_ordered: Prompt | None = None
) -> list[Violation]:
    """P7: the reloaded session's prompt equals the in-memory one.

    ``time_ordered``: the prompt of the in-memory events put in order of
    timestamp, then event id (the order ``DatabaseSessionService.get_session``
    reads them in): the violation's message says when the reload is exactly
    that reordering of events the runner stored out of timestamp order.
    """
    if list(in_memory) == list(reloaded):
        return []
    first = next(
        (k for k, (a, b) in enumerate(zip(in_memory, reloaded, strict=False)) if a != b),
        min(len(in_memory), len(reloaded)),
    )
    reordered = time_ordered is not None and list(reloaded) == list(time_ordered)
    return [
        Violation(
            "P7",
            f"after a database round trip the prompt differs from content {first} on"
            + (": the events come back in timestamp order, not as stored" if reordered else ""),
            expected=[list(map(list, c[1])) for c in in_memory[first : first + 1]],
            observed=[list(map(list, c[1])) for c in reloaded[first : first + 1]],
        )
    ]


def check_range_safety(snapshot: Session, taken: Sequence[int]) -> list[Violation]:
    """P1: a summariser input, as a window of the live view of ``snapshot``
    (rewinds applied, as the compactor sees it), satisfies U2. Inputs that
    are not live are P5's concern and left out here."""
    live = reference.live_events(snapshot)
    index = {id(s): k for k, s in enumerate(live)}
    # (position in the live view, position as stored) of each live input
    pairs = [(index[id(snapshot[i])], i) for i in taken if id(snapshot[i]) in index]
    window = tuple(k for k, _ in pairs)
    stored = [i for _, i in pairs]
    return [
        Violation(
            "P1",
            f"the summariser was given a range that splits a live pair: {o.id!r} opened at "
            f"step {stored[o.position]} is not closed inside it",
            ids=(o.id,),
            positions=(stored[o.position],),
            expected="a self-contained range",
            observed=list(taken),
        )
        for o in reference.open_obligations(live, window, len(window))
    ]


def answers_of_several_call_events(steps: Session) -> set[int]:
    """Positions of the events whose function responses answer calls made by
    more than one earlier event (one client message answering several turns)."""
    out = set()
    for i, step in enumerate(steps):
        makers = set()
        for rid in step.response_ids:
            maker = next((j for j in range(i - 1, -1, -1) if rid in steps[j].call_ids), None)
            if maker is not None:
                makers.add(maker)
        # Two parts with one id (a reused id) answer two calls as well.
        if len(makers) > 1 or len(step.responses) > len(step.response_ids):
            out.add(i)
    return out


def check_prompt(
    prompt: Prompt,
    opener: str | None,
    *,
    strict: bool = False,
    adapter_answers: Collection[str] = (),
) -> tuple[list[Violation], list[str]]:
    """P2 on an assembled prompt; returns (violations, ids of calls left unanswered).

    ``opener``: the text of the user message that opened the running
    invocation, if one did. ``strict``: the strict-provider clause. Models
    reached through LiteLLM (Anthropic, OpenAI) reject a request in which a
    function call is not answered by the content right after it (a tool
    result must follow its tool use before the next user turn); Gemini takes
    it. With ``strict``, every call left unanswered is a violation; without,
    it is only reported (a long-running call may legitimately wait).
    ``adapter_answers``: ids of calls that still wait (long-running, no
    answer yet) which the SDK leaves to the model adapter of a strict
    provider to answer with a placeholder (google-adk's LiteLLM adapter:
    ``_ensure_tool_results``); the strict clause does not count them.
    """
    out: list[Violation] = []
    answered: set[str] = set()
    unanswered: list[str] = []
    for k, (_role, parts) in enumerate(prompt):
        responses = [p[1] for p in parts if p[0] == "response"]
        calls = [p[1] for p in parts if p[0] == "call"]
        if responses:
            before = prompt[k - 1] if k else ("", ())
            asked = [p[1] for p in before[1] if p[0] == "call"] if before[0] == "model" else []
            if sorted(responses) != sorted(asked):
                partial = set(responses) < set(asked) and len(set(responses)) == len(responses)
                out.append(
                    Violation(
                        "P2",
                        f"content {k} answers {sorted(responses)} but the content before it "
                        f"({before[0] or 'none'}) calls {sorted(asked)}",
                        ids=tuple(sorted(set(responses) ^ set(asked))),
                        expected=sorted(asked),
                        observed=sorted(responses),
                        details={
                            "cause": "partial answer" if partial else "mismatch",
                            "content": k,
                        },
                    )
                )
            # An id may be reused by a later call (providers that number calls
            # per turn): a response repeats only when its id was answered
            # since the latest call with that id.
            twice = sorted({r for r in responses if r in answered or responses.count(r) > 1})
            if twice:
                out.append(
                    Violation(
                        "P2",
                        f"content {k} answers {twice} a second time since their call",
                        tuple(twice),
                        details={"cause": "answered twice", "content": k},
                    )
                )
            answered.update(responses)
        answered.difference_update(calls)
        nxt = prompt[k + 1][1] if k + 1 < len(prompt) else ()
        following = {p[1] for p in nxt if p[0] == "response"}
        unanswered += [c for c in calls if c not in following]
    refused = [c for c in unanswered if c not in adapter_answers]
    if strict and refused:
        out.append(
            Violation(
                "P2",
                f"calls {sorted(set(refused))} are not answered by the content right after "
                "them, which a strict provider (LiteLLM: Anthropic, OpenAI) rejects",
                ids=tuple(sorted(set(refused))),
                expected="every call answered before the next turn",
                observed="unanswered",
                details={"cause": "strict provider"},
            )
        )
    if opener is not None and not any(
        role == "user" and ("text", opener) in parts for role, parts in prompt
    ):
        out.append(
            Violation(
                "P2",
                f"the user message {opener!r} that opened the running invocation is not in the "
                "prompt",
                expected=opener,
                observed=None,
                details={"cause": "opener missing"},
            )
        )
    return out, unanswered


def _shows(part: str, text: str) -> bool:
    """Whether a prompt text part carries ``text``: as is, or as another agent's
    message relayed as user context ("[name] said: text" before 2.x; fenced
    between marker lines in 2.x, see ADK's ``_present_other_agent_message``)."""
    return part == text or text in part.splitlines() or part.endswith(f" said: {text}")


def parts_of(prompt: Prompt) -> set[tuple[str, ...]]:
    """A prompt's parts as a set, each text part as ``("text", text, event)``
    and each call part as ``("call", id, name, event)``: ``event`` the
    position of the stored event it came from (``""`` when the prompt does
    not say: see ``adk.ShownText``), so that two events with one text, or
    with one call id and tool (ids numbered per turn), stay two parts (P4 is
    checked by event identity)."""
    return {
        ("text", str(p[1]), getattr(p[1], "event", ""))
        if p[0] == "text"
        else ("call", p[1], str(p[2]), getattr(p[2], "event", ""))
        if p[0] == "call"
        else p
        for _, ps in prompt
        for p in ps
    }


def _shows_call(parts: set[tuple[str, ...]], call: Call, position: int) -> bool:
    """Whether ``parts`` (:func:`parts_of`) hold ``call`` of the event at
    ``position``: a call part that names that event, or one that names no
    event (a prompt that does not say) with the call's id and tool."""
    return any(("call", call.id, call.name, event) in parts for event in (str(position), ""))


def _visible(step: Step, position: int, parts: set[tuple[str, ...]]) -> bool:
    """Whether the event at ``position`` of the stored session is among a
    prompt's ``parts`` (:func:`parts_of`), by event identity: a text part
    that names this event, or all its function calls and responses (a call
    or response part names the event it came from, see ``adk.PromptPart``). A
    text or call part that names no event (another agent's message relayed as
    context; a prompt that carries no identities, as ADK-JS's) shows every
    event whose text or call it carries: equality is all such a part can tell."""
    shown = _shown_of(step, position, parts)
    if ("text",) in shown:
        return True
    items = {("call", c.id, c.name) for c in step.calls}
    items |= {("response", r.id, r.name) for r in step.responses}
    return bool(items) and items <= shown


def _shown_of(step: Step, position: int, parts: set[tuple[str, ...]]) -> set[tuple[str, ...]]:
    """What of the event at ``position`` a prompt's ``parts`` (:func:`parts_of`)
    show, by event identity as :func:`_visible` reads it: ``("text",)``, and
    each of its function calls and responses as ``(kind, id, name)``."""
    shown: set[tuple[str, ...]] = set()
    if step.text is not None and any(
        p[2] == str(position) if len(p) > 2 and p[2] else _shows(p[1], step.text)
        for p in parts
        if p[0] == "text"
    ):
        shown.add(("text",))
    shown |= {("call", c.id, c.name) for c in step.calls if _shows_call(parts, c, position)}
    shown |= {
        ("response", r.id, r.name)
        for r in step.responses
        if ("response", r.id, r.name, str(position)) in parts
    }
    return shown


Summaries = Sequence[tuple[int, Sequence[int], Sequence[int]]]


def covered_by_kept(prompt: Prompt, summaries: Summaries) -> set[int]:
    """Positions of the events given to a summary whose text is in the prompt,
    directly or through the rolling-summary seeds it was given."""
    texts = [p[1] for _, ps in prompt for p in ps if p[0] == "text"]
    # Releases before 2.x relay a summary whose author is not the agent as
    # another agent's message ("[model] said: summary#0").
    todo = [n for n in range(len(summaries)) if any(_shows(t, f"summary#{n}") for t in texts)]
    seen: set[int] = set()
    covered: set[int] = set()
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        covered.update(summaries[n][1])
        todo.extend(summaries[n][2])
    return covered


def covered_by_records(steps: Session, records: Sequence[int], *, pairs: bool = False) -> set[int]:
    """Positions of the events that compaction records ADK did not make
    (``records``: their positions) stand for: every event whose timestamp lies
    in a record's range, as the prompt builder reads a record (later events
    included, when the range reaches past the record); with ``pairs``, also
    the other side of each call pair such an event belongs to."""
    covered: set[int] = set()
    for r in records:
        c = steps[r].compaction
        covered.update(
            i
            for i, step in enumerate(steps)
            if step.compaction is None and c.start <= step.timestamp <= c.end
        )
    if not pairs:
        return covered
    # A record that hides one side of a call pair makes the prompt builder drop
    # the other side too (an unanswered call, an answer without its call):
    # that loss is the record's doing as well (P4).
    ids = {x for i in covered for x in steps[i].call_ids | steps[i].response_ids}
    covered.update(
        i
        for i, step in enumerate(steps)
        if step.compaction is None and (step.call_ids | step.response_ids) & ids
    )
    return covered


def check_nothing_lost(
    steps: Session,
    prompt: Prompt,
    summaries: Summaries,
    baseline: Prompt,
    records: Sequence[int] = (),
    *,
    pruned: bool = False,
) -> list[Violation]:
    """P4: every event the prompt builder shows without compaction (``baseline``)
    is in the prompt, or was given to a summary that is (directly or through a
    rolling-summary seed).

    P4 judges what ADK's compaction drops, so it counts the summaries ADK made
    in this run. A compaction record that ADK did not make (``records``, its
    positions: one a client appended straight to the session service, or one
    a stored session brought along) stands for the events of its range by its
    writer's claim, and those count as covered. ADK's own APIs do not take
    such records from clients: the API server's session creation refuses
    client events with any actions ("Rejects client-supplied events that
    claim to be ADK-generated", ``google/adk/cli/api_server.py``,
    ``_validate_session_initialization_events``, 2.11.0 and 2.13.0), and the
    ``Runner`` builds the user's event itself from ``new_message`` and
    ``state_delta`` alone (``Runner._build_and_append_user_event``). Only a
    caller of ``BaseSessionService.append_event`` can write one, and what it
    hides is that caller's decision, not a loss by compaction.

    With ``pruned`` (releases that do, ``adk.prunes_orphaned_calls``), a
    function call that no later event answers and that is not long-running
    (its tool's process died) is not required in the prompt: ADK's prompt
    builder prunes such calls by design, so that providers that require every
    call to be answered take the request (``drop_orphaned_function_calls``,
    ``google/adk/flows/llm_flows/tools/_rearranger.py``, 2.13.0). It matches
    calls to responses by id anywhere in the contents, so a reused id can keep
    an orphaned call in the prompt without compaction and not with it: that
    difference is the pruning working, not a loss. Neither is an interim
    response that a later response to the same call replaces in the prompt
    (:func:`_replaced`).

    An event is judged part by part (:func:`_missing`): what the baseline
    shows of it must be in the prompt. A call, text or response is told from
    another with the same id, tool or words by the event it came from (call
    ids numbered per turn repeat), and a call the prompt builder leaves out
    without compaction too (a pending long-running call beside answered
    siblings, whose response turn must answer exactly the calls before it:
    P2) is not required with it, while the rest of its event is.
    """
    covered = covered_by_kept(prompt, summaries) | covered_by_records(steps, records, pairs=True)
    live = reference.live_events(steps)
    live_ids = {id(s) for s in live}
    prompt_parts = parts_of(prompt)
    orphaned = _orphaned_calls(steps) if pruned else {}
    for i, calls in _waiting_beside_answered(steps, prompt_parts).items():
        orphaned[i] = orphaned.get(i, set()) | calls
    baseline_parts = parts_of(baseline)
    return [
        Violation(
            "P4",
            f"step {i} is neither in the prompt nor in the input of a summary that is",
            positions=(i,),
            expected="in the prompt or summarised",
            observed="lost",
            details={"missing": sorted(" ".join(m) for m in missing)},
        )
        for i, step in enumerate(steps)
        if step.compaction is None
        and not step.rewind_before
        and id(step) in live_ids
        and i not in covered
        and (missing := _missing(steps, i, baseline_parts, prompt_parts, orphaned.get(i, set())))
    ]


def _waiting_beside_answered(
    steps: Session, parts: set[tuple[str, ...]]
) -> dict[int, set[tuple[str, ...]]]:
    """Position -> the prompt parts of the event's long-running calls that
    still wait (no later event answers them) while the prompt shows a sibling
    call of the same event with its response. P2 requires the content after
    a call content to answer exactly its calls, so such a prompt cannot show
    the waiting call beside its answered sibling: leaving it out until its
    own answer comes is what P2 asks (google-adk's fix
    ``pending-call-left-out-beside-answered-siblings``), not a loss. Which
    calls a prompt answers can differ with compaction and without (the
    latest-response rearrangement drops the events between a call and the
    newest response, an answer among them, only when that call is in view),
    so the baseline need not leave the same calls out."""
    out: dict[int, set[tuple[str, ...]]] = {}
    for i, step in enumerate(steps):
        if len(step.calls) < 2 or not step.long_running:
            continue
        answered = {
            c.id
            for c in step.calls
            if _shows_call(parts, c, i)
            and any(p[0] == "response" and p[1] == c.id and p[2] == c.name for p in parts)
        }
        if not answered:
            continue
        waiting = {
            ("call", c.id, c.name, str(i))
            for c in step.calls
            if c.id in step.long_running
            and c.id not in answered
            and not _answered_after(steps, i, c.id)
        }
        if waiting:
            out[i] = waiting
    return out


def _answered_after(steps: Session, position: int, call_id: str) -> bool:
    """Whether an event after ``position`` answers ``call_id`` before a later
    call reuses the id."""
    for later in range(position + 1, len(steps)):
        if call_id in steps[later].response_ids:
            return True
        if call_id in steps[later].call_ids:
            return False
    return False


def _missing(
    steps: Session,
    position: int,
    baseline: set[tuple[str, ...]],
    prompt: set[tuple[str, ...]],
    pruned: set[tuple[str, ...]],
) -> set[tuple[str, ...]]:
    """What of the event at ``position`` the ``baseline`` parts show and the
    ``prompt`` parts do not (as :func:`_shown_of` names it). A call ADK's
    prompt builder prunes (``pruned``, see :func:`check_nothing_lost`) is not
    missing, nor a response that a later one to the same call replaces in the
    prompt (:func:`_replaced`)."""
    step = steps[position]
    missing = _shown_of(step, position, baseline) - _shown_of(step, position, prompt | pruned)
    return {
        m for m in missing if not (m[0] == "response" and _replaced(steps, position, m[1:], prompt))
    }


def _replaced(
    steps: Session, position: int, response: tuple[str, ...], parts: set[tuple[str, ...]]
) -> bool:
    """Whether ``response`` (id, tool) of the event at ``position`` is
    answered again, for the same call, by a later event whose response the
    prompt shows (``parts``). ADK gives a call the last response attributed to
    it ("taking the last one keeps the closing update of a long-running tool,
    which reports progress several times under one id":
    ``rearrange_events_for_async_function_responses_in_history``,
    ``google/adk/flows/llm_flows/tools/_rearranger.py``, 2.13.0), response by
    response, so an interim result the final one replaces is not lost, nor is
    an event of parallel responses of which only some are replaced. A later
    call with the id ends the search: its responses belong to that call."""
    call_id, name = response
    for later in range(position + 1, len(steps)):
        if call_id in steps[later].call_ids:
            return False
        if ("response", call_id, name, str(later)) in parts:
            return True
    return False


def _orphaned_calls(steps: Session) -> dict[int, set[tuple[str, ...]]]:
    """Position -> the prompt parts of the event's function calls that no
    later event answers and that their own event does not mark long-running:
    the calls ADK's prompt builder prunes (see :func:`check_nothing_lost`). An
    older call's long-running mark on a reused id does not count: ADK reads
    the marks of the events it assembles, and a summary may have taken that
    call."""
    answered_after: set[str] = set()
    out: dict[int, set[tuple[str, ...]]] = {}
    for i in range(len(steps) - 1, -1, -1):
        step = steps[i]
        orphans = {
            ("call", c.id, c.name, str(i))
            for c in step.calls
            if c.id not in answered_after and c.id not in step.long_running
        }
        if orphans:
            out[i] = orphans
        answered_after |= {r.id for r in step.responses}
    return out


def check_liveness(
    steps: Session,
    prompt: Prompt,
    summaries: Summaries,
    config: Mapping[str, int | None],
    records: Sequence[int] = (),
    earlier: Collection[Step] | None = None,
) -> tuple[list[Violation], frozenset[Step]]:
    """P3 at an invocation's end: the backlog the definitions allow to compact
    is within the bound (:func:`liveness_bound`). Returns (violations, the
    backlog as steps: pass it as ``earlier`` at the next end).

    Events that a kept summary stands for are not backlog, and neither are
    those a compaction record ADK did not make (``records``, see
    :func:`check_nothing_lost`) claims: ADK reads every compaction record's
    end as a mark up to which everything is compacted (the sliding window
    counts only invocations newer than the latest end), so whoever wrote the
    record claimed everything stamped up to its end.

    The backlog is what a compactor may summarise around the calls that wait
    (:func:`reference.compactable_around_waiting_calls`): the longest
    self-contained prefix of the events no summary covers, and after a call or
    confirmation that still waits (live and protected: a long-running tool
    still running; a confirmation not yet given, while its invocation is the
    newest) every range of its own that no obligation crosses. The waiting
    call itself is not compacted, but it does not shield what comes after it:
    a compactor that stops all compaction for as long as one call waits
    breaks P3.

    ``earlier``: the backlog at the previous invocation end. Events that a
    live call splits from their own (its invocation's events, or a range whose
    call is answered across it) cannot be compacted while it waits; once
    the call is answered they all become compactable at once, and ADK's window
    takes them at the next end, not the one that resumed the call's invocation
    (its range ends at the last new invocation in order of first appearance,
    ``_run_compaction_for_sliding_window``). So only the part of the backlog
    that was compactable at the previous end too is held to the bound: a stall
    carries it from end to end and is caught one end later."""
    bound = liveness_bound(config, steps)
    if bound is None:
        return [], frozenset()
    covered = covered_by_kept(prompt, summaries) | covered_by_records(steps, records)
    marks = [steps[r].compaction.end for r in records]
    if marks:
        covered |= {
            i
            for i, step in enumerate(steps)
            if step.compaction is None and step.timestamp <= max(marks)
        }
    live = reference.live_events(steps)  # the compactor's view: rewinds applied
    index = {id(s): k for k, s in enumerate(live)}
    uncovered = tuple(
        i
        for i, s in enumerate(steps)
        if s.compaction is None and id(s) in index and i not in covered
    )
    compactable = reference.compactable_around_waiting_calls(
        live, tuple(index[id(steps[i])] for i in uncovered)
    )
    backlog = tuple(uncovered[k] for k in compactable)
    held = backlog if earlier is None else tuple(i for i in backlog if steps[i] in earlier)
    found = frozenset(steps[i] for i in backlog)
    if len(held) <= bound:
        return [], found
    return [
        Violation(
            "P3",
            f"{len(held)} events could be compacted but are not (bound {bound}): "
            "compaction has stalled",
            positions=held,
            expected=f"at most {bound}",
            observed=len(held),
        )
    ], found


def check_model_prompt(
    steps: Session,
    prompt: Prompt,
    baseline: Prompt,
    summaries: Summaries,
    opener: str | None,
    *,
    strict: bool = False,
    adapter_answers: Collection[str] = (),
    records: Sequence[int] = (),
    pruned: bool = False,
) -> tuple[list[Violation], list[str]]:
    """P2 and P4 on the prompt of one model call; returns (violations, ids of
    calls left unanswered).

    ``steps``: the session as stored when the model was called; ``prompt``:
    the request's contents (``adk.PromptContent``: call ids kept, each
    response part naming its stored event); ``baseline``: the contents ADK
    assembles from ``steps`` without summaries (P4's baseline);
    ``summaries``: (session length then, positions given, seed numbers) per
    summary; ``opener``: the text of the user message that opened the
    running invocation, if one did; ``strict`` and ``adapter_answers``: P2's
    strict-provider clause (see :func:`check_prompt`); ``records``: positions
    of compaction records ADK did not make, and ``pruned``: whether the
    release prunes orphaned calls (both: see :func:`check_nothing_lost`).
    Each P2 violation's ``details`` say whether its content merges answers
    to several call events and, for a missing
    opener, whether a kept summary was given it or a kept range hides it,
    and whether it was stored out of time order (known faults read them).
    Used by both drivers: the emulating driver on ADK's contents assembly,
    the runner driver on the ``LlmRequest`` the model received.
    """
    found, unanswered = check_prompt(prompt, opener, strict=strict, adapter_answers=adapter_answers)
    hidden = covered_by_records(steps, records)
    if any(
        steps[i].author == "user" and steps[i].text == opener for i in hidden
    ):  # a record ADK did not make hides the opener: its writer's doing (see P4)
        found = [v for v in found if v.details.get("cause") != "opener missing"]
    merged = answers_of_several_call_events(steps)
    for v in found:
        content = v.details.get("content")
        if content is not None and content < len(prompt):
            # Which stored events the content's responses came from: one
            # that answers calls of several call events (known faults).
            events = {int(p[3]) for p in prompt[content][1] if p[0] == "response" and p[3]}
            v.details["merged_answer"] = bool(events & merged)
        if v.details.get("cause") == "opener missing":
            # Whether a kept summary was given the opener, or a kept
            # summary's time range hides it unasked (known faults use it).
            v.details["opener_summarised"] = any(
                steps[i].text == opener and steps[i].author == "user"
                for i in covered_by_kept(prompt, summaries)
            )
    found += check_nothing_lost(steps, prompt, summaries, baseline, records, pruned=pruned)
    return found, unanswered


class PipelineRun:
    """Operations applied one at a time, each followed by the checks.

    ``strict_provider``: P2's strict clause applies (every call answered by
    the content right after it). ``pipeline_options`` go to
    :class:`~compaction_harness.sdk.python.adk.Pipeline` (storage, summary size, the
    faithful mode the script driver uses).
    """

    def __init__(
        self,
        config: Mapping[str, int | None],
        max_invocation_events: int = 6,
        *,
        strict_provider: bool = False,
        agents: Sequence[str] = (),
        **pipeline_options: Any,
    ) -> None:
        from .adk import Pipeline

        #: The app's agents, the root first (see ``PipelineCase.agents``).
        self.agents = tuple(agents) or ("agent",)
        self.root = self.agents[0]
        if agents:
            pipeline_options = {**pipeline_options, "root": self.root}
        self.config = dict(config)
        self.max_invocation_events = max_invocation_events
        self.strict_provider = strict_provider
        #: Characters of the system instruction and tool declarations (the
        #: token model counts them in every prompt).
        self.base_chars = 0
        #: A recorded run's summary sizes (see ``PipelineCase.summary_sizes``).
        self.summary_sizes = tuple(pipeline_options.get("summary_sizes", ()))
        self.pipeline = Pipeline(**self.config, **pipeline_options)
        self.appended: list[Step] = []
        self.ends: list[int] = []
        self.opener: str | None = None
        #: Each invocation's opener: the text of its first user event.
        self.openers: dict[str, str] = {}
        self._checked_summaries = 0
        #: How many times P6's second clause ran its counterfactual.
        self.stale_checks = 0
        #: The prompt of the latest model call (what P2 and P4 judged).
        self._checked_prompt: Prompt | None = None
        #: Every request sent to the model: (agent, branch, its contents).
        self.requests: list[tuple[str, str | None, Prompt]] = []
        #: Prompt calls left unanswered at the latest model call (P2 reports them).
        self.unanswered: list[str] = []
        #: P3's backlog at the latest invocation end (see :func:`check_liveness`).
        self._backlog: frozenset[Step] | None = None

    def append(self, step: Step, *, opens_invocation: bool = False) -> list[Violation]:
        """Append ``step``; a step the model wrote (see :func:`from_model`) is
        preceded by the model call that produced it, so the prompt is checked
        first (P2, P4)."""
        found: list[Violation] = []
        if from_model(step, self.appended[-1] if self.appended else None):
            # The agent that wrote the reply made the call: a listed sub-agent,
            # else the root (older fixtures name no agents).
            found = self.model_call(step.author if step.author in self.agents else self.root)
        if step.author == "user" and step.text is not None:
            self.openers.setdefault(step.invocation, step.text)
        if opens_invocation:
            # A run of an invocation that a user's answer resumes (a function
            # response, a confirmation) runs for the message that opened it:
            # ADK's ``_find_user_message_for_invocation`` (``runners.py``).
            self.opener = (
                step.text
                if step.author == "user" and step.text is not None
                else self.openers.get(step.invocation)
            )
        self.appended.append(step)
        self.pipeline.append(step)
        return found

    def model_call(
        self, agent_name: str | None = None, branch: str | None = None
    ) -> list[Violation]:
        """A model call of ``agent_name`` on ``branch``: the flow's request
        processors (:meth:`request_processors`), then the request they built is
        sent (:meth:`check_request`)."""
        agent_name = agent_name or self.root
        return self.request_processors(agent_name, branch) + self.check_request(agent_name, branch)

    def request_processors(
        self, agent_name: str | None = None, branch: str | None = None
    ) -> list[Violation]:
        """The flow's request processors of one step of ``agent_name`` on
        ``branch``: token-threshold compaction on releases that run it before
        model calls, with P1, P5 and P6 on a summary it makes. A step may end
        here without calling the model (ADK's flow replays calls a dead turn
        left instead: ``_run_one_step_async``, 2.11.0 and later), so the
        request is judged only by :meth:`check_request`."""
        if not self.pipeline.compacts_before_model_calls:
            return []
        agent_name = agent_name or self.root
        return self._compact(
            lambda: self.pipeline.before_model_call(agent_name, branch),
            before_model_call=True,
            agent=(agent_name, branch),
        )

    def check_request(
        self, agent_name: str | None = None, branch: str | None = None
    ) -> list[Violation]:
        """The request of ``agent_name`` on ``branch`` is sent to the model:
        P2 and P4 on the prompt ADK assembles, and P7 when the session lives in
        a database."""
        from .adk import prunes_orphaned_calls

        agent_name = agent_name or self.root
        out: list[Violation] = []
        steps = self.pipeline.steps()
        prompt = self.pipeline.prompt(agent_name=agent_name, branch=branch)
        self._checked_prompt = prompt
        self.requests.append((agent_name, branch, prompt))
        baseline = self.pipeline.prompt(
            without_summaries=True, agent_name=agent_name, branch=branch
        )
        found, self.unanswered = check_model_prompt(
            steps,
            prompt,
            baseline,
            self.pipeline.summaries,
            self.opener,
            strict=self.strict_clause,
            records=self.foreign_records(steps),
            pruned=prunes_orphaned_calls(),
        )
        out += found
        if self.pipeline.storage == "database":
            out += self.database_round_trip(agent_name, branch)
        return out

    @property
    def strict_clause(self) -> bool:
        """Whether P2's strict-provider clause applies to the contents as
        assembled. The request a strict provider gets is what ADK's LiteLLM
        adapter makes of them; releases whose adapter puts a placeholder
        result in for every call left unanswered (see
        ``adk.litellm_heals_missing_tool_results``) send a request that meets
        the clause whatever the contents hold."""
        from .adk import litellm_heals_missing_tool_results

        return self.strict_provider and not litellm_heals_missing_tool_results()

    def foreign_records(self, steps: Session) -> list[int]:
        """Positions of compaction records that were appended, not made by
        ADK's compaction in this run (see :func:`check_nothing_lost`)."""
        origins = self.pipeline.origins()
        return [
            i
            for i, step in enumerate(steps)
            if step.compaction is not None and origins[i] is not None
        ]

    def end_invocation(self) -> list[Violation]:
        """End the invocation: compaction runs; P6 around it, then P1, P5 and P6 on
        new summaries and P3."""
        self.opener = None  # no invocation runs until the next one opens
        self._checked_prompt = None
        self.ends.append(len(self.appended))
        out = self._compact(
            self.pipeline.end_invocation,
            before_model_call=False,
            check_stale=self.pipeline.token_path_runs_at_end,
        )
        steps = self.pipeline.steps()
        prompt = self.pipeline.prompt()
        stalled, self._backlog = check_liveness(
            steps,
            prompt,
            self.pipeline.summaries,
            self.config,
            self.foreign_records(steps),
            self._backlog,
        )
        return out + [v for v in stalled if not self._waits_to_save_prompt(v, steps, prompt)]

    def _waits_to_save_prompt(self, violation: Violation, steps: Session, prompt: Prompt) -> bool:
        """Whether a P3 backlog is no larger than the summary it would replace.

        A summary as large as what it replaces saves nothing (P6 calls that
        wasted work, and ADK 2.13.0 refuses such a range:
        ``_is_range_worth_compacting``), so compaction rightly waits until the
        backlog outgrows the latest kept summary: a delay bounded by that
        summary's size, not a stall. Both are measured by the events' own
        content (``adk.content_chars_of``), as ADK prices a range: what the
        prompt wraps around another agent's reply for the root (a preamble of
        about 430 characters a reply) is presentation, a bounded factor on
        each event, and leaves the delay bounded."""
        texts = [p[1] for _, ps in prompt for p in ps if p[0] == "text"]
        kept = [
            text
            for text in self.pipeline.summary_texts
            if any(_shows(t, text.split("\n", 1)[0]) for t in texts)
        ]
        if not kept:
            return False
        backlog = self.pipeline.content_chars_of(list(violation.positions))
        return backlog <= len(kept[-1])

    def _compact(
        self,
        compact: Callable[[], Any],
        *,
        before_model_call: bool,
        check_stale: bool = True,
        agent: tuple[str, str | None] | None = None,
    ) -> list[Violation]:
        """Run one of ADK's compaction entry points (``compact``: before a model
        call, or at an invocation's end) with P6's second and third clauses
        around it (the second only where ``check_stale``: the token path runs),
        then P1, P5 and P6 on the summaries it made."""
        agent = agent or (self.root, None)
        before = self.pipeline.steps()
        prompt_before = self.pipeline.prompt()
        # What ADK's own summaries covered: a summary that takes events only a
        # client's record stood for is ADK's first summary of them, not waste.
        covered_before = covered_by_kept(prompt_before, self.pipeline.summaries)
        out: list[Violation] = []
        if check_stale:
            out += self.stale_count_check(before, before_model_call=before_model_call, agent=agent)
        made = len(self.pipeline.summaries)
        compact()
        stored = self.pipeline.steps()
        foreign = self.foreign_records(stored)
        out += check_summariser_calls(
            [
                summary_branch(stored, number, foreign)
                for number in range(made, len(self.pipeline.summaries))
            ],
            self.config,
            newest_real_count(before, agent[0] if before_model_call else ""),
            token_only=before_model_call,
        )
        token_alone = before_model_call or self.config.get("compaction_interval") is None
        if len(self.pipeline.summaries) > made and token_alone and self.config["token_threshold"]:
            out += self.token_summary_bound(before, made, agent, running=before_model_call)
        return out + self._check_new_summaries(covered_before)

    def token_summary_bound(
        self,
        before: Session,
        number: int,
        agent: tuple[str, str | None],
        *,
        running: bool = False,
    ) -> list[Violation]:
        """P6 (third clause, the bound): the prompt after a token-threshold
        summary (see :func:`check_summary_bound`). ``running``: the summary
        was made before a model call, while the newest invocation runs; then
        that invocation, from its first event on, is floor too: P2 requires
        its opening message in every model call of it, and a summary covers
        a time range, so nothing stamped after the opener can be taken
        without it (google-adk's fix
        ``token-compaction-keeps-the-running-invocation`` keeps exactly
        that)."""
        threshold = self.config["token_threshold"]
        retention = self.config["event_retention_size"] or 0
        live = reference.live_events(before)
        index = {id(s): k for k, s in enumerate(live)}
        compactable = {id(live[k]) for k in reference.token_threshold_range(live, retention)}
        newest = next(
            (s.invocation for s in reversed(before) if s.invocation and s.compaction is None),
            None,
        )
        first = next((i for i, s in enumerate(before) if newest and s.invocation == newest), None)
        if running and first is not None:
            compactable -= {id(step) for step in before.steps[first:]}
        # What stays when exactly the reference's range is compacted: every
        # live event outside it (what earlier summaries hide stays hidden,
        # since every summary is kept too), every summary, and the new one.
        kept = [
            i
            for i, step in enumerate(before)
            if id(step) in index and (step.compaction is not None or id(step) not in compactable)
        ]
        # The floor as the prompt builder renders it (another agent's message
        # is relayed with a preamble, for one). Compaction appends the new
        # summaries, so earlier positions are unchanged: every summary it
        # wrote at this point is floor, one per branch where the range held
        # several branches' events (P5 keeps them apart, see
        # check_summariser_calls).
        stored = self.pipeline.steps()
        new_summaries = [
            i for i, step in enumerate(stored) if step.compaction is not None and i >= len(before)
        ] or [max(i for i, step in enumerate(stored) if step.compaction is not None)]
        # A response that stays keeps its call: ADK re-injects a compacted call
        # event whose answer survives, so what it restores is floor too.
        taken = [i for i, step in enumerate(before) if id(step) in compactable]
        chars = self.pipeline.prompt_chars_of([*kept, *new_summaries], *agent, compacted=taken)
        if (
            not running
            and first is not None
            and self._shows_opener(
                before[first], self.pipeline.prompt(agent_name=agent[0], branch=agent[1])
            )
            and not self._shows_opener(
                before[first],
                self.pipeline.prompt_of_events([*kept, *new_summaries], *agent, compacted=taken),
            )
        ):
            # After the invocation's end the prompt ADK assembles is still that
            # invocation's (the newest), and a release that restores the
            # running request (google-adk's fix
            # running-request-restored-after-compaction) shows its opening
            # message again though a summary took it, as P2 requires should a
            # client's answer resume the invocation: that message is floor
            # (the floor's events alone may not restore it: the invocation's
            # later events, before which the fix restores it, are not floor).
            chars += self.pipeline.content_chars_of([first])
        after = (self.base_chars + self.pipeline.prompt_chars(*agent)) // 4
        floor = (self.base_chars + chars) // 4
        return check_summary_bound(after, floor, threshold, number)

    @staticmethod
    def _shows_opener(step: Step, prompt: Prompt) -> bool:
        """Whether ``step`` is a user message whose text ``prompt`` shows as a
        user turn."""
        if step.author != "user" or not step.text:
            return False
        return any(role == "user" and ("text", step.text) in parts for role, parts in prompt)

    def _check_new_summaries(self, covered_before: set[int]) -> list[Violation]:
        """P1, P5 and P6 (first clause) on the summaries made since the last call."""
        steps = self.pipeline.steps()
        summaries = self.pipeline.summaries
        foreign = self.foreign_records(steps)
        out: list[Violation] = []
        for number in range(self._checked_summaries, len(summaries)):
            length, taken, _ = summaries[number]
            snapshot = Session(steps.steps[:length])
            out += check_range_safety(snapshot, taken)
            out += check_same_view(snapshot, taken)
            branch = summary_branch(steps, number, foreign)
            out += check_branch_view(snapshot, taken, branch)
            out += check_new_work(taken, covered_before, live_positions(snapshot), number)
        self._checked_summaries = len(summaries)
        return out

    def stale_count_check(
        self,
        steps: Session,
        *,
        before_model_call: bool = False,
        agent: tuple[str, str | None] | None = None,
    ) -> list[Violation]:
        """P6 (second clause) on ``steps``, the session before compaction runs:
        ADK's token trigger (at the invocation's end, or ``before_model_call``)
        on a copy with and without the stale counts."""
        stale = stale_counts(steps)
        if not stale or self.config.get("token_threshold") is None:
            return []
        self.stale_checks += 1
        name, branch = agent or (self.root, None)

        def fires(strip: frozenset[int] = frozenset()) -> bool:
            return self.pipeline.token_trigger_fires(
                strip, before_model_call=before_model_call, agent_name=name, branch=branch
            )

        return check_stale_counts(fires(), fires(stale), stale)

    def database_round_trip(
        self, agent_name: str | None = None, branch: str | None = None
    ) -> list[Violation]:
        """P7: the session stored in and reloaded from ``DatabaseSessionService``
        (SQLite) yields the same prompt as the in-memory one: the events in
        the order they were appended (a session reloaded before an invocation
        is already in the database's order, so the one in hand is not the
        in-memory one)."""
        return check_round_trip(
            self.pipeline.prompt(agent_name=agent_name, branch=branch, as_stored=True),
            self.pipeline.database_prompt(agent_name=agent_name, branch=branch),
            self.pipeline.prompt(
                agent_name=agent_name, branch=branch, as_stored=True, time_ordered=True
            ),
        )

    def case(self, invariants: tuple[str, ...] | None = None) -> PipelineCase:
        return PipelineCase(
            self.config,
            Session(tuple(self.appended)),
            tuple(self.ends),
            self.max_invocation_events,
            invariants=invariants,
            agents=() if self.agents == ("agent",) else self.agents,
            summary_sizes=self.summary_sizes,
        )

    def outcome(self, violations: list[Violation]) -> UnitOutcome:
        """The outcome a fixture records. ``observed``: ``summaries`` (the stored
        positions each summary was given), ``stored`` (the session as stored:
        for each position, the index of the appended step or ``"summary#n"``)
        and ``prompt`` (the prompt that was checked last, so the one that broke
        P2 or P4 when those fired)."""
        prompt = self._checked_prompt
        if prompt is None:
            try:
                prompt = self.pipeline.prompt()
            except Exception:  # the prompt builder itself fails (P0): none to record
                prompt = []
        stored: list[int | str] = []
        for step, origin in zip(self.readable_steps(), self.pipeline.origins(), strict=False):
            stored.append(origin if origin is not None else step.compaction.summary)
        return UnitOutcome(
            violations,
            {},
            {
                "summaries": [list(t) for _, t, _ in self.pipeline.summaries],
                "stored": stored,
                "prompt": [[role, [list(p) for p in parts]] for role, parts in prompt],
            },
        )

    def readable_steps(self) -> Session:
        """The stored session as the model reads it, for an outcome: empty when
        ADK returned events that cannot be read (that is a P0 of its own,
        reported where it was met, see :func:`crash_violation`)."""
        from .adk import UnreadableEvents

        try:
            return self.pipeline.steps()
        except UnreadableEvents:
            return Session(())

    def close(self) -> None:
        self.pipeline.close()


class Triage:
    """Collects each operation's violations as a run goes, and classifies
    them once the run is over, the way campaigns, replay and the gate do
    (see :mod:`compaction_harness.surfaces.verdicts`).

    ``case_so_far``: the case as far as it has run (classification re-runs
    it with the known faults' fixes). ``chosen``: the invariants checked
    (None: all). Calling the object records a batch (one operation's
    violations) and returns nothing: the run never stops at a violation,
    only at an exception (P0). With ``triage``, :meth:`outcome` classifies
    every violation by fix (:func:`compaction_harness.sdk.python.triage.by_fix`);
    its ``known`` holds (violation, fault id) pairs and its ``violations``
    the new violations of the first operation that has any (what a campaign
    reports). Without ``triage`` nothing is classified and ``violations``
    holds every violation of every operation (for re-runs under fixes).
    ``release`` is accepted for the callers' sake: fixes, not release
    lists, decide.
    """

    def __init__(
        self,
        case_so_far: Callable[[], Any],
        release: str | None,
        chosen: set[str] | None,
        triage: bool = True,
    ) -> None:
        self.case_so_far = case_so_far
        self.release = release
        self.chosen = chosen
        self.triage = triage
        self.known: list[tuple[Violation, str]] = []
        self.batches: list[list[Violation]] = []

    @property
    def everything(self) -> list[Violation]:
        return [v for batch in self.batches for v in batch]

    def __call__(self, found: list[Violation]) -> list[Violation]:
        found = [v for v in found if self.chosen is None or v.invariant in self.chosen]
        if found:
            self.batches.append(found)
        return []

    def outcome(self, make: Callable[[list[Violation]], UnitOutcome], new: list[Violation]):
        """The run's outcome (``make`` builds it from violations)."""
        everything = self.everything + list(new)
        if not self.triage:
            outcome = make(everything)
        else:
            from .triage import by_fix

            fresh, self.known = by_fix(self.case_so_far(), everything) if everything else ([], [])
            first = next(
                (
                    [v for v in batch if any(v is f for f in fresh)]
                    for batch in [*self.batches, list(new)]
                    if any(v is f for f in fresh for v in batch)
                ),
                [],
            )
            outcome = make(first)
        outcome.known = list(self.known)
        outcome.triaged = self.triage
        return outcome


def run_pipeline_case(
    case: PipelineCase, *, release: str | None = None, triage: bool = True
) -> UnitOutcome:
    """Replay ``case`` and check P1 to P7 after every operation.

    Only the invariants ``case.invariants`` names are checked (all when None).
    With ``triage`` (the default, and what campaigns, replay and the gate
    use), a violation that a known upstream fault of ``release`` (default:
    the installed one) explains is recorded in the outcome's ``known`` and the
    run goes on; the run stops at the first operation with a new violation,
    which the outcome's ``violations`` hold (see :class:`Triage`). Without
    ``triage`` nothing is classified and the run never stops: ``violations``
    holds every violation of every operation (for counterfactual replays).
    """
    sizes = {"summary_sizes": case.summary_sizes} if case.summary_sizes else {}
    run = PipelineRun(case.config, case.max_invocation_events, agents=case.agents, **sizes)
    chosen = set(case.invariants) if case.invariants else None
    judge = Triage(lambda: run.case(), release, chosen, triage)
    complete = False

    def outcome(violations: list[Violation]) -> UnitOutcome:
        made = run.outcome(violations)
        if case.recorded is not None:
            upto = None if complete else len(run.appended)
            differs = compaction_difference(case, run.readable_steps(), upto)
            if differs:
                made.observed["recorded_differs"] = differs
        return made

    def guarded(what: str, operation: Callable[[], list[Violation]]) -> list[Violation]:
        from .adk import NotApplicable

        try:
            return operation()
        except NotApplicable:
            raise
        except Exception as exc:  # P0: ADK raised; nothing after it can be judged
            return [crash_violation(what, exc)]

    try:
        ends = list(case.ends)
        previous_inv: str | None = None
        for k, step in enumerate(case.session):
            while ends and ends[0] == k:
                ends.pop(0)
                previous_inv = None
                found = guarded("the end of an invocation", run.end_invocation)
                if (new := judge(found)) or _crashed(found):
                    return judge.outcome(outcome, new)
            opens = step.invocation != previous_inv
            previous_inv = step.invocation
            found = guarded(
                f"appending step {k}", lambda s=step, o=opens: run.append(s, opens_invocation=o)
            )
            if (new := judge(found)) or _crashed(found):
                return judge.outcome(outcome, new)
        while ends:
            ends.pop(0)
            found = guarded("the end of an invocation", run.end_invocation)
            if (new := judge(found)) or _crashed(found):
                return judge.outcome(outcome, new)
        complete = True
        return judge.outcome(outcome, [])
    finally:
        run.close()


def _crashed(found: list[Violation]) -> bool:
    return any(v.invariant == "P0" for v in found)


def crash_violation(what: str, exc: BaseException) -> Violation:
    """P0: ADK raised ``exc`` during ``what`` (compaction, prompt assembly or
    the session service), or returned there what cannot be read
    (:class:`~compaction_harness.sdk.python.adk.UnreadableEvents`: the violation names
    the event and the field, and ``details["exception"]`` the error met
    reading it)."""
    from .adk import UnreadableEvents

    if isinstance(exc, UnreadableEvents):
        cause = exc.cause
        return Violation(
            "P0",
            f"{exc} (during {what})",
            expected="events of the types ADK declares",
            observed=f"{type(cause).__name__}: {cause}",
            details={
                "cause": "unreadable",
                "exception": type(cause).__name__,
                "unreadable": str(exc),
            },
        )
    return Violation(
        "P0",
        f"google-adk raised {type(exc).__name__} during {what}: {exc}",
        expected="no exception",
        observed=f"{type(exc).__name__}: {exc}",
        details={"cause": "exception", "exception": type(exc).__name__},
    )


def summary_ranges(steps: Session) -> list[tuple[int, float, float]]:
    """The summaries in ``steps``: (how many other events precede each,
    start, end), in order."""
    out: list[tuple[int, float, float]] = []
    before = 0
    for step in steps:
        if step.compaction is None:
            before += 1
        else:
            out.append((before, step.compaction.start, step.compaction.end))
    return out


def compaction_difference(case: PipelineCase, stored: Session, upto: int | None) -> str | None:
    """How the summaries of ``case``'s replay (``stored``: the session as the
    replay stored it) differ from those the recorded run stored
    (``case.recorded``), in one line; None when they agree. ``upto``: the
    replay stopped after that many events, so only the summaries made before
    the latest of them are compared (None: it ran to the end)."""
    if case.recorded is None or (not len(stored) and len(case.session)):
        return None  # nothing recorded, or nothing readable to compare

    def before(summaries: Sequence[tuple[int, float, float]]) -> list[tuple[float, float]]:
        return [(s, e) for k, s, e in summaries if upto is None or k < upto]

    recorded, replayed = before(case.recorded), before(summary_ranges(stored))
    if recorded == replayed:
        return None
    first = next(
        (k for k, (r, p) in enumerate(zip(recorded, replayed, strict=False)) if r != p),
        min(len(recorded), len(replayed)),
    )

    def covers(ranges: list[tuple[float, float]]) -> str:
        if first >= len(ranges):
            return "none"
        start, end = ranges[first]
        inside = [k for k, step in enumerate(case.session) if start <= step.timestamp <= end]
        return f"#{inside[0]}-#{inside[-1]}" if inside else "no event"

    return (
        f"the replay's compactions differ from the recorded run's: recorded {len(recorded)}, "
        f"replayed {len(replayed)}, first difference at summary {first + 1} (recorded "
        f"covers {covers(recorded)}, replayed {covers(replayed)}); check --config / --agent "
        "(if they are right, the replay itself differs: event sizes it does not carry, say)"
    )


def recorded_summary_sizes(
    session: Session, texts: Session | None = None
) -> tuple[tuple[float, float, int], ...]:
    """The summaries ``session`` stores as (start, end, characters in ADK's
    size check), in order; ``texts``: the session their texts are read from,
    when ``session``'s were replaced (an anonymised copy of it)."""
    from .adk import serialized_chars

    ranges = [s.compaction for s in session if s.compaction is not None]
    words = [s.compaction.summary for s in (texts or session) if s.compaction is not None]
    return tuple(
        (c.start, c.end, serialized_chars(text)) for c, text in zip(ranges, words, strict=True)
    )


def recorded_agents(session: Session) -> tuple[str, ...]:
    """The agents that wrote a recorded session's events, in order of their
    first event (the first taken as the root): what a session tells of its
    app's agents when nothing else does. ADK stores no agent tree, so a
    root that never writes an event (a custom orchestrator) must be named."""
    names: list[str] = []
    for step in session:
        if step.compaction is None and step.author != "user" and step.author not in names:
            names.append(step.author)
    return tuple(names)


def check_agents(session: Session, agents: Sequence[str]) -> None:
    """Refuse agent names that a recorded session does not bear out.

    Each name given (``agents``, the root first) must have written an event
    of ``session``, except a root named before the agents it runs (a custom
    orchestrator writes no event of its own). A name the session never
    mentions, a typo say, would be judged as an agent with no events: ADK
    (``_latest_prompt_token_count(agent_name=...)`` of ``apps/compaction.py``)
    finds no prompt count for it and estimates one, and the verdict is about
    a run that never happened.

    Raises :class:`ModelError` (one line) naming the agent and the session's
    own agents.
    """
    authors = recorded_agents(session)
    for k, name in enumerate(agents):
        if name == "user":
            raise ModelError(
                "agent 'user': that is the author of the user's events; name the app's "
                "agents (not 'user'), the root first"
            )
        if name not in authors and not (k == 0 and len(agents) > 1):
            raise ModelError(
                f"agent {name!r} wrote no event of this session "
                f"(its agents: {', '.join(authors) or 'none'})"
            )


def ended_by_failure(last: Step, before: Step | None = None) -> bool:
    """Whether an invocation whose last event is ``last`` (``before``: the
    event just before it) failed, so ADK ran no compaction at its end: ADK
    sealed it as aborted (:data:`ABORT_ERROR`), a tool raised
    (:func:`tool_failed`), or a model call raised. The node runner stores a
    content-less ``Event(error_code=<status or class name>)`` for any
    exception (``workflow/_node_runner.py``, 2.x) and ``run_async`` raises,
    so the Runner's end-of-invocation compaction does not run
    (``Runner._run_with_trace``). An error code the model itself sets comes
    with a response it sent, and the invocation completes: a finish or block
    reason of ``google.genai`` (:func:`~compaction_harness.sdk.python.adk.model_set_error`)."""
    if last.error is None:
        return False
    if last.error == ABORT_ERROR or tool_failed(last, before):
        return True
    from .adk import model_set_error

    silent = last.text is None and not last.calls and not last.responses
    return silent and not model_set_error(last.error)


def resumes_or_opens(last: Step, step: Step) -> bool:
    """Whether ``step``, appended after ``last``, starts a new ``run_async``
    of ADK's ``Runner``: it belongs to another invocation, or it is the user's
    event (a function response, a confirmation's answer) after the agent's
    events of the same one. A paused invocation (a long-running call, a
    confirmation asked) ends its ``run_async``, and the Runner compacts then
    (``_run_with_trace``); the answer resumes the invocation in a new
    ``run_async`` under the same id (``_resolve_invocation_id``)."""
    return step.invocation != last.invocation or (step.author == "user" and last.author != "user")


def recorded_case(
    session: Session,
    config: Mapping[str, int | None],
    *,
    agents: Sequence[str] = (),
    invariants: tuple[str, ...] | None = None,
    texts: Session | None = None,
    evidence: bool = True,
) -> PipelineCase:
    """A session that ADK's ``Runner`` recorded, as a case to replay with the
    configuration it ran with (``config``: the keys of :data:`CONFIG_KEYS`,
    None where unset) and its app's agents (``agents``, the root first;
    default :func:`recorded_agents`).

    The compaction events the run stored are left out: the replay runs ADK's
    compaction with the same configuration, at the same points (an
    invocation ends after the last event of each run of one invocation id,
    and before a user's event that resumes it, see :func:`resumes_or_opens`;
    a reply is preceded by its model call), and judges what it makes. Every
    other event is appended as recorded (ids, authors, times, token counts).

    An invocation that ended by failing (see :func:`ended_by_failure`) ends
    without compaction: the Runner compacts after the agent's events only
    when the run completes and was not aborted (``Runner._run_with_trace``,
    2.x), and a tool's exception propagates out of ``run_async``.

    The summaries the replay makes have the sizes of the run's
    (``summary_sizes``; ``texts``: the session their texts are read from,
    default ``session``), and their ranges are compared with the run's
    (``recorded``) when ``evidence``.
    """
    steps = tuple(s for s in session if s.compaction is None)
    ends = [
        k + 1
        for k in range(len(steps))
        if (k + 1 == len(steps) or resumes_or_opens(steps[k], steps[k + 1]))
        and not ended_by_failure(steps[k], steps[k - 1] if k else None)
    ]
    full = {key: config.get(key) for key in CONFIG_KEYS}
    unknown = sorted(set(config) - set(CONFIG_KEYS))
    if unknown:
        raise ModelError(f"config: unknown key {unknown[0]!r} (expected {', '.join(CONFIG_KEYS)})")
    return PipelineCase(
        full,
        Session(steps),
        tuple(ends),
        invariants=invariants,
        agents=tuple(agents) or recorded_agents(session),
        summary_sizes=recorded_summary_sizes(session, texts),
        recorded=tuple(summary_ranges(session)) if evidence else None,
    )


# Classification by fix re-runs recorded sessions through this (see reruns.py).
reruns.register(PipelineCase, lambda case: run_pipeline_case(case, triage=False))
