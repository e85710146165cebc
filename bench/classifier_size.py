"""How many lines of code decide "known fault or new" (issue: known faults are fixes).

Counts code lines (not blank, not comments, not docstrings) of the modules
that classify violations, for both SDKs, and prints one row per module and
the total. The fault records' prose (the rows of ``faults/records_python.py``
and ``faults/records_js.py``) is not code and is left out; the fix mechanism
(applying a diff, ``sdk/python/fixes.py``) and the fixes themselves (the
diffs) are listed apart: they are what a re-run applies, not rules about
violations.

Usage: ``python bench/classifier_size.py`` from the project's root.
"""

from __future__ import annotations

import ast
import io
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "compaction_harness"

#: (file, top-level names to count (None: the whole module), names to leave out).
DECIDING = [
    (PACKAGE / "faults" / "classify.py", None, ()),
    (PACKAGE / "sdk" / "python" / "triage.py", None, ()),
    (PACKAGE / "sdk" / "python" / "reruns.py", None, ()),
    (PACKAGE / "sdk" / "python" / "known_faults.py", None, ("KNOWN_FAULTS",)),
    (PACKAGE / "faults" / "catalogue.py", None, ("_ENTRIES",)),
    (PACKAGE / "sdk" / "js" / "triage.py", "classification", ()),
]
INSTRUMENT = [PACKAGE / "sdk" / "python" / "fixes.py", PACKAGE / "sdk" / "js" / "js_fixes.py"]


def _docstring_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                lines.update(range(body[0].lineno, (body[0].end_lineno or body[0].lineno) + 1))
    return lines


def _code_lines(text: str, spans: list[tuple[int, int]] | None) -> int:
    tree = ast.parse(text)
    skip = _docstring_lines(tree)
    code: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type in (
            tokenize.COMMENT,
            tokenize.NL,
            tokenize.NEWLINE,
            tokenize.INDENT,
            tokenize.DEDENT,
            tokenize.ENDMARKER,
        ):
            continue
        code.update(range(tok.start[0], tok.end[0] + 1))
    code -= skip
    if spans is not None:
        code = {n for n in code if any(a <= n <= b for a, b in spans)}
    return len(code)


def _spans(
    text: str, marker: str | None, left_out: tuple[str, ...]
) -> list[tuple[int, int]] | None:
    tree = ast.parse(text)
    named = []
    for node in tree.body:
        names = [getattr(node, "name", None)]
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [getattr(t, "id", None) for t in targets]
        named.append((names, node))
    if marker is None:
        return [
            (n.lineno, n.end_lineno or n.lineno)
            for names, n in named
            if not any(x in left_out for x in names if x)
        ]
    # A module with a section for classification: the names listed in its
    # CLASSIFICATION tuple, when it has one; otherwise nothing of it.
    listed: set[str] = set()
    for names, node in named:
        if "CLASSIFICATION" in names and isinstance(node, ast.Assign | ast.AnnAssign):
            listed = {e.value for e in ast.walk(node) if isinstance(e, ast.Constant)}
    return [
        (n.lineno, n.end_lineno or n.lineno)
        for names, n in named
        if any(x in listed for x in names if x) or "CLASSIFICATION" in names
    ]


def main() -> int:
    total = 0
    print(f"{'module':56} code lines")
    for path, marker, left_out in DECIDING:
        if not path.exists():
            continue
        text = path.read_text(encoding="utf-8")
        n = _code_lines(text, _spans(text, marker, left_out))
        total += n
        print(f"{path.relative_to(ROOT)!s:56} {n}")
    print(f"{'deciding known or new, both SDKs':56} {total}")
    for path in INSTRUMENT:
        if path.exists() and path.suffix == ".py":
            n = _code_lines(path.read_text(encoding="utf-8"), None)
            print(f"{str(path.relative_to(ROOT)) + ' (instrument)':56} {n}")
        elif path.exists():
            lines = [
                line
                for line in path.read_text(encoding="utf-8").splitlines()
                if line.strip() and not line.strip().startswith("//")
            ]
            print(f"{str(path.relative_to(ROOT)) + ' (instrument)':56} {len(lines)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
