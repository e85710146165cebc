"""Exported tests are upstream-ready: adk-python's formatter and linter take
them unchanged, and each fails while its fault is there and passes where it
is absent.

Every committed fixture that can be exported is exported once per session
(:func:`exported`): in this process for fixtures of the installed release,
with its own release's Python for the others where that environment exists
(``.venv/adk-<release>/``, or a folder of such environments named by
HARNESS_RELEASE_ENVS; CI has only the pinned release, so those are left
out there). The exported files are then run with pytest in a subprocess,
once per release and once more on the installed release with every fix
applied (``HARNESS_FIXES=all`` and the harness's pytest plugin: each fix is
a diff of ADK's own source, ``compaction_harness.sdk.python.fixes``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest
from builders import once_per_run
from hypothesis import HealthCheck, given, settings

from compaction_harness.faults.classify import known_or_new_only
from compaction_harness.sdk.python.adk import ADK_RELEASE
from compaction_harness.sdk.python.cases import run_case
from compaction_harness.sdk.python.fixes import FIXES, fixes_for, unavailable
from compaction_harness.sdk.python.known_faults import fault_for
from compaction_harness.store.fixtures import Fixture, load_fixture, write_fixture
from compaction_harness.surfaces._pysource import ADK_PYINK_CONFIG, LINE_LENGTH
from compaction_harness.surfaces.export import export_test
from compaction_harness.surfaces.export_head import ExportError, fault_fixes, name_of_test
from compaction_harness.surfaces.verdicts import judge_fixture
from strategies import scripts, token_cases, unit_cases

ROOT = Path(__file__).resolve().parents[2]
REPROS = ROOT / "tests" / "repros"

#: The known faults that have a fix the installed release can take (the registry's).
FIXED = frozenset(
    fault for name, fix in FIXES.items() if unavailable(name) is None for fault in fix.faults
)


def expected_refusal(fixture) -> str | None:
    """What export must say when it refuses ``fixture`` for what the fixture
    *is* (its driver, storage, invariant or kind), or None when nothing in the
    fixture itself forbids an export. Read from the fixture, never from a list
    of file names: a fixture a campaign writes tomorrow is judged the same way
    (a list of names turned the gate red on every new Runner-driver or
    database fixture)."""
    if getattr(fixture, "is_js", False):
        # export writes tests for adk-python's suite, not ADK-JS's.
        return f"an ADK-JS fixture (sdk 'adk-js', @google/adk {fixture.adk_release})"
    config = getattr(fixture.case, "config", None)
    if fixture.kind == "metamorphic":
        return "fixtures of kind 'metamorphic' cannot be exported"
    if getattr(config, "driver", "emulated") == "runner":
        return "cannot be exported: a runner-driver script"
    if getattr(config, "storage", "memory") != "memory":
        return f"cannot be exported: {config.storage} storage"
    if fixture.kind in ("script", "pipeline") and fixture.invariant in ("P0", "P7"):
        return f"cannot be exported: {fixture.invariant} is judged on a crash or a database"
    return None


#: Exports whose frozen session still fails with their fault's fix: the
#: fixture is a script, and its fault's fix stops the run from reaching the
#: state the export freezes; the frozen state itself shows another fault, which
#: the export's patch (its own fault's fix) leaves. Fixture -> (that fault, why).
#: Where that fault has a fix too, HARNESS_FIXES=all makes the export pass.
FROZEN_STATE_SHOWS: dict[str, tuple[str, str]] = {
    "P3-2.13.0-5b7603de3944ebea.json": (
        "compaction-assumes-events-are-stored-in-time-order",
        "re-run with token-compaction-keeps-the-running-invocation, the script makes no "
        "summary before the model call and nothing stalls; the export freezes the session "
        "that summary left, where a lagging host's events are stamped before the latest "
        "range's end, and ADK never offers them again (time order)",
    ),
}

#: Exports whose frozen session holds what another fault already wrote, which
#: no fix rewrites: they fail by their own assertion with every fix applied.
#: Fixture -> (that fault, why).
FROZEN_STATE_STORES: dict[str, tuple[str, str]] = {
    "P6-2.13.0-6acf84e054d552c5.json": (
        "summary-leaks-branch-events-to-siblings",
        "the frozen session holds a branchless summary that the release as published "
        "wrote with a sub-agent's event in it; with the branch fix that summary no longer "
        "hides the event, so ADK summarises it again on its own branch (what the fix is "
        "for), while the export's P6 check, frozen from the published run, counts the "
        "event as covered and calls that summary one of nothing new",
    ),
}


#: What else export may answer, found only by running the fixture: it holds on
#: the installed release (a harness fault's regression fixture; checked below
#: with the gate's own verdict), or its session holds a credential request.
HOLDS = "holds on google-adk"
CREDENTIAL = "the session holds a credential request"


def release_python(release: str) -> Path | None:
    """The Python of an environment with google-adk ``release``, if there is one."""
    if release == ADK_RELEASE:
        return Path(sys.executable)
    folders = [ROOT / ".venv" / f"adk-{release}"]
    if os.environ.get("HARNESS_RELEASE_ENVS"):
        folders.append(Path(os.environ["HARNESS_RELEASE_ENVS"]) / f"adk-{release}")
    for folder in folders:
        if (folder / ".ready").is_file() and (folder / "bin" / "python").is_file():
            return folder / "bin" / "python"
    return None


@dataclass
class Exported:
    folder: Path
    #: test name -> (fixture file name, the fixture's release, its known fault)
    tests: dict[str, tuple[str, str, str | None]]
    #: fixture file name -> why it was not exported here
    skipped: dict[str, str]
    #: fixture file name -> the reason export gave for refusing it
    refused: dict[str, str]
    #: test name -> the fixture it was exported from
    fixtures: dict[str, Fixture] = field(default_factory=dict)


def _export_elsewhere(python: Path, fixture: Path) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    done = subprocess.run(
        [str(python), "-m", "compaction_harness", "export", str(fixture)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Exported:
    """Every committed fixture exported (or refused), once per run: four
    tests read it, on whichever workers (see ``builders.once_per_run``)."""

    def dump(done: Exported) -> dict:
        return {"tests": done.tests, "skipped": done.skipped, "refused": done.refused}

    def load(data: dict, folder: Path) -> Exported:
        tests = {name: tuple(entry) for name, entry in data["tests"].items()}
        fixtures = {name: load_fixture(REPROS / entry[0]) for name, entry in tests.items()}
        return Exported(folder, tests, data["skipped"], data["refused"], fixtures)

    return once_per_run(tmp_path_factory, "exported", _export_all, dump, load)


def _export_all(folder: Path) -> Exported:
    (folder / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")  # not the harness's
    tests: dict[str, tuple[str, str, str | None]] = {}
    skipped: dict[str, str] = {}
    refused: dict[str, str] = {}
    fixtures: dict[str, Fixture] = {}
    for path in sorted(REPROS.glob("*.json")):
        fixture = load_fixture(path)
        expected = expected_refusal(fixture)
        if expected is not None:
            # Refused before anything runs, so on any release's fixture here.
            with pytest.raises(ExportError, match=re.escape(expected)) as refusal:
                export_test(fixture)
            refused[path.name] = str(refusal.value)
            continue
        python = release_python(fixture.adk_release)
        if python is None:
            skipped[path.name] = f"no environment with google-adk {fixture.adk_release}"
            continue
        if fixture.adk_release == ADK_RELEASE:
            try:
                source = export_test(fixture)
            except ExportError as exc:
                if HOLDS in str(exc):
                    # Only a fixture whose own invariant the gate finds
                    # holding has no failing call (ok; or, found on the fixed
                    # SDK, a fix's fixture that ADK as published breaks by
                    # another invariant only: a known fault's XFAIL).
                    with known_or_new_only():  # what shows, not which fault
                        judged = judge_fixture(fixture).verdict
                    shown = [*judged.new, *(v for v, _ in judged.known)]
                    assert all(v.invariant != fixture.invariant for v in shown), str(exc)
                else:
                    assert CREDENTIAL in str(exc), str(exc)
                refused[path.name] = str(exc)
                continue
        else:
            source = _export_elsewhere(python, path)
        name = name_of_test(fixture)
        (folder / f"{name}.py").write_text(source, encoding="utf-8")
        tests[name] = (path.name, fixture.adk_release, fixture.known_fault)
        fixtures[name] = fixture
    assert tests, "no fixture was exported"
    return Exported(folder, tests, skipped, refused, fixtures)


def test_every_committed_fixture_exports_or_is_refused_for_a_stated_reason(exported) -> None:
    names = {p.name for p in REPROS.glob("*.json")}
    done = {fixture for fixture, _, _ in exported.tests.values()}
    assert names == done | set(exported.refused) | set(exported.skipped)
    kinds = {load_fixture(REPROS / f).kind for f in done}
    assert {"unit", "token", "script", "pipeline"} <= kinds


def _upstream_checks(folder: Path) -> str:
    """pyink with adk-python's configuration (``[tool.pyink]``: 80 columns,
    two-space indentation), and ruff's pyflakes rules with lines of at most 80
    (adk-python has no ruff settings), on every ``test_*.py`` of ``folder``:
    what they said, or "" when both pass."""
    for tool in ("pyink", "ruff"):
        if importlib.util.find_spec(tool) is None:
            pytest.skip(f"{tool} is not installed (the [upstream] extra: make env installs it)")
    config = folder / "adk-pyproject.toml"
    config.write_text(ADK_PYINK_CONFIG, encoding="utf-8")
    files = sorted(str(p) for p in folder.glob("test_*.py"))
    pyink = subprocess.run(
        [sys.executable, "-m", "pyink", "--config", str(config), "--check", "--diff", *files],
        capture_output=True,
        text=True,
    )
    ruff = subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "check",
            "--isolated",
            "--select",
            "F,E501,W",
            "--line-length",
            str(LINE_LENGTH),
            "--target-version",
            "py310",
            *files,
        ],
        capture_output=True,
        text=True,
    )
    said = [p.stdout + p.stderr for p in (pyink, ruff) if p.returncode != 0]
    return "\n".join(said)


def test_exports_pass_adk_pythons_pyink_and_flake_checks(exported) -> None:
    said = _upstream_checks(exported.folder)
    assert not said, said


def _export_drawn(folder: Path, fixture: Fixture) -> bool:
    """Write ``fixture``'s export into ``folder``; False when export refuses it
    for what running it shows (no failing call, a credential request)."""
    try:
        source = export_test(fixture)
    except ExportError as exc:
        assert HOLDS in str(exc) or CREDENTIAL in str(exc), str(exc)
        return False
    (folder / f"{name_of_test(fixture)}.py").write_text(source, encoding="utf-8")
    return True


#: How many drawn cases of each kind the next test exports (at least).
DRAWN = 40


@pytest.mark.gate_first  # among the gate's longest items
def test_exports_of_drawn_cases_pass_adk_pythons_pyink_and_flake_checks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not only the committed fixtures: whatever a campaign can write. Unit
    and token cases (every retention, 0 included) and emulated pipeline
    scripts that break an invariant on the installed release, drawn
    derandomised by the campaign's own strategies, exported and checked as
    above (an unused name is pyflakes' F401 or F841). Drawn unit and token
    cases mostly hold, which export refuses for a fixture: their source is
    written anyway, for its style alone."""
    from compaction_harness.surfaces import export as exporting

    monkeypatch.setattr(exporting, "_refuse_if_it_holds", lambda fixture: None)
    drawn: dict[str, int] = {"unit": 0, "token": 0, "script": 0}

    def keep(kind: str, case, invariant: str) -> None:
        fixture = Fixture(kind, invariant, ADK_RELEASE, case, {}, {})
        drawn[kind] += _export_drawn(tmp_path, fixture)

    quick = settings(
        derandomize=True,
        database=None,
        deadline=None,
        max_examples=DRAWN,
        suppress_health_check=list(HealthCheck),
    )

    @quick
    @given(case=unit_cases())
    def units(case) -> None:
        keep("unit", case, "U3")

    @quick
    @given(case=token_cases())
    def tokens(case) -> None:
        keep("token", case, "U5")

    # About one drawn script in four breaks an invariant on 2.13.0 (the 40th
    # comes at the 143rd example): eight per case wanted leaves twice that
    # margin, and a strategy change that lowers the yield fails below, naming
    # how many were found, never silently.
    @settings(quick, max_examples=8 * DRAWN)
    @given(script=scripts(database=False))
    def pipelines(script) -> None:
        if drawn["script"] >= DRAWN:
            return
        outcome = run_case(script)
        found = [*outcome.violations, *(v for v, _ in outcome.known)]
        found = [v for v in found if v.invariant not in ("P0", "P7")]
        if found:
            keep("script", script, found[0].invariant)

    units()
    tokens()
    # Known or new is all `found` needs: no fault is named (one re-run with
    # every fix for a script with violations, not one per fix).
    with known_or_new_only():
        pipelines()
    assert drawn == {"unit": DRAWN, "token": DRAWN, "script": DRAWN}, drawn
    said = _upstream_checks(tmp_path)
    assert not said, said


