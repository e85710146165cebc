"""The release matrix: cells from replay results, derived release lists, outputs,
and the committed known faults' release lists against the last matrix."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from compaction_harness.sdk.python.known_faults import KNOWN_FAULTS
from compaction_harness.surfaces.matrix import (
    FAILS,
    HOLDS,
    KNOWN,
    NOT_APPLICABLE,
    aggregate,
    default_releases,
    derived_releases,
    render_html,
    render_markdown,
)

ROOT = Path(__file__).resolve().parents[2]
LAST_MATRIX = ROOT / "docs" / "release-matrix.json"


def entry(name, label, invariant, *, shows=(), new=(), marked=None, invariants=None):
    return {
        "path": f"tests/repros/{name}",
        "kind": "unit",
        "invariant": invariant,
        "found_on": "2.13.0",
        "known_fault": marked,
        "label": label,
        "reason": "",
        "faults": list(shows),
        "shows": list(shows),
        "new": list(new),
        "invariants": invariants
        if invariants is not None
        else ([invariant] if shows or new else []),
    }


RECORDS = [
    {
        "release": "2.11.0",
        "replay": [
            entry("U3-a.json", "FAIL", "U3", new=["U3: prefix stops at 0"], marked="f1"),
            entry("P2-b.json", "XFAIL", "P2", shows=["f2"], marked="f2"),
        ],
        "campaign": {
            "seconds": 30,
            "seed": 0,
            "status": 1,
            "fixtures": [{"path": "build/matrix/2.11.0/repros/P3-x.json", "invariant": "P3"}],
        },
    },
    {
        "release": "2.13.0",
        "replay": [
            entry("U3-a.json", "XFAIL", "U3", shows=["f1"], marked="f1"),
            entry("P2-b.json", "ok", "P2", marked="f2"),
        ],
        "campaign": {"seconds": 30, "seed": 0, "status": 0, "fixtures": []},
    },
    {"release": "1.10.0", "error": "no environment: compaction exists only from 1.16.0 on"},
]


def test_cells_follow_what_each_release_shows():
    matrix = aggregate(RECORDS, ["f1", "f2"])
    faults, invariants, fixtures = (matrix["rows"][k] for k in ("faults", "invariants", "fixtures"))
    state = lambda row, release: row[release]["state"]  # noqa: E731
    # A fault shows where a fixture shows it, whatever its recorded releases.
    assert state(faults["f1"], "2.13.0") == KNOWN and state(faults["f1"], "2.11.0") == HOLDS
    assert state(faults["f2"], "2.11.0") == KNOWN and state(faults["f2"], "2.13.0") == HOLDS
    # An invariant fails on something new, from the corpus or the campaign.
    assert state(invariants["U3"], "2.11.0") == FAILS
    assert state(invariants["P3"], "2.11.0") == FAILS
    assert "P3-x.json" in invariants["P3"]["2.11.0"]["reason"]
    assert state(invariants["U3"], "2.13.0") == KNOWN
    assert state(invariants["P2"], "2.13.0") == HOLDS
    assert state(fixtures["U3-a.json"], "2.11.0") == FAILS
    assert state(fixtures["P2-b.json"], "2.13.0") == HOLDS
    # A release without an environment is a column of n/a saying why.
    assert state(fixtures["U3-a.json"], "1.10.0") == NOT_APPLICABLE
    assert "1.16.0" in invariants["P0"]["1.10.0"]["reason"]
    assert derived_releases(matrix) == {"f1": ["2.13.0"], "f2": ["2.11.0"]}


def test_a_fixture_that_cannot_run_is_not_applicable_with_its_reason():
    record = {
        "release": "1.16.0",
        "replay": [{**entry("U3-a.json", "n/a", "U3"), "reason": "no _provably_dead_call_ids"}],
    }
    matrix = aggregate([{**record, "campaign": {"seconds": 30, "fixtures": []}}], ["f1"])
    cell = matrix["rows"]["fixtures"]["U3-a.json"]["1.16.0"]
    assert cell == {
        "state": NOT_APPLICABLE,
        "reason": "no _provably_dead_call_ids",
        "link": "U3-a.json",
    }
    # The campaign's unit properties skip too: no unit-level invariant holds here.
    for invariant in ("U1", "U3", "U6"):
        assert matrix["rows"]["invariants"][invariant]["1.16.0"] == {
            "state": NOT_APPLICABLE,
            "reason": "no _provably_dead_call_ids",
        }


def test_default_releases_are_each_minors_newest_patch_and_the_named_ones():
    published = ["2.13.0", "2.6.3", "2.6.1", "2.6.0", "2.0.0rc1", "1.16.1", "1.16.0", "1.15.1"]
    assert default_releases(published, {"2.6.1", "1.15.1"}) == [
        "1.16.1",
        "2.6.1",
        "2.6.3",
        "2.13.0",
    ]


def test_markdown_and_html_show_every_release_and_link_fixtures():
    matrix = aggregate(RECORDS, ["f1", "f2"])
    text = render_markdown(matrix)
    assert "| | 2.11.0 | 2.13.0 | 1.10.0 |" in text
    assert "| f1 | holds | known | n/a |" in text
    page = render_html(matrix, {"U3-a.json": "show/U3-a.txt"}, root="../..")
    assert "href='../../tests/repros/U3-a.json'" in page
    assert "href='show/U3-a.txt'" in page
    assert "href='../../build/matrix/2.11.0/repros/P3-x.json'" in page


def test_the_cost_table_shows_each_release_and_says_why_a_cell_is_missing():
    costs = {
        "2.13.0": {
            "sliding": {"summariser_calls_per_100": 50.0, "steady_state_prompt": 921},
            "token-small": {"summariser_calls_per_100": 52.0, "steady_state_prompt": 1680},
            "token-large": {"summariser_calls_per_100": 226.0, "steady_state_prompt": 3143},
        },
        "1.16.0": {
            "sliding": {"summariser_calls_per_100": 50.0, "steady_state_prompt": 900},
            "token-small": {"error": "no EventsCompactionConfig.token_threshold"},
        },
    }
    records = [
        {**RECORDS[1], "costs": costs["2.13.0"]},
        {**RECORDS[1], "release": "1.16.0", "costs": costs["1.16.0"]},
    ]
    matrix = aggregate(records, ["f1"])
    text = render_markdown(matrix)
    assert "| 2.13.0 | 50 / 921 | 52 / 1680 | 226 / 3143 |" in text
    assert "| 1.16.0 | 50 / 900 | n/a (no EventsCompactionConfig.token_threshold) | n/a |" in text
    page = render_html(matrix, {})
    assert "<td>226 / 3143</td>" in page


def test_bad_releases_are_refused_in_one_line():
    for given, said in (("2.13", "not a release number"), ("1.10.0", "only from 1.16.0")):
        done = subprocess.run(
            [sys.executable, "-m", "compaction_harness.surfaces.matrix", "--releases", given],
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        assert done.returncode == 2, done.stderr
        assert done.stderr.count("\n") == 1 and said in done.stderr


def test_known_fault_release_lists_agree_with_the_last_matrix():
    # The release lists are derived (faults/catalogue.py), not typed: on the releases
    # the last committed matrix covers, each fault is recorded exactly where it shows.
    matrix = json.loads(LAST_MATRIX.read_text())
    covered = set(matrix["releases"])
    derived = derived_releases(matrix)
    for fault in KNOWN_FAULTS:
        if fault.id not in derived:
            pytest.fail(f"{fault.id} is not in {LAST_MATRIX.name}: run `make matrix` again")
        recorded = sorted(set(fault.releases) & covered, key=matrix["releases"].index)
        assert recorded == derived[fault.id], fault.id


def test_the_release_matrix_replays_python_fixtures_only(tmp_path) -> None:
    # ADK-JS fixtures run on Node, the same on every google-adk release: no
    # cell of the matrix. A file that is not a fixture stays, for replay to report.
    from compaction_harness.surfaces.matrix import CORPUS, python_corpus

    chosen = [Path(p).name for p in python_corpus()]
    every = sorted(p.name for p in CORPUS.glob("*.json"))
    js = [n for n in every if "-adk-js-" in n]
    assert js and not set(js) & set(chosen)
    assert chosen == [n for n in every if n not in js]
    (tmp_path / "a.json").write_text('{"sdk": "adk-js"}')
    (tmp_path / "b.json").write_text("not json")
    (tmp_path / "c.json").write_text('{"sdk": "python"}')
    assert [Path(p).name for p in python_corpus(tmp_path)] == ["b.json", "c.json"]


def test_a_subset_run_merges_its_releases_into_the_committed_record(tmp_path, monkeypatch):
    # The record is filled a few releases at a time: a run of one release
    # replaces that release's column and keeps every other release's cells.
    from compaction_harness.surfaces import matrix as matrix_module
    from compaction_harness.surfaces.matrix import main, python_corpus

    corpus = python_corpus()
    fault = KNOWN_FAULTS[0].id
    shown = {**RECORDS[1], "release": "2.12.0"}
    shown["replay"] = [shown["replay"][0] | {"shows": [fault]}]
    committed = aggregate([RECORDS[0], shown], [fault])
    committed["rows"]["fixtures"]["gone.json"] = {"2.11.0": {"state": HOLDS}}
    committed["costs"] = {"2.11.0": {"sliding": {"x": 1}}}
    committed["seconds_per_campaign"] = 30
    record = tmp_path / "release-matrix.json"
    record.write_text(json.dumps(committed))
    # The release run now: its cell is reused (every corpus fixture replayed).
    cell = {
        "release": "2.13.0",
        "replay": [entry(Path(p).name, "ok", "P2") | {"path": p} for p in corpus],
        "campaign": {"seconds": 20, "seed": 0, "status": 0, "fixtures": []},
        "costs": {"sliding": {"y": 2}},
    }
    (tmp_path / "cells").mkdir()
    (tmp_path / "cells" / "2.13.0.json").write_text(json.dumps(cell))
    monkeypatch.setattr(matrix_module, "_show_texts", lambda out, python: {})
    monkeypatch.setattr(matrix_module, "render_heatmap", lambda matrix, path: False)
    argv = ["--releases", "2.13.0", "--seconds", "20", "--out", str(tmp_path), "--fixed", "none"]
    assert main([*argv, "--record", str(record)]) == 0
    merged = json.loads(record.read_text())
    assert merged["releases"] == ["2.11.0", "2.12.0", "2.13.0"]
    assert merged["campaign_seconds"] == {"2.11.0": 30, "2.12.0": 30, "2.13.0": 20}
    assert merged["seconds_per_campaign"] == 20
    assert set(merged["costs"]) == {"2.11.0", "2.13.0"}
    # The releases not run keep their cells, the one run has its new ones.
    p3 = merged["rows"]["invariants"]["P3"]
    assert p3["2.11.0"]["state"] == FAILS and p3["2.13.0"]["state"] == HOLDS
    assert merged["rows"]["faults"][fault]["2.12.0"]["state"] == KNOWN
    assert merged["rows"]["faults"][fault]["2.13.0"]["state"] == HOLDS
    assert merged["derived_releases"][fault] == ["2.12.0"]
    # Rows are today's: a fixture no longer in the corpus is gone.
    assert "gone.json" not in merged["rows"]["fixtures"]
    first = Path(corpus[0]).name
    assert merged["rows"]["fixtures"][first] == {"2.13.0": {"state": HOLDS, "link": first}}
    # The markdown beside the record is rendered from the merged record.
    text = record.with_suffix(".md").read_text()
    assert "| | 2.11.0 | 2.12.0 | 2.13.0 |" in text


def test_a_reused_cell_replays_the_fixtures_added_since_it_was_made():
    from compaction_harness.surfaces.matrix import top_up

    record = {"release": "2.13.0", "replay": [{"path": "a.json"}, {"path": "gone.json"}]}
    asked = []

    def replay(paths):
        asked.append(list(paths))
        return [{"path": p, "new": True} for p in paths]

    assert top_up(record, ["a.json", "b.json"], replay) == ["b.json"]
    assert asked == [["b.json"]]
    assert record["replay"] == [{"path": "a.json"}, {"path": "b.json", "new": True}]
    assert top_up(record, ["a.json", "b.json"], replay) == [] and len(asked) == 1


def test_the_fixed_column_runs_the_release_with_every_fix_and_is_no_release(tmp_path, monkeypatch):
    # 2.13.0+fixes: the pinned release with HARNESS_FIXES=all. Its cells sit
    # beside the releases, but a fault it shows is no release of that fault.
    from compaction_harness.surfaces import matrix as matrix_module
    from compaction_harness.surfaces.matrix import _fixes_env, fixed_column, main, python_corpus

    assert _fixes_env(fixed_column("2.13.0")) == {"HARNESS_FIXES": "all"}
    assert _fixes_env("2.13.0") == {}
    corpus = python_corpus()
    fault = KNOWN_FAULTS[0].id
    (tmp_path / "cells").mkdir()
    for label, shows in (("2.13.0", [fault]), ("2.13.0+fixes", [fault])):
        cell = {
            "release": label,
            "replay": [
                entry(Path(p).name, "ok", "P2") | {"path": p, "shows": shows} for p in corpus
            ],
            "campaign": {"seconds": 20, "seed": 0, "status": 0, "fixtures": []},
            "costs": {},
        }
        (tmp_path / "cells" / f"{label}.json").write_text(json.dumps(cell))
    monkeypatch.setattr(matrix_module, "_show_texts", lambda out, python: {})
    monkeypatch.setattr(matrix_module, "render_heatmap", lambda matrix, path: False)
    monkeypatch.setattr(matrix_module, "_environment", lambda release: release)
    monkeypatch.setattr(matrix_module, "_replay", lambda python, paths, extra=None: [])
    argv = ["--releases", "2.13.0", "--seconds", "20", "--out", str(tmp_path)]
    assert main(argv) == 0
    written = json.loads((tmp_path / "matrix.json").read_text())
    assert written["releases"] == ["2.13.0", "2.13.0+fixes"]
    assert written["rows"]["faults"][fault]["2.13.0+fixes"]["state"] == "known fault"
    assert written["derived_releases"][fault] == ["2.13.0"]
