"""`python -m compaction_harness {show,replay}`: output, exit status, bad input.

Exit status: 0 all hold, 1 a fixture fails an invariant, 2 bad input -- with
one line naming the problem and never a traceback.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
from builders import answer, call, text, user
from test_fixtures import BAD_FILES

from compaction_harness.faults.classify import known_or_new_only
from compaction_harness.sdk.python import triage
from compaction_harness.store.fixtures import load_fixture
from compaction_harness.surfaces.cli import main

REPROS = Path(__file__).parents[1] / "repros"
# Named explicitly: a campaign may add fixtures to tests/repros at any time.
STALL_2_11 = [REPROS / "U3-2.11.0-fa8ad53970ec0bb0.json"]
KNOWN_FAULT_FIXTURES = [
    REPROS / "U2-2.13.0-956f68bc18ed9cfe.json",
    REPROS / "U3-2.13.0-e3f99bee2b15adeb.json",
]
FIXTURES = [*STALL_2_11, *KNOWN_FAULT_FIXTURES]
TIMELINE_LINE = re.compile(r"^(?P<mark>W?)\s*#(?P<index>\d+)\s+inv=")

# The release-specific outcomes below were worked out on google-adk 2.13.0.
on_2_13 = pytest.mark.skipif(
    metadata.version("google-adk") != "2.13.0", reason="outcomes recorded for google-adk 2.13.0"
)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def timeline(out: str) -> list[tuple[str, int]]:
    return [(m["mark"], int(m["index"])) for m in map(TIMELINE_LINE.match, out.splitlines()) if m]


def test_the_named_fixtures_exist() -> None:
    assert all(p.is_file() for p in FIXTURES)
    assert all(load_fixture(p).known_fault for p in KNOWN_FAULT_FIXTURES)


# -- show ----------------------------------------------------------------------
@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_show_prints_one_timeline_line_per_step(capsys, path: Path) -> None:
    fixture = load_fixture(path)
    code, out, err = run(capsys, "show", str(path))
    assert (code, err) == (0, "")
    steps = len(fixture.case.session)
    assert [index for _, index in timeline(out)] == list(range(steps))
    for index in range(steps):
        assert sum(f"#{index} " in line for line in out.splitlines()) == 1
    # The window is marked W, and the header names the file and the invariant.
    assert tuple(i for mark, i in timeline(out) if mark == "W") == fixture.case.window
    assert f"fixture    {path}" in out
    assert f"invariant  {fixture.invariant}" in out
    for violation in fixture.violations:
        assert violation in out


# -- replay --------------------------------------------------------------------
@on_2_13
def test_replay_of_the_2_11_stall_holds_on_2_13(capsys) -> None:
    (path,) = STALL_2_11
    code, out, err = run(capsys, "replay", str(path))
    assert (code, err) == (0, "")
    assert out.startswith(f"ok    {path} on google-adk 2.13.0\n"), out
    assert out.rstrip().endswith(
        "1 held, 0 failed, 0 known upstream faults, 0 known faults no longer seen"
    )
    assert "FAIL" not in out


@on_2_13
@pytest.mark.parametrize("path", KNOWN_FAULT_FIXTURES, ids=[p.stem for p in KNOWN_FAULT_FIXTURES])
def test_replay_of_a_known_fault_is_an_expected_failure(capsys, path: Path) -> None:
    fixture = load_fixture(path)
    code, out, err = run(capsys, "replay", str(path))
    assert (code, err) == (0, "")
    assert out.startswith(
        f"XFAIL {path} on google-adk 2.13.0: known upstream fault {fixture.known_fault}"
    ), out
    assert re.search(rf"^      {fixture.invariant}: ", out, re.MULTILINE), out
    assert out.rstrip().endswith(
        "0 held, 0 failed, 1 known upstream faults, 0 known faults no longer seen"
    )


@on_2_13
def test_an_unmarked_fixture_of_a_known_fault_is_an_expected_failure(capsys, tmp_path) -> None:
    # One classification everywhere: what fails only as a known upstream fault of
    # the installed release is XFAIL, whether or not the fixture says so.
    data = json.loads(KNOWN_FAULT_FIXTURES[1].read_text(encoding="utf-8"))
    del data["known_fault"]
    path = tmp_path / "unmarked.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    code, out, _ = run(capsys, "replay", str(path))
    assert code == 0
    assert out.startswith(
        f"XFAIL {path} on google-adk 2.13.0: known upstream fault "
        "dead-call-retry-skipped-at-invocation-boundary"
    ), out


def test_replay_fails_when_a_fixture_breaks_an_invariant(capsys, monkeypatch) -> None:
    # A prefix helper that never compacts: the 2.11.0 stall fixture fails, and
    # no known fault explains a prefix of 0.
    import google.adk.apps.compaction as compaction

    monkeypatch.setattr(
        compaction, "_longest_self_contained_prefix", lambda events, all_events=None: []
    )
    (path,) = STALL_2_11
    code, out, _ = run(capsys, "replay", str(path))
    assert code == 1
    assert out.startswith(f"FAIL  {path} on google-adk"), out
    assert re.search(r"^      U3: prefix stops at 0 events but 2", out, re.MULTILINE), out


@on_2_13
def test_a_failing_replay_names_the_known_faults_it_also_met(capsys, monkeypatch) -> None:
    # As on google-adk 2.11.0, which cannot take the fix summary-leaves-out-branch-events:
    # the summary's branch leak (P5) is new, while the fixture's two faults still show.
    # The text says what --json says about them: each fault and the fix that removes it.
    from compaction_harness.sdk.python import triage

    can_take = triage.unavailable
    monkeypatch.setattr(
        triage,
        "unavailable",
        lambda name: "not here" if name == "summary-leaves-out-branch-events" else can_take(name),
    )
    path = REPROS / "P7-2.13.0-5167e90ad3141661.json"
    code, out, _ = run(capsys, "replay", "--json", str(path))
    (entry,) = json.loads(out)["fixtures"]
    assert (code, entry["label"]) == (1, "FAIL")
    assert entry["faults"] == [
        "database-reload-reorders-events-by-timestamp",
        "compaction-assumes-events-are-stored-in-time-order",
    ]
    code, out, err = run(capsys, "replay", str(path))
    assert (code, err) == (1, "")
    assert out.startswith(f"FAIL  {path} on google-adk 2.13.0: a violation "), out
    assert re.search(r"^      P5: the summary is read by every agent", out, re.MULTILINE), out
    met = [line for line in out.splitlines() if line.startswith("      also met ")]
    assert met == [
        f"      also met known upstream fault {fault} (P7): {entry['evidence'][fault]}"
        for fault in entry["faults"]
    ], out
    assert all(entry["evidence"][f].startswith("fix ") for f in entry["faults"])


@on_2_13
def test_replay_of_several_fixtures_counts_them(capsys) -> None:
    paths = [*STALL_2_11, *KNOWN_FAULT_FIXTURES]
    code, out, _ = run(capsys, "replay", *map(str, paths))
    assert code == 0
    assert out.rstrip().endswith(
        f"1 held, 0 failed, {len(KNOWN_FAULT_FIXTURES)} known upstream faults, "
        "0 known faults no longer seen"
    )


# -- bad input -------------------------------------------------------------------
def write_bad(tmp_path: Path, kind: str) -> Path:
    path = tmp_path / f"{kind}.json"
    if kind == "invalid-json":
        path.write_bytes(b'{"schema_version": 1,')
    elif kind == "wrong-schema-version":
        data = json.loads(STALL_2_11[0].read_text(encoding="utf-8"))
        data["schema_version"] = 99
        path.write_text(json.dumps(data), encoding="utf-8")
    elif kind == "directory":
        path.mkdir()
    else:
        assert kind == "missing-file"
    return path


BAD_KINDS = ["invalid-json", "missing-file", "wrong-schema-version", "directory"]


def assert_bad_input(code: int, out: str, err: str, path: Path) -> None:
    assert code == 2
    assert out == ""
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ")
    assert str(path) in lines[0]


@pytest.mark.parametrize("kind", BAD_KINDS)
@pytest.mark.parametrize("command", ["show", "replay"])
def test_bad_input_exits_2_with_one_line(capsys, tmp_path: Path, command: str, kind: str) -> None:
    path = write_bad(tmp_path, kind)
    assert_bad_input(*run(capsys, command, str(path)), path)


def test_replay_replays_every_readable_fixture_and_reports_each_bad_one(capsys, tmp_path):
    bad = write_bad(tmp_path, "invalid-json")
    empty = tmp_path / "empty.json"
    empty.write_bytes(b"")
    good = STALL_2_11[0]
    code, out, err = run(capsys, "replay", str(good), str(bad), str(empty), str(good))
    assert code == 2  # the worst status: bad input
    assert [line.split()[1] for line in out.splitlines() if line.startswith(("ok", "FAIL"))] == [
        str(good),
        str(good),
    ]
    assert out.rstrip().endswith(", 2 not replayed (bad input)")
    errors = err.splitlines()
    assert len(errors) == 2 and str(bad) in errors[0] and str(empty) in errors[1]
    assert "Traceback" not in err


def test_show_and_replay_take_a_directory_of_fixtures(capsys, tmp_path) -> None:
    for path in FIXTURES:
        (tmp_path / path.name).write_bytes(path.read_bytes())
    code, out, err = run(capsys, "show", str(tmp_path))
    assert (code, err) == (0, "")
    assert out.count("fixture    ") == len(FIXTURES)
    code, out, err = run(capsys, "replay", str(tmp_path))
    assert err == "" and code in (0, 1)
    assert len([line for line in out.splitlines() if str(tmp_path) in line]) == len(FIXTURES)


@pytest.mark.parametrize(
    ("name", "close"),
    [
        ("nonesuch", None),
        ("dead-call-retry-at-every-boundry", "dead-call-retry-at-every-boundary"),
        ("calls-retained-with-answers", "calls-retained-with-their-answers"),  # ADK-JS's
    ],
)
def test_an_unknown_fix_is_one_short_line(capsys, monkeypatch, name: str, close: str | None):
    # Not the ~1,500 characters of every fix's name: the name given, the
    # registered one closest to it, and the command that lists them all.
    fixture = str(KNOWN_FAULT_FIXTURES[0])
    runs = [
        ("--fixes", ["replay", "--fixes", name, fixture]),
        ("--fixes", ["show", "--fixes", name, fixture]),
        ("--fixes", ["minimize", "--fixes", name, "--invariant", "U3", str(RECORDED)]),
        ("HARNESS_FIXES", ["replay", fixture]),
        ("HARNESS_FIXES", ["show", fixture]),
    ]
    for origin, argv in runs:
        with monkeypatch.context() as patch:
            patch.setenv("HARNESS_FIXES", name if origin == "HARNESS_FIXES" else "none")
            code, out, err = run(capsys, *argv)
        assert (code, out) == (2, ""), argv
        (line,) = err.splitlines()
        assert len(line) < 200, line
        hint = f" (did you mean {close!r}?)" if close else ""
        assert line == (
            f"error: {origin}: no fix named {name!r}{hint}; "
            "`python -m compaction_harness faults` lists them"
        ), argv


def test_an_unknown_adk_js_fix_of_make_is_one_short_line(capsys) -> None:
    # `make ... SDK=js FIXES=...` checks its fixes against ADK-JS's index alone.
    from compaction_harness.surfaces import switch

    assert switch.main(["--sdk=js", "summaries-hide-what-they-were-givn"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line == (
        "error: FIXES: no ADK-JS fix named 'summaries-hide-what-they-were-givn' (did you mean "
        "'summaries-hide-what-they-were-given'?); `python -m compaction_harness faults --sdk "
        "adk-js` lists them"
    )


def test_an_unknown_command_is_a_usage_error(capsys) -> None:
    with pytest.raises(SystemExit) as info:
        main(["frobnicate"])
    assert info.value.code == 2
    assert "invalid choice: 'frobnicate'" in capsys.readouterr().err


def test_show_of_a_timestamp_too_large_for_a_float_exits_2(capsys, tmp_path: Path) -> None:
    data = json.loads(STALL_2_11[0].read_text(encoding="utf-8"))
    data["session"]["steps"][0]["timestamp"] = 10**400
    path = tmp_path / "huge.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    assert_bad_input(*run(capsys, "show", str(path)), path)


def test_show_keeps_each_step_on_its_line_whatever_the_strings(capsys, tmp_path: Path) -> None:
    data = json.loads(STALL_2_11[0].read_text(encoding="utf-8"))
    data["session"]["steps"][0]["author"] = "agent\nx"
    path = tmp_path / "newline.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    code, out, _ = run(capsys, "show", str(path))
    assert code == 0
    lines = out.splitlines()
    first = next(i for i, line in enumerate(lines) if TIMELINE_LINE.match(line))
    # Each of the two window steps has its own line, and that line carries its note.
    assert TIMELINE_LINE.match(lines[first + 1]), lines[first : first + 3]
    assert lines[first].endswith("open={c0}")


# -- help ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("argv", "mentions"),
    [
        ([], ["Exit status: show and export: 0 done, 2 bad input (show never re-checks", "replay"]),
        (["show"], ["fixture", "timeline"]),
        (["replay"], ["FIXTURE", "Exit 0", "--adk", "3 when --driver names a driver"]),
    ],
    ids=["top", "show", "replay"],
)
def test_help(capsys, argv: list[str], mentions: list[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main([*argv, "--help"])
    assert info.value.code == 0
    out = " ".join(capsys.readouterr().out.split())  # argparse wraps to the terminal width
    assert out.startswith("usage: python -m compaction_harness")
    for word in mentions:
        assert word in out


# -- the real entry point --------------------------------------------------------
def entry_point(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "compaction_harness", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        check=False,
    )


def test_entry_point_show(tmp_path: Path) -> None:
    path = STALL_2_11[0]
    done = entry_point("show", str(path), cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, "")
    steps = len(load_fixture(path).case.session)
    assert [index for _, index in timeline(done.stdout)] == list(range(steps))


def test_entry_point_bad_input(tmp_path: Path) -> None:
    path = write_bad(tmp_path, "invalid-json")
    done = entry_point("replay", str(path), cwd=tmp_path)
    assert_bad_input(done.returncode, done.stdout, done.stderr, path)
    missing = tmp_path / "missing.json"
    done = entry_point("show", str(missing), cwd=tmp_path)
    assert_bad_input(done.returncode, done.stdout, done.stderr, missing)


@on_2_13
def test_replay_reports_a_known_fault_that_no_longer_shows(capsys, tmp_path: Path) -> None:
    # Strict, like the gate: a known-fault fixture that holds means ADK changed.
    data = json.loads(STALL_2_11[0].read_text(encoding="utf-8"))
    data["known_fault"] = "dead-call-retry-skipped-at-invocation-boundary"
    data["adk_release"] = "2.13.0"
    path = tmp_path / "fixed.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    code, out, _ = run(capsys, "replay", str(path))
    assert code == 1
    assert out.startswith(f"XPASS {path} on google-adk 2.13.0"), out
    assert "run `make matrix`: the fault's releases are derived from it" in out


def test_replay_on_a_release_without_the_helper_is_a_one_line_error(
    capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    import google.adk.apps.compaction as compaction

    monkeypatch.delattr(compaction, "_longest_self_contained_prefix", raising=False)
    code, out, err = run(capsys, "replay", str(STALL_2_11[0]))
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("error: ")
    assert "has no google.adk.apps.compaction._longest_self_contained_prefix" in err
    assert "Traceback" not in out + err


# -- every malformed fixture kind, through both commands --------------------------
@pytest.mark.parametrize("command", ["show", "replay"])
@pytest.mark.parametrize(("content", "part"), BAD_FILES.values(), ids=BAD_FILES.keys())
def test_every_malformed_fixture_is_exit_2_and_one_line(
    capsys, tmp_path: Path, command: str, content: bytes, part: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    code, out, err = run(capsys, command, str(path))
    assert code == 2
    assert err.count("\n") == 1 and err.startswith(f"error: {path}: "), err
    assert part in err
    assert "Traceback" not in out + err


def test_there_are_at_least_20_kinds_of_malformed_fixture() -> None:
    assert len(BAD_FILES) >= 20


# -- export ---------------------------------------------------------------------------
def _exported(capsys: pytest.CaptureFixture[str], fixture: Path, test_file: Path) -> None:
    """``export FIXTURE`` (in this process: what it prints is the test) written to ``test_file``."""
    code, out, err = run(capsys, "export", str(fixture))
    assert code == 0, err
    test_file.write_text(out, encoding="utf-8")


def test_export_is_adk_style_and_self_contained(capsys) -> None:
    code, out, err = run(capsys, "export", str(STALL_2_11[0]))
    assert (code, err) == (0, "")
    assert "compaction_harness" not in out.replace("compaction-harness fixture", "")
    assert "\n  events = [\n      Event(\n" in out  # two-space indentation, Events built directly
    compile(out, "exported.py", "exec")


@on_2_13
def test_exported_test_passes_on_a_fixed_release_and_fails_on_a_known_fault(
    capsys, tmp_path
) -> None:
    # Both exported tests in one pytest process, in a folder of their own, each
    # judged by its own outcome: the fixed release's passes, the fault's fails.
    _exported(capsys, STALL_2_11[0], tmp_path / "test_fixed.py")
    _exported(capsys, KNOWN_FAULT_FIXTURES[1], tmp_path / "test_fault.py")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider",
         "test_fixed.py", "test_fault.py"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout
    outcomes = {
        line.split("::")[0].split()[1]: line.split()[0]
        for line in done.stdout.splitlines()
        if line.startswith(("PASSED ", "FAILED ", "ERROR "))
    }
    assert outcomes == {"test_fixed.py": "PASSED", "test_fault.py": "FAILED"}, done.stdout
    assert "AssertionError" in done.stdout or "assert" in done.stdout


def test_export_of_a_metamorphic_fixture_is_a_one_line_error(capsys, tmp_path) -> None:
    data = json.loads(STALL_2_11[0].read_text(encoding="utf-8"))
    data.update(kind="metamorphic", invariant="U6", call={"relation": "texts", "window": [0, 1]})
    path = tmp_path / "meta.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    code, _, err = run(capsys, "export", str(path))
    assert code == 2 and err.count("\n") == 1 and "cannot be exported" in err


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("P7-2.13.0-7a9cab4d161903cc.json", "a runner-driver script"),
        ("P4-2.13.0-350c2f39a3aa1b19.json", "database storage"),
    ],
)
def test_export_of_a_fixture_without_an_upstream_form_is_a_one_line_error(
    capsys, name: str, reason: str
) -> None:
    code, out, err = run(capsys, "export", str(REPROS / name))
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and "cannot be exported" in err and reason in err


@on_2_13
def test_export_of_a_fixture_of_an_older_release_names_the_release_to_use(capsys) -> None:
    code, out, err = run(capsys, "export", str(REPROS / "P3-2.11.0-b05d345640cc27ad.json"))
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and "run export with google-adk 2.11.0" in err


# -- minimize ---------------------------------------------------------------------------
RECORDED = Path(__file__).parents[1] / "data" / "recorded_session.json"
ORIGINAL_WORDS = ("Paris", "weather", "Tomorrow", "call_", "e-7f3a", "get_weather", "user-4711")


@pytest.fixture(scope="module")
def minimized(tmp_path_factory) -> tuple[int, str, str, Path, list]:
    """``minimize RECORDED --invariant U3 --out DIR`` run once for the tests
    that read what it printed and wrote (it is derandomised: the same run
    each time): exit status, standard output and error, DIR, and what each
    call of :func:`~compaction_harness.surfaces.minimize.minimize` the
    command made returned (the search itself, for the tests of its result)."""
    import contextlib
    import io

    import compaction_harness.surfaces.minimize as minimize_module

    found = []
    search = minimize_module.minimize

    def recorded(*args, **kwargs):
        found.append(search(*args, **kwargs))
        return found[-1]

    folder = tmp_path_factory.mktemp("minimized")
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(minimize_module, "minimize", recorded)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["minimize", str(RECORDED), "--invariant", "U3", "--out", str(folder)])
    return code, out.getvalue(), err.getvalue(), folder, found


def test_minimize_turns_a_50_event_session_into_a_small_anonymous_fixture(minimized):
    """What ``minimize RECORDED --invariant U3`` printed and wrote, and the
    search it made (one test over one run: the run is the cost). The session
    holds on releases without the fault: nothing to minimise there."""
    recorded = json.loads(RECORDED.read_text(encoding="utf-8"))
    assert len(recorded["events"]) == 50
    code, out, err, folder, calls = minimized
    if code == 1 and metadata.version("google-adk") != "2.13.0":
        pytest.skip("the recorded session holds on this release")
    assert (code, err) == (0, ""), out
    (path,) = folder.glob("U3-*.json")
    fixture = load_fixture(path)
    assert len(fixture.case.session) <= 6
    text = path.read_text(encoding="utf-8")
    for word in ORIGINAL_WORDS:
        assert word not in text, word
    # Anonymous: no file name, none of the session's own timestamps.
    assert RECORDED.name not in text and "recorded_session" not in text
    for stamp in {repr(e["timestamp"]) for e in recorded["events"]}:
        assert stamp not in text
    assert min(s.timestamp for s in fixture.case.session.steps) >= 1.0
    if metadata.version("google-adk") != "2.13.0":
        return  # what follows was recorded on 2.13.0
    assert "U3: prefix stops at" in text
    # It keeps the failure it found as given: the search the run made,
    # minimize(session_from_json(RECORDED's text), "U3", max_examples=2000).
    (found,) = calls
    assert found is not None and found.shrunk
    assert found.smallest.signature == found.given.signature
    assert found.given.fault == "dead-call-retry-skipped-at-invocation-boundary"
    assert len(found.smallest.case.session) < len(found.given.case.session)


def test_minimize_reports_a_session_that_does_not_fail(capsys, tmp_path):
    healthy = [e for e in json.loads(RECORDED.read_text(encoding="utf-8"))["events"]][:4]
    path = tmp_path / "healthy.json"
    path.write_text(json.dumps(healthy), encoding="utf-8")
    code, out, _ = run(
        capsys,
        "minimize",
        str(path),
        "--invariant",
        "U3",
        "--out",
        str(tmp_path),
        "--max-examples",
        "50",
    )
    assert code == 1 and f"{path} holds: no call ADK's compaction makes on its 4 events" in out
    assert not list(tmp_path.glob("U3-*.json"))


def exported_session(tmp_path: Path, *steps) -> Path:
    """``steps`` appended to a real InMemorySessionService session, exported as
    ADK exports it (``Session.model_dump_json()``)."""
    import asyncio

    from google.adk.sessions.in_memory_session_service import InMemorySessionService

    from compaction_harness.sdk.python.adk import to_adk_event

    async def build() -> str:
        service = InMemorySessionService()
        stored = await service.create_session(app_name="app", user_id="user-4711")
        for step in steps:
            await service.append_event(stored, to_adk_event(step))
        return stored.model_dump_json()

    path = tmp_path / "exported.json"
    path.write_text(asyncio.run(build()), encoding="utf-8")
    return path


def test_minimize_does_not_manufacture_a_failure_the_session_does_not_have(capsys, tmp_path):
    # 11 real events: call a is answered two events later; call b, after a user
    # message in the same invocation, never is. ADK's prefix helper returns the
    # whole of every invocation-aligned window: the session holds. (Dropping
    # a's answer would make a an orphan that opens a window: the known fault.)
    path = exported_session(
        tmp_path,
        user("e-1", 1700000000.25, "weather?"),
        call("e-1", 1700000000.5, "a"),
        text("e-1", 1700000001.0, "checking"),
        answer("e-1", 1700000001.25, "a"),
        text("e-1", 1700000002.0, "sunny"),
        user("e-2", 1700000010.0, "and tomorrow?"),
        call("e-2", 1700000010.5, "b"),
        text("e-2", 1700000011.0, "let me see"),
        user("e-3", 1700000020.0, "thanks"),
        text("e-3", 1700000021.0, "welcome"),
        text("e-3", 1700000022.0, "bye"),
    )
    assert len(json.loads(path.read_text())["events"]) == 11
    code, out, _ = run(capsys, "minimize", str(path), "--invariant", "U3", "--out", str(tmp_path))
    assert code == 1, out
    assert f"{path} holds: no call ADK's compaction makes on its 11 events" in out
    assert "known upstream fault" not in out
    assert not list(tmp_path.glob("U3-*.json"))


@on_2_13
def test_minimize_gives_the_same_fixture_for_the_same_session():
    # A session exported twice (say, once with camelCase aliases) is one
    # session: minimize must not name two fixtures for it.
    from compaction_harness.sdk.python.adk import session_from_json
    from compaction_harness.surfaces.minimize import minimize

    # A session ADK 2.13.0's Runner wrote (token threshold, parallel calls),
    # exported with camelCase aliases; before minimize was derandomised, three
    # runs on it gave fixtures of 7, 9 and 6 events (any two of them differed).
    recorded = Path(__file__).parents[1] / "data" / "runner_token_session.json"
    session = session_from_json(recorded.read_text(encoding="utf-8"))
    found = [minimize(session, "U5", max_examples=200) for _ in range(2)]
    assert found[0] is not None and found[0].shrunk
    assert all(f is not None and f.smallest.case == found[0].smallest.case for f in found)


@on_2_13
def test_a_recorded_session_a_fix_compacts_otherwise_is_not_judged_with_it(
    capsys, monkeypatch, tmp_path
) -> None:
    # A session ADK 2.13.0's Runner wrote with a token threshold: replayed as the
    # release is published it compacts as its run did, so it is judged. The fix
    # of token compaction moves the ranges, and a recorded session is judged only
    # where its replay makes the run's summaries: NOREPRO, saying the fix is why,
    # not that --config or --agent may be wrong.
    session = str(Path(__file__).parents[1] / "data" / "runner_token_session.json")
    config = ["--token-threshold", "110", "--event-retention-size", "2"]
    fix = "token-compaction-keeps-the-running-invocation"
    with known_or_new_only():  # judged, whichever faults it shows
        code, out, _ = run(capsys, "replay", session, *config, "--fixes", "none")
    assert code in (0, 1) and "NOREPRO" not in out, out
    moved = (
        "; the fixes change where ADK compacts (without them the replay compacts as the run "
        f"did), and a recorded session is judged only where it does: not with fix {fix}"
    )

    def not_classified(*_):
        raise AssertionError("a replay that is not the recorded run was classified")

    for origin in ("--fixes", "HARNESS_FIXES"):
        with monkeypatch.context() as patch:
            # NOREPRO: nothing of a replay that differs from its run is re-run.
            patch.setattr(triage, "by_fix", not_classified)
            patch.setenv("HARNESS_FIXES", fix if origin == "HARNESS_FIXES" else "none")
            flag = ["--fixes", fix] if origin == "--fixes" else []
            code, out, err = run(capsys, "replay", session, *config, *flag)
        assert (code, err) == (3, ""), origin
        verdict, total = out.splitlines()
        assert verdict.startswith(
            f"NOREPRO {session} on google-adk 2.13.0 with fix {fix}: the replay's compactions "
            "differ from the recorded run's: recorded 12, "
        ), verdict
        assert verdict.endswith(moved), verdict
        assert "check --config" not in out
        assert total.endswith(", 1 not judged with these fixes (they move where ADK compacts)")
    code, out, err = run(
        capsys, "minimize", session, *config, "--fixes", fix, "--out", str(tmp_path)
    )
    assert (code, err) == (3, "")
    assert out.startswith(f"{session} cannot be judged on google-adk 2.13.0 with fix {fix}: ")
    assert out.endswith(moved + "\n"), out
    # A sliding window it never ran with: the replay differs without the fix too,
    # and the advice to check the configuration stands.
    code, out, _ = run(
        capsys,
        "replay",
        session,
        "--compaction-interval",
        "2",
        "--overlap-size",
        "0",
        "--fixes",
        fix,
    )
    assert code == 3 and "; check --config / --agent (if they are right" in out
    assert "the fixes change" not in out and "1 not replayed as recorded (check --config" in out


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"{", "invalid JSON"),
        (b'{"id": 1}', "expected an ADK Session object"),
        # pydantic's first problem in one line, its path led by the event's index
        (b'[{"timestamp": "soon"}]', "not an ADK session: [0].timestamp: Input should be a valid"),
        (
            b'[{"author": "user"}, {"author": "user", "timestamp": "soon"}]',
            "not an ADK session: [1].timestamp: Input should be a valid number",
        ),
        (b"\xff\xfe", "not UTF-8 text"),
    ],
)
def test_minimize_bad_input_is_exit_2_and_one_line(capsys, tmp_path, content, problem):
    path = tmp_path / "session.json"
    path.write_bytes(content)
    code, _, err = run(capsys, "minimize", str(path), "--invariant", "U3")
    assert code == 2 and err.count("\n") == 1 and problem in err, err


@pytest.mark.parametrize("command", ["show", "replay", "export", "profile"])
def test_a_session_given_as_a_fixture_is_one_short_line(capsys, command: str) -> None:
    code, out, err = run(capsys, command, str(RECORDED))
    assert (code, out) == (2, "")
    assert err == (
        f"error: {RECORDED}: an ADK session, not a fixture: judge it with `replay FILE --config "
        "JSON` (or the trigger flags), or make a fixture of it with `minimize`\n"
    )
    assert len(err) - len(str(RECORDED)) < 160


def test_a_session_pydantic_refuses_is_one_line_with_the_field_path(capsys, tmp_path):
    data = json.loads(RECORDED.read_text(encoding="utf-8"))
    data["events"][3]["timestamp"] = "soon"
    path = tmp_path / "session.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    problem = (
        "not an ADK session: events[3].timestamp: Input should be a valid number, unable to "
        "parse string as a number"
    )
    for argv in (
        ["minimize", str(path), "--invariant", "U3", "--out", str(tmp_path / "out")],
        ["replay", str(path), "--compaction-interval", "2", "--overlap-size", "1"],
    ):
        code, out, err = run(capsys, *argv)
        assert (code, out) == (2, ""), argv
        assert err == f"error: {path}: {problem}\n", argv


@on_2_13
def test_a_fixture_adk_refuses_is_one_line_naming_the_file_and_the_problem(capsys, tmp_path):
    # A token threshold without event_retention_size: ADK's EventsCompactionConfig
    # refuses it by a validator of the whole model, whose error has no field path.
    data = json.loads((REPROS / "P2-2.13.0-232a5d4418c2b7a8.json").read_text(encoding="utf-8"))
    data["call"]["config"]["event_retention_size"] = None
    path = tmp_path / "refused.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    refused = (
        "google-adk 2.13.0 refuses this configuration: token_threshold and "
        "event_retention_size must be set together."
    )
    for command, why in [
        ("replay", "cannot be replayed here: "),
        ("profile", ""),
        ("export", "cannot be exported on google-adk 2.13.0: "),
    ]:
        code, out, err = run(capsys, command, str(path))
        assert (code, out) == (2, ""), command
        assert err == f"error: {path}: {why}{refused}\n", command


@pytest.mark.parametrize("how", ["read-only", "under a file"])
def test_minimize_into_an_unwritable_folder_is_exit_2_and_one_line(
    capsys, tmp_path, monkeypatch, how
):
    out = tmp_path / "repros"
    if how == "read-only":
        out.mkdir()
        out.chmod(0o555)
        if os.access(out, os.W_OK):  # root writes there anyway: refuse as the kernel would
            import compaction_harness.store.fixtures as fixtures

            def refused(*args, **kwargs):
                raise PermissionError(13, "Permission denied")

            monkeypatch.setattr(fixtures.tempfile, "mkstemp", refused)
    else:
        (tmp_path / "a-file").write_text("")
        out = tmp_path / "a-file" / "repros"
    code, out_text, err = run(
        capsys, "minimize", str(RECORDED), "--invariant", "U3", "--out", str(out)
    )
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith(f"error: --out: the repro folder {out} is not writable"), err
    assert "holds" not in out_text


def test_show_of_a_pipeline_fixture_numbers_events_as_stored(capsys) -> None:
    # Summaries appear where ADK stored them, with what each was given, in the
    # numbering the violations use; the prompt that failed the check follows.
    path = REPROS / "P2-2.13.0-3c3afe701381041f.json"
    code, out, err = run(capsys, "show", str(path))
    assert (code, err) == (0, "")
    rows = [line for line in out.splitlines() if line.startswith("#")]
    assert [row.split()[0] for row in rows] == ["#0", "#1", "#2", "#3"]
    assert rows[2].startswith("#2   summary#0: a summary made before the next model call")
    assert rows[2].endswith("given #0, #1")
    assert "known upstream fault: token-compaction-summarises-the-running-request (" in out
    assert out.rstrip().endswith("model: text summary#0")


def test_show_reads_what_a_sized_summary_was_given(capsys, tmp_path: Path) -> None:
    # A replay of a recorded session gives its summaries the run's sizes: the
    # stored text is summary#N then filler, and the timeline still names what
    # summary N was given (it said "given nothing").
    data = json.loads((REPROS / "P2-2.13.0-3c3afe701381041f.json").read_text())
    data["observed"]["stored"] = [0, 1, "summary#0\n" + "s" * 40, 2]
    path = tmp_path / "sized.json"
    path.write_text(json.dumps(data))
    code, out, err = run(capsys, "show", str(path))
    assert (code, err) == (0, "")
    rows = [line for line in out.splitlines() if line.startswith("#2 ")]
    assert len(rows) == 1 and rows[0].endswith("given #0, #1"), rows


# -- pipes, times, targets ----------------------------------------------------------
@pytest.mark.parametrize("command", ["replay", "show"])
def test_a_reader_that_stops_early_gets_no_traceback(tmp_path: Path, command: str) -> None:
    # `replay ... | head -1`: the reader closes the pipe after one line.
    paths = " ".join(str(p) for p in FIXTURES * 20)
    done = subprocess.run(
        f"{sys.executable} -m compaction_harness {command} {paths} | head -1",
        shell=True,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        executable="/bin/bash",
    )
    assert done.returncode == 0
    assert len(done.stdout.splitlines()) == 1
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr


def test_times_print_exactly_relative_to_the_first_event(capsys, tmp_path: Path) -> None:
    data = json.loads(STALL_2_11[0].read_text(encoding="utf-8"))
    first, second = 1796080000.123, 1796080000.1230001
    data["session"]["steps"][0]["timestamp"] = first
    data["session"]["steps"][1]["timestamp"] = second
    path = tmp_path / "epoch.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    code, out, _ = run(capsys, "show", str(path))
    assert code == 0
    assert f"its timestamp is {first!r}" in out
    rows = [line for line in out.splitlines() if TIMELINE_LINE.match(line)]
    assert " t=+0 " in rows[0] and " t=+0.0000001 " in rows[1], rows
    assert "e+09" not in out


def test_make_refuses_adk_together_with_adk_src(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        ["make", "-n", "test", "ADK=2.11.0", f"ADK_SRC={tmp_path}"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    (line,) = done.stderr.splitlines()
    assert "ADK=2.11.0 and ADK_SRC=" in line and "give one of them" in line


def test_warnings_that_older_releases_print_on_import_are_not_shown(tmp_path: Path) -> None:
    # google-adk 1.16.0 imports Google Cloud libraries that print fourteen
    # FutureWarning and UserWarning lines on every start; the command's own
    # output says what matters. Emulated: the command warns as they do.
    code = (
        "import sys, warnings\n"
        "import compaction_harness.surfaces.cli as cli\n"
        "show = cli._cmd_show\n"
        "def noisy(args):\n"
        "    warnings.warn('You are using a Python version (3.11.7) which Google will stop"
        " supporting', FutureWarning)\n"
        "    warnings.warn_explicit('The vertexai.preview.rag module is deprecated',"
        " UserWarning, 'vertex_ai_rag_memory_service.py', 27,"
        " module='google.adk.memory.vertex_ai_rag_memory_service')\n"
        "    return show(args)\n"
        "cli._cmd_show = noisy\n"
        f"sys.exit(cli.main(['show', {str(STALL_2_11[0])!r}]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


@on_2_13
def test_replay_runs_a_script_fixture_on_the_driver_asked_for(capsys) -> None:
    # Fault 7 needs no compaction and no repair: both drivers meet it.
    fixture = str(REPROS / "P2-2.13.0-7b8b0df83536ea5d.json")
    for driver in ("runner", "emulated"):
        code, out, _ = run(capsys, "replay", "--driver", driver, fixture)
        assert code == 0, out
        assert out.startswith("XFAIL ") and "partial-answer-to-parallel-calls" in out


# Fault 6 on the emulating driver, which reloads the session at every model
# call; the Runner reloads it only when a request starts, and no request of
# this script starts after the reordered replies are stored.
ROUND_TRIP_MID_REQUEST = REPROS / "P7-2.13.0-5167e90ad3141661.json"


@on_2_13
def test_replay_on_a_driver_that_cannot_reproduce_the_shape_says_so(capsys) -> None:
    code, out, _ = run(capsys, "replay", "--driver", "runner", str(ROUND_TRIP_MID_REQUEST))
    assert code == 3, out
    first = out.splitlines()[0]
    assert first.startswith("NOREPRO "), out
    assert "the runner driver cannot reproduce this fixture's shape: the Runner loads " in first
    assert "no request of this script starts after steps 1 and 2" in first
    assert "database-reload-reorders-events-by-timestamp: ADK fixed nothing" in first
    assert "known_faults.py" not in out and "remove 2.13.0" not in out
    assert out.rstrip().endswith(", 1 not reproducible on the runner driver")
    # The fixture's own driver still shows the fault.
    code, out, _ = run(capsys, "replay", str(ROUND_TRIP_MID_REQUEST))
    assert code == 0 and out.startswith("XFAIL "), out


@on_2_13
@pytest.mark.parametrize(
    ("driver", "name", "why"),
    [
        # The Runner ends the invocation at the final text the script goes on after.
        (
            "runner",
            "P4-2.13.0-cec7225956fce657.json",
            "the Runner could not run the script as written (op 2: added end",
        ),
        # A runner fixture whose replay the Runner repairs: the emulating driver
        # runs the script as written.
        (
            "emulated",
            "P0-2.13.0-1574f6cf381756d6.json",
            "the Runner, where it shows, ran the script with operations added or dropped",
        ),
    ],
)
def test_a_script_one_driver_runs_repaired_is_not_reproducible_on_the_other(
    capsys, driver: str, name: str, why: str
) -> None:
    code, out, _ = run(capsys, "replay", "--driver", driver, str(REPROS / name))
    assert code == 3, out
    assert out.startswith("NOREPRO ") and why in out.splitlines()[0], out
    assert "known_faults.py" not in out


@on_2_13
def test_replay_on_another_driver_advises_an_edit_only_when_its_own_driver_holds_too(
    capsys, monkeypatch
) -> None:
    from compaction_harness.sdk.python import adk

    # As if ADK had fixed fault 6: a reload gives the session back as stored.
    monkeypatch.setattr(
        adk.Pipeline,
        "database_prompt",
        lambda self, agent_name="agent", branch=None: self.prompt(
            agent_name=agent_name, branch=branch
        ),
    )
    code, out, _ = run(capsys, "replay", "--driver", "runner", str(ROUND_TRIP_MID_REQUEST))
    assert code == 1, out
    assert out.startswith("XPASS ") and "run `make matrix`" in out


def test_replay_on_the_runner_refuses_other_fixture_kinds_in_one_line(capsys) -> None:
    code, out, err = run(capsys, "replay", "--driver", "runner", str(STALL_2_11[0]))
    assert code == 2
    assert err.count("\n") == 1 and "script fixtures only" in err and "unit fixture" in err
    assert "Traceback" not in err + out


# -- ADK-JS fixtures, in an environment without Node --------------------------------------
JS_FIXTURE = REPROS / "P5-adk-js-2.0.0-2d44fea12a2727a0.json"


def test_show_prints_an_adk_js_fixture_without_node(capsys, monkeypatch, tmp_path) -> None:
    from compaction_harness.sdk.js import node

    monkeypatch.setattr(node, "SDK_DIR", tmp_path)  # no package, and no process started
    assert main(["show", str(JS_FIXTURE)]) == 0
    out = capsys.readouterr().out
    assert "found on @google/adk 2.0.0 (ADK for TypeScript)" in out
    assert "known upstream fault: js-branch (ADK-JS" in out and "what a user sees:" in out
    assert "ADK-JS compactor: {'name': 'token_based'" in out
    assert "op 1   fan_out" in out and "<- given #0, #1" in out


@pytest.mark.parametrize("missing", ["package", "node"])
def test_replaying_an_adk_js_fixture_without_node_is_one_line_and_exit_2(
    capsys, monkeypatch, tmp_path, missing
) -> None:
    from compaction_harness.sdk.js import node

    monkeypatch.setattr(node, "_DRIVERS", {})  # no running process
    monkeypatch.setattr(node, "_NODE", node._Node())
    if missing == "package":
        monkeypatch.setattr(node, "SDK_DIR", tmp_path)
    else:
        monkeypatch.setattr(node.shutil, "which", lambda name: None)
    assert main(["replay", str(JS_FIXTURE)]) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and "make js-env" in captured.err
    assert "an ADK-JS fixture cannot be replayed here" in captured.err
    assert "Traceback" not in captured.err + captured.out


def test_replay_on_another_driver_refuses_an_adk_js_fixture(capsys) -> None:
    assert main(["replay", "--driver", "runner", str(JS_FIXTURE)]) == 2
    assert "an ADK-JS fixture (it runs on the Node driver)" in capsys.readouterr().err


def test_profile_refuses_an_adk_js_fixture_in_one_line(capsys) -> None:
    assert main(["profile", str(JS_FIXTURE)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "an ADK-JS fixture cannot be profiled" in err


def test_replaying_a_folder_without_node_counts_its_adk_js_fixtures_apart(
    capsys, monkeypatch, tmp_path
) -> None:
    # The newcomer review: a folder's summary called the JS fixtures "bad
    # input" when only the environment was missing.
    from compaction_harness.sdk.js import node

    monkeypatch.setattr(node, "_DRIVERS", {})
    monkeypatch.setattr(node, "_NODE", node._Node())
    monkeypatch.setattr(node, "SDK_DIR", tmp_path / "none")
    folder = tmp_path / "repros"
    folder.mkdir()
    python = sorted(REPROS.glob("P4-2.13.0-*.json"))[0]
    for source in (JS_FIXTURE, python):
        (folder / source.name).write_bytes(source.read_bytes())
    assert main(["replay", str(folder)]) == 2
    out = capsys.readouterr().out.rstrip()
    assert out.endswith(", 1 ADK-JS fixtures not replayed (no Node or no package: `make js-env`)")
    assert "bad input" not in out


# -- who observed it ----------------------------------------------------------------
def test_an_adk_js_violation_says_adk_js_observed_it(capsys, monkeypatch):
    # No Node needed: the replay's check is replaced by one that reports a
    # new violation, as @google/adk's run would.
    from compaction_harness.sdk.python.unit import InvariantViolation
    from compaction_harness.spec.invariants import Violation
    from compaction_harness.spec.outcome import UnitOutcome
    from compaction_harness.surfaces import verdicts

    path = REPROS / "P0-adk-js-2.0.0-08ea5aac229385e5.json"
    fixture = load_fixture(path)
    violation = Violation("P0", "ADK-JS raised", expected=None, observed="Error")
    outcome = UnitOutcome([violation], {}, {})
    monkeypatch.setattr(
        verdicts,
        "check",
        lambda case, release=None: verdicts.Verdict("2.0.0", (violation,), (), outcome),
    )
    code, out, _ = run(capsys, "replay", str(path))
    assert code == 1, out
    assert "observed (ADK-JS):" in out and "observed (ADK):" not in out
    raised = str(InvariantViolation(fixture.case, outcome))
    assert "observed (ADK-JS):" in raised and "observed (ADK):" not in raised
    # A Python fixture's violations keep ADK's label.
    python_fixture = load_fixture(REPROS / "U3-2.11.0-fa8ad53970ec0bb0.json")
    assert "observed (ADK):" in str(InvariantViolation(python_fixture.case, outcome))


@on_2_13
def test_replay_without_gnu_patch_says_so_in_one_line(capsys, monkeypatch) -> None:
    # Classification re-runs a fault fixture with its fix, a diff GNU patch applies.
    from compaction_harness.sdk.python import fixes

    monkeypatch.setattr(fixes.shutil, "which", lambda name: None)
    fixes._apply.cache_clear()
    code, _, err = run(capsys, "replay", str(REPROS / "U3-2.13.0-e3f99bee2b15adeb.json"))
    fixes._apply.cache_clear()
    assert code == 2
    assert err.strip().count("\n") == 0 and "needs GNU patch" in err, err


def test_replay_in_another_release_keeps_json(monkeypatch, tmp_path) -> None:
    # `replay --adk R --json` runs again in R's environment: the JSON must be
    # asked for there too (it printed text).
    from compaction_harness import envs
    from compaction_harness.surfaces import replay

    python = tmp_path / "python"
    monkeypatch.setattr(envs, "ensure", lambda target: python)
    ran: list[list[str]] = []
    monkeypatch.setattr(replay.os, "execv", lambda path, argv: ran.append(argv))
    fixture = str(REPROS / "U3-2.11.0-fa8ad53970ec0bb0.json")
    main(["replay", "--json", "--adk", "2.11.0", fixture])
    main(["replay", "--adk", "2.11.0", fixture])
    assert ran == [
        [str(python), "-m", "compaction_harness", "replay", fixture, "--json"],
        [str(python), "-m", "compaction_harness", "replay", fixture],
    ]


@pytest.mark.parametrize("terminal", [True, False])
def test_a_long_recorded_replay_says_on_a_terminal_that_it_started(monkeypatch, capsys, terminal):
    # A recorded session of hundreds of events replays for minutes; on a
    # terminal one line says it has started (never in a pipe or a log).
    from compaction_harness.surfaces import replay

    monkeypatch.setattr(replay, "LONG_SESSION", 6)
    monkeypatch.setattr(replay, "_is_terminal", lambda: terminal)
    path = str(REPROS / "P2-2.13.0-232a5d4418c2b7a8.json")  # a recorded session of 6 events
    main(["replay", path])
    said = capsys.readouterr().err
    assert (f"replaying {path}: 6 events through the SDK's compaction" in said) == terminal


@pytest.mark.parametrize(
    "argv",
    [["check", "--seconds", "abc", "x"], ["replay", "--driver", "banana", "x"], ["nosuchcommand"]],
    ids=["float", "choice", "command"],
)
def test_a_bad_option_value_is_one_line(capsys, argv: list[str]) -> None:
    # Found by a newcomer: argparse printed its whole usage (9 to 14 lines)
    # above the error; docs/check.md promises one line.
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "error:" in err and "(see --help)" in err, err


def test_a_session_store_given_as_a_session_says_how_to_export_one(capsys, tmp_path) -> None:
    # Found by a newcomer: an adk web store (.adk/session.db, SQLite) given
    # to minimize or replay read as "'utf-8' codec can't decode byte 0xf8".
    import sqlite3

    store = tmp_path / "session.db"
    sqlite3.connect(store).execute("create table sessions (id text)").connection.commit()
    config = ["--config", '{"compaction_interval": 2, "overlap_size": 0}']
    for argv in (["minimize", str(store), *config], ["replay", *config, str(store)]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "an SQLite session store" in err, err
        assert "model_dump_json()" in err
