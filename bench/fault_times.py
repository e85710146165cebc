"""How fast the campaign finds each known fault: a ground-truth benchmark (``make bench-faults``).

For every known fault of one SDK that has a fix, on the newest release the
fault shows on (google-adk: the committed release matrix; ADK-JS: the
installed ``@google/adk``), this runs the campaign ``make fuzz`` runs (the
same pytest command: every property item, ``-n JOBS``, the ``fuzz``
profile, the database servers ``make fuzz`` starts) against the SDK with
every fix applied but the fault's own (``HARNESS_FIXES=all,-<fix>``: the
SDK with that fault alone, as Magma turns one bug on by its patch), with
that fault's excuse off (``HARNESS_SOUGHT_FAULT``: a violation its fix
removes fails the item and is shrunk; anything else the run meets is
labelled and the run goes on). Each trial is one campaign of at most
``--seconds`` (default 120, ``make fuzz``'s budget), seeded with
``--hypothesis-seed=<trial>`` (each round of each item gets a seed of its
own from it), with a fresh example database, so no trial replays another's
failure.

A trial ends when the fault's fixture is shrunk and written (the campaign
is then stopped) or when the budget is spent (not found). It records the
seconds from the campaign's start (pytest's start: imports and servers
included, as a user waits) to the first failing example, the seconds spent
shrinking, whether the budget cut shrinking short, and the shrunk
fixture's operations (a script) and events (stored, summaries left out).

Output: a table per fault (found in n of N trials, median and worst
seconds to find, median seconds to shrink, median events and operations),
printed, and with ``--write`` kept as data: ``docs/fault-times/<sdk>.json``
(every trial, the date and the machine) and a picture of the faults sorted
by median time to find, ``docs/fault-times/<sdk>.svg``;
``docs/fault-times/README.md`` is rewritten from both SDKs' data. The
fixtures stay in ``build/fault-times/`` for reading.

Usage (the target environment's interpreter, from the project's root;
``make bench-faults [SDK=js] [BENCH_TRIALS=5] [BENCH_SECONDS=120]``)::

    python bench/fault_times.py [--sdk python|js] [--trials 5] [--seconds 120]
        [--faults ID,ID] [--jobs 2] [--write]

A benchmark, never a test: the times depend on the machine and its load.
Errors: an unknown fault id or SDK is one line and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import NoReturn

ROOT = Path(__file__).resolve().parents[1]


def _fail(message: str) -> NoReturn:
    """One line on standard error, exit status 2."""
    print(message, file=sys.stderr)
    raise SystemExit(2)


OUT = ROOT / "docs" / "fault-times"
BUILD = ROOT / "build" / "fault-times"
#: google-adk's campaign collects every folder but ADK-JS's; ADK-JS's collects those alone.
JS_TESTS = sorted(str(p.relative_to(ROOT)) for p in ROOT.glob("tests/*/adk_js"))


def _faults(sdk: str, wanted: list[str]):
    from compaction_harness.faults.catalogue import JS, PYTHON, faults_of, release_order

    name = PYTHON if sdk == "python" else JS
    faults = [f for f in faults_of(name) if f.fix]
    unknown = sorted(set(wanted) - {f.id for f in faults})
    if unknown:
        _fail(
            f"error: --faults: no {name} fault with a fix named {', '.join(unknown)} "
            "(`python -m compaction_harness faults` lists them)"
        )
    if wanted:
        faults = [f for f in faults if f.id in wanted]
    order = release_order(name)
    rows = []
    for fault in faults:
        newest = max(fault.releases, key=order.index) if fault.releases else None
        rows.append((fault, newest))
    return rows


def _interpreter(sdk: str, release: str | None) -> str:
    """The environment's python for ``release`` (``make env`` creates it once)."""
    if sdk == "js" or release is None:
        return sys.executable
    from compaction_harness.sdk.python.adk import ADK_RELEASE

    if release == ADK_RELEASE:
        return sys.executable
    found = subprocess.run(
        [sys.executable, "-m", "compaction_harness.envs", "--adk", release],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        cwd=ROOT,
    )
    if found.returncode != 0:
        said = found.stderr.strip().splitlines() or [f"error: no environment for {release}"]
        _fail(said[-1])
    return found.stdout.strip()


