"""What two drivers stored, compared: the emulating driver against ADK's ``Runner``.

Both drivers run one script (:mod:`compaction_harness.spec.scripts`); this module
compares the sessions they stored, event by event, in what the emulating
driver claims to reproduce of the ``Runner``:

* the order of the events, their authors, content roles, branches and texts;
* the function calls and responses of each event, their long-running marks,
  and the keys of requested tool confirmations and credentials, with every
  id replaced by its order of first appearance (``c0``, ``c1``, ...: ADK makes
  random ids), and invocation ids likewise (``i0``, ``i1``, ...);
* which events are compaction summaries, and a rewind's target;
* timestamps by their order and ties (the rank of each event's timestamp
  among all of them), never by value: the drivers' clocks are read a
  different number of times.

Prompt token counts are compared separately (:func:`token_mismatches`): they
follow from what the prompt holds, so a difference there explains later
differences in compaction. So are the requests each driver judged
(:func:`request_mismatches`): P2 and P4 are checked on them, so the emulating
driver must judge exactly the requests the ``Runner``'s model was sent.

Pure: no ``google.adk`` import.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ...spec.model import Session, Step

__all__ = [
    "EventShape",
    "compare_sessions",
    "rank_pattern",
    "request_mismatches",
    "shapes",
    "token_mismatches",
]


@dataclass(frozen=True)
class EventShape:
    """One stored event as the comparison sees it (ids renamed, no timestamp)."""

    author: str
    role: str | None
    invocation: str
    branch: str | None
    text: str | None
    calls: tuple[tuple[str, str], ...]
    responses: tuple[tuple[str, str], ...]
    long_running: tuple[str, ...]
    confirmations: tuple[str, ...]
    auth_requests: tuple[str, ...]
    summary: bool
    rewind_before: str | None

    def render(self) -> str:
        out = [f"{self.invocation} {self.author}/{self.role}"]
        if self.branch:
            out.append(f"branch={self.branch}")
        if self.summary:
            out.append("SUMMARY")
        if self.text is not None:
            out.append(repr(self.text[:24]))
        if self.calls:
            out.append("call " + ", ".join(f"{i}:{n}" for i, n in self.calls))
        if self.responses:
            out.append("response " + ", ".join(f"{i}:{n}" for i, n in self.responses))
        if self.long_running:
            out.append(f"long-running{set(self.long_running)}")
        if self.confirmations:
            out.append(f"confirm?{set(self.confirmations)}")
        if self.auth_requests:
            out.append(f"auth?{set(self.auth_requests)}")
        if self.rewind_before:
            out.append(f"rewind before {self.rewind_before}")
        return " ".join(out)


class _Names:
    """Renames ids by order of first appearance."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.names: dict[str, str] = {}

    def __call__(self, value: str) -> str:
        if value not in self.names:
            self.names[value] = f"{self.prefix}{len(self.names)}"
        return self.names[value]


def shapes(steps: Session | Sequence[Step], roles: Sequence[str | None]) -> list[EventShape]:
    """The shape of each stored event; ``roles``: each event's content role."""
    calls, invocations = _Names("c"), _Names("i")
    out = []
    for step, role in zip(steps, roles, strict=True):
        summary = step.compaction is not None
        out.append(
            EventShape(
                author=step.author,
                role=role,
                # A summary's invocation id is ADK's fresh uuid: not part of the shape.
                invocation="" if summary else invocations(step.invocation),
                branch=step.branch,
                text=step.text,
                calls=tuple((calls(c.id), c.name) for c in step.calls),
                responses=tuple((calls(r.id), r.name) for r in step.responses),
                long_running=tuple(sorted(calls(x) for x in step.long_running)),
                confirmations=tuple(sorted(calls(x) for x in step.confirmations)),
                auth_requests=tuple(sorted(calls(x) for x in step.auth_requests)),
                summary=summary,
                rewind_before=(
                    invocations(step.rewind_before) if step.rewind_before is not None else None
                ),
            )
        )
    return out


def rank_pattern(timestamps: Sequence[float]) -> tuple[int, ...]:
    """Each timestamp's dense rank among all of them (0 = earliest; equal
    timestamps share a rank): order and ties, without the values."""
    ranks = {t: k for k, t in enumerate(sorted(set(timestamps)))}
    return tuple(ranks[t] for t in timestamps)


