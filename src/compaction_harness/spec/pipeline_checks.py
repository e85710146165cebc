"""Pure checkers of the pipeline invariants P1 to P7, and what they share.

The checkers of a real session driven step by step, whatever the SDK that
drove it: they take the session model, prompts as plain tuples and the
positions each summary was given, never import an SDK, and return
:class:`~compaction_harness.spec.invariants.Violation` lists. Both SDKs'
drivers call them (``sdk.python``: ``pipeline``, ``driver``, ``adk_runner``;
``sdk.js``: ``adk_js``, ``adk_js_recorded``). Three modules, by invariant:
this one (P1, P5, P6, P7, and what every checker shares: the prompt and
summary types, which events came from a model call, the live positions, the
events kept summaries cover), :mod:`.prompt_checks` (P2, P4) and
:mod:`.liveness_checks` (P3).

* **P1 range safety** -- every summariser input, taken as a window of the
  session at that moment, satisfies U2 (:func:`check_range_safety`).
* **P2 prompt validity** -- in the assembled prompt every content with
  function responses comes directly after the model content whose calls it
  answers, with exactly those ids; no response appears without its call or
  twice; the user message that opened the running invocation is a user turn.
  Calls left without a response are reported, not failed (pending,
  long-running) (:func:`~.prompt_checks.check_prompt`).
* **P3 liveness** -- at every invocation end the backlog that the
  definitions allow to compact stays bounded: with sliding-window compaction
  every ``N`` invocations (see :func:`~.liveness_checks.liveness_bound`), and
  with a token threshold alone wherever the trigger fired (see
  :func:`~.liveness_checks.token_liveness_bound`).
* **P4 nothing lost** -- by event identity (its text, its call ids, or the
  event each response part names), not by timestamp: every event the prompt
  builder shows without compaction is in the prompt, or in the input of a
  summary that is (:func:`~.prompt_checks.check_nothing_lost`).
* **P5 same view** -- the summariser is given only events the reading agent
  can see: none a rewind removed, and none of a branch that some agent reading
  the summary cannot see (isolation scopes: see U6)
  (:func:`check_same_view`, :func:`check_branch_view`).
* **P6 no wasted work** -- (a) every compaction covers at least one live event
  no kept summary covered before; (b) the token trigger is driven by the
  newest real prompt count: its decision does not change when the counts a
  summary made stale are removed; (c) the summariser writes at most one
  summary per branch at one invocation end or model call (one per branch,
  since P5 keeps sibling branches apart), and with a token threshold alone (always so
  before a model call) never while the newest real prompt count is below it
  (see :func:`check_summariser_calls` for the bound this implies).
* **P7 round trip** -- the session stored in and reloaded from a database
  yields the same prompt (:func:`check_round_trip`).

Pure: imports only :mod:`compaction_harness.spec` and the standard library.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from . import reference
from .invariants import Violation
from .model import (
    REQUEST_CONFIRMATION_CALL,
    REQUEST_CREDENTIAL_CALL,
    Session,
    Step,
    summary_number,
)

__all__ = [
    "ABORT_ERROR",
    "FRAMEWORK_CALLS",
    "Prompt",
    "Summaries",
    "check_branch_view",
    "check_new_work",
    "check_range_safety",
    "check_round_trip",
    "check_same_view",
    "check_stale_counts",
    "check_summariser_calls",
    "check_summary_bound",
    "covered_by_kept",
    "covered_by_records",
    "from_model",
    "live_positions",
    "newest_real_count",
    "once_per_branch",
    "stale_counts",
    "summary_branch",
    "tool_failed",
]

#: The synthetic calls the framework makes to ask the user (a confirmation,
#: a credential): no model wrote them.
FRAMEWORK_CALLS = frozenset({REQUEST_CONFIRMATION_CALL, REQUEST_CREDENTIAL_CALL})


Prompt = Sequence[tuple[str, tuple[tuple[str, ...], ...]]]


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


def _shows(part: str, text: str) -> bool:
    """Whether a prompt text part carries ``text``: as is, or as another agent's
    message relayed as user context ("[name] said: text" before 2.x; fenced
    between marker lines in 2.x, see ADK's ``_present_other_agent_message``)."""
    return part == text or text in part.splitlines() or part.endswith(f" said: {text}")


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
