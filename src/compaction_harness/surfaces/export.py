"""Turn a fixture into a pytest test for adk-python's own test suite.

The test asserts the *correct* outcome: it fails while ADK has the fault and
passes once it is fixed. It needs nothing from this harness (it imports only
``google.adk``, ``google.genai`` and the standard library), carries ADK's
Apache-2.0 header as adk-python's test files carry it, and is laid out as
adk-python's pyink configuration lays it out (80 columns, two-space
indentation, see :mod:`compaction_harness.surfaces._pysource`), so it can be added to
``tests/unittests/`` as it is.

Fixture kinds:

* ``unit`` and ``token``: ``Event`` objects built directly and the helper
  called as ADK's callers call it (``_longest_self_contained_prefix``,
  ``_provably_dead_call_ids``, ``_safe_token_compaction_split_index``,
  ``_events_to_compact_for_token_threshold``); the expected answers are the
  reference's. Needs no ADK to export.
* ``script`` and ``pipeline``: see :mod:`compaction_harness.surfaces.export_pipeline`.
  The fixture is run again on the installed ADK to find the call that breaks
  the invariant; the test builds the session as it stood before that call
  and makes it through the same ADK entry point.
* ``metamorphic`` fixtures, runner-driver scripts and database storage are
  refused (:class:`ExportError`, one line saying why).

Beside the test, :func:`export_patch` gives the fault's **fix** (the
registered fix whose faults include the fixture's ``known_fault``,
:mod:`compaction_harness.sdk.python.fixes`) as a unified diff against the
installed release's own source files (paths ``a/google/adk/...``, as under
adk-python's ``src/``; ``patch -p1`` there, or in a copy of the installed
``site-packages``): the change that makes the exported test pass. The
test's docstring names it (``<test name>.patch``), and ``export --out DIR``
writes the two side by side.
"""

from __future__ import annotations

import textwrap

from ..sdk.python.unit import TokenCase, UnitCase
from ..spec import reference
from ..spec.model import Session, Step
from ..store.fixtures import Fixture
from ._pysource import Atom, Group, Strings, call, list_of, render
from .export_head import (
    ExportError,
    _where,
    fault_fixes,
    module_head,
    name_of_test,
    used_imports,
)

__all__ = ["export_patch", "export_test"]


def export_test(fixture: Fixture, *, year: int | None = None) -> str:
    """The source of a self-contained pytest module for ``fixture``.

    ``year``: the copyright year of the header (default: this year).
    Unit and token fixtures need no ADK; script and pipeline fixtures run on
    the installed google-adk (see :mod:`compaction_harness.surfaces.export_pipeline`).
    Raises :class:`ExportError` for fixtures without a faithful upstream form:
    ADK-JS fixtures (``sdk: "adk-js"``: not adk-python code), ``metamorphic``
    (its relation compares two runs of ADK, which an upstream test states
    better by hand), runner-driver scripts, database storage, and
    a pipeline fixture that does not fail on the installed release.
    """
    if getattr(fixture, "is_js", False):
        raise ExportError(
            f"{_where(fixture)}: an ADK-JS fixture (sdk 'adk-js', @google/adk "
            f"{fixture.adk_release}) cannot be exported: export writes a pytest test for "
            "adk-python's suite, and ADK-JS's compactors are TypeScript code of their own"
        )
    case = fixture.case
    strings = Strings()
    if isinstance(case, UnitCase | TokenCase):
        _refuse_if_it_holds(fixture)
    if isinstance(case, UnitCase):
        imports, body = _unit_body(case, strings)
    elif isinstance(case, TokenCase):
        imports, body = _token_body(case, strings)
    elif fixture.kind in ("script", "pipeline"):
        from .export_pipeline import pipeline_module

        return pipeline_module(fixture, year=year)
    else:
        raise ExportError(
            f"{_where(fixture)}: fixtures of kind {fixture.kind!r} cannot be exported"
        )
    rest = [*strings.definitions(), ""] if strings.definitions() else []
    if "_AUTH_CONFIG" in "\n".join(body):
        rest += [
            "_AUTH_CONFIG = AuthConfig(",
            "    auth_scheme=APIKey(**{'in': APIKeyIn.header, 'name': 'x-api-key'})",
            ")",
            "",
        ]
    rest += ["", f"def {name_of_test(fixture)}():", *body]
    lines = [*module_head(fixture, used_imports(imports, rest), year=year), *rest]
    return "\n".join(lines) + "\n"


