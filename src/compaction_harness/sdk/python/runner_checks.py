"""The runner driver's checks: every pipeline invariant on what a run recorded
(:func:`check_run`), after the run (see :mod:`.adk_runner`, "What is checked").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...spec.invariants import Violation
from ...spec.liveness_checks import ranges_beyond_retention
from ...spec.model import Session, summary_number
from ...spec.tool_runs import check_tool_runs
from .adk import (
    litellm_heals_missing_tool_results,
    prunes_orphaned_calls,
    summariser_called,
    waits_to_save_prompt,
)
from .pipeline import (
    check_branch_view,
    check_liveness,
    check_model_prompt,
    check_new_work,
    check_range_safety,
    check_round_trip,
    check_same_view,
    check_stale_counts,
    check_summariser_calls,
    covered_by_kept,
    live_positions,
    newest_real_count,
    pricing_summary,
    summary_branch,
)
from .runner_record import RecordedCall, RecordedEnd, RecordedSummary, RecordedTrigger, RunnerRun


# -- checks -----------------------------------------------------------------------------
def _summaries_in(ids: Sequence[str], summaries: Sequence[RecordedSummary], count: int) -> list:
    """The first ``count`` summaries as (session length, positions given,
    seed numbers), positions in the session whose event ids are ``ids``."""
    index = {x: i for i, x in enumerate(ids)}
    return [
        (len(ids), tuple(index[x] for x in s.event_ids if x in index), s.seeds)
        for s in summaries[:count]
    ]


def _check_summaries(record: RunnerRun, config: Any) -> list[Violation]:
    """P1, P5 and P6 (first and third clauses) on every summariser call, on the
    session as the ``Runner`` held it then."""
    out: list[Violation] = []
    # Each summary's branch as stored (None without one: every agent reads it),
    # found by what the summariser wrote: at one compaction point the Runner
    # may call it once per branch with the session at the same length. (A
    # client's records say ``client``, never ``summary#N``.)
    branches = [summary_branch(record.session, n) for n in range(len(record.summaries))]
    for number, summary in enumerate(record.summaries):
        snapshot = summary.snapshot
        found = check_range_safety(snapshot, summary.positions)
        found += check_same_view(snapshot, summary.positions)
        found += check_branch_view(snapshot, summary.positions, branches[number])
        earlier = _summaries_in(summary.ids, record.summaries, number)
        covered_before = covered_by_kept(summary.prompt, earlier)
        found += check_new_work(summary.positions, covered_before, live_positions(snapshot), number)
        for v in found:
            v.details["summary"] = number
        out += found
    # P6's third clause, per compaction point: summaries made with no event
    # stored between them, at one invocation end or before one model call.
    # Told apart by the raw events each one's session held, not by their
    # number: with a partial read (``config.recent_events``) two invocation
    # ends in one operation (the driver runs an invocation when the next one
    # opens, and the last at the script's end) can hold as many raw events.
    points: list[list[int]] = []
    for number, summary in enumerate(record.summaries):
        raw = tuple(
            i for i, s in zip(summary.ids, summary.snapshot, strict=True) if s.compaction is None
        )
        key = (summary.op, summary.where, summary.agent, raw)
        if points and points[-1][0] == key:
            points[-1][1].append(number)
        else:
            points.append([key, [number]])
    for (_op, where, agent, _raw), numbers in points:
        first = record.summaries[numbers[0]]
        found = check_summariser_calls(
            [branches[n] for n in numbers],
            config.triggers,
            newest_real_count(first.snapshot, agent),
            token_only=where == "before a model call",
        )
        for v in found:
            v.details["summary"] = numbers[0]
        out += found
    return out


def _check_calls(record: RunnerRun, config: Any) -> list[Violation]:
    """P2 and P4 on every model call's request (see :class:`RecordedCall`), and
    P7 with database storage."""
    out: list[Violation] = []
    strict = config.strict_provider and not litellm_heals_missing_tool_results()
    for number, call in enumerate(record.calls):
        steps = call.snapshot
        found: list[Violation] = []
        if call.prompt is not None:
            found, _ = check_model_prompt(
                steps,
                call.prompt,
                call.baseline,
                call.summaries,
                _loaded_opener(call, config),
                strict=strict,
                records=_client_records(steps),
                pruned=prunes_orphaned_calls(),
            )
        if call.in_memory is not None and call.prompt is not None:
            found += check_round_trip(call.in_memory, call.prompt, call.time_ordered)
        for v in found:
            v.details["model_call"] = number
        out += found
    return out


def _loaded_opener(call: RecordedCall, config: Any) -> str | None:
    """The opener P2 asks of ``call``'s prompt: the text of the user message
    that opened the running invocation, unless the request did not load it.

    With a partial read (``config.recent_events``: ``GetSessionConfig``'s
    ``num_recent_events``) the session each request holds is the latest N
    stored events plus what the request appends; ADK documents the read as
    returning "at most given number of recent events"
    (``google/adk/sessions/base_session_service.py``, 2.13.0). An invocation
    that a client's answer continues in a later request may have opened
    before those N events: the opener is then not in the session the
    ``Runner`` assembles the prompt from, by the user's configuration, and
    neither P2 nor P4 is judged on events the request did not load (see
    ``docs/invariants.md``, partial reads; ``check`` warns of a read smaller
    than what compaction keeps raw). With the whole session read, the opener
    is always held, and the clause applies as stated."""
    if config.recent_events is None or call.opener is None:
        return call.opener
    held = any(s.author == "user" and s.text == call.opener for s in call.snapshot)
    return call.opener if held else None


def _client_records(steps: Session) -> list[int]:
    """Positions of compaction records ADK did not make (a client's: see
    ``pipeline.check_nothing_lost``)."""
    return [
        i
        for i, step in enumerate(steps)
        if step.compaction is not None and summary_number(step.compaction.summary) is None
    ]


def _check_ends(record: RunnerRun, config: Any) -> list[Violation]:
    """P3 at every run's end, on the session the ``Runner`` held after its
    post-invocation compaction (see ``pipeline.check_liveness``). A backlog no
    larger than the latest kept summary is compaction rightly waiting until it
    saves something (as ``PipelineRun`` judges it: ADK 2.13.0's
    ``_is_range_worth_compacting``). Without a sliding window P3 holds only
    where the token trigger fired: the count it consulted is the newest real
    prompt count of the session before the end's compaction (as the first
    summary made at that end found it; the end's own session when none was)."""
    out: list[Violation] = []
    earlier = None
    made = 0
    for end in record.ends:
        ids = [e.id for e in end.events]
        summaries = _summaries_in(ids, record.summaries, len(record.summaries))
        steps = end.snapshot
        # The session the token trigger consulted at this end: as the first
        # summary made at it found it, or as the end left it when none was.
        at_end = [
            s for s in record.summaries[made : end.summaries] if s.where == "at an invocation end"
        ]
        made = end.summaries
        count = newest_real_count(at_end[0].snapshot if at_end else steps)
        found, earlier = check_liveness(
            steps, end.prompt, summaries, config.triggers, _client_records(steps), earlier, count
        )
        for v in found:
            if _waits_to_save_prompt(v, end):
                continue
            v.details["end_op"] = end.op
            out.append(v)
    return out


