"""Hypothesis strategies that build ADK sessions (test support).

The public surface is this module; the builders live in private modules.
Dependency direction: ``tests -> strategies -> compaction_harness``.
"""

from ._adk_js import js_cases
from ._episodes import (
    auth_request,
    function_calls,
    long_running_call,
    model_text,
    response_without_call,
    tool_confirmation,
)
from ._labels import EPISODE_KINDS, episode_kinds
from ._scripts import app_scripts, differential_scripts, operations, script_configs, scripts
from ._sessions import ID_POOL, metamorphic_cases, sessions, token_cases, unit_cases, windows

__all__ = [
    "EPISODE_KINDS",
    "ID_POOL",
    "app_scripts",
    "auth_request",
    "differential_scripts",
    "episode_kinds",
    "function_calls",
    "js_cases",
    "long_running_call",
    "metamorphic_cases",
    "model_text",
    "operations",
    "response_without_call",
    "script_configs",
    "scripts",
    "sessions",
    "token_cases",
    "tool_confirmation",
    "unit_cases",
    "windows",
]
