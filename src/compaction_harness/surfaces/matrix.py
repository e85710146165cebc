"""The release matrix: which google-adk release holds which invariant, and which
known upstream fault it has.

Run as ``make matrix`` (``RELEASES="1.26.0 2.13.0"``, ``MATRIX_SECONDS=30``)
or ``python -m compaction_harness.surfaces.matrix``. For every release it

1. creates the release's environment if needed (:mod:`compaction_harness.envs`),
2. replays the whole fixture corpus there (``replay --json``): each fixture's
   verdict, the known faults it shows whatever releases they are recorded
   on, and the violations no known fault explains,
3. runs a short seeded campaign there (``pytest -m property`` with
   ``--hypothesis-seed=0 --fuzz-seconds=MATRIX_SECONDS``; new failures become
   fixtures under ``build/matrix/<release>/repros/``),

and keeps what it found as one *cell file* per release
(``build/matrix/cells/<release>.json``, written atomically once the release is
done). A re-run reuses environments and finished cell files (``--fresh``
recomputes them; a reused cell replays the corpus fixtures added since it was
made, :func:`top_up`); an interrupted run keeps every release it finished.
With ``--record PATH`` the releases run are merged into the record there
(:func:`merge`): their columns are replaced and every other release keeps its
cells, so ``RELEASES=`` runs fill the matrix a few releases at a time; the
record's markdown is written beside it (``PATH`` with ``.md``).

From the cell files it writes ``build/matrix/``:

* ``matrix.json``: the data (releases, rows, cells with reasons);
* ``matrix.md`` and ``index.html``: releases as columns; known faults,
  invariants and fixtures as rows; each cell ``holds``, ``fails``,
  ``known fault`` or ``n/a`` with its reason (cells of the HTML page link to
  the fixture and its ``show`` text);
* ``matrix.png``: the same as a heat map, when matplotlib is installed (the
  ``report`` extra).

Known faults' release lists are derived from it (:func:`derived_releases`):
the fault catalogue (``faults/catalogue.py``) reads them from the last matrix
committed as ``docs/release-matrix.json``; none is typed by hand.

Errors (no release list, an unknown release) are one line on standard error
and exit status 2; a release whose environment cannot be made is a column of
``n/a`` cells saying why, not a failed run.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..envs import RELEASE, ROOT, EnvError, _version_tuple
from ..faults.matrix_record import (
    FAILS,
    FIXED,
    HOLDS,
    KNOWN,
    NOT_APPLICABLE,
    derived_releases,
)
from ..spec.invariants import INVARIANTS as _SPECIFIED

__all__ = [
    "FAILS",
    "HOLDS",
    "KNOWN",
    "NOT_APPLICABLE",
    "aggregate",
    "default_releases",
    "derived_releases",
    "main",
    "merge",
    "python_corpus",
    "top_up",
]

#: Every invariant, in the order the matrix lists them.
INVARIANTS = tuple(_SPECIFIED)
OUT = ROOT / "build" / "matrix"
CORPUS = ROOT / "tests" / "repros"
#: The first release with event compaction: the matrix starts there.
FIRST = "1.16.0"


class MatrixError(Exception):
    """A one-line, user-facing reason the matrix cannot be made."""


# -- which releases --------------------------------------------------------------
def published_releases(python: str = sys.executable) -> list[str]:
    """Every google-adk release the package index lists (newest first), asked
    with ``pip index versions``. Raises :class:`MatrixError` when pip cannot
    say (no network)."""
    done = subprocess.run(
        [python, "-m", "pip", "index", "versions", "google-adk", "--disable-pip-version-check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    found = re.search(r"Available versions:\s*(.+)", done.stdout)
    if done.returncode != 0 or not found:
        raise MatrixError(
            "cannot list google-adk's releases (pip index versions failed; no network?): "
            "name them with RELEASES='1.26.0 2.13.0'"
        )
    return [v.strip() for v in found.group(1).split(",") if RELEASE.match(v.strip())]


def default_releases(published: Iterable[str], named: Iterable[str]) -> list[str]:
    """The newest patch of every minor release from 1.16.0 on (final releases
    only), plus every release in ``named`` (the releases known faults name),
    oldest first."""
    newest: dict[tuple[int, int], str] = {}
    for release in published:
        if not re.fullmatch(r"\d+\.\d+\.\d+", release):
            continue  # pre-releases are not pinned by anyone
        if _version_tuple(release) < _version_tuple(FIRST):
            continue
        key = _version_tuple(release)[:2]
        if key not in newest or _version_tuple(release) > _version_tuple(newest[key]):
            newest[key] = release
    chosen = set(newest.values()) | {r for r in named if _version_tuple(r) >= _version_tuple(FIRST)}
    return sorted(chosen, key=_version_tuple)


# -- one release -------------------------------------------------------------------
def _environment(release: str) -> str:
    """The release's environment's Python (created on first use)."""
    from ..envs import ensure

    return str(ensure(argparse.Namespace(adk=release, adk_src=None)))


def _relative(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def python_corpus(corpus: Path = CORPUS) -> list[str]:
    """The corpus fixtures a google-adk release replays, as paths relative to
    the project: every ``*.json`` of ``corpus`` except ADK-JS fixtures
    (``"sdk": "adk-js"``: they run on Node, the same on every release, so
    they are no cell of this matrix). A file that is not a JSON object stays
    in, for ``replay`` to report as bad input."""
    chosen = []
    for path in sorted(corpus.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = None
        if isinstance(data, dict) and data.get("sdk", "python") != "python":
            continue
        chosen.append(_relative(path))
    return chosen


def fixed_column(release: str) -> str:
    """The label of ``release``'s column with every known fault's fix applied."""
    return release + FIXED


def _base(label: str) -> str:
    """The release a column runs (``2.13.0`` for ``2.13.0+fixes``)."""
    return label.removesuffix(FIXED)


def _fixes_env(label: str) -> dict[str, str]:
    """What a column's subprocesses get: ``HARNESS_FIXES=all`` for a fixed column."""
    return {"HARNESS_FIXES": "all"} if label.endswith(FIXED) else {}


