"""What every test :mod:`compaction_harness.surfaces.export` writes shares: its head and its name.

An exported test (:mod:`compaction_harness.surfaces.export` for unit and token
fixtures, :mod:`compaction_harness.surfaces.export_pipeline` for script and pipeline
fixtures) starts with adk-python's Apache-2.0 header, a docstring naming the
fixture, what failed and the fix that makes it pass, and its imports sorted
as adk-python sorts them (:func:`module_head`, :func:`used_imports`); its
test function is named after the fixture (:func:`name_of_test`). A fixture
without a faithful upstream form raises :class:`ExportError`.

Imports the fixture store and the layout of :mod:`compaction_harness.surfaces._pysource`;
the registered fixes lazily (:func:`fault_fixes`).
"""

from __future__ import annotations

import ast
import datetime
import textwrap
from collections.abc import Iterable

from ..store.fixtures import Fixture
from ._pysource import LINE_LENGTH

__all__ = [
    "ExportError",
    "fault_fixes",
    "license_header",
    "module_head",
    "name_of_test",
    "patch_name",
    "used_imports",
]


class ExportError(ValueError):
    """The fixture has no faithful upstream test form; ``str()`` is one line
    naming the fixture and the reason."""


#: adk-python's license header, as its test files carry it (the year is the
#: year the file was written: ``tests/unittests/apps/test_compaction.py``
#: says 2026, older files 2025).
_LICENSE = """\
# Copyright {year} Google LLC
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.
"""


def license_header(year: int | None = None) -> str:
    """adk-python's Apache-2.0 header for a file written in ``year``
    (default: this year), ending with a newline."""
    return _LICENSE.format(year=year or datetime.date.today().year)


def fault_fixes(fixture: Fixture) -> list[str]:
    """The registered fixes of ``fixture``'s known fault that the installed
    google-adk can take (none for an unmarked or ADK-JS fixture)."""
    if not fixture.known_fault or getattr(fixture, "is_js", False):
        return []
    from ..sdk.python.fixes import fixes_for, unavailable

    return [f.name for f in fixes_for(fixture.known_fault) if unavailable(f) is None]


def patch_name(fixture: Fixture) -> str:
    """The file name of the fix's patch beside the exported test."""
    return name_of_test(fixture) + ".patch"


def used_imports(imports: Iterable[str], rest: list[str]) -> list[str]:
    """The lines of ``imports`` whose name the module's ``rest`` (its lines
    after the imports) reads, so that no export imports what it does not use
    (pyflakes' F401): ``import x`` binds ``x``, ``from m import x [as y]``
    binds ``x`` (``y``)."""
    tree = ast.parse("\n".join(rest))
    read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    return [line for line in imports if line.split()[-1] in read]


def _where(fixture: Fixture) -> str:
    return str(fixture.path) if fixture.path else fixture.file_name()


def module_head(fixture: Fixture, imports: list[str], *, year: int | None = None) -> list[str]:
    """License header, module docstring (where the test comes from and what
    failed) and ``imports`` (import lines), sorted as adk-python sorts them
    (isort's google profile: one import a line, standard library first,
    sorted by module within each section), followed by one blank line (a
    second one goes before a ``def`` or ``class``, as pyink wants)."""
    name = fixture.path.name if fixture.path else fixture.file_name()
    found = f"{fixture.invariant} failed on google-adk {fixture.adk_release}"
    if fixture.known_fault:
        found += f" (known fault {fixture.known_fault})"
    doc = [f"From compaction-harness fixture {name}: {found}."]
    doc += [f"  {v}" for v in fixture.violations]
    fixes = fault_fixes(fixture)
    if fixes:
        doc.append(
            f"The fix ({patch_name(fixture)} beside this file, compaction-harness's fix "
            f"{', '.join(fixes)}, a diff of google-adk's own source) makes it pass."
        )
    lines = [*license_header(year).splitlines(), ""]
    lines.append('"""Regression test for ADK event compaction, from compaction-harness.')
    lines.append("")
    for paragraph in doc:
        indent = "  " if paragraph.startswith("  ") else ""
        wrapped = textwrap.wrap(
            _docstring_safe(paragraph.strip()),
            LINE_LENGTH,
            initial_indent=indent,
            subsequent_indent=indent + ("  " if indent else ""),
            break_on_hyphens=False,
            break_long_words=True,
        )
        lines += wrapped
    lines.append('"""')
    lines.append("")
    stdlib = sorted({i for i in imports if i.split()[1].split(".")[0] in _STDLIB})
    others = sorted(set(imports) - set(stdlib), key=_import_key)
    if stdlib:
        lines += [*stdlib, ""]
    lines += others
    return [*lines, ""]


#: The standard-library modules exported tests import (isort's first section).
_STDLIB = {"asyncio", "inspect"}


def _import_key(line: str) -> tuple[str, str]:
    words = line.split()
    return (words[1].lower(), words[3].lower() if len(words) > 3 else "")


def _docstring_safe(text: str) -> str:
    return text.replace("\\", "/").replace('"""', "'''")


def name_of_test(fixture: Fixture) -> str:
    """``test_`` and the fixture's file name, as a Python name."""
    stem = fixture.path.stem if fixture.path else fixture.file_name()[:-5]
    return "test_" + "".join(ch if ch.isalnum() else "_" for ch in stem).lower()
