"""`python -m compaction_harness faults` and the fault catalogue it prints.

The catalogue (``faults/catalogue.py``) is the one record of the known faults
of both SDKs; its fixes and releases are derived, never typed: the releases
of a google-adk fault are what the committed release matrix record shows, an
ADK-JS fault's the @google/adk version of its fixtures.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from compaction_harness.faults import catalogue
from compaction_harness.faults.catalogue import FAULTS, JS, PYTHON, Fault, fault_for, faults_of
from compaction_harness.sdk.js import adk_js
from compaction_harness.sdk.python import known_faults
from compaction_harness.sdk.python.fixes import FIXES
from compaction_harness.surfaces.cli import main
from compaction_harness.surfaces.matrix import derived_releases

ROOT = Path(__file__).resolve().parents[2]
RECORD = ROOT / "docs" / "release-matrix.json"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    status = main(["faults", *argv])
    return status, capsys.readouterr().out


def test_the_table_lists_every_fault_of_both_sdks(capsys):
    status, out = run(capsys)
    assert status == 0
    lines = out.splitlines()
    assert lines[0].split() == ["FAULT", "SDK", "FAMILY", "INVARIANTS", "RELEASES", "FIX"]
    rows = {line.split()[0]: line.split() for line in lines[1:-1]}
    assert list(rows) == [f.id for f in FAULTS]
    assert {f.sdk for f in FAULTS} == {PYTHON, JS}
    for fault in FAULTS:
        row = rows[fault.id]
        assert row[1] == fault.sdk
        assert row[2] == (fault.family or "-")
        assert row[3] == ",".join(fault.invariants)
    assert lines[-1] == f"{len(FAULTS)} known faults, {sum(1 for f in FAULTS if f.fix)} with a fix"


def test_the_table_writes_releases_as_ranges_and_the_fix_or_why_there_is_none(capsys):
    _, out = run(capsys)
    rows = {line.split()[0]: line for line in out.splitlines()[1:-1]}
    # Consecutive releases of the matrix are one range; a gap starts another.
    assert (
        "  1.38.0\u20131.39.1, 2.5.0\u20132.13.0  "
        in rows["confirmation-of-a-reused-call-id-raises"]
    )
    assert "  2.0.0  " in rows["js-branch"]
    fixed = next(f for f in FAULTS if f.fix)
    assert rows[fixed.id].endswith(f"  {fixed.fix}")
    assert (
        rows["js-truncate-opener"]
        .split("  no fix: ")[1]
        .startswith("the documented contract and P2 cannot both hold")
    )


def test_the_table_of_one_sdk(capsys):
    _, out = run(capsys, "--sdk", "adk-js")
    assert [line.split()[0] for line in out.splitlines()[1:-1]] == [f.id for f in faults_of(JS)]


def test_json_round_trips_every_field(capsys):
    status, out = run(capsys, "--json")
    assert status == 0
    records = json.loads(out)
    names = [f.name for f in dataclasses.fields(Fault)]
    assert all(list(r) == names for r in records)

    def tuples(value):
        return tuple(value) if isinstance(value, list) else value

    back = [Fault(**{k: tuples(v) for k, v in r.items()}) for r in records]
    assert back == list(FAULTS)


def test_google_adk_releases_are_what_the_matrix_record_derives():
    record = json.loads(RECORD.read_text(encoding="utf-8"))
    derived = derived_releases(record)
    for fault in faults_of(PYTHON):
        assert fault.id in derived, f"{fault.id} is not in {RECORD.name}: run `make matrix`"
        assert list(fault.releases) == derived[fault.id], fault.id


def test_adk_js_releases_are_the_versions_of_its_fixtures():
    shown: dict[str, set[str]] = {}
    for path in (ROOT / "tests" / "repros").glob("*.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("sdk") == "adk-js":
            for fault in [data.get("known_fault"), *data.get("also_shows", [])]:
                if fault:
                    shown.setdefault(fault, set()).add(data["package_version"])
    for fault in faults_of(JS):
        assert set(fault.releases) == shown.get(fault.id, set()), fault.id
    assert all(f.releases == ("2.0.0",) for f in faults_of(JS))


def test_the_fix_is_what_the_registry_names():
    for fault in faults_of(PYTHON):
        names = [name for name, fix in FIXES.items() if fault.id in fix.faults]
        assert fault.fix == (", ".join(names) or None), fault.id
        assert not (fault.fix and fault.no_fix_reason), fault.id
    for name, fix in FIXES.items():
        for fault_id in fix.faults:
            found = fault_for(fault_id)
            assert found is not None and found.sdk == PYTHON, (name, fault_id)


def test_families_name_a_fault_of_the_other_sdk_that_names_one_of_them_back():
    for fault in FAULTS:
        if fault.family is None:
            continue
        other = fault_for(fault.family)
        assert other is not None and other.sdk != fault.sdk, fault.id
        assert other.family is not None, fault.id
        assert other.family == fault.id or fault_for(other.family).family == other.id, fault.id
    assert fault_for("database-reload-reorders-events-by-timestamp").family == "js-db-time-order"
    assert fault_for("js-branch").family == "summary-leaks-branch-events-to-siblings"


def test_the_views_are_the_catalogue():
    assert [f.id for f in known_faults.KNOWN_FAULTS] == [f.id for f in faults_of(PYTHON)]
    for view in known_faults.KNOWN_FAULTS:
        fault = fault_for(view.id)
        assert (view.invariant, view.releases, view.title, view.explanation) == (
            fault.invariants,
            fault.releases,
            fault.title,
            fault.user_sees,
        )
    assert list(adk_js.KNOWN_FAULTS) == [f.id for f in faults_of(JS)]
    for fault_id, (compactors, explanation) in adk_js.KNOWN_FAULTS.items():
        fault = fault_for(fault_id)
        assert compactors == frozenset(fault.compactors) and explanation == fault.user_sees
    assert tuple(adk_js.COMPACTORS) == catalogue.EVERY_JS_COMPACTOR
    assert all(set(f.compactors) <= set(adk_js.COMPACTORS) for f in faults_of(JS))


def test_the_adk_js_fix_index_is_read_when_it_exists(tmp_path):
    index = tmp_path / "index.json"
    assert catalogue._js_fixes(index) == {}  # no index yet: no ADK-JS fix
    index.write_text(json.dumps({"tie-break-by-order": {"faults": ["js-db-tie-order"]}}))
    assert catalogue._js_fixes(index) == {"js-db-tie-order": ["tie-break-by-order"]}
    index.write_text(json.dumps({"broken": {"fault": "js-db-tie-order"}}))
    with pytest.raises(ValueError, match="no list of faults"):
        catalogue._js_fixes(index)


def test_fixes_and_releases_cannot_be_typed_by_hand():
    with pytest.raises(ValueError, match="releases is derived"):
        catalogue._fault(
            id="x", sdk=PYTHON, family=None, invariants=(), title="", user_sees="", releases=("1",)
        )


@pytest.mark.parametrize(
    ("releases", "said"),
    [
        (["2.12.0", "2.13.0"], "2.12.0\u20132.13.0"),
        (["1.17.0", "1.18.0", "2.12.0"], "1.17.0\u20131.18.0, 2.12.0"),
        (["2.13.0", "1.16.0"], "1.16.0, 2.13.0"),
        (["1.17.0", "9.0.0"], "1.17.0, 9.0.0"),
        ([], ""),
    ],
)
def test_ranges_are_runs_over_the_order(releases, said):
    order = ["1.16.0", "1.17.0", "1.18.0", "2.0.0", "2.12.0", "2.13.0"]
    assert catalogue.ranges(releases, order) == said


def test_a_column_with_every_fix_applied_is_no_release(tmp_path, monkeypatch):
    from compaction_harness.surfaces import fault_headers

    record = tmp_path / "release-matrix.json"
    record.write_text(json.dumps({"releases": ["2.12.0", "2.13.0", "2.13.0+fixes"], "rows": {}}))
    monkeypatch.setattr(catalogue, "MATRIX", record)
    assert catalogue.release_order(PYTHON) == ["2.12.0", "2.13.0"]
    assert fault_headers.matrix_order(record) == ["2.12.0", "2.13.0"]
    # So a fault on both releases is on all of them, in the README's words too.
    assert fault_headers.spans(["2.12.0", "2.13.0"], ["2.12.0", "2.13.0"]) == "all 2 releases"


def test_pages_writes_the_catalogue_as_fault_pages_does(capsys, tmp_path):
    from compaction_harness.surfaces.fault_pages import stale_pages

    folder = tmp_path / "faults"
    status, out = run(capsys, "--pages", str(folder))
    assert status == 0 and out.startswith(f"{folder}: {len(FAULTS) + 1} pages written")
    assert stale_pages(folder) == []  # what `fault_pages --check` compares with
    assert (folder / "README.md").is_file() and len(list(folder.glob("*.md"))) == len(FAULTS) + 1


def test_pages_takes_no_other_option(capsys, tmp_path):
    assert main(["faults", "--pages", str(tmp_path), "--json"]) == 2
    assert "--pages writes every fault's page" in capsys.readouterr().err


def test_a_campaign_summary_names_the_fix_that_told_a_fault_of_either_sdk() -> None:
    # The summary's evidence comes from the catalogue, whatever the SDK: an
    # ADK-JS fault with a fix was printed as "pattern evidence" when only
    # google-adk's fixes were asked.
    from compaction_harness.surfaces.campaign_report import _evidence

    late = fault_for("js-late-answer")
    assert late is not None and late.fix
    assert _evidence("js-late-answer") == f"evidence: fix {late.fix}"
    stall = fault_for("orphaned-call-stalls-compaction-for-good")
    assert stall is not None and stall.fix
    assert _evidence(stall.id) == f"evidence: fix {stall.fix}"
    assert fault_for("js-truncate-opener").fix is None
    assert _evidence("js-truncate-opener") == "pattern evidence"
