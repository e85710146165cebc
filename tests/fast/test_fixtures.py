"""The fixture store: lossless, atomic, never overwriting; strict and inert on load."""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import os
import re
import threading
from pathlib import Path

import pytest
from builders import answer, call, session, summary, text, user

from compaction_harness.sdk.python.unit import UnitCase
from compaction_harness.spec.model import ModelError, Step
from compaction_harness.store import fixtures
from compaction_harness.store.fixtures import (
    NEWEST_KNOWN_RELEASE,
    Fixture,
    FixtureError,
    load_fixture,
    newer_than_known,
    write_fixture,
)

SESSION = session(
    user("i1", 1),
    call("i1", 2, "a"),
    answer("i1", 3, "a"),
    text("i2", 4),
    summary("i2", 5, 1, 4),
)
FIXTURE = Fixture(
    kind="unit",
    invariant="U3",
    adk_release="2.13.0",
    case=UnitCase(SESSION, (0, 1, 2, 3)),
    expected={"prefix_length": 4, "dead_ids": []},
    observed={"prefix_length": 1, "dead_ids": []},
    violations=("U3: prefix stops at 1 events but 4 are safe to compact",),
    known_fault="dead-call-retry-skipped-at-invocation-boundary",
    note="found by hand \u2014 \u00fc\U0001f600",
)
NAME = re.compile(r"^U3-2\.13\.0-[0-9a-f]{16}\.json$")


# -- write / load --------------------------------------------------------------
def test_write_then_load_gives_the_same_fixture(tmp_path: Path) -> None:
    path, new = write_fixture(FIXTURE, tmp_path)
    assert new is True
    assert path.parent == tmp_path
    assert NAME.match(path.name), path.name
    assert path.name == FIXTURE.file_name()

    loaded = load_fixture(path)
    assert loaded.path == path
    assert loaded.case == FIXTURE.case
    assert (loaded.kind, loaded.invariant, loaded.adk_release) == ("unit", "U3", "2.13.0")
    assert loaded.expected == FIXTURE.expected
    assert loaded.observed == FIXTURE.observed
    assert loaded.violations == FIXTURE.violations
    assert (loaded.known_fault, loaded.note) == (FIXTURE.known_fault, FIXTURE.note)
    assert dataclasses.replace(loaded, path=None) == FIXTURE


def test_the_file_shows_one_session_step_per_line(tmp_path: Path) -> None:
    path, _ = write_fixture(FIXTURE, tmp_path)
    lines = path.read_text(encoding="utf-8").splitlines()
    for index, step in enumerate(SESSION):
        matching = [
            line for line in lines if line.strip().rstrip(",") == json.dumps(step.to_json())
        ]
        assert len(matching) == 1, (index, step)
    assert json.loads(path.read_text(encoding="utf-8")) == FIXTURE.to_json()
    assert FIXTURE.note in path.read_text(encoding="utf-8")  # readable, not \u-escaped


def test_writing_again_changes_nothing(tmp_path: Path) -> None:
    path, _ = write_fixture(FIXTURE, tmp_path)
    before = path.read_bytes()
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))  # an old mtime a rewrite would change
    again, new = write_fixture(FIXTURE, tmp_path)
    assert (again, new) == (path, False)
    assert path.read_bytes() == before
    assert path.stat().st_mtime_ns == 1_000_000_000
    assert os.listdir(tmp_path) == [path.name]


def test_the_name_identifies_the_failure_not_the_answers(tmp_path: Path) -> None:
    path, _ = write_fixture(FIXTURE, tmp_path)
    other_answers = dataclasses.replace(FIXTURE, observed={"prefix_length": 0}, note=None)
    assert write_fixture(other_answers, tmp_path) == (path, False)
    assert load_fixture(path).observed == FIXTURE.observed  # the first one stays

    other_window = dataclasses.replace(FIXTURE, case=UnitCase(SESSION, (0, 1, 2)))
    other_path, new = write_fixture(other_window, tmp_path)
    assert new is True
    assert other_path != path
    assert NAME.match(other_path.name)
    assert sorted(os.listdir(tmp_path)) == sorted([path.name, other_path.name])


def test_write_creates_the_directory(tmp_path: Path) -> None:
    path, new = write_fixture(FIXTURE, tmp_path / "a" / "b")
    assert new and path.parent == tmp_path / "a" / "b"
    assert load_fixture(path).case == FIXTURE.case