def run_release(release: str, seconds: float, out: Path) -> dict[str, Any]:
    """Replay the corpus on ``release`` and run its seeded campaign; the cell
    record (see the module docstring). An environment that cannot be made is
    recorded as ``error``. ``release`` may be a fixed column's label
    (:func:`fixed_column`): the release with every fix applied
    (``HARNESS_FIXES=all``), where every invariant should hold."""
    started = time.monotonic()
    try:
        python = _environment(_base(release))
    except (EnvError, OSError) as exc:
        return {"release": release, "error": f"no environment: {exc}"}
    env = {**os.environ, "PYTHONWARNINGS": "ignore", **_fixes_env(release)}
    try:
        replayed = _replay(python, python_corpus(), _fixes_env(release))
    except MatrixError as exc:
        return {"release": release, "error": str(exc)}
    record: dict[str, Any] = {"release": release, "replay": replayed}
    repros = out / release / "repros"
    if seconds > 0:
        before = set(repros.glob("*.json"))
        campaign = subprocess.run(
            [
                python,
                "-m",
                "pytest",
                "-p",
                "no:cacheprovider",
                "-q",
                "-m",
                "property",
                "-n",
                os.environ.get("JOBS", "auto"),
                "--hypothesis-profile=fuzz",
                "--hypothesis-seed=0",
                f"--fuzz-seconds={seconds:g}",
                f"--repro-dir={_relative(repros)}",
                # ADK-JS's tests (tests/*/adk_js/) run on Node, the same on every
                # release: not this release's campaign.
                f"--ignore-glob={_relative(ROOT / 'tests')}/*/adk_js",
            ],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env={**env, "HARNESS_CAMPAIGN_STARTED": repr(time.time())},
        )
        found = []
        for path in sorted(set(repros.glob("*.json")) - before):
            data = json.loads(path.read_text())
            found.append({"path": _relative(path), "invariant": data.get("invariant")})
        record["campaign"] = {
            "seconds": seconds,
            "seed": 0,
            "status": campaign.returncode,
            "fixtures": found,
        }
    if not release.endswith(FIXED):
        record["costs"] = _costs(python)
    record["duration"] = round(time.monotonic() - started, 1)
    return record


