"""What a driver can reproduce: :func:`shortfall`, why one driver's run of a
script does not show a fault another driver's run of it shows (the
emulating and the runner driver; re-exported by :mod:`.driver`).
"""

from __future__ import annotations

from collections.abc import Sequence

from ...spec import scripts as ops
from ...spec.model import Step
from .unit import UnitOutcome

__all__ = ["shortfall"]


# -- what a driver can reproduce --------------------------------------------------
#: Operations after which a request of its own starts: the ``Runner`` loads the
#: session from its service then, and only then (``Runner.run_async``,
#: ``Runner.rewind_async``).
_REQUEST_STARTS = ("open", "answer", "reply", "rewind")


def _out_of_time_order(steps: Sequence[Step]) -> list[tuple[int, int]]:
    """Pairs of stored positions (i < j) that a reload in timestamp order may
    swap: j stamped earlier than i, or in the same tick (ties go by id)."""
    return [
        (i, j)
        for i in range(len(steps))
        for j in range(i + 1, len(steps))
        if steps[j].timestamp <= steps[i].timestamp
    ]


def _unloaded_reorderings(
    script: ops.Script, steps: Sequence[Step], origin: Sequence
) -> str | None:
    """Why no request of ``script`` run by the ``Runner`` loads a session that
    a timestamp-ordered reload reorders, or None when one does: the events out
    of time order, and the operation that stored the later of them, after
    which no request starts."""
    operations = script.operations
    pairs = _out_of_time_order(steps)
    if not pairs:
        return None
    for i, j in pairs:
        by = [o for o in (origin[i], origin[j]) if isinstance(o, int)]
        last = max(by, default=-1)
        if any(op.op in _REQUEST_STARTS for op in operations[last + 1 :]):
            return None  # a later request loads them: the Runner had the shape
    i, j = pairs[0]
    return (
        f"the Runner loads the session from the database only when a request starts, "
        f"and no request of this script starts after steps {i} and {j} (out of "
        "timestamp order) were stored, so no request it sends comes from a reload "
        "that reorders them; the emulating driver reloads the session at every model call"
    )


def shortfall(
    script: ops.Script,
    driver: str,
    outcome: UnitOutcome,
    witness_driver: str,
    witness: UnitOutcome,
    fault: str,
) -> str:
    """Why ``driver``'s run of ``script`` (``outcome``) does not show ``fault``
    where ``witness_driver``'s run of the same script on the same release
    (``witness``) does: the evidence that the difference lies in what the
    driver can reproduce, not in ADK. In order: the script the ``Runner``
    could not run as written (its repairs), a stored session of another shape
    (:func:`~compaction_harness.sdk.python.differential.compare_sessions`), the reload
    the ``Runner`` never makes (P7), else the check ``driver`` does not make
    where the witness meets the fault."""
    from ...spec.model import Session
    from .differential import compare_sessions

    repairs = outcome.observed.get("repairs", ())
    if repairs:
        return "the Runner could not run the script as written (" + "; ".join(repairs) + ")"
    repairs = witness.observed.get("repairs", ())
    if repairs:
        return (
            f"the Runner, where it shows, ran the script with operations added or dropped "
            f"({'; '.join(repairs)}), and the {driver} driver runs it as written"
        )
    mine = Session.from_json(outcome.observed.get("session", {"steps": []}))
    theirs = Session.from_json(witness.observed.get("session", {"steps": []}))
    emulated, real = (mine, theirs) if driver == "emulated" else (theirs, mine)
    differences = compare_sessions(
        emulated, [None] * len(emulated), real, [None] * len(real), ties=False
    )
    if differences:
        first = differences[0]
        return f"it stored a session of another shape than the {witness_driver} driver: {first}"
    shown = [v for v, f in witness.known if f == fault]
    if driver == "runner" and any(v.invariant == "P7" for v in shown):
        why = _unloaded_reorderings(script, mine, outcome.observed.get("origin", []))
        if why is not None:
            return why
    summary = shown[0].summary() if shown else fault
    return (
        f"it stored the same session as the {witness_driver} driver, which meets the fault "
        f"at a check the {driver} driver does not make on this script ({summary})"
    )
