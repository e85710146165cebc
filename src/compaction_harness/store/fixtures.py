"""The repro fixture store: shrunk failures as readable, replayable JSON.

Schema (version 3)::

    {
      "schema_version": 3,
      "kind": "unit",                       # what `call` means
      "invariant": "U3",                    # the first invariant that failed
      "adk_release": "2.11.0",              # the google-adk release it was found on
      "sdk": "python",                      # optional: "python" (the default) or
                                            # "adk-js" (see below)
      "call": {"window": [0, 1, 2]},        # unit: the window, as step indices;
                                            # token: {"retention": 2}
      "session": {"steps": [...]},          # compaction_harness.spec.model.Session
      "expected": {...},                    # the reference's answers
      "observed": {...},                    # ADK's answers
      "violations": ["U3: ..."],            # what the checkers said
      "known_fault": "slug",                # optional: see known_faults.py
      "also_shows": ["slug"],               # optional: other known faults its
                                            # classification names
      "shrinking": "cut short ..."          # optional: the campaign's budget
                                            # ended shrinking early
    }

Version 2 added the optional ``shrinking`` field, for pipeline fixtures
``call.invariants``, and the kind ``script`` (a pipeline script: ``call``
holds the script, see :mod:`compaction_harness.spec.scripts`, and there is no
``session``: the events it stored are in ``observed.session``); a version 1
document is read as version 2 unchanged (:data:`UPGRADES`).

Version 3 added the optional ``sdk`` field: ``"python"`` (google-adk; a
document without it, or of version 1 or 2, is one) or ``"adk-js"`` (ADK for
TypeScript, ``@google/adk``, run through :mod:`compaction_harness.sdk.js.adk_js`).
An ``adk-js`` fixture is of kind ``script`` (the same script format: only
the SDK that runs it differs) and, instead of ``adk_release``, carries
``"package_version": "2.0.0"`` (the installed ``@google/adk`` it was found
on) and ``"compactor": {"name": "token_based", "options": {...}}`` (the
ADK-JS compactor and its constructor options, see
:class:`~compaction_harness.sdk.js.adk_js.JsCompactor`); its ``known_fault`` names
an entry of ``adk_js.KNOWN_FAULTS``. Its file is named
``<invariant>-adk-js-<package version>-<hash>.json``, which no google-adk
release number can produce. A version 2 reader refuses such a file ("unknown
field 'sdk'") rather than misreading it as a Python fixture.

The store knows no SDK: a fixture's ``sdk`` is a key of the driver
registry's SDKs (:func:`compaction_harness.sdk.protocol.sdks`), and that
SDK's entry reads and writes what is its own (its release field, its kinds,
its case: ``Sdk.read``/``Sdk.write``), names its file (``Sdk.file_tag``) and
says which known faults it has (``Sdk.fault``). Every field this docstring
names for google-adk and ADK-JS is read by ``sdk/python/entry.py`` and
``sdk/js/entry.py``; another SDK registered there gets fixtures the same way.

Loading is strict and executes nothing from the file: it is parsed with
:func:`json.loads` and checked field by field; any problem raises
:class:`FixtureError` whose message names the file and the problem. Writing
is atomic and never overwrites: the file is written under a temporary name
in the same folder and hard-linked to its final name, which is the content
hash of what identifies the failure, so concurrent workers that shrink to the
same example produce one file and never a torn one.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import DEFAULT_ADK_RELEASE
from ..sdk import protocol
from ..spec.invariants import INVARIANTS
from ..spec.model import ModelError, Session

__all__ = [
    "MAX_FIXTURE_BYTES",
    "SCHEMA_VERSION",
    "Fixture",
    "FixtureError",
    "fallback_repro_dir",
    "load_fixture",
    "newer_than_known",
    "unjudged_advice",
    "unwritable",
    "write_fixture",
]

SCHEMA_VERSION = 3
#: The newest google-adk release the harness knows: its pin. A fixture of a
#: newer release of its SDK (each SDK says which, ``Sdk.newer_than_known``)
#: loads with a warning in show and replay, and the gate refuses it.
NEWEST_KNOWN_RELEASE = DEFAULT_ADK_RELEASE
MAX_FIXTURE_BYTES = 5_000_000
KNOWN_INVARIANTS = tuple(INVARIANTS)
_REQUIRED = ("schema_version", "kind", "invariant", "call")
#: What every fixture may carry, whatever its SDK; each SDK adds its own
#: fields (:attr:`compaction_harness.sdk.protocol.Sdk.fields`).
_OPTIONAL = (
    "sdk",
    "session",
    "expected",
    "observed",
    "violations",
    "known_fault",
    "also_shows",
    "note",
    "shrinking",
)


def _from_version_1(data: dict[str, Any]) -> dict[str, Any]:
    """Version 2 only added optional fields: a version 1 document is valid as is."""
    return {**data, "schema_version": 2}


def _from_version_2(data: dict[str, Any]) -> dict[str, Any]:
    """Version 3 only added ``sdk`` (absent: ``"python"``) and the ADK-JS fields."""
    return {**data, "schema_version": 3}


#: schema version -> function turning such a document into the next version's.
UPGRADES = {1: _from_version_1, 2: _from_version_2}


class FixtureError(ValueError):
    """A fixture cannot be loaded; ``str()`` is one line naming file and problem."""


@dataclass(frozen=True)
class Fixture:
    """A loaded fixture. ``case`` is what gets replayed (for ``sdk`` ``"adk-js"``
    an :class:`~compaction_harness.sdk.js.adk_js.JsCase`). ``adk_release`` is the
    version of the SDK ``sdk`` names that it was found on (for ADK-JS the
    ``package_version``, never a google-adk release)."""

    kind: str
    invariant: str
    adk_release: str
    case: Any
    expected: dict[str, Any]
    observed: dict[str, Any]
    violations: tuple[str, ...] = ()
    known_fault: str | None = None
    #: Other known faults the fixture shows (its classification names them,
    #: by their fixes) that no fixture of their own is marked with: the
    #: minimal script recorded for one fault may show it only beside another.
    also_shows: tuple[str, ...] = ()
    note: str | None = None
    shrinking: str | None = None
    path: Path | None = None
    #: The SDK it runs on: a key of the driver registry's SDKs
    #: (:func:`compaction_harness.sdk.protocol.sdks`; ``"python"``: google-adk).
    sdk: str = "python"

    @property
    def is_js(self) -> bool:
        """Whether it runs on ADK for TypeScript (``sdk == "adk-js"``): for
        ADK-JS's own surfaces (the cross-SDK table, export); the store, the
        verdicts, the command line and the plugin ask :meth:`sdk_entry`."""
        return self.sdk == "adk-js"

    def sdk_entry(self) -> protocol.Sdk:
        """The registry's entry of the SDK it runs on (``protocol.sdk_named``)."""
        return protocol.sdk_named(self.sdk)

    def _sdk_fields(self) -> dict[str, Any]:
        return self.sdk_entry().write(self.adk_release, self.case)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "kind": self.kind,
            "invariant": self.invariant,
            **self._sdk_fields(),
            "call": self.case.call_json(),
            **self._session(),
            "expected": self.expected,
            "observed": self.observed,
            "violations": list(self.violations),
        }
        if self.known_fault:
            out["known_fault"] = self.known_fault
        if self.also_shows:
            out["also_shows"] = list(self.also_shows)
        if self.note:
            out["note"] = self.note
        if self.shrinking:
            out["shrinking"] = self.shrinking
        return out

    def _session(self) -> dict[str, Any]:
        # A script fixture's input is the script (in `call`); the events it
        # stored are what it observed.
        return {} if self.kind == "script" else {"session": self.case.session.to_json()}

    def identity(self) -> str:
        """Content hash of what identifies the failure (not the answers)."""
        key = {
            "kind": self.kind,
            "invariant": self.invariant,
            **self._sdk_fields(),  # a Python fixture's key is as it was in version 2
            "call": self.case.call_json(),
            **self._session(),
        }
        blob = json.dumps(key, sort_keys=True, separators=(",", ":")).encode()
        return hashlib.sha256(blob).hexdigest()[:16]

    def file_name(self) -> str:
        """``<invariant>-<release>-<hash>.json``; another SDK than google-adk
        tags the release (ADK-JS: ``<invariant>-adk-js-<package version>-<hash>.json``)."""
        tag = self.sdk_entry().file_tag
        return f"{self.invariant}-{tag}{self.adk_release}-{self.identity()}.json"


