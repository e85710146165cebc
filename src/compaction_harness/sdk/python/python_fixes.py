"""The fixes of google-adk's known faults, as data (see :mod:`.fixes` for what a fix is).

Each entry names its diff file and the faults it removes. A diff under
``patches/`` is written against google-adk 2.13.0, the pinned
release; one under ``patches/<release>/`` against ``<release>``: the
fixes of faults that only older releases have, each written against the
newest release the fault lives on (see :mod:`.fixes`).

This module imports nothing: :mod:`.fixes` registers each entry as a
:class:`~.fixes.Fix` (in this order), and the fault catalogue reads which
fixes name which fault from here.
"""

from __future__ import annotations

from typing import Any

#: The keyword arguments of each :class:`~.fixes.Fix`, in registry order.
ENTRIES: tuple[dict[str, Any], ...] = (
    dict(
        name="dead-call-retry-at-every-boundary",
        faults=("dead-call-retry-skipped-at-invocation-boundary",),
        summary=(
            "_longest_self_contained_prefix runs the provably-dead retry whenever the strict "
            "pass does not cover the window, as its docstring promises, also when the strict "
            "prefix ends on an invocation boundary"
        ),
        diff="dead-call-retry-at-every-boundary.diff",
    ),
    dict(
        name="newest-invocation-call-never-dead",
        faults=("reused-call-id-unprotects-newest-invocation-call",),
        summary=(
            "_longest_self_contained_prefix's provably-dead retry ignores a dead id only in "
            "events of older invocations: a call the newest invocation made with a reused id "
            "still opens an obligation, as _provably_dead_call_ids' docstring requires"
        ),
        diff="newest-invocation-call-never-dead.diff",
    ),
    dict(
        name="token-split-ignores-callless-responses",
        faults=("retained-callless-response-blocks-token-split",),
        summary=(
            "_safe_token_compaction_split_index lets a retained response constrain the split "
            "only when its call is among the candidates before it: a response whose call an "
            "earlier compaction or a rewind took no longer forbids every split"
        ),
        diff="token-split-ignores-callless-responses.diff",
    ),
    dict(
        name="summary-leaves-out-branch-events",
        faults=("summary-leaks-branch-events-to-siblings",),
        summary=(
            "sliding-window and token-threshold compaction write one summary per branch of "
            "their range, on that branch (_summary_inputs_by_branch), so only the agents that "
            "can see a branch read its summary; a sub-agent's token compaction sees only the "
            "branches it can see; token candidates and rolling seeds are per branch; and the "
            "prompt builder hides a raw event only by a kept summary of its own branch "
            "(_get_compaction_ranges supersedes only ranges of the same branch); "
            "rearrange_events_for_latest_function_response keeps a summary stored between the "
            "latest call and the trailing response, in its order, before that call (a branch's "
            "summary written after a sibling's call stands for events stored before it, which "
            "dropping it would lose)"
        ),
        diff="summary-leaves-out-branch-events.diff",
    ),
    dict(
        name="token-compaction-keeps-the-running-invocation",
        faults=("token-compaction-summarises-the-running-request",),
        summary=(
            "_run_compaction_for_token_threshold_config, which the flow's compaction request "
            "processor runs before every model call, never takes events of the newest "
            "invocation, the one running; the post-invocation call "
            "(_run_compaction_for_token_threshold) passes invocation_ended=True and may; "
            "and _recover_compacted_function_calls re-injects the responses compaction "
            "removed from a call event that survived, right after it (an invocation resumed "
            "by one answer of two parallel calls leaves that answer to the summary made at "
            "its end, and the second answer's rearrangement would drop that summary); when "
            "an earlier response of the call survived, the call's hidden latest update goes "
            "after the last surviving one, so that merging the call's responses keeps it"
        ),
        diff="token-compaction-keeps-the-running-invocation.diff",
    ),
    dict(
        name="responses-follow-only-their-own-call-turn",
        faults=("one-answer-to-several-turns-makes-an-invalid-request",),
        summary=(
            "rearrange_events_for_async_function_responses_in_history places after each call "
            "content only the responses to that content's calls, paired by id and tool name "
            "(a model that numbers calls per turn reuses ids), attributing each response to "
            "the newest call with its id and tool name, as _recover_compacted_function_calls "
            "does when it restores a summarised call: a client's message that answers calls of "
            "several model turns is split between them, each response once; the latest-response "
            "rearrangement (_find_owning_call_event_index) and merge_function_response_events "
            "pair by id and tool name too, so a restored call that follows another tool's call "
            "with its id neither takes that call's answer nor replaces its results; and "
            "_recover_compacted_function_calls keys each response by its event, id and tool "
            "name, so one message that answers two tools' calls with one id restores both calls; "
            "both it and _find_owning_call_event_index attribute a response to the newest such "
            "call of the response's own invocation when there is one (a tool's result carries "
            "the invocation of the call it ran), so a later invocation's call with its id and "
            "tool does not take the answer to a resumed invocation's call"
        ),
        diff="responses-follow-only-their-own-call-turn.diff",
    ),
    dict(
        name="pending-call-left-out-beside-answered-siblings",
        faults=("partial-answer-to-parallel-calls-makes-an-invalid-request",),
        summary=(
            "drop_orphaned_function_calls leaves a pending long-running call out of the "
            "request when the event right after its call event answers sibling calls: the "
            "function-response turn then answers exactly the calls of the turn before it"
        ),
        diff="pending-call-left-out-beside-answered-siblings.diff",
    ),
    dict(
        name="summary-priced-by-the-summarizers-own-output",
        faults=("summary-priced-by-a-client-record-resummarises-a-continued-invocation",),
        summary=(
            "_previous_summary_chars prices the next summary by the latest compaction event "
            "the summarizer wrote (LlmEventSummarizer records the usage metadata of its model "
            "call on it; a client's compaction record has none), not by a client's record"
        ),
        diff="summary-priced-by-the-summarizers-own-output.diff",
    ),
    dict(
        name="running-request-restored-after-compaction",
        faults=("compaction-summarises-a-waiting-invocations-request",),
        summary=(
            "_get_contents restores the user message that opened the running invocation when "
            "a summary hides it, right before the invocation's first surviving event, as "
            "_recover_compacted_function_calls restores a compacted call whose response "
            "survives: a turn resumed after a long-running tool or a confirmation still "
            "carries its request, and compaction stays free to summarise it (the user's "
            "answer that resumed it is looked for among the stored events: the contents "
            "leave a confirmation's answer out)"
        ),
        diff="running-request-restored-after-compaction.diff",
    ),
    dict(
        name="compaction-summarised-around-a-waiting-call",
        faults=("compaction-stops-while-a-call-waits",),
        summary=(
            "_run_compaction_for_sliding_window and _events_to_compact_for_token_threshold, "
            "when the self-contained prefix of their window stops at a call still waiting (a "
            "long-running call, a confirmation) and holds nothing new worth summarising, "
            "summarise the first self-contained range after the waiting call that holds "
            "something new: the summary's time range starts after the waiting call, which "
            "stays in the prompt (the token threshold's range goes without the rolling-summary "
            "seed, which would stretch it over the call), and no range is summarised again"
        ),
        diff="compaction-summarised-around-a-waiting-call.diff",
    ),
    dict(
        name="sliding-window-refuses-a-range-with-nothing-new",
        faults=("summary-priced-by-a-client-record-resummarises-a-continued-invocation",),
        summary=(
            "_run_compaction_for_sliding_window writes no summary of a range whose every event "
            "lies in a kept summary's time range: a resumed invocation's window starts again "
            "at its first event, and when kept summaries (a client's record, or a summary made "
            "before a model call) already cover all it holds, the summarizer would read "
            "nothing new, however many small summaries the new one would supersede"
        ),
        diff="sliding-window-refuses-a-range-with-nothing-new.diff",
    ),
    dict(
        name="database-reads-events-in-append-order",
        faults=("database-reload-reorders-events-by-timestamp",),
        summary=(
            "DatabaseSessionService.append_event stores an event's row in the events table's "
            "timestamp column, by which get_session orders a session's events, one microsecond "
            "after the latest row of the session when the event is stamped no later than it: "
            "get_session gives the events back in the order they were appended, as the "
            "in-memory session holds them, and the reloaded event keeps its own timestamp "
            "(StorageEvent.to_event reads it from event_data); the current (v1) schema only, "
            "as the legacy one reads an event's timestamp from that column. "
            "SqliteSessionService.get_session reads a session's events by rowid (the order "
            "they were appended) instead of by timestamp"
        ),
        diff="database-reads-events-in-append-order.diff",
    ),
    dict(
        name="session-stamps-events-in-append-order",
        faults=("compaction-assumes-events-are-stored-in-time-order",),
        summary=(
            "BaseSessionService.append_event (and so InMemorySessionService's), "
            "DatabaseSessionService.append_event and SqliteSessionService.append_event stamp "
            "an event one microsecond after the latest event of the session when it is "
            "stamped no later than that event (a tie, a lagging host, a parallel sub-agent's "
            "reply, a confirmation request stored before the response it was built after), "
            "before storing it: a session's timestamps follow the order its events are "
            "appended, which is what compaction's summary ranges, the prompt builder's "
            "hiding and ordering, and both compactors' choice of new events read; a summary "
            "records its range as two timestamps only, so it cannot say which of several "
            "events stamped alike, or out of order, it was given"
        ),
        diff="session-stamps-events-in-append-order.diff",
    ),
    dict(
        name="confirmation-resolves-the-call-it-asked-about",
        faults=("confirmation-of-a-reused-call-id-raises",),
        summary=(
            "_resolve_confirmation_targets checks a confirmed call against the newest call with "
            "its id stored up to the confirmation request, the call the request asked about, "
            "not against the newest call in the whole session: a later invocation that reuses "
            "the id (call ids numbered per turn) no longer makes the user's confirmation raise"
        ),
        diff="confirmation-resolves-the-call-it-asked-about.diff",
    ),
    dict(
        name="credential-resumes-the-call-it-asked-about",
        faults=("credential-grant-runs-another-turns-call",),
        summary=(
            "_AuthLlmRequestProcessor.run_async looks for the call to run again from the "
            "credential request backwards (the newest call with its id stored before the "
            "request, the call the request asked about), not from the end of the session: "
            "a later invocation that reuses the id (call ids numbered per turn) no longer "
            "has its call run in place of the authorised one"
        ),
        diff="credential-resumes-the-call-it-asked-about.diff",
    ),
    dict(
        name="partial-read-loads-the-answered-call",
        faults=("partial-read-loses-the-call-a-response-answers",),
        summary=(
            "Runner.run_async loads the session as RunConfig.get_session_config asks and, for a "
            "request whose new message carries a function response, the events of the "
            "invocation that made each answered call besides (_get_session_for_message): the "
            "response resolves to that invocation, a confirmation finds the call it confirms "
            "and the request that asked, and the answer reaches the model after its call; "
            "nothing else the read leaves out comes back into the prompt"
        ),
        diff="partial-read-loads-the-answered-call.diff",
    ),
    # -- fixes of faults of older releases (diffs under patches/<release>/) -----
    dict(
        name="orphaned-call-retries-past-dead-calls",
        faults=("orphaned-call-stalls-compaction-for-good",),
        summary=(
            "google/adk/apps/compaction.py, written against 2.11.0: "
            "_longest_self_contained_prefix takes the session as all_events= (both callers "
            "pass it) and, when its strict pass stops short, retries ignoring the call ids "
            "_provably_dead_call_ids proves can never be answered, wherever the strict prefix "
            "ends and never for a call of the newest invocation: an orphaned call no longer "
            "stops compaction for the rest of the session (what 2.12.0 added, without its "
            "two faults)"
        ),
        diff="orphaned-call-retries-past-dead-calls.diff",
    ),
    dict(
        name="summarised-call-restored-before-its-response",
        faults=("summarised-call-makes-the-prompt-builder-raise",),
        summary=(
            "google/adk/flows/llm_flows/contents.py, written against 2.4.0: _get_contents, "
            "once summaries are applied, restores the event of each call a summary hid while "
            "a response to it survives (_restore_compacted_function_calls), right before that "
            "response, with the hidden responses to its sibling calls: the prompt builder "
            "pairs every response with its call instead of raising 'No function call event "
            "found' (later releases restore it as _recover_compacted_function_calls does)"
        ),
        diff="summarised-call-restored-before-its-response.diff",
    ),
    dict(
        name="compaction-ranges-keep-call-pairs",
        faults=("sliding-window-splits-call-pairs",),
        summary=(
            "google/adk/apps/compaction.py, written against 1.27.5: "
            "_run_compaction_for_sliding_window and _events_to_compact_for_token_threshold cut "
            "their range to its longest self-contained prefix (_longest_self_contained_prefix, "
            "with the session as all_events=): no call is summarised without its response or "
            "the other way round, and a provably dead call (_provably_dead_call_ids) does not "
            "stop compaction, as orphaned-call-retries-past-dead-calls makes 2.3.0 to 2.11.0 do"
        ),
        diff="compaction-ranges-keep-call-pairs.diff",
    ),
    dict(
        name="reloaded-actions-validated",
        faults=("database-reload-leaves-event-actions-as-dicts",),
        summary=(
            "google/adk/sessions/database_session_service.py, written against 1.21.0: "
            "StorageEvent.to_event validates the stored actions into EventActions "
            "(EventActions.model_validate) instead of copying them over an empty one "
            "(model_copy(update=...) validates nothing): a reloaded summary's "
            "actions.compaction is an EventCompaction again, as the event was appended"
        ),
        diff="reloaded-actions-validated.diff",
    ),
)