def _replay(
    python: str, fixtures: Sequence[str], extra: Mapping[str, str] | None = None
) -> list[dict[str, Any]]:
    """``replay --json`` of ``fixtures`` with the release's ``python`` (and the
    environment variables ``extra``): one entry per fixture. Raises
    :class:`MatrixError` when replay says nothing."""
    done = subprocess.run(
        [python, "-m", "compaction_harness", "replay", "--json", *fixtures],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONWARNINGS": "ignore", **(extra or {})},
    )
    try:
        return json.loads(done.stdout)["fixtures"]
    except (json.JSONDecodeError, KeyError):
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise MatrixError(f"replay failed: {last}") from None


def top_up(record: dict[str, Any], corpus: Sequence[str], replay: Any) -> list[str]:
    """Bring a reused cell record up to the corpus as it is now: entries of
    fixtures no longer in ``corpus`` are dropped, and the fixtures the record
    has not replayed (added since it was made) are replayed with ``replay``
    (paths -> entries) and added, in corpus order. Returns those paths."""
    wanted = set(corpus)
    entries = {e["path"]: e for e in record["replay"] if e["path"] in wanted}
    missing = [p for p in corpus if p not in entries]
    if missing:
        entries.update({e["path"]: e for e in replay(missing)})
    record["replay"] = [entries[p] for p in corpus if p in entries]
    return missing