def unjudged_advice(path: str | os.PathLike[str]) -> str:
    """What the gate tells a user whose fixture ``path`` fails with no known
    fault to explain it (a new failure, or a fix that falls short): one
    paragraph naming the fixture, the command that shows it, and the one
    command that keeps it out of the gate until it is judged (the project's
    ``docs/findings/``, which the gate does not replay)."""
    path = Path(path)
    try:
        shown = path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        shown = path
    return (
        f"{shown} fails with no known fault to explain it (no fix removes it): a new "
        f"finding. Read it with `make show FIXTURE={shown}` and judge it from the SDK's "
        f"source. Until it is judged, `mkdir -p docs/findings && mv {shown} docs/findings/` "
        "keeps it out of the gate (the gate does not replay docs/findings/)."
    )


def dumps(fixture: Fixture) -> str:
    """The fixture as text: indented, one session step per line, short lists inline."""
    return _pretty(fixture.to_json(), 0) + "\n"


def _pretty(value: Any, depth: int, rows: bool = False) -> str:
    """JSON with containers of scalars on one line; ``rows`` puts each element on one line."""
    pad, inner = "  " * depth, "  " * (depth + 1)
    scalar_only = all(not isinstance(v, dict | list) for v in _members(value))
    if not isinstance(value, dict | list) or not value or scalar_only:
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        items = [
            f"{inner}{json.dumps(k)}: {_pretty(v, depth + 1, k == 'steps')}"
            for k, v in value.items()
        ]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    lines = [
        inner + (json.dumps(v, ensure_ascii=False) if rows else _pretty(v, depth + 1))
        for v in value
    ]
    return "[\n" + ",\n".join(lines) + "\n" + pad + "]"


