"""ADK for TypeScript's (``@google/adk``) known faults, as data: one row a fault.

What no program can know of each fault, written by hand; the catalogue
(:mod:`compaction_harness.faults.catalogue`) reads the rows in this order,
after google-adk's (:mod:`.records_python`), checks them and derives each
fault's fixes and releases. A row is
``(id, family, invariants, compactors, title, user_sees)``, and may end with
a ``no_fix_reason``:

* ``id``: a stable slug, referenced by fixtures as ``known_fault``;
* ``family``: the id of the google-adk fault with the same mechanism, or None;
* ``invariants``: the invariants it breaks, separated by spaces;
* ``compactors``: the ADK-JS compactors it concerns, separated by spaces
  (:data:`EVERY`: all of them);
* ``title``: one line;
* ``user_sees``: where in ADK-JS (file, function), what goes wrong, and what
  it costs a user;
* ``no_fix_reason``: why no fix can exist (a fault with neither a fix nor a
  reason has a fix still to write).

A data module: imports nothing.
"""

#: ADK-JS's context compactors, every one (``adk_js.COMPACTORS``; a test holds them equal).
EVERY = "token_based anchored truncating thought_pruning agent_controlled"

#: ADK-JS's faults, one row each (see the module's docstring for the columns).
ROWS: tuple[tuple[str | None, ...], ...] = (
    (
        "js-db-tie-order",
        "database-reload-reorders-events-by-timestamp",
        "P7 P0",
        EVERY,
        "DatabaseSessionService returns the events stored in one millisecond in reverse order",
        "not compaction: DatabaseSessionService.getSession "
        "(sessions/database_session_service.js) stores timestamps as whole-millisecond "
        "Dates and reads events orderBy timestamp DESC with no tie-breaker, then "
        "reverses them: after a reload, events stored in the same millisecond come back "
        "in reverse order (a reply before the message it answers, an answer before its "
        "call), so the reloaded prompt differs from the in-memory one (P7), or getContents "
        "raises 'No function call event found' or 'Last response event should only "
        "contain ...' (P0). On a coarse clock a whole invocation shares one millisecond and "
        "comes back reversed.",
    ),
    (
        "js-db-time-order",
        "database-reload-reorders-events-by-timestamp",
        "P7 P0",
        EVERY,
        "DatabaseSessionService returns a session's events in "
        "timestamp order, not in the order they were stored",
        "not compaction: DatabaseSessionService.getSession "
        "(sessions/database_session_service.js) reads events orderBy timestamp, while the "
        "Runner appends them, and InMemorySessionService keeps them, in the order they "
        "happened: an event stamped before one stored ahead of it (a host whose clock lags "
        "shares the database; in the harness's mapping, a parallel sub-agent's reply stamped "
        "when its step started and stored when it finished) comes back moved to its "
        "timestamp's place after a reload, so the next request's prompt differs from the "
        "in-memory one (P7: a reply before the user message it answers, parallel replies "
        "swapped), or getContents raises on the reordered answers (P0). adk-python's "
        "DatabaseSessionService has the same order (database-reload-reorders-events-by-"
        "timestamp).",
    ),
    (
        "js-retention-zero",
        None,
        "P0",
        "token_based anchored",
        "eventRetentionSize 0 makes every model call raise TypeError",
        "calculateRetainStartIndex (context/compaction_utils.js) starts at "
        "rawEvents.length - eventRetentionSize; with eventRetentionSize 0 that is the "
        "length of the list, and the loop reads rawEvents[length] (undefined); "
        "shouldCompact calls it before it compares tokens, so every model call raises "
        "TypeError before the model is called, whatever the threshold.",
    ),
    # No family: adk-python's sliding window split pairs by having no pair
    # protection at all (sliding-window-splits-call-pairs, 1.16.0 to 1.27.5);
    # ADK-JS protects only an answer stored right after its call.
    (
        "js-late-answer",
        None,
        "P1 P0 P2 P4",
        "token_based anchored truncating",
        "a call answered later than the next event is summarised, or deleted, without its answer",
        "calculateRetainStartIndex keeps a call with its answer only when the answer is "
        "the event right after the call; the truncating compactor keeps no pair at all. "
        "A call answered later (long-running, answered by a client, an interim result "
        "then text) is summarised or deleted without its answer: when the answer is the "
        "newest event, getContents raises 'No function call event found for function "
        "responses ids' (rearrangeEventsForLatestFunctionResponse) and the run fails; "
        "otherwise the answer is silently dropped from every later prompt "
        "(rearrangeEventsForAsyncFunctionResponsesInHistory keeps only responses whose "
        "call is present).",
    ),
    # The time filter's family: getActiveEvents (context/compaction_utils.js;
    # AnchoredContextCompactor.getActiveEvents) keeps the raw events whose
    # timestamp is greater than the latest summary's endTime, not the events
    # the summary was not given, and LlmSummarizer's endTime is its last
    # input's timestamp, not the greatest.
    (
        "js-same-tick-hidden",
        "compaction-assumes-events-are-stored-in-time-order",
        "P4 P2 P3 P0",
        "token_based anchored",
        "a retained event stamped no later than the latest "
        "summary's endTime vanishes from every prompt",
        "getActiveEvents hides every raw event stamped no later than the latest "
        "summary's endTime: an event stored in the same clock tick as (or stamped before) "
        "the last summarised event, but retained, vanishes from every later prompt "
        "without being summarised (P4; P2 when it is the running turn's message or a "
        "call's answer; P3, since no later compaction can reach it, and a hidden reply's "
        "prompt count is never read by the trigger, which then declines though the prompt "
        "is over the threshold), and the anchored "
        "compactor's rebuild of session.events then drops it for good; an answer whose "
        "call it hides is dropped with it, or, as the newest event, makes getContents "
        "raise 'No function call event found' (P0).",
    ),
    (
        "js-answer-hidden",
        "compaction-assumes-events-are-stored-in-time-order",
        "P1",
        "token_based anchored",
        "a call is summarised without the answer the time filter hides",
        "calculateRetainStartIndex keeps a call only with the next *active* event: when "
        "getActiveEvents hides the answer stored right after a call (a lagging host "
        "stamped it no later than the latest summary's endTime), the call is summarised "
        "without its answer (P1), and the model later sees a summary of a call whose "
        "result it never gets.",
    ),
    (
        "js-inverted-range",
        "compaction-assumes-events-are-stored-in-time-order",
        "P1",
        "token_based anchored",
        "a summary whose answer is stamped before its call brings the call back without its answer",
        "LlmSummarizer ends a summary's range at its last input's timestamp: with an "
        "answer stamped before its call (a lagging host) the range is inverted, so "
        "getActiveEvents brings the summarised call back but keeps its answer hidden, "
        "and the next summary takes the call alone (P1): the call is summarised twice, "
        "the second time without its result.",
    ),
    (
        "js-reactivated",
        "compaction-assumes-events-are-stored-in-time-order",
        "P6",
        "token_based anchored",
        "an event summarised out of time order is active again and summarised twice",
        "LlmSummarizer ends a summary's range at its last input's timestamp, not the "
        "greatest: an event summarised out of time order (stamped after the last input) "
        "is active again after the summary, and the next summary takes it once more "
        "(P6: the summariser is paid to summarise it twice, and the model reads it twice). "
        "getActiveEvents reads only the latest compacted event's endTime, so a client's "
        "compaction record ending before events an earlier summary took brings them back "
        "the same way.",
    ),
    # The content processor's getActiveEvents runs whatever the compactor, so
    # with a client's compaction record in the session every compactor meets
    # it (found with ClientRecord drawn: truncating, a record, a lagging host).
    (
        "js-sub-agent-hidden-reply",
        "compaction-assumes-events-are-stored-in-time-order",
        "P0",
        EVERY,
        "a hidden root reply leaves a client's function response "
        "newest, and a sub-agent's contents raise",
        "when getActiveEvents hides what was stored after a client's function response "
        "(the root agent's reply, stamped no later than the endTime of the latest "
        "compacted event, a summary or a client's compaction record, by a lagging "
        "host), that response becomes the newest active event; a sub-agent sees the "
        "root's call only as context text, so getContents "
        "(rearrangeEventsForLatestFunctionResponse) raises 'No function call event found "
        "for function responses ids' and the run fails (P0).",
    ),
    # No family: adk-python reads the same session past the answer (its
    # fixture P3-2.13.0-cb0dec0b808de2d3); its faults with a client's record
    # (summary-priced-by-a-client-record-resummarises-a-continued-invocation,
    # compaction-stops-while-a-call-waits, which took in
    # resumed-invocation-window-stalls-on-a-summarised-pending-call) are other
    # mechanisms.
    (
        "js-record-pending-call",
        None,
        "P0",
        EVERY,
        "a client's compaction record hides a pending long-running "
        "call, and its answer makes the run raise",
        "getActiveEvents (context/compaction_utils.js) reads the latest compacted event, "
        "whoever wrote it (isCompactedEvent is isCompacted === true), as standing for "
        "every raw event stamped up to its endTime: a compaction record that a client or "
        "an older session wrote after a long-running call whose answer has not arrived "
        "hides the call, and the run that delivers the answer fails before the model is "
        "called: getContents (rearrangeEventsForLatestFunctionResponse, agents/processors/"
        "content_processor_utils.js) raises 'No function call event found for function "
        "responses ids' (P0). adk-python takes the same session (the Python fixture "
        "P3-2.13.0-cb0dec0b808de2d3 runs past the answer); no ADK-JS compaction is "
        "needed, so every compactor meets it.",
    ),
    (
        "js-opener-summarised",
        "token-compaction-summarises-the-running-request",
        "P2",
        "token_based anchored",
        "the running invocation's user message is summarised before the model answers it",
        "calculateRetainStartIndex counts events, not invocations: with a small "
        "eventRetentionSize the user message that opened the running invocation is "
        "summarised before the model answers it, and the model sees only the summary.",
    ),
    # No family: adk-python meets the same message but sends it whole after
    # each call (one-answer-to-several-turns-makes-an-invalid-request), where
    # ADK-JS refuses it while it is the newest event: the same input, another
    # mechanism (once another event follows it, ADK-JS sends it whole too).
    (
        "js-multi-turn-answer",
        None,
        "P0 P2",
        EVERY,
        "a message answering calls of several model turns makes getContents raise",
        "getContents (rearrangeEventsForLatestFunctionResponse, agents/processors/"
        "content_processor_utils.js) requires the newest event's responses to answer "
        "calls of one call event and raises 'Last response event should only contain the "
        "responses for the function calls in the same function call event' otherwise: a "
        "client message answering calls the model made in several turns fails the run, "
        "with or without compaction (not a compaction fault; whether ADK-JS's Runner "
        "accepts such a message is not verified yet). Once a later event follows it, "
        "rearrangeEventsForAsyncFunctionResponsesInHistory places that whole message "
        "after each call event it answers, so each call content is followed by "
        "responses to calls it did not make (P2), as adk-python does "
        "(one-answer-to-several-turns-makes-an-invalid-request).",
    ),
    (
        "js-unanswered-call",
        "partial-answer-to-parallel-calls-makes-an-invalid-request",
        "P2",
        EVERY,
        "a call that no event answers, or answers only in part, is sent to the model",
        "getContents keeps a function call that no event answers (its tool's process "
        "died) or answers only in part (a client answered some of parallel calls), where "
        "ADK Python prunes such calls (drop_orphaned_function_calls): a strict provider "
        "(Anthropic, OpenAI) rejects the request. Not a compaction fault: the contents "
        "of the same events without compaction break P2 the same way.",
    ),
    (
        "js-latest-answer-drops-other-answers",
        None,
        "P2",
        EVERY,
        "the answer to a call is dropped when another call's later answer is the newest event",
        "getContents (agents/processors/content_processor_utils.js), "
        "rearrangeEventsForLatestFunctionResponse: when the newest event is a function "
        "response, every event between its call and it is dropped except the responses to "
        "that call. A response to another call stored in between goes with them: two "
        "long-running tools started in two turns, the first finishes, then the second "
        "reports (or a client sends an update of an answered call), and the model never "
        "sees the first tool's result; its call stays in the request unanswered, which a "
        "strict provider (Anthropic, OpenAI) rejects. Not a compaction fault: the contents "
        "of the same events without compaction lose the answer the same way. google-adk "
        "2.13.0's rearrange_events_for_latest_function_response drops it too, but there "
        "the LiteLLM adapter answers the call with a placeholder and the harness's P2 sees "
        "no invalid request (the lost result is visible to no invariant yet); it also drops "
        "a compaction summary stored in between, which google-adk writes there only once "
        "summaries are per branch, so the fix of summary-leaks-branch-events-to-siblings "
        "keeps such summaries.",
    ),
    (
        "js-truncate-opener",
        "token-compaction-summarises-the-running-request",
        "P2",
        "truncating",
        "the truncating compactor deletes the running invocation's user message",
        "TruncatingContextCompactor.compact counts events, not invocations: with a small "
        "threshold it deletes the user message that opened the running invocation, and "
        "the model is asked to answer a request it never sees. Deletion is the "
        "compactor's documented design, but no configuration value keeps the running "
        "turn's message (preserveLeadingEvents keeps only the session's first events).",
        "the documented contract and P2 cannot both hold: TruncatingContextCompactorOptions "
        "documents threshold as 'the maximum number of events to retain in the session "
        "history', and a running invocation longer than threshold (minus the preserved "
        "leading events) leaves no way to keep its user message within that maximum. A "
        "patch that keeps the running invocation (tried: compact deletes only events "
        "before its first one) retains more than the documented maximum, which the "
        "harness's truncation check (adk_js.check_truncation) reports as a P4; the "
        "fault is the option's design, for ADK-JS to decide (cap, or a documented floor)",
    ),
    (
        "js-truncate-splits-call-pairs",
        "sliding-window-splits-call-pairs",
        "P2",
        "truncating",
        "the truncating compactor deletes the answer of a call it keeps",
        "TruncatingContextCompactor.compact deletes events by count from the middle of the "
        "session (after the preserved leading events, before the last threshold events), "
        "whatever they hold: a kept call loses its result (or a kept result its call), and "
        "a strict provider (Anthropic, OpenAI) rejects the request with the unanswered "
        "call. With preserveLeadingEvents 2 and threshold 1, a session of the user's "
        "message, a tool call, its result and a reply keeps the call and deletes the "
        "result at the next model call. With call ids numbered per turn, a later turn's "
        "answer that reuses the id of one of parallel calls stands in for it, and the "
        "request answers only some of them, which Gemini rejects too.",
        "the documented options and P2 cannot both hold: preserveLeadingEvents keeps 'the "
        "first X events' and threshold is 'the maximum number of events to retain', so when "
        "a preserved call's result falls in the deleted middle, keeping it retains more "
        "than the maximum and deleting the call breaks the preserved prefix; the harness "
        "holds the compactor to both (adk_js.check_truncation reports any other choice as "
        "a P4). Like js-truncate-opener, a design decision for ADK-JS (delete pairs "
        "together, or document that truncation can break a strict provider's request)",
    ),
    (
        "js-reused-id-orphan-summarised",
        None,
        "P1",
        "token_based anchored",
        "a call that died unanswered is summarised while a response with its "
        "reused id is still in the session",
        "calculateRetainStartIndex (context/compaction_utils.js) keeps a call with its "
        "answer only when the answer is the next event, and nothing else: a call of an "
        "older invocation that no event answers (its tool's process died) is summarised. "
        "With call ids numbered per turn (providers behind other gateways reuse call_0 "
        "in every turn), an earlier turn's response carries the same id, so the call "
        "is not provably dead (the definitions: no resolved response with its id "
        "anywhere in the session) and the summary splits a live pair (P1): ADK's "
        "pairing by id can later take that response, or a late one, for this call. "
        "adk-python keeps such a call out of every summary "
        "(_longest_self_contained_prefix).",
    ),
    (
        "js-anchored-duplicates",
        None,
        "P2",
        "anchored",
        "the anchored compactor's rebuild keeps summarised events and doubles the retained ones",
        "AnchoredContextCompactor.compact rebuilds session.events as the events stored "
        "before the old scratchpad, the new scratchpad and the retained events. Each run "
        "fetches the stored session, where the scratchpad stands after the raw events it "
        "replaced (BaseSessionService.appendEvent appends), so after a new invocation the "
        "summarised events stay and the retained ones appear twice: the model is sent a "
        "call, or its answer, twice.",
    ),
    (
        "js-anchored-summed-counts",
        None,
        "P6",
        "anchored",
        "the anchored trigger sums whole-prompt token counts and fires on every model call",
        "AnchoredContextCompactor.shouldCompact (context/anchored_context_compactor.js) "
        "compares tokenThreshold with the sum of getEventTokens (events/event.js) over the "
        "active events, and getEventTokens of a model response is its "
        "usageMetadata.promptTokenCount: the size of the whole prompt that response "
        "answered. Every retained response (and the scratchpad's) counts the history "
        "again, and a response retained past a scratchpad still counts the prompt from "
        "before it (a count the summary made stale), so the trigger fires on every model "
        "call though the prompt stays well below the threshold: the summariser is called "
        "on every turn (an extra model call and its latency per turn).",
    ),
    (
        "js-scratchpad-behind-record",
        None,
        "P4 P2",
        "anchored",
        "a compacted event the anchored compactor retains "
        "after its scratchpad hides the scratchpad",
        "AnchoredContextCompactor (context/anchored_context_compactor.js) reads only "
        "scratchpad events as summaries (its getActiveEvents: the latest isScratchpad "
        "event) and takes any other compacted event (a client's record, one an older "
        "session or a TokenBasedContextCompactor wrote) for a raw event: it summarises or "
        "retains it, and rebuilds session.events as the new scratchpad followed by the "
        "retained events. A retained record then stands after the scratchpad, and the "
        "content processor's getActiveEvents (context/compaction_utils.js) reads the latest "
        "compacted event in list order: the record, not the scratchpad. What the scratchpad "
        "summarised and the record does not stand for (events stamped after its endTime: "
        "a lagging host) is gone from the prompt (P4), the running turn's message too (P2).",
    ),
    (
        "js-branch",
        "summary-leaks-branch-events-to-siblings",
        "P5",
        "token_based anchored",
        "a summary without a branch carries sub-agent branch events to their siblings",
        "the compactors read session.events without the branch filter of getContents, "
        "and LlmSummarizer's compacted event has no branch: a sub-agent's compaction "
        "summarises its siblings' branch events into a summary every agent reads.",
    ),
)
