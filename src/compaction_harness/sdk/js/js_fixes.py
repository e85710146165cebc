"""ADK-JS's fixes: named patches of ``@google/adk``'s own code, applied by the Node driver.

A fix of ADK for TypeScript is an entry of ``sdks/adk-js/fixes/index.json``
(a JSON object: fix name -> ``{"faults": [fault id, ...], "summary": one
line, "diff": file name}``, and optionally ``"variants": [file name, ...]``)
and a unified diff beside it, against the installed package as npm ships it
(paths ``a/dist/esm/...``, relative to the package's folder: the JavaScript
the driver runs; the TypeScript sources are not in the package).
:func:`patched_package` makes, once per set of fixes, a copy of the
package's ``package.json`` and ``dist/esm/`` with the diffs applied in the
index's order by GNU ``patch`` (no fuzz, offsets allowed), under
``sdks/adk-js/node_modules/.harness-fixed/<hash>/`` (inside ``node_modules``,
so the copy's own imports of its dependencies resolve as the package's do);
the Node driver (``driver.mjs``) runs a request on that copy when the
request's ``"entry"`` names it (one Node process loads every copy it is
asked for, once each). Several fixes of one file compose
as patches do: hunk by hunk, so the diffs are written to change disjoint
lines (hunks with one line of context, or none beside a line another fix
changes), and they are always applied in the index's order.

Where two fixes must change the same line, the later one's entry lists
``"variants"``: further diff files of the same fix, each written against the
package with the earlier, conflicting fix applied (and holding only the
files where the two meet). The fix is applied file by file: for each file of
its own diff, the first of its own section and then the variants' sections
for that file that applies cleanly (``patch --dry-run``, no fuzz) is
applied. So a fix applies alone (its own diff) and after the fix it meets
(the variant), and both variants' semantics are written out in full: a
variant is the two changes combined, not either one.

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
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from ..protocol import FixDoesNotApply, patch_binary

__all__ = [
    "INDEX",
    "JsFix",
    "JsFixError",
    "active",
    "fix_named",
    "js_fixes",
    "patched_package",
]

ROOT = Path(__file__).resolve().parents[4]
SDK_DIR = ROOT / "sdks" / "adk-js"
INDEX = SDK_DIR / "fixes" / "index.json"
PACKAGE_DIR = SDK_DIR / "node_modules" / "@google" / "adk"
PATCHED = SDK_DIR / "node_modules" / ".harness-fixed"


class JsFixError(FixDoesNotApply):
    """An ADK-JS fix that cannot be applied (one line, naming the fix)."""


@dataclass(frozen=True)
class JsFix:
    """One named fix of ADK-JS.

    Attributes:
        name: a stable slug (``FIXES=name,...``).
        faults: the known ADK-JS fault ids it removes.
        summary: one line: what the patched code does differently.
        diff: the file name under ``sdks/adk-js/fixes/``.
        variants: further diff files of the same fix (same folder), each
            written against the package with an earlier fix it meets on a
            line applied; tried file by file after ``diff``'s own section.
    """

    name: str
    faults: tuple[str, ...]
    summary: str
    diff: str
    variants: tuple[str, ...] = ()

    def diff_text(self) -> str:
        return (INDEX.parent / self.diff).read_text(encoding="utf-8")

    def variant_texts(self) -> tuple[str, ...]:
        return tuple((INDEX.parent / v).read_text(encoding="utf-8") for v in self.variants)


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
        variants = entry.get("variants", [])
        if not isinstance(variants, list) or not all(isinstance(v, str) for v in variants):
            raise JsFixError(f"{INDEX.name}: fix {name!r} has variants that are not file names")
        for file_name in (diff, *variants):
            if not (INDEX.parent / file_name).is_file():
                raise JsFixError(
                    f"{INDEX.name}: fix {name!r} names {file_name}, which is not there"
                )
        out[name] = JsFix(name, tuple(faults), summary, diff, tuple(variants))
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
    the index; ``all,-a,-b`` -> every fix but ``a`` and ``b``; a list -> its
    names that the index holds, in the list's order; unset, empty or
    ``none`` -> ()."""
    spec = (os.environ.get("HARNESS_FIXES") or "").strip()
    if spec in ("", "none"):
        return ()
    fixes = js_fixes()
    if spec == "all":
        return tuple(fixes)
    names = [n.strip() for n in spec.split(",") if n.strip()]
    if names and names[0] == "all":  # all,-name,...: every fix but those
        out = {n[1:] for n in names[1:] if n.startswith("-")}
        return tuple(n for n in fixes if n not in out)
    return tuple(dict.fromkeys(n for n in names if n in fixes))


