"""Small builders for hand-worked sessions in tests (imported as `builders`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

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


def once_per_run(
    tmp_path_factory: Any, name: str, build: Callable[[Path], Any], dump: Callable, load: Callable
) -> Any:
    """What ``build(folder)`` makes, made once per pytest run however many
    pytest-xdist workers ask (a module fixture is otherwise made once per
    worker): the first worker builds it in a folder every worker shares and
    writes ``dump(value)`` (JSON) beside it; the others wait on a lock and
    rebuild the value with ``load(json, folder)``. pytest-xdist's documented
    pattern, with the standard library's ``fcntl`` lock. Without xdist: built
    in this run's own temporary folder."""
    import fcntl
    import json
    import os

    if "PYTEST_XDIST_WORKER" not in os.environ:
        return build(tmp_path_factory.mktemp(name))
    root = tmp_path_factory.getbasetemp().parent  # this run's, shared by its workers
    folder, record = root / name, root / f"{name}.json"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if record.is_file():
            return load(json.loads(record.read_text(encoding="utf-8")), folder)
        folder.mkdir(exist_ok=True)
        value = build(folder)
        record.write_text(json.dumps(dump(value)), encoding="utf-8")
        return value
