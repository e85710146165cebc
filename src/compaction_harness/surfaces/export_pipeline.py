"""Pipeline fixtures (kinds ``script`` and ``pipeline``) as upstream tests.

A pipeline fixture is a run: events appended one by one, ADK's compaction
called before model calls and at invocation ends, ADK's contents assembly
judged at every model call. Its upstream test keeps the one call that breaks
the invariant. :func:`trace` (of :mod:`.export_trace`, importable from here
too) runs the fixture again on the installed ADK with the emulating driver
(:mod:`compaction_harness.sdk.python.driver`, or
:func:`compaction_harness.sdk.python.pipeline.run_pipeline_case` for recorded
sessions), nothing classified (a run never classifies), and records each ADK call the driver
makes with the stored session before it (deep copies of the real ``Event``
objects), the summaries it made and what the checks found after it.
:func:`pipeline_module` picks the first call after which the fixture's
invariant is broken and writes a test that

* builds those events (ADK's own earlier summaries among them) and appends
  them through an ``InMemorySessionService``, as the Runner stores them;
* makes the same call through the same entry point: at an invocation's end
  ``google.adk.apps.compaction._run_compaction_for_sliding_window`` (which
  tries token-threshold compaction first); before a model call the LLM
  flow's compaction request processor (``request_processor`` of
  ``google.adk.flows.llm_flows.context._compaction``, 2.2.0 and later);
  for a request, that processor and then the contents assembly
  ``_get_contents`` (``flows/llm_flows/context/_contents.py``, or
  ``flows/llm_flows/contents.py`` before the ``context`` package); the
  summariser is ADK's own ``LlmEventSummarizer`` over a scripted model that
  answers with the texts and stamps the run's summaries had;
* asserts the invariant in plain terms, with the events named by position
  (P1: the call the summariser was given is not split from its answer; P2:
  the request pairs every response with the calls right before it, and
  holds the running invocation's user message; P3: the backlog that could
  be compacted is within the bound; P4: an event is in the prompt or in a
  summary that is; P5: a summary carries no branch its readers cannot see;
  P6: a summary takes something no kept summary covers, and the token
  trigger decides the same without counts a summary made stale).

The helpers such a test defines (the scripted summariser, the stored
session, the two entry points, what the assertions read) are source text in
:mod:`.export_helpers`.

Refused (:class:`~compaction_harness.surfaces.export_head.ExportError`): runner-driver
scripts (ADK's ``Runner`` with a scripted model and tools is no single call),
database storage (the fault is in the service's reload, which needs a SQLite
file and the ``[db]`` extra), P7, P0, credential requests (their
``AuthConfig`` is not rebuilt), and a fixture that does not break its
invariant on the installed release (export it with the release it fails on).
"""

from __future__ import annotations

from typing import Any

from ..spec.invariants import Violation
from ..store.fixtures import Fixture
from ._pysource import Atom, Group, Strings, call, list_of, render
from .export_head import ExportError, module_head, name_of_test, used_imports
from .export_helpers import HELPERS, MODEL
from .export_trace import TracedCall, failing_call, trace

__all__ = ["TracedCall", "pipeline_module", "trace"]


def _refusal(fixture: Fixture) -> str | None:
    """Why ``fixture`` has no faithful upstream test, or None."""
    case = fixture.case
    config = getattr(case, "config", None)
    if getattr(config, "driver", "emulated") == "runner":
        return (
            "a runner-driver script: its run is ADK's Runner with a scripted model and tools, "
            "not one ADK call a test can make"
        )
    storage = getattr(config, "storage", "memory")
    if storage in ("postgresql", "mariadb"):
        return (
            f"{storage} storage: the fault lives in DatabaseSessionService's reload from a "
            f"{storage} server, which an upstream unit test does not have"
        )
    if storage != "memory":
        service = "SqliteSessionService" if storage == "sqlite" else "DatabaseSessionService"
        return (
            f"{storage} storage: the fault lives in {service}'s reload, which needs a SQLite "
            "file" + (" and the google-adk[db] extra" if storage == "database" else "")
        )
    if fixture.invariant in ("P0", "P7"):
        return f"{fixture.invariant} is judged on a crash or a database round trip, not one call"
    return None


