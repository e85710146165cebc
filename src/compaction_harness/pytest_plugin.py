"""The harness's pytest plugin (loaded with ``-p compaction_harness.pytest_plugin``).

It provides:

* Hypothesis **profiles**: ``gate`` (``make test``: derandomised, no example
  database, bounded), ``fuzz`` (``make fuzz``: random, with a persistent
  example database per ADK release under ``.hypothesis/``) and ``dev`` (the
  default for a bare ``pytest``).
* **Fixture writing**: when a test marked ``property`` fails with
  :class:`~compaction_harness.unit.InvariantViolation`, the case Hypothesis
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
"""

from __future__ import annotations

import functools
import os
import time
from importlib import metadata
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis.database import DirectoryBasedExampleDatabase

from .unit import InvariantViolation


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
    database=None,
    max_examples=int(os.environ.get("HARNESS_GATE_EXAMPLES", "300")),
    **_COMMON,
)
settings.register_profile(
    "fuzz",
    derandomize=False,
    # HARNESS_FUZZ_DB moves it (the end-to-end test keeps its own).
    database=DirectoryBasedExampleDatabase(
        os.environ.get("HARNESS_FUZZ_DB") or f".hypothesis/fuzz-adk-{_adk_release()}"
    ),
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
        "--repro-dir",
        default=None,
        help="where failing properties write fixtures (default: tests/repros in a campaign, "
        "build/repros otherwise)",
    )


def pytest_report_header(config: pytest.Config) -> str | None:
    from .pipeline import chosen_invariants

    chosen = chosen_invariants()
    if chosen:
        return (
            f"compaction-harness: the pipeline state machine fails on {' '.join(chosen)} only "
            "(HARNESS_PIPELINE_INVARIANTS)"
        )
    return None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "property: a Hypothesis property over real ADK code")
    from .pipeline import PIPELINE_INVARIANTS, chosen_invariants

    unknown = sorted(set(chosen_invariants()) - set(PIPELINE_INVARIANTS))
    if unknown:
        raise pytest.UsageError(
            f"HARNESS_PIPELINE_INVARIANTS: unknown {', '.join(unknown)} "
            f"(choose from {' '.join(PIPELINE_INVARIANTS)})"
        )
    budget = config.getoption("--fuzz-seconds")
    if budget is not None and not budget > 0:
        raise pytest.UsageError(f"--fuzz-seconds must be a positive number, got {budget}")
    default = ("tests", "repros") if budget is not None else ("build", "repros")
    repro = config.getoption("--repro-dir") or str(config.rootpath.joinpath(*default))
    config._harness_repro_dir = Path(repro)  # type: ignore[attr-defined]


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


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    if not pyfuncitem.get_closest_marker("property"):
        return None
    config = pyfuncitem.config
    budget = config.getoption("--fuzz-seconds")
    testfunction = pyfuncitem.obj
    kwargs = {arg: pyfuncitem.funcargs[arg] for arg in pyfuncitem._fixtureinfo.argnames}
    started = time.monotonic()
    rounds = 0
    executed = [0]
    hypothesis_handle = getattr(testfunction, "hypothesis", None)
    inner = getattr(hypothesis_handle, "inner_test", None)
    # A property that is not a @given test (a state machine run through
    # run_state_machine_as_test) may count its own runs: `examples_run()`.
    own_count = getattr(testfunction, "examples_run", None)
    counted_before = own_count() if own_count is not None else 0
    # ...and tally the labels its runs reported (Hypothesis prints no
    # statistics for it): `labels()` -> {label: runs}.
    own_labels = getattr(testfunction, "labels", None)
    labels_before = dict(own_labels()) if own_labels is not None else {}
    if inner is not None:
        # Hypothesis documents replacing `inner_test`; count what it executes.
        @functools.wraps(inner)
        def counting(*args, **kw):
            executed[0] += 1
            return inner(*args, **kw)

        hypothesis_handle.inner_test = counting
    try:
        while True:
            rounds += 1
            testfunction(**kwargs)
            if budget is None or time.monotonic() - started >= _item_budget(config, budget):
                break
    except InvariantViolation as exc:
        from .checks import fixture_from_failure
        from .fixtures import write_fixture

        path, new = write_fixture(fixture_from_failure(exc), config._harness_repro_dir)
        shown = os.path.relpath(path)
        pyfuncitem.user_properties.append(("repro_fixture", shown))
        pyfuncitem.user_properties.append(("repro_fixture_new", new))
        exc.add_note(f"repro fixture {'written' if new else 'already present'}: {shown}")
        raise
    finally:
        if inner is not None:
            hypothesis_handle.inner_test = inner
        if own_count is not None:
            executed[0] = own_count() - counted_before
        if own_labels is not None:
            tally = {k: n - labels_before.get(k, 0) for k, n in own_labels().items()}
            pyfuncitem.user_properties.append(("labels", {k: n for k, n in tally.items() if n}))
        pyfuncitem.user_properties.append(("examples", executed[0]))
        pyfuncitem.user_properties.append(("fuzz_rounds", rounds))
        pyfuncitem.user_properties.append(("fuzz_seconds", round(time.monotonic() - started, 1)))
    return True


