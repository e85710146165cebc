"""Turn a fixture into a pytest test for adk-python's own test suite.

The test follows ADK's unit-test style (two-space indentation, ``Event``
objects built directly, the helper called as ADK's callers call it) and
asserts the *correct* outcome, the reference's: it fails while ADK has the
fault and passes once it is fixed, so it can be pasted into
``tests/unittests/apps/test_compaction.py`` as it is. It needs nothing from
this harness.
"""

from __future__ import annotations

from . import reference
from .fixtures import Fixture
from .model import Session, Step
from .unit import TokenCase, UnitCase

__all__ = ["ExportError", "export_test"]


class ExportError(ValueError):
    """The fixture's kind has no upstream test form."""


def _event_source(step: Step, indent: str) -> str:
    i2 = indent + "    "
    fields = [
        f"invocation_id={step.invocation!r}",
        f"author={step.author!r}",
        f"timestamp={step.timestamp!r}",
    ]
    parts = []
    if step.text is not None:
        parts.append(f"types.Part(text={step.text!r})")
    for c in step.calls:
        parts.append(
            f"types.Part(function_call=types.FunctionCall(id={c.id!r}, name={c.name!r}, args={{}}))"
        )
    for r in step.responses:
        parts.append(
            "types.Part(function_response=types.FunctionResponse("
            f"id={r.id!r}, name={r.name!r}, response={{'result': 'ok'}}))"
        )
    if parts:
        role = "user" if step.author == "user" or step.responses else "model"
        if step.calls and all(c.name == "adk_request_credential" for c in step.calls):
            role = "user"
        joined = f",\n{i2}        ".join(parts)
        fields.append(
            f"content=types.Content(\n{i2}    role={role!r},\n{i2}    parts=[\n"
            f"{i2}        {joined},\n{i2}    ],\n{i2})"
        )
    actions = []
    if step.confirmations:
        items = ", ".join(f"{x!r}: ToolConfirmation(hint='confirm?')" for x in step.confirmations)
        actions.append(f"requested_tool_confirmations={{{items}}}")
    if step.auth_requests:
        items = ", ".join(f"{x!r}: _AUTH_CONFIG" for x in step.auth_requests)
        actions.append(f"requested_auth_configs={{{items}}}")
    if step.rewind_before is not None:
        actions.append(f"rewind_before_invocation_id={step.rewind_before!r}")
    if step.compaction is not None:
        c = step.compaction
        actions.append(
            f"compaction=EventCompaction(start_timestamp={c.start!r}, "
            f"end_timestamp={c.end!r}, compacted_content=types.Content("
            f"role='model', parts=[types.Part(text={c.summary!r})]))"
        )
    if actions:
        fields.append("actions=EventActions(" + ", ".join(actions) + ")")
    if step.long_running:
        fields.append(f"long_running_tool_ids={set(step.long_running)!r}")
    if step.branch is not None:
        fields.append(f"branch={step.branch!r}")
    if step.isolation_scope is not None:
        fields.append(f"isolation_scope={step.isolation_scope!r}")
    body = f",\n{i2}".join(fields)
    return f"{indent}Event(\n{i2}{body},\n{indent}),"


def _events_source(session: Session) -> str:
    return "\n".join(_event_source(s, "      ") for s in session)


def _header(fixture: Fixture, body: str) -> list[str]:
    lines = [
        f"# From compaction-harness fixture {fixture.path.name if fixture.path else '(unsaved)'}:",
        f"# {fixture.invariant} failed on google-adk {fixture.adk_release}.",
    ]
    lines += [f"#   {v}" for v in fixture.violations]
    imports = ["import inspect"] if "inspect." in body else []
    imports += [
        "",
        "from google.adk.apps import compaction",
        "from google.adk.events.event import Event",
    ]
    for name in ("EventActions", "EventCompaction"):
        if f"{name}(" in body:
            imports.append(f"from google.adk.events.event_actions import {name}")
    if "ToolConfirmation(" in body:
        imports.append("from google.adk.tools.tool_confirmation import ToolConfirmation")
    imports.append("from google.genai import types")
    if "_AUTH_CONFIG" in body:
        imports += [
            "from fastapi.openapi.models import APIKey",
            "from fastapi.openapi.models import APIKeyIn",
            "from google.adk.auth.auth_tool import AuthConfig",
            "",
            "_AUTH_CONFIG = AuthConfig(",
            "    auth_scheme=APIKey(**{'in': APIKeyIn.header, 'name': 'x-api-key'})",
            ")",
        ]
    return [*lines, *imports, "", ""]


