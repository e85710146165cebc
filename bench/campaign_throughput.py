"""Campaign throughput of two commits, side by side in one run: examples per second.

Each revision is checked out in a worktree of its own (``build/throughput/``;
its ADK-JS ``node_modules`` is this checkout's, linked, when both ask for the
same ``@google/adk``: this install holds what an older one needs) and runs
the campaign its own Makefile's ``fuzz`` target runs (the property items,
``-n JOBS``, the ``fuzz`` profile, a fresh example database) for
``--seconds``, one revision after the other, ``--rounds`` times alternately,
so that both meet the same machine. The examples are the sum of the campaign
summary's ``examples=`` over its items, counted over the time its items ran
(``seconds=``, over the jobs: a campaign that finds something ends early);
the table gives each revision's examples and examples per second, and their
ratio; each campaign's output is
kept in its worktree's ``build/throughput-campaign.log``.

Usage (the target environment's interpreter, from the project's root)::

    python bench/campaign_throughput.py --before REV [--after HEAD] [--sdk js]
        [--seconds 120] [--rounds 1] [--jobs 2]

An example is one drawn script, shrinking attempts included (a revision
that finds something and shrinks it counts those too). No database server is
started (``HARNESS_SERVERS`` empty): for ``--sdk python`` this is not quite
the campaign ``make fuzz`` runs. A benchmark, never a test. Errors: an
unknown revision is one line, exit 2.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import NoReturn

ROOT = Path(__file__).resolve().parents[1]


def _fail(message: str) -> NoReturn:
    """One line on standard error, exit status 2."""
    print(message, file=sys.stderr)
    raise SystemExit(2)


WORK = ROOT / "build" / "throughput"
PACKAGE = "sdks/adk-js/package.json"


def _adk_js(tree: Path) -> str | None:
    """The ``@google/adk`` version a checkout's package.json asks for."""
    try:
        return json.loads((tree / PACKAGE).read_text())["dependencies"]["@google/adk"]
    except (OSError, KeyError, ValueError):
        return None


def _git(*args: str, cwd: Path = ROOT) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        said = done.stderr.strip().splitlines() or [f"exit {done.returncode}"]
        _fail(f"error: git {' '.join(args)}: {said[-1]}")
    return done.stdout.strip()


def _worktree(revision: str) -> Path:
    commit = _git("rev-parse", "--short", f"{revision}^{{commit}}")
    tree = WORK / commit
    if not tree.exists():
        _git("worktree", "add", "--detach", str(tree), commit)
    modules = ROOT / "sdks" / "adk-js" / "node_modules"
    theirs = tree / "sdks" / "adk-js" / "node_modules"
    if modules.exists() and _adk_js(ROOT) == _adk_js(tree) and not theirs.exists():
        theirs.symlink_to(modules)
    return tree


def _variable(tree: Path, name: str, sdk: str) -> str:
    """A variable of the worktree's own Makefile, as ``make`` expands it."""
    printer = f"print-variable: ; @echo $({name})\n"
    done = subprocess.run(
        ["make", "-s", "-f", "Makefile", "-f", "-", "print-variable", f"SDK={sdk}"],
        cwd=tree,
        input=printer,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip()


def campaign(tree: Path, sdk: str, seconds: float, jobs: int) -> tuple[int, float, float, bool]:
    """(examples, item seconds over ``jobs``, wall seconds, whether it found
    something new) of one campaign at the worktree ``tree``. The item
    seconds are the summary's ``seconds=`` summed over the items: a campaign
    whose items found a failure ends early, and its examples are counted
    over the time its items ran, not over the budget."""
    paths = _variable(tree, "SDK_PATHS", sdk).split()
    database = tree / "build" / "throughput-examples"
    shutil.rmtree(database, ignore_errors=True)
    env = {
        **os.environ,
        "PYTHONPATH": str(tree / "src"),
        "HARNESS_FUZZ_DB": str(database),
        "FUZZ_DB": "",
        "HARNESS_FIXES": "",
        "HARNESS_SERVERS": "",
        "HARNESS_CAMPAIGN_STARTED": repr(time.time()),
    }
    started = time.time()
    done = subprocess.run(
        [
            sys.executable,
            *("-m", "pytest", "-p", "no:cacheprovider", "-m", "property", "-n", str(jobs)),
            *("--hypothesis-profile=fuzz", *paths, f"--fuzz-seconds={seconds}"),
            f"--repro-dir={tree / 'build' / 'throughput-repros'}",
        ],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
    )
    (tree / "build" / "throughput-campaign.log").write_text(done.stdout + done.stderr)
    examples = sum(int(n) for n in re.findall(r"\bexamples=(\d+)", done.stdout))
    ran = sum(float(n) for n in re.findall(r"\bexamples=\d+ seconds=([\d.]+)", done.stdout))
    if not examples or not ran:
        tail = (done.stdout + done.stderr).strip().splitlines()[-5:]
        _fail(f"error: the campaign at {tree.name} ran no example: {tail}")
    found = re.search(r"^NEW: ", done.stdout, re.MULTILINE) is not None
    return examples, ran / jobs, time.time() - started, found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="the earlier revision")
    parser.add_argument("--after", default="HEAD", help="the later revision (HEAD)")
    parser.add_argument("--sdk", choices=("python", "js"), default="js")
    parser.add_argument("--seconds", type=float, default=120, help="each campaign's budget")
    parser.add_argument("--rounds", type=int, default=1, help="campaigns a revision, alternated")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    trees = {rev: _worktree(rev) for rev in (args.before, args.after)}
    totals = {rev: [0, 0.0] for rev in trees}
    for round_number in range(args.rounds):
        for rev, tree in trees.items():
            examples, ran, wall, found = campaign(tree, args.sdk, args.seconds, args.jobs)
            totals[rev][0] += examples
            totals[rev][1] += ran
            print(
                f"round {round_number + 1}: {rev} ({tree.name}): {examples} examples in "
                f"{ran:.0f} s of its items ({examples / ran:.0f}/s; {wall:.0f} s wall"
                f"{'; found something new and shrank it' if found else ''})",
                flush=True,
            )
    (before, after) = (totals[args.before], totals[args.after])
    print("| revision | examples | examples/s |\n| --- | --- | --- |")
    for rev, (examples, seconds) in totals.items():
        print(f"| {rev} ({trees[rev].name}) | {examples} | {examples / seconds:.0f} |")
    print(f"after / before: {(after[0] / after[1]) / (before[0] / before[1]):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
