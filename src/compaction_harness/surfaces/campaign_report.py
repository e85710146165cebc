"""What the pytest plugin prints at the end: the fixtures written, or a campaign's summary.

A campaign's summary (``make fuzz``) names what it ran against (google-adk's
release, or for a campaign of one other SDK's own test files alone, that
SDK's, as the driver registry's entry names it), one line per item, the
known faults met and the evidence that told them, the split of the
budget, and the fixtures written. The plugin (:mod:`.pytest_plugin`) hands
in what it read from the environment.
"""

from __future__ import annotations

import os
import time
from collections import Counter

import pytest

from ..faults.classify import UNNAMED
from ..sdk import protocol
from ..store import shared_db

__all__ = ["write_summary"]


def write_summary(
    terminalreporter,
    exitstatus: int,
    config: pytest.Config,
    *,
    fixed: str | None,
    release: str,
    db_key: str,
    local_db: str,
    shared_url: str | None,
    shown_db: str | None,
) -> None:
    """The plugin's terminal summary: the fixtures a run wrote, or a
    campaign's summary. ``fixed``: the fixes line (None: no switch);
    ``release``: the google-adk release installed; ``db_key``: what the
    example databases are keyed by (the release, ``+fixes`` under a
    switch); ``local_db``: the local example database's
    folder; ``shared_url``/``shown_db``: FUZZ_DB and as it is printed."""
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
    terminalreporter.section(f"fuzz campaign summary ({_campaign_target(rows, release)})")
    if fixed:
        terminalreporter.write_line(
            f"ran on {fixed}: whatever it finds is a new fault or a false alarm of the harness"
        )
    if exitstatus == pytest.ExitCode.INTERRUPTED:
        terminalreporter.write_line(
            "campaign interrupted: failures found so far are kept in Hypothesis's example "
            f"database ({local_db}/"
            + (f", and {shown_db}" if shared_url else "")
            + "); the next `make fuzz` replays them first and writes their fixtures."
        )
    if shared_url:
        role = "a worker: writes no fixtures" if config.getoption("--fuzz-worker") else "the writer"
        terminalreporter.write_line(
            f"shared example database: {shown_db} (keys "
            f"{shared_db.key_prefix(db_key).decode()}*); this campaign "
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
            if fault == UNNAMED:  # past the naming budget: every fix together removed them
                write(
                    f"        known upstream faults, not named (every fix together removes them; "
                    f"naming one re-runs it once per fix, which a campaign does within a tenth "
                    f"of its time): {examples} examples"
                )
                continue
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
                f"database {shown_db}: the writer's next round replays it and writes the "
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
        f"all on the {own.title} items" + (f" ({own.make_target})" if own.make_target else "")
        if (own := _own_sdk(rows)) is not None
        else f"of which the pipeline items {pipeline:.0f} s ({100 * pipeline / spent:.0f}%)"
    )
    write(
        f"budget {budget:g} s"
        + (f", wall clock {took:.0f} s so far" if took is not None else "")
        + f"; item time {spent:.0f} s, {share}"
    )
    _write_kinds(write, rows, spent)


def _write_kinds(write, rows, spent: float) -> None:
    """Where the scripts' time went: per driver and session service, seconds
    (share of all item time), scripts, seconds a script; largest first."""
    seconds: dict[str, float] = {}
    cases: dict[str, int] = {}
    for _, _, props in rows:
        for kind, (took, n) in props.get("seconds_by_kind", {}).items():
            seconds[kind] = seconds.get(kind, 0.0) + took
            cases[kind] = cases.get(kind, 0) + n
    scripts = [k for k in seconds if " / " in k]
    if not scripts:
        return
    write("time per driver / storage (running and classifying scripts):")
    for kind in sorted(scripts, key=lambda k: -seconds[k]):
        write(
            f"  {kind:<22} {seconds[kind]:7.0f} s ({100 * seconds[kind] / spent:3.0f}%), "
            f"{cases[kind]} scripts, {seconds[kind] / cases[kind]:.2f} s a script"
        )


def _own_sdk(rows) -> protocol.Sdk | None:
    """The SDK whose own test files every campaign item comes from
    (``make fuzz SDK=js``: ADK-JS's), or None (google-adk's campaign)."""
    files = sorted({nodeid.split("::")[0] for nodeid, _, _ in rows})
    return protocol.sdk_of_test_files(files)


def _campaign_target(rows, release: str) -> str:
    """What the campaign ran against: ``google-adk <release>``, or for a
    campaign of one SDK's own test files alone what that SDK's entry says
    (``@google/adk <version>, ADK for TypeScript``)."""
    sdk = _own_sdk(rows)
    if sdk is None:
        return f"google-adk {release}"
    return sdk.campaign_target()


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
    """How a campaign told ``fault``, of either SDK (the fault catalogue's
    ``fix``): a fault with a fix is only ever named by a re-run under its
    fix; one without, by its recogniser."""
    from ..faults.catalogue import fault_for

    found = fault_for(fault)
    fix = found.fix if found is not None else None
    return f"evidence: fix {fix}" if fix else "pattern evidence"
