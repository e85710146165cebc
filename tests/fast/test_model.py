"""The session model: lossless JSON, one timeline line per step, strict parsing.

A fixture is untrusted JSON, so `Session.from_json` must reject anything
that is not a session with a `ModelError` naming where the problem is.
"""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compaction_harness.spec import model
from compaction_harness.spec.model import Call, Compaction, ModelError, Response, Session, Step
from strategies import sessions

# Harness self-tests, not ADK properties: the same examples under every profile.
deterministic = settings(derandomize=True, database=None)

TIMELINE_LINE = re.compile(r"^(?P<mark>\S*)\s*#(?P<index>\d+)\s")


def id_sets(ids: st.SearchStrategy[str]) -> st.SearchStrategy[tuple[str, ...]]:
    # The model stores id sets sorted and without repeats (what from_json builds).
    return st.lists(ids, unique=True, max_size=3).map(lambda xs: tuple(sorted(xs)))


def every_field_steps(strings: st.SearchStrategy[str]) -> st.SearchStrategy[Step]:
    """Steps with any field set, including those `strategies.sessions()` never sets."""
    finite = st.floats(allow_nan=False, allow_infinity=False)
    optional = st.none() | strings
    return st.builds(
        Step,
        invocation=strings,
        author=strings,
        timestamp=finite | st.integers(-(10**6), 10**6),
        text=st.none() | st.text(max_size=30),
        calls=st.lists(st.builds(Call, strings, strings), max_size=3).map(tuple),
        responses=st.lists(st.builds(Response, strings, strings), max_size=3).map(tuple),
        long_running=id_sets(strings),
        confirmations=id_sets(strings),
        auth_requests=id_sets(strings),
        compaction=st.none() | st.builds(Compaction, finite, finite, st.text(max_size=10)),
        rewind_before=optional,
        branch=optional,
        isolation_scope=optional,
        prompt_tokens=st.none() | st.integers(0, 2**40),
    )


ANY_STRINGS = st.text(max_size=6)
any_sessions = st.lists(every_field_steps(ANY_STRINGS), max_size=4).map(
    lambda steps: Session(tuple(steps))
)


def json_round_trip(s: Session) -> Session:
    return Session.from_json(json.loads(json.dumps(s.to_json())))


def assert_one_line_per_step(s: Session) -> None:
    text = s.render()
    if not s.steps:
        assert text == "(empty session)"
        return
    lines = text.splitlines()
    assert len(lines) == len(s), text
    for index, line in enumerate(lines):
        match = TIMELINE_LINE.match(line)
        assert match is not None, line
        assert int(match["index"]) == index


# -- round trip and rendering ------------------------------------------------
@deterministic
@given(s=sessions())
def test_generated_sessions_survive_a_json_round_trip(s: Session) -> None:
    assert json_round_trip(s) == s


@deterministic
@given(s=any_sessions)
def test_every_field_survives_a_json_round_trip(s: Session) -> None:
    back = json_round_trip(s)
    assert back == s
    assert [type(step.timestamp) for step in back] == [float] * len(s)


@deterministic
@given(s=sessions())
def test_render_has_one_line_per_generated_step(s: Session) -> None:
    assert_one_line_per_step(s)


@deterministic
@given(s=any_sessions)
def test_render_has_one_line_per_step_with_every_field(s: Session) -> None:
    assert_one_line_per_step(s)


def test_render_marks_the_steps_it_is_given() -> None:
    s = Session((Step("i1", "user", 1), Step("i1", "agent", 2), Step("i2", "user", 3)))
    lines = s.render({0: "W", 2: "W"}).splitlines()
    assert [TIMELINE_LINE.match(line)["mark"] for line in lines] == ["W", "", "W"]


@pytest.mark.parametrize(
    "step",
    [
        Step("i1", "agent\nuser", 1.0),
        Step("i\r1", "agent", 1.0),
        Step("i1", "agent", 1.0, branch="root\u2028sub"),
        Step("i1", "agent", 1.0, calls=(Call("c\n1", "tool"),)),
    ],
    ids=["author-newline", "invocation-cr", "branch-line-separator", "call-id-newline"],
)
def test_render_keeps_a_step_with_line_breaks_on_one_line(step: Step) -> None:
    assert_one_line_per_step(Session((Step("i0", "user", 0.0), step)))


