"""Pure invariant checkers: ``check_x(inputs, output) -> list[Violation]``.

Each checker compares what a compaction helper returned with the project's
definitions (quoted in full in :mod:`compaction_harness.spec.reference`). They take model
objects and plain values, never import ``google.adk``, and are shared by the
property tests, fixture replay and the command line.

Unit-level invariants (``google.adk.apps.compaction`` helpers):

* **U1 shape** -- the chosen range is a prefix of the window: same objects,
  same order.
* **U2 safety** -- every obligation opened inside the chosen prefix is closed
  inside it, or its id is provably dead.
* **U3 liveness** -- the prefix is as long as the definitions allow: a
  provably dead id never blocks the healthy events after it.
* **U4 dead ids** -- the dead-id set equals the reference's, and every id in
  it meets every clause of the definition.
* **U5 token threshold** -- the split keeps every retained response with its
  call, retains at least the configured number of events, and is the latest
  such split; the whole range (``_events_to_compact_for_token_threshold``)
  starts with the rolling-summary seed exactly when a summary exists, takes a
  prefix of the candidates that respects retention and U2, as long as the
  reference's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from . import reference
from .model import Session

__all__ = [
    "APPLIES_TO",
    "INVARIANTS",
    "PIPELINE_INVARIANTS",
    "Violation",
    "check_dead_ids",
    "check_prefix_liveness",
    "check_prefix_safety",
    "check_prefix_shape",
    "check_token_range",
    "check_token_split",
    "invariants_of",
]

#: Invariant id -> one-line statement, as the project's specification words it.
INVARIANTS: dict[str, str] = {
    "U1": "shape: the chosen range is a prefix of the window, same objects, same order",
    "U2": "safety: every obligation opened inside the prefix is closed inside it or provably dead",
    "U3": "liveness: a provably dead id never blocks healthy events (prefix equals the reference)",
    "U4": "dead ids: the dead-id set equals the reference's; each id meets every clause",
    "U5": "token threshold: the split keeps retained responses with their calls, retains "
    "enough, and is the latest; the range is seed + safe prefix",
    "U6": "metamorphic: renaming, text changes, added responses and other isolation scopes "
    "change nothing else",
    "P0": "no crash: ADK raises nothing during compaction, prompt assembly or storage",
    "P1": "range safety: every summariser input satisfies U2 on the session at that moment",
    "P2": "prompt validity: responses follow exactly their calls; the opener is a user turn",
    "P3": "liveness: the compactable backlog stays within the configuration's bound",
    "P4": "nothing lost: every event the prompt shows without compaction is shown or summarised",
    "P5": "same view: the summariser gets only events the agent can see (no rewound ones)",
    "P6": "no wasted work: every compaction covers a live event no kept summary covered",
    "P7": "round trip: a session reloaded from the database yields the same prompt",
    "P8": "tool runs at most once: tool_runs holds one run per call, another only after a "
    "run that asked the user or never returned",
}

#: What each invariant is checked on: ``"unit"`` (a call of a sliding-window
#: prefix helper: U1-U4), ``"token"`` (a token-threshold split: U5),
#: ``"metamorphic"`` (a pair of unit runs: U6) and ``"pipeline"`` (the trace of
#: a whole run, any driver and SDK: P0-P8; P8 reads the trace's ``tool_runs``,
#: which only a driver that runs the SDK's tools records: google-adk's runner
#: driver, :mod:`.tool_runs`). The one list every surface reads.
APPLIES_TO: dict[str, str] = {
    **dict.fromkeys(("U1", "U2", "U3", "U4"), "unit"),
    "U5": "token",
    "U6": "metamorphic",
    **dict.fromkeys(("P0", "P1", "P2", "P3", "P4", "P5", "P6", "P7", "P8"), "pipeline"),
}


def invariants_of(*kinds: str) -> tuple[str, ...]:
    """The invariant ids checked on traces of ``kinds`` (see :data:`APPLIES_TO`),
    in the specification's order."""
    return tuple(i for i in INVARIANTS if APPLIES_TO[i] in kinds)


#: The pipeline-level invariants, as the project's specification names them.
PIPELINE_INVARIANTS = invariants_of("pipeline")