def _inversions(a: Sequence[float], b: Sequence[float]) -> list[tuple[int, int]]:
    """Pairs of positions strictly ordered one way in ``a`` and the other in ``b``."""
    return [
        (i, j)
        for i in range(len(a))
        for j in range(i + 1, len(a))
        if (a[i] - a[j]) * (b[i] - b[j]) < 0
    ]


def compare_sessions(
    emulated: Session,
    emulated_roles: Sequence[str | None],
    real: Session,
    real_roles: Sequence[str | None],
    *,
    ties: bool = True,
) -> list[str]:
    """Where the emulating driver's session (``emulated``) differs from the one
    ADK's ``Runner`` stored (``real``); one line per difference, empty when
    they agree. ``ties``: compare timestamps by rank pattern (order and ties);
    without, only by strict order (for clocks whose ties depend on how often
    they are read)."""
    out: list[str] = []
    mine, theirs = shapes(emulated, emulated_roles), shapes(real, real_roles)
    for k, (a, b) in enumerate(zip(mine, theirs, strict=False)):
        if a != b:
            out.append(f"event #{k}: emulated {a.render()}  |  runner {b.render()}")
            break  # everything after the first difference differs for its sake
    if len(mine) != len(theirs):
        out.append(f"the emulating driver stored {len(mine)} events, the runner {len(theirs)}")
    if out:
        return out
    stamps_a = [s.timestamp for s in emulated]
    stamps_b = [s.timestamp for s in real]
    if ties:
        a, b = rank_pattern(stamps_a), rank_pattern(stamps_b)
        if a != b:
            first = next(k for k in range(len(a)) if a[k] != b[k])
            out.append(
                f"timestamps: ranks differ from event #{first}: "
                f"emulated {list(a)}, runner {list(b)}"
            )
    else:
        pairs = _inversions(stamps_a, stamps_b)
        if pairs:
            out.append(f"timestamps: events {pairs[0]} are in opposite time order")
    return out


def token_mismatches(emulated: Session, real: Session) -> list[str]:
    """Events whose prompt token counts differ (the sessions' shapes agree)."""
    return [
        f"event #{k}: prompt_tokens emulated {a.prompt_tokens}, runner {b.prompt_tokens}"
        for k, (a, b) in enumerate(zip(emulated, real, strict=False))
        if a.prompt_tokens != b.prompt_tokens and a.compaction is None
    ]


#: A response a sub-agent reads quoted as text names its event's id (the
#: harness's event tag, ``adk._EVENT_KEY``); the drivers make different ids.
_QUOTED_EVENT = re.compile(r"('harness_event': ')([^']*)(')")


def _renamed(requests: Sequence[tuple]) -> list[tuple]:
    """``requests`` with call ids, and event ids quoted in texts, renamed by
    order of first appearance."""
    calls, events = _Names("c"), _Names("e")

    def part(p: tuple) -> tuple:
        if p[0] == "text":
            return ("text", _QUOTED_EVENT.sub(lambda m: m[1] + events(m[2]) + m[3], p[1]))
        return (p[0], calls(p[1]), *p[2:])

    return [
        (agent, branch, [(role, tuple(part(p) for p in parts)) for role, parts in contents or ()])
        for agent, branch, contents in requests
    ]


def request_mismatches(emulated: Sequence[tuple], real: Sequence[tuple]) -> list[str]:
    """Where the requests the emulating driver judged differ from those the
    ``Runner``'s model was sent; each request is (agent, branch, contents),
    contents as ``adk.PromptContent`` with each response part naming its
    stored event's position (the sessions' shapes agree, so positions do),
    call ids compared by order of first appearance. One line for the first
    difference, one more when the counts differ."""
    out = []
    for k, (a, b) in enumerate(zip(_renamed(emulated), _renamed(real), strict=False)):
        if a != b:
            out.append(f"request #{k}: emulated {a}  |  runner {b}")
            break
    if len(emulated) != len(real):
        out.append(
            f"the emulating driver judged {len(emulated)} requests, the runner sent {len(real)}"
        )
    return out
