"""`python -m compaction_harness profile`: what compaction costs, per invocation.

The expectations below are worked out by hand from the token model (ADK's
character estimate, four characters a token) and from what the sliding
window does (``EventsCompactionConfig`` with ``compaction_interval`` and
``overlap_size``, ``_run_compaction_for_sliding_window``); none is timed.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from importlib import metadata
from importlib.util import find_spec
from pathlib import Path

import pytest

from compaction_harness.sdk.python.driver import run_script
from compaction_harness.spec.scripts import Calls, End, Open, Script, ScriptConfig, Text
from compaction_harness.store.fixtures import load_fixture
from compaction_harness.surfaces import profile as profile_module
from compaction_harness.surfaces.cli import main
from compaction_harness.surfaces.profile import (
    COLUMNS,
    CONFIGS,
    CostProfile,
    InvocationCost,
    ProfileError,
    profile_pipeline_case,
    profile_script,
    render_table,
    seeded_script,
    standard_costs,
)

REPROS = Path(__file__).parents[1] / "repros"
# Named explicitly: a campaign may add fixtures to tests/repros at any time.
SCRIPT_FIXTURE = REPROS / "P6-2.13.0-08ff11332ab3e1ae.json"
PIPELINE_FIXTURE = REPROS / "P3-2.13.0-7ffc4f1865632824.json"
UNIT_FIXTURE = REPROS / "U3-2.11.0-fa8ad53970ec0bb0.json"
ADK = metadata.version("google-adk")
# 2.11.0 and later put a summary in the prompt as its bare text; earlier
# releases wrap it (2.3.0: "summary#0" takes 8 tokens of the prompt, not 2).
bare_summaries = pytest.mark.skipif(
    tuple(int(x) for x in ADK.split(".")[:2]) < (2, 11),
    reason="prompt sizes worked out for releases that show a summary as its bare text",
)
HEADINGS = [
    "inv",
    "prompt_before",
    "prompt_after",
    "calls",
    "input",
    "summary",
    "total_calls",
    "total_input",
    "total_summary",
]


def four_invocations() -> Script:
    """Four invocations, each a 40-character user message and a 40-character
    model reply, with a sliding window every 2 invocations and an overlap of 1.

    By hand: the window compacts at the end of invocation 2 (invocations 1-2:
    4 events of 40 characters = 160 characters, 40 tokens given) and at the
    end of invocation 4 (2 new invocations; the overlap takes invocation 2
    again: 6 events, 240 characters, 60 tokens given). Each summary is
    ``summary#N``: 9 characters, 2 tokens. Invocations 1 and 3 compact
    nothing: 2 summariser calls in 4 invocations, 50 per 100.
    """
    ops = [op for _ in range(4) for op in (Open("user", 40), Text(40), End())]
    return Script(ScriptConfig(compaction_interval=2, overlap_size=1), tuple(ops))


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(err: str, *parts: str) -> None:
    assert err.count("\n") == 1 and err.startswith("error: "), err
    assert "Traceback" not in err
    for part in parts:
        assert part in err, (part, err)


# -- the computation, by hand ------------------------------------------------------------
def test_four_invocations_compact_where_the_sliding_window_says() -> None:
    profile = profile_script(four_invocations(), source="hand")
    rows = profile.rows
    assert [r.invocation for r in rows] == [1, 2, 3, 4]
    assert [r.summariser_calls for r in rows] == [0, 1, 0, 1]
    assert [r.summariser_input for r in rows] == [0, 40, 0, 60]
    assert [r.summary_tokens for r in rows] == [0, 2, 0, 2]
    assert [r.total_calls for r in rows] == [0, 1, 1, 2]
    assert [r.total_input for r in rows] == [0, 40, 40, 100]
    assert [r.total_summary for r in rows] == [0, 2, 2, 4]
    # Before any summary exists the prompt is the raw texts: 80 characters
    # after invocation 1, 160 after invocation 2 (before its compaction).
    assert [r.prompt_before for r in rows[:2]] == [20, 40]
    assert rows[0].prompt_after == 20  # nothing compacted
    assert all(r.runner_compaction for r in rows)
    assert profile.summariser_calls == 2
    assert profile.calls_per_100 == 50.0
    assert profile.stopped is None


@bare_summaries
def test_four_invocations_prompt_sizes_by_hand() -> None:
    rows = profile_script(four_invocations(), source="hand").rows
    assert [(r.prompt_before, r.prompt_after) for r in rows] == [
        (20, 20),  # 80 characters
        (40, 2),  # 160 characters, then "summary#0" alone: 9 characters
        (22, 22),  # summary#0 and invocation 3: 9 + 80 = 89 characters
        # Without summary#1: summary#0 and invocations 3-4, 9 + 160 = 169;
        # with it: summary#0 (invocations 1-2) and summary#1 (2-4), neither
        # range inside the other, 18 characters.
        (42, 4),
    ]
    # The median prompt after compaction over the last half (rows 3 and 4).
    assert profile_script(four_invocations(), source="hand").steady_state_prompt == 13


def test_system_instruction_and_tools_count_in_every_prompt() -> None:
    script = four_invocations()
    padded = Script(
        dataclasses.replace(script.config, system_chars=400, tools_chars=200), script.operations
    )
    plain = profile_script(script).rows
    rows = profile_script(padded).rows
    # 600 more characters in every prompt: 150 tokens (the sizes above are
    # whole multiples of 4 apart from the summaries' 9 characters, and
    # (600 + n) // 4 == 150 + n // 4 for every n).
    assert [r.prompt_before for r in rows] == [r.prompt_before + 150 for r in plain]
    assert [r.prompt_after for r in rows] == [r.prompt_after + 150 for r in plain]
    # What the summariser is given does not include them.
    assert [r.summariser_input for r in rows] == [r.summariser_input for r in plain]


def test_a_tool_process_that_dies_ends_without_the_runners_compaction() -> None:
    ops = (Open("user", 40), Calls(1, "plain", "later", 20), Open("user", 40), Text(40))
    rows = profile_script(Script(ScriptConfig(compaction_interval=1, overlap_size=0), ops)).rows
    assert [(r.invocation, r.runner_compaction) for r in rows] == [(1, False), (2, True)]
    assert rows[0].summariser_calls == 0 and rows[0].prompt_before == rows[0].prompt_after


def test_a_resumed_invocation_ends_again_under_its_own_number() -> None:
    fixture = load_fixture(SCRIPT_FIXTURE)  # an answer resumes invocation 1
    rows = profile_script(fixture.case).rows
    assert [r.invocation for r in rows] == [1, 1]


@pytest.mark.parametrize(
    "script",
    [
        load_fixture(SCRIPT_FIXTURE).case,
        load_fixture(REPROS / "P6-2.13.0-4903b430085182df.json").case,
        seeded_script(3, 12, "sliding"),
        seeded_script(3, 12, "token-small"),
    ],
    ids=["P6-08ff", "P6-4903", "seeded-sliding", "seeded-token-small"],
)
def test_the_profile_counts_the_summaries_the_judged_run_makes(script: Script) -> None:
    # The profile runs ADK without the checks; the checked run (triage off:
    # it never stops) must make exactly as many summariser calls.
    judged = run_script(script)
    profile = profile_script(script)
    assert profile.summariser_calls == len(judged.observed["summaries"])


def test_a_pipeline_fixture_profiles_each_recorded_invocation_end() -> None:
    fixture = load_fixture(PIPELINE_FIXTURE)
    profile = profile_pipeline_case(fixture.case, source="p3")
    assert len(profile.rows) == len(fixture.case.ends)
    assert profile.driver == "pipeline"
    assert profile.summariser_calls == len(fixture.observed["summaries"])


def test_an_exception_from_adk_cuts_the_profile_short(monkeypatch) -> None:
    from compaction_harness.sdk.python.adk import Pipeline

    ends = []
    original = Pipeline.end_invocation

    def breaks_at_the_third_end(self):
        ends.append(1)
        if len(ends) == 3:
            raise ValueError("No function call event found")
        return original(self)

    monkeypatch.setattr(Pipeline, "end_invocation", breaks_at_the_third_end)
    profile = profile_script(four_invocations())
    assert len(profile.rows) == 2
    assert profile.stopped is not None
    assert "ValueError" in profile.stopped and "operation 8 ('end')" in profile.stopped


# -- the seeded workload -----------------------------------------------------------------
def test_the_seeded_script_is_reproducible_and_plain() -> None:
    script = seeded_script(11, 20, "token-large")
    assert script == seeded_script(11, 20, "token-large")
    assert script != seeded_script(12, 20, "token-large")
    assert script.config == CONFIGS["token-large"]
    assert sum(isinstance(op, Open) for op in script.operations) == 20
    assert sum(isinstance(op, End) for op in script.operations) == 20
    assert {type(op) for op in script.operations} <= {Open, Calls, Text, End}
    assert all(
        op.fate == "now" and op.kind == "plain" for op in script.operations if isinstance(op, Calls)
    )
    with pytest.raises(KeyError):
        seeded_script(1, 5, "token-medium")
    with pytest.raises(ValueError):
        seeded_script(1, 0, "sliding")


def test_the_standard_configurations() -> None:
    assert set(CONFIGS) == {"sliding", "token-small", "token-large"}
    sliding = CONFIGS["sliding"]
    assert (sliding.compaction_interval, sliding.overlap_size, sliding.token_threshold) == (
        2,
        1,
        None,
    )
    small, large = CONFIGS["token-small"], CONFIGS["token-large"]
    assert (small.summary, large.summary) == ("tiny", "large")
    assert small.token_threshold == large.token_threshold == 2000
    # The sliding window they carry for releases that require one never fires
    # within a profile.
    assert small.compaction_interval > 1000 and large.compaction_interval > 1000


def test_standard_costs_reports_each_configuration() -> None:
    costs = standard_costs(invocations=10)
    assert (costs["adk_release"], costs["seed"], costs["invocations"]) == (ADK, 0, 10)
    assert list(costs["configurations"]) == list(CONFIGS)
    sliding = costs["configurations"]["sliding"]
    # A window every 2 invocations: 5 summariser calls in 10 invocations.
    assert sliding["summariser_calls"] == 5
    assert sliding["summariser_calls_per_100"] == 50.0
    for figures in costs["configurations"].values():
        assert "not_applicable" in figures or {
            "summariser_calls_per_100",
            "steady_state_prompt",
            "summariser_calls",
            "summariser_input",
            "summary_tokens",
            "peak_prompt_before",
            "seconds",
        } <= set(figures)


def test_standard_costs_refuses_another_release() -> None:
    with pytest.raises(ProfileError, match="run standard_costs in that release's environment"):
        standard_costs("1.0.0")


# -- output -------------------------------------------------------------------------------
def test_the_tables_columns_and_rows() -> None:
    profile = profile_script(four_invocations(), source="hand")
    lines = render_table(profile).splitlines()
    assert [heading for heading, _ in COLUMNS] == HEADINGS
    assert lines[3].split() == HEADINGS
    assert set(lines[4].replace(" ", "")) == {"-"}
    body = [line.split() for line in lines[5:9]]
    assert body == [[str(getattr(row, name)) for _, name in COLUMNS] for row in profile.rows]
    assert [cells[3] for cells in body] == ["0", "1", "0", "1"]  # the calls column
    widths = {len(line) for line in lines[3:9]}
    assert len(widths) == 1  # aligned: every row as wide as the heading
    assert "4 invocation ends, 2 summariser calls (50.0 per 100 invocation ends)" in lines[9]
    assert lines[2].startswith("tokens = ADK's character estimate / 4")


def test_the_json_shape() -> None:
    profile = profile_script(four_invocations(), source="hand")
    data = json.loads(json.dumps(profile.to_json()))
    assert set(data) == {
        "source",
        "adk_release",
        "driver",
        "config",
        "units",
        "invocations",
        "totals",
        "stopped",
    }
    assert data["adk_release"] == ADK and data["driver"] == "emulated"
    assert data["config"]["compaction_interval"] == 2
    fields = [f.name for f in dataclasses.fields(InvocationCost)]
    assert [list(row) for row in data["invocations"]] == [fields] * 4
    assert [row["summariser_calls"] for row in data["invocations"]] == [0, 1, 0, 1]
    assert data["totals"] == {
        "invocation_ends": 4,
        "summariser_calls": 2,
        "summariser_input": 100,
        "summary_tokens": 4,
        "summariser_calls_per_100": 50.0,
        "steady_state_prompt": profile.steady_state_prompt,
        "peak_prompt_before": max(r.prompt_before for r in profile.rows),
    }


def test_an_empty_profile_has_zero_totals() -> None:
    empty = CostProfile("nothing", ADK, "emulated", {}, ())
    assert empty.totals()["summariser_calls_per_100"] == 0.0
    assert empty.steady_state_prompt == 0
    assert "0 invocation ends" in render_table(empty)


# -- the command line -----------------------------------------------------------------
def test_profile_a_script_fixture(capsys) -> None:
    code, out, err = run(capsys, "profile", str(SCRIPT_FIXTURE))
    assert (code, err) == (0, "")
    assert out.splitlines()[3].split() == HEADINGS
    assert "(emulating driver)" in out.splitlines()[0]


def test_profile_a_pipeline_fixture_as_json(capsys) -> None:
    code, out, err = run(capsys, "profile", str(PIPELINE_FIXTURE), "--json")
    assert (code, err) == (0, "")
    data = json.loads(out)
    assert data["driver"] == "pipeline"
    assert len(data["invocations"]) == len(load_fixture(PIPELINE_FIXTURE).case.ends)


def test_profile_a_seeded_run(capsys) -> None:
    code, out, err = run(capsys, "profile", "--seed", "5", "--invocations", "6", "--json")
    assert (code, err) == (0, "")
    data = json.loads(out)
    assert len(data["invocations"]) == 6
    assert data["config"] == CONFIGS["sliding"].to_json()  # the default configuration
    assert data["source"] == "seed 5, 6 invocations, --config sliding"
    # The same seed gives the same profile.
    assert run(capsys, "profile", "--seed", "5", "--invocations", "6", "--json")[1] == out


def test_profile_a_seeded_run_on_your_own_configuration(capsys) -> None:
    """Any trigger values, as JSON: what an app's own EventsCompactionConfig has."""
    mine = '{"compaction_interval": 3, "overlap_size": 1, "token_threshold": 1500, ' + (
        '"event_retention_size": 4}'
    )
    code, out, err = run(capsys, "profile", "--seed", "5", "--invocations", "6", "--config", mine)
    assert (code, err) == (0, ""), err
    assert "compaction_interval=3, overlap_size=1, token_threshold=1500" in out
    code, out, _ = run(capsys, "profile", "--seed", "5", "--invocations", "6", "--json")
    assert json.loads(out)["config"]["compaction_interval"] == 2  # not the default's