def test_exports_carry_adk_pythons_license_header(exported) -> None:
    for path in exported.folder.glob("test_*.py"):
        lines = path.read_text(encoding="utf-8").splitlines()
        assert lines[0].startswith("# Copyright 20") and lines[0].endswith(" Google LLC")
        assert lines[2] == '# Licensed under the Apache License, Version 2.0 (the "License");'
        assert lines[12] == "# limitations under the License."
        assert "compaction_harness" not in "\n".join(lines[13:]).replace("compaction-harness", "")


def _outcomes(
    python: Path, folder: Path, names: list[str], fixes: str | None = None
) -> dict[str, str]:
    """Each named exported test's outcome under ``python``: ``passed``, or
    ``failed: <first line>``, or ``error: ...`` (one pytest run). ``fixes``:
    run with those google-adk fixes applied (``HARNESS_FIXES``, through the
    harness's pytest plugin)."""
    report = folder / f"report-{fixes or 'published'}-{python.parent.parent.name}.xml"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "tests"), str(ROOT / "src")]),
    }
    env.pop("HARNESS_FIXES", None)
    plugin: list[str] = []
    if fixes:
        env["HARNESS_FIXES"] = fixes
        plugin = ["-p", "compaction_harness.surfaces.pytest_plugin"]
    subprocess.run(
        [
            str(python),
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            *plugin,
            f"--junitxml={report}",
            *(str(folder / f"{n}.py") for n in names),
        ],
        capture_output=True,
        text=True,
        cwd=folder,
        env=env,
    )
    out: dict[str, str] = {}
    for case in ET.parse(report).iter("testcase"):
        failure, error = case.find("failure"), case.find("error")
        if failure is not None:
            out[case.get("name")] = "failed: " + (failure.get("message") or "").split("\n")[0]
        elif error is not None:
            out[case.get("name")] = "error: " + (error.get("message") or "").split("\n")[0]
        else:
            out[case.get("name")] = "passed"
    return out