@dataclass(frozen=True)
class Violation:
    """One broken invariant and its witness.

    Attributes:
        invariant: the invariant id (``"U1"`` ... ``"U4"``).
        message: what went wrong, in one sentence.
        ids: the call ids involved.
        positions: the window positions involved (0-based).
        expected: the reference's answer (JSON-serialisable).
        observed: ADK's answer (JSON-serialisable).
    """

    invariant: str
    message: str
    ids: tuple[str, ...] = ()
    positions: tuple[int, ...] = ()
    expected: Any = None
    observed: Any = None
    details: dict[str, Any] = field(default_factory=dict, compare=False)

    def summary(self) -> str:
        """The first line of ``str(self)``: invariant, message, ids and positions."""
        return str(self).splitlines()[0]

    def __str__(self) -> str:
        return self.render()

    def render(self, observer: str = "ADK") -> str:
        """Invariant, message, ids and positions, then the reference's answer
        and ``observer``'s (the SDK that ran: ``"ADK"``, or ``"ADK-JS"``)."""
        where = []
        if self.ids:
            where.append("ids " + ", ".join(self.ids))
        if self.positions:
            # Pipeline invariants name steps of the session as stored.
            label = "steps" if self.invariant.startswith("P") else "window positions"
            where.append(f"{label} " + ", ".join(map(str, self.positions)))
        suffix = f" [{'; '.join(where)}]" if where else ""
        return (
            f"{self.invariant}: {self.message}{suffix}\n"
            f"    expected (reference): {self.expected!r}\n"
            f"    {f'observed ({observer}):':<21} {self.observed!r}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "invariant": self.invariant,
            "message": self.message,
            "ids": list(self.ids),
            "positions": list(self.positions),
            "expected": self.expected,
            "observed": self.observed,
        }


def check_prefix_shape(window: Sequence[object], result: Sequence[object]) -> list[Violation]:
    """U1: ``result`` is ``window[:k]`` for some k, element by element (``is``)."""
    if len(result) > len(window):
        return [
            Violation(
                "U1",
                f"result has {len(result)} events, the window only {len(window)}",
                expected=f"at most {len(window)} events",
                observed=len(result),
            )
        ]
    bad = [i for i, (got, want) in enumerate(zip(result, window, strict=False)) if got is not want]
    if bad:
        return [
            Violation(
                "U1",
                "result is not a prefix of the window (a different object at a position)",
                positions=tuple(bad),
                expected="window[:k] with the same objects",
                observed=f"other objects at positions {bad}",
            )
        ]
    return []


def check_prefix_safety(session: Session, window: Sequence[int], length: int) -> list[Violation]:
    """U2: every obligation opened in ``window[:length]`` is closed there or provably dead."""
    dead = reference.provably_dead_call_ids(session, window)
    out = []
    for o in reference.open_obligations(session, window, length):
        why = (
            "its id is provably dead elsewhere, but this call belongs to the newest invocation "
            "and may still be answered"
            if o.id in dead
            else "it is not provably dead"
        )
        out.append(
            Violation(
                "U2",
                f"prefix of {length} splits a live pair: {o.id!r} is opened at window position "
                f"{o.position} and not closed inside the prefix; {why}",
                ids=(o.id,),
                positions=(o.position,),
                expected=reference.longest_self_contained_prefix(session, window),
                observed=length,
            )
        )
    return out


def check_prefix_liveness(session: Session, window: Sequence[int], length: int) -> list[Violation]:
    """U3: the prefix is not shorter than the reference's longest safe prefix.

    The witness names the obligations that are open at the observed length
    when no id is exempted: the dead calls that blocked compaction.
    """
    expected = reference.longest_self_contained_prefix(session, window)
    if length >= expected:
        return []  # longer than the reference is a U2 violation, reported there
    blockers = [
        o
        for o in reference.open_obligations(session, window, length + 1, exempt_dead=False)
        if o.id in reference.provably_dead_call_ids(session, window)
    ]
    return [
        Violation(
            "U3",
            f"prefix stops at {length} events but {expected} are safe to compact"
            + (
                "; blocked by provably dead "
                + ", ".join(f"{o.id!r} (position {o.position})" for o in blockers)
                if blockers
                else ""
            ),
            ids=tuple(o.id for o in blockers),
            positions=tuple(o.position for o in blockers),
            expected=expected,
            observed=length,
        )
    ]


def check_dead_ids(
    session: Session, window: Sequence[int], observed: set[str] | frozenset[str]
) -> list[Violation]:
    """U4: ``observed`` equals the reference's dead-id set; extra ids name the clause they fail."""
    expected = reference.provably_dead_call_ids(session, window)

    def wrong(cid: str, message: str, details: dict[str, Any] | None = None) -> Violation:
        return Violation(
            "U4",
            f"{cid!r} {message}",
            ids=(cid,),
            positions=tuple(p for p, i in enumerate(window) if cid in session[i].call_ids),
            expected=sorted(expected),
            observed=sorted(observed),
            details=details or {},
        )

    out = []
    for cid in sorted(set(observed) - expected):
        failed = [k for k, ok in reference.dead_id_clauses(session, window, cid).items() if not ok]
        out.append(
            wrong(
                cid,
                f"is reported dead but fails the clause(s) {', '.join(failed)}",
                {"failed_clauses": failed},
            )
        )
    for cid in sorted(expected - set(observed)):
        out.append(wrong(cid, "meets every clause of provably dead but is not reported"))
    return out