def pipeline_module(fixture: Fixture, *, year: int | None = None) -> str:
    """The source of the upstream test for a ``script`` or ``pipeline``
    fixture (see the module docstring). Raises
    :class:`~compaction_harness.surfaces.export_head.ExportError` with the reason when it
    has none."""
    where = str(fixture.path) if fixture.path else fixture.file_name()
    reason = _refusal(fixture)
    if reason:
        raise ExportError(f"{where}: cannot be exported: {reason}")
    from ..sdk.python.adk import ADK_RELEASE, NotApplicable

    try:
        calls = trace(fixture)
    except NotApplicable as exc:
        raise ExportError(
            f"{where}: cannot be exported on google-adk {ADK_RELEASE}: {exc}"
        ) from None
    found = failing_call(fixture, calls)
    if found is None:
        hint = (
            f"run export with google-adk {fixture.adk_release}, the release it fails on"
            if fixture.adk_release != ADK_RELEASE
            else "it no longer fails on its own release"
        )
        raise ExportError(
            f"{where}: {fixture.invariant} holds on google-adk {ADK_RELEASE}, so there is no "
            f"failing call to export ({hint})"
        )
    traced, violation = found
    if any(
        e.actions and e.actions.requested_auth_configs for e in (traced.processor or traced).before
    ):
        raise ExportError(
            f"{where}: cannot be exported: the session holds a credential request, whose "
            "AuthConfig the exporter does not rebuild"
        )
    return _Writer(fixture, traced, violation, calls).module(year)


# -- writing the test -----------------------------------------------------------
#: A function call's or response's part: its field of ``types.Part``, its
#: type, and the field that holds its arguments or its response.
_FUNCTION_PARTS = (
    ("function_call", "types.FunctionCall", "args"),
    ("function_response", "types.FunctionResponse", "response"),
)


