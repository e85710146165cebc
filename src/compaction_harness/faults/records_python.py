"""google-adk's known faults, as data: one row a fault.

What no program can know of each fault, written by hand; the catalogue
(:mod:`compaction_harness.faults.catalogue`) reads the rows in this order,
checks them and derives each fault's fixes and releases. A row is
``(id, family, invariants, title, user_sees)``, and may end with a
``no_fix_reason``:

* ``id``: a stable slug, referenced by fixtures as ``known_fault``;
* ``family``: the id of the ADK-JS fault with the same mechanism, or None;
* ``invariants``: the invariants it breaks, separated by spaces;
* ``title``: one line;
* ``user_sees``: where in google-adk (file, function), what goes wrong, and
  what it costs a user;
* ``no_fix_reason``: why no fix can exist (a fault with neither a fix nor a
  reason has a fix still to write).

A data module: imports nothing.
"""

#: google-adk's faults, one row each (see the module's docstring for the columns).
ROWS: tuple[tuple[str | None, ...], ...] = (
    (
        "dead-call-retry-skipped-at-invocation-boundary",
        None,
        "U3 U5 P3 P6",
        "the provably-dead retry is skipped when the strict prefix ends an invocation",
        "google/adk/apps/compaction.py, _longest_self_contained_prefix: after the strict "
        "pass, `if safe_length > 0 and events[safe_length - 1].invocation_id != "
        "events[safe_length].invocation_id: return events[:safe_length]` returns before "
        "the provably-dead retry whenever the strict prefix happens to end on an "
        "invocation boundary. The docstring promises the retry whenever the strict pass "
        "does not cover the window. Consequence: an orphaned call that opens an "
        "invocation (an agent-started or resumed invocation whose first event is a "
        "function call that never gets its response) blocks every event after it. With "
        "sliding-window compaction and overlap_size >= 1 the next window starts with the "
        "already-summarised overlap invocation, whose strict prefix again ends at the same "
        "boundary, so the same range is offered again and refused by "
        "_is_range_worth_compacting: compaction stalls for the rest of the session, the "
        "fault 2.12.0 set out to fix. The same stop wastes a summary when a late event "
        "(a client's second answer to a call) continues an old invocation: the sliding "
        "window is taken again from that invocation's first event, the range stops at the "
        "boundary before the orphaned call, and the summary covers only what earlier "
        "summaries cover (P6: a summariser call that merges summaries and takes nothing "
        "new). Token-threshold compaction inherits it through "
        "_events_to_compact_for_token_threshold, which trims its range with the same helper.",
    ),
    (
        "reused-call-id-unprotects-newest-invocation-call",
        None,
        "U2 U5 P1",
        "a dead older call makes a newest-invocation call with the same id invisible",
        "google/adk/apps/compaction.py, _provably_dead_call_ids and "
        "_longest_self_contained_prefix: the newest-invocation exemption is applied per "
        "event when the dead set is built, but the retry pass then ignores the id in "
        "every event, including the call the newest invocation made with the same id. "
        "When a model reuses call ids across invocations (providers that number calls per "
        "turn) and an older call with that id was orphaned, a compaction that runs while "
        "the newest invocation's call is still unanswered (token-threshold compaction runs "
        "before each model call) can summarise that call away; its response then arrives "
        "with no call in the prompt, which the model API rejects. The docstring says the "
        "call must not have been opened by the newest invocation, which this one was. "
        "Through the pipeline it shows as P1: the sliding window at an invocation's end "
        "gives the summariser the newest invocation's call while it is still unanswered "
        "(an older call with its id, a confirmation left pending, is dead).",
    ),
    (
        "retained-callless-response-blocks-token-split",
        None,
        "U5",
        "a retained response whose call is not among the candidates forbids every split",
        "google/adk/apps/compaction.py, _safe_token_compaction_split_index: walking back "
        "from the newest candidate, a response id stays 'unmatched' until its call is "
        "seen, and a split is allowed only when nothing is unmatched. A response whose "
        "call is not among the candidates at all (the call was summarised by an earlier "
        "compaction or removed by a rewind, or the client answered a call the session "
        "never recorded) is never matched, so while it sits among the last "
        "event_retention_size candidates every split is refused and the function returns "
        "0: token-threshold compaction does nothing, however far the prompt is over the "
        "threshold, until event_retention_size newer events push that response out of "
        "the retained tail. Keeping it retained protects nothing, since its call cannot "
        "be retained either; the latest split that keeps every retained response with a "
        "call among the candidates is the one U5 asks for.",
    ),
    (
        "summary-leaks-branch-events-to-siblings",
        "js-branch",
        "P5",
        "a summary without a branch carries sub-agent branch events to their siblings",
        "google/adk/apps/compaction.py, _run_compaction_for_sliding_window and "
        "_run_compaction_for_token_threshold_config: the events to compact are filtered by "
        "rewinds and isolation scope (2.13.0: 'so their private turns do not leak into the "
        "root session summary') but not by Event.branch, and the summary event has no "
        "branch. The contents assembly (_is_event_belongs_to_branch) keeps a sub-agent "
        "from seeing its siblings' events: ParallelAgent's docstring promises 'a sub-agent "
        "sees the events that led to the fan-out and its own, but not those of a sibling'. "
        "A branchless summary is shown to every agent and hides the raw events it covers, "
        "so after the first compaction each parallel sub-agent reads a summary written "
        "from its siblings' private output: the isolation between branches ends at the "
        "first summary, and what one sub-agent was told or produced steers the others.",
    ),
    (
        "token-compaction-summarises-the-running-request",
        "js-opener-summarised",
        "P2",
        "token-threshold compaction before a model call summarises the running "
        "invocation's user message",
        "google/adk/flows/llm_flows/context/_compaction.py, CompactionRequestProcessor, "
        "runs _run_compaction_for_token_threshold_config before every model call, and "
        "google/adk/apps/compaction.py, _events_to_compact_for_token_threshold, takes every "
        "candidate except the last event_retention_size events, with nothing that keeps "
        "the running invocation's own user message. In an invocation that calls the model "
        "more than once (a tool loop), once the prompt count reaches token_threshold the "
        "user's request for this very turn is summarised away: the remaining model calls of "
        "the turn see it only through a summary, and the request may hold no user turn at "
        "all (the prompt then starts with the summary and model output).",
    ),
    (
        "compaction-summarises-a-waiting-invocations-request",
        None,
        "P2",
        "compaction at the end of a run summarises the user message of an invocation "
        "that waits for a long-running call or a confirmation",
        "google/adk/apps/compaction.py, _run_compaction_for_sliding_window and "
        "_events_to_compact_for_token_threshold, cut their range with "
        "_longest_self_contained_prefix, which stops before a pending long-running call "
        "or confirmation but keeps everything before it, the user message that opened "
        "the waiting invocation included. When the tool's result or the user's approval "
        "arrives, the Runner resumes that invocation under its own id, and every model "
        "call of the resumed turn is sent the summary in place of the request the user "
        "typed: the model answers the job's result without the question it belongs to "
        "(the request may hold no user turn at all). Seen through ADK's own Runner with "
        "a token threshold: a long-running export that answered at once with an interim "
        "result, resumed by the client's final result two invocations later. Keeping a "
        "resumable invocation out of every summary cannot fix it: a long-running call "
        "may be resumed at any time, and compaction would stall for good; the prompt "
        "builder restores the request instead, as it restores a compacted call.",
    ),
    (
        "compaction-stops-while-a-call-waits",
        None,
        "P3",
        "compaction (the sliding window, and the token threshold too) stops at a "
        "long-running call that waits, and nothing after it is compacted until it is "
        "answered",
        "google/adk/apps/compaction.py, _run_compaction_for_sliding_window cuts its window "
        "with _longest_self_contained_prefix, which returns a prefix: it ends before the "
        "first obligation still open, and a long-running call whose result has not come "
        "back (a tool that returned None: a job the client runs, an approval a person "
        "gives through a long-running tool) is open until it is answered. It is "
        "protected, so the provably-dead retry does not pass it either (a tool "
        "confirmation or auth request is protected only while its invocation is the "
        "newest, and the retry passes it after that). Every later window that starts at "
        "or before the waiting call stops there, and the windows that start after it "
        "never come: the sliding window counts the waiting invocation as new (its latest "
        "event is newer than the latest summary's end) and starts at it. So nothing "
        "stamped after the waiting call is summarised for as long as the call waits "
        "(a human approval, a long export: days), and the request sent to the model "
        "grows with every turn the user takes meanwhile, as if compaction were off. The "
        "events after the waiting call form ranges of their own that no call or answer "
        "crosses: the fix summarises such a range, whose time range starts after the "
        "waiting call, so the call stays in the prompt as it is and its answer finds it "
        "there. A kept compaction that covers the waiting call does not help either (a "
        "record a client appended, or a summary a release without pair protection wrote): "
        "when a client's answer to a sibling call resumes the invocation, its window starts "
        "again at the invocation's first event, whatever kept summaries cover, the waiting "
        "call is in it again and the prefix stops before it (first recorded as "
        "resumed-invocation-window-stalls-on-a-summarised-pending-call, which the fix "
        "removes with the rest). Token-threshold compaction stops the same way: "
        "_events_to_compact_for_token_threshold trims its candidates with the same "
        "_longest_self_contained_prefix, and every later end's candidates start at the "
        "waiting call, so an app with only a token threshold sends ever longer requests "
        "while an approval waits; there the fix summarises the range after the waiting "
        "call without the rolling-summary seed, whose time range would cover the call.",
    ),
    (
        "database-reload-reorders-events-by-timestamp",
        "js-db-time-order",
        "P7 P2 P3 P4 P6",
        "DatabaseSessionService and SqliteSessionService return a session's events in "
        "timestamp order, not in the order the runner stored them",
        "google/adk/sessions/database_session_service.py, get_session: the events are read "
        "with order_by(timestamp desc, id desc) and reversed, so they come back sorted by "
        "timestamp (ties by the event's random uuid), while the runner appends them, and "
        "InMemorySessionService keeps them, in the order they happened. The two differ "
        "whenever ADK stamps an event before one stored ahead of it: a ParallelAgent "
        "sub-agent's reply is stamped when its step starts and stored when it finishes, so "
        "a faster sibling's reply is stored first with the later time; a tool "
        "confirmation's request is stored before the response it was built after; hosts "
        "whose clocks lag share one database; and on a coarse clock, events of one tick "
        "come back ordered by their random ids. Every Runner.run_async reads the "
        "session afresh, so a server (or any app on the database service) builds the next "
        "prompt from the reordered history: parallel sub-agents' answers swap places "
        "between one request and the next, and the same session gives a different prompt "
        "in memory and from the database. Where the reordering puts a function response "
        "before its call, or a user message after the replies to it, the prompt builder "
        "drops events (P4) or the running request (P2): the same script with an "
        "in-memory session does not fail. google/adk/sessions/sqlite_session_service.py "
        "(SqliteSessionService: what adk web and adk run keep sessions in, .adk/session.db) "
        "reads them with ORDER BY timestamp DESC, rowid DESC: ties come back in append "
        "order, but an event stamped before one stored ahead of it is moved all the same.",
    ),
    (
        "partial-answer-to-parallel-calls-makes-an-invalid-request",
        "js-unanswered-call",
        "P2",
        "a model content with parallel calls is sent with responses to only some of them",
        "google/adk/flows/llm_flows/context/_contents.py (the contents assembly, "
        "_get_contents and _rearrange_events_for_latest_function_response): when a client "
        "answers some of the parallel calls a model made (two long-running tools, one of "
        "which has finished; ADK lets a client answer each call as its result arrives), "
        "the next request holds the model's content with every call, followed by a user "
        "content with only the responses that arrived. Gemini refuses such a request "
        "('the number of function response parts is equal to the number of function "
        "call parts of the function call turn'), and so do the strict providers. The "
        "invocation the client's answer resumes fails at its first model call. A model "
        "turn that mixes a plain call and a long-running one (a lookup and an approval in "
        "one reply) meets it without any client: the plain result is stored alone (a "
        "long-running tool that returns None gives no response), it is not a final "
        "response, so BaseLlmFlow.run_async calls the model again at once, and that "
        "request answers one call of two. It needs no compaction: the harness meets it "
        "because its scripts answer calls the way clients do and mix tools the way "
        "models do.",
    ),
    (
        "one-answer-to-several-turns-makes-an-invalid-request",
        None,
        "P2",
        "a function-response message answering calls of several model turns is sent "
        "whole after each of them",
        "google/adk/flows/llm_flows/tools/_rearranger.py (the contents assembly): a client "
        "may answer calls of several model turns of one invocation in one message (two "
        "long-running tools started in two turns, both finished; the Runner accepts one "
        "message for calls of one invocation). The contents assembly places that whole "
        "response content after each call content it answers, so each call content is "
        "followed by responses to calls it did not make, and the same responses appear "
        "twice. Gemini and the strict providers refuse such a request (function "
        "response parts must match the preceding turn's function call parts), and the "
        "resumed invocation fails at its next model call. It needs no compaction.",
    ),
    (
        "compaction-assumes-events-are-stored-in-time-order",
        "js-same-tick-hidden",
        "P2 P3 P4 P6",
        "compaction reads summaries and the prompt by timestamp, so events stored out "
        "of time order are lost, or summarised twice",
        "google/adk/apps/compaction.py picks the events to compact by position (the "
        "events stored after the previous summary, cut at a safe prefix), but "
        "google/adk/apps/llm_event_summarizer.py, maybe_summarize_events, records the "
        "summary's range as [events[0].timestamp, events[-1].timestamp], and everything "
        "afterwards reads time: the prompt builder "
        "(flows/llm_flows/context/_compaction.py, _process_compaction_events) hides every "
        "raw event whose timestamp lies in a kept range and, once a summary exists, puts "
        "the rest in timestamp order ('Keep chronological order'), and the next "
        "compaction takes the events stamped after the latest range's end. Stored order "
        "and time disagree whenever events are stored out of time order: ParallelAgent "
        "sub-agents are stored as they finish but stamped as their steps start, the "
        "Runner stores a tool confirmation's request before the response it was built "
        "after, hosts sharing one database have lagging clocks, and on a coarse clock "
        "(1 ms, or Windows' 15.6 ms) neighbouring events share a tick. Then an event "
        "stored after a range's last event but stamped inside it vanishes from the prompt "
        "without having been summarised, a function response stamped before its call is "
        "sorted ahead of it and both are dropped (P4: the model loses, say, a sub-agent's "
        "answer or a tool's result; P2: when it is the user's message of the running "
        "invocation, the model never sees the request); an event stamped before the "
        "latest summary's end but stored after it is never compacted, by either trigger, "
        "and the backlog grows (P3); and an event given to a summary but stamped after "
        "the range's end stays in the prompt beside the summary and is summarised again "
        "(P6: duplicated, wasted work).",
    ),
    (
        "summary-priced-by-a-client-record-resummarises-a-continued-invocation",
        None,
        "P6",
        "a continued invocation is summarised again from its start when the latest "
        "compaction record is a client's",
        "google/adk/apps/compaction.py, _run_compaction_for_sliding_window: an invocation "
        "that a client's answer resumes counts as new, and the window is taken again from "
        "its first event, which an earlier summary already covers. The price check "
        "_is_range_worth_compacting is what refuses such a range: it compares what the "
        "range would remove with _previous_summary_chars, the size of the latest "
        "compaction event, which its docstring calls the last summary the summarizer "
        "wrote. When the latest compaction event is instead a small record a client "
        "appended, the same events are offered as worth a summary, and the summariser is "
        "called for events a kept summary already covers, writing a summary as large as "
        "the one it replaces (P6: wasted work, one summariser call per resumed turn). "
        "Pricing the range by ADK's own last summary makes the same script summarise "
        "nothing again.",
    ),
    (
        "orphaned-call-stalls-compaction-for-good",
        None,
        "U3 U5 P3 P6",
        "an orphaned call at the start of the window stops compaction for good",
        "google/adk/apps/compaction.py, _longest_self_contained_prefix (2.3.0 to "
        "2.11.0): a single left-to-right pass returns the longest prefix at whose end "
        "no call is open, and nothing else. A function call whose response never comes "
        "(the tool's process died, the client never answered) stays open for ever, so "
        "every window that contains it is cut before it. Once it is the first event "
        "that no summary covers, every later sliding-window or token-threshold range is "
        "empty (or only what earlier summaries cover, which _is_range_worth_compacting "
        "refuses or summarises again): compaction has stalled for the rest of the "
        "session and the prompt grows until it no longer fits the context window. "
        "2.12.0 added the provably-dead retry (_provably_dead_call_ids, the all_events= "
        "parameter) to fix it; 2.12.0 and 2.13.0 still skip that retry in one case "
        "(dead-call-retry-skipped-at-invocation-boundary).",
    ),
    (
        "sliding-window-splits-call-pairs",
        "js-truncate-splits-call-pairs",
        "P1",
        "sliding-window ranges ignore function calls and their responses",
        "google/adk/apps/compaction.py, _run_compaction_for_sliding_window (1.16.0 to "
        "1.26.0): the range is every event from the first event of the overlap's first "
        "invocation to the last event of the newest one, and nothing compares function "
        "calls with their responses (1.28.0 added _pending_function_call_ids and "
        "_truncate_events_before_pending_function_call, 2.3.0 "
        "_longest_self_contained_prefix). A call whose response arrives later (a "
        "long-running tool, a confirmation, a client's answer in a later invocation) is "
        "summarised while its response stays in the prompt, or the other way round: the "
        "summariser is given half a pair (P1), and the next request holds a function "
        "response without its call, which the model API rejects or ADK's prompt builder "
        "refuses (see summarised-call-makes-the-prompt-builder-raise).",
    ),
    (
        "summarised-call-makes-the-prompt-builder-raise",
        None,
        "P0",
        "a response whose call was summarised makes contents assembly raise",
        "google/adk/flows/llm_flows/contents.py, "
        "_rearrange_events_for_latest_function_response: when the latest event is a "
        "function response, it looks back for the event holding the call and raises "
        "ValueError('No function call event found for function responses ids: ...') "
        "when there is none. A compaction that summarised the call (a range that "
        "ends between a call and its late response) leaves exactly that shape, so "
        "every model call of the invocation fails with an exception instead of a "
        "request: the agent cannot answer until the session is reset. Later "
        "releases re-inject the compacted call event before its surviving response.",
    ),
    (
        "confirmation-of-a-reused-call-id-raises",
        None,
        "P0",
        "confirming a call whose id a later call reused raises ValueError",
        "google/adk/flows/llm_flows/tools/_confirmation.py, "
        "_resolve_confirmation_targets: the calls in the session are indexed by id in a "
        "dict (history_fcs), so the newest call with an id hides every older one. When "
        "the model numbers call ids per turn (call_0, call_1, ... as some providers do), "
        "a tool confirmation asked in one invocation and given after a later invocation "
        "reused the id for another tool is checked against the newer call, and the "
        "processor raises ValueError('Function call name mismatch for ID ...') before "
        "the model is called: the user's confirmation ends the invocation with an "
        "exception, whether or not compaction ran. Found only through ADK's own Runner "
        "(the request processor runs there); the emulating driver does not model it.",
    ),
    (
        "credential-grant-runs-another-turns-call",
        None,
        "P2 P8",
        "granting a credential runs the call of a later turn that reused the id, not the "
        "call that asked for it",
        "google/adk/auth/auth_preprocessor.py, _AuthLlmRequestProcessor.run_async: after "
        "the user answers adk_request_credential, the processor looks for the call to run "
        "again by searching the whole session backwards for the newest call with the "
        "tool's id. When the model numbers call ids per turn (call_0, call_1, ... as some "
        "providers do), a credential asked for in one invocation and granted after a later "
        "invocation reused the id runs that later call's tool (its side effect again, with "
        "the granted credential) instead of the tool the user authorised, and stores its "
        "result as the answer of the resumed invocation. The prompt of the resumed "
        "invocation's next model call then pairs that result with the later turn's call: "
        "the user's request that opened the resumed invocation is not in the prompt, and "
        "the model never learns what the authorised tool returned. Found only through "
        "ADK's own Runner (the request processor runs there); the emulating driver does "
        "not model it. The later turn's tool runs a second time for its call, which P8 "
        "reports on the runner driver's tool runs.",
    ),
    (
        "partial-read-loses-the-call-a-response-answers",
        None,
        "P0 P2",
        "a partial read leaves out the call a late answer is for: the Runner raises, or "
        "drops the answer",
        "google/adk/runners.py, Runner.run_async: the session is loaded as "
        "RunConfig.get_session_config asks (num_recent_events, which RunConfig's docstring "
        "recommends beside EventsCompactionConfig), and a function response in the new "
        "message (a client's result of a long-running tool, a user's confirmation) is then "
        "resolved against the loaded events alone (_resolve_invocation_id_from_fr). When "
        "the call it answers is older than the events read, a root LlmAgent's run raises "
        "ValueError('Function call not found for function response ids: ...'): the "
        "user's approval ends the request with an exception; under another root the "
        "answer opens an invocation of its own and the model is sent it without its "
        "call. The call is in the stored session; it was not loaded. What a user sees: "
        "an approval that comes more than N events after the request it answers crashes "
        "the request (or is lost), on an app that reads its sessions partially.",
    ),
    (
        "database-reload-leaves-event-actions-as-dicts",
        None,
        "P0",
        "a session reloaded from DatabaseSessionService holds its summaries' "
        "actions as plain dicts, and the next request raises AttributeError",
        "google/adk/sessions/database_session_service.py, StorageEvent.to_event: the "
        "stored actions are rebuilt with EventActions().model_copy(update="
        "self.actions.model_dump()), which copies without validating, so every nested "
        "model comes back as a dict: a summary's actions.compaction (with its "
        "compacted_content) is a dict, not an EventCompaction. Every later reader "
        "fails: contents assembly (_process_compaction_events reads "
        "compaction.start_timestamp) and the next compaction "
        "(_run_compaction_for_sliding_window reads compaction.end_timestamp) raise "
        "AttributeError(\"'dict' object has no attribute ...\"). A user who keeps "
        "sessions in a database (every server that reloads the session per request) "
        "sees the agent work until the first compaction, and then every request of "
        "that session fail with an exception: the session cannot be continued. "
        "Validating the actions into EventActions on reload (as later releases do, "
        "EventActions.model_validate) makes the same script run without exception.",
    ),
)