def _patch_binary() -> str:
    return patch_binary(shutil.which("patch"), "applying an ADK-JS fix", JsFixError)


_HUNK = re.compile(r"@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")


def _sections(diff_text: str) -> list[tuple[str, str]]:
    """A unified diff cut into its files' sections: (path after ``--- ``, text).
    A hunk's lines are counted, so a removed line that reads ``-- ...`` is
    not taken for the start of another file."""
    lines = diff_text.splitlines(keepends=True)
    out: list[tuple[str, str]] = []
    old = new = 0  # the lines the current hunk still has
    for i, line in enumerate(lines):
        if old > 0 or new > 0:
            if line.startswith(("-", " ")) or line.strip() == "":
                old -= 1
            if line.startswith(("+", " ")) or line.strip() == "":
                new -= 1
        elif line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            out.append((line[4:].split("\t")[0].strip(), ""))
        elif (hunk := _HUNK.match(line)) is not None:
            old = 1 if hunk.group(1) is None else int(hunk.group(1))
            new = 1 if hunk.group(2) is None else int(hunk.group(2))
        if out:
            out[-1] = (out[-1][0], out[-1][1] + line)
    return out


def _patch(work: Path, text: str, *, dry_run: bool) -> bool:
    done = subprocess.run(
        [
            _patch_binary(),
            "-p1",
            "--batch",
            "--forward",
            "--silent",
            "--fuzz=0",
            *(["--dry-run"] if dry_run else []),
            "-d",
            work,
        ],
        input=text,
        capture_output=True,
        text=True,
        check=False,
    )
    return done.returncode == 0


def _apply(fix: JsFix, work: Path) -> bool:
    """Applies ``fix`` to the copy in ``work``, file by file: its own section
    of the file, else the first of its variants' sections of it that applies
    cleanly. False (with nothing of the fix applied) when a file has none."""
    variants = [_sections(text) for text in fix.variant_texts()]
    chosen: list[str] = []
    for path, own in _sections(fix.diff_text()):
        candidates = [own, *(text for variant in variants for p, text in variant if p == path)]
        found = next((c for c in candidates if _patch(work, c, dry_run=True)), None)
        if found is None:
            return False
        chosen.append(found)
    return all(_patch(work, text, dry_run=False) for text in chosen)


def patched_package(names: tuple[str, ...]) -> Path | None:
    """The entry module (``dist/esm/index.js``) of a copy of the installed
    ``@google/adk`` with the fixes ``names`` applied in the index's order
    (whatever the order of ``names``), each file of a fix by its own diff or
    else by a variant of it (see the module's docstring), made once per set
    of fixes and package text (later calls find it); None for no fix.
    Raises :class:`JsFixError` for an unknown name or a diff that does not
    apply, and ``FileNotFoundError`` when the package is not installed."""
    if not names:
        return None
    wanted = [fix_named(n) for n in dict.fromkeys(names)]
    fixes = [fix for fix in js_fixes().values() if fix in wanted]
    manifest = PACKAGE_DIR / "package.json"
    digest = hashlib.sha256(manifest.read_bytes())
    for fix in fixes:
        digest.update(fix.name.encode() + b"\0" + fix.diff_text().encode())
        for text in fix.variant_texts():
            digest.update(b"\0" + text.encode())
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
            if not _apply(fix, work):
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