class _Writer:
    """Builds the test module for one failing call."""

    def __init__(
        self, fixture: Fixture, traced: TracedCall, violation: Violation, calls: list[TracedCall]
    ) -> None:
        self.fixture = fixture
        self.traced = traced
        self.violation = violation
        self.calls = calls
        self.strings = Strings()
        self.imports: set[str] = {
            "import asyncio",
            "from google.adk.events.event import Event",
            "from google.genai import types",
        }
        self.helpers: list[str] = []
        #: The call whose session the test starts from.
        self.start = traced.processor or traced

    # -- values and events ----------------------------------------------------
    def value(self, value: Any) -> Atom | Group:
        """A JSON-like value (what function call arguments and responses hold)."""
        if isinstance(value, str):
            return self.strings(value)
        if isinstance(value, bool) or value is None or isinstance(value, int | float):
            return Atom(repr(value))
        if isinstance(value, dict):
            items = tuple(
                (f"{self.strings(str(k)).text}: ", self.value(v)) for k, v in value.items()
            )
            return Group("{", items, "}")
        if isinstance(value, list | tuple):
            return Group("[", tuple(("", self.value(v)) for v in value), "]")
        raise ExportError(f"cannot write a value of type {type(value).__name__}")

    def part(self, part: Any) -> Group:
        for field_name, kind, payload in _FUNCTION_PARTS:
            inner = getattr(part, field_name)
            if inner is not None:
                values = {
                    "id": self.strings(inner.id) if inner.id is not None else None,
                    "name": self.strings(inner.name or ""),
                    payload: self.value(getattr(inner, payload) or {}),
                }
                return call("types.Part", **{field_name: call(kind, **values)})
        if part.text is not None:
            return call(
                "types.Part",
                text=self.strings(part.text),
                thought=Atom("True") if part.thought else None,
            )
        raise ExportError("an event part other than text, a function call or a response")

    def content(self, content: Any) -> Group:
        parts = [self.part(p) for p in content.parts or []]
        return call(
            "types.Content",
            role=self.strings(content.role) if content.role else None,
            parts=list_of(parts, explode=len(parts) > 1),
        )

    def usage(self, usage: Any) -> Group | None:
        if usage is None:
            return None
        counts = {
            name: Atom(str(getattr(usage, name)))
            for name in ("prompt_token_count", "candidates_token_count", "total_token_count")
            if getattr(usage, name, None) is not None
        }
        return call("types.GenerateContentResponseUsageMetadata", **counts)

    def actions(self, actions: Any) -> Group | None:
        if actions is None:
            return None
        fields: dict[str, Atom | Group] = {}
        if actions.requested_tool_confirmations:
            self.imports.add("from google.adk.tools.tool_confirmation import ToolConfirmation")
            items = []
            for key, confirmation in actions.requested_tool_confirmations.items():
                values = {
                    name: self.value(getattr(confirmation, name))
                    for name in sorted(confirmation.model_fields_set)
                }
                items.append((f"{self.strings(key).text}: ", call("ToolConfirmation", **values)))
            fields["requested_tool_confirmations"] = Group("{", tuple(items), "}")
        if getattr(actions, "rewind_before_invocation_id", None):
            fields["rewind_before_invocation_id"] = self.strings(
                actions.rewind_before_invocation_id
            )
        if actions.compaction is not None:
            self.imports.add("from google.adk.events.event_actions import EventCompaction")
            c = actions.compaction
            fields["compaction"] = call(
                "EventCompaction",
                start_timestamp=Atom(repr(c.start_timestamp)),
                end_timestamp=Atom(repr(c.end_timestamp)),
                compacted_content=self.content(c.compacted_content)
                if c.compacted_content
                else None,
            )
        if not fields:
            return None
        self.imports.add("from google.adk.events.event_actions import EventActions")
        return call("EventActions", **fields)

    def event(self, event: Any) -> Group:
        long_running = sorted(event.long_running_tool_ids or ())
        return call(
            "Event",
            explode=True,
            invocation_id=self.strings(event.invocation_id),
            author=self.strings(event.author),
            timestamp=Atom(repr(event.timestamp)),
            branch=self.strings(event.branch) if event.branch else None,
            isolation_scope=self.strings(event.isolation_scope)
            if getattr(event, "isolation_scope", None)
            else None,
            content=self.content(event.content) if event.content else None,
            actions=self.actions(event.actions),
            long_running_tool_ids=Group(
                "{", tuple(("", self.strings(x)) for x in long_running), "}"
            )
            if long_running
            else None,
            usage_metadata=self.usage(event.usage_metadata),
        )

    # -- the module -------------------------------------------------------------
    def module(self, year: int | None) -> str:
        body = self.test_body()
        events = list_of([self.event(e) for e in self.start.before], explode=True)
        events_fn = [
            "def _events():",
            '  """The session as stored before the call (earlier summaries included)."""',
            *render(events, "  ", "return "),
        ]
        rest = [*self.strings.definitions(), ""] if self.strings.definitions() else []
        rest.append("")
        for helper in [*self.helpers, "\n".join(events_fn)]:
            rest += [*helper.splitlines(), "", ""]
        rest += [f"def {name_of_test(self.fixture)}():", *body]
        imports = used_imports(sorted(self.imports), rest)
        return "\n".join([*module_head(self.fixture, imports, year=year), *rest]) + "\n"

    def need(self, *names: str) -> None:
        """Add the named helpers (and what they need), once each."""
        for name in names:
            source, imports, needs = HELPERS[name]
            self.need(*needs)
            if source not in self.helpers:
                self.helpers.append(source)
                self.imports.update(imports)

    def app_lines(self) -> list[str]:
        config = self.fixture.case.config
        values = {
            k: getattr(config, k) if not isinstance(config, dict) else config[k]
            for k in (
                "compaction_interval",
                "overlap_size",
                "token_threshold",
                "event_retention_size",
            )
        }
        kwargs = {k: Atom(str(v)) for k, v in values.items() if v is not None}
        texts = list_of([self.strings(t) for t in self.traced_texts()])
        stamps = list_of([Atom(repr(s)) for s in self.traced_stamps()])
        lines = render(call("_Summarizer", texts=texts, stamps=stamps), "  ", "summarizer = ")
        config_node = call("EventsCompactionConfig", summarizer=Atom("summarizer"), **kwargs)
        app = call(
            "App",
            name=Atom("'harness'"),
            root_agent=Atom(f"LlmAgent(name='agent', model='{MODEL}')"),
            events_compaction_config=config_node,
        )
        lines += render(app, "  ", "app = ")
        self.need("summarizer")
        self.imports.update(
            {
                "from google.adk.agents.llm_agent import LlmAgent",
                "from google.adk.apps.app import App",
                "from google.adk.apps.app import EventsCompactionConfig",
            }
        )
        return lines

    def traced_texts(self) -> list[str]:
        return [*(self.traced.processor.texts if self.traced.processor else []), *self.traced.texts]

    def traced_stamps(self) -> list[float]:
        return [
            *(self.traced.processor.stamps if self.traced.processor else []),
            *self.traced.stamps,
        ]

    def run_lines(self) -> list[str]:
        """The call itself: ``session = asyncio.run(...)``."""
        traced = self.start
        if traced.kind == "end":
            self.need("end_invocation")
            return ["  session = asyncio.run(_end_invocation(app, events))"]
        if traced.kind == "model":
            self.need("before_model_call")
            return render(
                call(
                    "_before_model_call",
                    Atom("app"),
                    Atom("events"),
                    self.strings(traced.agent),
                    self.strings(traced.branch) if traced.branch else Atom("None"),
                ),
                "  ",
                "session = asyncio.run(",
                ")",
            )
        self.need("stored")
        return ["  _, session = asyncio.run(_stored(events))"]

    def test_body(self) -> list[str]:
        v = self.violation
        if v.invariant == "P6" and "stale" in v.message:
            if self.traced.kind != "end":
                raise ExportError(
                    "P6's stale-count clause before a model call has no exported form "
                    "(only at an invocation's end)"
                )
            # Judged on the session before the call: the call itself is not made.
            return [*self.app_lines(), *self.check_p6_stale()]
        run = self.run_lines()
        if v.invariant not in ("P2", "P4"):  # the session is not read again
            run[0] = run[0].replace("_, session = ", "").replace("session = ", "")
        app = self.app_lines() if self.start.kind != "request" else []
        lines = ["  events = _events()", *app, *run]
        check = {
            "P1": self.check_p1,
            "P2": self.check_p2,
            "P3": self.check_p3,
            "P4": self.check_p4,
            "P5": self.check_p5,
            "P6": self.check_p6,
        }.get(v.invariant)
        if check is None:
            raise ExportError(f"{v.invariant} has no exported form")
        return lines + check()

    # -- the invariants, in plain terms ---------------------------------------------
    def _events_at(self, positions: list[int]) -> Group:
        return list_of([Atom(f"events[{i}]") for i in positions])

    def check_p1(self) -> list[str]:
        v = self.violation
        (position,), (cid,) = v.positions, v.ids
        before = self.traced.before
        answers = [
            j
            for j in range(position + 1, len(before))
            if any(
                p.function_response is not None and p.function_response.id == cid
                for p in (before[j].content.parts or [] if before[j].content else [])
            )
        ]
        self.need("given")
        lines = [
            "",
            # The id stands alone on its line: an ADK-made id is 40 characters,
            # and a longer line would break adk-python's 80 columns.
            f"  # events[{position}] calls {cid}.",
            "  # A summary that takes the call must take its answer too, or the answer",
            "  # is left without its call.",
        ]
        lines += render(self._events_at(answers), "  ", "answers = ")
        lines += [
            f"  if _given(summarizer, events[{position}]):",
            "    assert any(",
            "        _given(summarizer, a) for a in answers",
            "    ), 'the summary splits the call from its answer'",
        ]
        return lines

    def check_p2(self) -> list[str]:
        v = self.violation
        self.need("contents")
        agent = self.strings(self.traced.agent).text
        branch = self.strings(self.traced.branch).text if self.traced.branch else "None"
        lines = render(
            call("_contents", Atom("session.events"), Atom(agent), Atom(branch)),
            "  ",
            "contents = ",
        )
        if v.details.get("cause") == "opener missing":
            opener = self.strings(self.traced.opener or "")
            lines += [
                "",
                "  # The user message that opened the running invocation reaches the model",
                "  # as a user turn at every model call of that invocation.",
                f"  opener = {opener.text}",
                "  assert any(",
                "      c.role == 'user' and any(p.text == opener for p in c.parts or [])",
                "      for c in contents",
                "  ), 'the request lost the user message it answers'",
            ]
            return lines
        self.need("unpaired")
        lines += [
            "",
            "  # Every content with function responses comes right after the model",
            "  # content whose calls it answers, with exactly those ids, once each.",
            "  assert not _unpaired(contents)",
        ]
        return lines

    def check_p3(self) -> list[str]:
        v = self.violation
        bound = int(str(v.expected).split()[-1])
        self.need("given")
        lines = [
            "",
            "  # No summary covers these events, and nothing pending stops compacting them;",
            f"  # with this configuration at most {bound} of them may wait for a later one.",
        ]
        lines += render(self._events_at(list(v.positions)), "  ", "backlog = ")
        lines += [
            "  waiting = [e for e in backlog if not _given(summarizer, e)]",
            f"  assert len(waiting) <= {bound}, f'compaction stalled: {{len(waiting)}} wait'",
        ]
        return lines

    def check_p4(self) -> list[str]:
        (position,) = self.violation.positions
        self.need("contents", "shown")
        agent = self.strings(self.traced.agent).text
        branch = self.strings(self.traced.branch).text if self.traced.branch else "None"
        lines = render(
            call("_contents", Atom("session.events"), Atom(agent), Atom(branch)),
            "  ",
            "contents = ",
        )
        covered = sorted(self.traced.covered)
        lines += [
            "",
            f"  # events[{position}] is in the prompt, or in a summary that is: the kept",
            "  # summaries already stand for the events below, and the summaries made",
            "  # now for what they were given.",
        ]
        lines += render(self._events_at(covered), "  ", "covered = ")
        lines += []
        if self.start.kind != "request":  # summaries made now count too
            lines += [
                "  texts = [p.text for c in contents for p in c.parts or [] if p.text]",
                "  for taken, made in summarizer.pairs:",
                "    if made.actions.compaction.compacted_content.parts[0].text in texts:",
                "      covered += taken",
            ]
        lines += [
            f"  lost = events[{position}]",
            "  assert _shown(lost, contents) or any(",
            "      lost is e for e in covered",
            f"  ), 'events[{position}] is neither in the prompt nor summarised'",
        ]
        return lines

    def check_p5(self) -> list[str]:
        self.need("sees")
        return [
            "",
            "  # A summary is read by the agents on its branch and below it (every agent",
            "  # when it has none): it may carry only events all of them can see.",
            "  for taken, made in summarizer.pairs:",
            "    leaked = [e.branch for e in taken if not _sees(made.branch, e.branch)]",
            "    assert not leaked, f'a summary on {made.branch} carries {leaked}'",
        ]

    def check_p6(self) -> list[str]:
        v = self.violation
        if "stale" in v.message:
            return self.check_p6_stale()
        traced = self.traced
        fresh = [
            i
            for i, e in enumerate(traced.before)
            if i in traced.live
            and i not in traced.covered
            and not (e.actions and e.actions.compaction)
        ]
        self.need("given")
        lines = [
            "",
            "  # The kept summaries cover every other event: a summary must take at",
            "  # least one of these, or it is wasted work.",
        ]
        lines += render(self._events_at(fresh), "  ", "fresh = ")
        lines += [
            "  for taken in summarizer.given:",
            "    assert any(",
            "        any(e is f for f in fresh) for e in taken",
            "    ), 'a summary of nothing new'",
        ]
        return lines

    def check_p6_stale(self) -> list[str]:
        positions = list(self.violation.positions)
        self.need("token_trigger_fires")
        lines = [
            "",
            "  # The counts of these events measured prompts that a summary has since",
            "  # replaced: the token trigger (at the invocation's end) must decide the",
            "  # same without them.",
            "  without = _events()",
        ]
        lines += render(list_of([Atom(str(i)) for i in positions]), "  ", "for i in ", ":")
        lines += [
            "    without[i].usage_metadata.prompt_token_count = None",
            "  fires = asyncio.run(_token_trigger_fires(app, _events()))",
            "  fires_without = asyncio.run(_token_trigger_fires(app, without))",
            "  assert fires == fires_without, 'the trigger reads counts made stale'",
        ]
        return lines
