"""The docs' generated text: `make tables` writes it, a stale copy is one line.

``python -m compaction_harness.surfaces.cross_sdk --write docs/drivers.md``
(``make tables``) rewrites the cross-SDK summary and table between two
markers; the JS gate (``tests/slow/adk_js/test_adk_js.py``) compares the page with what
it would write and, when they differ, says so in one line naming the page
and ``make tables`` (a new fixture changes the table: a multi-kilobyte diff
told no one what to run). Nothing here needs Node: the rows are made by
hand. ``fault_headers`` writes the releases and the fix after each known
fault's name in ``docs/known-faults.md``'s list, from the fault catalogue
(``faults/catalogue.py``) over the release matrix's order; the Python gate
checks them here, in one line naming ``make tables`` when stale.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from compaction_harness.sdk.python.known_faults import KNOWN_FAULTS
from compaction_harness.surfaces import cross_sdk, fault_headers
from compaction_harness.surfaces.cross_sdk import BEGIN, END, CrossRow

ROOT = Path(__file__).resolve().parents[2]

ROWS = [
    CrossRow("P1-2.13.0-0000000000000001.json", ("2.13.0",), "holds", "", "script"),
    CrossRow(
        "P2-2.13.0-0000000000000002.json",
        None,
        "known",
        "js-late-answer (stand-in: token_based threshold=0, retention=1)",
        "script",
    ),
    CrossRow("U3-2.13.0-0000000000000003.json", (), "n/a", "unit fixture: ...", "unit"),
]


def _page(tmp_path: Path, between: str) -> Path:
    path = tmp_path / "drivers.md"
    path.write_text(f"# title\n\nprose\n\n{BEGIN}\n{between}{END}\n\n## after\n", encoding="utf-8")
    return path


def test_make_tables_rewrites_only_what_lies_between_the_markers(tmp_path: Path) -> None:
    path = _page(tmp_path, "an old table\n")
    assert (
        cross_sdk.stale(path, ROWS, "2.0.0")
        == "drivers.md's cross-SDK table is stale: run `make tables`"
    )
    assert cross_sdk.write(path, ROWS, "2.0.0") is True
    text = path.read_text(encoding="utf-8")
    assert text.startswith(f"# title\n\nprose\n\n{BEGIN}\n")
    assert text.endswith(f"{END}\n\n## after\n")
    assert cross_sdk.generated(ROWS, "2.0.0") in text and "an old table" not in text
    assert cross_sdk.stale(path, ROWS, "2.0.0") is None
    assert cross_sdk.write(path, ROWS, "2.0.0") is False  # unchanged: not written again


def test_a_new_fixture_makes_the_table_stale_in_one_line(tmp_path: Path) -> None:
    path = _page(tmp_path, "")
    cross_sdk.write(path, ROWS, "2.0.0")
    new = CrossRow("P5-2.13.0-0000000000000004.json", None, "holds", "", "pipeline")
    said = cross_sdk.stale(path, [*ROWS, new], "2.0.0")
    assert said == "drivers.md's cross-SDK table is stale: run `make tables`"
    cross_sdk.write(path, [*ROWS, new], "2.0.0")
    assert cross_sdk.stale(path, [*ROWS, new], "2.0.0") is None


def test_a_stale_table_in_the_project_is_named_by_its_path(tmp_path: Path, monkeypatch) -> None:
    # The table lives in docs/drivers.md: the stale message names that page,
    # not only a file name that could be anywhere.
    (tmp_path / "docs").mkdir()
    page = _page(tmp_path / "docs", "an old table\n")
    monkeypatch.setattr(cross_sdk, "ROOT", tmp_path)
    assert (
        cross_sdk.stale(page, ROWS, "2.0.0")
        == "docs/drivers.md's cross-SDK table is stale: run `make tables`"
    )


def test_make_tables_writes_the_pages_that_hold_the_generated_text() -> None:
    assert cross_sdk.PAGE == ROOT / "docs" / "drivers.md"
    assert fault_headers.PAGE == ROOT / "docs" / "known-faults.md"
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "fault_headers --write docs/known-faults.md" in makefile
    assert "cross_sdk --write docs/drivers.md" in makefile
    # Nothing generated is left in the README.
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert BEGIN not in readme and END not in readme
    assert not list(fault_headers._HEADER.finditer(readme))


def test_the_summary_counts_come_from_the_rows() -> None:
    assert cross_sdk.summary(ROWS) == (
        "Of the 3 Python fixtures, 2 get a verdict: 2 scripts (1 sliding-window on the "
        "stand-in) and 0 recorded sessions (0 on the stand-in, 0 translated); 1 hold, 1 show "
        "only known ADK-JS faults, none FAILS. The other 1 are n/a."
    )


def test_the_drivers_page_has_the_markers_and_no_hand_counted_cross_sdk_summary() -> None:
    text = cross_sdk.PAGE.read_text(encoding="utf-8")
    assert text.count(BEGIN) == 1 and text.count(END) == 1 and text.index(BEGIN) < text.index(END)
    before, after = text.split(BEGIN)[0], text.split(END)[1]
    assert "Python fixtures, " not in before + after  # the counts are written, not typed
    assert "`make tables`" in before


def test_write_refuses_a_file_without_the_markers_in_one_line(tmp_path: Path, capsys) -> None:
    path = tmp_path / "drivers.md"
    path.write_text("# no table here\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no cross-SDK table between the markers"):
        cross_sdk.stale(path, ROWS, "2.0.0")
    assert cross_sdk.main(["--write", str(path)]) == 2  # refused before anything runs
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1
    assert path.read_text(encoding="utf-8") == "# no table here\n"


# -- the known faults' releases (fault_headers) -------------------------------------------
ORDER = ["1.16.0", "1.17.0", "1.18.0", "2.0.0", "2.1.0", "2.12.0", "2.13.0"]


@pytest.mark.parametrize(
    ("releases", "said"),
    [
        (["2.12.0", "2.13.0"], "2.12.0, 2.13.0"),  # a run of two
        (["1.17.0", "1.18.0", "2.0.0"], "1.17.0 to 2.0.0"),  # a run of three
        (["1.16.0", "2.0.0", "2.1.0", "2.12.0"], "1.16.0, 2.0.0 to 2.12.0"),
        (["2.13.0", "1.16.0"], "1.16.0, 2.13.0"),  # in the matrix's order, not as given
        (ORDER, "all 7 releases"),
        (["1.17.0", "9.0.0"], "1.17.0, 9.0.0"),  # one the matrix lacks: after the runs
        ([], ""),
    ],
)
def test_release_spans_are_runs_over_the_matrix_order(releases, said):
    assert fault_headers.spans(releases, ORDER) == said


def test_the_known_faults_page_states_each_faults_releases_as_known_faults_py_does():
    # Derived text goes stale when the matrix moves a release list: one line
    # naming the page and the command that rewrites it.
    page = fault_headers.PAGE.read_text(encoding="utf-8")
    order = fault_headers.matrix_order()
    stale = fault_headers.stale_headers(page, order)
    if stale:
        pytest.fail(
            f"docs/known-faults.md's known-fault releases are stale ({', '.join(stale)}): "
            "run `make tables`",
            pytrace=False,
        )
    # Every known fault has its entry (a fault the list lacks is not "current").
    named = {m["id"] for m in fault_headers._HEADER.finditer(page)}
    assert {f.id for f in KNOWN_FAULTS} <= named


def test_a_stale_fault_entry_is_rewritten_and_the_rest_kept(tmp_path, capsys):
    fault = KNOWN_FAULTS[0]
    page = tmp_path / "known-faults.md"
    text = (
        f"intro (kept; as is)\n\n1. **`{fault.id}`** ({fault.invariant[0]};\n   1.0.0 to 1.1.0). "
        "Prose (kept).\n2. **`not-a-fault`** (P9; 1.0.0). Kept.\n"
    )
    page.write_text(text, encoding="utf-8")
    assert fault_headers.main(["--check", str(page)]) == 1
    assert capsys.readouterr().err == (
        f"{page}'s known-fault releases are stale ({fault.id}): run `make tables`\n"
    )
    assert fault_headers.main(["--write", str(page)]) == 0
    new = page.read_text(encoding="utf-8")
    expected = fault_headers.header(fault.id, fault_headers.matrix_order())
    assert f"1. **`{fault.id}`** ({expected}). Prose (kept)." in new
    assert new.startswith("intro (kept; as is)") and "**`not-a-fault`** (P9; 1.0.0)" in new
    assert fault_headers.main(["--check", str(page)]) == 0


def test_fault_headers_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    assert fault_headers.main(["--check", str(tmp_path / "missing.md")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "missing.md: cannot read" in err


def test_a_fault_header_ends_with_its_fix_or_why_it_has_none(tmp_path, monkeypatch):
    from dataclasses import replace

    from compaction_harness.faults.catalogue import FAULTS

    order = fault_headers.matrix_order()
    fixed = next(f for f in FAULTS if f.fix)
    assert fault_headers.header(fixed.id, order).endswith(f"; fix {fixed.fix}")
    # Every registered fault has a fix or a reason: a record without either
    # (a fault whose fix is still to write) says so.
    unfixed = replace(fixed, fix=None, no_fix_reason=None)
    monkeypatch.setattr(fault_headers, "FAULTS", (unfixed,))
    assert fault_headers.header(unfixed.id, order).endswith("; no fix yet")
    # A reason may hold parentheses: the header is still found, current, and rewritten.
    why = replace(unfixed, no_fix_reason="ADK reads timestamps everywhere (see P4)")
    monkeypatch.setattr(fault_headers, "FAULTS", (why,))
    said = fault_headers.header(why.id, order)
    assert said.endswith("; no fix: ADK reads timestamps everywhere (see P4)")
    text = f"1. **`{why.id}`** ({said}). Prose.\n"
    assert fault_headers.stale_headers(text, order) == []
    stale = f"1. **`{why.id}`** (P0; 1.0.0; no fix: old (reason)). Prose.\n"
    assert fault_headers.stale_headers(stale, order) == [why.id]
    assert fault_headers.rewritten(stale, order) == text