def _by_assertion(outcome: str) -> bool:
    """A failure of the test's own assertion (not an ImportError, a TypeError...)."""
    message = outcome.removeprefix("failed: ")
    return outcome.startswith("failed: ") and (
        message.startswith("AssertionError") or message.startswith("assert")
    )


def expected_outcome(fixture: Fixture, release: str) -> str | None:
    """What the export of ``fixture`` must do on google-adk ``release``:
    ``"fails"`` (by its own assertion: the fault is there), ``"passes"`` (it
    is not), or None (nothing says: not asserted).

    A fixture marked with a known fault: it fails where the fault applies
    (``known_faults.py``), and passes on the installed release, the newest,
    where it does not. An unmarked fixture (a new finding, or one a campaign
    wrote with ``HARNESS_KNOWN_FAULTS=off``) failed on its own release, so its
    export fails there; on the installed release it fails exactly when the
    gate's own replay there breaks the fixture's invariant (known fault or
    not): an unmarked fixture of an older release whose fault persists fails
    on the newest release too."""
    if fixture.known_fault is not None:
        known = fault_for(fixture.known_fault)
        if known is not None and known.applies_to(release):
            return "fails"
        return "passes" if release == ADK_RELEASE else None
    if release == fixture.adk_release:
        return "fails"
    if release != ADK_RELEASE:
        return None
    verdict = judge_fixture(fixture).verdict
    broken = {v.invariant for v in verdict.new} | {v.invariant for v, _ in verdict.known}
    return "fails" if fixture.invariant in broken else "passes"