@pytest.mark.parametrize("round_", range(5))
def test_concurrent_writers_produce_one_whole_file(tmp_path: Path, round_: int) -> None:
    workers = 8
    start = threading.Barrier(workers)

    def write() -> tuple[Path, bool]:
        start.wait(timeout=10)
        return write_fixture(FIXTURE, tmp_path)

    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        results = [f.result(timeout=30) for f in [pool.submit(write) for _ in range(workers)]]

    paths = {path for path, _ in results}
    assert paths == {tmp_path / FIXTURE.file_name()}
    assert sum(new for _, new in results) == 1
    assert os.listdir(tmp_path) == [FIXTURE.file_name()]  # no .tmp-* left behind
    assert dataclasses.replace(load_fixture(paths.pop()), path=None) == FIXTURE


# -- malformed fixtures --------------------------------------------------------
def valid() -> dict:
    return FIXTURE.to_json()


def without(key: str) -> dict:
    data = valid()
    del data[key]
    return data


def with_(**changes) -> dict:
    return {**valid(), **changes}


def with_step(index: int, **changes) -> dict:
    data = valid()
    data["session"]["steps"][index].update(changes)
    return data


def encode(data) -> bytes:
    return json.dumps(data).encode()


BAD_FILES: dict[str, tuple[bytes, str]] = {
    "invalid-json": (b'{"schema_version": 1, "kind": ', "invalid JSON"),
    "trailing-garbage": (encode(valid()) + b" }", "invalid JSON"),
    "empty": (b"", "invalid JSON"),
    "not-utf8": (b'{"note": "\xff\xfe"}', "not UTF-8"),
    "top-level-list": (b"[]", "expected a JSON object at the top, got list"),
    "top-level-string": (b'"fixture"', "expected a JSON object at the top, got str"),
    "top-level-null": (b"null", "expected a JSON object at the top, got NoneType"),
    "nan-timestamp": (
        encode(valid()).replace(b'"timestamp": 1.0', b'"timestamp": NaN', 1),
        "NaN is not a JSON number",
    ),
    "infinity-in-expected": (
        encode(valid()).replace(b'"prefix_length": 4', b'"prefix_length": Infinity', 1),
        "Infinity is not a JSON number",
    ),
    **{
        f"missing-{key}": (encode(without(key)), f"missing field {key!r}")
        for key in fixtures._REQUIRED
    },
    "missing-adk_release": (encode(without("adk_release")), "missing field 'adk_release'"),
    "python-with-package-version": (
        encode(with_(package_version="2.0.0")),
        "package_version: only an ADK-JS fixture (sdk 'adk-js') has it",
    ),
    "unknown-sdk": (encode(with_(sdk="go")), "sdk: unknown SDK 'go' (known: python, adk-js)"),
    "unknown-top-level-field": (encode(with_(extra=1)), "unknown field 'extra'"),
    "schema-version-4": (encode(with_(schema_version=4)), "schema_version 4 is not supported"),
    "schema-version-string": (
        encode(with_(schema_version="1")),
        "schema_version: expected an integer",
    ),
    "schema-version-bool": (
        encode(with_(schema_version=True)),
        "schema_version: expected an integer",
    ),
    "unknown-kind": (encode(with_(kind="system")), "kind: unknown kind 'system'"),
    "empty-invariant": (encode(with_(invariant="")), "invariant: unknown invariant ''"),
    "unknown-invariant": (encode(with_(invariant="U9")), "invariant: unknown invariant 'U9'"),
    "release-int": (encode(with_(adk_release=213)), "adk_release: expected a release number"),
    "release-word": (encode(with_(adk_release="banana")), "adk_release: expected a release"),
    "release-before-compaction": (
        encode(with_(adk_release="1.15.0")),
        "adk_release 1.15.0: event compaction exists only from 1.16.0 on",
    ),
    "observed-event-unknown-field": (
        encode(with_(observed={"session": {"steps": [{"bogus": 1}]}})),
        "observed.session.steps[0]: unknown field 'bogus'",
    ),
    "unregistered-known-fault": (
        encode(with_(known_fault="no-such-fault")),
        "known_fault: 'no-such-fault' is not registered",
    ),
    "call-without-window": (encode(with_(call={})), "call: expected an object with exactly"),
    "call-extra-field": (
        encode(with_(call={"window": [0], "helper": "x"})),
        "call: expected an object with exactly",
    ),
    "window-with-string": (
        encode(with_(call={"window": [0, "1"]})),
        "call.window: expected a list of integers",
    ),
    "window-object": (
        encode(with_(call={"window": {"0": 0}})),
        "call.window: expected a list of integers",
    ),
    "window-index-out-of-range": (
        encode(with_(call={"window": [0, 5]})),
        "window: index out of range for a session of 5 steps",
    ),
    "window-negative-index": (encode(with_(call={"window": [-1]})), "index out of range"),
    "window-not-increasing": (
        encode(with_(call={"window": [1, 0]})),
        "window: indices must be strictly increasing",
    ),
    "window-repeats": (encode(with_(call={"window": [1, 1]})), "strictly increasing"),
    "window-holds-compaction": (
        encode(with_(call={"window": [3, 4]})),
        "a compaction event cannot be in a compaction window",
    ),
    "session-not-object": (encode(with_(session=[])), "session: expected an object"),
    "steps-not-list": (
        encode(with_(session={"steps": {"0": {}}})),
        "session.steps: expected a list, got dict",
    ),
    "step-unknown-field": (
        encode(with_step(1, colour="red")),
        "session.steps[1]: unknown field 'colour'",
    ),
    "call-missing-name": (
        encode(with_step(1, calls=[{"id": "a"}])),
        "session.steps[1].calls[0]: missing field 'name'",
    ),
    "timestamp-string": (
        encode(with_step(0, timestamp="1.0")),
        "session.steps[0].timestamp: expected a number, got str",
    ),
    "expected-list": (encode(with_(expected=[4])), "expected: expected an object"),
    "violations-not-strings": (
        encode(with_(violations=[1])),
        "violations: expected a list of strings",
    ),
    "known-fault-int": (encode(with_(known_fault=7)), "known_fault: expected a string"),
    "deeply-nested": (b"[" * 100_000 + b"]" * 100_000, "JSON nested too deeply"),
    "deeply-nested-in-a-field": (
        encode(valid())[:-1] + b', "note": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        "JSON nested too deeply",
    ),
}


