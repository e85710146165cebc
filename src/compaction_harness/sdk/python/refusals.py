"""Why the emulating driver (:mod:`.driver`) refuses a script that only ADK's
``Runner`` runs (:func:`refusal`); :mod:`.drivers` asks it too. Imports only
:mod:`compaction_harness.spec`.
"""

from __future__ import annotations

from ...spec.scripts import ScriptConfig

__all__ = ["EMULATES_NO_APP", "EMULATES_NO_PARTIAL_READ", "refusal"]

#: Why the emulating driver refuses a script on a user's app's shape.
EMULATES_NO_APP = (
    "the emulating driver runs the harness's own app only; a script on a user's app "
    "(config.app) runs through ADK's Runner (--driver runner)"
)


#: Why the emulating driver refuses a script that reads part of the session.
EMULATES_NO_PARTIAL_READ = (
    "the emulating driver keeps the whole session in view; a script that reads only the "
    "latest events (config.recent_events: GetSessionConfig.num_recent_events) runs through "
    "ADK's Runner (--driver runner), whose session services make the cut"
)


def refusal(config: ScriptConfig) -> str | None:
    """Why the emulating driver cannot run a script of ``config`` (an app's
    shape, a partial read), or None."""
    if config.app is not None:
        return EMULATES_NO_APP
    if config.recent_events is not None:
        return EMULATES_NO_PARTIAL_READ
    return None