def _costs(python: str) -> dict[str, Any]:
    """The release's standard cost profile (``profile --standard --json``:
    summariser calls per 100 invocations and the steady-state prompt, per
    standard configuration), or ``{"error": reason}``."""
    done = subprocess.run(
        [python, "-m", "compaction_harness", "profile", "--standard", "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    try:
        return json.loads(done.stdout)["configurations"]
    except (json.JSONDecodeError, KeyError):
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": last.removeprefix("error: ")}


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp") as fh:
        fh.write(text)
    os.replace(fh.name, path)


# -- cells -------------------------------------------------------------------------
def _cell(state: str, reason: str = "", link: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"state": state}
    if reason:
        out["reason"] = reason
    if link:
        out["link"] = link
    return out


def _fixture_cell(entry: Mapping[str, Any]) -> dict[str, Any]:
    """A fixture's state on a release, from its ``replay --json`` entry:
    ``fails`` when a violation no known fault explains shows (whatever the
    faults' recorded releases), ``known fault`` when only known faults show,
    ``holds`` when nothing does."""
    name = Path(entry["path"]).name
    if entry["label"] in ("n/a", "bad"):
        return _cell(NOT_APPLICABLE, entry.get("reason", ""), name)
    if entry.get("new"):
        return _cell(FAILS, "; ".join(entry["new"])[:300], name)
    if entry.get("shows"):
        return _cell(KNOWN, ", ".join(entry["shows"]), name)
    return _cell(HOLDS, "", name)


def aggregate(records: Sequence[Mapping[str, Any]], faults: Sequence[str]) -> dict[str, Any]:
    """The matrix from cell records (one per release, as :func:`run_release`
    returns them): ``releases``, and ``rows``: ``faults`` (known fault id ->
    release -> cell), ``invariants`` and ``fixtures`` likewise. A cell is
    ``{"state", "reason"?, "link"?}``.

    A known fault's cell is ``known fault`` where some fixture shows it,
    ``holds`` where its fixtures replay and none does, ``n/a`` where none of
    its fixtures can be replayed. An invariant's cell is ``fails`` where a
    fixture shows a violation of it that no known fault explains or the
    campaign found one, ``known fault`` where fixtures show it broken only as
    known faults, ``holds`` where fixtures of it replay without violating it
    and the campaign found nothing, ``n/a`` otherwise (a unit-level invariant
    where no unit-level fixture can run: the release lacks the helpers, and
    the campaign's unit properties skip too)."""
    releases = [r["release"] for r in records]
    rows: dict[str, dict[str, dict[str, Any]]] = {
        "faults": {f: {} for f in faults},
        "invariants": {i: {} for i in INVARIANTS},
        "fixtures": {},
    }
    for record in records:
        release = record["release"]
        if "error" in record:
            for group in rows.values():
                for row in group.values():
                    row[release] = _cell(NOT_APPLICABLE, record["error"])
            continue
        entries = record["replay"]
        for entry in entries:
            name = Path(entry["path"]).name
            rows["fixtures"].setdefault(name, {})[release] = _fixture_cell(entry)
        replayable = [e for e in entries if e["label"] not in ("n/a", "bad")]
        for fault in faults:
            showing = [e for e in replayable if fault in e.get("shows", [])]
            marked = [e for e in entries if e.get("known_fault") == fault]
            if showing:
                link = Path(showing[0]["path"]).name
                rows["faults"][fault][release] = _cell(KNOWN, f"shown by {link}", link)
            elif marked and all(e["label"] in ("n/a", "bad") for e in marked):
                rows["faults"][fault][release] = _cell(NOT_APPLICABLE, marked[0].get("reason", ""))
            else:
                rows["faults"][fault][release] = _cell(HOLDS)
        campaign = record.get("campaign", {})
        # Why the unit-level fixtures cannot run here, when none of them can.
        units = [e for e in entries if e.get("kind") in ("unit", "token", "metamorphic")]
        unit_blocked = (
            units[0].get("reason") or "the helpers are missing"
            if units and all(e["label"] in ("n/a", "bad") for e in units)
            else ""
        )
        for invariant in INVARIANTS:
            new = [
                e
                for e in replayable
                if any(v.startswith(f"{invariant}:") for v in e.get("new", []))
            ]
            found = [f for f in campaign.get("fixtures", []) if f["invariant"] == invariant]
            known = [
                e
                for e in replayable
                if invariant in e.get("invariants", []) and e.get("shows") and e not in new
            ]
            exercised = [e for e in replayable if e["invariant"] == invariant]
            if new or found:
                what = [Path(e["path"]).name for e in new] + [f["path"] for f in found]
                rows["invariants"][invariant][release] = _cell(
                    FAILS, "violated by " + ", ".join(what), what[0]
                )
            elif known:
                link = Path(known[0]["path"]).name
                shown = sorted({f for e in known for f in e["shows"]})
                rows["invariants"][invariant][release] = _cell(KNOWN, ", ".join(shown), link)
            elif exercised or (campaign and not (invariant.startswith("U") and unit_blocked)):
                rows["invariants"][invariant][release] = _cell(HOLDS)
            elif invariant.startswith("U") and unit_blocked:
                # The unit properties skip too where the helpers are missing.
                rows["invariants"][invariant][release] = _cell(NOT_APPLICABLE, unit_blocked)
            else:
                rows["invariants"][invariant][release] = _cell(
                    NOT_APPLICABLE, "no fixture of it replays here and no campaign ran"
                )
    costs = {r["release"]: r["costs"] for r in records if "costs" in r}
    return {"releases": releases, "rows": rows, "costs": costs}


def merge(committed: Mapping[str, Any] | None, fresh: Mapping[str, Any]) -> dict[str, Any]:
    """The record after a run of some releases: ``fresh`` (the matrix of the
    releases just run, as :func:`aggregate` makes it) merged into
    ``committed`` (the record as it was, or None). A release of ``fresh``
    replaces its column; every other release of ``committed`` keeps its
    cells, so the matrix can be filled a few releases at a time. The rows are
    ``fresh``'s (today's known faults, invariants and corpus): a row that
    ``committed`` lacks has no cell on the releases that were not run again
    (shown as ``n/a``), and a row no longer made (a fixture removed) is
    dropped. ``campaign_seconds`` says each release's campaign length, and
    ``seconds_per_campaign`` the shortest of them."""
    if not committed or not isinstance(committed.get("releases"), list):
        committed = {"releases": [], "rows": {}, "costs": {}}
    ran = set(fresh["releases"])
    kept = [r for r in committed["releases"] if r not in ran]
    releases = sorted({*kept, *ran}, key=lambda r: (_version_tuple(r), r.endswith(FIXED)))
    rows: dict[str, dict[str, dict[str, Any]]] = {}
    for group, named in fresh["rows"].items():
        before = committed.get("rows", {}).get(group, {})
        rows[group] = {}
        for name, cells in named.items():
            old = before.get(name, {})
            merged = {r: old[r] for r in kept if r in old} | dict(cells)
            rows[group][name] = {r: merged[r] for r in releases if r in merged}
    costs = {r: c for r, c in committed.get("costs", {}).items() if r in kept} | dict(
        fresh.get("costs", {})
    )
    seconds = {r: s for r, s in committed.get("campaign_seconds", {}).items() if r in kept} | dict(
        fresh.get("campaign_seconds", {})
    )
    for release in kept:  # a record from before seconds were kept per release
        seconds.setdefault(release, committed.get("seconds_per_campaign", 0))
    out = {
        "releases": releases,
        "rows": rows,
        "costs": {r: costs[r] for r in releases if r in costs},
        "campaign_seconds": {r: seconds[r] for r in releases if r in seconds},
    }
    out["seconds_per_campaign"] = min(out["campaign_seconds"].values(), default=0)
    out["derived_releases"] = derived_releases(out)
    return out


# -- rendering ---------------------------------------------------------------------
_MARK = {HOLDS: "holds", FAILS: "FAILS", KNOWN: "known", NOT_APPLICABLE: "n/a"}
_COLOUR = {HOLDS: "#cfe8cf", FAILS: "#f4b6b6", KNOWN: "#f7dfa0", NOT_APPLICABLE: "#e4e4e4"}
_TITLES = {"faults": "Known upstream faults", "invariants": "Invariants", "fixtures": "Fixtures"}


def render_markdown(matrix: Mapping[str, Any]) -> str:
    """``matrix.md``: one table per row group, releases as columns."""
    releases = matrix["releases"]
    lines = [
        "# Release matrix",
        "",
        "Cells: `holds`, `FAILS` (a violation no known fault explains), `known` (a known "
        "upstream fault), `n/a` (not applicable; the reason is in matrix.json and index.html).",
        "",
    ]
    for group, rows in matrix["rows"].items():
        lines += [f"## {_TITLES[group]}", ""]
        lines.append("| | " + " | ".join(releases) + " |")
        lines.append("|---|" + "---|" * len(releases))
        for name, cells in rows.items():
            marks = [_MARK[cells.get(r, {"state": NOT_APPLICABLE})["state"]] for r in releases]
            lines.append(f"| {name} | " + " | ".join(marks) + " |")
        lines.append("")
    lines += _cost_lines(matrix)
    return "\n".join(lines)


#: The standard configurations of ``profile --standard``, in table order.
_CONFIGURATIONS = ("sliding", "token-small", "token-large")


def _cost_lines(matrix: Mapping[str, Any]) -> list[str]:
    """The cost table: per release and standard configuration, summariser calls
    per 100 invocations / steady-state prompt in tokens (token model)."""
    costs = matrix.get("costs", {})
    if not costs:
        return []
    lines = [
        "## What compaction costs (standard configurations, 100 seeded invocations)",
        "",
        "Summariser calls per 100 invocations / steady-state prompt (tokens, four "
        "characters a token): see `python -m compaction_harness profile --help`.",
        "",
        "| release | " + " | ".join(_CONFIGURATIONS) + " |",
        "|---|" + "---|" * len(_CONFIGURATIONS),
    ]
    for release in matrix["releases"]:
        found = costs.get(release)
        if found is None:
            continue
        cells = []
        for name in _CONFIGURATIONS:
            one = found.get(name)
            if isinstance(one, dict) and "summariser_calls_per_100" in one:
                cells.append(f"{one['summariser_calls_per_100']:g} / {one['steady_state_prompt']}")
            else:
                reason = one.get("error") if isinstance(one, dict) else found.get("error")
                cells.append(f"n/a ({reason})" if reason else "n/a")
        lines.append(f"| {release} | " + " | ".join(cells) + " |")
    return [*lines, ""]


def render_html(matrix: Mapping[str, Any], links: Mapping[str, str], root: str = "../..") -> str:
    """``index.html``: the tables with coloured cells; each cell's title is its
    reason, and a cell about a fixture links to the fixture and its ``show``
    text (``links``: corpus fixture name -> its show text's path, relative to
    the page; ``root``: the project's folder, relative to the page)."""
    releases = matrix["releases"]
    out = [
        "<!doctype html><meta charset='utf-8'><title>google-adk release matrix</title>",
        "<style>body{font-family:sans-serif}table{border-collapse:collapse;margin-bottom:2em}"
        "td,th{border:1px solid #999;padding:2px 6px;font-size:12px;text-align:center}"
        "td.name{text-align:left}</style>",
        "<h1>google-adk release matrix</h1>",
        "<p>"
        + " ".join(
            f"<span style='background:{_COLOUR[s]};padding:2px 6px'>{html.escape(s)}</span>"
            for s in (HOLDS, FAILS, KNOWN, NOT_APPLICABLE)
        )
        + "</p>",
    ]
    for group, rows in matrix["rows"].items():
        out.append(f"<h2>{_TITLES[group]}</h2><table><tr><th></th>")
        out += [f"<th>{html.escape(r)}</th>" for r in releases]
        out.append("</tr>")
        for name, cells in rows.items():
            out.append(f"<tr><td class='name'>{html.escape(name)}</td>")
            for release in releases:
                cell = cells.get(release, {"state": NOT_APPLICABLE})
                text = html.escape(_MARK[cell["state"]])
                link = cell.get("link")
                if link:
                    # A corpus fixture by name, a campaign's by its path in the project.
                    fixture = link if "/" in link else f"{_relative(CORPUS)}/{link}"
                    href = f"{root}/{fixture}"
                    text = f"<a href='{html.escape(href)}'>{text}</a>"
                    if shown := links.get(link):
                        text += f" <a href='{html.escape(shown)}'>show</a>"
                out.append(
                    f"<td style='background:{_COLOUR[cell['state']]}' "
                    f"title='{html.escape(cell.get('reason', ''), quote=True)}'>{text}</td>"
                )
            out.append("</tr>")
        out.append("</table>")
    costs = _cost_lines(matrix)
    if costs:
        out.append(f"<h2>{html.escape(costs[0].lstrip('# '))}</h2><p>{html.escape(costs[2])}</p>")
        out.append("<table>")
        for k, line in enumerate(costs[4:-1]):
            if k == 1:
                continue  # the markdown rule under the header
            cells = [c.strip() for c in line.strip("|").split("|")]
            tag = "th" if k == 0 else "td"
            out.append(
                "<tr>" + "".join(f"<{tag}>{html.escape(c)}</{tag}>" for c in cells) + "</tr>"
            )
        out.append("</table>")
    return "\n".join(out) + "\n"


def render_heatmap(matrix: Mapping[str, Any], path: Path) -> bool:
    """``matrix.png``: faults and invariants by releases, coloured by state.
    False (nothing written) when matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.colors import ListedColormap
    except ImportError:
        return False
    releases = matrix["releases"]
    states = [HOLDS, KNOWN, FAILS, NOT_APPLICABLE]
    names, grid = [], []
    for group in ("faults", "invariants"):
        for name, cells in matrix["rows"][group].items():
            names.append(name)
            grid.append(
                [states.index(cells.get(r, {"state": NOT_APPLICABLE})["state"]) for r in releases]
            )
    fig, ax = plt.subplots(figsize=(max(6, 0.45 * len(releases) + 5), 0.32 * len(names) + 2))
    ax.imshow(grid, cmap=ListedColormap([_COLOUR[s] for s in states]), vmin=0, vmax=3)
    ax.set_xticks(range(len(releases)), releases, rotation=90, fontsize=8)
    ax.set_yticks(range(len(names)), names, fontsize=8)
    ax.set_xticks([x - 0.5 for x in range(1, len(releases))], minor=True)
    ax.set_yticks([y - 0.5 for y in range(1, len(names))], minor=True)
    ax.grid(which="minor", color="white", linewidth=1)
    ax.tick_params(which="minor", length=0)
    for state in states:  # legend entries
        ax.bar(0, 0, color=_COLOUR[state], label=state)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    ax.set_title("google-adk: known faults and invariants by release")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def _show_texts(out: Path, python: str) -> dict[str, str]:
    """Each corpus fixture's ``show`` text under ``out/show/`` (made once);
    fixture name -> path relative to ``out``."""
    folder = out / "show"
    folder.mkdir(parents=True, exist_ok=True)
    links = {}
    for fixture in sorted(CORPUS.glob("*.json")):
        target = folder / (fixture.stem + ".txt")
        if not target.exists():
            done = subprocess.run(
                [python, "-m", "compaction_harness", "show", str(fixture)],
                capture_output=True,
                text=True,
                cwd=ROOT,
                env={**os.environ, "PYTHONWARNINGS": "ignore"},
            )
            _write_atomically(target, done.stdout or done.stderr)
        links[fixture.name] = f"show/{target.name}"
    return links


# -- the command -------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m compaction_harness.surfaces.matrix",
        description="Replay the fixture corpus and run a short seeded campaign on each "
        "google-adk release, and write the release matrix (matrix.json, matrix.md, "
        "index.html, matrix.png) to build/matrix/. Finished releases are kept in "
        "build/matrix/cells/ and reused by the next run. Exit 0 when the matrix was "
        "written, 2 for bad input.",
    )
    parser.add_argument(
        "--releases",
        default="",
        help="space- or comma-separated releases (default: the newest patch of every "
        "minor release from 1.16.0 on, plus every release a known fault names)",
    )
    parser.add_argument(
        "--seconds",
        type=float,
        default=30.0,
        help="each release's seeded campaign, in seconds (0: replay only; default 30)",
    )
    parser.add_argument("--out", default=str(OUT), help="output folder (default build/matrix)")
    parser.add_argument(
        "--fresh", action="store_true", help="recompute releases already in the cell files"
    )
    parser.add_argument(
        "--fixed",
        default="2.13.0",
        metavar="RELEASE",
        help="also a column RELEASE+fixes: that release with every known fault's fix applied "
        "(HARNESS_FIXES=all), where the corpus and the campaign should find nothing (default "
        "2.13.0, the pinned release, when it is among the releases; 'none': no such column)",
    )
    parser.add_argument(
        "--record",
        metavar="PATH",
        help="also write matrix.json there (make matrix: docs/release-matrix.json, the record "
        "the fault catalogue derives each known fault's releases from)",
    )
    args = parser.parse_args(argv)
    from ..sdk.python.known_faults import KNOWN_FAULTS

    out = Path(args.out)
    try:
        if args.releases.strip():
            given = re.split(r"[\s,]+", args.releases.strip())
            releases = sorted(dict.fromkeys(r for r in given if r), key=_version_tuple)
            bad = [r for r in releases if not RELEASE.match(r)]
            if bad:
                raise MatrixError(f"not a release number: {bad[0]!r} (expected e.g. 2.13.0)")
            early = [r for r in releases if _version_tuple(r) < _version_tuple(FIRST)]
            if early:
                raise MatrixError(
                    f"google-adk {early[0]}: event compaction exists only from 1.16.0 on"
                )
        else:
            named = {r for f in KNOWN_FAULTS for r in f.releases}
            releases = default_releases(published_releases(), named)
    except MatrixError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.fixed != "none" and args.fixed in releases:
        releases.append(fixed_column(args.fixed))
    cells = out / "cells"
    records = []
    started = time.monotonic()
    for number, release in enumerate(releases, 1):
        path = cells / f"{release}.json"
        if path.exists() and not args.fresh:
            record = json.loads(path.read_text())
            # A release that failed is tried again; a finished one is reused
            # when its campaign ran at least as long as asked.
            if (
                "error" not in record
                and record.get("campaign", {}).get("seconds", 0) >= args.seconds
            ):
                changed = False
                if "costs" not in record and not release.endswith(FIXED):
                    record["costs"] = _costs(_environment(release))
                    changed = True
                try:
                    added = top_up(
                        record,
                        python_corpus(),
                        lambda paths, r=release: _replay(
                            _environment(_base(r)), paths, _fixes_env(r)
                        ),
                    )
                except (MatrixError, EnvError, OSError) as exc:
                    added, record = [], {"release": release, "error": str(exc)}
                if changed or added:
                    _write_atomically(path, json.dumps(record, indent=1))
                records.append(record)
                also = f" (+{len(added)} fixtures added since)" if added else ""
                print(
                    f"[{number}/{len(releases)}] {release}: reused {_relative(path)}{also}",
                    flush=True,
                )
                continue
        print(f"[{number}/{len(releases)}] {release}: running", flush=True)
        record = run_release(release, args.seconds, out)
        _write_atomically(path, json.dumps(record, indent=1))
        records.append(record)
        print(f"[{number}/{len(releases)}] {release}: {_summary(record)}", flush=True)
    faults = [f.id for f in KNOWN_FAULTS]
    matrix = aggregate(records, faults)
    matrix["campaign_seconds"] = {
        r["release"]: r.get("campaign", {}).get("seconds", 0) for r in records if "error" not in r
    }
    committed = None
    if args.record:
        # The releases run now replace theirs in the record; the others stay.
        try:
            committed = json.loads(Path(args.record).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            committed = None
    matrix = merge(committed, matrix)
    _write_atomically(out / "matrix.json", json.dumps(matrix, indent=1))
    if args.record:
        record = Path(args.record)
        _write_atomically(record, json.dumps(matrix, indent=1) + "\n")
        _write_atomically(record.with_suffix(".md"), render_markdown(matrix))
    _write_atomically(out / "matrix.md", render_markdown(matrix))
    links = _show_texts(out, sys.executable)
    root = os.path.relpath(ROOT, out.resolve())
    _write_atomically(out / "index.html", render_html(matrix, links, root))
    drew = render_heatmap(matrix, out / "matrix.png")
    took = time.monotonic() - started
    print(
        f"wrote {_relative(out)}/matrix.json, matrix.md, index.html"
        + (", matrix.png" if drew else " (no matrix.png: install the report extra for matplotlib)")
        + f" for {len(releases)} releases in {took:.0f} s"
        + (f" ({args.record} now covers {len(matrix['releases'])})" if args.record else "")
    )
    return 0


def _summary(record: Mapping[str, Any]) -> str:
    if "error" in record:
        return record["error"]
    labels: dict[str, int] = {}
    for entry in record["replay"]:
        labels[entry["label"]] = labels.get(entry["label"], 0) + 1
    text = ", ".join(f"{n} {label}" for label, n in sorted(labels.items()))
    campaign = record.get("campaign")
    if campaign:
        text += f"; campaign found {len(campaign['fixtures'])} new"
    return text + f" ({record['duration']:.0f} s)"


if __name__ == "__main__":
    sys.exit(main())