def pytest_collection_finish(session: pytest.Session) -> None:
    # After deselection (-k, -m): only the items that will run share the budget.
    session.config._harness_campaign_items = sum(  # type: ignore[attr-defined]
        1 for item in session.items if item.get_closest_marker("property")
    )


def _item_budget(config: pytest.Config, budget: float) -> float:
    """Seconds for one campaign item: the workers share ``budget`` of wall-clock
    time among every property item (a worker runs its items one by one)."""
    items = max(1, getattr(config, "_harness_campaign_items", 1))
    return budget * _workers(config) / items


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
    terminalreporter.section(f"fuzz campaign summary (google-adk {_adk_release()})")
    if exitstatus == pytest.ExitCode.INTERRUPTED:
        terminalreporter.write_line(
            "campaign interrupted: failures found so far are kept in Hypothesis's example "
            f"database (.hypothesis/fuzz-adk-{_adk_release()}/); the next `make fuzz` replays "
            "them first and writes their fixtures."
        )
    rows = []
    for report in _call_reports(terminalreporter):
        props = dict(report.user_properties)
        if "fuzz_rounds" not in props:
            continue
        rows.append((report.nodeid, report.outcome, props))
    if not rows:
        terminalreporter.write_line("no property tests ran")
        return
    for nodeid, outcome, props in rows:
        terminalreporter.write_line(
            f"{outcome.upper():7} {nodeid}  rounds={props['fuzz_rounds']} "
            f"examples={props['examples']} seconds={props['fuzz_seconds']}"
            + (f"  fixture={props['repro_fixture']}" if "repro_fixture" in props else "")
        )
        for label, runs in sorted(props.get("labels", {}).items()):
            if label.startswith(("known upstream fault", "not applicable")):
                terminalreporter.write_line(f"        {label}: {runs} runs")
    failed = [r for r in rows if r[1] == "failed"]
    found = [p for _, _, p in failed if "repro_fixture" in p]
    written = sorted({p["repro_fixture"] for p in found if p.get("repro_fixture_new", True)})
    present = sorted({p["repro_fixture"] for p in found} - set(written))
    terminalreporter.write_line(
        f"{len(failed)} of {len(rows)} campaign items found a failure; "
        f"fixtures written: {', '.join(written) or 'none'}"
        + (f"; already present: {', '.join(present)}" if present else "")
    )
    terminalreporter.write_line(
        "Read a fixture with `make show FIXTURE=<path>`, re-check it with "
        "`make replay FIXTURE=<path>`; commit it to keep it as a regression test."
    )
    terminalreporter.write_line(
        "(Hypothesis statistics above describe each item's last round only.)"
    )


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