def _fixed_by_the_plugin(exported: Exported) -> list[str]:
    """The exports of a fault that has a fix that fail on the installed release."""
    return sorted(
        name
        for name, (_, _, fault) in exported.tests.items()
        if fault in FIXED and expected_outcome(exported.fixtures[name], ADK_RELEASE) == "fails"
    )


def _check_outcomes(exported: Exported) -> set[str]:
    """Run every export on its fixture's release and on the installed one and
    check each outcome against :func:`expected_outcome`; what was seen
    (``"<fixture> fails on <release>"``, ``"<fixture> passes on <release>"``)."""
    releases = {release for _, release, _ in exported.tests.values()} | {ADK_RELEASE}
    seen: set[str] = set()
    for release in sorted(releases):
        python = release_python(release)
        if python is None:  # no environment of that release here: its own run is left out
            continue
        names = sorted(
            name
            for name, (_, fixture_release, _) in exported.tests.items()
            if release in (fixture_release, ADK_RELEASE)
        )
        got = _outcomes(python, exported.folder, names)
        for name in names:
            fixture = exported.tests[name][0]
            expected = expected_outcome(exported.fixtures[name], release)
            if expected == "fails":
                assert _by_assertion(got[name]), (release, fixture, got[name])
                seen.add(f"{fixture} fails on {release}")
            elif expected == "passes":
                assert got[name] == "passed", (release, fixture, got[name])
                seen.add(f"{fixture} passes on {release}")
    return seen


