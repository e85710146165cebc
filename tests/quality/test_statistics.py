"""The gate's examples reach every episode kind and every state-machine rule.

Runs the unit properties and the pipeline state machine again under the
`gate` profile (derandomised, so the examples are the very ones `make test`
checks) and collects the labels each example reports. A generator change that
silently stops producing a shape turns this red. The pipeline's labels are
those its own gate run left in this session (the pytest plugin's
`gate_labels`, on any worker) when it ran to the end before this test;
otherwise the property runs here.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import test_unit_properties as properties
from hypothesis import settings

from compaction_harness.sdk.python.adk import helper_availability
from compaction_harness.sdk.python.unit import InvariantViolation
from strategies import EPISODE_KINDS, episode_kinds

PROPERTIES = [
    properties.test_prefix_and_dead_ids_meet_u1_to_u4,
    properties.test_token_threshold_split_and_range_meet_u5,
]


# After the unit properties, whose gate runs leave their labels for this test.
@pytest.mark.gate_last
def test_the_gate_profile_reaches_every_episode_kind(
    monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    from compaction_harness.surfaces.pytest_plugin import gate_labels

    missing_helpers = [h for h, why in helper_availability().items() if why]
    if missing_helpers:
        pytest.skip(f"the properties skip on this release (no {', '.join(missing_helpers)})")
    if settings.default != settings.get_profile("gate"):
        pytest.skip("asserts the gate's examples: run with --hypothesis-profile=gate (make test)")
    seen: set[str] = set()

    def collect(case) -> None:
        seen.update(episode_kinds(case.origin or case.session))

    monkeypatch.setattr(properties, "label", collect)
    where = Path(properties.__file__).relative_to(request.config.rootpath).as_posix()
    for prop in PROPERTIES:
        # The kinds of the property's own gate run in this session (any
        # worker), when it went through every example; otherwise the same
        # derandomised examples run here.
        kinds = gate_labels(request.config, f"{where}::{prop.__name__}")
        if kinds is None:
            prop()
        else:
            seen.update(kinds)
    missing = [kind for kind in EPISODE_KINDS if kind not in seen]
    assert not missing, f"the gate's examples never show: {missing}"


def test_labels_are_read_off_the_session() -> None:
    from builders import answer, call, session, user

    s = session(user("i1", 1), call("i1", 2, "a", "b"), answer("i2", 3, "b", "a", author="user"))
    kinds = episode_kinds(s)
    assert {"parallel calls", "answers out of order", "answer in a later invocation"} <= kinds
    assert "orphan call" not in kinds
    assert "response-opened invocation" in kinds


#: Every realism dimension of the pipeline generator, each value it must reach
#: in the gate's derandomised runs (labels the driver reports).
PIPELINE_LABELS = [
    "config: sliding window",
    "config: token threshold",
    "config: both triggers",
    "storage: memory",
    "storage: database",
    "storage: reloaded before an invocation",
    "clock: fine",
    "clock: millisecond",
    "clock: coarse (1 s)",
    "time: events in one clock tick",
    "time: a stored event earlier than the one before",
    "time: an invocation stamped before the previous one",
    "summary size: tiny",
    "summary size: large",
    "summary size: grows",
    "tokens: a summary larger than the threshold",
    "tokens: reply without usage metadata",
    "tokens: system instruction or tool declarations",
    "provider: strict (LiteLLM)",
    "provider: lenient",
    "call ids: unique",
    "call ids: per turn",
    "calls: id reused across turns",
    "calls: parallel",
    "calls: plain, answered at once",
    "calls: plain, left pending",
    "calls: long-running",
    "calls: interim result",
    "opener: user message",
    "opener: agent",
    "opener: client answer",
    "opener: user answers a request",
    "answer: out of order",
    "answer: calls of several turns at once",
    "answer: partial",
    "answer: a call answered twice",
    "ask the user: tool confirmation",
    "ask the user: credentials",
    "agents: parallel sub-agents on branches",
    "agents: sequential sub-agent",
    "rewind",
    "client compaction record",
    "summary made: at an invocation end",
    "summary made: before a model call",
    "summary made: before a sub-agent's model call",
    "P6: token trigger checked without stale counts",
]


# After the pipeline property, whose gate run leaves its labels for this test.
@pytest.mark.gate_last
def test_the_gate_profile_reaches_every_pipeline_dimension(request: pytest.FixtureRequest) -> None:
    import test_pipeline

    from compaction_harness.faults.classify import known_or_new_only
    from compaction_harness.surfaces.pytest_plugin import gate_labels

    if test_pipeline._MISSING or not test_pipeline._HAS_TOKEN:
        pytest.skip("asserts the 2.x pipeline with both triggers")
    if settings.default != settings.get_profile("gate"):
        pytest.skip("asserts the gate's examples: run with --hypothesis-profile=gate (make test)")
    prop = test_pipeline.test_pipeline_scripts_meet_p0_to_p7
    where = Path(test_pipeline.__file__).relative_to(request.config.rootpath).as_posix()
    nodeid = f"{where}::{prop.__name__}"
    # The labels of the property's own gate run in this session (any worker),
    # when it went through every example; otherwise the same run here.
    seen = gate_labels(request.config, nodeid)
    if seen is None:
        test_pipeline.SEEN.clear()
        try:
            with known_or_new_only():  # as the plugin runs the gate's properties
                prop()  # the gate's own derandomised runs
        except InvariantViolation:
            pytest.skip("the pipeline fails on this release (test_pipeline reports it)")
        seen = test_pipeline.SEEN
    missing = [label for label in PIPELINE_LABELS if label not in seen]
    assert not missing, f"the gate's pipeline scripts never show: {missing}"
