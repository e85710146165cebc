"""The ADK-JS adapter's public API: what the rest of the harness uses of ADK
for TypeScript (``@google/adk`` on npm, pinned in ``sdks/adk-js/package.json``),
re-exported from the modules that hold it, one role each:

* :mod:`.case`: the compactors, a case (script and compactor), what ADK-JS
  cannot represent (:class:`NotApplicable`);
* :mod:`.node`: the Node client (``sdks/adk-js/driver.mjs``, one long-lived
  process per Python process, so one per xdist worker);
* :mod:`.timeline`: the script interpreter (operations -> ADK-JS events);
* :mod:`.events`: the session model's steps as ADK-JS events and back;
* :mod:`.run`: a script run on ADK-JS and its record (:class:`JsRun`);
* :mod:`.checks` and :mod:`.trigger`: the invariants over a run, with the
  checkers of :mod:`compaction_harness.spec.pipeline_checks`;
* :mod:`.triage`: classification by fix, the known faults' view.

The driver modules import neither this module nor :mod:`.triage`.

What ADK-JS 2.0.0 does with events (read from its ``dist/esm/`` files):

* Compaction runs only before a model call: ``LlmAgent``'s constructor
  (``agents/llm_agent.js``) puts a ``ContextCompactorRequestProcessor``
  (``agents/processors/context_compactor_request_processor.js``) before the
  content processor; the first compactor whose ``shouldCompact`` is true
  compacts, and each event the compaction added to ``session.events`` is
  yielded and appended by the ``Runner``. There is no compaction at an
  invocation's end, and no sliding-window compactor.
* ``getActiveEvents`` (``context/compaction_utils.js``): the *latest stored*
  ``CompactedEvent`` and every raw event whose timestamp is greater than its
  ``endTime``; without one, all events. Both the compactors and the content
  processor (``agents/processors/content_request_processor.js``) read it.
  A compacted event is any event with ``isCompacted === true``
  (``isCompactedEvent``, ``events/compacted_event.js``), so a client's
  compaction record in that shape (:func:`client_record_event`) is read
  like ADK-JS's own.
* ``calculateRetainStartIndex`` (same file): keep the last
  ``eventRetentionSize`` raw events; move the boundary back while the first
  kept event has function responses and the event before it has function
  calls. So only a response stored *right after* a call keeps that call:
  a call whose answer comes later (long-running, answered by a client) is
  given to the summariser without its answer. With ``eventRetentionSize`` 0
  the first index is the length of the list, and the loop reads the event
  after the last one (``rawEvents[length]``: undefined).
* ``TokenBasedContextCompactor`` (``context/token_based_context_compactor.js``):
  triggers when the newest ``usageMetadata.promptTokenCount`` among the
  active events (else an estimate of the contents, four characters a token)
  exceeds ``tokenThreshold``; summarises the active compacted event (if any)
  and the raw events before the retain index, and pushes the new
  ``CompactedEvent`` (``LlmSummarizer``: range = first and last input's
  timestamps).
* ``AnchoredContextCompactor`` (``context/anchored_context_compactor.js``):
  the same split, triggered by the sum of ``getEventTokens`` over the active
  events; the summary becomes a scratchpad (``isScratchpad``) and the
  compacted raw events are removed from the invocation's ``session.events``
  (the stored session keeps them: ``BaseSessionService.appendEvent`` only
  appends).
* ``TruncatingContextCompactor``: when there are more than ``threshold +
  preserveLeadingEvents`` events, deletes the oldest events after the
  first ``preserveLeadingEvents``, with no pair protection; deletes by
  design, so it is judged on P0, P1/P2 only.
* ``TrajectoryThoughtPruningCompactor``: removes ``thought`` parts from all
  but the last ``eventRetentionSize`` events. The session model has no
  thought parts: not representable (:class:`NotApplicable`).
* ``AgentControlledContextCompactor``: compacts when the session state holds
  ``temp:consolidate_context``, up to the last ``consolidate_context`` call;
  no script operation makes that call: not representable yet.
* The content processor's ``getContents`` (``agents/processors/
  content_processor_utils.js``) converts a compacted event to a user content
  ``[Previous Context Summary]:\\n<summary>``, relays other agents' events as
  ``[name] said: ...``, drops confirmation/credential events, keeps for each
  call the *last* response event with its id and drops response events whose
  call is not in the events (``rearrangeEventsForAsyncFunctionResponsesInHistory``),
  raises when the last event's responses have no call event
  (``rearrangeEventsForLatestFunctionResponse``: "No function call event found
  for function responses ids"), and removes ``adk-`` ids from what it sends
  (``removeClientFunctionCallId``), so the driver reads ids from the harness's
  tags.

Errors: :class:`AdkJsUnavailable` (one line, naming ``make js-env``) when
Node or the package is missing; :class:`NotApplicable` when a script or
configuration cannot be represented on ADK-JS.
"""

from __future__ import annotations

from .case import (
    COMPACTORS,
    STAND_IN_THRESHOLD,
    JsCase,
    JsCompactor,
    NotApplicable,
    compactor_for,
    stand_in_for,
    stand_in_label,
)
from .checks import check_run, check_truncation, round_trip_violations
from .events import client_record_event
from .node import PACKAGE, AdkJsUnavailable, driver, node_path, package_version
from .run import (
    JsRun,
    as_adk_js_reads,
    foreign_records,
    observed,
    representable,
    run_request,
    run_script,
    script_seed,
)
from .timeline import timeline
from .triage import (
    KNOWN_FAULTS,
    check_case,
    check_js_round_trip,
    known_fault,
    new_violations,
    triage,
)

__all__ = [
    "COMPACTORS",
    "KNOWN_FAULTS",
    "PACKAGE",
    "STAND_IN_THRESHOLD",
    "AdkJsUnavailable",
    "JsCase",
    "JsCompactor",
    "JsRun",
    "NotApplicable",
    "as_adk_js_reads",
    "check_case",
    "check_js_round_trip",
    "check_run",
    "check_truncation",
    "client_record_event",
    "compactor_for",
    "driver",
    "foreign_records",
    "known_fault",
    "new_violations",
    "node_path",
    "observed",
    "package_version",
    "representable",
    "round_trip_violations",
    "run_request",
    "run_script",
    "script_seed",
    "stand_in_for",
    "stand_in_label",
    "timeline",
    "triage",
]
