"""The project's own wiring: one default release, a CI script that runs the gate."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from compaction_harness import DEFAULT_ADK_RELEASE
from compaction_harness.adk import ADK_RELEASE

ROOT = Path(__file__).resolve().parents[1]


def test_the_default_release_is_pinned_in_one_value_everywhere():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert pyproject["project"]["optional-dependencies"]["adk"] == [
        f"google-adk[db]=={DEFAULT_ADK_RELEASE}"
    ]
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(rf"^ADK \?= {re.escape(DEFAULT_ADK_RELEASE)}$", makefile, re.M)


def test_ci_runs_the_readme_test_command():
    assert "make test" in (ROOT / ".ci" / "run").read_text()
    assert "make test" in (ROOT / "README.md").read_text()


def test_src_never_imports_tests_or_strategies():
    for path in (ROOT / "src").rglob("*.py"):
        text = path.read_text()
        assert not re.search(r"^\s*(from|import) (strategies|tests)\b", text, re.M), path


def test_only_the_adapter_imports_google_adk_at_module_level():
    for path in (ROOT / "src" / "compaction_harness").glob("*.py"):
        top_level = [line for line in path.read_text().splitlines() if not line.startswith(" ")]
        imports_adk = any(re.match(r"(from|import) google\.adk", line) for line in top_level)
        assert imports_adk == (path.name == "adk.py"), path.name


def test_installed_release_is_reported():
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", ADK_RELEASE)
