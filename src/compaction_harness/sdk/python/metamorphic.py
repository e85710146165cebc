"""Invariant U6: metamorphic relations between two runs of the same helper.

A relation changes a session in a way that must not matter (or may matter in
one stated way only) and compares ADK's answers before and after; no
reference is involved, so these relations also catch faults the reference
shares with ADK.

* **rename**: renaming call ids and tool names consistently changes nothing
  but the names in the dead-id set.
* **texts**: changing texts changes nothing.
* **added response**: a resolved response added anywhere outside the window
  can only protect its call: the dead-id set may lose that id, nothing else
  changes.
* **isolation scope** (token-threshold compaction): events of another
  isolation scope change nothing the summariser is given.
* **bare actions**: an event whose ``actions`` is None is treated like one
  with empty actions (the helpers guard against None explicitly).

Transformations work on :class:`~compaction_harness.spec.model.Session`; checkers
return :class:`~compaction_harness.spec.invariants.Violation` lists (invariant
``U6``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ...spec.invariants import Violation
from ...spec.model import Call, ModelError, Response, Session, Step
from .unit import UnitCase, UnitOutcome, run_unit_case

__all__ = [
    "RELATIONS",
    "MetamorphicCase",
    "add_response",
    "canonical_names",
    "change_texts",
    "check_added_response",
    "check_same_answers",
    "check_same_summariser_input",
    "interleave_scope",
    "rename",
    "run_metamorphic_case",
]


def rename(session: Session, ids: Mapping[str, str], tools: Mapping[str, str]) -> Session:
    """Every call id and tool name replaced through ``ids`` / ``tools``
    (names not in a mapping stay)."""

    def i(x: str) -> str:
        return ids.get(x, x)

    def t(x: str) -> str:
        return tools.get(x, x)

    return Session(
        tuple(
            replace(
                s,
                calls=tuple(Call(i(c.id), t(c.name)) for c in s.calls),
                responses=tuple(Response(i(r.id), t(r.name)) for r in s.responses),
                long_running=tuple(sorted(i(x) for x in s.long_running)),
                confirmations=tuple(sorted(i(x) for x in s.confirmations)),
                auth_requests=tuple(sorted(i(x) for x in s.auth_requests)),
            )
            for s in session
        )
    )


def change_texts(session: Session) -> Session:
    """Every text (and summary text) replaced by a different one."""
    return Session(
        tuple(
            replace(
                s,
                text=None if s.text is None else f"changed: {s.text[::-1]}",
                compaction=None
                if s.compaction is None
                else replace(s.compaction, summary="changed summary"),
            )
            for s in session
        )
    )


def add_response(session: Session, index: int, call_id: str, name: str = "lookup") -> Session:
    """``session`` with a resolved response to ``call_id`` inserted before step
    ``index`` (``len(session)`` appends).

    It takes the invocation id and timestamp of the nearest event before it
    that is not a summary (after it, at the start), so it never opens an
    invocation of its own: a new newest invocation would change which calls
    are protected, which is not what the relation is about.
    """
    raw = [k for k, s in enumerate(session) if s.compaction is None]
    before = [k for k in raw if k < index]
    after = [k for k in raw if k >= index]
    neighbour = session[before[-1]] if before else session[after[0]] if after else Step()
    step = Step(
        neighbour.invocation,
        "user",
        neighbour.timestamp,
        responses=(Response(call_id, name),),
    )
    steps = list(session.steps)
    steps.insert(index, step)
    return Session(tuple(steps))


def interleave_scope(session: Session, extra: Sequence[Step], after: Sequence[int]) -> Session:
    """``session`` with ``extra[k]`` inserted after step ``after[k]`` (-1: first)."""
    steps: list[Step] = []
    pending = sorted(zip(after, range(len(extra)), strict=True))
    for index, step in enumerate([None, *session.steps]):
        if step is not None:
            steps.append(step)
        while pending and pending[0][0] == index - 1:
            steps.append(extra[pending.pop(0)[1]])
    steps.extend(extra[k] for _, k in pending)
    return Session(tuple(steps))


def check_same_answers(
    relation: str,
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    ids: Mapping[str, str] | None = None,
) -> list[Violation]:
    """U6 for ``rename`` and ``texts``: the prefix length is equal and the
    dead-id set is equal once renamed through ``ids``."""
    ids = ids or {}
    out = []
    if before.get("prefix_length") != after.get("prefix_length"):
        out.append(
            Violation(
                "U6",
                f"{relation} changed the prefix length",
                expected=before.get("prefix_length"),
                observed=after.get("prefix_length"),
            )
        )
    if "dead_ids" in before:
        want = sorted(ids.get(x, x) for x in before["dead_ids"])
        if want != sorted(after.get("dead_ids", [])):
            out.append(
                Violation(
                    "U6",
                    f"{relation} changed the dead-id set",
                    expected=want,
                    observed=sorted(after.get("dead_ids", [])),
                )
            )
    return out


def check_added_response(
    before: Mapping[str, Any], after: Mapping[str, Any], call_id: str
) -> list[Violation]:
    """U6 for ``add_response``: the dead-id set can only lose ``call_id``; the
    prefix may change only if ``call_id`` was dead before."""
    if "dead_ids" not in before:
        return []
    dead_before, dead_after = set(before["dead_ids"]), set(after["dead_ids"])
    out = []
    if not dead_after <= dead_before or not dead_before - dead_after <= {call_id}:
        out.append(
            Violation(
                "U6",
                f"a response to {call_id!r} changed which other ids are dead",
                ids=(call_id,),
                expected=sorted(dead_before - {call_id}),
                observed=sorted(dead_after),
            )
        )
    if call_id not in dead_before and before["prefix_length"] != after["prefix_length"]:
        out.append(
            Violation(
                "U6",
                f"a response to the live id {call_id!r}, outside the window, changed the prefix",
                ids=(call_id,),
                expected=before["prefix_length"],
                observed=after["prefix_length"],
            )
        )
    return out


def check_same_summariser_input(
    before: Sequence[Step] | None, after: Sequence[Step] | None
) -> list[Violation]:
    """U6 for ``interleave_scope``: the summariser got the same events."""
    if list(before or []) == list(after or []):
        return []
    return [
        Violation(
            "U6",
            "events of another isolation scope changed what the summariser was given",
            expected=[s.to_json() for s in before or []],
            observed=[s.to_json() for s in after or []],
        )
    ]


# -- metamorphic cases: what a U6 property generates and a U6 fixture stores ----
RELATIONS = ("rename", "texts", "added_response", "isolation_scope", "bare_actions")


def canonical_names(session: Session) -> tuple[dict[str, str], dict[str, str]]:
    """The renaming U6 applies: ids and tool names numbered by first use.

    The names of ADK's synthetic calls (``adk_request_*``) keep their meaning
    and are not renamed.
    """
    ids: dict[str, str] = {}
    tools: dict[str, str] = {}
    for s in session:
        for x in [c.id for c in s.calls] + [r.id for r in s.responses]:
            ids.setdefault(x, f"id{len(ids)}")
        for x in list(s.long_running) + list(s.confirmations) + list(s.auth_requests):
            ids.setdefault(x, f"id{len(ids)}")
        for name in [c.name for c in s.calls] + [r.name for r in s.responses]:
            if not name.startswith("adk_request_"):
                tools.setdefault(name, f"tool{len(tools)}")
    return ids, tools


@dataclass(frozen=True)
class MetamorphicCase:
    """A session, the relation to check, and its parameters.

    Attributes:
        session: the session (for ``isolation_scope``: including the events
            of the other scope, which the relation removes for comparison).
        relation: one of :data:`RELATIONS`.
        window: the unit window (``rename``, ``texts``, ``added_response``).
        index, call_id: where the added response goes and what it answers.
        retention: ``event_retention_size`` (``isolation_scope``).
    """

    session: Session
    relation: str
    window: tuple[int, ...] = ()
    index: int = 0
    call_id: str = ""
    retention: int = 0
    origin: Session | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.relation not in RELATIONS:
            raise ModelError(f"call.relation: unknown relation {self.relation!r}")
        UnitCase(self.session, self.window)  # validates the window
        if not 0 <= self.index <= len(self.session):
            raise ModelError("call.index: outside the session")
        if type(self.retention) is not int or self.retention < 0:
            raise ModelError("call.retention: expected a non-negative integer")

    def call_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"relation": self.relation, "window": list(self.window)}
        if self.relation == "added_response":
            out.update(index=self.index, call_id=self.call_id)
        if self.relation == "isolation_scope":
            out["retention"] = self.retention
        return out

    def render(self) -> str:
        return self.session.render({i: "W" for i in self.window}) + f"\nrelation: {self.relation}"

    def __repr__(self) -> str:
        return f"MetamorphicCase({self.session!r}, {self.call_json()!r})"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:  # Hypothesis / IPython
        printer.text(repr(self))


def run_metamorphic_case(case: MetamorphicCase) -> UnitOutcome:
    """Run ADK on both sides of the relation and check U6."""
    from . import adk

    if case.relation == "isolation_scope":
        own = Session(tuple(s for s in case.session if s.isolation_scope is None))
        before = adk.token_threshold_summariser_input(own, case.retention)
        after = adk.token_threshold_summariser_input(case.session, case.retention)
        violations = check_same_summariser_input(before, after)
        as_json = [[s.to_json() for s in x or []] for x in (before, after)]
        return UnitOutcome(
            violations, {"summariser_input": as_json[0]}, {"summariser_input": as_json[1]}
        )
    base = UnitCase(case.session, case.window)
    before = run_unit_case(base).observed
    if case.relation == "rename":
        ids, tools = canonical_names(case.session)
        other = UnitCase(rename(case.session, ids, tools), case.window)
        after = run_unit_case(other).observed
        violations = check_same_answers("renaming ids and tools", before, after, ids)
    elif case.relation == "bare_actions":
        after = run_unit_case(base, bare_actions=True).observed
        violations = check_same_answers("actions=None instead of empty actions", before, after)
    elif case.relation == "texts":
        after = run_unit_case(UnitCase(change_texts(case.session), case.window)).observed
        violations = check_same_answers("changing texts", before, after)
    else:
        shifted = tuple(i + 1 if i >= case.index else i for i in case.window)
        grown = add_response(case.session, case.index, case.call_id)
        after = run_unit_case(UnitCase(grown, shifted)).observed
        violations = check_added_response(before, after, case.call_id)
    return UnitOutcome(violations, dict(before), dict(after))
