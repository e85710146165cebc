"""The fixes of ADK-JS's known faults (``sdks/adk-js/fixes/``, ``sdk/js/js_fixes.py``).

Each fix is a unified diff against ``@google/adk``'s ``dist/esm/`` as npm
ships it, applied by the harness to a copy of the package that the Node
driver then imports. These tests show, per fix, that its diff applies to
the installed package, that every fixture recorded for its fault
(``known_fault`` in ``tests/repros/``) is classified by that fix on ADK-JS
as published (the replay names the fix as its evidence), and that its
violations vanish with the fix applied (a second fault the fixture shows
may stay until that fault's fix).
"""

from __future__ import annotations

import itertools
import json
import re
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from compaction_harness.faults.classify import same_failure
from compaction_harness.sdk.js import adk_js, backlog, checks, js_fixes, node, trigger
from compaction_harness.sdk.js import run as js_run
from compaction_harness.spec.model import Session
from compaction_harness.store.fixtures import load_fixture
from compaction_harness.surfaces.verdicts import judge_fixture

REPROS = Path(__file__).parents[2] / "repros"
JS_FIXTURES = sorted(REPROS.glob("*-adk-js-*.json"))


def _known_fault(path: Path) -> str | None:
    return json.loads(path.read_text(encoding="utf-8")).get("known_fault")


def _fixtures_of(fault_id: str) -> list[Path]:
    return [p for p in JS_FIXTURES if _known_fault(p) == fault_id]


FAULT_FIXTURES = [
    pytest.param(name, path, id=f"{name}:{path.stem}")
    for name, fix in js_fixes.js_fixes().items()
    for fault_id in fix.faults
    for path in _fixtures_of(fault_id)
]


def _run_with_every_fix(name: str, without: tuple[str, ...] = ()) -> adk_js.JsRun:
    """The ADK-JS run of the fixture ``tests/repros/NAME`` with every fix
    applied, but those named in ``without``."""
    fixture = load_fixture(REPROS / name)
    fixes = tuple(n for n in js_fixes.js_fixes() if n not in without)
    return adk_js.run_script(fixture.case.script, fixture.case.compactor, fixes=fixes)


def _close_by_id_alone(monkeypatch) -> None:
    """Make P3's bound reach back from a kept answer by its id alone, as the
    definitions close obligations, not also by its id and tool name."""
    closed_by = backlog._calls_closed_by
    monkeypatch.setattr(
        backlog, "_calls_closed_by", lambda steps, at, i, name=None: closed_by(steps, at, i)
    )


#: Without it, summaries hide by time, and calls-retained-with-their-answers
#: keeps a prefix and compacts nothing around the calls that wait: the regime
#: where some of P3's and P4's rules show (with it, ADK-JS summarises those
#: shapes away before the rules are needed).
BY_TIME = ("summaries-hide-what-they-were-given",)
#: The latest-response rearrangement as published: it drops what lies between
#: the newest response's call and it (the regime where P4's baselines show).
DROPS_BETWEEN = ("answers-between-a-call-and-its-latest-answer-kept",)


@pytest.fixture(autouse=True)
def _published(monkeypatch):
    monkeypatch.delenv("HARNESS_FIXES", raising=False)
    monkeypatch.delenv("HARNESS_KNOWN_FAULTS", raising=False)


@pytest.mark.parametrize("name", list(js_fixes.js_fixes()))
def test_the_diff_applies_to_the_installed_package(name):
    entry = js_fixes.patched_package((name,))
    assert entry is not None and entry.is_file()
    assert js_fixes.fix_named(name).diff_text().startswith("--- a/dist/esm/")


@pytest.mark.parametrize("name", list(js_fixes.js_fixes()))
def test_every_fix_has_fixtures_of_its_faults(name):
    for fault_id in js_fixes.fix_named(name).faults:
        if _fixtures_of(fault_id):
            continue
        # A fault shown only beside another one (``also_shows``): the
        # fixture's classification must name it by this fix.
        beside = [p for p in JS_FIXTURES if fault_id in load_fixture(p).also_shows]
        assert beside, f"{fault_id} has no fixture"
        for path in beside:
            verdict = judge_fixture(load_fixture(path)).verdict
            evidence = [v.details.get("evidence", "") for v, f in verdict.known if f == fault_id]
            assert any(name in e.removeprefix("fix ").split("+") for e in evidence), evidence


@pytest.mark.parametrize(("name", "path"), FAULT_FIXTURES)
def test_the_faults_fixture_is_classified_by_its_fix_and_holds_with_it(name, path, monkeypatch):
    fixture = load_fixture(path)
    verdict = judge_fixture(fixture)
    assert verdict.label == "XFAIL", verdict.reason
    # "fault (fix A+B)": every fix that removes a violation alone is named
    groups = re.findall(r"\(fix ([^)]*)\)", verdict.reason)
    named = {n for group in groups for n in group.split("+")}
    assert name in named, verdict.reason
    mine = [v for v, fault in verdict.verdict.known if fault == _known_fault(path)]
    assert mine
    monkeypatch.setenv("HARNESS_FIXES", name)
    assert node.active_fixes() == (name,)
    fixed = judge_fixture(fixture).verdict
    left = [*fixed.new, *(v for v, _ in fixed.known)]
    # The fault's own violations vanish; what a second fault shows may stay.
    assert not [v for v in mine if any(same_failure(v, w) for w in left)], fixed.faults


def test_an_unknown_fix_name_is_one_line():
    with pytest.raises(js_fixes.JsFixError, match="no ADK-JS fix named 'nope'"):
        js_fixes.patched_package(("nope",))


def test_a_diff_that_does_not_apply_is_one_line(monkeypatch, tmp_path):
    index = tmp_path / "index.json"
    (tmp_path / "bad.diff").write_text(
        "--- a/dist/esm/context/compaction_utils.js\n+++ b/dist/esm/context/compaction_utils.js\n"
        "@@ -1,1 +1,1 @@\n-no such line\n+another\n",
        encoding="utf-8",
    )
    index.write_text(
        json.dumps({"bad": {"faults": ["js-x"], "summary": "s", "diff": "bad.diff"}}),
        encoding="utf-8",
    )
    monkeypatch.setattr(js_fixes, "INDEX", index)
    js_fixes.js_fixes.cache_clear()
    try:
        with pytest.raises(js_fixes.JsFixError, match="the ADK-JS fix bad does not apply"):
            js_fixes.patched_package(("bad",))
    finally:
        js_fixes.js_fixes.cache_clear()


