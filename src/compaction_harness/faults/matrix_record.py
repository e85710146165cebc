"""The release matrix record as the fault catalogue reads it.

``make matrix`` (:mod:`compaction_harness.surfaces.matrix`) writes the record
(``docs/release-matrix.json``): releases as columns, known faults,
invariants and fixtures as rows, each cell in one of four states. The
catalogue derives each google-adk fault's releases from the committed record
(:func:`derived_releases`), so what both read of it lives here, below both:
the cell states, the suffix of a column that runs a release with every fix
applied (:data:`FIXED`, no release of its own), and the derivation.

Imports nothing else of the package.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["FAILS", "FIXED", "HOLDS", "KNOWN", "NOT_APPLICABLE", "derived_releases"]

#: The four states of a cell.
HOLDS, FAILS, KNOWN, NOT_APPLICABLE = "holds", "fails", "known fault", "n/a"

#: The suffix of a column that runs a release with every fix applied.
FIXED = "+fixes"


def derived_releases(matrix: Mapping[str, Any]) -> dict[str, list[str]]:
    """Known fault id -> the releases of the matrix on which it shows (fixed
    columns are no release)."""
    return {
        fault: [
            r
            for r in matrix["releases"]
            if not r.endswith(FIXED) and cells.get(r, {}).get("state") == KNOWN
        ]
        for fault, cells in matrix["rows"]["faults"].items()
    }
