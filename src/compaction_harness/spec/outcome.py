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

    ``violations``: what the checkers found (for a pipeline run: the new ones,
    see ``triaged``). ``known``: (violation, known fault id) for violations a
    run already recognised as known upstream faults and went on past.
    ``triaged``: the runner sorted known from new itself (pipeline runs do,
    as they go), so ``violations`` holds only new ones.
    """

    violations: list[Violation]
    expected: dict[str, Any]
    observed: dict[str, Any]
    not_applicable: list[str] = field(default_factory=list)
    known: list[tuple[Violation, str]] = field(default_factory=list)
    triaged: bool = False
    #: What the run did, for Hypothesis's statistics (pipeline scripts).
    labels: list[str] = field(default_factory=list)
