"""ADK-JS's fixes: named patches of ``@google/adk``'s own code, applied by the Node driver.

A fix of ADK for TypeScript is an entry of ``sdks/adk-js/fixes/index.json``
(a JSON object: fix name -> ``{"faults": [fault id, ...], "summary": one
line, "diff": file name}``) and a unified diff beside it, against the
installed package as npm ships it (paths ``a/dist/esm/...``, relative to the
package's folder: the JavaScript the driver runs; the TypeScript sources are
not in the package). :func:`patched_package` makes, once per set of fixes, a
copy of the package's ``package.json`` and ``dist/esm/`` with the diffs
applied in order by GNU ``patch`` (no fuzz, offsets allowed), under
``sdks/adk-js/node_modules/.harness-fixed/<hash>/`` (inside ``node_modules``,
so the copy's own imports of its dependencies resolve as the package's do);
the Node driver (``driver.mjs``) imports that copy instead of the package
when ``HARNESS_ADK_JS_ENTRY`` names it. Several fixes of one file compose
as patches do: hunk by hunk.

``HARNESS_FIXES`` (``make ... SDK=js FIXES=``) names ADK-JS fixes as it names
google-adk's: ``all`` is every fix of the index, a list takes the names the
index holds (google-adk's names in the list are left to the Python side).

Errors: :class:`JsFixError` (one line) for an unreadable index, an unknown
name, a diff that does not apply to the installed package, or no GNU patch.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

__all__ = [
    "INDEX",
    "JsFix",
    "JsFixError",
    "active",
    "fix_named",
    "js_fixes",
    "patched_package",
]

ROOT = Path(__file__).resolve().parents[3]
SDK_DIR = ROOT / "sdks" / "adk-js"
INDEX = SDK_DIR / "fixes" / "index.json"
PACKAGE_DIR = SDK_DIR / "node_modules" / "@google" / "adk"
PATCHED = SDK_DIR / "node_modules" / ".harness-fixed"


class JsFixError(ValueError):
    """An ADK-JS fix that cannot be applied (one line, naming the fix)."""


@dataclass(frozen=True)
class JsFix:
    """One named fix of ADK-JS.

    Attributes:
        name: a stable slug (``FIXES=name,...``).
        faults: the known ADK-JS fault ids it removes.
        summary: one line: what the patched code does differently.
        diff: the file name under ``sdks/adk-js/fixes/``.
    """

    name: str
    faults: tuple[str, ...]
    summary: str
    diff: str

    def diff_text(self) -> str:
        return (INDEX.parent / self.diff).read_text(encoding="utf-8")


@cache
def js_fixes() -> dict[str, JsFix]:
    """Every ADK-JS fix of the index, by name, in the index's order (none
    when the index does not exist). Raises :class:`JsFixError` for an index
    that is not an object of ``{faults, summary, diff}`` entries, or names a
    diff that is not there."""
    if not INDEX.exists():
        return {}
    try:
        document = json.loads(INDEX.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise JsFixError(f"{INDEX.name}: unreadable ({exc})") from None
    if not isinstance(document, dict):
        raise JsFixError(f"{INDEX.name}: not a JSON object of fix name -> entry")
    out: dict[str, JsFix] = {}
    for name, entry in document.items():
        if not isinstance(entry, dict):
            raise JsFixError(f"{INDEX.name}: fix {name!r} is not an object")
        faults, summary, diff = entry.get("faults"), entry.get("summary"), entry.get("diff")
        if not isinstance(faults, list) or not all(isinstance(f, str) for f in faults):
            raise JsFixError(f"{INDEX.name}: fix {name!r} has no list of faults")
        if not isinstance(summary, str) or not isinstance(diff, str):
            raise JsFixError(f"{INDEX.name}: fix {name!r} needs a summary and a diff file name")
        if not (INDEX.parent / diff).is_file():
            raise JsFixError(f"{INDEX.name}: fix {name!r} names {diff}, which is not there")
        out[name] = JsFix(name, tuple(faults), summary, diff)
    return out


def fix_named(name: str) -> JsFix:
    """The ADK-JS fix called ``name``; :class:`JsFixError` naming the known ones."""
    fixes = js_fixes()
    if name not in fixes:
        known = ", ".join(sorted(fixes)) or "none"
        raise JsFixError(f"no ADK-JS fix named {name!r} (known: {known})")
    return fixes[name]


def active() -> tuple[str, ...]:
    """The ADK-JS fixes ``HARNESS_FIXES`` asks for: ``all`` -> every fix of
    the index; a list -> its names that the index holds, in the list's order;
    unset, empty or ``none`` -> ()."""
    spec = (os.environ.get("HARNESS_FIXES") or "").strip()
    if spec in ("", "none"):
        return ()
    fixes = js_fixes()
    if spec == "all":
        return tuple(fixes)
    names = [n.strip() for n in spec.split(",") if n.strip()]
    return tuple(dict.fromkeys(n for n in names if n in fixes))


def _patch_binary() -> str:
    found = shutil.which("patch")
    if found is None:
        raise JsFixError(
            "applying an ADK-JS fix needs GNU patch on PATH (as root: apt-get install patch)"
        )
    return found


def patched_package(names: tuple[str, ...]) -> Path | None:
    """The entry module (``dist/esm/index.js``) of a copy of the installed
    ``@google/adk`` with the fixes ``names`` applied in order, made once per
    set of fixes and package text (later calls find it); None for no fix.
    Raises :class:`JsFixError` for an unknown name or a diff that does not
    apply, and ``FileNotFoundError`` when the package is not installed."""
    if not names:
        return None
    fixes = [fix_named(n) for n in names]
    manifest = PACKAGE_DIR / "package.json"
    digest = hashlib.sha256(manifest.read_bytes())
    for fix in fixes:
        digest.update(fix.name.encode() + b"\0" + fix.diff_text().encode())
    target = PATCHED / digest.hexdigest()[:16]
    entry = target / "dist" / "esm" / "index.js"
    if entry.exists():
        return entry
    PATCHED.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="building-", dir=PATCHED) as folder:
        work = Path(folder) / "package"
        (work / "dist").mkdir(parents=True)
        shutil.copy2(manifest, work / "package.json")
        shutil.copytree(PACKAGE_DIR / "dist" / "esm", work / "dist" / "esm")
        for fix in fixes:
            done = subprocess.run(
                [
                    _patch_binary(),
                    "-p1",
                    "--batch",
                    "--forward",
                    "--silent",
                    "--fuzz=0",
                    "-d",
                    work,
                ],
                input=fix.diff_text(),
                capture_output=True,
                text=True,
                check=False,
            )
            if done.returncode != 0:
                version = json.loads(manifest.read_text(encoding="utf-8")).get("version")
                together = f" (after {', '.join(n.name for n in fixes[: fixes.index(fix)])})"
                raise JsFixError(
                    f"the ADK-JS fix {fix.name} does not apply to @google/adk {version}"
                    + (together if fixes.index(fix) else "")
                )
        try:
            work.rename(target)  # atomic; another process may have made it first
        except OSError:
            if not entry.exists():
                raise
    return entry
