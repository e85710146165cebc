"""The known upstream faults of both SDKs, as data: one catalogue.

A :class:`Fault` is what the project knows of one upstream fault of
google-adk (Python, ``"google-adk"``) or of ADK for TypeScript
(``@google/adk``, ``"adk-js"``). What is written here by hand is only what
no program can know: the id, the SDK, the family, the invariants it breaks,
a title, what a user sees (where in the SDK, what goes wrong, what it costs)
and, for ADK-JS, the compactors it concerns; a fault that can have no fix
also says why (``no_fix_reason``). The rest is derived when this module is
imported, never typed:

* ``fix``: the fixes that name the fault among theirs: google-adk's list
  (:data:`compaction_harness.sdk.python.python_fixes.ENTRIES`, a data module:
  what its registry ``sdk.python.fixes.FIXES`` is made of), ADK-JS's index
  ``sdks/adk-js/fixes/index.json`` (a JSON object, fix name ->
  ``{"faults": [fault id, ...], ...}``; no file, no ADK-JS fix);
* ``releases``: google-adk: the releases on which the committed release
  matrix (``docs/release-matrix.json``, written by ``make matrix``) shows
  the fault (:func:`compaction_harness.faults.matrix_record.derived_releases`;
  a fault the record does not hold yet has none until ``make matrix`` runs
  again);
  ADK-JS: the ``@google/adk`` versions (``package_version``) of the
  fixtures in ``tests/repros/`` recorded as the fault.

``family`` is the id of the fault of the *other* SDK with the same mechanism
(the same wrong reading of the same data, not merely the same symptom), or
None. Several faults of one SDK may name one fault of the other (ADK-JS's
time filter shows as several faults where adk-python's time order is one);
the fault named then names one of them back.

``known_faults.KNOWN_FAULTS`` (google-adk) and ``adk_js.KNOWN_FAULTS``
(ADK-JS) are views of this catalogue in the shapes their readers use;
``python -m compaction_harness faults`` prints it.

Errors: ``ValueError`` at import for a catalogue that contradicts itself (an
id twice, a family that is no fault of the other SDK, a fault with both a
fix and a reason for having none) or an unreadable ADK-JS fix index.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from ..sdk.python.python_fixes import ENTRIES
from .matrix_record import FIXED, derived_releases

__all__ = [
    "FAULTS",
    "JS",
    "PYTHON",
    "SDKS",
    "Fault",
    "fault_for",
    "faults_of",
    "fix_text",
    "ranges",
    "release_order",
]

PYTHON = "google-adk"
JS = "adk-js"
SDKS = (PYTHON, JS)

ROOT = Path(__file__).resolve().parents[3]
#: The committed release matrix record (``make matrix`` writes it).
MATRIX = ROOT / "docs" / "release-matrix.json"
#: The fixtures whose ``known_fault`` and ``package_version`` give ADK-JS releases.
CORPUS = ROOT / "tests" / "repros"
#: ADK-JS's fix registry: fix name -> {"faults": [...], ...}.
JS_FIX_INDEX = ROOT / "sdks" / "adk-js" / "fixes" / "index.json"

#: ADK-JS's context compactors (``adk_js.COMPACTORS``; a test holds them equal).
EVERY_JS_COMPACTOR = (
    "token_based",
    "anchored",
    "truncating",
    "thought_pruning",
    "agent_controlled",
)


@dataclass(frozen=True)
class Fault:
    """One known upstream fault.

    Attributes:
        id: a stable slug, referenced by fixtures as ``known_fault``.
        sdk: ``"google-adk"`` or ``"adk-js"``.
        family: the id of the fault of the other SDK with the same
            mechanism, or None.
        invariants: the invariants it breaks (directly, or through a caller:
            the token-threshold range inherits the prefix helper's faults).
        title: one line.
        user_sees: where in the SDK (file, function), what goes wrong, and
            what it costs a user.
        compactors: the ADK-JS compactors it concerns (None for google-adk).
        fix: the name of the fix that removes it (several: joined by ``", "``),
            or None; derived from the fix registries.
        no_fix_reason: why no fix can exist, or None (written by hand; a fault
            with neither a fix nor a reason has a fix still to write).
        releases: the releases it shows on, oldest first; derived.
    """

    id: str
    sdk: str
    family: str | None
    invariants: tuple[str, ...]
    title: str
    user_sees: str
    compactors: tuple[str, ...] | None = None
    fix: str | None = None
    no_fix_reason: str | None = None
    releases: tuple[str, ...] = ()

    def record(self) -> dict[str, Any]:
        """Every field, as JSON data (tuples as lists)."""
        out = asdict(self)
        for key, value in out.items():
            if isinstance(value, tuple):
                out[key] = list(value)
        return out


def _fault(**fields: Any) -> Fault:
    """A hand-written entry: only what no program derives."""
    for derived in ("fix", "releases"):
        if derived in fields:
            raise ValueError(f"{fields['id']}: {derived} is derived, never written")
    return Fault(**fields)


# -- the entries ------------------------------------------------------------------------
_ENTRIES: tuple[Fault, ...] = (
    _fault(
        id="dead-call-retry-skipped-at-invocation-boundary",
        sdk=PYTHON,
        family=None,
        invariants=("U3", "U5", "P3", "P6"),
        title=("the provably-dead retry is skipped when the strict prefix ends an invocation"),
        user_sees=(
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
            "_events_to_compact_for_token_threshold, which trims its range with the same helper."
        ),
    ),
    _fault(
        id="reused-call-id-unprotects-newest-invocation-call",
        sdk=PYTHON,
        family=None,
        invariants=("U2", "U5", "P1"),
        title=("a dead older call makes a newest-invocation call with the same id invisible"),
        user_sees=(
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
            "(an older call with its id, a confirmation left pending, is dead)."
        ),
    ),
    _fault(
        id="retained-callless-response-blocks-token-split",
        sdk=PYTHON,
        family=None,
        invariants=("U5",),
        title=("a retained response whose call is not among the candidates forbids every split"),
        user_sees=(
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
            "call among the candidates is the one U5 asks for."
        ),
    ),
    _fault(
        id="summary-leaks-branch-events-to-siblings",
        sdk=PYTHON,
        family="js-branch",
        invariants=("P5",),
        title=("a summary without a branch carries sub-agent branch events to their siblings"),
        user_sees=(
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
            "first summary, and what one sub-agent was told or produced steers the others."
        ),
    ),
    _fault(
        id="token-compaction-summarises-the-running-request",
        sdk=PYTHON,
        family="js-opener-summarised",
        invariants=("P2",),
        title=(
            "token-threshold compaction before a model call summarises the running "
            "invocation's user message"
        ),
        user_sees=(
            "google/adk/flows/llm_flows/context/_compaction.py, CompactionRequestProcessor, "
            "runs _run_compaction_for_token_threshold_config before every model call, and "
            "google/adk/apps/compaction.py, _events_to_compact_for_token_threshold, takes every "
            "candidate except the last event_retention_size events, with nothing that keeps "
            "the running invocation's own user message. In an invocation that calls the model "
            "more than once (a tool loop), once the prompt count reaches token_threshold the "
            "user's request for this very turn is summarised away: the remaining model calls of "
            "the turn see it only through a summary, and the request may hold no user turn at "
            "all (the prompt then starts with the summary and model output)."
        ),
    ),
    _fault(
        id="compaction-summarises-a-waiting-invocations-request",
        sdk=PYTHON,
        family=None,
        invariants=("P2",),
        title=(
            "compaction at the end of a run summarises the user message of an invocation "
            "that waits for a long-running call or a confirmation"
        ),
        user_sees=(
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
            "builder restores the request instead, as it restores a compacted call."
        ),
    ),
    _fault(
        id="compaction-stops-while-a-call-waits",
        sdk=PYTHON,
        family=None,
        invariants=("P3",),
        title=(
            "sliding-window compaction stops at a long-running call that waits, and nothing "
            "after it is compacted until it is answered"
        ),
        user_sees=(
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
            "removes with the rest)."
        ),
    ),
    _fault(
        id="database-reload-reorders-events-by-timestamp",
        sdk=PYTHON,
        family="js-db-time-order",
        invariants=("P7", "P2", "P3", "P4", "P6"),
        title=(
            "DatabaseSessionService returns a session's events in timestamp order, not in "
            "the order the runner stored them"
        ),
        user_sees=(
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
            "in-memory session does not fail."
        ),
    ),
    _fault(
        id="partial-answer-to-parallel-calls-makes-an-invalid-request",
        sdk=PYTHON,
        family="js-unanswered-call",
        invariants=("P2",),
        title=("a model content with parallel calls is sent with responses to only some of them"),
        user_sees=(
            "google/adk/flows/llm_flows/context/_contents.py (the contents assembly, "
            "_get_contents and _rearrange_events_for_latest_function_response): when a client "
            "answers some of the parallel calls a model made (two long-running tools, one of "
            "which has finished; ADK lets a client answer each call as its result arrives), "
            "the next request holds the model's content with every call, followed by a user "
            "content with only the responses that arrived. Gemini refuses such a request "
            "('the number of function response parts is equal to the number of function "
            "call parts of the function call turn'), and so do the strict providers. The "
            "invocation the client's answer resumes fails at its first model call. It needs "
            "no compaction: the harness meets it because its scripts answer calls the way "
            "clients do."
        ),
    ),
    _fault(
        id="one-answer-to-several-turns-makes-an-invalid-request",
        sdk=PYTHON,
        family=None,
        invariants=("P2",),
        title=(
            "a function-response message answering calls of several model turns is sent "
            "whole after each of them"
        ),
        user_sees=(
            "google/adk/flows/llm_flows/tools/_rearranger.py (the contents assembly): a client "
            "may answer calls of several model turns of one invocation in one message (two "
            "long-running tools started in two turns, both finished; the Runner accepts one "
            "message for calls of one invocation). The contents assembly places that whole "
            "response content after each call content it answers, so each call content is "
            "followed by responses to calls it did not make, and the same responses appear "
            "twice. Gemini and the strict providers refuse such a request (function "
            "response parts must match the preceding turn's function call parts), and the "
            "resumed invocation fails at its next model call. It needs no compaction."
        ),
    ),
    _fault(
        id="compaction-assumes-events-are-stored-in-time-order",
        sdk=PYTHON,
        family="js-same-tick-hidden",
        invariants=("P2", "P3", "P4", "P6"),
        title=(
            "compaction reads summaries and the prompt by timestamp, so events stored out "
            "of time order are lost, or summarised twice"
        ),
        user_sees=(
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
            "(P6: duplicated, wasted work)."
        ),
    ),
    _fault(
        id="summary-priced-by-a-client-record-resummarises-a-continued-invocation",
        sdk=PYTHON,
        family=None,
        invariants=("P6",),
        title=(
            "a continued invocation is summarised again from its start when the latest "
            "compaction record is a client's"
        ),
        user_sees=(
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
            "nothing again."
        ),
    ),
    _fault(
        id="orphaned-call-stalls-compaction-for-good",
        sdk=PYTHON,
        family=None,
        invariants=("U3", "U5", "P3", "P6"),
        title=("an orphaned call at the start of the window stops compaction for good"),
        user_sees=(
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
            "(dead-call-retry-skipped-at-invocation-boundary)."
        ),
    ),
    _fault(
        id="sliding-window-splits-call-pairs",
        sdk=PYTHON,
        family="js-truncate-splits-call-pairs",
        invariants=("P1",),
        title=("sliding-window ranges ignore function calls and their responses"),
        user_sees=(
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
            "refuses (see summarised-call-makes-the-prompt-builder-raise)."
        ),
    ),
    _fault(
        id="summarised-call-makes-the-prompt-builder-raise",
        sdk=PYTHON,
        family=None,
        invariants=("P0",),
        title=("a response whose call was summarised makes contents assembly raise"),
        user_sees=(
            "google/adk/flows/llm_flows/contents.py, "
            "_rearrange_events_for_latest_function_response: when the latest event is a "
            "function response, it looks back for the event holding the call and raises "
            "ValueError('No function call event found for function responses ids: ...') "
            "when there is none. A compaction that summarised the call (a range that "
            "ends between a call and its late response) leaves exactly that shape, so "
            "every model call of the invocation fails with an exception instead of a "
            "request: the agent cannot answer until the session is reset. Later "
            "releases re-inject the compacted call event before its surviving response."
        ),
    ),
    _fault(
        id="confirmation-of-a-reused-call-id-raises",
        sdk=PYTHON,
        family=None,
        invariants=("P0",),
        title=("confirming a call whose id a later call reused raises ValueError"),
        user_sees=(
            "google/adk/flows/llm_flows/tools/_confirmation.py, "
            "_resolve_confirmation_targets: the calls in the session are indexed by id in a "
            "dict (history_fcs), so the newest call with an id hides every older one. When "
            "the model numbers call ids per turn (call_0, call_1, ... as some providers do), "
            "a tool confirmation asked in one invocation and given after a later invocation "
            "reused the id for another tool is checked against the newer call, and the "
            "processor raises ValueError('Function call name mismatch for ID ...') before "
            "the model is called: the user's confirmation ends the invocation with an "
            "exception, whether or not compaction ran. Found only through ADK's own Runner "
            "(the request processor runs there); the emulating driver does not model it."
        ),
    ),
    _fault(
        id="database-reload-leaves-event-actions-as-dicts",
        sdk=PYTHON,
        family=None,
        invariants=("P0",),
        title=(
            "a session reloaded from DatabaseSessionService holds its summaries' "
            "actions as plain dicts, and the next request raises AttributeError"
        ),
        user_sees=(
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
            "EventActions.model_validate) makes the same script run without exception."
        ),
    ),
    _fault(
        id="js-db-tie-order",
        sdk=JS,
        family="database-reload-reorders-events-by-timestamp",
        invariants=("P7", "P0"),
        compactors=EVERY_JS_COMPACTOR,
        title="DatabaseSessionService returns the events "
        "stored in one millisecond in reverse order",
        user_sees=(
            "not compaction: DatabaseSessionService.getSession "
            "(sessions/database_session_service.js) stores timestamps as whole-millisecond "
            "Dates and reads events orderBy timestamp DESC with no tie-breaker, then "
            "reverses them: after a reload, events stored in the same millisecond come back "
            "in reverse order (a reply before the message it answers, an answer before its "
            "call), so the reloaded prompt differs from the in-memory one (P7), or getContents "
            "raises 'No function call event found' or 'Last response event should only "
            "contain ...' (P0). On a coarse clock a whole invocation shares one millisecond and "
            "comes back reversed."
        ),
    ),
    _fault(
        id="js-db-time-order",
        sdk=JS,
        family="database-reload-reorders-events-by-timestamp",
        invariants=("P7", "P0"),
        compactors=EVERY_JS_COMPACTOR,
        title="DatabaseSessionService returns a session's events in "
        "timestamp order, not in the order they were stored",
        user_sees=(
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
            "timestamp)."
        ),
    ),
    _fault(
        id="js-retention-zero",
        sdk=JS,
        family=None,
        invariants=("P0",),
        compactors=("token_based", "anchored"),
        title="eventRetentionSize 0 makes every model call raise TypeError",
        user_sees=(
            "calculateRetainStartIndex (context/compaction_utils.js) starts at "
            "rawEvents.length - eventRetentionSize; with eventRetentionSize 0 that is the "
            "length of the list, and the loop reads rawEvents[length] (undefined); "
            "shouldCompact calls it before it compares tokens, so every model call raises "
            "TypeError before the model is called, whatever the threshold."
        ),
    ),
    # No family: adk-python's sliding window split pairs by having no pair
    # protection at all (sliding-window-splits-call-pairs, 1.16.0 to 1.27.5);
    # ADK-JS protects only an answer stored right after its call.
    _fault(
        id="js-late-answer",
        sdk=JS,
        family=None,
        invariants=("P1", "P0", "P2", "P4"),
        compactors=("token_based", "anchored", "truncating"),
        title="a call answered later than the next event is "
        "summarised, or deleted, without its answer",
        user_sees=(
            "calculateRetainStartIndex keeps a call with its answer only when the answer is "
            "the event right after the call; the truncating compactor keeps no pair at all. "
            "A call answered later (long-running, answered by a client, an interim result "
            "then text) is summarised or deleted without its answer: when the answer is the "
            "newest event, getContents raises 'No function call event found for function "
            "responses ids' (rearrangeEventsForLatestFunctionResponse) and the run fails; "
            "otherwise the answer is silently dropped from every later prompt "
            "(rearrangeEventsForAsyncFunctionResponsesInHistory keeps only responses whose "
            "call is present)."
        ),
    ),
    # The time filter's family: getActiveEvents (context/compaction_utils.js;
    # AnchoredContextCompactor.getActiveEvents) keeps the raw events whose
    # timestamp is greater than the latest summary's endTime, not the events
    # the summary was not given, and LlmSummarizer's endTime is its last
    # input's timestamp, not the greatest.
    _fault(
        id="js-same-tick-hidden",
        sdk=JS,
        family="compaction-assumes-events-are-stored-in-time-order",
        invariants=("P4", "P2", "P3", "P0"),
        compactors=("token_based", "anchored"),
        title="a retained event stamped no later than the latest "
        "summary's endTime vanishes from every prompt",
        user_sees=(
            "getActiveEvents hides every raw event stamped no later than the latest "
            "summary's endTime: an event stored in the same clock tick as (or stamped before) "
            "the last summarised event, but retained, vanishes from every later prompt "
            "without being summarised (P4; P2 when it is the running turn's message or a "
            "call's answer; P3, since no later compaction can reach it, and a hidden reply's "
            "prompt count is never read by the trigger, which then declines though the prompt "
            "is over the threshold), and the anchored "
            "compactor's rebuild of session.events then drops it for good; an answer whose "
            "call it hides is dropped with it, or, as the newest event, makes getContents "
            "raise 'No function call event found' (P0)."
        ),
    ),
    _fault(
        id="js-answer-hidden",
        sdk=JS,
        family="compaction-assumes-events-are-stored-in-time-order",
        invariants=("P1",),
        compactors=("token_based", "anchored"),
        title="a call is summarised without the answer the time filter hides",
        user_sees=(
            "calculateRetainStartIndex keeps a call only with the next *active* event: when "
            "getActiveEvents hides the answer stored right after a call (a lagging host "
            "stamped it no later than the latest summary's endTime), the call is summarised "
            "without its answer (P1), and the model later sees a summary of a call whose "
            "result it never gets."
        ),
    ),
    _fault(
        id="js-inverted-range",
        sdk=JS,
        family="compaction-assumes-events-are-stored-in-time-order",
        invariants=("P1",),
        compactors=("token_based", "anchored"),
        title="a summary whose answer is stamped before its "
        "call brings the call back without its answer",
        user_sees=(
            "LlmSummarizer ends a summary's range at its last input's timestamp: with an "
            "answer stamped before its call (a lagging host) the range is inverted, so "
            "getActiveEvents brings the summarised call back but keeps its answer hidden, "
            "and the next summary takes the call alone (P1): the call is summarised twice, "
            "the second time without its result."
        ),
    ),
    _fault(
        id="js-reactivated",
        sdk=JS,
        family="compaction-assumes-events-are-stored-in-time-order",
        invariants=("P6",),
        compactors=("token_based", "anchored"),
        title="an event summarised out of time order is active again and summarised twice",
        user_sees=(
            "LlmSummarizer ends a summary's range at its last input's timestamp, not the "
            "greatest: an event summarised out of time order (stamped after the last input) "
            "is active again after the summary, and the next summary takes it once more "
            "(P6: the summariser is paid to summarise it twice, and the model reads it twice). "
            "getActiveEvents reads only the latest compacted event's endTime, so a client's "
            "compaction record ending before events an earlier summary took brings them back "
            "the same way."
        ),
    ),
    # The content processor's getActiveEvents runs whatever the compactor, so
    # with a client's compaction record in the session every compactor meets
    # it (found with ClientRecord drawn: truncating, a record, a lagging host).
    _fault(
        id="js-sub-agent-hidden-reply",
        sdk=JS,
        family="compaction-assumes-events-are-stored-in-time-order",
        invariants=("P0",),
        compactors=EVERY_JS_COMPACTOR,
        title="a hidden root reply leaves a client's function response "
        "newest, and a sub-agent's contents raise",
        user_sees=(
            "when getActiveEvents hides what was stored after a client's function response "
            "(the root agent's reply, stamped no later than the endTime of the latest "
            "compacted event, a summary or a client's compaction record, by a lagging "
            "host), that response becomes the newest active event; a sub-agent sees the "
            "root's call only as context text, so getContents "
            "(rearrangeEventsForLatestFunctionResponse) raises 'No function call event found "
            "for function responses ids' and the run fails (P0)."
        ),
    ),
    # No family: adk-python reads the same session past the answer (its
    # fixture P3-2.13.0-cb0dec0b808de2d3); its faults with a client's record
    # (summary-priced-by-a-client-record-resummarises-a-continued-invocation,
    # compaction-stops-while-a-call-waits, which took in
    # resumed-invocation-window-stalls-on-a-summarised-pending-call) are other
    # mechanisms.
    _fault(
        id="js-record-pending-call",
        sdk=JS,
        family=None,
        invariants=("P0",),
        compactors=EVERY_JS_COMPACTOR,
        title="a client's compaction record hides a pending long-running "
        "call, and its answer makes the run raise",
        user_sees=(
            "getActiveEvents (context/compaction_utils.js) reads the latest compacted event, "
            "whoever wrote it (isCompactedEvent is isCompacted === true), as standing for "
            "every raw event stamped up to its endTime: a compaction record that a client or "
            "an older session wrote after a long-running call whose answer has not arrived "
            "hides the call, and the run that delivers the answer fails before the model is "
            "called: getContents (rearrangeEventsForLatestFunctionResponse, agents/processors/"
            "content_processor_utils.js) raises 'No function call event found for function "
            "responses ids' (P0). adk-python takes the same session (the Python fixture "
            "P3-2.13.0-cb0dec0b808de2d3 runs past the answer); no ADK-JS compaction is "
            "needed, so every compactor meets it."
        ),
    ),
    _fault(
        id="js-opener-summarised",
        sdk=JS,
        family="token-compaction-summarises-the-running-request",
        invariants=("P2",),
        compactors=("token_based", "anchored"),
        title="the running invocation's user message is summarised before the model answers it",
        user_sees=(
            "calculateRetainStartIndex counts events, not invocations: with a small "
            "eventRetentionSize the user message that opened the running invocation is "
            "summarised before the model answers it, and the model sees only the summary."
        ),
    ),
    # No family: adk-python meets the same message but sends it whole after
    # each call (one-answer-to-several-turns-makes-an-invalid-request), where
    # ADK-JS refuses it while it is the newest event: the same input, another
    # mechanism (once another event follows it, ADK-JS sends it whole too).
    _fault(
        id="js-multi-turn-answer",
        sdk=JS,
        family=None,
        invariants=("P0", "P2"),
        compactors=EVERY_JS_COMPACTOR,
        title="a message answering calls of several model turns makes getContents raise",
        user_sees=(
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
            "(one-answer-to-several-turns-makes-an-invalid-request)."
        ),
    ),
    _fault(
        id="js-unanswered-call",
        sdk=JS,
        family="partial-answer-to-parallel-calls-makes-an-invalid-request",
        invariants=("P2",),
        compactors=EVERY_JS_COMPACTOR,
        title="a call that no event answers, or answers only in part, is sent to the model",
        user_sees=(
            "getContents keeps a function call that no event answers (its tool's process "
            "died) or answers only in part (a client answered some of parallel calls), where "
            "ADK Python prunes such calls (drop_orphaned_function_calls): a strict provider "
            "(Anthropic, OpenAI) rejects the request. Not a compaction fault: the contents "
            "of the same events without compaction break P2 the same way."
        ),
    ),
    _fault(
        id="js-truncate-opener",
        sdk=JS,
        family="token-compaction-summarises-the-running-request",
        invariants=("P2",),
        compactors=("truncating",),
        title="the truncating compactor deletes the running invocation's user message",
        user_sees=(
            "TruncatingContextCompactor.compact counts events, not invocations: with a small "
            "threshold it deletes the user message that opened the running invocation, and "
            "the model is asked to answer a request it never sees. Deletion is the "
            "compactor's documented design, but no configuration value keeps the running "
            "turn's message (preserveLeadingEvents keeps only the session's first events)."
        ),
        no_fix_reason=(
            "the documented contract and P2 cannot both hold: TruncatingContextCompactorOptions "
            "documents threshold as 'the maximum number of events to retain in the session "
            "history', and a running invocation longer than threshold (minus the preserved "
            "leading events) leaves no way to keep its user message within that maximum. A "
            "patch that keeps the running invocation (tried: compact deletes only events "
            "before its first one) retains more than the documented maximum, which the "
            "harness's truncation check (adk_js.check_truncation) reports as a P4; the "
            "fault is the option's design, for ADK-JS to decide (cap, or a documented floor)"
        ),
    ),
    _fault(
        id="js-truncate-splits-call-pairs",
        sdk=JS,
        family="sliding-window-splits-call-pairs",
        invariants=("P2",),
        compactors=("truncating",),
        title="the truncating compactor deletes the answer of a call it keeps",
        user_sees=(
            "TruncatingContextCompactor.compact deletes events by count from the middle of the "
            "session (after the preserved leading events, before the last threshold events), "
            "whatever they hold: a kept call loses its result (or a kept result its call), and "
            "a strict provider (Anthropic, OpenAI) rejects the request with the unanswered "
            "call. With preserveLeadingEvents 2 and threshold 1, a session of the user's "
            "message, a tool call, its result and a reply keeps the call and deletes the "
            "result at the next model call."
        ),
        no_fix_reason=(
            "the documented options and P2 cannot both hold: preserveLeadingEvents keeps 'the "
            "first X events' and threshold is 'the maximum number of events to retain', so when "
            "a preserved call's result falls in the deleted middle, keeping it retains more "
            "than the maximum and deleting the call breaks the preserved prefix; the harness "
            "holds the compactor to both (adk_js.check_truncation reports any other choice as "
            "a P4). Like js-truncate-opener, a design decision for ADK-JS (delete pairs "
            "together, or document that truncation can break a strict provider's request)"
        ),
    ),
    _fault(
        id="js-reused-id-orphan-summarised",
        sdk=JS,
        family=None,
        invariants=("P1",),
        compactors=("token_based", "anchored"),
        title="a call that died unanswered is summarised while a response with its "
        "reused id is still in the session",
        user_sees=(
            "calculateRetainStartIndex (context/compaction_utils.js) keeps a call with its "
            "answer only when the answer is the next event, and nothing else: a call of an "
            "older invocation that no event answers (its tool's process died) is summarised. "
            "With call ids numbered per turn (providers behind other gateways reuse call_0 "
            "in every turn), an earlier turn's response carries the same id, so the call "
            "is not provably dead (the definitions: no resolved response with its id "
            "anywhere in the session) and the summary splits a live pair (P1): ADK's "
            "pairing by id can later take that response, or a late one, for this call. "
            "adk-python keeps such a call out of every summary "
            "(_longest_self_contained_prefix)."
        ),
    ),
    _fault(
        id="js-anchored-duplicates",
        sdk=JS,
        family=None,
        invariants=("P2",),
        compactors=("anchored",),
        title="the anchored compactor's rebuild keeps summarised "
        "events and doubles the retained ones",
        user_sees=(
            "AnchoredContextCompactor.compact rebuilds session.events as the events stored "
            "before the old scratchpad, the new scratchpad and the retained events. Each run "
            "fetches the stored session, where the scratchpad stands after the raw events it "
            "replaced (BaseSessionService.appendEvent appends), so after a new invocation the "
            "summarised events stay and the retained ones appear twice: the model is sent a "
            "call, or its answer, twice."
        ),
    ),
    _fault(
        id="js-anchored-summed-counts",
        sdk=JS,
        family=None,
        invariants=("P6",),
        compactors=("anchored",),
        title="the anchored trigger sums whole-prompt token counts and fires on every model call",
        user_sees=(
            "AnchoredContextCompactor.shouldCompact (context/anchored_context_compactor.js) "
            "compares tokenThreshold with the sum of getEventTokens (events/event.js) over the "
            "active events, and getEventTokens of a model response is its "
            "usageMetadata.promptTokenCount: the size of the whole prompt that response "
            "answered. Every retained response (and the scratchpad's) counts the history "
            "again, and a response retained past a scratchpad still counts the prompt from "
            "before it (a count the summary made stale), so the trigger fires on every model "
            "call though the prompt stays well below the threshold: the summariser is called "
            "on every turn (an extra model call and its latency per turn)."
        ),
    ),
    _fault(
        id="js-scratchpad-behind-record",
        sdk=JS,
        family=None,
        invariants=("P4", "P2"),
        compactors=("anchored",),
        title="a compacted event the anchored compactor retains "
        "after its scratchpad hides the scratchpad",
        user_sees=(
            "AnchoredContextCompactor (context/anchored_context_compactor.js) reads only "
            "scratchpad events as summaries (its getActiveEvents: the latest isScratchpad "
            "event) and takes any other compacted event (a client's record, one an older "
            "session or a TokenBasedContextCompactor wrote) for a raw event: it summarises or "
            "retains it, and rebuilds session.events as the new scratchpad followed by the "
            "retained events. A retained record then stands after the scratchpad, and the "
            "content processor's getActiveEvents (context/compaction_utils.js) reads the latest "
            "compacted event in list order: the record, not the scratchpad. What the scratchpad "
            "summarised and the record does not stand for (events stamped after its endTime: "
            "a lagging host) is gone from the prompt (P4), the running turn's message too (P2)."
        ),
    ),
    _fault(
        id="js-branch",
        sdk=JS,
        family="summary-leaks-branch-events-to-siblings",
        invariants=("P5",),
        compactors=("token_based", "anchored"),
        title="a summary without a branch carries sub-agent branch events to their siblings",
        user_sees=(
            "the compactors read session.events without the branch filter of getContents, "
            "and LlmSummarizer's compacted event has no branch: a sub-agent's compaction "
            "summarises its siblings' branch events into a summary every agent reads."
        ),
    ),
)


# -- what is derived --------------------------------------------------------------------
def _version(release: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", release))


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None


def _python_releases(path: Path = MATRIX) -> dict[str, tuple[str, ...]]:
    """Fault id -> the releases the committed matrix record shows it on."""
    document = _read_json(path)
    if not isinstance(document, Mapping) or "rows" not in document:
        return {}
    return {fault: tuple(found) for fault, found in derived_releases(document).items()}


def _js_releases(corpus: Path = CORPUS) -> dict[str, tuple[str, ...]]:
    """Fault id -> the ``@google/adk`` versions of its ADK-JS fixtures (marked
    with it as ``known_fault`` or in ``also_shows``)."""
    found: dict[str, set[str]] = {}
    for path in sorted(corpus.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # replay reports an unreadable fixture; it shows no release
        if not isinstance(data, dict) or data.get("sdk") != JS:
            continue
        version = data.get("package_version")
        shown = [data.get("known_fault"), *(data.get("also_shows") or ())]
        for fault in shown:
            if isinstance(fault, str) and isinstance(version, str):
                found.setdefault(fault, set()).add(version)
    return {fault: tuple(sorted(v, key=_version)) for fault, v in found.items()}


def _python_fixes() -> dict[str, list[str]]:
    """Fault id -> the google-adk fixes that name it, from their list (data)."""
    out: dict[str, list[str]] = {}
    for entry in ENTRIES:
        for fault in entry["faults"]:
            out.setdefault(fault, []).append(entry["name"])
    return out


def _js_fixes(path: Path = JS_FIX_INDEX) -> dict[str, list[str]]:
    """Fault id -> the ADK-JS fixes that name it, from the index (none when absent)."""
    index = _read_json(path)
    if index is None:
        return {}
    if not isinstance(index, dict):
        raise ValueError(f"{path.name}: not a JSON object of fix name -> {{faults: [...]}}")
    out: dict[str, list[str]] = {}
    for name, entry in index.items():
        faults = entry.get("faults") if isinstance(entry, dict) else None
        if not isinstance(faults, list) or not all(isinstance(f, str) for f in faults):
            raise ValueError(f"{path.name}: fix {name!r} has no list of faults")
        for fault in faults:
            out.setdefault(fault, []).append(name)
    return out


def _built(entries: Sequence[Fault]) -> tuple[Fault, ...]:
    """``entries`` with their fixes and releases, checked."""
    ids = [f.id for f in entries]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise ValueError(f"fault {twice[0]!r} is catalogued twice")
    sdk_of = {f.id: f.sdk for f in entries}
    fixes = {PYTHON: _python_fixes(), JS: _js_fixes()}
    releases = {PYTHON: _python_releases(), JS: _js_releases()}
    out = []
    for fault in entries:
        if fault.sdk not in SDKS:
            raise ValueError(f"{fault.id}: unknown SDK {fault.sdk!r} (known: {', '.join(SDKS)})")
        if fault.family is not None and sdk_of.get(fault.family, fault.sdk) == fault.sdk:
            raise ValueError(f"{fault.id}: family {fault.family!r} is no fault of the other SDK")
        if (fault.compactors is not None) != (fault.sdk == JS):
            raise ValueError(f"{fault.id}: compactors are given for ADK-JS faults only")
        names = fixes[fault.sdk].get(fault.id, [])
        if names and fault.no_fix_reason:
            raise ValueError(f"{fault.id}: has a fix ({names[0]}) and a reason for having none")
        out.append(
            replace(
                fault,
                fix=", ".join(names) or None,
                releases=releases[fault.sdk].get(fault.id, ()),
            )
        )
    return tuple(out)


#: Every known fault of both SDKs: google-adk's first, then ADK-JS's.
FAULTS: tuple[Fault, ...] = _built(_ENTRIES)


def fault_for(fault_id: str) -> Fault | None:
    """The catalogued fault with this id (of either SDK), or None."""
    return next((f for f in FAULTS if f.id == fault_id), None)


def faults_of(sdk: str) -> tuple[Fault, ...]:
    """The faults of ``sdk`` (``"google-adk"`` or ``"adk-js"``); ``ValueError``
    for another name."""
    if sdk not in SDKS:
        raise ValueError(f"unknown SDK {sdk!r} (known: {', '.join(SDKS)})")
    return tuple(f for f in FAULTS if f.sdk == sdk)


def release_order(sdk: str) -> list[str]:
    """The releases a fault of ``sdk`` can show on, oldest first: google-adk's
    are the committed matrix record's (none without it; a column with every
    fix applied is no release); ADK-JS's the versions its faults show on."""
    if sdk == PYTHON:
        document = _read_json(MATRIX)
        releases = document.get("releases") if isinstance(document, Mapping) else None
        return [r for r in releases if not r.endswith(FIXED)] if isinstance(releases, list) else []
    return sorted({r for f in faults_of(sdk) for r in f.releases}, key=_version)


