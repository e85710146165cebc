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


#: About one ADK-JS script in JS_DATABASE_ONE_IN keeps its session in
#: ADK-JS's DatabaseSessionService on SQLite (ADK-JS has no
#: SqliteSessionService), reloaded before every invocation; the rest in
#: memory. The rule: the database kind takes at most a fifth of the
#: property's script time. A database script checks what a memory script
#: checks (its in-memory run is judged in full) and the round trip (P7)
#: besides, and two of ADK-JS's known faults need it (js-db-tie-order,
#: js-db-time-order); a fifth is twice their share of the faults, room for
#: new ones, and `make bench-faults SDK=js` shows the two still found in 5
#: of 5 trials well under a minute (docs/fault-times/js.json). A kind that
#: costs k times a memory script takes a fifth when drawn one script in
#: about 4k: a database script cost about 47 times a memory one (one worker,
#: 1,500 seeded examples, 2026-12-05). Drawn as one middle value of a range,
#: since Hypothesis draws a range's bounds far more often than 1/N (measured:
#: integers(1, 192) gave 192 one draw in 22).
JS_DATABASE_ONE_IN = 192


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
        stored = draw(st.sampled_from(range(JS_DATABASE_ONE_IN))) == JS_DATABASE_ONE_IN // 2
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