def _members(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return list(value.values())
    return list(value) if isinstance(value, list) else []


def write_fixture(fixture: Fixture, directory: Path) -> tuple[Path, bool]:
    """Write ``fixture`` into ``directory``; returns (path, whether it was new).

    Atomic and never overwriting: an existing file with the same name holds
    the same failure and is left as it is.
    """
    directory.mkdir(parents=True, exist_ok=True)
    final = directory / fixture.file_name()
    if final.exists():
        return final, False
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(dumps(fixture))
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes it private; fixtures are ordinary files
        try:
            os.link(tmp, final)
            return final, True
        except FileExistsError:
            return final, False
    finally:
        os.unlink(tmp)


def unwritable(directory: Path) -> str | None:
    """Why fixtures cannot be written into ``directory`` (one line), or None:
    creates it if needed and writes and removes a probe file, so a folder
    that is read-only, or a path under a regular file, is said before any
    search runs rather than when its first failure is lost."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=directory, prefix=".tmp-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        return f"the repro folder {directory} is not writable: {exc.strerror or exc}"
    return None


def fallback_repro_dir() -> Path:
    """Where a campaign writes the fixtures its repro folder refused (and says so)."""
    return Path(tempfile.gettempdir()) / "compaction-harness-repros"


def load_fixture(path: str | os.PathLike[str]) -> Fixture:
    """Load and validate a fixture file; raises :class:`FixtureError`."""
    path = Path(path)
    name = str(path)
    try:
        size = path.stat().st_size
        if size > MAX_FIXTURE_BYTES:
            raise FixtureError(f"{name}: {size} bytes, more than the limit of {MAX_FIXTURE_BYTES}")
        raw = path.read_bytes()
    except FixtureError:
        raise
    except OSError as exc:
        raise FixtureError(f"{name}: cannot read: {exc.strerror or exc}") from None
    try:
        data = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
    except UnicodeDecodeError:
        raise FixtureError(f"{name}: not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise FixtureError(f"{name}: invalid JSON: {exc}") from None
    except ValueError as exc:  # NaN/Infinity, or an integer too long to convert
        problem = "a number with too many digits" if "digits" in str(exc) else str(exc)
        raise FixtureError(f"{name}: invalid JSON: {problem}") from None
    except RecursionError:
        raise FixtureError(f"{name}: JSON nested too deeply") from None
    if _looks_like_a_session(data):
        raise FixtureError(
            f"{name}: an ADK session, not a fixture: judge it with `replay FILE --config JSON` "
            "(or the trigger flags), or make a fixture of it with `minimize`"
        )
    try:
        return _parse(data, path)
    except ModelError as exc:
        raise FixtureError(f"{name}: {exc}") from None


def _looks_like_a_session(data: Any) -> bool:
    """A ``Session`` JSON document (``events`` beside ``app_name``/``id``,
    no ``schema_version``) or a JSON list of ``Event`` documents: what
    ``minimize`` reads, given to a command that wants a fixture."""
    if isinstance(data, list):
        return bool(data) and all(isinstance(e, dict) and "invocation_id" in e for e in data)
    return (
        isinstance(data, dict)
        and "schema_version" not in data
        and isinstance(data.get("events"), list)
    )


def _reject_constant(token: str) -> Any:
    raise ValueError(f"{token} is not a JSON number")


def _parse(data: Any, path: Path) -> Fixture:
    if not isinstance(data, dict):
        raise ModelError(f"expected a JSON object at the top, got {type(data).__name__}")
    for key in _REQUIRED:
        if key not in data:
            raise ModelError(f"missing field {key!r}")
    version = data["schema_version"]
    if type(version) is not int:
        raise ModelError(f"schema_version: expected an integer, got {version!r}")
    names = protocol.sdks()
    sdk = data.get("sdk", next(iter(names)))  # absent: the default SDK (google-adk)
    if sdk not in names:
        raise ModelError(f"sdk: unknown SDK {sdk!r} (known: {', '.join(names)})")
    # The fixture's own SDK is asked first; the others only to name what it lacks.
    entry = protocol.sdk_named(sdk)
    foreign = sorted(set(data) - set(_REQUIRED) - set(_OPTIONAL) - set(entry.fields))
    if foreign:
        owner = next((e for e in protocol.all_sdks() if foreign[0] in e.fields), None)
        if owner is None:
            raise ModelError(f"unknown field {foreign[0]!r}")
    while version in UPGRADES:
        data = UPGRADES[version](data)
        version = data["schema_version"]
    if version != SCHEMA_VERSION:
        raise ModelError(
            f"schema_version {version} is not supported (this harness reads "
            f"{min(UPGRADES, default=SCHEMA_VERSION)} to {SCHEMA_VERSION})"
        )
    if data["kind"] not in entry.kinds:
        kinds = tuple(dict.fromkeys(k for e in protocol.all_sdks() for k in e.kinds))
        if data["kind"] not in kinds:
            raise ModelError(f"kind: unknown kind {data['kind']!r} (known: {', '.join(kinds)})")
    if data["invariant"] not in KNOWN_INVARIANTS:
        raise ModelError(
            f"invariant: unknown invariant {data['invariant']!r} "
            f"(known: {', '.join(KNOWN_INVARIANTS)})"
        )
    release, case = entry.read(data)  # its own checks first: its messages are the clearest
    if foreign:
        noun = owner.fixture_noun(data["kind"]).split(" (")[0]
        raise ModelError(f"{foreign[0]}: only {noun} (sdk {owner.name!r}) has it")
    if data["kind"] == "script" and not getattr(getattr(case, "script", case), "operations", 1):
        # A fixture records a failing script, and a script that runs nothing
        # fails nothing: an emptied one would replay as "ok" and pass the gate.
        raise ModelError("call.operations: empty (a failing script runs at least one operation)")
    violations = _common(data)
    fault = data.get("known_fault")
    if fault and entry.fault(fault) is None:
        raise ModelError(f"known_fault: {fault!r} is not registered in {entry.fault_registry}")
    return Fixture(
        kind=data["kind"],
        invariant=data["invariant"],
        adk_release=release,
        case=case,
        expected=data.get("expected", {}),
        observed=data.get("observed", {}),
        violations=tuple(violations),
        known_fault=fault,
        also_shows=_also_shows(data, lambda f: entry.fault(f) is not None),
        note=data.get("note"),
        shrinking=data.get("shrinking"),
        path=path,
        sdk=sdk,
    )


def newer_than_known(fixture: Fixture) -> str | None:
    """One line when ``fixture`` was found on a release of its SDK newer than
    any the harness knows (:meth:`~compaction_harness.sdk.protocol.Sdk.newer_than_known`:
    its verdicts rest on known faults that were never checked there), else None."""
    entry = fixture.sdk_entry()
    newest = entry.newer_than_known(fixture.adk_release)
    if newest is None:
        return None
    return (
        f"{fixture.path or 'fixture'}: {entry.release_field} {fixture.adk_release} is newer "
        f"than any release this harness knows ({newest}): its known faults were never "
        "checked there"
    )


def _common(data: dict[str, Any]) -> list[str]:
    """Check the answer and annotation fields every fixture may carry; the violations."""
    for key in ("expected", "observed"):
        if key in data and not isinstance(data[key], dict):
            raise ModelError(f"{key}: expected an object")
    if "session" in data.get("observed", {}):
        # The events a script stored, as show renders them: as strict as the input.
        Session.from_json(data["observed"]["session"], "observed.session")
    violations = data.get("violations", [])
    if not isinstance(violations, list) or not all(isinstance(v, str) for v in violations):
        raise ModelError("violations: expected a list of strings")
    for key in ("known_fault", "note", "shrinking"):
        if data.get(key) is not None and not isinstance(data[key], str):
            raise ModelError(f"{key}: expected a string")
    return violations


def _also_shows(data: dict[str, Any], registered) -> tuple[str, ...]:
    """The ``also_shows`` field: a list of registered fault ids (``registered``
    says which are), none of them the ``known_fault``."""
    shows = data.get("also_shows", [])
    if not isinstance(shows, list) or not all(isinstance(f, str) for f in shows):
        raise ModelError("also_shows: expected a list of fault ids")
    for fault in shows:
        if not registered(fault):
            raise ModelError(f"also_shows: {fault!r} is not a registered known fault")
        if fault == data.get("known_fault"):
            raise ModelError(f"also_shows: {fault!r} is the fixture's known_fault already")
    return tuple(shows)
