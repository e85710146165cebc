"""P8's checker on hand-made tool runs, the tool-run record, and the mixed turn's
script form (what ``Calls(kind="mixed")`` calls)."""

from __future__ import annotations

import pytest

from compaction_harness.spec.invariants import APPLIES_TO, INVARIANTS, PIPELINE_INVARIANTS
from compaction_harness.spec.model import ModelError
from compaction_harness.spec.scripts import Calls, Script
from compaction_harness.spec.tool_runs import ToolRun, check_tool_runs, runs_per_call


def run(ended: str, op: int = 1, call: str = "c0", event: str = "e1", tool: str = "lookup"):
    return ToolRun(call, event, tool, ended, op)


def test_p8_is_a_pipeline_invariant_of_the_registry() -> None:
    assert "P8" in PIPELINE_INVARIANTS and APPLIES_TO["P8"] == "pipeline"
    assert "tool_runs" in INVARIANTS["P8"]


@pytest.mark.parametrize(
    "endings",
    [
        ["returned"],
        ["died"],
        ["asked", "returned"],  # a credential, then the run with it
        ["died", "returned"],  # the process died; the resumed invocation ran it
        ["asked", "asked", "returned"],
    ],
)
def test_a_rerun_after_a_run_that_did_not_finish_the_call_holds(endings: list[str]) -> None:
    assert check_tool_runs([run(e, op) for op, e in enumerate(endings)]) == []


@pytest.mark.parametrize(
    ("endings", "extra"),
    [
        (["returned", "returned"], [1]),
        (["returned", "died"], [1]),
        (["asked", "returned", "returned"], [2]),
        (["returned", "asked", "returned"], [1, 2]),
    ],
)
def test_a_run_after_a_run_that_returned_breaks_p8(endings: list[str], extra: list[int]) -> None:
    found = check_tool_runs([run(e, op) for op, e in enumerate(endings)], {"e1": 4})
    assert [v.invariant for v in found] == ["P8"] * len(extra)
    assert [v.details["op"] for v in found] == extra
    assert all(v.ids == ("c0",) and v.positions == (4,) for v in found)
    assert found[0].observed == endings
    assert "ran again for call 'c0'" in found[0].message


def test_calls_are_told_apart_by_id_and_by_the_event_that_made_them() -> None:
    # Ids numbered per turn: call_0 of two model events is two calls, each run once.
    runs = [run("returned", 1, "call_0", "e1"), run("returned", 4, "call_0", "e5")]
    assert check_tool_runs(runs) == []
    assert [len(g) for g in runs_per_call(runs).values()] == [1, 1]
    runs = [run("returned", 1, "c0"), run("returned", 1, "c1"), run("returned", 3, "c1")]
    assert [v.ids for v in check_tool_runs(runs)] == [("c1",)]


def test_a_tool_run_round_trips_through_json_and_is_read_strictly() -> None:
    one = run("asked", 3, tool="calendar")
    assert ToolRun.from_json(one.to_json()) == one
    with pytest.raises(ModelError, match="ended"):
        ToolRun.from_json({**one.to_json(), "ended": "twice"})
    with pytest.raises(ModelError, match="unknown field"):
        ToolRun.from_json({**one.to_json(), "count": 2})
    with pytest.raises(ModelError, match="op"):
        ToolRun.from_json({**one.to_json(), "op": "3"})


def test_a_mixed_turn_calls_a_plain_tool_first_then_long_running_ones() -> None:
    assert Calls(kind="mixed", count=3).tool_kinds() == ("plain", "long_running", "long_running")
    assert Calls(kind="mixed", count=1).tool_kinds() == ("plain",)  # shrunk: a plain call
    assert Calls(kind="interim", count=2).tool_kinds() == ("long_running",) * 2
    assert Calls(count=2).tool_kinds() == ("plain", "plain")
    data = {
        "config": {"compaction_interval": 1, "overlap_size": 0},
        "operations": [{"op": "open"}, {"op": "calls", "count": 2, "kind": "mixed"}],
    }
    script = Script.from_json(data)
    assert script.operations[1] == Calls(count=2, kind="mixed")
    assert Script.from_json(script.to_json()) == script
    with pytest.raises(ModelError, match="'mixed'"):
        Script.from_json({**data, "operations": [{"op": "calls", "kind": "both"}]})
