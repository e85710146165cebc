"""Pipeline scripts for ADK for TypeScript: the corpus of :func:`scripts`, cut to
what ADK-JS can represent, with one of the compactors the session model can
drive (see :mod:`compaction_harness.sdk.js.adk_js`)."""

from __future__ import annotations

import dataclasses

from hypothesis import strategies as st

from compaction_harness.sdk.js.case import JsCompactor, compactor_for
from compaction_harness.spec.scripts import Calls, Rewind, Script

from ._scripts import FORCED_STORAGE, scripts

#: Operations ADK-JS cannot represent (``adk_js`` says why): dropped, which
#: leaves a valid script (see :mod:`compaction_harness.spec.scripts`). A
#: ``ClientRecord`` is kept: ADK-JS reads it as its own compacted event
#: (``adk_js.client_record_event``).
UNREPRESENTED = (Rewind,)


def _represented(op: object) -> bool:
    """Whether the ADK-JS mapping runs ``op``: not one of :data:`UNREPRESENTED`,
    nor a mixed model turn (``timeline.MIXED_TURN`` says why)."""
    if isinstance(op, UNREPRESENTED):
        return False
    return not (isinstance(op, Calls) and op.kind == "mixed")


#: One ADK-JS script in JS_DATABASE_ONE_IN keeps its session in ADK-JS's
#: DatabaseSessionService on SQLite (ADK-JS has no SqliteSessionService),
#: reloaded before every invocation; the rest in memory. The rule, as for
#: google-adk's scripts (:data:`~strategies._scripts.DATABASE_ONE_IN`): no
#: storage kind takes more than half of the property's script time. A kind
#: that costs k times a script in memory takes at most half when drawn at
#: most one script in k + 1. Measured in a `make fuzz SDK=js` campaign's
#: summary (2026-12-05, 2 cores, the Node driver's database kept open between
#: scripts): see docs/campaigns.md.
JS_DATABASE_ONE_IN = 24


#: The compactors the property draws: the two that summarise and the one
#: that deletes by design.
JS_COMPACTORS = ("token_based", "anchored", "truncating")


@st.composite
def js_cases(draw, *, max_operations: int = 20) -> tuple[Script, JsCompactor]:
    """(script, compactor): a script as :func:`scripts` draws it, cut to what
    ADK-JS can represent, with a token-threshold configuration (a drawn one,
    or one drawn here when the script had a sliding window), and a compactor
    of :data:`JS_COMPACTORS` with the script's threshold and retention (the
    truncating compactor: a threshold of 1 to 8 events, 0 to 2 kept first)."""
    script = draw(scripts(max_operations=max_operations, database=False))
    config = script.config
    if FORCED_STORAGE is not None:  # make fuzz SDK=js STORAGE=memory|database
        storage = "memory" if FORCED_STORAGE == "memory" else "database"
    else:
        stored = draw(st.integers(1, JS_DATABASE_ONE_IN)) == JS_DATABASE_ONE_IN
        storage = "database" if stored else "memory"
    config = dataclasses.replace(
        config,
        storage=storage,
        compaction_interval=None,
        overlap_size=None,
        token_threshold=config.token_threshold or draw(st.integers(1, 400)),
        event_retention_size=(
            config.event_retention_size
            if config.event_retention_size is not None
            else draw(st.integers(0, 5))
        ),
    )
    ops = tuple(op for op in script.operations if _represented(op))
    script = Script(config, ops)
    options = compactor_for(script).options
    name = draw(st.sampled_from(JS_COMPACTORS))
    if name == "truncating":
        options = {
            "threshold": draw(st.integers(1, 8)),
            "preserveLeadingEvents": draw(st.integers(0, 2)),
        }
    return script, JsCompactor(name, options)
