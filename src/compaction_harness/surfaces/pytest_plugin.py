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
"""

from __future__ import annotations

import functools
import os
import time
from collections import Counter
from importlib import metadata
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis.database import DirectoryBasedExampleDatabase

from ..sdk.python.unit import InvariantViolation
from ..store import shared_db


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
    if _adk_js_only(config):
        return (
            f"HARNESS_FIXES={FIXES_SPEC} is handed to the Node driver: ADK-JS runs with its "
            "own fixes"
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
    if FIXES_SPEC in ("", "none") or _adk_js_only(config):
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


#: The name of the folders holding the tests that run ADK-JS through Node
#: (``tests/*/adk_js/``: the Makefile's ADKJS_TESTS).
ADKJS_TEST_FOLDER = "adk_js"


def _adk_js_only(config: pytest.Config) -> bool:
    """Whether the run names ADK-JS's tests alone (``make test SDK=js``): every
    path given is in, or is, a folder named :data:`ADKJS_TEST_FOLDER`."""
    paths = [arg.split("::")[0] for arg in config.args if not arg.startswith("-")]
    return bool(paths) and all(ADKJS_TEST_FOLDER in Path(p).parts for p in paths)


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> int | None:
    """Before anything runs: a campaign's shared database must answer, and a
    run of ADK-JS's tests alone needs Node and the package. A malformed or
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
    elif _adk_js_only(config):
        from ..sdk.js import adk_js

        try:
            adk_js.node_path()
        except adk_js.AdkJsUnavailable as exc:
            problem = str(exc)
    if problem is None and FIXES_SPEC not in ("", "none") and not _adk_js_only(config):
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
    _enter_fixes(config)
    repro = _repro_dir(config)
    config._harness_repro_dir = repro  # type: ignore[attr-defined]
    # Fixtures recorded before this campaign began: meeting one again is not new.
    config._harness_recorded = (  # type: ignore[attr-defined]
        {p.name for p in Path(repro).glob("*.json")} if budget is not None else set()
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


class _BudgetSpent(BaseException):
    """Ends a Hypothesis run at once when the campaign's budget says so.

    Hypothesis has no API to end a run early; an exception that is not an
    ``Exception`` is not a failure to it and leaves its run as it stands
    (what it has found and shrunk so far is already in the example
    database). Raised only by :class:`_Clock` and caught by the plugin."""


class _Clock:
    """One campaign item's time: rounds until the item's slice is spent, and
    shrinking until the campaign's end at the latest.

    Wraps the @given test's ``inner_test`` (Hypothesis's documented hook for
    wrapping what runs each example):

    * with no failure in hand and the item's time up, the round ends at its
      next example (:class:`_BudgetSpent`), before Hypothesis spends time
      drawing more. The first example of each round always runs: it is where
      Hypothesis replays a failure saved in the example database, and an
      example that passes there is deleted from the database;
    * with a failure in hand (Hypothesis is shrinking it) and the campaign's
      time up, the run ends at the next candidate, and the smallest failure
      seen so far (the last one: every candidate the shrinker tries is
      smaller than the failure in hand) is the item's failure, with
      ``cut_short`` set. Hypothesis has saved it in the example database, and
      the next campaign continues shrinking from there. Ending the run, not
      only skipping candidates, matters: drawing a pipeline script takes tens
      of milliseconds, and the shrinker tries thousands.
    """

    def __init__(self, item_end: float, campaign_end: float) -> None:
        self.item_end = item_end
        self.campaign_end = campaign_end
        self.failure: BaseException | None = None
        self.cut_short = False
        self.executed = 0
        self.round_begins = False

    def start_round(self) -> None:
        self.round_begins = True

    def wrap(self, inner):
        @functools.wraps(inner)
        def timed(*args, **kwargs):
            now = time.time()
            if self.failure is not None:
                if now >= self.campaign_end:
                    self.cut_short = True
                    raise _BudgetSpent
            elif now >= self.item_end and not self.round_begins:
                raise _BudgetSpent
            self.round_begins = False
            self.executed += 1
            try:
                return inner(*args, **kwargs)
            except Exception as exc:
                # The failure being shrunk (another kind met while shrinking is not it).
                if self.failure is None or type(exc) is type(self.failure):
                    self.failure = exc
                raise

        return timed

    @property
    def over(self) -> bool:
        return time.time() >= self.item_end


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    if not pyfuncitem.get_closest_marker("property"):
        return None
    from .checks import KNOWN_FAULTS_MET

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
    if budget is not None:
        end = _campaign_end(config, budget) - min(RESERVE_SECONDS, budget / 10)
        clock = _Clock(min(started + _item_budget(config, pyfuncitem, end), end), end)
    else:
        clock = _Clock(float("inf"), float("inf"))
    if inner is not None:
        hypothesis_handle.inner_test = clock.wrap(inner)
    props = pyfuncitem.user_properties
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
        executed = clock.executed
        if own_count is not None:
            executed = own_count() - counted_before
        if own_labels is not None:
            tally = {k: n - labels_before.get(k, 0) for k, n in own_labels().items()}
            props.append(("labels", {k: n for k, n in tally.items() if n}))
        faults = {k: n - faults_before.get(k, 0) for k, n in KNOWN_FAULTS_MET.items()}
        props.append(("known_faults", {k: n for k, n in faults.items() if n}))
        props.append(("examples", executed))
        props.append(("fuzz_rounds", rounds))
        props.append(("fuzz_seconds", round(time.time() - started, 1)))
        props.append(("weight", _weight(pyfuncitem)))
        if SHARED_DB_URL and budget is not None:
            props.append(("shared_db_problems", dict(shared_db.PROBLEMS)))
    return True


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
    import hashlib

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
    names no fault (:func:`faults.classify.known_or_new_only`); elsewhere
    (campaigns, whose summary names every fault met) it does nothing. The
    plugin runs every property's examples within it; a test that classifies
    only to label its examples may do the same."""
    import contextlib

    if not gate_run(config) or config.getoption("hypothesis_show_statistics", False):
        return contextlib.nullcontext()
    from ..faults.classify import known_or_new_only

    return known_or_new_only()


def _handle_failure(item: pytest.Function, exc: InvariantViolation, clock: _Clock) -> bool:
    """Write the fixture of a failure, after replaying it with the classifier
    that replay and the gate use. Returns True when the failure is nothing new
    (the fixture was recorded before this campaign began): the item passes."""
    from dataclasses import replace

    from ..store.fixtures import write_fixture
    from .checks import fixture_from_failure
    from .verdicts import judge_fixture

    config = item.config
    props = item.user_properties
    fixture = fixture_from_failure(exc)
    if clock.cut_short:
        fixture = replace(fixture, shrinking=CUT_SHORT)
        props.append(("shrinking_cut_short", True))
    directory = config._harness_repro_dir
    recorded = directory / fixture.file_name()
    if recorded.name in config._harness_recorded:
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
    if config.getoption("--fuzz-seconds") is None:
        fixtures = list(_fixtures_from(terminalreporter))
        if fixtures:
            terminalreporter.section("repro fixtures written")
            for name, path in fixtures:
                terminalreporter.write_line(f"{name}: {path}")
            terminalreporter.write_line(
                "To keep one as a regression test, move it to tests/repros/ and commit it."
            )
        return
    rows = []
    for report in _call_reports(terminalreporter):
        props = dict(report.user_properties)
        if "fuzz_rounds" not in props:
            continue
        rows.append((report.nodeid, report.outcome, props))
    terminalreporter.section(f"fuzz campaign summary ({_campaign_target(rows)})")
    fixed = _fixes_line(config)
    if fixed:
        terminalreporter.write_line(
            f"ran on {fixed}: whatever it finds is a new fault or a false alarm of the harness"
        )
    if exitstatus == pytest.ExitCode.INTERRUPTED:
        terminalreporter.write_line(
            "campaign interrupted: failures found so far are kept in Hypothesis's example "
            f"database (.hypothesis/fuzz-adk-{_adk_release()}{_FIXED_SUFFIX}/"
            + (f", and {_SHOWN_DB}" if SHARED_DB_URL else "")
            + "); the next `make fuzz` replays them first and writes their fixtures."
        )
    if SHARED_DB_URL:
        role = "a worker: writes no fixtures" if config.getoption("--fuzz-worker") else "the writer"
        terminalreporter.write_line(
            f"shared example database: {_SHOWN_DB} (keys "
            f"{shared_db.key_prefix(_adk_release() + _FIXED_SUFFIX).decode()}*); this campaign "
            f"is {role}"
        )
    if not rows:
        terminalreporter.write_line("no property tests ran")
        return
    write = terminalreporter.write_line
    for nodeid, outcome, props in rows:
        extra = ""
        if "repro_fixture" in props:
            extra = f"  fixture={props['repro_fixture']}"
        elif "shared_failure" in props:
            extra = f"  in the shared database (the writer writes {props['shared_failure']})"
        elif "recorded_fixture" in props:
            extra = f"  met recorded fixture {props['recorded_fixture']}"
        elif "replayed_as_known" in props:
            extra = f"  replayed as {props['replayed_as_known']}"
        if props.get("shrinking_cut_short"):
            extra += " (shrinking cut short by the budget)"
        if props.get("late"):
            extra += "  (the budget was spent before this item began: one example only)"
        write(
            f"{outcome.upper():7} {nodeid}  rounds={props['fuzz_rounds']} "
            f"examples={props['examples']} seconds={props['fuzz_seconds']}{extra}"
        )
        for fault, examples in sorted(props.get("known_faults", {}).items()):
            write(f"        known upstream fault {fault}: {examples} examples ({_evidence(fault)})")
        for label, runs in sorted(props.get("labels", {}).items()):
            if label.startswith("not applicable"):
                write(f"        {label}: {runs} runs")
    _write_split(write, rows, config)
    problems: dict[str, str] = {}
    for _, _, props in rows:
        for kind, line in props.get("shared_db_problems", {}).items():
            problems.setdefault(kind, line)
    for line in problems.values():
        write(line)
    failed = [r for r in rows if r[1] == "failed"]
    found = [p for _, _, p in failed if "repro_fixture" in p]
    written = sorted({p["repro_fixture"] for p in found if p.get("repro_fixture_new", True)})
    present = sorted({p["repro_fixture"] for p in found} - set(written))
    recorded = sorted({p["recorded_fixture"] for _, _, p in rows if "recorded_fixture" in p})
    known: dict[str, int] = {}
    for _, _, props in rows:
        for fault, n in props.get("known_faults", {}).items():
            known[fault] = known.get(fault, 0) + n
    met = [f"{fault} ({n} examples)" for fault, n in sorted(known.items())]
    if failed:
        # Shards of one property may find the same failure: one fixture, several items.
        finders = Counter(p["repro_fixture"] for p in found)

        def named(paths: list[str]) -> str:
            return ", ".join(
                path + (f" (found by {finders[path]} items)" if finders[path] > 1 else "")
                for path in paths
            )

        write(
            f"NEW: {len(failed)} of {len(rows)} campaign items found a failure; "
            f"fixtures written: {named(written) or 'none'}"
            + (f"; already present: {named(present)}" if present else "")
        )
        refused = sorted({p["repro_fallback"] for p in found if "repro_fallback" in p})
        if refused:
            from ..store.fixtures import fallback_repro_dir

            write(
                f"the repro folder refused the fixtures ({'; '.join(refused)}): they were "
                f"written to {fallback_repro_dir()} instead; move them into the repro folder "
                "to keep them"
            )
        shared = sorted({p["shared_failure"] for _, _, p in failed if "shared_failure" in p})
        if shared and ("lost" in problems or "refuses writes" in problems):
            # Either way a failure of this campaign may never have reached the
            # server: only this machine's local database is sure to hold it.
            why = "was lost" if "lost" in problems else "refused writes"
            write(
                f"not written (a worker): {', '.join(shared)}; the shared database {why}, so "
                "the failure is kept in this machine's local database only: run `make fuzz` "
                "here to write its fixture"
            )
        elif shared:
            write(
                f"not written (a worker): {', '.join(shared)}; the failure is in the shared "
                f"database {_SHOWN_DB}: the writer's next round replays it and writes the "
                "fixture"
            )
    else:
        write(f"nothing new: none of the {len(rows)} campaign items found a new failure")
    if recorded:
        write(f"met fixtures recorded before this campaign: {', '.join(recorded)}")
    write(f"known upstream faults met: {', '.join(met) or 'none'}")
    if any(p.get("shrinking_cut_short") for _, _, p in rows):
        write(
            "shrinking was cut short by the budget: run `make fuzz` again on this release to "
            "continue shrinking from the example database (the smaller fixture gets a new name; "
            "delete the larger one)."
        )
    if failed:
        write(
            "Read a fixture with `make show FIXTURE=<path>`, re-check it with "
            "`make replay FIXTURE=<path>`; commit it to keep it as a regression test."
        )
    if config.getoption("hypothesis_show_statistics", False):
        write("(Hypothesis statistics above describe each item's last round only.)")


def _write_split(write, rows, config: pytest.Config) -> None:
    """The campaign's wall clock against its budget, and the pipeline's share."""
    budget = config.getoption("--fuzz-seconds")
    started = os.environ.get("HARNESS_CAMPAIGN_STARTED")
    took = time.time() - float(started) if started else None
    spent = sum(p["fuzz_seconds"] for _, _, p in rows) or 1.0
    pipeline = sum(p["fuzz_seconds"] for nodeid, _, p in rows if "pipeline" in nodeid)
    share = (
        "all on the ADK-JS items (SDK=js)"
        if _all_adk_js(rows)
        else f"of which the pipeline items {pipeline:.0f} s ({100 * pipeline / spent:.0f}%)"
    )
    write(
        f"budget {budget:g} s"
        + (f", wall clock {took:.0f} s so far" if took is not None else "")
        + f"; item time {spent:.0f} s, {share}"
    )


def _all_adk_js(rows) -> bool:
    """Whether every campaign item is an ADK-JS one (``make fuzz SDK=js``)."""
    return bool(rows) and all("test_adk_js.py" in nodeid for nodeid, _, _ in rows)


def _campaign_target(rows) -> str:
    """What the campaign ran against: ``google-adk <release>``, or for a
    campaign of ADK-JS items alone ``@google/adk <version> (ADK for
    TypeScript)``."""
    if not _all_adk_js(rows):
        return f"google-adk {_adk_release()}"
    from ..sdk.js import adk_js

    try:
        version = adk_js.package_version()
    except adk_js.AdkJsUnavailable:
        version = "(not installed)"
    return f"{adk_js.PACKAGE} {version}, ADK for TypeScript"


def _call_reports(terminalreporter):
    for key in ("passed", "failed"):
        for report in terminalreporter.stats.get(key, []):
            if getattr(report, "when", None) == "call":
                yield report


def _fixtures_from(terminalreporter):
    for report in _call_reports(terminalreporter):
        props = dict(report.user_properties)
        if "repro_fixture" in props:
            yield report.nodeid, props["repro_fixture"]


def _evidence(fault: str) -> str:
    """How a campaign told ``fault`` (a google-adk fault with a fix is only
    ever named by a re-run under its fix; one without, by its recogniser)."""
    from ..sdk.python.fixes import fixes_for

    found = fixes_for(fault)
    return "evidence: fix " + ", ".join(f.name for f in found) if found else "pattern evidence"
