"""Episode labels: which shapes a session holds, read off the session itself.

Labels are derived from the data, not recorded while building, so they work
for fixtures and real sessions too. Properties report them with Hypothesis's
``event()``; ``tests/quality/test_statistics.py`` asserts that the gate's examples
reach every kind.
"""

from __future__ import annotations

from compaction_harness.spec.model import Session
from compaction_harness.spec.reference import SYNTHETIC_HITL_CALL_NAMES

#: Every label :func:`episode_kinds` can give.
EPISODE_KINDS = (
    "user-opened invocation",
    "response-opened invocation",
    "invocation without user event",
    "event without invocation id",
    "parallel calls",
    "parallel calls answered partly",
    "answers out of order",
    "one event answers several turns",
    "answer in a later invocation",
    "orphan call",
    "long-running call",
    "interim and final response",
    "tool confirmation",
    "auth request",
    "synthetic HITL call",
    "call id reused",
    "response without call",
    "prior compaction",
    "nested or repeated compaction ranges",
    "overlapping compaction ranges",
    "odd compaction range",
    "equal timestamps",
    "rewind",
    "branch",
    "isolation scope",
)

#: The labels a step shows by a field that is set: (field of ``Step``, label).
_FLAGS = (
    ("long_running", "long-running call"),
    ("confirmations", "tool confirmation"),
    ("auth_requests", "auth request"),
    ("rewind_before", "rewind"),
    ("branch", "branch"),
    ("isolation_scope", "isolation scope"),
)


def episode_kinds(session: Session) -> set[str]:
    """The labels of :data:`EPISODE_KINDS` that ``session`` shows."""
    kinds: set[str] = set()
    steps = session.steps
    seen_inv: set[str] = set()
    call_at: dict[str, list[int]] = {}
    for index, step in enumerate(steps):
        inv = step.invocation
        if not inv:
            kinds.add("event without invocation id")
        elif inv not in seen_inv and step.compaction is None:
            seen_inv.add(inv)
            if step.author == "user" and step.responses:
                kinds.add("response-opened invocation")
            elif step.author == "user":
                kinds.add("user-opened invocation")
            else:
                kinds.add("invocation without user event")
        if len(step.calls) > 1:
            kinds.add("parallel calls")
        kinds.update(label for field, label in _FLAGS if getattr(step, field))
        if any(c.name in SYNTHETIC_HITL_CALL_NAMES for c in step.calls):
            kinds.add("synthetic HITL call")
        if index and steps[index - 1].timestamp == step.timestamp:
            kinds.add("equal timestamps")
        for call in step.calls:
            if call.id in call_at:
                kinds.add("call id reused")
            call_at.setdefault(call.id, []).append(index)
        callers = {call_at[r.id][-1] for r in step.responses if r.id in call_at}
        if any(r.id not in call_at for r in step.responses):
            kinds.add("response without call")
        if len(callers) > 1:
            kinds.add("one event answers several turns")
        if any(steps[c].invocation != inv for c in callers):
            kinds.add("answer in a later invocation")
        order = [r.id for r in step.responses]
        for c in callers:
            called = [x.id for x in steps[c].calls if x.id in order]
            if called != [i for i in order if i in called]:
                kinds.add("answers out of order")
            if len(steps[c].calls) > 1 and len(called) < len(steps[c].calls):
                kinds.add("parallel calls answered partly")
    answered = [(i, r.id) for i, s in enumerate(steps) for r in s.responses]
    for cid, positions in call_at.items():
        last = positions[-1]
        answers = [i for i, rid in answered if rid == cid and i > last]
        if not answers:
            kinds.add("orphan call")
        if len(answers) >= 2 and any(cid in steps[p].long_running for p in positions):
            kinds.add("interim and final response")
    ranges = [s.compaction for s in steps if s.compaction is not None]
    if ranges:
        kinds.add("prior compaction")
    for k, a in enumerate(ranges):
        if a.start > a.end or a.end <= 0 or a.start < 0:
            kinds.add("odd compaction range")
        for b in ranges[:k]:
            if b.start <= a.start and a.end <= b.end:
                kinds.add("nested or repeated compaction ranges")
            elif a.start < b.end < a.end or b.start < a.end < b.end:
                kinds.add("overlapping compaction ranges")
    return kinds
