"""The generated fault catalogue pages (docs/faults/): current, complete, and what they hold.

Regenerate after changing a fault record, a fix or a fixture:
``PYTHONPATH=src .venv/adk-2.13.0/bin/python -m compaction_harness.surfaces.fault_pages
--write docs/faults``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from compaction_harness.faults.catalogue import FAULTS, JS, JS_FIX_INDEX, PYTHON
from compaction_harness.sdk.python.fixes import FIXES
from compaction_harness.surfaces import fault_pages

ROOT = Path(__file__).resolve().parents[2]
PAGES = ROOT / "docs" / "faults"
CORPUS = ROOT / "tests" / "repros"


def _page(fault_id: str) -> str:
    return (PAGES / f"{fault_id}.md").read_text(encoding="utf-8")


def _diff_texts(sdk: str, name: str) -> list[str]:
    """Every diff file of a fix, read from where the SDK keeps them."""
    if sdk == PYTHON:
        return [p.read_text(encoding="utf-8") for p in FIXES[name].diffs().values()]
    entry = json.loads(JS_FIX_INDEX.read_text(encoding="utf-8"))[name]
    files = [entry["diff"], *entry.get("variants", ())]
    return [(JS_FIX_INDEX.parent / f).read_text(encoding="utf-8") for f in files]


def test_the_committed_pages_are_what_write_writes(capsys):
    status = fault_pages.main(["--check", str(PAGES)])
    said = capsys.readouterr().err.strip()
    assert status == 0, said  # e.g. "...: fault pages differ ...: x.md (stale); regenerate ..."


def test_every_known_fault_has_a_page_and_the_index_lists_it():
    index = (PAGES / fault_pages.INDEX).read_text(encoding="utf-8")
    assert "python -m compaction_harness.surfaces.fault_pages --write docs/faults" in (
        "\n".join(index.splitlines()[:5])
    ), "the index's first lines say how to regenerate it"
    for fault in FAULTS:
        assert (PAGES / f"{fault.id}.md").is_file(), f"no page for {fault.id}"
        row = f"| [`{fault.id}`]({fault.id}.md) | {fault.sdk} | "
        assert row in index, f"the index's table of its SDK does not list {fault.id}"
        page = _page(fault.id)
        assert page.splitlines()[1] == f"# `{fault.id}`"
        assert fault.title in page and fault.user_sees in page
    assert len(list(PAGES.glob("*.md"))) == len(FAULTS) + 1


def test_a_page_of_a_fault_with_a_fix_holds_the_fix_and_its_diff():
    fixed = [f for f in FAULTS if f.fix]
    assert {f.sdk for f in fixed} == {PYTHON, JS}
    for fault in fixed:
        page = _page(fault.id)
        for name in fault.fix.split(", "):
            assert f"### `{name}`" in page, f"{fault.id}: no section for fix {name}"
            diffs = _diff_texts(fault.sdk, name)
            assert diffs, f"{name} has no diff file"
            for text in diffs:
                assert text.rstrip("\n") in page, f"{fault.id}: a diff of {name} is missing"
        assert "```diff" in page


def test_a_page_of_a_fault_without_a_fix_states_the_reason():
    unfixed = [f for f in FAULTS if not f.fix]
    assert unfixed, "no fault without a fix to check"
    for fault in unfixed:
        section = _page(fault.id).split("## Fix", 1)[1].split("\n## ", 1)[0]
        expected = f"No fix: {fault.no_fix_reason}." if fault.no_fix_reason else "No fix yet: none"
        assert expected in section, f"{fault.id}: the reason for having no fix is missing"
        assert "```diff" not in section


def test_check_on_a_tampered_copy_names_the_page_in_one_line(tmp_path, capsys):
    copy = tmp_path / "faults"
    shutil.copytree(PAGES, copy)
    assert fault_pages.main(["--check", str(copy)]) == 0
    capsys.readouterr()
    tampered = copy / f"{FAULTS[0].id}.md"
    tampered.write_text(tampered.read_text(encoding="utf-8").replace("## Fix", "## Fixed"))
    (copy / f"{FAULTS[-1].id}.md").unlink()
    before = {p.name: p.read_bytes() for p in copy.iterdir()}
    assert fault_pages.main(["--check", str(copy)]) == 1
    out = capsys.readouterr()
    lines = out.err.strip().splitlines()
    assert len(lines) == 1, out.err
    assert f"{FAULTS[0].id}.md (stale)" in lines[0]
    assert f"{FAULTS[-1].id}.md (missing)" in lines[0]
    assert {p.name: p.read_bytes() for p in copy.iterdir()} == before, "--check wrote"
    # --write repairs it, and removes a page of no fault.
    (copy / "gone-fault.md").write_text("old\n")
    assert fault_pages.main(["--write", str(copy)]) == 0
    assert fault_pages.stale_pages(copy) == []
    assert not (copy / "gone-fault.md").exists()


def test_a_fixture_added_for_a_fault_appears_on_its_page(tmp_path, monkeypatch):
    corpus = tmp_path / "repros"
    shutil.copytree(CORPUS, corpus)
    fault = next(f for f in FAULTS if f.sdk == PYTHON and f.fix)
    source = next(
        p
        for p in sorted(CORPUS.glob("*.json"))
        if json.loads(p.read_text(encoding="utf-8")).get("sdk") is None
    )
    data = json.loads(source.read_text(encoding="utf-8"))
    data["known_fault"] = fault.id
    data["note"] = "a fixture added by the test, marked with the fault"
    added = corpus / f"{data['invariant']}-{data['adk_release']}-00000000feedface.json"
    added.write_text(json.dumps(data, indent=1), encoding="utf-8")
    monkeypatch.setattr(fault_pages, "CORPUS", corpus)
    page = fault_pages.pages()[f"{fault.id}.md"]
    link = f"[`{added.name}`](../../tests/repros/{added.name})"
    assert link in page
    assert "a fixture added by the test, marked with the fault" in page
    assert f"make show FIXTURE=tests/repros/{added.name}" in page
    assert f"export --out exported tests/repros/{added.name}" in page
    assert link not in _page(fault.id), "the committed page cannot know the added fixture"


def test_generation_is_deterministic_holds_no_machine_path_and_runs_no_sdk():
    # A fresh interpreter: nothing imports google.adk and no process starts.
    code = (
        "import subprocess, sys\n"
        "def refuse(*a, **k): raise AssertionError('a process was started')\n"
        "subprocess.Popen.__init__ = refuse\n"
        "from compaction_harness.surfaces import fault_pages\n"
        "first = fault_pages.pages()\n"
        "assert first == fault_pages.pages()\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('google.adk'))\n"
        "assert not loaded, loaded\n"
        "print(len(first))\n"
    )
    environment = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=environment, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) == len(FAULTS) + 1
    for name, text in fault_pages.pages().items():
        for machine in (str(ROOT), tempfile.gettempdir(), str(Path.home())):
            assert len(machine) < 2 or machine not in text, (
                f"{name} holds a machine path ({machine})"
            )
        assert not re.search(r"\b20\d\d-\d\d-\d\d[T ]\d\d:\d\d", text), f"{name}: a timestamp"


@pytest.mark.parametrize("word", ["--write", "--check", "docs/faults", "Exit status"])
def test_help_says_what_it_does(word, capsys):
    with pytest.raises(SystemExit) as exit_:
        fault_pages.main(["--help"])
    assert exit_.value.code == 0
    assert word in capsys.readouterr().out


def test_check_of_a_missing_folder_is_one_line_and_exit_2(tmp_path, capsys):
    assert fault_pages.main(["--check", str(tmp_path / "absent")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {tmp_path / 'absent'}: no such folder"]


def test_check_names_five_stale_pages_and_counts_the_rest(tmp_path, capsys):
    assert fault_pages.main(["--check", str(tmp_path)]) == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    missing = len(fault_pages.stale_pages(tmp_path))
    assert line.count("(missing)") == fault_pages.SHOWN
    assert f"and {missing - fault_pages.SHOWN} more;" in line