def check_token_split(
    session: Session, candidates: Sequence[int], retention: int, split: int
) -> list[Violation]:
    """U5 on ``_safe_token_compaction_split_index``: ``split`` over ``candidates``."""
    steps = [session[i] for i in candidates]
    expected = reference.safe_token_split(session, candidates, retention)
    out = []
    if not 0 <= split <= len(steps):
        return [
            Violation("U5", f"split {split} is outside 0..{len(steps)}", (), (), expected, split)
        ]
    if split > 0 and len(steps) - split < retention:
        out.append(
            Violation(
                "U5",
                f"split {split} retains {len(steps) - split} events, fewer than {retention}",
                expected=expected,
                observed=split,
            )
        )
    for p in range(split, len(steps)):
        for r in steps[p].responses:
            call = next((q for q in range(p - 1, -1, -1) if r.id in steps[q].call_ids), None)
            if call is not None and call < split:
                out.append(
                    Violation(
                        "U5",
                        f"split {split} retains the response {r.id!r} (position {p}) but "
                        f"compacts its call (position {call})",
                        ids=(r.id,),
                        positions=(call, p),
                        expected=expected,
                        observed=split,
                    )
                )
    if not out and split < expected:
        out.append(
            Violation(
                "U5",
                f"split {split} is not the latest: splitting at {expected} also keeps every "
                f"retained response with its call and retains at least {retention}",
                expected=expected,
                observed=split,
            )
        )
    return out


def check_token_range(
    session: Session, retention: int, taken: Sequence[int] | None, seeds: Sequence[dict]
) -> list[Violation]:
    """U5 on ``_events_to_compact_for_token_threshold``.

    ``taken``: session indices of the returned input events, in the order
    returned (None when it returned objects that are not input events, other
    than leading seeds). ``seeds``: the leading events that are not input
    events, each as ``{"author", "timestamp", "summary"}``: one rolling-summary
    seed for each branch of the range that has a summary
    (:func:`reference.token_seeds`), in any order.
    """
    candidates = reference.token_candidates(session)
    expected = reference.token_threshold_range(session, retention)
    out = []
    if taken is None:
        return [
            Violation(
                "U5", "returned events that are not from the session", (), (), len(expected), None
            )
        ]

    def seed_of(index: int) -> dict:
        summary = session[index].compaction
        return {"author": "model", "timestamp": summary.start, "summary": summary.summary}

    def order(seed: dict) -> tuple:
        return (seed.get("timestamp") or 0.0, str(seed.get("summary")), str(seed.get("author")))

    leading = reference.token_seeds(session, taken)  # none when nothing is taken
    want = [seed_of(i) for i in leading]
    if sorted(want, key=order) != sorted(seeds, key=order):
        missing = [i for i in leading if seed_of(i) not in seeds]
        out.append(
            Violation(
                "U5",
                f"a summary exists (step {', '.join(map(str, missing))}) but the range does not "
                "start with its rolling-summary seed"
                if missing
                else "a seed event without anything to compact, or without a summary of its branch",
                expected=want[0] if len(want) == 1 else (want or None),
                observed=seeds[0] if len(seeds) == 1 else (list(seeds) or None),
            )
        )
    if tuple(taken) != candidates[: len(taken)]:
        return [
            *out,
            Violation(
                "U5",
                "the range is not a prefix of the candidates "
                "(the events newer than the latest summary of their branch)",
                expected=list(candidates[: len(taken)]),
                observed=list(taken),
            ),
        ]
    if taken and len(candidates) - len(taken) < retention:
        out.append(
            Violation(
                "U5",
                f"the range leaves {len(candidates) - len(taken)} candidates, "
                f"fewer than {retention}",
                expected=len(expected),
                observed=len(taken),
            )
        )
    for o in reference.open_obligations(session, candidates, len(taken)):
        out.append(
            Violation(
                "U5",
                f"the range splits a live pair: {o.id!r} opened at candidate {o.position} is not "
                "closed inside it",
                ids=(o.id,),
                positions=(o.position,),
                expected=len(expected),
                observed=len(taken),
            )
        )
    if not out and len(taken) != len(expected):
        out.append(
            Violation(
                "U5",
                f"the range takes {len(taken)} candidates, the reference {len(expected)}",
                expected=len(expected),
                observed=len(taken),
            )
        )
    return out