def _name(fixture: Fixture) -> str:
    stem = fixture.path.stem if fixture.path else fixture.file_name()[:-5]
    return "test_" + "".join(ch if ch.isalnum() else "_" for ch in stem).lower()


def export_test(fixture: Fixture) -> str:
    """The source of a self-contained pytest test for ``fixture``.

    Raises :class:`ExportError` for kinds without an upstream form
    (``metamorphic``: its relation compares two runs of ADK, which an
    upstream test states better by hand).
    """
    case = fixture.case
    if isinstance(case, UnitCase):
        body = _unit_body(case)
    elif isinstance(case, TokenCase):
        body = _token_body(case)
    else:
        raise ExportError(f"{fixture.path}: fixtures of kind {fixture.kind!r} cannot be exported")
    text = "\n".join(body)
    return "\n".join([*_header(fixture, text), f"def {_name(fixture)}():", *body, ""])


def _unit_body(case: UnitCase) -> list[str]:
    session, window = case.session, case.window
    length = reference.longest_self_contained_prefix(session, window)
    dead = sorted(reference.provably_dead_call_ids(session, window))
    newest = reference.newest_invocation(session)
    window_src = ", ".join(f"events[{i}]" for i in window)
    return [
        "  events = [",
        _events_source(session),
        "  ]",
        f"  window = [{window_src}]",
        "",
        "  prefix = compaction._longest_self_contained_prefix",
        "  if 'all_events' in inspect.signature(prefix).parameters:",
        "    result = prefix(window, all_events=events)",
        "  else:  # releases before 2.12.0 take the window only",
        "    result = prefix(window)",
        "",
        f"  assert len(result) == {length}, 'compacts the wrong number of events'",
        f"  assert all(got is want for got, want in zip(result, window[:{length}]))",
        "  if hasattr(compaction, '_provably_dead_call_ids'):",
        "    dead = compaction._provably_dead_call_ids(",
        f"        window, all_events=events, newest_invocation_id={newest!r}",
        "    )",
        f"    assert dead == {set(dead) if dead else 'set()'}",
    ]


def _token_body(case: TokenCase) -> list[str]:
    session, k = case.session, case.retention
    candidates = reference.token_candidates(session)
    taken = reference.token_threshold_range(session, k)
    lines = [
        "  events = [",
        _events_source(session),
        "  ]",
        f"  candidates = [{', '.join(f'events[{i}]' for i in candidates)}]",
        "",
    ]
    if k > 0:
        split = reference.safe_token_split(session, candidates, k)
        lines += [
            "  split = compaction._safe_token_compaction_split_index(",
            f"      candidate_events=candidates, event_retention_size={k}",
            "  )",
            f"  assert split == {split}",
            "",
        ]
    has_summary = reference.latest_summary(session) is not None
    lines += [
        "  result = compaction._events_to_compact_for_token_threshold(",
        f"      events=events, event_retention_size={k}",
        "  )",
    ]
    if has_summary and taken:
        lines.append("  result = result[1:]  # the rolling-summary seed comes first")
    taken_src = ", ".join(f"events[{i}]" for i in taken)
    lines += [
        f"  expected = [{taken_src}]",
        "  assert len(result) == len(expected), 'compacts the wrong number of events'",
        "  assert all(got is want for got, want in zip(result, expected))",
    ]
    return lines