# -- int timestamps ------------------------------------------------------------
def test_int_timestamps_are_stored_as_float() -> None:
    parsed = Step.from_json({"invocation": "i1", "author": "user", "timestamp": 3})
    assert type(parsed.timestamp) is float
    assert parsed.timestamp == 3.0
    built = Step("i1", "user", 7)
    assert type(built.timestamp) is float
    assert built == Step("i1", "user", 7.0)
    compaction = Step.from_json({**REQUIRED, "compaction": {"start": 1, "end": 2}}).compaction
    assert (type(compaction.start), type(compaction.end)) == (float, float)
    # ...and so they are written back as JSON floats.
    assert json.dumps(Step.from_json({**REQUIRED, "timestamp": 3}).to_json()["timestamp"]) == "3.0"


def test_id_sets_are_sorted_and_deduplicated() -> None:
    step = Step.from_json(
        {**REQUIRED, "long_running": ["b", "a", "b"], "confirmations": ["z", "y"]}
    )
    assert step.long_running == ("a", "b")
    assert step.confirmations == ("y", "z")


# -- strict parsing ----------------------------------------------------------
REQUIRED = {"invocation": "i1", "author": "user", "timestamp": 1.0}


@pytest.mark.parametrize("field", sorted(REQUIRED))
def test_the_first_three_fields_are_required(field: str) -> None:
    step = {k: v for k, v in REQUIRED.items() if k != field}
    with pytest.raises(ModelError, match=rf"^session\.steps\[0\]: missing field '{field}'$"):
        Session.from_json({"steps": [step]})


def one_step(**fields) -> dict:
    return {"steps": [{"invocation": "i1", "author": "user", "timestamp": 1.0, **fields}]}


BAD_SESSIONS = {
    # unknown fields
    "step-unknown-field": (one_step(colour="red"), "session.steps[0]: unknown field 'colour'"),
    "session-unknown-field": ({"steps": [], "extra": 1}, "session: unknown field 'extra'"),
    "part-unknown-field": (
        one_step(calls=[{"id": "c1", "name": "t", "args": {}}]),
        "session.steps[0].calls[0]: unknown field 'args'",
    ),
    "compaction-unknown-field": (
        one_step(compaction={"start": 1, "end": 2, "by": "x"}),
        "session.steps[0].compaction: unknown field 'by'",
    ),
    # strings
    "author-int": (one_step(author=1), "session.steps[0].author: expected a string, got int"),
    "invocation-null": (
        one_step(invocation=None),
        "session.steps[0].invocation: expected a string, got NoneType",
    ),
    "text-list": (one_step(text=["hi"]), "session.steps[0].text: expected a string, got list"),
    "branch-int": (one_step(branch=3), "session.steps[0].branch: expected a string"),
    "rewind-dict": (
        one_step(rewind_before={}),
        "session.steps[0].rewind_before: expected a string",
    ),
    "summary-null": (
        one_step(compaction={"start": 1, "end": 2, "summary": None}),
        "session.steps[0].compaction.summary: expected a string",
    ),
    # numbers
    "timestamp-string": (
        one_step(timestamp="1.0"),
        "session.steps[0].timestamp: expected a number, got str",
    ),
    "timestamp-bool": (
        one_step(timestamp=True),
        "session.steps[0].timestamp: expected a number, got bool",
    ),
    "timestamp-nan": (
        one_step(timestamp=float("nan")),
        "session.steps[0].timestamp: expected a finite number",
    ),
    "timestamp-inf": (
        one_step(timestamp=float("inf")),
        "session.steps[0].timestamp: expected a finite number",
    ),
    "timestamp-minus-inf": (
        one_step(timestamp=float("-inf")),
        "session.steps[0].timestamp: expected a finite number",
    ),
    "compaction-start-nan": (
        one_step(compaction={"start": float("nan"), "end": 2}),
        "session.steps[0].compaction.start: expected a finite number",
    ),
    "compaction-end-string": (
        one_step(compaction={"start": 1, "end": "2"}),
        "session.steps[0].compaction.end: expected a number",
    ),
    "prompt-tokens-negative": (
        one_step(prompt_tokens=-1),
        "session.steps[0].prompt_tokens: expected a non-negative integer",
    ),
    "prompt-tokens-float": (
        one_step(prompt_tokens=1.5),
        "session.steps[0].prompt_tokens: expected a non-negative integer",
    ),
    "prompt-tokens-bool": (
        one_step(prompt_tokens=True),
        "session.steps[0].prompt_tokens: expected a non-negative integer",
    ),
    # lists
    "steps-object": ({"steps": {}}, "session.steps: expected a list, got dict"),
    "calls-object": (
        one_step(calls={"id": "c1", "name": "t"}),
        "session.steps[0].calls: expected a list, got dict",
    ),
    "long-running-string": (
        one_step(long_running="c1"),
        "session.steps[0].long_running: expected a list, got str",
    ),
    "confirmation-item-int": (
        one_step(confirmations=["c1", 2]),
        "session.steps[0].confirmations[1]: expected a string, got int",
    ),
    # part objects
    "call-part-string": (
        one_step(calls=["c1"]),
        "session.steps[0].calls[0]: expected an object, got str",
    ),
    "call-missing-id": (
        one_step(calls=[{"name": "t"}]),
        "session.steps[0].calls[0]: missing field 'id'",
    ),
    "response-missing-name": (
        one_step(responses=[{"id": "c1"}]),
        "session.steps[0].responses[0]: missing field 'name'",
    ),
    "call-id-int": (
        one_step(calls=[{"id": 1, "name": "t"}]),
        "session.steps[0].calls[0].id: expected a string, got int",
    ),
    "compaction-missing-end": (
        one_step(compaction={"start": 1}),
        "session.steps[0].compaction: missing field 'end'",
    ),
    "compaction-list": (
        one_step(compaction=[1, 2]),
        "session.steps[0].compaction: expected an object, got list",
    ),
    # the containers themselves
    "missing-steps": ({}, "session: missing field 'steps'"),
    "session-list": ([], "session: expected an object, got list"),
    "step-list": ({"steps": [[]]}, "session.steps[0]: expected an object, got list"),
}


