"""The runner driver's side of the application: the scripted models, the tools,
tree ``director``'s root, the session services that report what is stored,
and the app itself (see :mod:`.adk_runner` for what each does).

Their state lives in the run in progress (:data:`_ACTIVE`, a
:class:`~compaction_harness.sdk.python.runner_driver.RunnerDriver`), not in
the objects ADK holds: the node runtime copies agents.
"""

from __future__ import annotations

import types
import warnings
from typing import Any

from google.adk.agents.base_agent import BaseAgent
from google.adk.agents.llm_agent import LlmAgent
from google.adk.agents.parallel_agent import ParallelAgent
from google.adk.apps.app import App
from google.adk.apps.llm_event_summarizer import LlmEventSummarizer
from google.adk.models.base_llm import BaseLlm
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.long_running_tool import LongRunningFunctionTool
from google.adk.tools.tool_context import ToolContext

from ...spec import scripts as ops
from ...spec.app_shape import HARNESS_APP, AppShape
from .adk import _EVENT_KEY, compaction_config, request_text_chars, summary_reply, summary_text

USER = "u"

# -- the harness's side of the app: models, tools, the director --------------------
#: The run in progress. ADK's time provider is process-wide, so runs never overlap.
_ACTIVE: Any = None


def _driver() -> Any:
    if _ACTIVE is None:  # pragma: no cover - only reachable by misuse
        raise RuntimeError("no runner-driver run is active")
    return _ACTIVE


class _ScriptedLlm(BaseLlm):
    """An agent's model: each call waits for the reply the script says.

    State lives in the active driver, not in the model, so that copies ADK
    makes of an agent (the node runtime clones it) share it."""

    async def generate_content_async(self, llm_request, stream: bool = False):
        reply = await _driver().model_called(self.model, llm_request)
        yield reply


class _SummaryLlm(BaseLlm):
    """The summariser's model: answers with the next summary text, and usage
    metadata from the token model (four characters a token), as the emulating
    driver's summary model does."""

    async def generate_content_async(self, llm_request, stream: bool = False):
        driver = _driver()
        given = request_text_chars(llm_request)
        text = summary_text(
            len(driver.record.summaries) - 1, given, driver.config.summary, driver.threshold
        )
        yield summary_reply(text, given)


class _RecordingSummarizer(LlmEventSummarizer):
    """ADK's ``LlmEventSummarizer``; each call's input is recorded first."""

    async def maybe_summarize_events(self, *, events):
        _driver().summarising(events)
        return await super().maybe_summarize_events(events=events)


#: A stand-in for the event id the harness's tag will name (see :func:`_result`).
_UNNAMED = "00000000-0000-0000-0000-000000000000"


def _result(chars: int) -> dict:
    """A tool result or client answer of ``chars`` characters, with the
    harness's event tag (``adk._EVENT_KEY``) holding a stand-in of an event
    id's length. The emulating driver's stored responses carry the tag with
    their event's id, which ADK counts in its size estimates
    (``_count_chars_in_content``, ``_serialized_size``) and the token model in
    the prompt: carrying one here too keeps both drivers' sizes equal.
    :func:`tagged` puts the stored event's id in when a prompt is read."""
    return {"result": "r" * chars, _EVENT_KEY: _UNNAMED}


async def lookup(query: str, tool_context: ToolContext) -> dict:
    """Looks something up (answers at once, unless the script says the tool's
    process dies: then it never returns)."""
    with _driver().tool_run(tool_context, "plain"):
        return await _driver().plain_tool()


def export(query: str, tool_context: ToolContext) -> dict | None:
    """Starts an export that finishes later: returns None (the invocation
    pauses) or an interim result, as the script says."""
    with _driver().tool_run(tool_context, "long_running"):
        return _driver().long_running_tool()


def transfer(query: str, tool_context: ToolContext) -> dict:
    """Moves money (asks the user to confirm first)."""
    with _driver().tool_run(tool_context, "confirmation"):
        return _result(20)


def calendar(query: str, tool_context: ToolContext) -> dict:
    """Reads a calendar; asks for a credential until it has one."""
    with _driver().tool_run(tool_context, "credential") as run:
        config = _auth_config()
        if tool_context.get_auth_response(config) is None:
            tool_context.request_credential(config)
            run.asked()
        return _result(20)


def _auth_config() -> Any:
    from fastapi.openapi.models import HTTPBearer
    from google.adk.auth.auth_tool import AuthConfig

    return AuthConfig(auth_scheme=HTTPBearer(), credential_key="harness_calendar")


async def _gate(context: Any) -> str:
    """Every agent's instruction provider: holds the agent's next step until the
    script reaches the operation that calls its model.

    ADK runs the instructions request processor before the compaction processor
    and before it builds the model call's event (``_create_request_processors``,
    ``_run_one_step_async``), so what the script does in between (no-ops, clock
    operations) comes before that compaction and that event's timestamp, as in
    the emulating driver. Adds no instruction."""
    await _driver().gate(context.agent_name, context.invocation_id)
    return ""


