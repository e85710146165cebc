"""The known upstream faults of both SDKs, as data: one catalogue.

A :class:`Fault` is what the project knows of one upstream fault of
google-adk (Python, ``"google-adk"``) or of ADK for TypeScript
(``@google/adk``, ``"adk-js"``). What is written by hand is only what no
program can know, one row a fault in two data modules,
:mod:`.records_python` (google-adk) and :mod:`.records_js` (ADK-JS): the
id, the family, the invariants it breaks, a title, what a user sees (where
in the SDK, what goes wrong, what it costs) and, for ADK-JS, the compactors
it concerns; a fault that can have no fix also says why
(``no_fix_reason``). This module reads the rows (their SDK is their
module's), and derives the rest when it is imported, never typed:

* ``fix``: the fixes that name the fault among theirs: google-adk's list
  (:data:`compaction_harness.sdk.python.python_fixes.ENTRIES`, a data module:
  what its registry ``sdk.python.fixes.FIXES`` is made of), ADK-JS's index
  ``sdks/adk-js/fixes/index.json`` (a JSON object, fix name ->
  ``{"faults": [fault id, ...], ...}``; no file, no ADK-JS fix);
* ``releases``: google-adk: the releases on which the committed release
  matrix (``docs/release-matrix.json``, written by ``make matrix``) shows
  the fault (:func:`compaction_harness.faults.matrix_record.derived_releases`;
  a fault the record does not hold yet has none until ``make matrix`` runs
  again);
  ADK-JS: the ``@google/adk`` versions (``package_version``) of the
  fixtures in ``tests/repros/`` recorded as the fault.

``family`` is the id of the fault of the *other* SDK with the same mechanism
(the same wrong reading of the same data, not merely the same symptom), or
None. Several faults of one SDK may name one fault of the other (ADK-JS's
time filter shows as several faults where adk-python's time order is one);
the fault named then names one of them back.

``known_faults.KNOWN_FAULTS`` (google-adk) and ``adk_js.KNOWN_FAULTS``
(ADK-JS) are views of this catalogue in the shapes their readers use;
``python -m compaction_harness faults`` prints it.

Errors: ``ValueError`` at import for a catalogue that contradicts itself (a
row of the wrong width, an id twice, a family that is no fault of the other
SDK, a fault with both a fix and a reason for having none) or an unreadable
ADK-JS fix index.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from ..sdk.python.python_fixes import ENTRIES
from . import records_js, records_python
from .matrix_record import FIXED, derived_releases

__all__ = [
    "FAULTS",
    "JS",
    "PYTHON",
    "SDKS",
    "Fault",
    "fault_for",
    "faults_of",
    "fix_text",
    "ranges",
    "release_order",
    "release_runs",
]

PYTHON = "google-adk"
JS = "adk-js"
SDKS = (PYTHON, JS)

ROOT = Path(__file__).resolve().parents[3]
#: The committed release matrix record (``make matrix`` writes it).
MATRIX = ROOT / "docs" / "release-matrix.json"
#: The fixtures whose ``known_fault`` and ``package_version`` give ADK-JS releases.
CORPUS = ROOT / "tests" / "repros"
#: ADK-JS's fix registry: fix name -> {"faults": [...], ...}.
JS_FIX_INDEX = ROOT / "sdks" / "adk-js" / "fixes" / "index.json"

#: ADK-JS's context compactors (``adk_js.COMPACTORS``; a test holds them equal).
EVERY_JS_COMPACTOR = tuple(records_js.EVERY.split())


@dataclass(frozen=True)
class Fault:
    """One known upstream fault.

    Attributes:
        id: a stable slug, referenced by fixtures as ``known_fault``.
        sdk: ``"google-adk"`` or ``"adk-js"``.
        family: the id of the fault of the other SDK with the same
            mechanism, or None.
        invariants: the invariants it breaks (directly, or through a caller:
            the token-threshold range inherits the prefix helper's faults).
        title: one line.
        user_sees: where in the SDK (file, function), what goes wrong, and
            what it costs a user.
        compactors: the ADK-JS compactors it concerns (None for google-adk).
        fix: the name of the fix that removes it (several: joined by ``", "``),
            or None; derived from the fix registries.
        no_fix_reason: why no fix can exist, or None (written by hand; a fault
            with neither a fix nor a reason has a fix still to write).
        releases: the releases it shows on, oldest first; derived.
    """

    id: str
    sdk: str
    family: str | None
    invariants: tuple[str, ...]
    title: str
    user_sees: str
    compactors: tuple[str, ...] | None = None
    fix: str | None = None
    no_fix_reason: str | None = None
    releases: tuple[str, ...] = ()

    def record(self) -> dict[str, Any]:
        """Every field, as JSON data (tuples as lists)."""
        out = asdict(self)
        for key, value in out.items():
            if isinstance(value, tuple):
                out[key] = list(value)
        return out


def _fault(**fields: Any) -> Fault:
    """A hand-written entry: only what no program derives."""
    for derived in ("fix", "releases"):
        if derived in fields:
            raise ValueError(f"{fields['id']}: {derived} is derived, never written")
    return Fault(**fields)


# -- the entries: the rows of records_python and records_js -----------------------------
def _entry(sdk: str, row: Sequence[str | None]) -> Fault:
    """A row of :mod:`.records_python` or :mod:`.records_js` as a hand-written
    entry: ``(id, family, invariants, [compactors,] title, user_sees
    [, no_fix_reason])``, compactors for ADK-JS only, invariants and
    compactors separated by spaces."""
    width = 5 if sdk == PYTHON else 6
    if len(row) not in (width, width + 1):
        raise ValueError(f"{row[0] if row else row!r}: a row of {len(row)} fields")
    fault_id, family, invariants, *rest = row
    compactors = rest.pop(0) if sdk == JS else ""
    title, user_sees, *reason = rest
    if not all(isinstance(v, str) for v in (fault_id, invariants, compactors, title, user_sees)):
        raise ValueError(f"{fault_id!r}: id, invariants, compactors, title and user_sees are text")
    return _fault(
        id=fault_id,
        sdk=sdk,
        family=family,
        invariants=tuple(invariants.split()),
        title=title,
        user_sees=user_sees,
        compactors=tuple(compactors.split()) if sdk == JS else None,
        no_fix_reason=reason[0] if reason else None,
    )


_ENTRIES: tuple[Fault, ...] = tuple(_entry(PYTHON, row) for row in records_python.ROWS) + tuple(
    _entry(JS, row) for row in records_js.ROWS
)


# -- what is derived --------------------------------------------------------------------
def _version(release: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", release))


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None


def _python_releases(path: Path = MATRIX) -> dict[str, tuple[str, ...]]:
    """Fault id -> the releases the committed matrix record shows it on."""
    document = _read_json(path)
    if not isinstance(document, Mapping) or "rows" not in document:
        return {}
    return {fault: tuple(found) for fault, found in derived_releases(document).items()}


def _js_releases(corpus: Path = CORPUS) -> dict[str, tuple[str, ...]]:
    """Fault id -> the ``@google/adk`` versions of its ADK-JS fixtures (marked
    with it as ``known_fault`` or in ``also_shows``)."""
    found: dict[str, set[str]] = {}
    for path in sorted(corpus.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # replay reports an unreadable fixture; it shows no release
        if not isinstance(data, dict) or data.get("sdk") != JS:
            continue
        version = data.get("package_version")
        shown = [data.get("known_fault"), *(data.get("also_shows") or ())]
        for fault in shown:
            if isinstance(fault, str) and isinstance(version, str):
                found.setdefault(fault, set()).add(version)
    return {fault: tuple(sorted(v, key=_version)) for fault, v in found.items()}


def _python_fixes() -> dict[str, list[str]]:
    """Fault id -> the google-adk fixes that name it, from their list (data)."""
    out: dict[str, list[str]] = {}
    for entry in ENTRIES:
        for fault in entry["faults"]:
            out.setdefault(fault, []).append(entry["name"])
    return out


def _js_fixes(path: Path = JS_FIX_INDEX) -> dict[str, list[str]]:
    """Fault id -> the ADK-JS fixes that name it, from the index (none when absent)."""
    index = _read_json(path)
    if index is None:
        return {}
    if not isinstance(index, dict):
        raise ValueError(f"{path.name}: not a JSON object of fix name -> {{faults: [...]}}")
    out: dict[str, list[str]] = {}
    for name, entry in index.items():
        faults = entry.get("faults") if isinstance(entry, dict) else None
        if not isinstance(faults, list) or not all(isinstance(f, str) for f in faults):
            raise ValueError(f"{path.name}: fix {name!r} has no list of faults")
        for fault in faults:
            out.setdefault(fault, []).append(name)
    return out


def _built(entries: Sequence[Fault]) -> tuple[Fault, ...]:
    """``entries`` with their fixes and releases, checked."""
    ids = [f.id for f in entries]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise ValueError(f"fault {twice[0]!r} is catalogued twice")
    sdk_of = {f.id: f.sdk for f in entries}
    fixes = {PYTHON: _python_fixes(), JS: _js_fixes()}
    releases = {PYTHON: _python_releases(), JS: _js_releases()}
    out = []
    for fault in entries:
        if fault.sdk not in SDKS:
            raise ValueError(f"{fault.id}: unknown SDK {fault.sdk!r} (known: {', '.join(SDKS)})")
        if fault.family is not None and sdk_of.get(fault.family, fault.sdk) == fault.sdk:
            raise ValueError(f"{fault.id}: family {fault.family!r} is no fault of the other SDK")
        if (fault.compactors is not None) != (fault.sdk == JS):
            raise ValueError(f"{fault.id}: compactors are given for ADK-JS faults only")
        names = fixes[fault.sdk].get(fault.id, [])
        if names and fault.no_fix_reason:
            raise ValueError(f"{fault.id}: has a fix ({names[0]}) and a reason for having none")
        out.append(
            replace(
                fault,
                fix=", ".join(names) or None,
                releases=releases[fault.sdk].get(fault.id, ()),
            )
        )
    return tuple(out)


#: Every known fault of both SDKs: google-adk's first, then ADK-JS's.
FAULTS: tuple[Fault, ...] = _built(_ENTRIES)


def fault_for(fault_id: str) -> Fault | None:
    """The catalogued fault with this id (of either SDK), or None."""
    return next((f for f in FAULTS if f.id == fault_id), None)


def faults_of(sdk: str) -> tuple[Fault, ...]:
    """The faults of ``sdk`` (``"google-adk"`` or ``"adk-js"``); ``ValueError``
    for another name."""
    if sdk not in SDKS:
        raise ValueError(f"unknown SDK {sdk!r} (known: {', '.join(SDKS)})")
    return tuple(f for f in FAULTS if f.sdk == sdk)


def release_order(sdk: str) -> list[str]:
    """The releases a fault of ``sdk`` can show on, oldest first: google-adk's
    are the committed matrix record's (none without it; a column with every
    fix applied is no release); ADK-JS's the versions its faults show on."""
    if sdk == PYTHON:
        document = _read_json(MATRIX)
        releases = document.get("releases") if isinstance(document, Mapping) else None
        return [r for r in releases if not r.endswith(FIXED)] if isinstance(releases, list) else []
    return sorted({r for f in faults_of(sdk) for r in f.releases}, key=_version)