def masking(sdk: str, fault_id: str) -> list[str]:
    """The fixes other than ``fault_id``'s own that alone make every
    committed fixture of the fault (on the installed release) hold: they
    remove what the fault needs to show (google-adk's
    ``session-stamps-events-in-append-order`` gives every event a timestamp
    after the last, so no database reload can reorder them). The SDK with
    the fault alone leaves them out too. Runs in the target's environment."""
    from compaction_harness.faults.catalogue import fault_for
    from compaction_harness.store.fixtures import load_fixture
    from compaction_harness.surfaces.verdicts import installed_release, judge_fixture

    own = {n.strip() for n in (fault_for(fault_id).fix or "").split(",")}
    fixtures = []
    for path in sorted((ROOT / "tests" / "repros").glob("*.json")):
        fixture = load_fixture(path)
        if fixture.known_fault != fault_id:
            continue
        if sdk == "python" and fixture.adk_release != installed_release():
            continue
        fixtures.append(fixture)
    if not fixtures:
        return []
    if sdk == "js":
        from compaction_harness.sdk.js.js_fixes import js_fixes

        names = [n for n in js_fixes() if n not in own]
    else:
        from compaction_harness.sdk.python.fixes import FIXES, unavailable

        names = [n for n in FIXES if n not in own and unavailable(n) is None]
    from compaction_harness.faults.classify import asking_about

    found = []
    asked = sorted(own)[:1]  # the replay asks only whether the fault's own fix removes it
    for name in names:
        held = True
        for fixture in fixtures:
            os.environ["HARNESS_FIXES"] = name  # the Node driver reads it
            if sdk == "js":
                with asking_about(asked):
                    label = judge_fixture(fixture).label
            else:
                from compaction_harness.sdk.python.fixes import applied

                with applied([name]), asking_about(asked):
                    label = judge_fixture(fixture).label
            if label not in ("ok", "XPASS"):  # the fault still shows
                held = False
                break
        if held:
            found.append(name)
    return found


