"""What one run of a case produced, whatever the SDK that ran it.

:class:`UnitOutcome` is the result every case runner returns (unit, token,
metamorphic and pipeline cases on google-adk; scripts and recorded sessions
on both SDKs): the violations found, what was expected and observed, and the
violations a run already recognised as known upstream faults. Pure: imports
only :mod:`compaction_harness.spec` and the standard library.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .invariants import Violation

__all__ = ["UnitOutcome"]


@dataclass
class UnitOutcome:
    """What one run of a case produced.

    A run records; it never classifies. ``violations``: what the checkers
    found, in the order found (a pipeline run: operation by operation).
    ``batches``: how many of ``violations`` each operation that found any
    found, in order (None: not grouped by operation). ``ran``: the case as far
    as the run went, what a classification re-runs with fixes (None: the
    case itself; a run that stopped at an exception ran a prefix of it).

    Classification by fix, after the run, returns a copy with ``triaged``
    set: ``violations`` then holds only new ones (of a grouped run, the new
    ones of the first operation that found any), ``known`` (violation, known
    fault id) for the rest.
    """

    violations: list[Violation]
    expected: dict[str, Any]
    observed: dict[str, Any]
    not_applicable: list[str] = field(default_factory=list)
    known: list[tuple[Violation, str]] = field(default_factory=list)
    triaged: bool = False
    #: What the run did, for Hypothesis's statistics (pipeline scripts).
    labels: list[str] = field(default_factory=list)
    batches: list[int] | None = None
    ran: Any = None