def fix_text(fault: Fault) -> str:
    """What a reader is told of ``fault``'s fix: its name, ``"no fix: <why>"``
    when none can exist, or ``"no fix yet"`` when one is still to be written."""
    if fault.fix:
        return fault.fix
    return f"no fix: {fault.no_fix_reason}" if fault.no_fix_reason else "no fix yet"


#: Between the first and the last release of a run (an en dash).
DASH = "\u2013"


def ranges(releases: Iterable[str], order: Sequence[str]) -> str:
    """``releases`` as runs of consecutive entries of ``order`` (oldest
    first): the first and last of a run of two or more joined by an en dash
    (``1.26.0`` dash ``2.13.0``), a run of one as it is, runs joined by
    ``", "``; releases ``order`` does not hold follow as given; ``""`` for
    none."""
    given = list(releases)
    position = {r: k for k, r in enumerate(order)}
    known = sorted((r for r in set(given) if r in position), key=position.__getitem__)
    runs: list[list[str]] = []
    for release in known:
        if runs and position[runs[-1][-1]] + 1 == position[release]:
            runs[-1].append(release)
        else:
            runs.append([release])
    words = [f"{run[0]}{DASH}{run[-1]}" if len(run) > 1 else run[0] for run in runs]
    words += [r for r in given if r not in position]
    return ", ".join(words)