def test_exports_fail_with_the_fault_and_pass_where_it_is_absent(exported) -> None:
    """Every export fails by its own assertion on its fixture's release (where
    the fault is); on the installed release, the newest, an export of a
    fault that release no longer has passes (:func:`expected_outcome`); and
    on the installed release with every fix applied (``HARNESS_FIXES=all``),
    every export whose fault has a fix passes."""
    seen = _check_outcomes(exported)
    fixed = _fixed_by_the_plugin(exported)
    assert fixed, "no export of a fault that has a fix"
    patched = _outcomes(Path(sys.executable), exported.folder, fixed, fixes="all")
    # A frozen state that shows a fault without a fix fails with every fix.
    unfixed = {f for f, (other, _) in FROZEN_STATE_SHOWS.items() if not fixes_for(other)}
    unfixed |= set(FROZEN_STATE_STORES)
    for name in fixed:
        if exported.tests[name][0] in unfixed:
            assert _by_assertion(patched[name]), (exported.tests[name][0], patched[name])
            continue
        assert patched[name] == "passed", (exported.tests[name][0], patched[name])
        seen.add(f"{exported.tests[name][0]} passes with HARNESS_FIXES=all")
    # Every export fails on its own release; and passes somewhere when its
    # fault is gone from the installed release or is one the plugin fixes (a
    # failure no known fault explains, on the newest release, passes nowhere
    # yet: test_repros reports it as the new failure it is).
    for name, (fixture, _, fault) in exported.tests.items():
        assert any(s.startswith(f"{fixture} fails") for s in seen), fixture
        gone = expected_outcome(exported.fixtures[name], ADK_RELEASE) == "passes"
        if gone or (fault in FIXED and name in fixed and fixture not in unfixed):
            assert any(s.startswith(f"{fixture} passes") for s in seen), fixture