def assert_one_line_error(info: pytest.ExceptionInfo[FixtureError], path: Path, part: str) -> None:
    message = str(info.value)
    assert len(message.splitlines()) == 1, message
    assert str(path) in message
    assert part in message, message


@pytest.mark.parametrize(("content", "part"), BAD_FILES.values(), ids=BAD_FILES.keys())
def test_malformed_fixture_is_a_one_line_error(tmp_path: Path, content: bytes, part: str) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(FixtureError) as info:
        load_fixture(path)
    assert_one_line_error(info, path, part)


def test_the_valid_base_of_the_malformed_cases_loads(tmp_path: Path) -> None:
    # Each malformed case above is this file with one thing broken.
    path = tmp_path / "good.json"
    path.write_bytes(encode(valid()))
    assert dataclasses.replace(load_fixture(path), path=None) == FIXTURE


def test_a_file_over_the_size_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "big.json"
    path.write_bytes(encode(valid()))
    size = path.stat().st_size
    monkeypatch.setattr(fixtures, "MAX_FIXTURE_BYTES", size - 1)
    with pytest.raises(FixtureError) as info:
        load_fixture(path)
    assert_one_line_error(info, path, f"{size} bytes, more than the limit of {size - 1}")
    monkeypatch.setattr(fixtures, "MAX_FIXTURE_BYTES", size)
    assert load_fixture(path).case == FIXTURE.case


def test_a_directory_is_not_a_fixture(tmp_path: Path) -> None:
    path = tmp_path / "dir.json"
    path.mkdir()
    with pytest.raises(FixtureError) as info:
        load_fixture(path)
    assert_one_line_error(info, path, "cannot read")


def test_a_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "missing.json"
    with pytest.raises(FixtureError) as info:
        load_fixture(str(path))
    assert_one_line_error(info, path, "cannot read")


def test_a_timestamp_too_large_for_a_float(tmp_path: Path) -> None:
    path = tmp_path / "huge.json"
    path.write_bytes(encode(valid()).replace(b'"timestamp": 1.0', b'"timestamp": 1' + b"0" * 400))
    with pytest.raises(FixtureError) as info:
        load_fixture(path)
    assert_one_line_error(info, path, "session.steps[0].timestamp")


