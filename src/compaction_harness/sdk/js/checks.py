"""The invariants over a :class:`~.run.JsRun`: :func:`check_run` judges every
model call of a run with the pipeline checkers
(:mod:`compaction_harness.spec.pipeline_checks`,
:mod:`compaction_harness.spec.prompt_checks`) and the trigger's clauses
(:mod:`.trigger`); :func:`round_trip_violations` compares a run on
``InMemorySessionService`` with one on ``DatabaseSessionService`` (P7).
Checking never classifies (:mod:`.triage` does)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace
from typing import Any

from ...spec.invariants import Violation
from ...spec.model import Session
from ...spec.pipeline_checks import (
    Prompt,
    check_branch_view,
    check_new_work,
    check_range_safety,
    covered_by_records,
)
from ...spec.prompt_checks import check_model_prompt, check_prompt, parts_of
from ...spec.reference import dead_id_clauses
from .backlog import waiting_calls
from .case import DELETING, TRIGGERED, JsCompactor
from .run import JsRun, as_adk_js_reads, foreign_records, summary_branch
from .trigger import check_trigger

__all__ = [
    "PRUNES_ORPHANED_CALLS",
    "check_run",
    "check_truncation",
    "round_trip_violations",
    "waiting_call_ids",
]

#: The ADK-JS fix after which getContents prunes a function call that the
#: content after it does not answer, as adk-python's prompt builder does by
#: design (``drop_orphaned_function_calls``): with it applied, P4 does not
#: require such a call in the prompt (``pruned`` of
#: :func:`pipeline.check_nothing_lost`).
PRUNES_ORPHANED_CALLS = "unanswered-calls-left-out-of-the-request"


def check_truncation(
    compactor: JsCompactor, before: list[str], after: list[str]
) -> list[Violation]:
    """P4 for the truncating compactor ("only what the configuration says may go
    is gone"): with ``threshold`` T and ``preserveLeadingEvents`` L, a session of
    more than T + L events keeps exactly its first L and its last T events, in
    order; a shorter one keeps everything (``TruncatingContextCompactorOptions``:
    "the maximum number of events to retain", "keep the first X events")."""
    if compactor.name != "truncating":
        return []
    threshold = compactor.options.get("threshold", 0)
    lead = max(0, compactor.options.get("preserveLeadingEvents", 0))
    expected = (
        before
        if len(before) <= threshold + lead
        else before[:lead] + before[len(before) - threshold :]
    )
    if after == expected:
        return []
    gone = [i for i in expected if i not in after]
    return [
        Violation(
            "P4",
            f"the truncating compactor (threshold {threshold}, preserveLeadingEvents {lead}) "
            f"left {len(after)} of {len(before)} events, not the {len(expected)} its "
            "configuration keeps",
            expected=expected,
            observed=after,
            details={"cause": "deleted beyond configuration", "gone": gone},
        )
    ]


def waiting_call_ids(steps: Session) -> frozenset[str]:
    """Ids of the long-running calls of ``steps`` (a session as stored at a
    model call) that no later event answers yet: calls that wait. P2's
    strict clause leaves them to the model adapter (``check_prompt``'s
    ``adapter_answers``).

    Why, from both SDKs' source: a strict provider (Anthropic, OpenAI)
    refuses a call with no result before the next turn, and a pending
    long-running call has none by design. google-adk keeps such a call in
    its contents (``drop_orphaned_function_calls`` prunes only calls that
    can no longer be answered) and its adapter for strict providers answers
    it with a placeholder (``_ensure_tool_results``, ``models/lite_llm.py``,
    1.24.0 and later). ADK-JS 2.0.0 ships no adapter for a strict provider
    (``dist/esm/models/``: Gemini, Apigee's proxy of the Gemini API, the
    registry): a strict provider is reached through the app's own
    ``BaseLlm``, whose job that placeholder is, as it is LiteLLM's. A call
    the contents keep that can no longer be answered (its tool died, a
    sibling of answered parallel calls) stays under the clause: that is the
    contents' job in both SDKs (``js-unanswered-call``).

    A response answers the latest call before it with its id and tool name
    (with ids numbered per turn, ``call_0`` of one turn is not answered by
    the response to another turn's ``call_0``)."""
    return frozenset(call_id for _, call_id in waiting_calls(steps))


def shown_by_both(unclaimed: Prompt, raw: Prompt) -> Prompt:
    """P4's baseline where compaction records ADK-JS did not make are stored:
    the parts of ``unclaimed`` (ADK-JS's contents of the raw events no record
    claims) that ``raw`` (its contents of every raw event) shows too.

    Neither view holds a summary ADK-JS made, so an event either one leaves
    out is not lost by compaction: what the prompt builder drops because of
    what a record hides is the record's doing (a record that leaves an answer
    newest in view makes the latest-response rearrangement drop the events
    between its call and it), and what it drops with no compaction at all is
    its design (the same rearrangement over every raw event). Once, a record
    that hid a call made its answer's rearrangement a no-op in the unclaimed
    view alone, which then showed a reply the raw view drops
    (``P4-adk-js-00bea4e1``)."""
    shown = parts_of(raw)
    return [
        (role, tuple(p for p in parts if parts_of([(role, (p,))]) <= shown))
        for role, parts in unclaimed
    ]


def _splits_as_adk_js_reads(run: JsRun, snapshot: Session, violation: Violation) -> bool:
    """Whether a P1 violation (a call at ``violation.positions[0]`` that a
    summariser input splits from its answer) is one in the session as ADK-JS
    reads it: the definitions' provably dead, asked again of ``snapshot``
    with two readings of ADK-JS's data.

    * A long-running mark is its own event's: ``Event.longRunningToolIds``
      marks the calls of its event, and with ids numbered per turn another
      tool's long-running call may carry the id (ADK-JS's fixes read the
      mark of the call's own event). Every other clause stays by id, so an
      earlier response with the id keeps the call live
      (``js-reused-id-orphan-summarised``).
    * An answer a compaction record ADK-JS did not make claims
      (:func:`run.foreign_records`, read as ADK-JS reads a record) is gone:
      the record's writer took it away from the call, its decision, as P2,
      P3 and P4 count it.

    A request's key (a confirmation, a credential) has no call here: always
    True."""
    (position,) = violation.positions
    call_id = violation.ids[0]
    if call_id not in snapshot[position].call_ids:
        return True
    records = foreign_records(run, len(snapshot))
    claimed = covered_by_records(as_adk_js_reads(snapshot, records), records) if records else set()
    read = Session(
        tuple(
            replace(
                step,
                long_running=tuple(i for i in step.long_running if i != call_id or p == position),
                responses=tuple(r for r in step.responses if r.id != call_id or p not in claimed),
            )
            for p, step in enumerate(snapshot)
        )
    )
    return not all(dead_id_clauses(read, [position], call_id).values())


def check_run(run: JsRun, only: Collection[str] | None = None) -> list[Violation]:
    """The invariants that apply to ``run.compactor``, at every model call
    (``only``: those invariant ids alone, the others not worked out; a
    re-run that tells whether a fix removed a violation asks only for the
    invariants of the violations in question):

    * P0: ADK-JS raised (compaction or contents assembly);
    * P1: each summariser input, as a window of the stored session then,
      splits no live pair (:func:`pipeline.check_range_safety`);
    * P5: no summary was given an event that some agent reading it cannot
      see (:func:`pipeline.check_branch_view`, with the summary's own branch
      as ADK-JS stored it: none, read by every agent, unless a fix gives it
      the branch of the events it holds);
    * P6 (first clause, for the compactors with a trigger): each summary
      covers at least one event no earlier summary was given
      (:func:`pipeline.check_new_work`); P3 and P6's second and third
      clauses (:func:`check_trigger`);
    * P2 (strict clause with ``strict_provider``, on every call the contents
      leave unanswered but one that still waits: see :func:`waiting_call_ids`)
      and, for compactors that do not delete by design, P4 (:func:`pipeline.check_model_prompt`; the
      baseline is ADK-JS's contents of the stored raw events; where a
      compaction record ADK-JS did not make is stored, of the raw events
      no such record claims, ``baseline_unclaimed``: what the prompt
      builder drops because of what a record hides, such as the events
      between a call and an answer the record leaves newest in view, is the
      record's doing); for the truncating compactor, P4 is
      :func:`check_truncation` instead.

    A P2 or P4 violation's ``details["model_call"]`` is the index of its
    model call in ``run.calls``.
    """
    found: list[Violation] = []
    summaries = run.summaries()
    where = {event_id: k for k, event_id in enumerate(run.ids)}
    summary_positions = [
        where.get(made.get("event") or "", -1) for call in run.calls for made in call["summaries"]
    ]
    number = 0
    strict = run.script.config.strict_provider
    stored = run.stored.steps
    wanted = _SECTIONS if only is None else {k: v & set(only) for k, v in _SECTIONS.items()}
    for call in run.calls:
        snapshot = Session(stored[: len(call["stored_before"])])
        for made in call["summaries"]:
            taken = summaries[number][1]
            number += 1
            if not wanted["summary"]:
                continue
            found += [
                v
                for v in check_range_safety(snapshot, taken)
                if _splits_as_adk_js_reads(run, snapshot, v)
            ]
            found += check_branch_view(snapshot, taken, summary_branch(run, made))
            if run.compactor.name in TRIGGERED:
                # P6 (first clause): ADK-JS rolls every summary forward into
                # the next, so every earlier summary's input counts as covered,
                # up to a compaction record ADK-JS did not make: ADK-JS reads
                # the latest compacted event alone, the record stands for its
                # own range only, and a summary that takes again what the
                # summaries before the record covered is its first summary of
                # them since (as pipeline.check_new_work's callers count for
                # google-adk: a summary of what a record stood for is no waste).
                last_record = max(foreign_records(run, len(snapshot)), default=-1)
                before = {
                    p
                    for k, (_, given, _) in enumerate(summaries[: number - 1])
                    if last_record < 0 or summary_positions[k] > last_record
                    for p in given
                }
                found += check_new_work(taken, before, set(range(len(snapshot))), number - 1)
        if "contents" not in call or not wanted["prompt"]:
            continue  # ADK-JS raised during this call (P0 below), or neither P2 nor P4 asked
        steps = Session(stored[: len(call["stored_after"])])
        records = foreign_records(run, len(steps))
        prompt = run.prompt(call)
        # A long-running call whose answers a record ADK-JS did not make
        # claims waits, in the session as the record's writer left it, like
        # one not answered yet: ADK-JS keeps it as pending, and the strict
        # clause leaves it to the model adapter (what a record hides is its
        # writer's decision, P2 as P4).
        claimed = covered_by_records(as_adk_js_reads(steps, records), records)
        waiting = waiting_call_ids(steps) | waiting_call_ids(
            Session(tuple(s for p, s in enumerate(steps) if p not in claimed))
        )
        if run.compactor.name in DELETING or call.get("baseline") is None:
            # Without a baseline (ADK-JS's contents of the raw events raised:
            # another event is the newest there) P4 has nothing to compare.
            violations, _ = check_prompt(
                prompt, call["opener"], strict=strict, adapter_answers=waiting
            )
            if any(
                steps[i].author == "user" and steps[i].text == call["opener"] for i in claimed
            ):  # a foreign record hides the opener: its writer's doing (check_model_prompt's rule)
                violations = [v for v in violations if v.details.get("cause") != "opener missing"]
            if run.compactor.name in DELETING:
                violations += check_truncation(run.compactor, call["before"], call["after"])
        else:
            # The prompt of the session as the records' writers left it (see
            # the docstring), where the driver could assemble it.
            unclaimed = records and call.get("baseline_unclaimed") is not None
            baseline = run.prompt(call, "baseline")
            if unclaimed:
                baseline = shown_by_both(run.prompt(call, "baseline_unclaimed"), baseline)
            violations, _ = check_model_prompt(
                as_adk_js_reads(steps, records),
                prompt,
                baseline,
                summaries[:number],
                call["opener"],
                strict=strict,
                adapter_answers=waiting,
                records=records,
                pruned=PRUNES_ORPHANED_CALLS in run.fixes,
            )
        for v in violations:
            v.details["model_call"] = run.calls.index(call)
        found += violations
    if wanted["trigger"]:
        found += check_trigger(run)
    if run.exception is not None:
        exc = run.exception
        found.append(
            Violation(
                "P0",
                f"@google/adk raised {exc['name']} at action {exc['action']}: {exc['message']}",
                expected="no exception",
                observed=f"{exc['name']}: {exc['message']}",
                details={"cause": "exception", "exception": exc["name"]},
            )
        )
    return found if only is None else [v for v in found if v.invariant in only]


#: The invariants each part of :func:`check_run` can report: per summary
#: (P1 range safety, P5 branch view, P6 new work), per model call's prompt
#: (P2, P4) and the trigger's (P3, P6). P0 is always read (it costs nothing).
_SECTIONS = {
    "summary": frozenset({"P1", "P5", "P6"}),
    "prompt": frozenset({"P2", "P4"}),
    "trigger": frozenset({"P3", "P6"}),
}


def round_trip_violations(memory: JsRun, database: JsRun) -> list[Violation]:
    """What differs between the in-memory run ``memory`` and the database
    run ``database`` of one script: P0 when only the database run raised;
    else P7 for the first model call whose prompt differs
    (``pipeline.check_round_trip``, prompts compared by event id;
    ``details["call"]`` the call's position), or for a different number of
    model calls when neither run raised. At most one violation; [] when
    the round trip holds."""
    from ...spec.pipeline_checks import check_round_trip

    if database.exception and not memory.exception:
        return [
            Violation(
                "P0",
                f"on DatabaseSessionService ADK-JS raised {database.exception['name']}: "
                f"{database.exception['message']} (at action {database.exception['action']})",
            )
        ]
    for k, (a, b) in enumerate(zip(memory.calls, database.calls, strict=False)):
        if "contents" not in a or "contents" not in b:
            break
        # By event id, not by stored position: the reload may store the same
        # events in another order, and a position is relative to one run.
        found = check_round_trip(_by_event_id(a), _by_event_id(b))
        if found:
            for v in found:
                v.details["call"] = k
            return found
    # A run that raised stops early: its P0 is judged (check_run, or above),
    # and a different number of calls is then no round-trip difference.
    ran_through = not memory.exception and not database.exception
    if ran_through and len(memory.calls) != len(database.calls):
        return [
            Violation(
                "P7",
                f"after a database round trip {len(database.calls)} model calls ran, "
                f"in memory {len(memory.calls)}",
            )
        ]
    return []


def _by_event_id(call: dict[str, Any]) -> Prompt:
    """A call's contents in the checkers' form with each response and text
    part naming its event by id (``e<n>``), comparable across two runs."""
    return [(role, tuple(tuple(p) for p in parts)) for role, parts in call["contents"]]
