"""The project's own wiring: one default release, a CI script that runs the gate."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from compaction_harness import DEFAULT_ADK_RELEASE
from compaction_harness.sdk.python.adk import ADK_RELEASE

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
        'echo "$*" >> "$(dirname "$0")/../called"\n'
        f'[ "$*" = test ] && exit {status}\n'
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
    # ADK-JS's install runs in the background (stopped at the exit, maybe
    # before it wrote a line); the JS gate and coverage never run.
    called = (tmp_path / "called").read_text().splitlines()
    assert [c for c in called if c != "js-env"] == ["lint", "test"]


def _ci_with_fake_make(tmp_path: Path, script: str) -> subprocess.CompletedProcess:
    (tmp_path / ".ci").mkdir()
    shutil.copy(ROOT / ".ci" / "run", tmp_path / ".ci" / "run")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "make"
    fake.write_text('#!/bin/sh\necho "$*" >> "$(dirname "$0")/../called"\n' + script)
    fake.chmod(0o755)
    return subprocess.run(
        ["bash", str(tmp_path / ".ci" / "run")],
        env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_ci_waits_for_the_js_install_before_the_js_gate(tmp_path: Path):
    # The install (slow: node-gyp compiles sqlite3) finishes after the Python
    # gate here; `make test SDK=js` must start only after it.
    done = _ci_with_fake_make(
        tmp_path,
        '[ "$1" = js-env ] && { sleep 2; echo js-env-done >> "$(dirname "$0")/../called"; }\n'
        "exit 0\n",
    )
    assert done.returncode == 0, done.stderr
    called = (tmp_path / "called").read_text().splitlines()
    assert called.index("js-env-done") < called.index("test SDK=js") < called.index("coverage")
    assert called.index("test") < called.index("js-env-done")
    assert (tmp_path / "build" / "ci-js-env.log").exists()


def test_ci_fails_in_one_line_when_the_js_install_fails(tmp_path: Path):
    done = _ci_with_fake_make(
        tmp_path,
        '[ "$1" = js-env ] && { echo "error: npm ci failed in sdks/adk-js" >&2; exit 2; }\n'
        "exit 0\n",
    )
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1, done.stderr
    assert "make js-env" in done.stderr and "npm ci failed in sdks/adk-js" in done.stderr
    assert "build/ci-js-env.log" in done.stderr
    assert "test SDK=js" not in (tmp_path / "called").read_text()


def test_js_env_names_the_build_tools_sqlite3_needs_in_one_line(tmp_path: Path):
    # @mikro-orm/sqlite's sqlite3 is compiled by node-gyp during npm ci: without
    # a compiler the install stops before npm runs, in one line.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("node", "npm", "python3", "make"):
        found = shutil.which(tool)
        if found is None:
            pytest.skip(f"{tool} is not installed")
        (bin_dir / tool).symlink_to(found)
    done = subprocess.run(
        [shutil.which("make"), "-s", "js-env", f"ADKJS_STAMP={tmp_path / 'stamp'}"],
        cwd=ROOT,
        env={**os.environ, "PATH": str(bin_dir)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    # One line of ours (make adds its own "*** ... Error 2" after it; under
    # `make test` it is make[1]).
    first, *rest = done.stderr.splitlines()
    assert first.startswith("error: ") and "python3, make and g++" in first
    assert all(re.match(r"make(\[\d+\])?: \*\*\*", line) for line in rest), rest
    assert not (tmp_path / "stamp").exists()


@pytest.mark.parametrize(
    "goal", [["js-env"], ["test", "SDK=js"], ["fuzz", "SDK=js"], ["differential", "SDK=js"]]
)
def test_sdk_js_without_node_is_one_line_and_exit_2(tmp_path: Path, goal: list[str]):
    # ADK-JS installed (a fresh stamp: `make js-env` has nothing to do) but no
    # `node` on PATH: one line before anything runs, not a traceback per item
    # nor "Nothing to be done".
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("make", "sh"):
        found = shutil.which(tool)
        if found is None:
            pytest.skip(f"{tool} is not installed")
        (bin_dir / tool).symlink_to(found)
    # The interpreter itself (a version manager's `python3` may be a bash script).
    (bin_dir / "python3").symlink_to(Path(sys.executable).resolve())
    stamp = tmp_path / "stamp"
    stamp.touch()
    done = subprocess.run(
        [shutil.which("make"), *goal, f"ADKJS_STAMP={stamp}"],
        cwd=ROOT,
        env={**os.environ, "PATH": str(bin_dir)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, (done.stdout[-2000:], done.stderr[-2000:])
    assert done.stderr.count("\n") == 1, done.stderr[-2000:]
    assert "node" in done.stderr and "Traceback" not in done.stdout + done.stderr


@pytest.mark.parametrize("budget", ["abc", "-5", "1e3", "60s", "1 2", "."])
def test_a_budget_that_is_not_a_number_of_seconds_is_one_line_and_exit_2(budget: str):
    # pytest itself would print its whole usage message for --fuzz-seconds=abc.
    done = subprocess.run(
        [shutil.which("make") or "make", "--no-print-directory", "fuzz", f"FUZZ_SECONDS={budget}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and done.stdout == "", done.stdout[-2000:]
    assert done.stderr.count("\n") == 1 and f"FUZZ_SECONDS={budget}:" in done.stderr, done.stderr


def test_the_readme_budget_bound_names_the_benchmark_that_measures_it(tmp_path: Path):
    # The FUZZ_SECONDS row states a measured bound: the script that measures it
    # exists and refuses, in one line, a --load it cannot make.
    row = next(
        line
        for line in (ROOT / "README.md").read_text().splitlines()
        if line.startswith("| `FUZZ_SECONDS=")
    )
    assert "bench/fuzz_budget.py --load" in row
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "fuzz_budget.py"), "--load", "--seconds", "1"],
        env={**os.environ, "PATH": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stdout.count("\n") == 1 and "stress-ng is not installed" in done.stdout
