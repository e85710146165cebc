"""The project's own wiring: one default release, a CI script that runs the gate."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from compaction_harness import DEFAULT_ADK_RELEASE
from compaction_harness.adk import ADK_RELEASE

ROOT = Path(__file__).resolve().parents[1]
#: The ADK adapter: the modules that import google.adk at module level.
ADAPTER = ("adk.py", "adk_runner.py")


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
        assert imports_adk == (path.name in ADAPTER), path.name


def test_installed_release_is_reported():
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", ADK_RELEASE)


def test_a_gate_that_runs_no_test_fails_with_one_line():
    # pytest exits 5 when it collects nothing; `make` turns every failure into
    # its own status 2, so the Makefile must say what happened and fail.
    done = subprocess.run(
        ["make", "test", "JOBS=0", "PYTEST_ARGS=-k no_test_has_this_name"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode not in (0, 5), done.stdout[-2000:]
    assert "error: pytest collected no tests" in done.stderr, done.stderr[-2000:]


@pytest.mark.parametrize("status", [1, 2, 5])
def test_ci_fails_when_the_gate_fails(tmp_path: Path, status: int):
    # .ci/run with a stand-in `make` whose `test` exits with `status`: CI must
    # fail (non-zero, never pytest's 5) and must not go on to coverage.
    (tmp_path / ".ci").mkdir()
    shutil.copy(ROOT / ".ci" / "run", tmp_path / ".ci" / "run")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "make"
    fake.write_text(
        "#!/bin/sh\n"
        'echo "$1" >> "$(dirname "$0")/../called"\n'
        f'[ "$1" = test ] && exit {status}\n'
        "exit 0\n"
    )
    fake.chmod(0o755)
    done = subprocess.run(
        ["bash", str(tmp_path / ".ci" / "run")],
        env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode not in (0, 5)
    assert (tmp_path / "called").read_text().split() == ["lint", "test"]
