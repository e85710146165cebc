"""google-adk's one interpreter of the script operations and its two backends."""

from __future__ import annotations

import pytest

from compaction_harness.sdk.python.driver import ScriptRun
from compaction_harness.sdk.python.interpreter import Interpreter, Pending, walk
from compaction_harness.sdk.python.runner_driver import RunnerDriver
from compaction_harness.spec.model import Call
from compaction_harness.spec.scripts import OPERATIONS, Answer, Open, Rewind, ScriptConfig, Text


@pytest.mark.parametrize("backend", [ScriptRun, RunnerDriver])
def test_every_backend_carries_out_every_operation(backend: type) -> None:
    missing = [name for name in OPERATIONS if not callable(getattr(backend, f"_op_{name}", None))]
    assert missing == []
    assert issubclass(backend, Interpreter)


def test_the_walk_gives_each_operation_and_the_next() -> None:
    operations = (Open(), Text(), Open())
    assert [(i, op, nxt) for i, op, nxt in walk(operations)] == [
        (0, Open(), Text()),
        (1, Text(), Open()),
        (2, Open(), None),
    ]


def test_an_answer_picks_one_invocation_then_its_calls_oldest_first() -> None:
    state = Interpreter(ScriptConfig())
    state.pending = [
        Pending(Call("a", "lookup"), "e-1", False),
        Pending(Call("b", "lookup"), "e-2", False),
        Pending(Call("c", "lookup"), "e-2", False),
    ]
    pool, chosen = state.pick_answer(Answer(picks=(1, 1, 3, 0)))
    assert [p.call.id for p in pool] == ["b", "c"]
    assert [p.call.id for p in chosen] == ["c", "b"]  # 3 is 1 modulo 2: dropped as a repeat
    assert state.pick_answer(Answer(again=True)) == ([], [])
    state.mark_answered(chosen)
    assert [p.call.id for p in state.answered] == ["c", "b"]
    assert [p.call.id for p in state.pending] == ["a"]


def test_texts_are_numbered_across_agents_and_a_rewind_goes_back_by_invocations() -> None:
    state = Interpreter(ScriptConfig())
    assert state.user_text(8) == "user 1 x"
    assert state.reply_text("agent", 0) == "model 1 "
    assert state.reply_text("a", 0) == "a says 2 "
    assert state.rewind_target(Rewind()) is None
    state.invocations = ["e-1", "e-2"]
    assert state.rewind_target(Rewind(back=1)) == "e-2"
    assert state.rewind_target(Rewind(back=9)) == "e-1"
