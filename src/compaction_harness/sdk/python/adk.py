"""The ADK adapter: the session model as real ``google.adk`` events, and the
installed release's own functions.

It turns :class:`~compaction_harness.spec.model.Session` objects into real
``google.adk.events.Event`` objects (and real events back into the model),
and calls the real compaction helpers of whatever ``google-adk`` release is
installed. Helpers and their signatures change between releases, so each
entry point inspects what the installed release offers and raises
:class:`NotApplicable` with a reason where it has nothing to call:

=====================================  =======================================
helper (``google.adk.apps.compaction``) releases (seen installed)
=====================================  =======================================
``_longest_self_contained_prefix``     2.3.0 and later (not in 2.2.0);
                                       ``all_events=`` from 2.12.0 (before:
                                       the window only)
``_provably_dead_call_ids``            2.12.0 and later
``_safe_token_compaction_split_index`` 1.26.0 and later (token threshold)
``_events_to_compact_for_token_thresh  1.26.0 and later
old``
=====================================  =======================================

The adapter is four modules, and this one names every public (and shared
private) name of them, so ``adk.X`` is the one way in: :mod:`.adk_events`
(the model to ``Event`` objects and back), :mod:`.adk_helpers` (the
installed release's helpers, what it offers, counterfactual replacements),
:mod:`.adk_prompt` (an assembled prompt as the harness reads it, the
scripted summariser's texts) and :mod:`.adk_pipeline` (:class:`Pipeline`).
"""

from __future__ import annotations

from ...spec.model import ShownText
from .adk_events import (
    _EMPTY_ACTIONS,
    ADK_RELEASE,
    NotApplicable,
    UnreadableEvents,
    _auth_config,
    _declared_fields,
    _error_of,
    _step_of,
    _supported,
    _what_is_wrong,
    from_adk_events,
    session_from_json,
    to_adk_event,
    to_adk_events,
    unsupported,
)
from .adk_helpers import (
    SERVER_URL_VARIABLES,
    _accepts,
    _compaction,
    _compaction_request_processor,
    _dispose,
    _found_in,
    _helper,
    _no_disk_waits,
    _takes,
    accepts_all_events,
    compaction_config,
    database_service,
    empty_database,
    events_to_compact_for_token_threshold,
    helper_availability,
    litellm_heals_missing_tool_results,
    longest_self_contained_prefix,
    longest_self_contained_prefix_window_only,
    prefix_helper_replaced,
    provably_dead_call_ids,
    prunes_orphaned_calls,
    reloaded_actions_validated,
    safe_token_split,
    sqlite_service,
    summariser_called,
    summary_price_from_adk_summaries,
    token_compaction_takes_isolation_scope,
    token_threshold_summariser_input,
)
from .adk_pipeline import Pipeline
from .adk_prompt import (
    _EVENT_KEY,
    _TEXT_TAGS,
    EMPTY_SUMMARY_CHARS,
    PromptContent,
    PromptPart,
    _model_set_errors,
    _part_event,
    _parts_named,
    _prompt_of,
    _tag_untagged,
    model_set_error,
    named_copy,
    prompt_chars,
    request_chars,
    request_content,
    request_text_chars,
    seed_numbers,
    serialized_chars,
    sized_summary_text,
    summary_reply,
    summary_text,
    waits_to_save_prompt,
)

#: Every name the adapter's modules give the rest of the harness (those with
#: a leading underscore are the harness's own, not a public API).
__all__ = [
    "ADK_RELEASE",
    "EMPTY_SUMMARY_CHARS",
    "SERVER_URL_VARIABLES",
    "_EMPTY_ACTIONS",
    "_EVENT_KEY",
    "_TEXT_TAGS",
    "NotApplicable",
    "Pipeline",
    "PromptContent",
    "PromptPart",
    "ShownText",
    "UnreadableEvents",
    "_accepts",
    "_auth_config",
    "_compaction",
    "_compaction_request_processor",
    "_declared_fields",
    "_dispose",
    "_error_of",
    "_found_in",
    "_helper",
    "_model_set_errors",
    "_no_disk_waits",
    "_part_event",
    "_parts_named",
    "_prompt_of",
    "_step_of",
    "_supported",
    "_tag_untagged",
    "_takes",
    "_what_is_wrong",
    "accepts_all_events",
    "compaction_config",
    "database_service",
    "empty_database",
    "events_to_compact_for_token_threshold",
    "from_adk_events",
    "helper_availability",
    "litellm_heals_missing_tool_results",
    "longest_self_contained_prefix",
    "longest_self_contained_prefix_window_only",
    "model_set_error",
    "named_copy",
    "prefix_helper_replaced",
    "prompt_chars",
    "provably_dead_call_ids",
    "prunes_orphaned_calls",
    "reloaded_actions_validated",
    "request_chars",
    "request_content",
    "request_text_chars",
    "safe_token_split",
    "seed_numbers",
    "serialized_chars",
    "session_from_json",
    "sized_summary_text",
    "sqlite_service",
    "summariser_called",
    "summary_price_from_adk_summaries",
    "summary_reply",
    "summary_text",
    "to_adk_event",
    "to_adk_events",
    "token_compaction_takes_isolation_scope",
    "token_threshold_summariser_input",
    "unsupported",
    "waits_to_save_prompt",
]
