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

from ...spec.model import ShownText as ShownText
from .adk_events import (
    _EMPTY_ACTIONS as _EMPTY_ACTIONS,
)
from .adk_events import (
    ADK_RELEASE as ADK_RELEASE,
)
from .adk_events import (
    NotApplicable as NotApplicable,
)
from .adk_events import (
    UnreadableEvents as UnreadableEvents,
)
from .adk_events import (
    _auth_config as _auth_config,
)
from .adk_events import (
    _declared_fields as _declared_fields,
)
from .adk_events import (
    _error_of as _error_of,
)
from .adk_events import (
    _step_of as _step_of,
)
from .adk_events import (
    _supported as _supported,
)
from .adk_events import (
    _what_is_wrong as _what_is_wrong,
)
from .adk_events import (
    from_adk_events as from_adk_events,
)
from .adk_events import (
    session_from_json as session_from_json,
)
from .adk_events import (
    to_adk_event as to_adk_event,
)
from .adk_events import (
    to_adk_events as to_adk_events,
)
from .adk_events import (
    unsupported as unsupported,
)
from .adk_helpers import (
    _accepts as _accepts,
)
from .adk_helpers import (
    _compaction as _compaction,
)
from .adk_helpers import (
    _compaction_request_processor as _compaction_request_processor,
)
from .adk_helpers import (
    _dispose as _dispose,
)
from .adk_helpers import (
    _found_in as _found_in,
)
from .adk_helpers import (
    _helper as _helper,
)
from .adk_helpers import (
    _no_disk_waits as _no_disk_waits,
)
from .adk_helpers import (
    _takes as _takes,
)
from .adk_helpers import (
    accepts_all_events as accepts_all_events,
)
from .adk_helpers import (
    compaction_config as compaction_config,
)
from .adk_helpers import (
    events_to_compact_for_token_threshold as events_to_compact_for_token_threshold,
)
from .adk_helpers import (
    helper_availability as helper_availability,
)
from .adk_helpers import (
    litellm_heals_missing_tool_results as litellm_heals_missing_tool_results,
)
from .adk_helpers import (
    longest_self_contained_prefix as longest_self_contained_prefix,
)
from .adk_helpers import (
    longest_self_contained_prefix_window_only as longest_self_contained_prefix_window_only,
)
from .adk_helpers import (
    prefix_helper_replaced as prefix_helper_replaced,
)
from .adk_helpers import (
    provably_dead_call_ids as provably_dead_call_ids,
)
from .adk_helpers import (
    prunes_orphaned_calls as prunes_orphaned_calls,
)
from .adk_helpers import (
    reloaded_actions_validated as reloaded_actions_validated,
)
from .adk_helpers import (
    safe_token_split as safe_token_split,
)
from .adk_helpers import (
    summariser_called as summariser_called,
)
from .adk_helpers import (
    summary_price_from_adk_summaries as summary_price_from_adk_summaries,
)
from .adk_helpers import (
    token_compaction_takes_isolation_scope as token_compaction_takes_isolation_scope,
)
from .adk_helpers import (
    token_threshold_summariser_input as token_threshold_summariser_input,
)
from .adk_pipeline import (
    Pipeline as Pipeline,
)
from .adk_prompt import (
    _EVENT_KEY as _EVENT_KEY,
)
from .adk_prompt import (
    _TEXT_TAGS as _TEXT_TAGS,
)
from .adk_prompt import (
    PromptContent as PromptContent,
)
from .adk_prompt import (
    PromptPart as PromptPart,
)
from .adk_prompt import (
    _model_set_errors as _model_set_errors,
)
from .adk_prompt import (
    _part_event as _part_event,
)
from .adk_prompt import (
    _parts_named as _parts_named,
)
from .adk_prompt import (
    _prompt_of as _prompt_of,
)
from .adk_prompt import (
    _tag_untagged as _tag_untagged,
)
from .adk_prompt import (
    model_set_error as model_set_error,
)
from .adk_prompt import (
    named_copy as named_copy,
)
from .adk_prompt import (
    prompt_chars as prompt_chars,
)
from .adk_prompt import (
    request_text_chars as request_text_chars,
)
from .adk_prompt import (
    serialized_chars as serialized_chars,
)
from .adk_prompt import (
    sized_summary_text as sized_summary_text,
)
from .adk_prompt import (
    summary_reply as summary_reply,
)
from .adk_prompt import (
    summary_text as summary_text,
)

__all__ = [
    "ADK_RELEASE",
    "NotApplicable",
    "UnreadableEvents",
    "events_to_compact_for_token_threshold",
    "from_adk_events",
    "helper_availability",
    "longest_self_contained_prefix",
    "provably_dead_call_ids",
    "safe_token_split",
    "to_adk_event",
    "to_adk_events",
    "unsupported",
]