# -- nothing in a fixture runs ---------------------------------------------------
def test_nothing_in_a_fixture_is_executed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    marker = tmp_path / "PWNED"
    code = f"__import__('os').system('touch {marker}')"
    evil = [
        f"{code}",
        f'eval("{code}")',
        f"{{{{{code}}}}}",  # a format field
        f"${{{code}}}",
        f"!!python/object/apply:os.system ['touch {marker}']",
    ]
    good = valid()
    good["note"] = evil[0]
    good["violations"] = evil
    good["expected"] = {"__reduce__": evil[0], "__class__": evil[1]}
    good["session"]["steps"][0].update(author=evil[3], text=evil[4], branch=evil[0])
    good["session"]["steps"][1]["calls"] = [{"id": evil[0], "name": evil[1]}]
    good_path = tmp_path / "good.json"
    good_path.write_bytes(encode(good))

    loaded = load_fixture(good_path)
    # The strings are data, kept verbatim, and stay data when shown and rewritten.
    assert loaded.note == evil[0]
    assert loaded.violations == tuple(evil)
    assert loaded.case.session[0].author == evil[3]
    assert loaded.case.session[1].calls[0].id == evil[0]
    loaded.case.render()
    json.dumps(loaded.to_json())

    # Where a field is an identifier, code in it is refused, not run.
    for index, field in enumerate(("kind", "invariant", "known_fault", "adk_release")):
        bad_path = tmp_path / f"bad{index}.json"
        bad_path.write_bytes(encode(dict(good, **{field: evil[index % 3]})))
        with pytest.raises(FixtureError):
            load_fixture(bad_path)

    assert not marker.exists()
    assert sorted(os.listdir(tmp_path)) == [f"bad{i}.json" for i in range(4)] + ["good.json"]


def test_loading_keeps_every_step_field(tmp_path: Path) -> None:
    step = Step.from_json(
        {
            "invocation": "i9",
            "author": "agent",
            "timestamp": 9,
            "text": "t",
            "calls": [{"id": "c", "name": "n"}],
            "responses": [{"id": "d", "name": "n"}],
            "long_running": ["c"],
            "confirmations": ["d"],
            "auth_requests": ["e"],
            "rewind_before": "i1",
            "branch": "b",
            "isolation_scope": "s",
            "prompt_tokens": 12,
        }
    )
    fixture = dataclasses.replace(
        FIXTURE, case=UnitCase(session(*SESSION.steps, step), (0, 1, 2, 3, 5))
    )
    path, _ = write_fixture(fixture, tmp_path)
    assert load_fixture(path).case == fixture.case


def test_an_adk_session_given_for_a_fixture_names_the_command_that_reads_it(tmp_path: Path):
    # `show` or `replay` of what a session service stored: say what it is.
    recorded = Path(__file__).parents[1] / "data" / "recorded_session.json"
    events = tmp_path / "events.json"
    events.write_text(json.dumps(json.loads(recorded.read_text())["events"]), encoding="utf-8")
    for path in (recorded, events):
        with pytest.raises(FixtureError) as err:
            load_fixture(path)
        message = str(err.value)
        assert message.startswith(f"{path}: an ADK session") and "minimize" in message
        assert "\n" not in message


# -- ADK-JS fixtures (sdk "adk-js", schema version 3) ---------------------------------------
REPROS = Path(__file__).parents[1] / "repros"
JS_FIXTURE = REPROS / "P5-adk-js-2.0.0-2d44fea12a2727a0.json"


def js_valid() -> dict:
    return json.loads(JS_FIXTURE.read_text())


JS_BAD: dict[str, tuple[dict, str]] = {
    "with-adk_release": (
        {**js_valid(), "adk_release": "2.13.0"},
        "adk_release: an ADK-JS fixture names its package_version instead",
    ),
    "missing-package_version": (
        {k: v for k, v in js_valid().items() if k != "package_version"},
        "missing field 'package_version' (required for sdk 'adk-js')",
    ),
    "missing-compactor": (
        {k: v for k, v in js_valid().items() if k != "compactor"},
        "missing field 'compactor' (required for sdk 'adk-js')",
    ),
    "unknown-compactor": (
        {**js_valid(), "compactor": {"name": "sliding", "options": {}}},
        "compactor.name: unknown ADK-JS compactor 'sliding'",
    ),
    "compactor-option-not-scalar": (
        {**js_valid(), "compactor": {"name": "anchored", "options": {"tokenThreshold": [1]}}},
        "compactor.options.tokenThreshold: expected a non-negative integer, got [1]",
    ),
    # A string where ADK-JS reads a number would replay as a new failure.
    "compactor-option-a-string": (
        {
            **js_valid(),
            "compactor": {"name": "token_based", "options": {"eventRetentionSize": "0"}},
        },
        "compactor.options.eventRetentionSize: expected a non-negative integer, got '0'",
    ),
    "compactor-option-unknown": (
        {**js_valid(), "compactor": {"name": "token_based", "options": {"bogus": 1}}},
        "compactor.options.bogus: not an option of the token_based compactor",
    ),
    "not-a-script": ({**js_valid(), "kind": "unit"}, "an ADK-JS fixture is of kind 'script'"),
    "python-fault": (
        {**js_valid(), "known_fault": "database-reload-reorders-events-by-timestamp"},
        "not registered in adk_js.KNOWN_FAULTS",
    ),
    "bad-version": ({**js_valid(), "package_version": "latest"}, "package_version: expected"),
    "also-shows-a-string": (
        {**js_valid(), "also_shows": "js-branch"},
        "also_shows: expected a list of fault ids",
    ),
    "also-shows-unregistered": (
        {**js_valid(), "also_shows": ["no-such-fault"]},
        "also_shows: 'no-such-fault' is not a registered known fault",
    ),
    "also-shows-its-own-fault": (
        {**js_valid(), "known_fault": "js-branch", "also_shows": ["js-branch"]},
        "also_shows: 'js-branch' is the fixture's known_fault already",
    ),
}