class _Director(BaseAgent):
    """Tree ``director``'s root: runs the sub-agent the script names next, until
    the script ends the run (ADK's custom-agent pattern)."""

    async def _run_async_impl(self, ctx):
        while (name := await _driver().director_waits()) is not None:
            async for event in self.find_sub_agent(name).run_async(ctx):
                yield event


# -- session services that report what is stored --------------------------------
def _recording(base: type) -> type:
    """A subclass of the session service ``base`` that tells the driver which
    session object the ``Runner`` holds and each event it stores."""

    class Recording(base):
        async def peek(self, **kwargs):
            """The session as a request would load it now (nothing recorded)."""
            return await super().get_session(**kwargs)

        async def get_session(self, **kwargs):
            session = await super().get_session(**kwargs)
            if session is not None and _ACTIVE is not None:
                _ACTIVE.view = session
                _ACTIVE.loaded = {e.id for e in session.events}
            return session

        async def append_event(self, session, event):
            stored = await super().append_event(session, event)
            if _ACTIVE is not None and not event.partial:
                _ACTIVE.stored(session, event)
            return stored

    Recording.__name__ = f"Recording{base.__name__}"
    return Recording


def _before_model(callback_context: Any, llm_request: Any) -> None:
    """Every agent's ``before_model_callback``: records the request (changes nothing)."""
    _driver().before_model(callback_context, llm_request)
    return None


def _credential_response(args: dict) -> dict:
    """What a client sends back for an ``adk_request_credential`` call: the
    ``AuthConfig`` from the call's arguments with a credential filled in (the
    documented pattern)."""
    from google.adk.auth.auth_credential import (
        AuthCredential,
        AuthCredentialTypes,
        HttpAuth,
        HttpCredentials,
    )
    from google.adk.auth.auth_tool import AuthConfig

    config = AuthConfig.model_validate(args["authConfig"])
    config.exchanged_auth_credential = AuthCredential(
        auth_type=AuthCredentialTypes.HTTP,
        http=HttpAuth(scheme="bearer", credentials=HttpCredentials(token="token")),
    )
    return config.model_dump(by_alias=True, exclude_none=True, mode="json")


def _renamed(func: Any, name: str) -> Any:
    """``func`` under the user's tool name ``name`` (``FunctionTool`` names a
    tool, and declares it, after its function): same code, same signature."""
    if func.__name__ == name:
        return func
    copy = types.FunctionType(
        func.__code__, func.__globals__, name, func.__defaults__, func.__closure__
    )
    copy.__doc__, copy.__annotations__ = func.__doc__, dict(func.__annotations__)
    copy.__qualname__ = name
    return copy


def build_app(config: ops.ScriptConfig, tree: str, names: AppShape = HARNESS_APP) -> App:
    """The ``App`` of one run: tree ``agent`` or ``director`` (see
    :mod:`.adk_runner`), its agents and tools named as ``names`` says (the
    harness's own app, or a user's app's shape: only the kinds of tool it has)."""
    summarizer = _RecordingSummarizer(llm=_SummaryLlm(model="harness-summary"))
    compaction = compaction_config(summarizer, dict(config.triggers))
    made = {
        "plain": lambda n: FunctionTool(_renamed(lookup, n)),
        "long_running": lambda n: LongRunningFunctionTool(_renamed(export, n)),
        "confirmation": lambda n: FunctionTool(_renamed(transfer, n), require_confirmation=True),
        "credential": lambda n: FunctionTool(_renamed(calendar, n)),
    }
    agent = LlmAgent(
        name=names.agent,
        model=_ScriptedLlm(model=names.agent),
        tools=[made[kind](name) for kind, name in names.tools],
        instruction=_gate,
        before_model_callback=_before_model,
    )
    if tree == "agent":
        root: BaseAgent = agent
    else:

        def scripted(name: str) -> LlmAgent:
            return LlmAgent(
                name=name,
                model=_ScriptedLlm(model=name),
                instruction=_gate,
                before_model_callback=_before_model,
            )

        sub_agents: list[BaseAgent] = [agent]
        if names.helper is not None:
            sub_agents.append(scripted(names.helper))
        if names.team is not None:
            with warnings.catch_warnings():  # deprecated in favour of Workflow (2.x)
                warnings.simplefilter("ignore", DeprecationWarning)
                sub_agents.append(
                    ParallelAgent(name=names.team, sub_agents=[scripted(n) for n in names.branches])
                )
        root = _Director(name=names.root or "director", sub_agents=sub_agents)
    return App(name=names.name, root_agent=root, events_compaction_config=compaction)
