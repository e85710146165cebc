"""The harness's pytest plugin (loaded with ``-p compaction_harness.surfaces.pytest_plugin``).

It provides:

* Hypothesis **profiles**: ``gate`` (``make test``: derandomised, no example
  database, bounded), ``fuzz`` (``make fuzz``: random, with a persistent
  example database per ADK release under ``.hypothesis/``) and ``dev`` (the
  default for a bare ``pytest``).
* **Fixture writing**: when a test marked ``property`` fails with
  :class:`~compaction_harness.sdk.python.unit.InvariantViolation`, the case Hypothesis
  shrank and re-ran last is written as a fixture, and the path is added to
  the failure report. A campaign writes to ``tests/repros/`` (replayed by the
  gate from then on); any other run writes to ``build/repros/``, so that a
  red gate never adds files to the regression corpus by itself. Either can
  be changed with ``--repro-dir``.
* A **time-budgeted campaign**: with ``--fuzz-seconds N`` each property test
  is split into ``--fuzz-shards`` items (so pytest-xdist can use every core)
  and each item runs Hypothesis again and again, a fresh random seed each
  time, until its budget is spent or it finds a failure. A summary of rounds,
  examples, failures and fixtures closes the run.
* A **shared example database** (``FUZZ_DB=redis://HOST:PORT/N`` in the
  environment): the ``fuzz`` profile multiplexes the local database with a
  Redis one keyed by the target release (:mod:`compaction_harness.store.shared_db`),
  so campaigns on several machines replay each other's failures. A campaign
  started with ``--fuzz-worker`` writes no fixtures: its failures stay in the
  shared database, and the one campaign without it (the writer) replays them
  in its next round and writes each fixture once.
* **Database servers** for the storage kinds ``postgresql`` and ``mariadb``
  (:mod:`.plugin_servers`): ``HARNESS_SERVERS`` starts them for a campaign,
  the fixture ``database_server`` for a test that asks.
"""

from __future__ import annotations

import functools
import hashlib
import os
import time
from importlib import metadata
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, seed, settings
from hypothesis.database import DirectoryBasedExampleDatabase

from ..sdk.python.unit import InvariantViolation
from ..store import shared_db
from .campaign_clock import _BudgetSpent, _Clock, _round_seed

# With plugin_servers's fixtures, in this module's namespace: pytest looks for
# a plugin's fixtures there.
from .plugin_servers import (  # noqa: F401
    _database_servers,
    database_server,
    own_databases,
    start_servers,
)


def _adk_release() -> str:
    # Read from package metadata: importing google.adk here would slow every run.
    try:
        return metadata.version("google-adk")
    except metadata.PackageNotFoundError:
        return "none"


_COMMON = dict(
    deadline=None,
    report_multiple_bugs=False,  # the minimal failing example runs last: it is the fixture
    print_blob=False,  # blobs are tied to a Hypothesis version; fixtures are the repro
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "gate",
    derandomize=True,
    # No explain phase: it replays a pipeline failure a hundred times more to
    # say which choices mattered; the fixture already says what failed.
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
    database=None,
    max_examples=int(os.environ.get("HARNESS_GATE_EXAMPLES", "300")),
    **_COMMON,
)
#: HARNESS_FIXES (``make ... FIXES=``): the google-adk fixes the whole session runs
#: with (``surfaces.switch``); a campaign with fixes keeps an example database of its
#: own, so that replaying the release's saved failures on the fixed SDK, where they
#: pass, never deletes them.
FIXES_SPEC = (os.environ.get("HARNESS_FIXES") or "").strip()
_FIXED_SUFFIX = "+fixes" if FIXES_SPEC not in ("", "none") else ""
#: FUZZ_DB: a Redis URL whose database every campaign process shares (none: local only).
SHARED_DB_URL = os.environ.get("FUZZ_DB") or None
#: FUZZ_DB as summaries and notes print it (no password).
_SHOWN_DB = shared_db.redacted(SHARED_DB_URL) if SHARED_DB_URL else None
#: Why FUZZ_DB cannot be used (a malformed URL), said by pytest_cmdline_main.
_SHARED_DB_ERROR: shared_db.SharedDatabaseError | None = None
# HARNESS_FUZZ_DB moves the local database (the end-to-end test keeps its own).
_LOCAL_DB = DirectoryBasedExampleDatabase(
    os.environ.get("HARNESS_FUZZ_DB") or f".hypothesis/fuzz-adk-{_adk_release()}{_FIXED_SUFFIX}"
)
try:
    _FUZZ_DB = shared_db.fuzz_database(_LOCAL_DB, SHARED_DB_URL, _adk_release() + _FIXED_SUFFIX)