def _refuse_if_it_holds(fixture: Fixture) -> None:
    """Raise :class:`ExportError` when a unit or token fixture recorded on the
    installed release holds there (a regression guard kept in the corpus, say):
    its export would be a test that passes, not a failing call to report.
    Fixtures of other releases are exported as they are (``export`` run with
    that release's interpreter judges them there)."""
    from ..sdk.python.adk import ADK_RELEASE, NotApplicable
    from ..sdk.python.unit import run_token_case, run_unit_case

    if fixture.adk_release != ADK_RELEASE:
        return
    case = fixture.case
    try:
        outcome = run_unit_case(case) if isinstance(case, UnitCase) else run_token_case(case)
    except NotApplicable:
        return
    if all(v.invariant != fixture.invariant for v in outcome.violations):
        raise ExportError(
            f"{_where(fixture)}: {fixture.invariant} holds on google-adk {ADK_RELEASE}, so "
            "there is no failing call to export (it no longer fails on its own release)"
        )


def export_patch(fixture: Fixture) -> str:
    """The fix of ``fixture``'s known fault as a patch against the installed
    google-adk's own source files: a few lines saying what it is and how to
    apply it (``patch -p1`` in adk-python's ``src/``; ``patch`` and ``git
    apply`` skip text before the first ``---``), then the unified diff.
    Raises :class:`ExportError` (one line) for a fixture with no known
    fault, a fault with no fix yet, or a fix the installed release cannot
    take."""
    from ..sdk.python.adk import ADK_RELEASE
    from ..sdk.python.fixes import fix_named, fixes_for, patch_text

    where = _where(fixture)
    if getattr(fixture, "is_js", False):
        raise ExportError(
            f"{where}: an ADK-JS fixture: its fix is ADK-JS's, not a google-adk patch"
        )
    if not fixture.known_fault:
        raise ExportError(f"{where}: marked with no known fault, so there is no fix to export")
    names = fault_fixes(fixture)
    if not names:
        why = (
            f"its fix does not apply to google-adk {ADK_RELEASE}"
            if fixes_for(fixture.known_fault)
            else "it has no fix yet"
        )
        raise ExportError(f"{where}: no patch for the fault {fixture.known_fault}: {why}")
    paragraphs = [
        (
            "",
            f"Fix of google-adk's known fault {fixture.known_fault}, from compaction-harness "
            f"(fix {', '.join(names)}): the change that makes {name_of_test(fixture)}.py pass.",
        ),
        *(("  ", f"{name}: {fix_named(name).summary}") for name in names),
        (
            "",
            f"Against google-adk {ADK_RELEASE}'s own source; apply with `patch -p1` in "
            "adk-python's src/ (or in a copy of the installed site-packages).",
        ),
    ]
    lines = []
    for indent, text in paragraphs:
        lines += textwrap.wrap(
            text, 79, initial_indent=indent, subsequent_indent=indent + ("  " if indent else "")
        )
    return "\n".join([*lines, ""]) + "\n" + patch_text(names)


# -- unit and token fixtures: events from the session model ------------------------
def _step_node(step: Step, strings: Strings) -> Group:
    """``Event(...)`` for a step of the session model (as ``adk.to_adk_event``
    builds it: text first, then calls, then responses)."""
    parts: list[Atom | Group] = []
    if step.text is not None:
        parts.append(call("types.Part", text=strings(step.text)))
    for c in step.calls:
        function_call = call(
            "types.FunctionCall", id=strings(c.id), name=strings(c.name), args=Atom("{}")
        )
        parts.append(call("types.Part", function_call=function_call))
    for r in step.responses:
        response = call(
            "types.FunctionResponse",
            id=strings(r.id),
            name=strings(r.name),
            response=Atom("{'result': 'ok'}"),
        )
        parts.append(call("types.Part", function_response=response))
    content = None
    if parts:
        auth_only = bool(step.calls) and all(c.name == "adk_request_credential" for c in step.calls)
        role = "user" if step.author == "user" or step.responses or auth_only else "model"
        content = call("types.Content", role=strings(role), parts=list_of(parts, explode=True))
    actions: dict[str, Atom | Group] = {}
    if step.confirmations:
        actions["requested_tool_confirmations"] = Group(
            "{",
            tuple(
                (f"{strings(x).text}: ", call("ToolConfirmation", hint=Atom("'confirm?'")))
                for x in step.confirmations
            ),
            "}",
        )
    if step.auth_requests:
        actions["requested_auth_configs"] = Group(
            "{",
            tuple((f"{strings(x).text}: ", Atom("_AUTH_CONFIG")) for x in step.auth_requests),
            "}",
        )
    if step.rewind_before is not None:
        actions["rewind_before_invocation_id"] = strings(step.rewind_before)
    if step.compaction is not None:
        c = step.compaction
        summary = call(
            "types.Content",
            role=Atom("'model'"),
            parts=list_of([call("types.Part", text=strings(c.summary))]),
        )
        actions["compaction"] = call(
            "EventCompaction",
            start_timestamp=Atom(repr(c.start)),
            end_timestamp=Atom(repr(c.end)),
            compacted_content=summary,
        )
    usage = None
    if step.prompt_tokens is not None:
        usage = call(
            "types.GenerateContentResponseUsageMetadata",
            prompt_token_count=Atom(str(step.prompt_tokens)),
        )
    return call(
        "Event",
        explode=True,
        invocation_id=strings(step.invocation),
        author=strings(step.author),
        timestamp=Atom(repr(step.timestamp)),
        content=content,
        actions=call("EventActions", **actions) if actions else None,
        long_running_tool_ids=Group(
            "{", tuple(("", strings(x)) for x in sorted(set(step.long_running))), "}"
        )
        if step.long_running
        else None,
        branch=strings(step.branch) if step.branch is not None else None,
        isolation_scope=strings(step.isolation_scope) if step.isolation_scope is not None else None,
        usage_metadata=usage,
        error_code=strings(step.error) if step.error is not None else None,
    )


