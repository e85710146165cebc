"""Pipeline scripts for ADK for TypeScript: the corpus of :func:`scripts`, cut to
what ADK-JS can represent, with one of the compactors the session model can
drive (see :mod:`compaction_harness.sdk.js.adk_js`)."""

from __future__ import annotations

import dataclasses

from hypothesis import strategies as st

from compaction_harness.sdk.js.case import JsCompactor, compactor_for
from compaction_harness.spec.scripts import Ask, Calls, Reply, Rewind, Script

from ._scripts import scripts

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


#: The compactors the property draws: the two that summarise and the one
#: that deletes by design.
JS_COMPACTORS = ("token_based", "anchored", "truncating")
#: After how many operations the user answers a confirmation or credential
#: request (None: never). :func:`scripts` draws ``Reply`` on its own, which
#: rarely lands after an ``Ask`` (measured: 0 effective replies in 300
#: drawn JS scripts), so the user's answer and the tool's re-run would go
#: untested; as ``Answer`` follows long-running calls, a ``Reply`` follows
#: most requests.
_REPLY_LATER = st.sampled_from((0, 1, 3, None))


def _replies_after_asks(draw, ops: tuple) -> tuple:
    """``ops`` with a ``Reply`` (to the oldest pending request, pick 0) put
    a drawn number of operations (:data:`_REPLY_LATER`) after some ``Ask``s;
    one still waiting at the end goes last."""
    placed: list = []
    waiting: list[int] = []
    for op in ops:
        placed.append(op)
        waiting = [delay - 1 for delay in waiting]
        placed += [Reply() for delay in waiting if delay < 0]
        waiting = [delay for delay in waiting if delay >= 0]
        if isinstance(op, Ask):
            later = draw(_REPLY_LATER)
            if later == 0:
                placed.append(Reply())
            elif later is not None:
                waiting.append(later - 1)
    return (*placed, *(Reply() for _ in waiting))


@st.composite
def js_cases(draw, *, max_operations: int = 20) -> tuple[Script, JsCompactor]:
    """(script, compactor): a script as :func:`scripts` draws it, cut to what
    ADK-JS can represent, with a token-threshold configuration (a drawn one,
    or one drawn here when the script had a sliding window), and a compactor
    of :data:`JS_COMPACTORS` with the script's threshold and retention (the
    truncating compactor: a threshold of 1 to 8 events, 0 to 2 kept first)."""
    script = draw(scripts(max_operations=max_operations))
    config = script.config
    config = dataclasses.replace(
        config,
        # ADK-JS has no SqliteSessionService: a stored session is its
        # DatabaseSessionService's (on SQLite).
        storage="memory" if config.storage == "memory" else "database",
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
    script = Script(config, _replies_after_asks(draw, ops))
    options = compactor_for(script).options
    name = draw(st.sampled_from(JS_COMPACTORS))
    if name == "truncating":
        options = {
            "threshold": draw(st.integers(1, 8)),
            "preserveLeadingEvents": draw(st.integers(0, 2)),
        }
    return script, JsCompactor(name, options)
