"""P0 on what ADK returns: an event that a session service hands back and
that cannot be read as the event it claims to be (a reloaded summary whose
``compacted_content`` is a plain dict, as google-adk 1.18.0 and 1.19.0's
``DatabaseSessionService`` returns it) is a P0 violation of ADK with its
fixture, on both drivers, never a harness traceback."""

from __future__ import annotations

from dataclasses import replace

import pytest

from compaction_harness.sdk.python.unit import InvariantViolation
from compaction_harness.spec.scripts import Open, Script, ScriptConfig, Text
from compaction_harness.store.fixtures import load_fixture, write_fixture
from compaction_harness.surfaces.checks import check_case, fixture_from_failure

#: A summary at the first invocation's end, then a reload before the second.
SCRIPT = Script(
    ScriptConfig(compaction_interval=1, overlap_size=0, storage="database"),
    (Open(), Text(), Open(), Text()),
)


@pytest.fixture
def summaries_reload_as_dicts(monkeypatch):
    """A deliberately broken ``DatabaseSessionService``: every summary it gives
    back carries its ``compacted_content`` as a plain dict."""
    from google.adk.sessions.database_session_service import DatabaseSessionService

    real = DatabaseSessionService.get_session

    async def get_session(self, *args, **kwargs):
        session = await real(self, *args, **kwargs)
        for event in session.events if session is not None else ():
            compaction = event.actions.compaction if event.actions else None
            if compaction is not None and compaction.compacted_content is not None:
                compaction.compacted_content = compaction.compacted_content.model_dump()
        return session

    monkeypatch.setattr(DatabaseSessionService, "get_session", get_session)


@pytest.mark.parametrize("driver", ["emulated", "runner"])
def test_an_unreadable_reloaded_summary_is_p0_with_a_fixture(
    driver, summaries_reload_as_dicts, tmp_path
):
    script = replace_driver(SCRIPT, driver)
    with pytest.raises(InvariantViolation) as failed:
        check_case(script)
    (violation,) = failed.value.outcome.violations
    assert violation.invariant == "P0"
    assert violation.details["cause"] == "unreadable"
    assert "actions.compaction.compacted_content is a dict, not Content" in violation.message
    path, new = write_fixture(fixture_from_failure(failed.value), tmp_path)
    assert new and path.name.startswith("P0-")
    assert load_fixture(path).invariant == "P0"


def replace_driver(script: Script, driver: str) -> Script:
    return Script(replace(script.config, driver=driver), script.operations)


def test_the_same_script_holds_when_the_service_returns_what_it_declares():
    assert check_case(SCRIPT).violations == []


@pytest.fixture
def reload_copies_actions_unvalidated(monkeypatch):
    """google-adk 1.18.0's reload planted in this release's storage: the
    actions of every reloaded event are copied without validation
    (``EventActions().model_copy(update=...)``), so nested models are dicts."""
    from google.adk.events.event_actions import EventActions
    from google.adk.sessions.schemas import v0, v1

    for home in (v0.StorageEvent, v1.StorageEvent):
        real = home.to_event

        def to_event(self, *args, real=real, **kwargs):
            event = real(self, *args, **kwargs)
            if event.actions is not None:
                event.actions = EventActions().model_copy(update=event.actions.model_dump())
            return event

        monkeypatch.setattr(home, "to_event", to_event)


@pytest.mark.parametrize("driver", ["emulated", "runner"])
def test_validating_reloaded_actions_removes_the_p0(driver, reload_copies_actions_unvalidated):
    # Known fault database-reload-leaves-event-actions-as-dicts is the P0 that
    # vanishes under validation on reload (adk.reloaded_actions_validated).
    from compaction_harness.sdk.python.adk import reloaded_actions_validated
    from compaction_harness.sdk.python.adk_runner import run_script_outcome
    from compaction_harness.sdk.python.driver import run_script

    script = replace_driver(SCRIPT, driver)
    run = run_script_outcome if driver == "runner" else run_script
    found = run(script).violations
    assert [v.invariant for v in found] == ["P0"]
    with reloaded_actions_validated():
        assert run(script).violations == []