def test_all_fixes_apply_together_and_the_copy_imports():
    """FIXES=all: every fix, in the index's order (a fix that meets an
    earlier one on a line by its variant), and Node imports the copy."""
    every = tuple(js_fixes.js_fixes())
    entry = js_fixes.patched_package(every)
    assert entry is not None and entry.is_file()
    # the names' order does not matter: the copy is the index's order's
    assert js_fixes.patched_package(tuple(reversed(every))) == entry
    done = subprocess.run(
        [
            adk_js.node_path(),
            "--input-type=module",
            "-e",
            f"const m = await import({json.dumps(entry.as_uri())});"
            " console.log(typeof m.AnchoredContextCompactor, typeof m.LlmSummarizer);",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["function", "function"]


@pytest.mark.parametrize("name", list(js_fixes.js_fixes()))
def test_every_fix_applies_after_all_the_others(name):
    others = tuple(n for n in js_fixes.js_fixes() if n != name)
    assert js_fixes.patched_package(others) is not None
    assert js_fixes.patched_package((*others, name)) is not None


def _fake_package(tmp_path, monkeypatch, diffs, index):
    package = tmp_path / "package"
    (package / "dist" / "esm").mkdir(parents=True)
    (package / "package.json").write_text('{"version": "0.0.0"}', encoding="utf-8")
    (package / "dist" / "esm" / "index.js").write_text("export {};\n", encoding="utf-8")
    (package / "dist" / "esm" / "x.js").write_text("a\nb\nc\n", encoding="utf-8")
    (package / "dist" / "esm" / "y.js").write_text("p\nq\n", encoding="utf-8")
    fixes = tmp_path / "fixes"
    fixes.mkdir()
    for file_name, text in diffs.items():
        (fixes / file_name).write_text(text, encoding="utf-8")
    (fixes / "index.json").write_text(json.dumps(index), encoding="utf-8")
    monkeypatch.setattr(js_fixes, "PACKAGE_DIR", package)
    monkeypatch.setattr(js_fixes, "INDEX", fixes / "index.json")
    monkeypatch.setattr(js_fixes, "PATCHED", tmp_path / "patched")
    js_fixes.js_fixes.cache_clear()


def test_a_variant_is_applied_only_where_the_fix_s_own_diff_does_not_apply(tmp_path, monkeypatch):
    def hunk(path, before, old, new, after):
        return (
            f"--- a/dist/esm/{path}\n+++ b/dist/esm/{path}\n@@ -1,3 +1,3 @@\n"
            f" {before}\n-{old}\n+{new}\n {after}\n"
        )

    def head(path, old, new, after):
        return (
            f"--- a/dist/esm/{path}\n+++ b/dist/esm/{path}\n@@ -1,2 +1,2 @@\n"
            f"-{old}\n+{new}\n {after}\n"
        )

    diffs = {
        "first.diff": hunk("x.js", "a", "b", "B", "c"),
        # second changes the line first changes: alone by its own diff, after
        # first by its variant (written against the package with first applied)
        "second.diff": hunk("x.js", "a", "b", "b2", "c") + head("y.js", "p", "p2", "q"),
        # the variant's y.js section applies too, but the fix's own does: not used
        "second.after-first.diff": hunk("x.js", "a", "B", "B+b2", "c")
        + head("y.js", "p", "VARIANT", "q"),
        "third.diff": hunk("x.js", "a", "no such line", "z", "c"),
    }
    index = {
        "first": {"faults": ["js-1"], "summary": "s", "diff": "first.diff"},
        "second": {
            "faults": ["js-2"],
            "summary": "s",
            "diff": "second.diff",
            "variants": ["second.after-first.diff"],
        },
        "third": {"faults": ["js-3"], "summary": "s", "diff": "third.diff"},
    }
    _fake_package(tmp_path, monkeypatch, diffs, index)
    try:

        def copy(*names):
            esm = js_fixes.patched_package(names).parent
            return (esm / "x.js").read_text(), (esm / "y.js").read_text()

        assert copy("second") == ("a\nb2\nc\n", "p2\nq\n")
        assert copy("first") == ("a\nB\nc\n", "p\nq\n")
        assert copy("first", "second") == ("a\nB+b2\nc\n", "p2\nq\n")
        # applied in the index's order, whatever the order of the names
        assert copy("second", "first") == ("a\nB+b2\nc\n", "p2\nq\n")
        with pytest.raises(js_fixes.JsFixError, match=r"^the ADK-JS fix third does not apply"):
            js_fixes.patched_package(("first", "third"))
    finally:
        js_fixes.js_fixes.cache_clear()


def test_a_variant_that_is_not_there_is_one_line(tmp_path, monkeypatch):
    index = {
        "first": {
            "faults": ["js-1"],
            "summary": "s",
            "diff": "first.diff",
            "variants": ["missing.diff"],
        }
    }
    _fake_package(tmp_path, monkeypatch, {"first.diff": ""}, index)
    try:
        with pytest.raises(js_fixes.JsFixError, match=r"names missing\.diff, which is not there"):
            js_fixes.js_fixes()
    finally:
        js_fixes.js_fixes.cache_clear()


def test_a_reused_id_orphan_the_fixed_prompt_builder_prunes_is_not_lost():
    # Call ids numbered per turn: call_0 is answered, summarised, then called
    # again and never answered (its tool died). Without compaction, getContents
    # pairs the first call_0's response with the second call_0, so the
    # baseline shows it; with the summary, the fixed getContents prunes it as
    # the orphan it is (unanswered-calls-left-out-of-the-request, as
    # adk-python's drop_orphaned_function_calls does). That is the pruning
    # working, not a loss: P4 exempts it under that fix, as it does for
    # google-adk (found by make fuzz SDK=js FIXES=all,
    # P4-adk-js-2.0.0-9cc875150c4b6eb4).
    from compaction_harness.spec.scripts import Calls, Open, Script, ScriptConfig, Text

    script = Script(
        ScriptConfig(
            compaction_interval=None,
            overlap_size=None,
            token_threshold=50,
            event_retention_size=0,
            call_ids="per_turn",
        ),
        (Open(), Calls(), Text(), Calls(fate="later"), Open(), Text()),
    )
    compactor = adk_js.JsCompactor("token_based", {"tokenThreshold": 50, "eventRetentionSize": 0})
    every = tuple(js_fixes.js_fixes())
    assert adk_js.check_run(adk_js.run_script(script, compactor, fixes=every)) == []
    # With every fix the baseline pairs each call with its own response, so it
    # prunes the orphan too (P4 tells calls apart by their events). Pairing by
    # id, as ADK-JS does without responses-follow-only-their-own-call-event,
    # the baseline shows the orphan: there, without the pruning fix's
    # exemption, the same run is judged P4: the exemption, not the run, is
    # what changed.
    paired_by_id = tuple(f for f in every if f != "responses-follow-only-their-own-call-event")
    run = adk_js.run_script(script, compactor, fixes=paired_by_id)
    assert adk_js.check_run(run) == []
    object.__setattr__(
        run, "fixes", tuple(f for f in paired_by_id if f != checks.PRUNES_ORPHANED_CALLS)
    )
    assert [v.invariant for v in adk_js.check_run(run)] == ["P4"]


def test_p6_allows_one_summary_per_branch_at_a_model_call_and_fires_on_two_of_one():
    # With the branch fix, a fan-out's replies are summarised on their own
    # branches at one model call: two summaries, one per branch, is one
    # compaction (P5 keeps sibling branches apart). Two summaries on the same
    # branch at one call (a deliberately broken compactor's output: the second
    # summary's branch rewritten to the first's) is wasted work, P6.
    from compaction_harness.spec.scripts import FanOut, Open, Script, ScriptConfig, Text

    script = Script(
        ScriptConfig(
            compaction_interval=None, overlap_size=None, token_threshold=1, event_retention_size=0
        ),
        (Open(), FanOut(), Text(), Text()),
    )
    compactor = adk_js.JsCompactor("token_based", {"tokenThreshold": 1, "eventRetentionSize": 0})
    run = adk_js.run_script(script, compactor, fixes=tuple(js_fixes.js_fixes()))
    made = [call["summaries"] for call in run.calls]
    per_branch = next(summaries for summaries in made if len(summaries) == 2)
    assert sorted(js_run.summary_branch(run, m) for m in per_branch) == ["team.a", "team.b"]
    assert adk_js.check_run(run) == []
    first, second = (run.events[m["event"]] for m in per_branch)
    second["branch"] = first["branch"]
    fired = [v for v in adk_js.check_run(run) if v.invariant == "P6"]
    assert fired and "at most once per branch" in fired[0].message, fired


def test_compaction_continues_around_a_waiting_call_where_summaries_hide_what_they_were_given():
    # A long-running call that waits does not shield the turns after it (P3,
    # DESIGN.md). calls-retained-with-their-answers keeps the waiting call out
    # of every summary; where summaries hide exactly what they were given
    # (summaries-hide-what-they-were-given) it summarises the turns after the
    # call around it, and compaction goes on. Without that fix a summary hides
    # every event stamped up to its end, the waiting call with it, so the
    # retained events start at the call and every later model call makes no
    # summary: the stall P3 reports (found by make fuzz SDK=js FIXES=all,
    # tests/repros/P3-adk-js-2.0.0-0b4a0145620ebc20.json).
    from compaction_harness.spec.scripts import Calls, Open, Script, ScriptConfig, Text

    turns = tuple(op for _ in range(4) for op in (Open(), Text()))
    script = Script(
        ScriptConfig(
            compaction_interval=None, overlap_size=None, token_threshold=1, event_retention_size=1
        ),
        (Open(), Text(), Calls(kind="long_running"), *turns),
    )
    compactor = adk_js.JsCompactor("token_based", {"tokenThreshold": 1, "eventRetentionSize": 1})
    retained = ("calls-retained-with-their-answers", "running-request-kept-in-contents")
    stalled = adk_js.run_script(script, compactor, fixes=retained)
    assert [len(call["summaries"]) for call in stalled.calls] == [0, 1, 1, 0, 0, 0]
    assert {v.invariant for v in adk_js.check_run(stalled)} == {"P3"}
    around = adk_js.run_script(
        script, compactor, fixes=(*retained, "summaries-hide-what-they-were-given")
    )
    assert [len(call["summaries"]) for call in around.calls] == [0, 1, 1, 1, 1, 1]
    (waiting,) = checks.waiting_call_ids(around.stored)
    given = {p for _, positions, _ in around.summaries() for p in positions}
    (held,) = [k for k, step in enumerate(around.stored) if waiting in {c.id for c in step.calls}]
    assert held not in given
    assert adk_js.check_run(around) == []


def test_p3_allows_the_waiting_call_itself_and_nothing_after_it():
    # backlog_bound, worked by hand (eventRetentionSize 0): a waiting
    # long-running call is not compacted, so it is allowed; a call answered
    # inside the backlog is not waiting and earns nothing.
    from compaction_harness.spec.model import Call, Response, Step

    compactor = adk_js.JsCompactor("token_based", {"tokenThreshold": 1, "eventRetentionSize": 0})
    waits = Step("i1", "agent", 1.0, calls=(Call("w", "export"),), long_running=("w",))
    text = Step("i1", "agent", 2.0, text="model 1")
    answer = Step("i2", "user", 3.0, responses=(Response("w", "export"),))
    assert backlog.backlog_bound(compactor, [waits, text]) == 2  # 0 + the step back's 1 + w
    assert backlog.backlog_bound(compactor, [waits, text, answer]) == 1
    assert backlog.backlog_bound(compactor, [text, text]) == 1


def test_p3_counts_the_backlog_an_agent_sees_and_fires_on_its_own_events_left_out():
    # Found by make fuzz SDK=js FIXES=all (tests/repros/P3-adk-js-2.0.0-6f40a36788e41cb5.json):
    # at sub-agent a's model call a's compactor summarises the root's events
    # and a's own, never b's (P5); b's events are not a's backlog. A summary
    # and a root summary that each leave their newest event out (a
    # deliberately broken record of what they were given) leave two events a
    # sees, where retention 0 allows one: a stall of a's compaction, P3.
    fixture = load_fixture(REPROS / "P3-adk-js-2.0.0-6f40a36788e41cb5.json")
    run = adk_js.run_script(
        fixture.case.script, fixture.case.compactor, fixes=tuple(js_fixes.js_fixes())
    )
    assert adk_js.check_run(run) == []
    k, call = next((k, c) for k, c in enumerate(run.calls) if len(c["summaries"]) == 2)
    assert call["branch"] == "team.a"
    for made in call["summaries"]:
        made["input"] = made["input"][:-1]
    fired = [v for v in adk_js.check_run(run) if v.invariant == "P3"]
    assert fired and fired[0].details["model_call"] == k
    assert all(run.stored[p].branch in (None, "team.a") for p in fired[0].positions)


def test_p3_stall_form_reads_no_count_from_before_the_latest_summary_and_fires_on_a_fresh_one():
    # Found by make fuzz SDK=js FIXES=all (tests/repros/P3-adk-js-2.0.0-0356f55f2d97a163.json):
    # the retained call's count (55) measured a prompt the scratchpad has
    # since compacted; the next reply carries none, so the fixed trigger
    # estimates and stays quiet. A stale count obliges no summary. Given a
    # fresh count over the threshold on that reply (a deliberately altered
    # record), the same backlog is a stall: P3 fires.
    fixture = load_fixture(REPROS / "P3-adk-js-2.0.0-0356f55f2d97a163.json")
    run = adk_js.run_script(
        fixture.case.script, fixture.case.compactor, fixes=tuple(js_fixes.js_fixes())
    )
    assert adk_js.check_run(run) == []
    steps = list(run.stored.steps)
    latest = max(p for p, s in enumerate(steps) if s.compaction is not None)
    fresh = next(
        p for p, s in enumerate(steps) if p > latest and s.text and s.prompt_tokens is None
    )
    steps[fresh] = replace(steps[fresh], prompt_tokens=83)
    object.__setattr__(run, "stored", Session(tuple(steps)))
    fired = [v for v in adk_js.check_run(run) if v.details.get("cause") == "stall"]
    assert fired and "newest prompt count 83" in fired[0].message


@pytest.mark.parametrize(
    "name",
    [
        # a scratchpad and the reply it retained in one millisecond: a stale
        # count read as fresh (P6)
        "P6-adk-js-2.0.0-2844770e12e59c74",
        # a clock stepped back between two replies: a fresh count read as
        # stale, and no summary (P3)
        "P3-adk-js-2.0.0-c2c2f159d625db80",
    ],
)
def test_the_anchored_trigger_tells_a_stale_count_by_identity_not_by_timestamp(name):
    # Found by make fuzz SDK=js FIXES=all: anchored-trigger-reads-the-newest-
    # prompt-count took a count for fresh when the event was stamped no
    # earlier than the scratchpad, which a tie or a clock step gets wrong.
    # Each new scratchpad now records the raw events it left active
    # (retainedEventIds); their counts are stale, every later one is fresh.
    run = _run_with_every_fix(f"{name}.json")
    assert adk_js.check_run(run) == []


def test_a_call_gets_the_newest_response_with_its_id_and_tool_not_its_id_alone():
    # Found by make fuzz SDK=js FIXES=all (tests/repros/P2-adk-js-2.0.0-5324cb612c87f5ff.json):
    # ids numbered per turn; export's long-running call_0 has its interim
    # result, transfer's call_0 is answered later. Mapped by id alone, export's
    # call took transfer's answer, which the fix then filtered out, and went to
    # a strict provider unanswered (P2). Keyed by id and tool, each call keeps
    # its own answer.
    run = _run_with_every_fix("P2-adk-js-2.0.0-5324cb612c87f5ff.json")
    assert adk_js.check_run(run) == []
    last = run.calls[-1]["contents"]
    answered = [(p[1], p[2]) for _, parts in last for p in parts if p[0] == "response"]
    assert answered == [("call_0", "export"), ("call_0", "transfer")]


def test_a_summary_rolling_up_a_client_record_keeps_hiding_what_the_record_stood_for():
    # Found by make fuzz SDK=js FIXES=all (tests/repros/P6-adk-js-2.0.0-305888e8c098bb42.json):
    # a client's compaction record (no ids: it stands for everything stamped
    # up to its endTime) seeds the next summary. Claiming only the record and
    # its new events, that summary made what earlier summaries covered active
    # again, and it was summarised twice (P6). The summary now carries the
    # record's endTime as coveredUntil.
    run = _run_with_every_fix("P6-adk-js-2.0.0-305888e8c098bb42.json")
    assert adk_js.check_run(run) == []
    # No raw event is given to two summaries (the seeds aside).
    given = [set(summary[1]) for summary in run.summaries()]
    assert len(given) >= 4
    assert all(not (a & b) for k, a in enumerate(given) for b in given[k + 1 :])


def test_p6_counts_no_summary_before_a_client_record_as_covering(monkeypatch):
    # Found by make fuzz SDK=js FIXES=all (tests/repros/P6-adk-js-2.0.0-cc64489a353da3cd.json):
    # the message is summarised, then a client's record (stamped 10 s early)
    # becomes the latest compacted event and stands for its own range only, so
    # the message is in view again and the next summary takes it: no waste.
    run = _run_with_every_fix("P6-adk-js-2.0.0-cc64489a353da3cd.json")
    assert adk_js.check_run(run) == []
    # Read as if no record stood in between, the same second summary is waste.
    for module in (checks, trigger):  # the checkers that read the records
        monkeypatch.setattr(module, "foreign_records", lambda run, length=None: [])
    wasted = [v for v in adk_js.check_run(run) if v.invariant == "P6"]
    assert [v.message.split()[0] for v in wasted] == ["summary#1"]


def test_a_summarised_call_is_found_for_its_live_answer_by_id_and_tool():
    # Found by make fuzz SDK=js FIXES=all (tests/repros/P4-adk-js-2.0.0-4989ecf73c6ca939.json):
    # ids numbered per turn; export's call_0 is summarised, lookup's call_0
    # is in view, then export's final answer arrives. Found by id alone, the
    # call in view took the answer and nothing was restored (P4). Paired by id
    # and tool (compaction too, since P4-adk-js-e24187cf), the answer is
    # export's: the next summary rolls it up with the summary that holds
    # export's call, and lookup's call is never shown with it.
    run = _run_with_every_fix("P4-adk-js-2.0.0-4989ecf73c6ca939.json")
    assert adk_js.check_run(run) == []
    export_call, export_answer = 2, 6  # stored positions (see `show` of the fixture)
    summaries = run.summaries()
    holding_call = [k for k, (_, given, _) in enumerate(summaries) if export_call in given]
    holding_answer = [k for k, (_, given, seeds) in enumerate(summaries) if export_answer in given]
    assert holding_call and holding_answer
    (later,) = holding_answer
    assert set(holding_call) <= set(summaries[later][2])  # rolls up the call's summary
    for call in run.calls:
        contents = call["contents"]
        for (_, parts), (_, after) in itertools.pairwise(contents):
            called = {(p[1], p[2]) for p in parts if p[0] == "call"}
            answered = {(p[1], p[2]) for p in after if p[0] == "response"}
            if called and answered:
                assert answered <= called, (called, answered)


def test_each_turns_call_keeps_its_own_response_when_id_and_tool_repeat():
    # Found by make fuzz SDK=js FIXES=all (tests/repros/P4-adk-js-2.0.0-d8716c4f98bf76b5.json):
    # ids numbered per turn, two turns each call lookup's call_0. Given the
    # newest response with its id and tool anywhere, the first call took the
    # second one's answer and its own was lost (P4).
    run = _run_with_every_fix("P4-adk-js-2.0.0-d8716c4f98bf76b5.json")
    assert adk_js.check_run(run) == []
    last = run.calls[-1]["contents"]
    lookups = [p[3] for _, parts in last for p in parts if p[0] == "response" and p[2] == "lookup"]
    assert len(lookups) == len(set(lookups)) == 2  # two answers, each its own event


def test_the_newest_response_finds_its_call_by_id_and_tool():
    # Found by make fuzz SDK=js FIXES=all (tests/repros/P2-adk-js-2.0.0-e0b5611161e7a347.json):
    # ids numbered per turn; export's call_0 is summarised and restored before
    # a late answer to it, later in the list than lookup's call_0; then lookup's
    # call_0 is answered. Found by id alone, the newest response took export's
    # restored call for its own, lookup's answer replaced export's in the merge,
    # and export's call_0 reached a strict provider unanswered (P2).
    run = _run_with_every_fix("P2-adk-js-2.0.0-e0b5611161e7a347.json")
    assert adk_js.check_run(run) == []
    last = run.calls[-1]["contents"]
    pairs = [(role, [tuple(p[:3]) for p in parts]) for role, parts in last]
    assert pairs[-2:] == [
        ("model", [("call", "call_0", "lookup")]),
        ("user", [("response", "call_0", "lookup")]),
    ]
    calls = [p for _, parts in pairs for p in parts if p[0] == "call"]
    answers = [p[1:] for _, parts in pairs for p in parts if p[0] == "response"]
    assert all(c[1:] in answers for c in calls)


def test_a_waiting_call_is_paired_with_its_answer_by_id_and_tool():
    # Found by make fuzz SDK=js FIXES=all (tests/repros/P4-adk-js-2.0.0-e24187cf9b6250bb.json):
    # transfer's call_0 waits for a confirmation while lookup's call_0 (ids
    # numbered per turn) is called and answered; then transfer's answer comes.
    # Paired by id alone, transfer's call looked unanswered past lookup's call,
    # was retained while its answer was summarised, and the prompt builder left
    # the lone call out: lost (P4). Paired by id and tool, the two go together.
    run = _run_with_every_fix("P4-adk-js-2.0.0-e24187cf9b6250bb.json")
    assert adk_js.check_run(run) == []
    # the summary takes transfer's call (stored #1) with its answer (#7)
    ((_, given, _),) = run.summaries()
    assert {1, 7} <= set(given)


def test_a_range_around_a_waiting_call_leaves_the_newest_event_last_in_the_prompt():
    # Found by make fuzz SDK=js FIXES=all (tests/repros/P4-adk-js-2.0.0-0fabb421ee4b8a2b.json):
    # the reply after transfer's result was summarised around a waiting
    # confirmation request; summaries come first in ADK-JS's prompt, so
    # transfer's result became the prompt's last event and the latest-response
    # rearrangement dropped the second turn (P4). A range around a waiting
    # call takes the newest event only where the event left last in view
    # follows its call.
    run = _run_with_every_fix("P4-adk-js-2.0.0-0fabb421ee4b8a2b.json")
    assert adk_js.check_run(run) == []
    for _, given, _ in run.summaries():
        assert 10 not in given  # the reply (stored #10) made right before the summary


def test_a_range_around_a_waiting_call_takes_the_newest_event_where_it_may():
    # Found by make fuzz SDK=js FIXES=all (tests/repros/P3-adk-js-2.0.0-688144e0ac30c1e6.json):
    # a credential request waits; the next turn's lookup pair is the newest.
    # The event left last in view, calendar's placeholder response, follows
    # its own call (the credential events are left out of the contents), so
    # the range takes lookup's pair; held back by a rule that kept the newest
    # event always, the backlog was two events over a bound of one (P3).
    run = _run_with_every_fix("P3-adk-js-2.0.0-688144e0ac30c1e6.json")
    assert adk_js.check_run(run) == []
    assert any({6, 7} <= set(given) for _, given, _ in run.summaries())


def test_p3_holds_a_kept_confirmation_request_with_the_pairs_that_span_it(monkeypatch):
    # Found by make fuzz SDK=js FIXES=all (tests/repros/P3-adk-js-2.0.0-0255614165602a24.json):
    # ADK-JS's fix keeps the second, unanswered confirmation request, and
    # transfer's call and result span it: no range can take them without it.
    run = _run_with_every_fix("P3-adk-js-2.0.0-0255614165602a24.json")
    assert adk_js.check_run(run) == []
    # Read as the definitions alone read it (the request dead), the backlog fires.
    monkeypatch.setattr(backlog, "_pending_requests", lambda steps: set())
    assert [v.invariant for v in trigger.check_backlog(run)] == ["P3"]


def test_two_open_calls_with_one_id_and_tool_keep_their_answers():
    # Found by make fuzz SDK=js FIXES=all (tests/repros/P4-adk-js-2.0.0-069578f71e360bfe.json):
    # transfer's call_0 is made twice, each waiting for a confirmation, before
    # either result comes. Answers taken up to the next call with the id and
    # tool left the first call none: retained alone, its result summarised,
    # and the prompt builder left it out (P4). Now the first call goes with
    # the results that may be its own.
    run = _run_with_every_fix("P4-adk-js-2.0.0-069578f71e360bfe.json")
    assert adk_js.check_run(run) == []
    assert any({1, 9, 11} <= set(given) for _, given, _ in run.summaries())


def test_p3_reads_a_request_as_answered_by_its_synthetic_call_not_its_key(monkeypatch):
    # Found by make fuzz SDK=js FIXES=all (tests/repros/P3-adk-js-2.0.0-00d2ed9d69e05048.json):
    # transfer's call_0 is made twice (ids numbered per turn), each asking for
    # a confirmation; the first is answered and its result carries call_0. The
    # second request still waits: its synthetic call has no answer.
    run = _run_with_every_fix("P3-adk-js-2.0.0-00d2ed9d69e05048.json")
    assert adk_js.check_run(run) == []
    # the second transfer (stored #6) and its request (#7) wait, at the summary (#11)
    assert {6, 7} <= backlog._pending_requests(run.stored.steps[:11])
    # Read as answered (by the key alone, the result of the first transfer
    # answered it), nothing waits, and P3 fires.
    monkeypatch.setattr(backlog, "_pending_requests", lambda steps: set())
    assert [v.invariant for v in trigger.check_backlog(run)] == ["P3"]


def test_p4_tells_two_calls_with_one_id_and_tool_apart_by_their_events():
    # Found by make fuzz SDK=js FIXES=all (tests/repros/P4-adk-js-2.0.0-4d1f864195b7830a.json):
    # transfer's call_0 is made in two turns. Without compaction the prompt
    # shows the first (stored #1); a call part that named no event was taken
    # for the second (#8), which then looked lost with compaction (P4).
    # With every fix, answers-between-a-call-and-its-latest-answer-kept keeps
    # the second turn's transfer call and its answer, stored between export's
    # call and export's newest answer, which the latest-response rearrangement
    # dropped before: each call part names its own event.
    run = _run_with_every_fix("P4-adk-js-2.0.0-4d1f864195b7830a.json")
    assert adk_js.check_run(run) == []
    baseline = run.prompt(run.calls[-1], "baseline")
    shown = [p[2].event for _, parts in baseline for p in parts if p[0] == "call"]
    assert sorted(shown) == ["1", "6", "8"]


def test_p3_holds_the_call_of_a_kept_answer_by_its_tool_as_well_as_its_id(monkeypatch):
    # Found by make fuzz SDK=js FIXES=all (tests/repros/P3-adk-js-2.0.0-50f912326c63fd1e.json):
    # export's long-running call_0 (stored #6) has an interim result (#7);
    # transfer's call_0 (#8) then waits for a confirmation (#9) when export's
    # final result (#10) comes. The final result stays beside the waiting
    # request, so export's call and interim result stay with it.
    run = _run_with_every_fix("P3-adk-js-2.0.0-50f912326c63fd1e.json")
    assert adk_js.check_run(run) == []
    # What P3's backlog may summarise of #6 to #11, before the reply's summary:
    # nothing yet. The reply (#11) is the newest event, and taking it would
    # leave export's final result (#10) last in view away from its call, so
    # it waits for one more event (see test_p3_lets_a_newest_range_wait_...).
    # Held back by the latest call with the id alone (transfer's), export's
    # call and interim result counted too, and with them P3 fired where the
    # compactor (rightly) left them.
    before = Session(run.stored.steps[:12])
    assert backlog.compactable(before, range(6, 12)) == []
    monkeypatch.setattr(backlog, "_preceding_call_named", lambda *_: None)
    monkeypatch.setattr(backlog, "_open_at_once", lambda *_: [])
    assert backlog.compactable(before, range(6, 12)) == [6, 7]


def test_a_call_with_a_reused_id_is_closed_by_the_next_response_with_its_id():
    # Found by make fuzz SDK=js FIXES=all (tests/repros/P4-adk-js-2.0.0-324ca8e899d06f22.json):
    # lookup's call_0 (stored #4) is never answered, but transfer's result
    # (#6) carries its id. Kept as a call that may still be answered, it held
    # transfer's pair and the user's message (#3) around it (P3); the range
    # taken around it left transfer's result last in view after lookup's
    # call, and the latest-response rearrangement dropped #3 (P4). Under the
    # old diffs both fired; now the whole range is summarised.
    run = _run_with_every_fix("P4-adk-js-2.0.0-324ca8e899d06f22.json")
    assert adk_js.check_run(run) == []
    assert any({1, 3, 4, 6} <= set(given) for _, given, _ in run.summaries())


def test_p3_bound_holds_the_call_a_retained_answer_names_by_its_tool(monkeypatch):
    # Found by make fuzz SDK=js FIXES=all (tests/repros/P3-adk-js-2.0.0-98b0f0219727d047.json):
    # export's long-running call_0 (#1) has an interim result (#2); lookup's
    # call_0 (#4) is answered (#5); export's final result (#6) is retained,
    # and the fix keeps export's call, and what lies between, with it.
    run = _run_with_every_fix("P3-adk-js-2.0.0-98b0f0219727d047.json", without=BY_TIME)
    assert adk_js.check_run(run) == []
    # Reaching back by the id alone (to lookup's call), the bound calls it a stall.
    monkeypatch.setattr(backlog, "_preceding_call_named", lambda *_: None)
    _close_by_id_alone(monkeypatch)
    assert [v.details["cause"] for v in trigger.check_stall(run)] == ["stall"]


def test_p6_calls_a_count_stale_only_when_an_event_it_measured_is_hidden(monkeypatch):
    # Found by make fuzz SDK=js FIXES=all (tests/repros/P6-adk-js-2.0.0-d865cc45a373870e.json):
    # after the clock steps back, a client's compacted event hides only the
    # newest reply, and the first turn's events are active again; the
    # reply's count (#3) measured exactly them, so it is no stale count.
    run = _run_with_every_fix("P6-adk-js-2.0.0-d865cc45a373870e.json")
    assert adk_js.check_run(run) == []
    # Every count stored before the latest summary read as stale: P6 fires.
    monkeypatch.setattr(trigger, "_measured_prompts", lambda run: {})
    assert [v.details["cause"] for v in trigger.check_trigger_counts(run)] == ["stale count"]


def test_p6_rate_bound_counts_what_a_client_record_brings_back_into_view():
    # Found by make fuzz SDK=js FIXES=all (tests/repros/P6-adk-js-2.0.0-091055ee51290c47.json):
    # a summary takes the first turn, the clock steps back, and a client's
    # compacted event (hiding by time alone) becomes the latest: the first
    # turn's events are in view again, and the trigger summarises them one
    # call after a prompt below the threshold. The prompt grew by them.
    run = _run_with_every_fix("P6-adk-js-2.0.0-091055ee51290c47.json")
    assert adk_js.check_run(run) == []
    assert trigger._added_tokens(run, 4) > 50 - 14
    # Counting only the events stored in between (no view after a call's
    # compaction to compare with), the rate bound fires.
    for call in run.calls:
        call.pop("active_after", None)
    assert [v.details["cause"] for v in trigger.check_summary_rate(run)] == ["bound"]


def test_p4_baseline_leaves_out_what_a_client_record_claims():
    # Found by make fuzz SDK=js FIXES=all (tests/repros/P4-adk-js-2.0.0-18a3ca01afae11ac.json):
    # after the clock steps back, a client's compacted event claims only the
    # newest reply (#6), so the long-running call's final answer (#5) is the
    # newest event in view, and getContents's latest-response rearrangement
    # drops the model's reply (#4) between the call (#1) and it. That is the
    # record's doing: the baseline (no compaction by ADK-JS) leaves out what
    # the record claims and drops #4 too. (answers-between-a-call-and-its-
    # latest-answer-kept keeps #4 in both; without it the baselines show.)
    run = _run_with_every_fix(
        "P4-adk-js-2.0.0-18a3ca01afae11ac.json", without=BY_TIME + DROPS_BETWEEN
    )
    assert adk_js.check_run(run) == []
    last = run.calls[-1]
    shown = {run.ids.index(p[-1]) for _, parts in last["baseline_unclaimed"] for p in parts}
    assert shown == {0, 1, 5}  # the opener, the call, the answer (the interim result merged)
    # With every stored raw event in the baseline, P4 calls #4 lost.
    for call in run.calls:
        call.pop("baseline_unclaimed", None)
    assert [v.positions for v in adk_js.check_run(run)] == [(4,)]


@pytest.mark.parametrize(
    ("name", "lost"),
    [("P4-adk-js-2.0.0-00bea4e11581bc54.json", 6), ("P4-adk-js-2.0.0-e83a6b07b54cd68d.json", 7)],
)
def test_p4_requires_what_both_baselines_show(name, lost):
    # Found by make fuzz SDK=js FIXES=all: a client's compacted event hides
    # the calls of long-running exports (ADK-JS reads it as hiding everything
    # stamped up to its end), and ADK-JS (with its fixes) brings them back for
    # their live answers. The baseline of the raw events no record claims has
    # no call, so the latest-response rearrangement does nothing there and it
    # shows an event between call and answer that the prompt drops, and so
    # does ADK-JS's prompt of every raw event, with no compaction at all.
    # (answers-between-a-call-and-its-latest-answer-kept keeps that event;
    # without it the baselines show.)
    run = _run_with_every_fix(name, without=DROPS_BETWEEN)
    assert adk_js.check_run(run) == []
    # With the unclaimed baseline alone, P4 calls that event lost.
    for call in run.calls:
        if call.get("baseline_unclaimed") is not None:
            call["baseline"] = call["baseline_unclaimed"]
    assert [v.positions for v in adk_js.check_run(run)] == [(lost,)]


def test_p3_lets_a_newest_range_wait_that_would_leave_an_answer_away_from_its_call(monkeypatch):
    # Found by make fuzz SDK=js FIXES=all (tests/repros/P3-adk-js-2.0.0-980d4e3ecb46f62a.json):
    # the export's answer (#4) follows the new turn's message, not its call
    # (#2); summarising the running turn's lookup pair (#5, #6), the newest
    # events, would leave that answer last in view, and ADK-JS's
    # latest-response rearrangement would drop the message between it and
    # its call. ADK-JS with every fix waits for one more event: no stall.
    run = _run_with_every_fix("P3-adk-js-2.0.0-980d4e3ecb46f62a.json")
    assert adk_js.check_run(run) == []
    # Counting that range as backlog now, P3's stall form fires on it.
    monkeypatch.setattr(backlog, "_answers_away_from_its_call", lambda *_: False)
    assert [(v.details["cause"], v.positions) for v in adk_js.check_run(run)] == [("stall", (5, 6))]


def test_p3_bound_holds_two_open_calls_of_one_tool_and_id_with_a_kept_answer(monkeypatch):
    # Found by make fuzz SDK=js FIXES=all (tests/repros/P3-adk-js-2.0.0-4c5d5a449485b017.json):
    # export's call_0 (#1) waits; lookup's call_0 is answered (#5); export is
    # called again as call_0 (#7), with an interim result (#8). By id,
    # lookup's answer closes #1; paired by id and tool name, as ADK-JS's
    # fixes pair, #1 and #7 are both open when #8 comes and cannot be told
    # apart, so the retained #8 keeps both, and what lies between.
    run = _run_with_every_fix("P3-adk-js-2.0.0-4c5d5a449485b017.json")
    assert adk_js.check_run(run) == []
    # With the bound reaching back by id alone, P3's stall form fires.
    _close_by_id_alone(monkeypatch)
    assert [v.details["cause"] for v in adk_js.check_run(run)] == ["stall"]


def test_p3_stall_form_reads_a_count_a_client_record_claims_as_stale(monkeypatch):
    # Found by make fuzz SDK=js FIXES=all (tests/repros/P3-adk-js-2.0.0-ec8b5acf149a1d76.json):
    # on a one-second clock a client's record at +0 claims (by time) the
    # exports' calls stored after it in the same second, whose prompt counts
    # (13) measured a prompt the record replaced. ADK-JS with every fix reads
    # them as stale and makes no summary; so does P3.
    run = _run_with_every_fix("P3-adk-js-2.0.0-ec8b5acf149a1d76.json")
    assert adk_js.check_run(run) == []
    last = len(run.calls) - 1
    assert run.stored.steps[4].prompt_tokens == 13
    assert trigger._newest_count(run, last, set()) is None
    # Taking the claimed call's count for the trigger's newest, P3 calls it a stall.
    monkeypatch.setattr(trigger, "_newest_count", lambda _run, k, _given: 4 if k == last else None)
    assert [v.details["cause"] for v in trigger.check_stall(run)] == ["stall"]


def test_p3_lets_a_range_after_the_one_a_summary_took_wait_for_the_next(monkeypatch):
    # Found by make fuzz SDK=js FIXES=all (tests/repros/P3-adk-js-2.0.0-14c05867584d988e.json):
    # an export call (#5) waits; three user messages (#6 to #8) follow; before
    # the sub-agent's model call the compactor summarises the first range
    # around the waiting calls that holds something new (#3), and the
    # messages, a range of their own beyond the waiting call, wait.
    run = _run_with_every_fix("P3-adk-js-2.0.0-14c05867584d988e.json")
    assert adk_js.check_run(run) == []
    # Counting the later range as this compaction's backlog, P3 fires.
    monkeypatch.setattr(backlog, "before_a_later_range", lambda backlog, *_: backlog)
    assert [(v.details["cause"], v.positions) for v in trigger.check_backlog(run)] == [
        ("backlog", (6, 7, 8))
    ]


def test_p3_backlog_keeps_a_waiting_events_pair_whose_answer_its_tool_names(monkeypatch):
    # Found by make fuzz SDK=js FIXES=all (tests/repros/P3-adk-js-2.0.0-a531a46f9db7a4ae.json):
    # export's call_1 (#3, beside call_2, which waits) is answered at #10,
    # after lookup pairs that reuse call_0 and call_1 (#5 to #8). By id,
    # lookup's answer (#6) closes export's call_1; by id and tool name, as
    # ADK-JS's fixes pair, the call spans #4 to #10 and no range starts inside.
    run = _run_with_every_fix("P3-adk-js-2.0.0-a531a46f9db7a4ae.json")
    assert adk_js.check_run(run) == []
    assert not any(set(given) & {5, 6, 7, 8, 9, 10} for _, given, _ in run.summaries())
    # Without the rule (a held call's later answers may be summarised), P3 fires.
    monkeypatch.setattr(backlog, "_later_answers", lambda *_: set())
    assert [(v.details["cause"], v.positions) for v in trigger.check_backlog(run)] == [
        ("backlog", (7, 8, 9, 10, 16)),
        ("backlog", (4, 5, 6, 7, 8, 9, 10, 18, 19)),
        ("backlog", (7, 8, 9, 10, 21)),
    ]


def test_p3_backlog_keeps_the_first_answer_of_a_call_that_stays_though_its_call_is_made_again(
    monkeypatch,
):
    # Found by make fuzz SDK=js FIXES=all (tests/repros/P3-adk-js-2.0.0-91e57351c606a615.json):
    # export's call_0 to call_2 (#1, call_2 waits) stay; export's call_0 is
    # made again (#4) before any answer to it, and #5 answers call_0. By id
    # (the definitions) and by id and tool name (ADK-JS's fixes) #5 closes
    # #1's call_0 too, so no range starts before #6, and #7 is retained.
    run = _run_with_every_fix("P3-adk-js-2.0.0-91e57351c606a615.json")
    assert adk_js.check_run(run) == []
    # Reading #5 as #4's answer alone (the latest call with its id), P3 fires.
    monkeypatch.setattr(backlog, "_first_answers", lambda *_: set())
    assert [(v.details["cause"], v.positions) for v in trigger.check_stall(run)] == [
        ("stall", (4, 5, 6, 7))
    ]


def test_p3_backlog_keeps_every_call_a_retained_answer_cannot_be_told_apart_from(monkeypatch):
    # Found by make fuzz SDK=js FIXES=all (tests/repros/P3-adk-js-2.0.0-b48d73648606421d.json):
    # export's call_2 (#2) and again (#13) are open at once; #14, #15 and the
    # retained #18 answer call_2. Paired by id and tool name, as ADK-JS's
    # fixes pair, a response after both counts for both: #18 keeps #2, and
    # everything after it, in view until it leaves the retained events.
    run = _run_with_every_fix("P3-adk-js-2.0.0-b48d73648606421d.json")
    assert adk_js.check_run(run) == []
    assert all(2 not in given for _, given, _ in run.summaries())
    # Holding the latest call of #18's id and tool name alone, P3 fires.
    monkeypatch.setattr(backlog, "_open_at_once", lambda *_: [])
    assert [(v.details["cause"], v.positions) for v in trigger.check_stall(run)] == [
        ("stall", (2, 3, 4, 5, 7, 8, 9, 10, 11))
    ]


def test_p3_backlog_keeps_a_second_answer_to_a_call_that_stays(monkeypatch):
    # Found by make fuzz SDK=js FIXES=all (tests/repros/P3-adk-js-2.0.0-f5f1116b141ce7bf.json):
    # export's call_0 (#3, beside call_1, which waits) is answered (#4);
    # lookup's call_0 (#6) is never answered; export's call_0 is answered
    # again (#7). By id #7 closes lookup's call; by id and tool name it
    # answers a call that stays, so no range may hold it.
    run = _run_with_every_fix("P3-adk-js-2.0.0-f5f1116b141ce7bf.json")
    assert adk_js.check_run(run) == []
    # Without the rule (a held call's later answers may be summarised), P3 fires.
    monkeypatch.setattr(backlog, "_later_answers", lambda *_: set())
    assert [(v.details["cause"], v.positions) for v in adk_js.check_run(run)] == [("stall", (6, 7))]


def test_p3_backlog_keeps_a_call_that_waits_by_its_tool_though_its_id_is_answered(monkeypatch):
    # Found by make fuzz SDK=js FIXES=all (tests/repros/P3-adk-js-2.0.0-b7f9e7680f835205.json):
    # export's long-running call_0 and call_1 (#2); call_0 answered (#4);
    # lookup's call_0 and call_1 pair (#5, #6). By id lookup's answer closes
    # export's call_1; by id and tool name it still waits, so #2 stays, and
    # the lookup pair, the newest range, would leave #4 last in view away
    # from its call: it waits for one more event.
    run = _run_with_every_fix("P3-adk-js-2.0.0-b7f9e7680f835205.json")
    assert adk_js.check_run(run) == []
    with monkeypatch.context() as patch:
        patch.setattr(backlog, "_waits_by_tool", lambda *_: False)
        assert [(v.details["cause"], v.positions) for v in adk_js.check_run(run)] == [
            ("stall", (2, 3, 4, 5, 6))
        ]
    # Without the newest-range rule P3 fires, once lookup's answer (#6) is
    # not also read as the first answer by id of export's call_1, which stays
    # (by id it closes that call, and no range may then start before it).
    monkeypatch.setattr(backlog, "_answers_away_from_its_call", lambda *_: False)
    assert adk_js.check_run(run) == []
    monkeypatch.setattr(backlog, "_first_answers", lambda *_: set())
    assert [(v.details["cause"], v.positions) for v in adk_js.check_run(run)] == [("stall", (5, 6))]


def test_p1_lets_a_summary_take_an_orphan_whose_id_another_tools_waiting_call_carries(
    monkeypatch,
):
    # Found by make fuzz SDK=js FIXES=all (tests/repros/P1-adk-js-2.0.0-d684f2f0c165abc2.json):
    # export's long-running call_1 (#2) waits; lookup's call_1 (#5), of an
    # older invocation by the time #5 and #6 are summarised, is never
    # answered. By id the long-running mark protects call_1; by id and tool
    # name lookup's call_1 is an orphan the definitions let a summary take.
    run = _run_with_every_fix("P1-adk-js-2.0.0-d684f2f0c165abc2.json")
    assert adk_js.check_run(run) == []
    assert [5, 6] in [list(given) for _, given, _ in run.summaries()]
    # Reading every split by id alone, P1 fires on lookup's call_1.
    monkeypatch.setattr(checks, "_splits_as_adk_js_reads", lambda *_: True)
    assert [(v.invariant, v.ids, v.positions) for v in adk_js.check_run(run)] == [
        ("P1", ("call_1",), (5,))
    ]


def test_p1_lets_a_summary_take_a_call_whose_answers_a_client_record_claims(monkeypatch):
    # Found by make fuzz SDK=js FIXES=all (tests/repros/P1-adk-js-2.0.0-5492fbe9ba1d6636.json):
    # after the clock steps back, transfer's confirmed result (#5) is stamped
    # before its call (#2), and a client's compacted event (#6) claims it; in
    # ADK-JS's view the call, of an older invocation, has no answer.
    run = _run_with_every_fix("P1-adk-js-2.0.0-5492fbe9ba1d6636.json")
    assert adk_js.check_run(run) == []
    assert [2, 8] in [list(given) for _, given, _ in run.summaries()]
    # Reading the stored session, where the answer exists, P1 fires.
    monkeypatch.setattr(checks, "_splits_as_adk_js_reads", lambda *_: True)
    assert [(v.invariant, v.positions) for v in adk_js.check_run(run)] == [("P1", (2,))]


def test_a_confirmation_key_is_an_obligation_the_fix_keeps_with_its_answer(monkeypatch):
    # Found by make fuzz SDK=js FIXES=all (tests/repros/P1-adk-js-2.0.0-9556485c4559db13.json):
    # transfer's confirmation request (#5, the synthetic call's event, which
    # carries requestedToolConfirmations) is confirmed (#11) and transfer's
    # result (#12) arrives; the retained result keeps the request, by its key.
    run = _run_with_every_fix("P1-adk-js-2.0.0-9556485c4559db13.json")
    assert adk_js.check_run(run) == []
    assert not any(5 in given for _, given, _ in run.summaries())
    # P3's bound reaching back from a retained response to calls alone, not
    # to the request with its key, calls that a stall.
    monkeypatch.setattr(backlog, "_preceding_request", lambda *_: None)
    assert [(v.details["cause"], v.positions) for v in adk_js.check_run(run)] == [
        ("stall", (1, 2, 5, 6, 8, 9, 10, 11, 12))
    ]


def test_a_restored_call_leaves_out_a_call_a_newer_one_in_view_reopens():
    # Found by make fuzz SDK=js FIXES=all (tests/repros/P2-adk-js-2.0.0-4b354b13b0d70fa1.json):
    # export's call_0 and call_1 (#1) were summarised, export's call_0 was
    # made again (#6), and a client answers both ids (#9): call_0 for #6,
    # call_1 for #1. Restored verbatim after #6, #1 took #9's call_0 answer,
    # and #6's call went unanswered (P2).
    run = _run_with_every_fix("P2-adk-js-2.0.0-4b354b13b0d70fa1.json")
    assert adk_js.check_run(run) == []
    calls = [
        [p[1:] for p in parts if p[0] == "call"]
        for role, parts in run.prompt(run.calls[-1], "contents")
        if role == "model"
    ]
    assert calls == [[("call_0", "export")], [("call_1", "export")]]


def test_the_anchored_trigger_reads_a_count_a_record_left_stale_as_stale():
    # Found by make fuzz SDK=js FIXES=all (tests/repros/P6-adk-js-2.0.0-42adaa67d5202f1b.json):
    # after the clock steps back, a client's record stamped before the
    # second reply (#3) hides #0 and #1; #3's count (60) measured them. Read
    # by timestamp it was current, and the trigger fired at 12 tokens (P6).
    run = _run_with_every_fix("P6-adk-js-2.0.0-42adaa67d5202f1b.json")
    assert adk_js.check_run(run) == []
    assert run.stored.steps[3].prompt_tokens == 60
    assert len(run.summaries()) == 1  # the first turns', before the record


def test_a_restored_copy_stands_at_its_originals_place_when_the_next_restoration_is_trimmed():
    # Found by make fuzz SDK=js FIXES=all (tests/repros/P2-adk-js-2.0.0-23b70d1e21322044.json):
    # export's calls #4 (call_0 to call_2) and #6 (call_0, call_1) were
    # summarised, #12 makes call_0 again, #14 answers all three ids. #6 is
    # restored without call_0; #4, restored after it, must leave out call_1,
    # which #6 reopens, though #6 is in view as a copy.
    run = _run_with_every_fix("P2-adk-js-2.0.0-23b70d1e21322044.json")
    assert adk_js.check_run(run) == []
    calls = [
        sorted(p[1] for p in parts if p[0] == "call")
        for role, parts in run.prompt(run.calls[-1], "contents")
        if role == "model" and any(p[0] == "call" for p in parts)
    ]
    assert ["call_2"] in calls and ["call_1"] in calls


def test_an_answer_partly_to_the_newest_responses_call_keeps_its_other_parts():
    # Found by make fuzz SDK=js FIXES=all (tests/repros/P4-adk-js-2.0.0-6e37e97c909d06dd.json):
    # #11 answers call_1 of #9 and call_2 of the summarised #1, restored
    # (call_2 alone) right before it; the newest event #12 answers #9. The
    # latest-response rearrangement merges #11's answer to #9 and keeps its
    # answer to call_2 after the restored call.
    run = _run_with_every_fix("P4-adk-js-2.0.0-6e37e97c909d06dd.json")
    assert adk_js.check_run(run) == []
    prompt = run.prompt(run.calls[-1], "contents")
    turns = [
        sorted((p[0], p[1]) for p in parts if p[0] in ("call", "response")) for _, parts in prompt
    ]
    at = turns.index([("call", "call_2")])
    assert turns[at + 1] == [("response", "call_2")]


def test_a_message_between_a_call_and_its_newest_answer_reaches_the_model():
    # Found by make fuzz SDK=js FIXES=all (tests/repros/P4-adk-js-2.0.0-b38b8b8fbba396e9.json):
    # a client's record claims the reply stamped before it after the clock
    # stepped back, so the long-running call's final answer (#6) is the
    # newest event in view; the user's message (#5) between the call (#2)
    # and it, which no record claims, stays in the prompt, before the call.
    run = _run_with_every_fix("P4-adk-js-2.0.0-b38b8b8fbba396e9.json")
    assert adk_js.check_run(run) == []
    shown = [
        (role, p[1][:6]) for role, parts in run.prompt(run.calls[-1], "contents") for p in parts
    ]
    call = run.stored[2].calls[0].id[:6]
    assert shown[-3:] == [("user", "user 2"), ("model", call), ("user", call)]
    # As the rearrangement was published, the message goes (P4).
    dropped = _run_with_every_fix("P4-adk-js-2.0.0-b38b8b8fbba396e9.json", without=DROPS_BETWEEN)
    assert [(v.invariant, v.positions) for v in adk_js.check_run(dropped)] == [("P4", (5,))]


def test_a_restored_calls_sibling_answer_brings_no_answer_to_a_call_made_again():
    # Found by make fuzz SDK=js FIXES=all (tests/repros/P4-adk-js-2.0.0-5bd84363aa2e4279.json):
    # export's call_0 to call_2 (#2) have interim answers in one event (#3);
    # export's call_0 is made again (#7), and a client answers it (#12), then
    # call_1 (#14). Restoring #2 for #14 leaves call_0 out of the copy (#7 is
    # in view) and brings call_2's latest answer, #3, but #3 whole carried
    # call_0's interim answer after #12, and #7 took it: #12 was lost (P4).
    # A restored answer event now keeps only the restored calls' own parts.
    run = _run_with_every_fix("P4-adk-js-2.0.0-5bd84363aa2e4279.json")
    assert adk_js.check_run(run) == []
    prompt = [
        [(p[0], p[1], p[3]) for p in parts if p[0] == "response"]
        for _, parts in run.prompt(run.calls[-1], "contents")
    ]
    assert prompt[-3:] == [
        [("response", "call_0", "12")],
        [],
        [("response", "call_2", "3"), ("response", "call_1", "14")],
    ]


def test_a_range_around_a_waiting_call_may_start_after_a_call_answered_again_later():
    # Found by make fuzz SDK=js FIXES=all (tests/repros/P3-adk-js-2.0.0-a2da3ce8cb979a2d.json):
    # export's call_0 (#3, beside call_1, which waits) is answered (#4) and
    # answered again (#8) after lookup's call_0 pair (#6, #7). The call's
    # first answer comes before the pair and no answer to it falls inside,
    # so the pair is a range of its own: the fix summarises it.
    run = _run_with_every_fix("P3-adk-js-2.0.0-a2da3ce8cb979a2d.json")
    assert adk_js.check_run(run) == []
    assert [given for _, given, _ in run.summaries()][-1] == [6, 7]


def test_p2_strict_clause_leaves_a_call_whose_answer_a_client_record_claims_to_the_adapter(
    monkeypatch,
):
    # Found by make fuzz SDK=js FIXES=all (tests/repros/P2-adk-js-2.0.0-f466d652604dd487.json):
    # after the clock steps back, a long-running call's answer (#3) is stamped
    # before it, and a client's compacted event claims that answer alone;
    # ADK-JS hides it and keeps the call as pending, as it keeps any
    # long-running call not answered yet: the adapter's placeholder answers it.
    run = _run_with_every_fix("P2-adk-js-2.0.0-f466d652604dd487.json")
    assert adk_js.check_run(run) == []
    # Reading which calls wait from the stored session alone, P2 fires.
    monkeypatch.setattr(checks, "covered_by_records", lambda *_, **__: set())
    assert [v.details["cause"] for v in adk_js.check_run(run)] == ["strict provider"]


def test_p3_finds_a_credential_requests_synthetic_call_in_its_own_event(monkeypatch):
    # Found by make fuzz SDK=js FIXES=all (tests/repros/P3-adk-js-2.0.0-e4aa7456e2b71ba8.json):
    # calendar's call_0 waits for credentials; the synthetic
    # adk_request_credential call is an event of its own, stored before the
    # tool's placeholder response; a later turn's lookup reuses call_0 and is
    # answered. The request still waits: its synthetic call has no answer.
    run = _run_with_every_fix("P3-adk-js-2.0.0-e4aa7456e2b71ba8.json")
    assert adk_js.check_run(run) == []
    steps = run.stored.steps
    placeholder = next(k for k, s in enumerate(steps) if s.auth_requests)
    assert not any(c.name in trigger.SYNTHETIC_HITL_CALL_NAMES for c in steps[placeholder].calls)
    assert placeholder in backlog._pending_requests(steps[:9])
    # Read as answered (by the key alone, lookup's result answered it),
    # nothing waits; and with that result not holding the request by its key
    # either (the key's obligation, closed by id), P3 fires.
    monkeypatch.setattr(backlog, "_pending_requests", lambda steps: set())
    monkeypatch.setattr(backlog, "_preceding_request", lambda *_: None)
    assert [(v.details["cause"], v.positions) for v in adk_js.check_run(run)] == [
        ("stall", (1, 3, 4, 6, 7))
    ]


def test_a_fix_that_does_not_apply_during_a_replay_is_one_line_and_exit_2(monkeypatch, capsys):
    # ADK-JS's fixes are applied at the first request that asks for them: a
    # diff that does not apply then was a traceback of `replay --fixes all`.
    from compaction_harness.surfaces import cli

    def broken(names):
        raise js_fixes.JsFixError("the ADK-JS fix x does not apply to @google/adk 2.0.0")

    monkeypatch.setattr(js_fixes, "patched_package", broken)
    monkeypatch.setattr(node, "_DRIVERS", {})  # no driver has its package copy yet
    fixture = REPROS / "P1-adk-js-2.0.0-dfa62f1062218fc0.json"
    assert cli.main(["replay", "--fixes", "all", str(fixture)]) == 2
    out, err = capsys.readouterr()
    assert err == "error: the ADK-JS fix x does not apply to @google/adk 2.0.0\n"
    assert "Traceback" not in out