def test_an_unmarked_fixture_of_an_older_release_fails_where_its_fault_persists(
    tmp_path: Path,
) -> None:
    # What `HARNESS_KNOWN_FAULTS=off make fuzz ADK=<older>` writes: the failure
    # of a fault the newest release still has, with no known_fault. Its export
    # fails on the installed release too (the old rule, "a fault fixed since",
    # expected it to pass there and turned the gate red).
    release = "2.12.0"
    name = "U3-2.13.0-e3f99bee2b15adeb.json"  # dead-call-retry-skipped-at-invocation-boundary
    marked = load_fixture(REPROS / name)
    assert fault_for(marked.known_fault).applies_to(release)
    unmarked = replace(marked, adk_release=release, known_fault=None, path=None)
    path, _ = write_fixture(unmarked, tmp_path)
    fixture = load_fixture(path)
    folder = tmp_path / "exported"
    folder.mkdir()
    (folder / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    test = name_of_test(fixture)
    (folder / f"{test}.py").write_text(export_test(fixture), encoding="utf-8")
    one = Exported(folder, {test: (path.name, release, None)}, {}, {}, {test: fixture})
    assert expected_outcome(fixture, ADK_RELEASE) == "fails"
    assert f"{path.name} fails on {ADK_RELEASE}" in _check_outcomes(one)


def test_every_fix_is_shown_by_an_export(exported) -> None:
    """Each fault that has a fix has an export that fails without it
    (checked above) and passes with every fix applied, unless export refuses
    every fixture of that fault for what the fixture is (a Runner-driver or
    database fixture, ...: its reason is in ``exported.refused``)."""
    fixed = _fixed_by_the_plugin(exported)
    shown = {exported.tests[n][2] for n in fixed}
    for fault in sorted(FIXED - shown):
        marked = [p.name for p in REPROS.glob("*.json") if load_fixture(p).known_fault == fault]
        assert marked, f"the fault {fault} has a fix and no fixture"
        unexplained = [m for m in marked if m not in exported.refused and m not in exported.skipped]
        assert not unexplained, (fault, unexplained)


def test_a_fixture_a_campaign_writes_later_is_judged_by_what_it_is(tmp_path: Path) -> None:
    # A new Runner-driver or database fixture under a name no one listed: the
    # refusal follows from the fixture itself (a list of names made the gate red).
    for original, said in (
        ("P3-2.13.0-cb0dec0b808de2d3.json", "a runner-driver script"),
        ("P4-2.13.0-350c2f39a3aa1b19.json", "database storage"),
    ):
        copy = tmp_path / original.replace(original[-21:-5], "00000000000000aa")
        copy.write_text((REPROS / original).read_text(encoding="utf-8"), encoding="utf-8")
        fixture = load_fixture(copy)
        assert said in (expected_refusal(fixture) or "")
        with pytest.raises(ExportError, match=re.escape(said)):
            export_test(fixture)
    unit = load_fixture(REPROS / "U3-2.11.0-fa8ad53970ec0bb0.json")
    assert expected_refusal(unit) is None


def _fault_fixtures() -> list:
    """Every google-adk fixture marked with a known fault whose kind export supports."""
    out = []
    for path in sorted(REPROS.glob("*.json")):
        fixture = load_fixture(path)
        if fixture.known_fault and not fixture.is_js and expected_refusal(fixture) is None:
            out.append(pytest.param(path, id=path.stem))
    return out


@dataclass
class PatchedExports:
    """Every fault fixture's export with its fix as a patch (see the test
    below), run in two kinds of pytest subprocess: one over every export on
    the release as published, and one per distinct patch over the exports
    that carry it, on a copy of the installed ``google/adk`` with that patch
    applied (first on PYTHONPATH). Batched so that the interpreter and
    google-adk start once per patch, not twice per fixture."""

    #: fixture file name -> why its check does not apply (pytest.skip)
    skipped: dict[str, str]
    #: fixture file name -> (the export's ``--out`` stdout, its test, its patch)
    written: dict[str, tuple[str, Path, Path]]
    #: fixture file name -> outcome on the release as published
    published: dict[str, str]
    #: fixture file name -> outcome with its patch applied
    patched: dict[str, str]
    #: fixture file name -> the patch's ``patch`` run (returncode, output)
    applied: dict[str, tuple[int, str]]


#: Run by one interpreter (``python -c``): for each group of ``sys.argv[1]``'s
#: JSON list (``[site or null, report, [test, ...]]``), the group's tests by
#: pytest, with ``google.adk`` imported afresh from ``site`` (first on
#: ``sys.path``; the release as installed for null). google-adk's own modules
#: are dropped from ``sys.modules`` between groups, so each group imports its
#: copy of the release; its dependencies (google-genai, pydantic, ...) are
#: imported once for all. ``sys.argv[2]`` gets each group's
#: ``google.adk.__file__``, as the group's tests saw it.
_RUN_GROUPS = """
import json, sys, pytest
groups = json.loads(open(sys.argv[1]).read())
seen = []
for site, report, tests in groups:
    for name in [m for m in sys.modules if m == "google.adk" or m.startswith("google.adk.")]:
        del sys.modules[name]
    for name in [m for m in sys.modules if m.startswith("test_")]:
        del sys.modules[name]
    if site:
        sys.path.insert(0, site)
    pytest.main(["-q", "-p", "no:cacheprovider", "-p", "no:xdist", "--junitxml=" + report, *tests])
    import google.adk
    seen.append(google.adk.__file__)
    if site:
        sys.path.remove(site)
open(sys.argv[2], "w").write(json.dumps(seen))
"""


def _outcomes_of_groups(
    groups: list[tuple[Path | None, list[Path]]], env: dict[str, str], folder: Path
) -> list[tuple[dict[Path, str], str]]:
    """Each group's tests' outcomes (``passed`` or ``failed: ...``: one test
    function each) and the ``google.adk`` they imported, run by one pytest
    subprocess with ``env``: a group's tests on the copy of google-adk in its
    site folder (None: the release as installed). One interpreter for every
    group: google-adk's dependencies are imported once, its own modules once
    per group (see :data:`_RUN_GROUPS`)."""
    plan = [
        [str(site) if site else None, str(folder / f"group{k}.xml"), [str(t) for t in tests]]
        for k, (site, tests) in enumerate(groups)
    ]
    (folder / "groups.json").write_text(json.dumps(plan), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", _RUN_GROUPS, str(folder / "groups.json"), str(folder / "seen.json")],
        capture_output=True,
        text=True,
        cwd=groups[0][1][0].parent,
        env=env,
        check=False,
    )
    assert (folder / "seen.json").exists(), done.stdout[-2000:] + done.stderr[-2000:]
    seen = json.loads((folder / "seen.json").read_text(encoding="utf-8"))
    out: list[tuple[dict[Path, str], str]] = []
    for (_, report, _), (_, tests), origin in zip(plan, groups, seen, strict=True):
        by_module = {t.stem: t for t in tests}
        outcomes: dict[Path, str] = {}
        for case in ET.parse(report).iter("testcase"):
            test = by_module[case.get("classname", "").rsplit(".", 1)[-1]]
            failure = (
                case.find("failure") if case.find("failure") is not None else case.find("error")
            )
            outcomes[test] = (
                "passed"
                if failure is None
                else "failed: " + (failure.get("message") or "").split("\n")[0]
            )
        out.append((outcomes, origin))
    return out


def _patched_files(patch: str) -> set[str]:
    """The paths (``google/adk/...``) that the unified diff ``patch`` changes."""
    return {
        line.removeprefix("+++ b/").split("\t")[0].strip()
        for line in patch.splitlines()
        if line.startswith("+++ b/")
    }


def _linked_but(site: Path, patched: set[str]):
    """A ``copytree`` copy function for a copy of the installed google-adk in
    ``site``: every file is a hard link to the installed one (its compiled
    module too, so the copy imports as fast as the release does), except the
    files the patch changes, which are copied (patching them leaves the
    installed release alone; their stale compiled modules are recompiled)."""
    import os
    import shutil

    def copy(src: str, dst: str) -> str:
        if Path(dst).relative_to(site).as_posix() in patched:
            return shutil.copy2(src, dst)
        try:
            os.link(src, dst)
        except OSError:  # another file system: a copy
            shutil.copy2(src, dst)
        return dst

    return copy


@pytest.fixture(scope="module")
def patched_exports(tmp_path_factory: pytest.TempPathFactory) -> PatchedExports:
    import contextlib
    import io
    import shutil

    import google.adk

    from compaction_harness.surfaces import cli

    folder = tmp_path_factory.mktemp("patched-exports")
    out = folder / "exported"
    skipped: dict[str, str] = {}
    written: dict[str, tuple[str, Path, Path]] = {}
    for param in _fault_fixtures():
        (path,) = param.values
        fixture = load_fixture(path)
        if not fixes_for(fixture.known_fault):
            skipped[path.name] = f"the fault {fixture.known_fault} has no fix yet"
            continue
        if fixture.adk_release != ADK_RELEASE:
            skipped[path.name] = (
                f"a fixture of google-adk {fixture.adk_release}: the fixes are diffs of "
                f"{ADK_RELEASE}"
            )
            continue
        if not fault_fixes(fixture):
            skipped[path.name] = f"the fix of {fixture.known_fault} does not apply to {ADK_RELEASE}"
            continue
        stdout, stderr = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            status = cli.main(["export", "--out", str(out), str(path)])
        if status == 2 and (HOLDS in stderr.getvalue() or CREDENTIAL in stderr.getvalue()):
            skipped[path.name] = stderr.getvalue().strip()
            continue
        assert status == 0, stderr.getvalue()
        name = name_of_test(fixture)
        written[path.name] = (stdout.getvalue(), out / f"{name}.py", out / f"{name}.patch")
    published: dict[str, str] = {}
    patched: dict[str, str] = {}
    applied: dict[str, tuple[int, str]] = {}
    if not written:
        return PatchedExports(skipped, written, published, patched, applied)
    (out / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")  # not the harness's
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "HARNESS_FIXES")}
    by_patch: dict[str, list[str]] = {}
    for name, (_, _, patch) in written.items():
        by_patch.setdefault(patch.read_text(encoding="utf-8"), []).append(name)
    groups: list[tuple[Path | None, list[Path]]] = [(None, [t for _, t, _ in written.values()])]
    group_names: list[list[str]] = [list(written)]
    for k, (text, names) in enumerate(by_patch.items()):
        site = folder / f"site{k}"
        shutil.copytree(
            Path(google.adk.__file__).parent,
            site / "google" / "adk",
            copy_function=_linked_but(site, _patched_files(text)),
        )
        done = subprocess.run(
            ["patch", "-p1", "--batch", "--fuzz=0", "-d", str(site)],
            input=text,
            capture_output=True,
            text=True,
            check=False,
        )
        for name in names:
            applied[name] = (done.returncode, done.stdout + done.stderr)
        if done.returncode == 0:
            groups.append((site, [written[name][1] for name in names]))
            group_names.append(names)
    results = _outcomes_of_groups(groups, env, folder)
    for (site, _), names, (by_test, origin) in zip(groups, group_names, results, strict=True):
        # each group ran on its own copy of google-adk (the release as installed for the first)
        assert (site is None) != Path(origin).is_relative_to(folder), (site, origin)
        for name in names:
            outcome = by_test.get(written[name][1], "not run")
            (patched if site else published)[name] = outcome
    return PatchedExports(skipped, written, published, patched, applied)