def fix_text(fault: Fault) -> str:
    """What a reader is told of ``fault``'s fix: its name, ``"no fix: <why>"``
    when none can exist, or ``"no fix yet"`` when one is still to be written."""
    if fault.fix:
        return fault.fix
    return f"no fix: {fault.no_fix_reason}" if fault.no_fix_reason else "no fix yet"


#: Between the first and the last release of a run (an en dash).
DASH = "\u2013"


def release_runs(
    releases: Iterable[str], order: Sequence[str]
) -> tuple[list[list[str]], list[str]]:
    """``releases`` as runs of consecutive entries of ``order`` (oldest
    first, each release once), and the releases ``order`` does not hold, as
    given."""
    given = list(releases)
    position = {r: k for k, r in enumerate(order)}
    known = sorted((r for r in set(given) if r in position), key=position.__getitem__)
    runs: list[list[str]] = []
    for release in known:
        if runs and position[runs[-1][-1]] + 1 == position[release]:
            runs[-1].append(release)
        else:
            runs.append([release])
    return runs, [r for r in given if r not in position]


def ranges(releases: Iterable[str], order: Sequence[str]) -> str:
    """``releases`` as runs of consecutive entries of ``order`` (oldest
    first): the first and last of a run of two or more joined by an en dash
    (``1.26.0`` dash ``2.13.0``), a run of one as it is, runs joined by
    ``", "``; releases ``order`` does not hold follow as given; ``""`` for
    none."""
    runs, others = release_runs(releases, order)
    words = [f"{run[0]}{DASH}{run[-1]}" if len(run) > 1 else run[0] for run in runs]
    return ", ".join([*words, *others])