except shared_db.SharedDatabaseError as _exc:
    _SHARED_DB_ERROR, _FUZZ_DB = _exc, _LOCAL_DB
settings.register_profile(
    "fuzz",
    derandomize=False,
    database=_FUZZ_DB,
    max_examples=250,  # per round (a second or two); rounds repeat until the budget is spent
    # No explicit phase: the `@example` canaries belong to the gate; a campaign
    # must find faults by itself.
    phases=[Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
    **_COMMON,
)
settings.register_profile("dev", max_examples=100, **_COMMON)
if not os.environ.get("CI"):
    # Under CI=true Hypothesis loads its own `ci` profile; `make test` asks for
    # `gate` explicitly either way.
    settings.load_profile("dev")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("compaction-harness")
    group.addoption(
        "--fuzz-seconds",
        type=float,
        default=None,
        help="campaign mode: run each property until this many seconds are spent",
    )
    group.addoption(
        "--fuzz-shards",
        type=int,
        default=None,
        help="campaign mode: items per property test (default: xdist workers, or 1)",
    )
    group.addoption(
        "--fuzz-worker",
        action="store_true",
        default=False,
        help="campaign mode: one of many campaigns sharing FUZZ_DB; write no fixtures (the "
        "writer, the campaign without this option, replays the shared failures and writes them)",
    )
    group.addoption(
        "--repro-dir",
        default=None,
        help="where failing properties write fixtures (default: tests/repros in a campaign, "
        "build/repros otherwise)",
    )


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    from ..sdk.python.pipeline import chosen_invariants

    lines = []
    chosen = chosen_invariants()
    if chosen:
        lines.append(
            f"compaction-harness: the pipeline state machine fails on {' '.join(chosen)} only "
            "(HARNESS_PIPELINE_INVARIANTS)"
        )
    fixed = _fixes_line(config)
    if fixed:
        lines.append(f"compaction-harness: {fixed}")
    return lines or None


def _fixes_line(config: pytest.Config) -> str | None:
    """What the session runs against under HARNESS_FIXES (None: no switch)."""
    if FIXES_SPEC in ("", "none"):
        return None
    own = _own_sdk(config)
    if own is not None:
        return (
            f"HARNESS_FIXES={FIXES_SPEC} is handed to the {own.driver_name} driver: "
            f"{own.title} runs with its own fixes"
        )
    from .switch import described

    names = getattr(config, "_harness_fixes", None)
    if names is None:
        from .switch import from_environment

        names = from_environment()
    return f"google-adk {_adk_release()} {described(names)} (HARNESS_FIXES={FIXES_SPEC})"


def _enter_fixes(config: pytest.Config) -> None:
    """Apply HARNESS_FIXES's google-adk fixes until the session ends (in each
    process that runs tests: not in pytest-xdist's controller, and not for a
    run of ADK-JS's tests alone, whose Node driver reads the variable)."""
    if FIXES_SPEC in ("", "none") or _own_sdk(config) is not None:
        return
    from ..sdk.python.fixes import applied
    from .switch import from_environment

    names = from_environment()
    config._harness_fixes = names  # type: ignore[attr-defined]
    controller = not hasattr(config, "workerinput") and bool(
        getattr(config.option, "numprocesses", None)
    )
    if controller:
        return
    block = applied(names)
    block.__enter__()
    config.add_cleanup(lambda: block.__exit__(None, None, None))


def _own_sdk(config: pytest.Config):
    """The SDK whose own test files the run names alone (``make test
    SDK=js``: ADK-JS's, ``Sdk.test_folder`` in the driver registry), or None
    (google-adk's run, in this process)."""
    paths = [arg.split("::")[0] for arg in config.args if not arg.startswith("-")]
    if not paths:
        return None
    from ..sdk import protocol

    return protocol.sdk_of_test_files(paths)


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> int | None:
    """Before anything runs: a campaign's shared database must answer, and a
    run of one other SDK's own test files alone needs that SDK (ADK-JS's: Node
    and the package, ``Sdk.preflight``). A malformed or
    unreachable FUZZ_DB, ``--fuzz-worker`` without one, or ADK-JS's tests
    without Node, is one line ``error: ...`` on standard error and exit
    status 2 (not one traceback per test)."""
    budget = config.getoption("--fuzz-seconds")
    campaign = budget is not None or config.getoption("hypothesis_profile", None) == "fuzz"
    problem = None
    if config.getoption("--fuzz-worker") and not SHARED_DB_URL:
        problem = (
            "--fuzz-worker (make fuzz-worker) needs FUZZ_DB=redis://HOST:PORT/N, the writer's "
            "shared example database"
        )
    elif (own := _own_sdk(config)) is not None:
        problem = own.preflight()  # ADK-JS: Node and the package
    if problem is None:
        problem = start_servers(config)
    if problem is None and FIXES_SPEC not in ("", "none") and _own_sdk(config) is None:
        from .switch import FixesError, from_environment

        try:
            from_environment()
        except FixesError as exc:
            problem = str(exc)
    if problem is None and budget is not None and not config.getoption("--fuzz-worker"):
        from ..store.fixtures import unwritable

        # Said now, in one line, not as a lost failure when the first one is found.
        problem = unwritable(_repro_dir(config))
        if problem:
            problem += " (make it writable, or give PYTEST_ARGS=--repro-dir=DIR)"
    if problem is None and campaign and SHARED_DB_URL:
        try:
            if _SHARED_DB_ERROR is not None:
                raise _SHARED_DB_ERROR
            shared_db.check(SHARED_DB_URL)
        except shared_db.SharedDatabaseError as exc:
            problem = str(exc)
    if problem is None:
        return None
    import sys

    print(f"error: {problem}", file=sys.stderr)
    return 2


def pytest_configure(config: pytest.Config) -> None:
    import logging

    config.addinivalue_line("markers", "property: a Hypothesis property over real ADK code")
    config.addinivalue_line(
        "markers",
        "gate_first: a long item: the gate (make test) starts it before the others, so that "
        "no worker begins it when the rest are nearly done",
    )
    config.addinivalue_line(
        "markers",
        "gate_last: an item that reads what other items of the gate left (gate_labels): the "
        "gate runs it after the others",
    )
    config.addinivalue_line(
        "markers",
        "judges_adk: a test that judges ADK itself (a fixture replay): `make test FIXES=...` "
        "runs these and the properties, on google-adk with those fixes applied",
    )
    # ADK logs every call and response its prompt builder drops; a failing
    # property's report would drown in them (the fixture says what happened).
    logging.getLogger("google_adk").setLevel(logging.ERROR)
    from ..sdk.python.pipeline import chosen_invariants
    from ..spec.invariants import PIPELINE_INVARIANTS

    unknown = sorted(set(chosen_invariants()) - set(PIPELINE_INVARIANTS))
    if unknown:
        raise pytest.UsageError(
            f"HARNESS_PIPELINE_INVARIANTS: unknown {', '.join(unknown)} "
            f"(choose from {' '.join(PIPELINE_INVARIANTS)})"
        )
    budget = config.getoption("--fuzz-seconds")
    if budget is not None and not budget > 0:
        raise pytest.UsageError(f"--fuzz-seconds must be a positive number, got {budget}")
    if budget is None and os.environ.get("HARNESS_SOUGHT_FAULT"):
        # It excuses every other violation: outside a campaign it would pass anything.
        raise pytest.UsageError(
            "HARNESS_SOUGHT_FAULT is set: it is for a campaign seeking one fault "
            "(bench/fault_times.py, --fuzz-seconds), never for the gate; unset it"
        )
    _enter_fixes(config)
    own_databases(config)
    repro = _repro_dir(config)
    config._harness_repro_dir = repro  # type: ignore[attr-defined]
    # Fixtures recorded before this campaign began: meeting one again is not
    # new. So are the open findings (docs/findings/), kept out of the corpus
    # until decided: a campaign that meets one says so and writes nothing.
    recorded = [*config.rootpath.joinpath("docs", "findings").glob("*.json")]
    recorded += Path(repro).glob("*.json")
    config._harness_recorded = (  # type: ignore[attr-defined]
        {p.name: p for p in recorded} if budget is not None else {}
    )
    if budget is not None:
        # The campaign's clock starts once, in the first process (`make fuzz` sets
        # it before pytest starts); pytest-xdist's workers inherit it.
        os.environ.setdefault("HARNESS_CAMPAIGN_STARTED", repr(time.time()))
        if config.option.verbose < 0:
            # `-q`: the campaign summary, without Hypothesis's per-item statistics.
            config.option.hypothesis_show_statistics = False


def _repro_dir(config: pytest.Config) -> Path:
    """Where failing properties write fixtures: ``--repro-dir``, else
    tests/repros in a campaign and build/repros otherwise."""
    campaign = config.getoption("--fuzz-seconds") is not None
    default = ("tests", "repros") if campaign else ("build", "repros")
    return Path(config.getoption("--repro-dir") or config.rootpath.joinpath(*default))


def _shards(config: pytest.Config) -> int:
    if config.getoption("--fuzz-seconds") is None:
        return 1
    explicit = config.getoption("--fuzz-shards")
    if explicit:
        return max(1, explicit)
    return _workers(config)


def _workers(config: pytest.Config) -> int:
    # Inside an xdist worker the resolved count is in the environment; on the
    # controller, `-n auto` may still be the string "auto".
    count = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if count and count.isdigit():
        return int(count)
    workers = getattr(config.option, "numprocesses", None)
    return workers if isinstance(workers, int) and workers > 0 else 1


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    shards = _shards(metafunc.config)
    if shards > 1 and metafunc.definition.get_closest_marker("property"):
        # The shard is not an argument of the test: it only makes distinct items.
        metafunc.fixturenames.append("fuzz_shard")
        metafunc.parametrize("fuzz_shard", range(shards), ids=lambda s: f"shard{s}")


#: Seconds kept back from the campaign's budget for pytest to finish (the last
#: reports, the summary, stopping the workers): at most this, and at most a
#: tenth of the budget.
RESERVE_SECONDS = 2.0


def _campaign_end(config: pytest.Config, budget: float) -> float:
    """The wall-clock time (``time.time()``) the whole campaign ends by: the
    command's start (``HARNESS_CAMPAIGN_STARTED``, set by ``make fuzz`` before
    anything is imported, or by the first pytest process) plus the budget."""
    return float(os.environ["HARNESS_CAMPAIGN_STARTED"]) + budget


def _weight(item: pytest.Item) -> float:
    """An item's share of the campaign (``@pytest.mark.property(weight=...)``)."""
    marker = item.get_closest_marker("property")
    weight = marker.kwargs.get("weight", 1) if marker else 1
    return float(weight) if weight > 0 else 1.0


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    if not pyfuncitem.get_closest_marker("property"):
        return None
    from .checks import CASES_BY_KIND, KNOWN_FAULTS_MET, SECONDS_BY_KIND, report_first_failure

    config = pyfuncitem.config
    budget = config.getoption("--fuzz-seconds")
    testfunction = pyfuncitem.obj
    kwargs = {arg: pyfuncitem.funcargs[arg] for arg in pyfuncitem._fixtureinfo.argnames}
    started = time.time()
    rounds = 0
    hypothesis_handle = getattr(testfunction, "hypothesis", None)
    inner = getattr(hypothesis_handle, "inner_test", None)
    # A property that is not a @given test (a state machine run through
    # run_state_machine_as_test) may count its own runs: `examples_run()`.
    own_count = getattr(testfunction, "examples_run", None)
    counted_before = own_count() if own_count is not None else 0
    # ...and tally the labels its runs reported: `labels()` -> {label: runs}.
    own_labels = getattr(testfunction, "labels", None)
    labels_before = dict(own_labels()) if own_labels is not None else {}
    faults_before = dict(KNOWN_FAULTS_MET)
    seconds_before, cases_before = dict(SECONDS_BY_KIND), dict(CASES_BY_KIND)
    if budget is not None:
        end = _campaign_end(config, budget) - min(RESERVE_SECONDS, budget / 10)
        clock = _Clock(
            min(started + _item_budget(config, pyfuncitem, end), end),
            end,
            functools.partial(report_first_failure, pyfuncitem.nodeid),
        )
    else:
        clock = _Clock(float("inf"), float("inf"))
    if inner is not None:
        hypothesis_handle.inner_test = clock.wrap(inner)
    props = pyfuncitem.user_properties
    forced = config.getoption("hypothesis_seed", None)
    own_seed = getattr(testfunction, "_hypothesis_internal_use_seed", None)
    late = budget is not None and clock.over
    if late:
        props.append(("late", True))
    try:
        # The gate's verdict is whether anything is new: its examples tell
        # known from new without naming the faults (faults.classify), unless
        # its statistics are shown; the fixture of a failure is judged below,
        # outside this block, as replay does.
        with unnamed_in_the_gate(config):
            # At least one round, whose first example always runs: that is where a
            # failure saved in the example database is replayed, so every item
            # meets its saved failures in every campaign, however late it starts.
            while True:
                rounds += 1
                clock.start_round()
                if budget is not None and forced is not None and hypothesis_handle:
                    # --hypothesis-seed: each round its own seed, derived from it
                    # (the same seed every round would draw the same examples).
                    seed(_round_seed(forced, pyfuncitem.nodeid, rounds))(testfunction)
                try:
                    testfunction(**kwargs)
                except _BudgetSpent:
                    if clock.cut_short and clock.failure is not None:
                        raise clock.failure from None
                    break
                if budget is None or clock.over:
                    break
        if own_labels is not None and gate_run(config):
            # Every example ran and none failed: the labels of the gate's run,
            # for the rest of the session (gate_labels).
            tally = {k: n - labels_before.get(k, 0) for k, n in own_labels().items()}
            _write_gate_labels(config, pyfuncitem.nodeid, {k: n for k, n in tally.items() if n})
    except InvariantViolation as exc:
        if not _handle_failure(pyfuncitem, exc, clock):
            raise
    finally:
        if inner is not None:
            hypothesis_handle.inner_test = inner
        if budget is not None and forced is not None and hypothesis_handle:
            seed(own_seed)(testfunction)
        executed = clock.executed
        if own_count is not None:
            executed = own_count() - counted_before
        if own_labels is not None:
            tally = {k: n - labels_before.get(k, 0) for k, n in own_labels().items()}
            props.append(("labels", {k: n for k, n in tally.items() if n}))
        faults = {k: n - faults_before.get(k, 0) for k, n in KNOWN_FAULTS_MET.items()}
        props.append(("known_faults", {k: n for k, n in faults.items() if n}))
        props.append(
            (
                "seconds_by_kind",
                {
                    k: [
                        round(t - seconds_before.get(k, 0), 2),
                        CASES_BY_KIND[k] - cases_before.get(k, 0),
                    ]
                    for k, t in SECONDS_BY_KIND.items()
                    if CASES_BY_KIND[k] - cases_before.get(k, 0)
                },
            )
        )
        props.append(("examples", executed))
        props.append(("fuzz_rounds", rounds))
        props.append(("fuzz_seconds", round(time.time() - started, 1)))
        props.append(("weight", _weight(pyfuncitem)))
        if SHARED_DB_URL and budget is not None:
            props.append(("shared_db_problems", dict(shared_db.PROBLEMS)))
    return True


@pytest.fixture
def compaction_check():
    """``check`` from a team's own test suite: the function
    :func:`~compaction_harness.surfaces.app_check.check_app`. For example::

        def test_compaction_is_safe_for_our_app(compaction_check):
            result = compaction_check("our_service.agent:app", seconds=120)
            assert all(row["holds"] for row in result["invariants"].values()), result

    It runs a campaign through ADK's ``Runner`` on the app's shape (a clone
    of the harness is needed: the campaign runs its tests/slow/test_app_check.py)."""
    from .app_check import check_app

    return check_app


def gate_run(config: pytest.Config) -> bool:
    """Whether the session is the deterministic gate (``make test``: the
    ``gate`` profile, no campaign budget)."""
    return (
        config.getoption("--fuzz-seconds") is None
        and config.getoption("hypothesis_profile", None) == "gate"
    )


def _gate_labels_path(config: pytest.Config, nodeid: str) -> Path:
    """Where the gate run of the property item ``nodeid`` leaves its labels:
    in the session's temporary folder, which pytest-xdist's workers share
    (each has its own folder inside it), named by the item."""

    base = config._tmp_path_factory.getbasetemp()  # type: ignore[attr-defined]
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    return base / "gate-labels" / (hashlib.sha256(nodeid.encode()).hexdigest()[:16] + ".json")


def _write_gate_labels(config: pytest.Config, nodeid: str, labels: dict[str, int]) -> None:
    import json

    path = _gate_labels_path(config, nodeid)
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(f"{path.name}.{os.getpid()}.part")
    part.write_text(json.dumps({"nodeid": nodeid, "labels": labels}), encoding="utf-8")
    part.replace(path)  # whole or absent, whatever reads it meanwhile


def gate_labels(config: pytest.Config, nodeid: str) -> dict[str, int] | None:
    """The labels (label -> examples) that the property item ``nodeid``
    reported in this session's gate run, on any worker, when that run went
    through every example without failing; None otherwise (not run in this
    session, not yet finished, failed, or not the gate). A test of what the
    gate's examples reach reads them instead of running the property again."""
    import json

    if not gate_run(config):
        return None
    try:
        recorded = json.loads(_gate_labels_path(config, nodeid).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    return dict(recorded["labels"]) if recorded.get("nodeid") == nodeid else None


def unnamed_in_the_gate(config: pytest.Config):
    """A context manager for examples whose verdict is known or new: in the
    gate, unless its statistics are shown (``--hypothesis-show-statistics``,
    where the faults met are named), classification tells known from new and
    names no fault (:func:`faults.classify.known_or_new_only`); in a campaign
    it names faults within :data:`NAMING_SHARE` of the time
    (:func:`faults.classify.naming_budget`; a search for one fault,
    ``HARNESS_SOUGHT_FAULT``, names them all); elsewhere it does nothing.
    The plugin runs every property's examples within it; a test that
    classifies only to label its examples may do the same."""
    import contextlib

    from ..faults.classify import known_or_new_only, naming_budget

    if config.getoption("--fuzz-seconds") is not None:
        from .checks import SOUGHT

        if os.environ.get(SOUGHT):
            return contextlib.nullcontext()
        return naming_budget(NAMING_SHARE)
    if not gate_run(config) or config.getoption("hypothesis_show_statistics", False):
        return contextlib.nullcontext()
    return known_or_new_only()


#: The share of a campaign item's time that naming the known faults its
#: examples meet may take (the rest of the known ones are "not named").
NAMING_SHARE = 0.1


def _handle_failure(item: pytest.Function, exc: InvariantViolation, clock: _Clock) -> bool:
    """Write the fixture of a failure, after replaying it with the classifier
    that replay and the gate use. Returns True when the failure is nothing new
    (the fixture was recorded before this campaign began): the item passes."""
    from dataclasses import replace

    from ..store.fixtures import write_fixture
    from .checks import SOUGHT, fixture_from_failure, report_sought
    from .verdicts import judge_fixture

    config = item.config
    props = item.user_properties
    fixture = fixture_from_failure(exc)
    if clock.cut_short:
        fixture = replace(fixture, shrinking=CUT_SHORT)
        props.append(("shrinking_cut_short", True))
    if os.environ.get(SOUGHT):  # a search for one known fault: found, and shrunk
        path, _ = write_fixture(fixture, config._harness_repro_dir)
        exc.add_note(f"the sought fault, shrunk: {os.path.relpath(path)}")
        report_sought(item.nodeid, exc, fixture, path, clock.first_failure_at, clock.cut_short)
        return False
    directory = config._harness_repro_dir
    recorded = config._harness_recorded.get(fixture.file_name())
    if recorded is not None:
        props.append(("recorded_fixture", os.path.relpath(recorded)))
        return True
    if exc.planted:  # a test's broken stand-in: real ADK cannot reproduce it
        label, reason = "FAIL", "planted"
    else:
        try:
            judged = judge_fixture(fixture)
            label, reason = judged.label, judged.reason
        except Exception as replay_error:  # the replay itself broke: keep the evidence
            label, reason = "FAIL", f"the replay raised {replay_error!r}"
    if label == "ok":
        directory = directory.parent / "unreproducible"
        exc.add_note(
            "the failure did not reproduce when its fixture was replayed (a harness fault: "
            f"the run depends on something the fixture does not record); kept in {directory}"
        )
    elif label == "XFAIL":
        props.append(("replayed_as_known", reason))
        return True
    if config.getoption("--fuzz-worker"):
        # One writer: this failure is in the shared database (Hypothesis saved
        # it while shrinking); the writer's next round replays it and writes it.
        props.append(("shared_failure", fixture.file_name()))
        if shared_db.PROBLEMS:  # lost, or refusing writes: it may never have got there
            exc.add_note(
                "no fixture written (a campaign worker), and the shared database "
                f"{_SHOWN_DB} {'was lost' if 'lost' in shared_db.PROBLEMS else 'refused writes'}"
                ": the failure is kept in this machine's local database only; run `make fuzz` "
                f"here to write {fixture.file_name()}"
            )
        else:
            exc.add_note(
                f"no fixture written (a campaign worker): the failure is in {_SHOWN_DB}; "
                f"the writer's next round replays it and writes {fixture.file_name()}"
            )
        return False
    try:
        path, new = write_fixture(fixture, directory)
    except OSError as refused:
        # The folder became unwritable during the campaign: keep the failure
        # in a fallback folder and say where (its example stays in the database).
        from ..store.fixtures import fallback_repro_dir

        why = f"{os.path.relpath(directory)}: {refused.strerror or refused}"
        path, new = write_fixture(fixture, fallback_repro_dir())
        props.append(("repro_fallback", why))
        exc.add_note(f"could not write the fixture to {why}; written to {path} instead")
    shown = os.path.relpath(path)
    props.append(("repro_fixture", shown))
    props.append(("repro_fixture_new", new))
    exc.add_note(f"repro fixture {'written' if new else 'already present'}: {shown}")
    return False


#: What a fixture says when the campaign's budget ended its shrinking.
CUT_SHORT = (
    "cut short by the campaign's time budget: a smaller session may fail the same way; the "
    "next `make fuzz` on this release continues shrinking from Hypothesis's example database"
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In a campaign, order items shard by shard, so that pytest-xdist, which
    hands each worker a consecutive run of items, gives every worker one
    shard of each property and the same share of the budget; within a shard,
    lighter items first. An item that fails may shrink until the campaign's
    end, so the heaviest (the pipeline's, whose shrinking costs the most)
    runs last on its worker and cannot take the time of the items after it.

    In the gate, the items marked ``gate_first`` (the longest) come first, in
    collection order, and those marked ``gate_last`` last: with
    ``--maxschedchunk=1`` (``make test``) pytest-xdist hands the items out in
    this order as workers free up, so no worker starts a long item when the
    others are nearly done."""
    if config.getoption("--fuzz-seconds") is None:
        if gate_run(config):

            def place(item: pytest.Item) -> int:
                if item.get_closest_marker("gate_first"):
                    return 0
                return 2 if item.get_closest_marker("gate_last") else 1

            items.sort(key=place)  # stable: collection order among equals
        return

    def shard(item: pytest.Item) -> tuple[int, float]:
        callspec = getattr(item, "callspec", None)
        return (callspec.params.get("fuzz_shard", 0) if callspec else 0), _weight(item)

    items.sort(key=shard)  # stable: collection order among equals


def pytest_collection_finish(session: pytest.Session) -> None:
    # After deselection (-k, -m): only the items that will run share the budget.
    session.config._harness_campaign_weight = sum(  # type: ignore[attr-defined]
        _weight(item) for item in session.items if item.get_closest_marker("property")
    )


def _item_budget(config: pytest.Config, item: pytest.Item, end: float) -> float:
    """Seconds for one campaign item: the workers share the time left until
    ``end`` (measured when the worker's first item starts) among the property
    items by weight (a worker runs its items one by one)."""
    if not hasattr(config, "_harness_first_item"):
        config._harness_first_item = time.time()  # type: ignore[attr-defined]
    usable = max(0.0, end - config._harness_first_item)
    total = max(1.0, getattr(config, "_harness_campaign_weight", 1.0))
    return usable * _workers(config) * _weight(item) / total


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    from .campaign_report import write_summary

    write_summary(
        terminalreporter,
        exitstatus,
        config,
        fixed=_fixes_line(config),
        release=_adk_release(),
        db_key=_adk_release() + _FIXED_SUFFIX,
        local_db=f".hypothesis/fuzz-adk-{_adk_release()}{_FIXED_SUFFIX}",
        shared_url=SHARED_DB_URL,
        shown_db=_SHOWN_DB,
    )
