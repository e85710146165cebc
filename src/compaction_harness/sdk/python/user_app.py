"""A team's own ADK app, read as an :class:`~compaction_harness.spec.app_shape.AppShape`.

:func:`load` imports ``MODULE:ATTR`` (the user's code runs as far as its
import and construction run, as ``adk web`` would run it; nothing else of it
is called), and :func:`read_app` reads from the ``App`` (or root agent) what
compaction can see: the agent tree, each tool's name and kind (from its
class and constructor arguments: ``LongRunningFunctionTool`` /
``is_long_running``, ``FunctionTool(require_confirmation=...)``,
``AuthenticatedFunctionTool``), the ``EventsCompactionConfig`` trigger
values, and the sizes of the static instructions and the tool declarations
(``BaseTool._get_declaration``, which inspects a function's signature and
never calls it). Everything the reading had to leave out is said in
:attr:`AppReading.notes`.

Errors are :class:`AppError`, one line each: a spec without ``:``, a module
that does not import (with the exception it raised), a missing attribute,
an object that is neither an ``App`` nor an agent, an app without an LLM
agent.
"""

from __future__ import annotations

import importlib
import json
import sys
import warnings
from dataclasses import dataclass, field, replace
from typing import Any

from ...spec.app_shape import TOOL_KINDS, AppShape
from ...spec.scripts import TRIGGER_KEYS

__all__ = ["AppError", "AppReading", "load", "read_app"]


class AppError(Exception):
    """The app cannot be loaded or read; ``str()`` is one line naming why."""


@dataclass(frozen=True)
class AppReading:
    """What :func:`read_app` read.

    Attributes:
        shape: the app's shape (names and kinds).
        triggers: the ``EventsCompactionConfig`` trigger values by key
            (``compaction_interval``, ``overlap_size``, ``token_threshold``,
            ``event_retention_size``; None where unset), or None: the app
            has no compaction configuration.
        system_chars: characters of the agent's static instruction and the
            root's global instruction (an instruction provider counts 0).
        tools_chars: characters of the agent's tool declarations as JSON.
        strict_provider: the agent's model is reached through LiteLLM.
        tree: one line per agent of the app, indented by depth:
            ``name (class)`` and, for the agent the script calls, its tools.
        notes: what the shape leaves out of the app, one sentence each.
        agents: every agent's name, the root first, depth first (what
            ``minimize --agent`` takes for a session the app recorded).
    """

    shape: AppShape
    triggers: dict[str, int | None] | None
    system_chars: int
    tools_chars: int
    strict_provider: bool
    tree: tuple[str, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)
    agents: tuple[str, ...] = field(default_factory=tuple)


def load(spec: str) -> Any:
    """The object ``spec`` (``MODULE:ATTR``, ``MODULE`` importable from the
    working directory or ``sys.path``) names. Raises :class:`AppError`."""
    module_name, colon, attr = spec.partition(":")
    if not colon or not module_name or not attr:
        raise AppError(f"{spec!r}: expected MODULE:ATTR (for example examples.support:app)")
    if "" not in sys.path:
        sys.path.insert(0, "")  # as `python -m` does: the working directory's modules
    try:
        with warnings.catch_warnings():  # ADK's [EXPERIMENTAL] notices, not the user's news
            warnings.filterwarnings("ignore", message=r"\[EXPERIMENTAL\]")
            warnings.simplefilter("ignore", DeprecationWarning)  # e.g. ParallelAgent on 2.x
            module = importlib.import_module(module_name)
    except Exception as exc:  # the user's code: whatever it raised, in one line
        first = (str(exc).splitlines() or [""])[0]
        raise AppError(
            f"module {module_name!r} does not import: {type(exc).__name__}: {first}"
        ) from None
    from google.adk.agents.base_agent import BaseAgent
    from google.adk.apps.app import App

    target: Any = module
    for part in attr.split("."):
        if not hasattr(target, part):
            raise AppError(f"module {module_name!r} has no attribute {attr!r}")
        target = getattr(target, part)
    if not isinstance(target, App | BaseAgent):
        kind = type(target).__name__
        article = "an" if kind[:1].lower() in "aeiou" else "a"
        raise AppError(
            f"{spec} is {article} {kind}, not a google.adk App or agent "
            f"(google-adk's App, or a root agent such as an LlmAgent)"
        )
    return target


def _agents(root: Any) -> list[tuple[int, Any, Any]]:
    """Every agent of the tree, depth first: (depth, agent, its parent)."""
    out: list[tuple[int, Any, Any]] = []

    def walk(agent: Any, depth: int, parent: Any) -> None:
        out.append((depth, agent, parent))
        for sub in agent.sub_agents:
            walk(sub, depth + 1, agent)

    walk(root, 0, None)
    return out


def _tool_kind(tool: Any) -> tuple[str | None, str]:
    """(kind, name) of one entry of an agent's ``tools``; kind None: not a
    tool whose calls the harness can script (a toolset, a built-in tool)."""
    from google.adk.tools.base_tool import BaseTool
    from google.adk.tools.function_tool import FunctionTool

    if not isinstance(tool, BaseTool):
        if callable(tool):  # ADK wraps a plain function in a FunctionTool
            return "plain", getattr(tool, "__name__", type(tool).__name__)
        return None, type(tool).__name__
    try:
        from google.adk.tools.authenticated_function_tool import AuthenticatedFunctionTool
    except ImportError:  # releases without it
        AuthenticatedFunctionTool = ()  # type: ignore[assignment]
    if getattr(tool, "is_long_running", False):
        return "long_running", tool.name
    if isinstance(tool, AuthenticatedFunctionTool):
        return "credential", tool.name
    if isinstance(tool, FunctionTool) and getattr(tool, "_require_confirmation", False):
        return "confirmation", tool.name
    if isinstance(tool, FunctionTool):
        return "plain", tool.name
    return None, tool.name