def _waits_to_save_prompt(violation: Violation, end: RecordedEnd) -> bool:
    """Whether every range of a P3 backlog is no larger than the latest
    summary, as ``PipelineRun._waits_to_save_prompt`` weighs it
    (:func:`~compaction_harness.sdk.python.adk.waits_to_save_prompt`; with a
    token threshold alone the events it retains are not weighed, and each
    range a call that waits splits off is weighed on its own:
    ``liveness_checks.ranges_beyond_retention``)."""
    written = [
        step.compaction.summary
        for step in end.snapshot
        if step.compaction is not None and summary_number(step.compaction.summary) is not None
    ]
    ranges = [[end.events[i] for i in r] for r in ranges_beyond_retention(violation)]
    return waits_to_save_prompt(ranges, pricing_summary(written, end.prompt))


def _check_stale(record: RunnerRun) -> list[Violation]:
    """P6's second clause at every token-trigger decision made on stale counts:
    ADK's trigger, run again on a copy of the session it saw with and without
    those counts, decides the same (see ``pipeline.check_stale_counts``)."""
    from google.adk.apps import compaction

    out: list[Violation] = []
    for trigger in record.triggers:

        def fires(strip: frozenset[int], trigger: RecordedTrigger = trigger) -> bool:
            async def entry_point(config: Any, session: Any, service: Any) -> None:
                await compaction._run_compaction_for_token_threshold_config(
                    **{**trigger.arguments, "config": config},
                    session=session,
                    session_service=service,
                )

            return summariser_called(
                trigger.events, trigger.arguments["config"], entry_point, strip
            )

        found = check_stale_counts(fires(frozenset()), fires(trigger.stale), trigger.stale)
        for v in found:
            v.details["op"] = trigger.op
        out += found
    return out


def operation_of(record: RunnerRun, violation: Violation) -> int:
    """The index of the operation of ``record.script`` that was running when
    what ``violation`` judges was recorded (a summariser call, a model call, a
    run's end, a trigger decision); an exception, which ends the run, and
    anything else come after every operation."""
    details = violation.details
    if "op" in details:
        return details["op"]
    if "end_op" in details:
        return details["end_op"]
    if "model_call" in details:
        return record.calls[details["model_call"]].op
    if "summary" in details:
        return record.summaries[details["summary"]].op
    return len(record.script.operations)


def check_run(record: RunnerRun, config: Any) -> list[Violation]:
    """Every invariant on what the run recorded: P1, P5 and P6 on the
    summariser's inputs, P2, P4 and P7 on the requests the model received,
    P3 at the runs' ends, P8 on the tools' runs (positions in the session as
    the ``Runner`` held it last)."""
    positions = {event.id: i for i, event in enumerate(record.events)}
    return (
        _check_summaries(record, config)
        + _check_calls(record, config)
        + _check_ends(record, config)
        + _check_stale(record)
        + check_tool_runs(record.tool_runs, positions)
    )