def _events_lines(session: Session, strings: Strings) -> list[str]:
    events = list_of([_step_node(s, strings) for s in session], explode=True)
    return render(events, "  ", "events = ")


def _step_imports(session: Session) -> list[str]:
    imports = ["from google.adk.events.event import Event", "from google.genai import types"]
    if any(s.confirmations or s.auth_requests or s.rewind_before or s.compaction for s in session):
        imports.append("from google.adk.events.event_actions import EventActions")
    if any(s.compaction for s in session):
        imports.append("from google.adk.events.event_actions import EventCompaction")
    if any(s.confirmations for s in session):
        imports.append("from google.adk.tools.tool_confirmation import ToolConfirmation")
    if any(s.auth_requests for s in session):
        imports += [
            "from fastapi.openapi.models import APIKey",
            "from fastapi.openapi.models import APIKeyIn",
            "from google.adk.auth.auth_tool import AuthConfig",
        ]
    return imports


def _positions(name: str, positions: list[int]) -> list[Atom | Group]:
    return [Atom(f"{name}[{i}]") for i in positions]


def _unit_body(case: UnitCase, strings: Strings) -> tuple[list[str], list[str]]:
    session, window = case.session, case.window
    length = reference.longest_self_contained_prefix(session, window)
    dead = sorted(reference.provably_dead_call_ids(session, window))
    newest = reference.newest_invocation(session)
    lines = _events_lines(session, strings)
    lines += render(list_of(_positions("events", list(window))), "  ", "window = ")
    lines += [
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
        "        window,",
        "        all_events=events,",
        f"        newest_invocation_id={strings(newest).text if newest else 'None'},",
        "    )",
    ]
    expected = Group("{", tuple(("", strings(x)) for x in dead), "}") if dead else Atom("set()")
    lines += render(expected, "    ", "expected_dead = ")
    lines.append("    assert dead == expected_dead")
    imports = ["import inspect", "from google.adk.apps import compaction", *_step_imports(session)]
    return imports, lines


def _token_body(case: TokenCase, strings: Strings) -> tuple[list[str], list[str]]:
    session, k = case.session, case.retention
    candidates = reference.token_candidates(session)
    taken = reference.token_threshold_range(session, k)
    lines = _events_lines(session, strings)
    if k > 0:  # only the split reads the candidates
        lines += render(list_of(_positions("events", list(candidates))), "  ", "candidates = ")
        lines.append("")
        split = reference.safe_token_split(session, candidates, k)
        lines += [
            "  split = compaction._safe_token_compaction_split_index(",
            f"      candidate_events=candidates, event_retention_size={k}",
            "  )",
            f"  assert split == {split}",
            "",
        ]
    else:
        lines.append("")
    seeds = len(reference.token_seeds(session, taken))
    lines += [
        "  result = compaction._events_to_compact_for_token_threshold(",
        f"      events=events, event_retention_size={k}",
        "  )",
    ]
    if seeds == 1:
        lines.append("  result = result[1:]  # the rolling-summary seed comes first")
    elif seeds:
        lines.append(
            f"  result = result[{seeds}:]  # a rolling-summary seed per branch comes first"
        )
    lines += render(list_of(_positions("events", list(taken))), "  ", "expected = ")
    lines += [
        "  assert len(result) == len(expected), 'compacts the wrong number of events'",
        "  assert all(got is want for got, want in zip(result, expected))",
    ]
    imports = ["from google.adk.apps import compaction", *_step_imports(session)]
    return imports, lines


__all__ += ["module_head", "name_of_test", "used_imports"]
