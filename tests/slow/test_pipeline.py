"""The pipeline: real sessions through many invocations and compactions.

Hypothesis draws a whole script (``strategies.scripts``): a configuration and
a list of operations, plain data that shrinks by deleting and simplifying
operations. The emulating driver (``compaction_harness.sdk.python.driver``) executes it
on real ADK, storing what the ``Runner`` stores for each operation, running
compaction where ADK runs it (before every model call, for the agent that
calls; at every invocation's end), and checks P0 to P7 after every
operation. Violations of known upstream faults of the installed release are
labelled and the run goes on; anything new fails, and the campaign writes
the script as a ``script`` fixture.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import assume, event, given

from compaction_harness.sdk.python.adk import NotApplicable, _helper, helper_availability
from compaction_harness.sdk.python.pipeline import chosen_invariants
from compaction_harness.spec.scripts import Script
from compaction_harness.surfaces.checks import check_case
from strategies import scripts

try:
    _helper("_run_compaction_for_sliding_window")
    _MISSING = None
except NotApplicable as exc:
    _MISSING = str(exc)
_HAS_TOKEN = helper_availability()["_events_to_compact_for_token_threshold"] is None


def _has_database() -> bool:
    try:
        import google.adk.sessions.database_session_service  # noqa: F401
    except ImportError:
        return False
    return True


#: What the property labels, for tests/quality/test_statistics.py (label -> examples).
SEEN: dict[str, int] = {}


def narrowed(script: Script) -> Script:
    """``script`` checking only what HARNESS_PIPELINE_INVARIANTS names (the
    choice is recorded in the script, so a fixture replays what was checked)."""
    chosen = chosen_invariants()
    if not chosen:
        return script
    return Script(replace(script.config, invariants=tuple(sorted(chosen))), script.operations)


def run_and_label(script: Script) -> None:
    try:
        outcome = check_case(narrowed(script))
    except NotApplicable as exc:
        event(f"not applicable: {exc}")
        assume(False)
        return
    for label in outcome.labels:
        event(label)
        SEEN[label] = SEEN.get(label, 0) + 1


# Most of a campaign's time goes here: the pipeline is where the faults of
# the newest releases were found (see DESIGN: at least half of any campaign).
# The gate's longest item: started first.
@pytest.mark.gate_first
@pytest.mark.property(weight=6)
@pytest.mark.skipif(_MISSING is not None, reason=f"not applicable: {_MISSING}")
@given(script=scripts(token=_HAS_TOKEN, database=_has_database()))
def test_pipeline_scripts_meet_p0_to_p7(script: Script) -> None:
    run_and_label(script)


# What the property's runs labelled, for the plugin: after the gate's run it
# leaves the tally for tests/quality/test_statistics.py (pytest_plugin.gate_labels).
test_pipeline_scripts_meet_p0_to_p7.labels = lambda: dict(SEEN)  # type: ignore[attr-defined]
