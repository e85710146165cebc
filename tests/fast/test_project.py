"""The project's own wiring: one default release, a CI script that runs the gate, the layout."""

from __future__ import annotations

import ast
import functools
import itertools
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

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "compaction_harness"
#: The ADK adapter: the modules that import google.adk at module level.
ADAPTER = (
    "sdk.python.adk_events",
    "sdk.python.adk_helpers",
    "sdk.python.adk_prompt",
    "sdk.python.adk_pipeline",
    "sdk.python.adk_runner",
    "sdk.python.runner_app",
    "sdk.python.runner_driver",
    "sdk.python.runner_record",
)


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


def test_only_sdk_python_imports_google_adk_and_only_the_adapter_at_module_level():
    outside = []
    for module, imports in _imports().items():
        adk = [i for i in imports if _is_google_adk(i.target)]
        if not module.startswith("sdk.python."):
            outside += [f"{i.where}: {i.target}" for i in adk]  # at module level or anywhere
        else:
            top_level = any(not i.local for i in adk)
            assert top_level == (module in ADAPTER), module
    assert outside == [], "only sdk/python may import google.adk:\n" + "\n".join(outside)


def test_installed_release_is_reported():
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", ADK_RELEASE)


def test_a_gate_that_runs_no_test_fails_with_one_line():
    # pytest exits 5 when it collects nothing; `make` turns every failure into
    # its own status 2, so the Makefile must say what happened and fail.
    done = subprocess.run(
        # One small file, not the whole suite: what is collected does not
        # matter, only that nothing of it is selected.
        ["make", "test", "JOBS=0", "PYTEST_ARGS=tests/fast/test_docs.py -k no_test_has_this_name"],
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


def test_the_documented_budget_bound_names_the_benchmark_that_measures_it(tmp_path: Path):
    # The FUZZ_SECONDS row (the user guide's table of targets) states a measured
    # bound: the script that measures it exists and refuses, in one line, a
    # --load it cannot make.
    row = next(
        line
        for line in (ROOT / "docs" / "user-guide.md").read_text().splitlines()
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


# -- the package's layout: parts in folders, no import cycle ---------------------------------
class _Import:
    """One import statement's target: ``target`` is a module of the package
    (its name below ``compaction_harness``, "" for the package itself) when
    ``inside``, else the imported module's full name."""

    def __init__(self, target: str, inside: bool, local: bool, where: str) -> None:
        self.target, self.inside, self.local, self.where = target, inside, local, where


def _modules() -> dict[str, Path]:
    """Every module of the package by name below ``compaction_harness``
    (``sdk.python.adk``; a package by its own name, the root as "")."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _imports() -> dict[str, list[_Import]]:
    """Each module's imports, module-level and function-local, relative and
    absolute: ``from X import name`` imports the module ``X.name`` when there
    is one, else ``X``. A fresh copy each call (a test may plant an import);
    the source is parsed once per test process."""
    return {module: list(found) for module, found in _parsed_imports().items()}


@functools.cache
def _parsed_imports() -> dict[str, tuple[_Import, ...]]:
    modules = _modules()
    out: dict[str, list[_Import]] = {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        local = {
            id(node)
            for fn in ast.walk(tree)
            if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            for node in ast.walk(fn)
        }
        found = out.setdefault(module, [])
        for node in ast.walk(tree):
            where = f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = (
                        ["compaction_harness", *module.split(".")]
                        if module
                        else ["compaction_harness"]
                    )
                    if path.name != "__init__.py":
                        base.pop()
                    base = base[: len(base) - node.level + 1]
                    origin = ".".join(base + ([node.module] if node.module else []))
                else:
                    origin = node.module or ""
                names = [f"{origin}.{alias.name}" for alias in node.names]
                names = [n if _inside(n) in modules else origin for n in names]
            else:
                continue
            for name in dict.fromkeys(names):
                inside = name == "compaction_harness" or name.startswith("compaction_harness.")
                target = _inside(name) if inside else name
                while inside and target not in modules:  # an attribute of a module
                    target = target.rpartition(".")[0]
                found.append(_Import(target, inside, id(node) in local, where))
    return {module: tuple(found) for module, found in out.items()}


def _inside(name: str) -> str:
    return name.removeprefix("compaction_harness").removeprefix(".")


def _is_google_adk(name: str) -> bool:
    return name == "google.adk" or name.startswith("google.adk.")


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` (``a -> b -> ... -> a`` as a list), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_package_import_graph_has_no_cycle():
    imports = _imports()
    graph = {
        m: {i.target for i in found if i.inside and i.target != m} for m, found in imports.items()
    }
    cycle = _cycle(graph)
    if cycle:
        steps = []
        for a, b in itertools.pairwise(cycle):
            at = next(i for i in imports[a] if i.inside and i.target == b)
            kind = "function-local" if at.local else "module level"
            steps.append(f"  {a or 'compaction_harness'} -> {b} ({at.where}, {kind})")
        pytest.fail("an import cycle:\n" + "\n".join(steps))


def test_spec_imports_nothing_else_of_the_package_and_only_the_standard_library():
    wrong = [
        f"{i.where}: {i.target}"
        for module, found in _imports().items()
        if module.split(".")[0] == "spec"
        for i in found
        if not (
            (i.inside and i.target.split(".")[0] == "spec")
            or (not i.inside and i.target.split(".")[0] in sys.stdlib_module_names)
        )
    ]
    assert wrong == [], "spec/ is pure:\n" + "\n".join(wrong)


#: What each part may import of the package (module-name prefixes; "" is the
#: package itself), as each folder's __init__ docstring says; surfaces/ may
#: import every part.
MAY_IMPORT = {
    "spec": ("spec",),
    "faults": ("spec", "faults", "sdk.python.python_fixes"),
    "sdk.python": ("", "envs", "spec", "faults", "sdk.python", "sdk.protocol", "sdk.generic"),
    "sdk.js": ("spec", "faults", "sdk.js", "sdk.protocol", "sdk.generic"),
    "store": ("", "spec", "store", "sdk.protocol"),
    "sdk": ("spec", "faults", "sdk"),
}


def test_each_part_imports_only_what_its_docstring_allows():
    wrong = []
    for module, found in _imports().items():
        part = next((p for p in MAY_IMPORT if module == p or module.startswith(p + ".")), None)
        if part is None:
            continue
        allowed = MAY_IMPORT[part]
        for i in found:
            if i.inside and not any(
                i.target == a or i.target.startswith(a + ".") or (a == "" and i.target == "")
                for a in allowed
            ):
                wrong.append(f"{i.where}: {module} imports {i.target}")
    assert wrong == [], "\n".join(wrong)


def _importers_of(targets: tuple[str, ...], *, among) -> list[str]:
    """``where: module imports target`` for each import (module level or
    function-local) of a module that ``among(module)`` selects, whose target
    is one of ``targets`` or below it."""
    return [
        f"{i.where}: {module} imports {i.target}"
        for module, found in _imports().items()
        if among(module)
        for i in found
        if i.inside and any(i.target == t or i.target.startswith(t + ".") for t in targets)
    ]


def _in(part: str):
    return lambda module: module == part or module.startswith(part + ".")


def test_the_two_sdk_packages_meet_only_in_the_specification():
    # What both drivers share (the pipeline checkers, the outcome type) lives
    # in spec/: sdk.js never imports sdk.python, nor sdk.python sdk.js.
    assert _importers_of(("sdk.python",), among=_in("sdk.js")) == []
    assert _importers_of(("sdk.js",), among=_in("sdk.python")) == []


#: The modules of each SDK that run a case and record and check what it did:
#: the drivers and what they are made of (issue 23; DESIGN, part 9: running
#: and checking never classify).
RUNNING = {
    "google-adk": tuple(
        f"sdk.python.{m}"
        for m in (
            "interpreter",
            "driver",
            "pipeline",
            "adk_runner",
            "runner_driver",
            "runner_app",
            "runner_record",
            "runner_checks",
            "unit",
            "metamorphic",
            "drivers",
        )
    ),
    "adk-js": tuple(
        f"sdk.js.{m}"
        for m in ("case", "node", "events", "timeline", "run", "checks", "trigger", "drivers")
    ),
}
#: Classification by fix, and what re-exports it: it re-runs a case through a
#: runner after the run, so no runner imports it, directly or through another
#: module of the package.
CLASSIFYING = (
    "faults.classify",
    "sdk.generic",
    "sdk.python.triage",
    "sdk.python.reruns",
    "sdk.python.cases",
    "sdk.python.known_faults",
    "sdk.python.entry",
    "sdk.js.triage",
    "sdk.js.adk_js",
    "sdk.js.entry",
)
#: Names a runner never imports, from any module: what classifies.
CLASSIFYING_NAMES = frozenset(
    {"Triage", "triage", "reruns", "rerun", "by_fix", "judge", "classify"}
)


def _classification_reached(imports: dict[str, list[_Import]]) -> list[str]:
    """For each runner (:data:`RUNNING`) that reaches a classifying module
    through the package's imports (module level or function-local), the
    chain of imports that does."""
    wrong = []
    for module in (m for modules in RUNNING.values() for m in modules):
        # module reached -> (the module importing it, where)
        came: dict[str, tuple[str, str]] = {}
        queue = [module]
        while queue:
            here = queue.pop(0)
            for i in imports.get(here, ()):
                if not i.inside or i.target == module or i.target in came:
                    continue
                came[i.target] = (here, i.where)
                if i.target not in CLASSIFYING:
                    queue.append(i.target)
                    continue
                chain, at = [], i.target
                while at != module:
                    chain.append(f"{came[at][1]} -> {at}")
                    at = came[at][0]
                wrong.append(f"{module} imports {i.target}: " + ", ".join(reversed(chain)))
    return wrong


def _classifying_names(source: str) -> list[str]:
    """The names of :data:`CLASSIFYING_NAMES` that ``source`` imports."""
    return sorted(
        {
            alias.name
            for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.ImportFrom | ast.Import)
            for alias in node.names
            if alias.name.rpartition(".")[2] in CLASSIFYING_NAMES
        }
    )


def test_no_driver_module_of_either_sdk_imports_classification():
    assert _classification_reached(_imports()) == []
    modules = _modules()
    named = {
        module: names
        for module in (m for ms in RUNNING.values() for m in ms)
        if (names := _classifying_names(modules[module].read_text(encoding="utf-8")))
    }
    assert named == {}


def test_the_classification_rule_fires_on_a_planted_import():
    # A function-local import of the re-run registry in the Runner driver's
    # checks: that module, and the drivers that import it, reach classification.
    imports = _imports()
    planted = _Import("sdk.python.reruns", True, True, "planted:1")
    imports["sdk.python.runner_checks"] = [*imports["sdk.python.runner_checks"], planted]
    reached = _classification_reached(imports)
    assert "sdk.python.runner_checks imports sdk.python.reruns: planted:1 -> sdk.python.reruns" in (
        reached
    )
    assert any(r.startswith("sdk.python.adk_runner imports sdk.python.reruns") for r in reached)
    assert _classifying_names("from .pipeline import Triage\nfrom .. import faults") == ["Triage"]
    assert _classifying_names("from .triage import judge") == ["judge"]


def test_spec_imports_neither_an_sdk_package_nor_faults():
    assert _importers_of(("sdk", "faults"), among=_in("spec")) == []


def test_nothing_below_surfaces_imports_a_surface():
    # Only python -m compaction_harness (__main__) starts the surfaces.
    below = [m for m in _modules() if m != "__main__" and not _in("surfaces")(m)]
    assert _importers_of(("surfaces",), among=below.__contains__) == []


def test_only_sdk_js_names_the_node_driver():
    # The Node driver is started (shutil.which("node"), driver.mjs) by sdk/js alone.
    named = []
    for module, path in _modules().items():
        if module == "sdk.js" or module.startswith("sdk.js."):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and node.body
            and isinstance(node.body[0], ast.Expr)
        }
        named += [
            f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
            and ("driver.mjs" in node.value or node.value == "node")
        ]
    assert named == [], "\n".join(named)


def test_every_folder_of_the_package_has_an_init_with_a_docstring():
    folders = [PACKAGE, *sorted(p for p in PACKAGE.rglob("*") if any(p.glob("*.py")))]
    for folder in folders:
        init = folder / "__init__.py"
        assert init.is_file(), f"{folder.relative_to(ROOT)} has no __init__.py"
        docstring = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        assert docstring and len(docstring.split()) >= 20, (
            f"{init.relative_to(ROOT)}: a docstring saying what the folder holds and may import"
        )


def test_no_module_is_over_800_lines():
    over = {
        module: len(path.read_text(encoding="utf-8").splitlines())
        for module, path in _modules().items()
        if len(path.read_text(encoding="utf-8").splitlines()) > 800
    }
    assert over == {}, "issue 23: no module over 800 lines; split by role"