def _masking(sdk: str, fault_id: str, python: str) -> list[str]:
    done = subprocess.run(
        [python, __file__, "--sdk", sdk, "--masking", fault_id],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "HARNESS_FIXES": ""},
    )
    if done.returncode != 0:
        said = done.stderr.strip().splitlines() or ["no message"]
        _fail(f"error: finding the fixes that mask {fault_id}: {said[-1]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _trial(sdk: str, fault, python: str, number: int, args, left_out: list[str]) -> dict:
    folder = BUILD / sdk / fault.id / f"trial-{number}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    report = folder / "found.jsonl"
    env = {
        **os.environ,
        "HARNESS_FIXES": "all," + ",".join(f"-{name}" for name in left_out),
        "HARNESS_SOUGHT_FAULT": fault.id,
        "HARNESS_SOUGHT_REPORT": str(report),
        "HARNESS_FUZZ_DB": str(folder / "examples"),
        "FUZZ_DB": "",
        "HARNESS_STORAGE": "",
        "PYTHONDONTWRITEBYTECODE": "",
    }
    paths = JS_TESTS if sdk == "js" else [f"--ignore={p}" for p in JS_TESTS]
    command = [
        python,
        *("-m", "pytest", "-p", "no:cacheprovider", "-q", "-m", "property"),
        *("-n", str(args.jobs), "--hypothesis-profile=fuzz", *paths),
        f"--fuzz-seconds={args.seconds}",
        f"--hypothesis-seed={number}",
        f"--repro-dir={folder / 'repros'}",
    ]
    # The servers' and the Node driver's folders, removed below. Short, in the
    # system's temporary folder: PostgreSQL's socket lives in its folder, and a
    # Unix socket's path may not exceed 107 bytes (under the trial's folder it
    # did, and every google-adk trial broke); readable by the postgres user
    # that a server started as root runs as.
    scratch = Path(tempfile.mkdtemp(prefix="bench-"))
    scratch.chmod(0o755)
    env["TMPDIR"] = str(scratch)
    started = time.time()
    env["HARNESS_CAMPAIGN_STARTED"] = repr(started)
    shrunk: dict | None = None
    with open(folder / "campaign.log", "w", encoding="utf-8") as log:
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            while process.poll() is None and shrunk is None:
                shrunk = _report(report)[1]
                time.sleep(0.2)
        finally:
            _stop(process)
    firsts, shrunk = _report(report)
    shutil.rmtree(scratch, ignore_errors=True)
    row = {"trial": number, "seconds": round(time.time() - started, 1), "found": shrunk is not None}
    if shrunk is not None:
        # The earliest first failure of any item: another may have found the
        # fault before the item that finished shrinking first.
        first = min([shrunk["first_failure"], *(line["first_failure"] for line in firsts)])
        row.update(
            first_failure=first,
            shrink=round(shrunk["shrunk"] - shrunk["first_failure"], 2),
            cut_short=shrunk["cut_short"],
            events=shrunk["events"],
            operations=shrunk["operations"],
            invariant=shrunk["invariant"],
            item=shrunk["item"].split("::")[-1],
        )
    elif process.returncode not in (0, -signal.SIGTERM, -signal.SIGKILL):
        # The campaign ended by itself without the fault and not cleanly: a
        # collection error, a server that would not start... not "not found".
        tail = (folder / "campaign.log").read_text(encoding="utf-8").strip().splitlines()[-3:]
        row["error"] = f"exit {process.returncode}: " + " / ".join(tail)[-300:]
    return row


def _report(path: Path) -> tuple[list[dict], dict | None]:
    """The report's first-failure lines, and its first line of a fixture shrunk."""
    if not path.exists():
        return [], None
    lines = [json.loads(text) for text in path.read_text(encoding="utf-8").splitlines() if text]
    firsts = [line for line in lines if "shrunk" not in line]
    return firsts, next((line for line in lines if "shrunk" in line), None)


def _stop(process: subprocess.Popen) -> None:
    """End a campaign and everything it started: SIGTERM to its process
    group (the database servers and the Node driver are in it, and stop;
    their folders are in the trial's TMPDIR, removed after), then SIGKILL.
    Not SIGINT: a benchmark started in the background of a shell ignores
    SIGINT, and so would the campaigns it starts (each trial then waited out
    the grace period)."""
    if process.poll() is not None:
        return
    for signum, wait in ((signal.SIGTERM, 30), (signal.SIGKILL, 10)):
        try:
            os.killpg(process.pid, signum)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _median(rows: list[dict], key: str) -> float | None:
    values = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(values) if values else None


def summary(fault_id: str, release: str | None, trials: list[dict]) -> dict:
    """One fault's line of the table from its trials."""
    found = [t for t in trials if t["found"]]
    return {
        "fault": fault_id,
        "release": release,
        "found": len(found),
        "trials": len(trials),
        "median_seconds_to_find": _median(found, "first_failure"),
        # A trial that missed took longer than any found: no worst time then.
        "worst_seconds_to_find": (
            max((t["first_failure"] for t in found), default=None)
            if len(found) == len(trials)
            else None
        ),
        "errors": sum(1 for t in trials if "error" in t),
        "median_seconds_to_shrink": _median(found, "shrink"),
        "median_events": _median(found, "events"),
        "median_operations": _median(found, "operations"),
        "found_by": sorted({t["item"] for t in found}),
        "trial_rows": trials,
    }


def _machine() -> dict:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpus": os.cpu_count(), "cpu": model, "python": platform.python_version()}


def _cell(value, digits: int = 0) -> str:
    if value is None:
        return "-"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def table(document: dict) -> str:
    """The Markdown table of one SDK's document, faults by median time to find."""
    lines = [
        "| fault | release | found | median s to find | worst s | median s to shrink "
        "| median events | median operations | found by | also left out |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    budget = document.get("settings", {}).get("seconds", 0)
    for row in _sorted(document["faults"]):
        lines.append(
            f"| `{row['fault']}` | {row['release'] or '-'} | {row['found']} of {row['trials']} "
            f"| {_cell(row['median_seconds_to_find'])} | {_worst(row, budget)} "
            f"| {_cell(row['median_seconds_to_shrink'])} | {_cell(row['median_events'])} "
            f"| {_cell(row['median_operations'])} | {', '.join(row['found_by']) or '-'} "
            f"| {', '.join(row.get('also_left_out', ())) or '-'} |"
        )
    return "\n".join(lines)


def _worst(row: dict, budget: float) -> str:
    """The worst time to find: over the budget when a trial missed; the
    trials that broke (not a miss) said."""
    broken = f" ({row['errors']} broke)" if row.get("errors") else ""
    if row["worst_seconds_to_find"] is None and row["found"]:
        return f"> {budget:g}{broken}"
    return _cell(row["worst_seconds_to_find"]) + broken


def _sorted(rows: list[dict]) -> list[dict]:
    return sorted(
        rows,
        key=lambda r: (
            -r["found"],
            r["median_seconds_to_find"] if r["median_seconds_to_find"] is not None else 1e9,
        ),
    )


def picture(document: dict, path: Path) -> None:
    """Faults sorted by median seconds to find (bars), each trial a dot; a
    fault not found in every trial is drawn in another colour."""
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "fault-times"
    import matplotlib.pyplot as plt

    rows = list(reversed(_sorted(document["faults"])))
    budget = document["settings"]["seconds"]
    fig, ax = plt.subplots(figsize=(10, 0.32 * len(rows) + 1.6))
    for y, row in enumerate(rows):
        median = row["median_seconds_to_find"]
        full = row["found"] == row["trials"]
        ax.barh(y, median if median is not None else budget, color="#4c72b0" if full else "#dd8452")
        times = [t["first_failure"] for t in row["trial_rows"] if t["found"]]
        ax.plot(times, [y] * len(times), "k|", markersize=8)
    ax.set_yticks(range(len(rows)), [f"{r['fault']} ({r['found']}/{r['trials']})" for r in rows])
    ax.axvline(60, color="grey", linestyle="--", linewidth=0.8)
    ax.set_xlim(0, budget)
    ax.set_xlabel(
        f"seconds to the first failing example (bar: median; ticks: trials; budget {budget} s)"
    )
    ax.set_title(f"{document['sdk']}: time to find each known fault, alone ({document['date']})")
    fig.tight_layout()
    fig.savefig(path, format="svg", metadata={"Date": None})
    plt.close(fig)


def readme() -> str:
    """``docs/fault-times/README.md`` from the SDKs' committed data."""
    parts = [
        "# Time to find each known fault",
        "",
        "Written by `make bench-faults` (`bench/fault_times.py --write`), which says how.",
        "Each known fault with a fix is run alone: the campaign `make fuzz` runs, against the",
        "SDK with every fix but the fault's own applied and that fault not excused, on the",
        "newest release it shows on; one trial is one seeded campaign with a fresh example",
        "database, ended when the fault's fixture is shrunk. A fault found in fewer trials",
        "than were run, or with a median over 60 s, is a blind spot: of the generators, or of",
        "the campaign's schedule (each worker runs its items one after another, so a fault",
        "that one item alone finds waits for that item's turn). A row replaced by a run for",
        "some faults (`BENCH_FAULTS=`) carries its own date and commit (`measured`) in the JSON.",
    ]
    for sdk in ("python", "js"):
        path = OUT / f"{sdk}.json"
        if not path.exists():
            continue
        document = json.loads(path.read_text(encoding="utf-8"))
        machine = document["machine"]
        settings = document["settings"]
        parts += [
            "",
            f"## {document['sdk']}",
            "",
            f"Measured {document['date']} on {machine['cpus']} cores ({machine['cpu']}), "
            f"{settings['trials']} trials of at most {settings['seconds']} s each, "
            f"`-n {settings['jobs']}`, at commit {document['commit']}.",
            "",
            table(document),
            "",
            f"![{document['sdk']}: seconds to find each fault]({sdk}.svg)",
        ]
    return "\n".join(parts) + "\n"


def _commit() -> str:
    out = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    )
    return out.stdout.strip() or "unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Seconds for the campaign to find each known fault alone (every other "
        "fix applied), over several seeded trials; see the module's docstring."
    )
    parser.add_argument("--sdk", choices=("python", "js"), default="python")
    parser.add_argument("--trials", type=int, default=5, help="seeded trials a fault (5)")
    parser.add_argument(
        "--seconds", type=float, default=120, help="each trial's campaign budget, s (120)"
    )
    parser.add_argument("--faults", default="", help="only these fault ids (comma-separated)")
    parser.add_argument("--jobs", type=int, default=2, help="pytest-xdist workers a trial (2)")
    parser.add_argument(
        "--write", action="store_true", help="write docs/fault-times/<sdk>.json, .svg, README"
    )
    parser.add_argument(
        "--rewrite",
        action="store_true",
        help="run nothing: recompute the tables, pictures and README from docs/fault-times/*.json",
    )
    parser.add_argument("--masking", metavar="FAULT", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.masking:  # in the target's environment, for _masking
        import logging

        logging.getLogger("google_adk").setLevel(logging.ERROR)
        sys.path.insert(0, str(ROOT / "src"))
        print(json.dumps(masking(args.sdk, args.masking)))
        return 0
    if args.rewrite:
        for path in sorted(OUT.glob("*.json")):
            document = json.loads(path.read_text(encoding="utf-8"))
            document["faults"] = [
                {**row, **summary(row["fault"], row["release"], row["trial_rows"])}
                for row in document["faults"]
            ]
            path.write_text(json.dumps(document, indent=1) + "\n")
            picture(document, path.with_suffix(".svg"))
        (OUT / "README.md").write_text(readme(), encoding="utf-8")
        return 0
    if args.trials < 1 or args.seconds <= 0 or args.jobs < 1:
        parser.error("--trials, --seconds and --jobs must be positive")
    sys.path.insert(0, str(ROOT / "src"))
    wanted = [f.strip() for f in args.faults.split(",") if f.strip()]
    rows = []
    for fault, release in _faults(args.sdk, wanted):
        python = _interpreter(args.sdk, release)
        masked_by = _masking(args.sdk, fault.id, python)
        left_out = [n.strip() for n in fault.fix.split(",")] + masked_by
        if masked_by:
            print(f"{fault.id}: also left out, as they mask it: {', '.join(masked_by)}")
        trials = []
        for number in range(args.trials):
            trial = _trial(args.sdk, fault, python, number, args, left_out)
            trials.append(trial)
            shown = (
                f"found at {trial['first_failure']:.1f} s, shrunk in {trial['shrink']:.1f} s to "
                f"{trial['operations']} operations, {trial['events']} events ({trial['item']})"
                if trial["found"]
                else f"broke: {trial['error']}"
                if "error" in trial
                else f"not found in {args.seconds:g} s"
            )
            print(f"{fault.id} on {release}: trial {number}: {shown}", flush=True)
        rows.append(
            {
                **summary(fault.id, release, trials),
                "also_left_out": masked_by,
                "measured": f"{datetime.now(UTC):%Y-%m-%d} at {_commit()}",
            }
        )
    document = {
        "sdk": "google-adk" if args.sdk == "python" else "adk-js",
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "commit": _commit(),
        "machine": _machine(),
        "settings": {"trials": args.trials, "seconds": args.seconds, "jobs": args.jobs},
        "faults": rows,
    }
    print(table(document))
    if args.write:
        OUT.mkdir(parents=True, exist_ok=True)
        if wanted and (OUT / f"{args.sdk}.json").exists():  # a subset: merge into the record
            kept = json.loads((OUT / f"{args.sdk}.json").read_text(encoding="utf-8"))
            ids = {r["fault"] for r in rows}
            document["faults"] = [r for r in kept["faults"] if r["fault"] not in ids] + rows
        (OUT / f"{args.sdk}.json").write_text(json.dumps(document, indent=1) + "\n")
        picture(document, OUT / f"{args.sdk}.svg")
        (OUT / "README.md").write_text(readme(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