@pytest.mark.gate_first  # among the gate's longest items
def test_every_export_carries_its_fault_s_fix_as_a_patch_of_the_release(
    patched_exports: PatchedExports,
) -> None:
    """``export --out`` writes the fault's fix beside the test, a patch of
    the release's own source: applied with GNU patch to a copy of the
    installed ``google/adk`` (first on PYTHONPATH), the exported test passes
    there; on the release as published it fails by its own assertion. One
    test over every fault fixture (:func:`patched_exports` exports and runs
    them together, once: a module fixture is made once per xdist worker),
    naming every fixture that breaks the rule."""
    assert patched_exports.written, patched_exports.skipped
    broken: list[str] = []
    for name, (stdout, test, patch) in patched_exports.written.items():
        returncode, output = patched_exports.applied[name]
        published = patched_exports.published[name]
        patched = patched_exports.patched.get(name, "not run")
        frozen = name in FROZEN_STATE_SHOWS or name in FROZEN_STATE_STORES
        if stdout.splitlines() != [f"wrote {test}", f"wrote {patch}"]:
            broken.append(f"{name}: export printed {stdout!r}")
        elif patch.name not in " ".join(test.read_text(encoding="utf-8").split()):
            broken.append(f"{name}: the test does not name its patch {patch.name}")
        elif returncode != 0:
            broken.append(f"{name}: the patch does not apply: {output.strip()}")
        elif not _by_assertion(published):
            broken.append(f"{name}: on the release as published: {published}")
        elif frozen and not _by_assertion(patched):
            # the frozen state shows a fault this patch leaves, or holds what one wrote
            broken.append(f"{name}: with its patch (a frozen state): {patched}")
        elif not frozen and patched != "passed":
            broken.append(f"{name}: with its patch: {patched}")
    assert not broken, "\n".join(broken)


def test_export_patch_is_refused_in_one_line_without_a_fix(capsys) -> None:
    from compaction_harness.surfaces import cli

    unmarked = next(p for p in sorted(REPROS.glob("*.json")) if not load_fixture(p).known_fault)
    assert cli.main(["export", "--patch", str(unmarked)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "marked with no known fault" in err[0], err


def test_export_says_why_there_is_no_patch_as_export_patch_does(capsys, tmp_path) -> None:
    # A newcomer's: export said "has no fix" of a fault whose fix the
    # installed release cannot take, where --patch said so.
    from compaction_harness.surfaces.cli import main
    from compaction_harness.surfaces.export_head import fault_fixes

    fixture = REPROS / "U3-2.11.0-fa8ad53970ec0bb0.json"
    if fault_fixes(load_fixture(fixture)):
        pytest.skip(f"google-adk {ADK_RELEASE} takes the fix of {fixture.name}'s fault")
    assert main(["export", "--patch", str(fixture)]) == 2
    refusal = capsys.readouterr().err.strip().removeprefix("error: ")
    assert main(["export", "--out", str(tmp_path), str(fixture)]) == 0
    said = capsys.readouterr().out.splitlines()
    assert said[-1] == refusal and "does not apply to google-adk" in refusal