def _declaration_chars(tool: Any) -> int:
    from google.adk.tools.function_tool import FunctionTool

    if not hasattr(tool, "_get_declaration"):
        tool = FunctionTool(tool) if callable(tool) else None
    declaration = tool._get_declaration() if tool is not None else None
    if declaration is None:
        return 0
    return len(json.dumps(declaration.model_dump(mode="json", exclude_none=True)))


def read_app(target: Any, source: str = "") -> AppReading:
    """Read ``target`` (an ``App``, or a root agent) as :class:`AppReading`.

    The agent the script calls is the root when it is an ``LlmAgent``, else
    the first LLM agent (depth first) with tools, else the first LLM agent;
    ``helper`` is another LLM agent outside parallel agents; ``team`` the
    first ``ParallelAgent`` with two more LLM sub-agents. Raises
    :class:`AppError` when the tree has no LLM agent."""
    from google.adk.agents.llm_agent import LlmAgent
    from google.adk.agents.parallel_agent import ParallelAgent
    from google.adk.apps.app import App

    app = target if isinstance(target, App) else None
    root = app.root_agent if app is not None else target
    agents = _agents(root)
    llms = [a for _, a, _ in agents if isinstance(a, LlmAgent)]
    if not llms:
        raise AppError(f"{source or root.name}: no LlmAgent in the tree: no model to script")
    notes: list[str] = []
    agent = root if isinstance(root, LlmAgent) else next((a for a in llms if a.tools), llms[0])
    tools: dict[str, str] = {}
    tree: list[str] = []
    for depth, each, _ in agents:
        line = f"{'  ' * depth}{each.name} ({type(each).__name__})"
        if each is agent:
            line += " <- the agent the scripts call"
        tree.append(line)
    tools_chars = 0
    tool_lines: list[str] = []
    for tool in agent.tools:
        kind, name = _tool_kind(tool)
        if kind is None:
            notes.append(f"tool {name} of {agent.name} is not scripted (not a function tool)")
            continue
        tools_chars += _declaration_chars(tool)
        tool_lines.append(f"{'  ' * (1 + _depth(agents, agent))}tool {name}: {kind}")
        if kind in tools:
            notes.append(f"tool {name} is {kind}, as {tools[kind]}: the scripts call {tools[kind]}")
        else:
            tools[kind] = name
    at = next(k for k, line in enumerate(tree) if line.endswith("the scripts call"))
    tree[at + 1 : at + 1] = tool_lines
    missing = [k for k in TOOL_KINDS if k not in tools]
    if missing:
        kinds = " or ".join([", ".join(missing[:-1]), missing[-1]] if len(missing) > 1 else missing)
        notes.append(f"{agent.name} has no {kinds} tool: such calls are not drawn")
    in_parallel = {
        id(sub) for _, a, _ in agents if isinstance(a, ParallelAgent) for sub in a.sub_agents
    }
    helper = next((a for a in llms if a is not agent and id(a) not in in_parallel), None)
    team, branches = None, ()
    for _, each, _ in agents:
        if isinstance(each, ParallelAgent):
            subs = [
                s for s in each.sub_agents if isinstance(s, LlmAgent) and s not in (agent, helper)
            ]
            if len(subs) >= 2:
                team, branches = each, (subs[0].name, subs[1].name)
                break
    mapped = {agent.name} | {helper.name if helper else ""} | set(branches)
    others = [a.name for a in llms if a.name not in mapped]
    if others:
        notes.append(f"not run by the scripts (no role for them): {', '.join(others)}")
    if not isinstance(root, LlmAgent) and type(root) is not ParallelAgent:
        notes.append(
            f"root {root.name} ({type(root).__name__}): the harness runs the agents "
            "each operation names, not the order your workflow would run them in"
        )
    if isinstance(root, LlmAgent) and root.sub_agents:
        notes.append(f"transfers from {root.name} to its sub-agents are not scripted")
    shape = AppShape(
        name=app.name if app is not None else f"{root.name}_app",
        agent=agent.name,
        tools=tuple((k, tools[k]) for k in TOOL_KINDS if k in tools),
        helper=helper.name if helper else None,
        team=team.name if team is not None else None,
        branches=branches,
        root=root.name if root is not agent else None,
        source=source,
    )
    if shape.tree == "agent" and shape.root is not None:
        shape = replace(shape, root=None)
    if app is not None and getattr(app, "resumability_config", None) is not None:
        notes.append(
            "the app is resumable (ResumabilityConfig): the scripts run it as a "
            "non-resumable app, resumed invocations are not drawn"
        )
    config = app.events_compaction_config if app is not None else None
    triggers = None
    if config is not None:
        triggers = {key: getattr(config, key, None) for key in TRIGGER_KEYS}
        summarizer = getattr(config, "summarizer", None)
        if summarizer is not None and type(summarizer).__name__ != "LlmEventSummarizer":
            notes.append(
                f"the app's summariser {type(summarizer).__name__} is replaced by the "
                "harness's (an LlmEventSummarizer over a scripted model)"
            )
    system = 0
    for text in (agent.instruction, getattr(root, "global_instruction", "")):
        if isinstance(text, str):
            system += len(text)
        elif text:
            notes.append("an instruction provider (a function) is not called: its size counts 0")
    model = agent.model
    strict = type(model).__name__ == "LiteLlm"
    names = tuple(each.name for _, each, _ in agents)
    return AppReading(
        shape, triggers, system, tools_chars, strict, tuple(tree), tuple(notes), names
    )


def _depth(agents: list[tuple[int, Any, Any]], agent: Any) -> int:
    return next(d for d, a, _ in agents if a is agent)
