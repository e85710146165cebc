"""The fixes of ADK-JS's known faults (``sdks/adk-js/fixes/``, ``faults/js_fixes.py``).

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

import json
from pathlib import Path

import pytest

from compaction_harness import adk_js
from compaction_harness.faults import js_fixes
from compaction_harness.faults.classify import same_failure
from compaction_harness.fixtures import load_fixture
from compaction_harness.verdicts import judge_fixture

REPROS = Path(__file__).parent / "repros"
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
    assert f"fix {name}" in verdict.reason
    mine = [v for v, fault in verdict.verdict.known if fault == _known_fault(path)]
    assert mine
    monkeypatch.setenv("HARNESS_FIXES", name)
    assert adk_js.active_fixes() == (name,)
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