def test_also_shows_loads_and_round_trips(tmp_path: Path) -> None:
    data = {**js_valid(), "known_fault": "js-branch", "also_shows": ["js-late-answer"]}
    path = tmp_path / "shows.json"
    path.write_text(json.dumps(data))
    fixture = load_fixture(path)
    assert fixture.also_shows == ("js-late-answer",)
    assert fixture.to_json()["also_shows"] == ["js-late-answer"]


@pytest.mark.parametrize(("data", "part"), JS_BAD.values(), ids=JS_BAD.keys())
def test_a_malformed_adk_js_fixture_is_a_one_line_error(tmp_path: Path, data, part) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(FixtureError) as info:
        load_fixture(path)
    assert part in str(info.value) and "\n" not in str(info.value)


def test_an_adk_js_fixture_loads_without_node_and_round_trips(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from compaction_harness.sdk.js import adk_js, node

    # Loading reads JSON only: no package, no Node process.
    monkeypatch.setattr(node, "SDK_DIR", tmp_path / "nowhere")
    fixture = load_fixture(JS_FIXTURE)
    assert fixture.sdk == "adk-js" and fixture.is_js and fixture.adk_release == "2.0.0"
    assert isinstance(fixture.case, adk_js.JsCase)
    assert fixture.case.compactor.name == "token_based"
    assert fixture.known_fault == "js-branch" and fixture.kind == "script"
    assert fixture.file_name() == JS_FIXTURE.name  # the name is the content hash
    assert fixtures.dumps(fixture) == JS_FIXTURE.read_text()
    path, new = write_fixture(fixture, tmp_path)
    assert new and path.read_text() == JS_FIXTURE.read_text()


def _python_fixtures(folder: Path) -> list[Path]:
    """The Python fixtures of ``folder``: told by the ``sdk`` field (absent: python)."""
    paths = sorted(folder.glob("*.json"))
    return [p for p in paths if json.loads(p.read_text()).get("sdk", "python") == "python"]


def _check_python_fixture_loads_as_python(path: Path) -> None:
    # Any version the loader reads (an upgraded one or the current one); a
    # Python fixture is written without `sdk`, loads as "python", and its
    # content hash (its name) is unchanged.
    data = json.loads(path.read_text())
    readable = {*fixtures.UPGRADES, fixtures.SCHEMA_VERSION}
    assert data["schema_version"] in readable and "sdk" not in data, path.name
    fixture = load_fixture(path)
    assert fixture.sdk == "python" and not fixture.is_js
    assert fixture.file_name() == path.name
    assert fixture.to_json()["schema_version"] == fixtures.SCHEMA_VERSION


def test_a_python_fixture_without_sdk_loads_as_python_and_keeps_its_name() -> None:
    python = _python_fixtures(REPROS)
    assert python
    for path in python:
        _check_python_fixture_loads_as_python(path)


def test_a_python_fixture_the_harness_writes_passes_the_corpus_check(tmp_path: Path) -> None:
    # What a campaign writes into tests/repros/ tomorrow (the current schema
    # version) must pass the same check as the committed fixtures.
    by_kind = {}
    for committed in map(load_fixture, _python_fixtures(REPROS)):
        by_kind.setdefault(committed.kind, dataclasses.replace(committed, path=None))
    assert {"unit", "token", "script", "pipeline"} <= set(by_kind)
    for fixture in by_kind.values():
        path, new = write_fixture(fixture, tmp_path)
        assert new and json.loads(path.read_text())["schema_version"] == fixtures.SCHEMA_VERSION
        assert _python_fixtures(tmp_path)[-1:] and path in _python_fixtures(tmp_path)
        _check_python_fixture_loads_as_python(path)


def test_adk_js_names_cannot_collide_with_google_adk_releases() -> None:
    js = load_fixture(JS_FIXTURE)
    as_python = dataclasses.replace(js, sdk="python", case=js.case.script)
    assert js.file_name().startswith("P5-adk-js-2.0.0-")
    assert as_python.file_name().startswith("P5-2.0.0-")  # google-adk 2.0.0's would-be name
    assert js.identity() != as_python.identity()


# -- releases the harness does not know ----------------------------------------------
def test_a_fixture_of_a_release_newer_than_known_loads_with_a_warning(tmp_path, capsys):
    from compaction_harness.surfaces.cli import main

    path = tmp_path / "U3-9.9.9-x.json"
    path.write_bytes(encode(with_(adk_release="9.9.9")))
    fixture = load_fixture(path)
    note = newer_than_known(fixture)
    assert note and "\n" not in note and "9.9.9" in note and NEWEST_KNOWN_RELEASE in note
    assert newer_than_known(FIXTURE) is None
    assert main(["show", str(path)]) == 0
    err = capsys.readouterr().err
    assert err == f"warning: {note}\n"


def test_the_gate_refuses_a_fixture_of_a_release_newer_than_known(tmp_path):
    import test_repros

    path = tmp_path / "U3-9.9.9-x.json"
    path.write_bytes(encode(with_(adk_release="9.9.9")))
    with pytest.raises(pytest.fail.Exception, match="newer than any release this harness knows"):
        test_repros.test_fixture_holds(path, database_server=None)


def test_the_newest_known_release_is_the_pin_and_nothing_goes_further():
    import re

    from compaction_harness import DEFAULT_ADK_RELEASE
    from compaction_harness.sdk.python.known_faults import KNOWN_FAULTS
    from compaction_harness.surfaces.matrix import FIXED

    def version(release):
        return tuple(int(x) for x in re.findall(r"\d+", release)[:3])

    root = Path(__file__).resolve().parents[2]
    assert NEWEST_KNOWN_RELEASE == DEFAULT_ADK_RELEASE
    matrix = json.loads((root / "docs" / "release-matrix.json").read_text())
    # A column RELEASE+fixes runs RELEASE (matrix.FIXED).
    named = {r.removesuffix(FIXED) for r in matrix["releases"]}
    named |= {r for f in KNOWN_FAULTS for r in f.releases}
    named |= {
        p.name.split("-")[1]
        for p in (root / "tests" / "repros").glob("*.json")
        if "-adk-js-" not in p.name
    }
    assert max(named, key=version) == NEWEST_KNOWN_RELEASE


def test_a_failure_no_known_fault_explains_tells_the_one_command_that_keeps_it_out_of_the_gate(
    tmp_path, monkeypatch
):
    from compaction_harness.store.fixtures import unjudged_advice

    monkeypatch.chdir(tmp_path)
    path = tmp_path / "tests" / "repros" / "P2-adk-js-2.0.0-45a72ee868c7c9b7.json"
    advice = unjudged_advice(path)
    relative = "tests/repros/P2-adk-js-2.0.0-45a72ee868c7c9b7.json"
    assert f"make show FIXTURE={relative}" in advice
    assert f"mv {relative} docs/findings/" in advice
    assert "\n" not in advice


def test_a_script_fixture_with_its_operations_emptied_is_refused(tmp_path: Path) -> None:
    # Found by a newcomer: an emptied script replayed as "ok" and would pass
    # the gate; a failing script runs at least one operation.
    source = REPROS / "P3-2.13.0-19f93e846526b6cb.json"
    data = json.loads(source.read_text())
    assert fixtures.load_fixture(source).case.operations  # the valid base loads
    data["call"]["operations"] = []
    path = tmp_path / "emptied.json"
    path.write_text(json.dumps(data))
    with pytest.raises(fixtures.FixtureError) as info:
        fixtures.load_fixture(path)
    assert "call.operations: empty" in str(info.value) and "\n" not in str(info.value)


def test_an_unknown_schema_version_names_the_ones_read() -> None:
    with pytest.raises(ModelError) as info:
        fixtures._parse({**valid(), "schema_version": 9}, Path("x.json"))
    assert "schema_version 9 is not supported (this harness reads 1 to 3)" in str(info.value)
