"""A pytest plugin that gives google-adk a fixed version of each faulty function.

``tests/test_export.py`` runs exported tests with ``-p upstream_fixes`` to
show each one passes where its fault is absent: CI has one release
(2.13.0), which has every recorded fault, so "absent" is this patched ADK,
not another release. Each fix replaces one function in ADK's modules (module
attributes, which ADK's own callers look up at call time) with a version
that follows the specification the harness checks, for the release the
harness pins (2.13.0; ``google/adk/apps/compaction.py`` and
``google/adk/flows/llm_flows/context/_contents.py``). :data:`FIXED` names
the known faults (``compaction_harness.known_faults``) they remove.

Fault ``database-reload-leaves-event-actions-as-dicts`` (1.18.0) is fixed
here too (:func:`_fix_reloaded_actions`) but not in :data:`FIXED`: 2.13.0
does not have it, and its fixture (a database script) has no export to show
the fix on.

Fault ``compaction-assumes-events-are-stored-in-time-order`` has no fix here:
ADK reads summaries and the prompt by timestamp throughout, and no single
function can be replaced to remove that.
"""

from __future__ import annotations

import functools

FIXED = frozenset(
    {
        "dead-call-retry-skipped-at-invocation-boundary",
        "reused-call-id-unprotects-newest-invocation-call",
        "retained-callless-response-blocks-token-split",
        "summary-leaks-branch-events-to-siblings",
        "token-compaction-summarises-the-running-request",
        "partial-answer-to-parallel-calls-makes-an-invalid-request",
        "one-answer-to-several-turns-makes-an-invalid-request",
        "summary-priced-by-a-client-record-resummarises-a-continued-invocation",
    }
)


def pytest_configure(config) -> None:
    _fix_prefix()
    _fix_token_split()
    _fix_branch_leak()
    _fix_running_request()
    _fix_contents()
    _fix_summary_price()
    _fix_reloaded_actions()


def _fix_prefix() -> None:
    """Faults 1 and 2: ``_longest_self_contained_prefix`` answers as the
    specification's reference does (the provably-dead retry at every
    boundary; a newest-invocation call is never dead)."""
    from compaction_harness import reference
    from compaction_harness.adk import prefix_helper_replaced

    prefix_helper_replaced(lambda w, s: reference.longest_self_contained_prefix(s, w)).__enter__()


def _fix_token_split() -> None:
    """Fault 3: ``_safe_token_compaction_split_index`` ignores retained
    responses whose call is not among the candidates (U5's split)."""
    from google.adk.apps import compaction

    from compaction_harness import reference
    from compaction_harness.adk import from_adk_events

    def split(*, candidate_events, event_retention_size):
        session = from_adk_events(candidate_events)
        positions = tuple(range(len(candidate_events)))
        return reference.safe_token_split(session, positions, event_retention_size)

    compaction._safe_token_compaction_split_index = split


def _fix_branch_leak() -> None:
    """Fault 4: compaction leaves out events of sub-agent branches (the
    summary has no branch, so every agent reads it)."""
    from google.adk.apps import compaction

    original = compaction._apply_rewinds
    compaction._apply_rewinds = lambda events: [e for e in original(events) if not e.branch]


def _fix_running_request() -> None:
    """Fault 5: token-threshold compaction before a model call (the flow's
    compaction request processor) never takes events of the newest
    invocation, the one running; at an invocation's end it still may."""
    from google.adk.apps import compaction
    from google.adk.flows.llm_flows.context import _compaction as processor

    original = compaction._events_to_compact_for_token_threshold
    run_config = processor._run_compaction_for_token_threshold_config

    def events_to_compact(*, events, event_retention_size):
        chosen = original(events=events, event_retention_size=event_retention_size)
        raw = [e for e in events if not (e.actions and e.actions.compaction)]
        newest = next((e.invocation_id for e in reversed(raw) if e.invocation_id), None)
        stored = {id(e) for e in events}
        kept = []
        for event in chosen:
            if id(event) in stored and event.invocation_id == newest:
                break
            kept.append(event)
        if not any(id(e) in stored for e in kept):
            return []
        return kept

    async def before_model_call(**kwargs):
        compaction._events_to_compact_for_token_threshold = events_to_compact
        try:
            return await run_config(**kwargs)
        finally:
            compaction._events_to_compact_for_token_threshold = original

    processor._run_compaction_for_token_threshold_config = before_model_call


def _fix_contents() -> None:
    """Faults 7 and 8: after the contents assembly, each content of function
    responses keeps only the answers to the calls of the model content right
    before it (once each), and that model content only the calls answered
    there: every request pairs calls and responses one to one."""
    from google.adk.flows.llm_flows.context import _contents
    from google.genai import types

    original = _contents._get_contents

    def paired(contents):
        out: list = []
        for content in contents:
            parts = list(content.parts or [])
            answers = [p for p in parts if p.function_response]
            before = out[-1] if out and out[-1].role == "model" else None
            if not answers or before is None:
                out.append(content)
                continue
            called = [p.function_call.id for p in before.parts or [] if p.function_call]
            kept, seen = [], set()
            for part in parts:
                if part.function_response:
                    answer_id = part.function_response.id
                    if answer_id not in called or answer_id in seen:
                        continue
                    seen.add(answer_id)
                kept.append(part)
            calls = [
                p for p in before.parts or [] if not p.function_call or p.function_call.id in seen
            ]
            out[-1] = types.Content(role=before.role, parts=calls)
            if not out[-1].parts:
                out.pop()
            if kept:
                out.append(types.Content(role=content.role, parts=kept))
        return out

    @functools.wraps(original)  # callers read its signature
    def get_contents(*args, **kwargs):
        return paired(original(*args, **kwargs))

    _contents._get_contents = get_contents


def _fix_summary_price() -> None:
    """Fault 10: the next summary is priced by ADK's own last summary, never
    by a client's compaction record."""
    from compaction_harness.adk import summary_price_from_adk_summaries

    summary_price_from_adk_summaries().__enter__()


def _fix_reloaded_actions() -> None:
    """Fault database-reload-leaves-event-actions-as-dicts: a session reloaded
    from ``DatabaseSessionService`` holds each event's actions validated into
    ``EventActions`` (``StorageEvent.to_event``), nested models included."""
    from compaction_harness.adk import reloaded_actions_validated

    reloaded_actions_validated().__enter__()