def test_profile_standard(capsys, monkeypatch) -> None:
    monkeypatch.setattr(profile_module, "STANDARD_INVOCATIONS", 6)  # the gate's time
    code, out, err = run(capsys, "profile", "--standard", "--json")
    assert (code, err) == (0, "")
    costs = json.loads(out)
    assert costs["invocations"] == 6
    assert costs["configurations"]["sliding"]["summariser_calls_per_100"] == 50.0
    code, out, err = run(capsys, "profile", "--standard")
    assert (code, err) == (0, "")
    assert [line.split()[0] for line in out.splitlines()[3:]] == list(CONFIGS)


def test_profile_help_states_the_units(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["profile", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "four characters a token" in out
    assert "tokens of the harness's token model" in out


BAD_ARGUMENTS = {
    "unknown-config": (["--seed", "1", "--config", "token-medium"], "--config 'token-medium'"),
    "config-field": (["--seed", "1", "--config", '{"interval": 3}'], "unknown field 'interval'"),
    "config-no-trigger": (["--seed", "1", "--config", '{"summary": "tiny"}'], "no trigger"),
    "no-workload": ([], "one workload"),
    "fixture-and-seed": ([str(SCRIPT_FIXTURE), "--seed", "1"], "one workload"),
    "config-with-fixture": ([str(SCRIPT_FIXTURE), "--config", "sliding"], "shape a --seed run"),
    "zero-invocations": (["--seed", "1", "--invocations", "0"], "--invocations '0'"),
    "too-many-invocations": (["--seed", "1", "--invocations", "301"], "from 1 to 300"),
    "negative-seed": (["--seed", "-3"], "--seed '-3'"),
    "word-seed": (["--seed", "seven"], "--seed 'seven'"),
    "standard-with-plot": (["--standard", "--plot", "x.png"], "--standard"),
    "missing-fixture": (["tests/repros/no-such-fixture.json"], "no-such-fixture.json"),
    "unit-fixture": ([str(UNIT_FIXTURE)], "profile takes script and pipeline fixtures"),
}


@pytest.mark.parametrize(("argv", "part"), BAD_ARGUMENTS.values(), ids=BAD_ARGUMENTS.keys())
def test_bad_input_is_one_line_and_exit_2(capsys, argv: list[str], part: str) -> None:
    code, out, err = run(capsys, "profile", *argv)
    assert (code, out) == (2, "")
    one_line_error(err, part)


@pytest.mark.parametrize(
    ("content", "part"),
    [
        (b'{"schema_version": 2, "kind": ', "invalid JSON"),
        (None, "unknown operation 'jump'"),
    ],
    ids=["invalid-json", "unknown-operation"],
)
def test_a_malformed_fixture_is_one_line_and_exit_2(capsys, tmp_path, content, part) -> None:
    if content is None:  # a script fixture with one operation broken
        data = json.loads(SCRIPT_FIXTURE.read_text())
        data["call"]["operations"][0]["op"] = "jump"
        content = json.dumps(data).encode()
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    code, out, err = run(capsys, "profile", str(path))
    assert (code, out) == (2, "")
    one_line_error(err, str(path), part)


def test_adk_raising_prints_the_table_so_far_and_exits_1(capsys, monkeypatch) -> None:
    from compaction_harness.sdk.python.adk import Pipeline

    def raises(self):
        raise ValueError("No function call event found")

    monkeypatch.setattr(Pipeline, "end_invocation", raises)
    code, out, err = run(capsys, "profile", "--seed", "1", "--invocations", "3")
    assert code == 1
    assert out.splitlines()[3].split() == HEADINGS
    one_line_error(err, "profile cut short", "ValueError")


def test_a_release_without_compaction_is_one_line_and_exit_2(tmp_path) -> None:
    # google.adk.apps.compaction arrived in 1.16.0: hide it, as an older
    # release lacks it, in a fresh interpreter.
    program = (
        "import sys\n"
        "class Hide:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'google.adk.apps.compaction':\n"
        "            raise ModuleNotFoundError(\"No module named 'google.adk.apps.compaction'\")\n"
        "sys.meta_path.insert(0, Hide())\n"
        "from compaction_harness.surfaces.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program, "profile", "--seed", "1", "--invocations", "2"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert (done.returncode, done.stdout) == (2, "")
    one_line_error(done.stderr, "has no event compaction", "1.16.0")


def test_a_configuration_the_release_refuses_is_one_line_and_exit_2(
    capsys, tmp_path, monkeypatch
) -> None:
    from compaction_harness.sdk.python import adk

    def refuses(self, **kwargs):
        raise adk.NotApplicable(f"google-adk {adk.ADK_RELEASE} has no EventsCompactionConfig.x")

    monkeypatch.setattr(adk.Pipeline, "__init__", refuses)
    code, out, err = run(capsys, "profile", str(SCRIPT_FIXTURE))
    assert (code, out) == (2, "")
    one_line_error(err, "has no EventsCompactionConfig.x")


# -- the plot -----------------------------------------------------------------------------
@pytest.mark.skipif(find_spec("matplotlib") is None, reason="matplotlib (the report extra)")
def test_plot_writes_a_png(capsys, tmp_path) -> None:
    path = tmp_path / "profile.png"
    code, out, err = run(
        capsys,
        "profile",
        "--seed",
        "2",
        "--invocations",
        "8",
        "--config",
        "token-small",
        "--plot",
        str(path),
    )
    assert (code, err) == (0, "")
    assert out.splitlines()[-1] == f"plot: {path}"
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert path.stat().st_size > 10_000  # two panels with axes and lines, not an empty canvas


def test_plot_without_matplotlib_names_the_extra(capsys, tmp_path, monkeypatch) -> None:
    # Absent or hidden, the answer is the same: one line, exit 2, no run.
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    code, out, err = run(capsys, "profile", "--seed", "1", "--plot", str(tmp_path / "p.png"))
    assert (code, out) == (2, "")
    one_line_error(err, "matplotlib", "`report` extra")
    assert not (tmp_path / "p.png").exists()


def test_plot_into_a_missing_folder_is_one_line(capsys, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(profile_module, "_pyplot", lambda: None)
    code, out, err = run(capsys, "profile", "--seed", "1", "--plot", str(tmp_path / "no" / "p.png"))
    assert (code, out) == (2, "")
    one_line_error(err, "no folder")