@pytest.mark.parametrize(("data", "message"), BAD_SESSIONS.values(), ids=BAD_SESSIONS.keys())
def test_session_from_json_names_the_bad_path(data, message: str) -> None:
    with pytest.raises(ModelError) as info:
        Session.from_json(data)
    assert str(info.value).startswith(message), str(info.value)


def test_the_path_names_the_offending_step() -> None:
    data = {"steps": [one_step()["steps"][0], one_step()["steps"][0], {"timestamp": "x"}]}
    with pytest.raises(ModelError, match=r"^session\.steps\[2\]\.timestamp: "):
        Session.from_json(data)


def test_step_from_json_uses_the_given_path() -> None:
    with pytest.raises(ModelError, match=r"^fixture\.session\.steps\[4\]\.author: "):
        Step.from_json({"author": 5}, "fixture.session.steps[4]")
    with pytest.raises(ModelError, match=r"^step: unknown field 'x'"):
        Step.from_json({"x": 1})
    with pytest.raises(ModelError, match=r"^step: expected an object, got str"):
        Step.from_json("step")


def test_too_many_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(model, "MAX_STEPS", 3)
    steps = [{**REQUIRED, "timestamp": float(i)} for i in range(4)]
    with pytest.raises(ModelError, match=r"^session\.steps: 4 steps, more than the limit of 3$"):
        Session.from_json({"steps": steps})
    assert len(Session.from_json({"steps": steps[:3]})) == 3


def test_too_many_ids_in_a_step(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(model, "MAX_IDS_PER_STEP", 2)
    with pytest.raises(ModelError, match=r"^session\.steps\[0\]\.long_running: 3 items"):
        Session.from_json(one_step(long_running=["a", "b", "c"]))
    with pytest.raises(ModelError, match=r"^session\.steps\[0\]\.calls: 3 items"):
        Session.from_json(one_step(calls=[{"id": str(i), "name": "t"} for i in range(3)]))
    assert Session.from_json(one_step(long_running=["a", "b"]))[0].long_running == ("a", "b")


def test_too_long_a_string(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(model, "MAX_STRING", 5)
    with pytest.raises(ModelError, match=r"^session\.steps\[0\]\.text: string of 6 characters"):
        Session.from_json(one_step(text="abcdef"))
    assert Session.from_json(one_step(text="abcde"))[0].text == "abcde"


def test_explicit_nulls_mean_the_default() -> None:
    step = Session.from_json(one_step(text=None, compaction=None, prompt_tokens=None))[0]
    assert step == Step("i1", "user", 1.0)


@pytest.mark.parametrize(
    "data",
    [one_step(timestamp=10**400), one_step(compaction={"start": 0, "end": 10**400})],
    ids=["timestamp", "compaction-end"],
)
def test_an_integer_too_large_for_a_float_is_a_model_error(data) -> None:
    with pytest.raises(ModelError, match=r"^session\.steps\[0\]\."):
        Session.from_json(data)
