"""Hypothesis strategies that build ADK sessions (test support).

The public surface is this module; the builders live in private modules.
Dependency direction: ``tests -> strategies -> compaction_harness``.
"""

from ._sessions import ID_POOL, sessions, unit_cases, windows

__all__ = ["ID_POOL", "sessions", "unit_cases", "windows"]
