"""Small builders for hand-worked sessions in tests (imported as `builders`)."""

from __future__ import annotations

from compaction_harness.spec.model import Call, Compaction, Response, Session, Step


def user(inv: str, t: float, text: str = "hi") -> Step:
    return Step(inv, "user", t, text=text)


def text(inv: str, t: float, body: str = "ok") -> Step:
    return Step(inv, "agent", t, text=body)


def call(
    inv: str, t: float, *ids: str, long_running: tuple[str, ...] = (), name: str = "tool"
) -> Step:
    return Step(inv, "agent", t, calls=tuple(Call(i, name) for i in ids), long_running=long_running)


def answer(inv: str, t: float, *ids: str, author: str = "agent", confirmations=(), auth=()) -> Step:
    return Step(
        inv,
        author,
        t,
        responses=tuple(Response(i, "tool") for i in ids),
        confirmations=tuple(confirmations),
        auth_requests=tuple(auth),
    )


def summary(inv: str, t: float, start: float, end: float) -> Step:
    return Step(inv, "agent", t, compaction=Compaction(start, end))


def session(*steps: Step) -> Session:
    return Session(tuple(steps))


def non_compaction(s: Session) -> tuple[int, ...]:
    return tuple(i for i, step in enumerate(s) if step.compaction is None)
