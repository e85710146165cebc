"""The shape of a user's ADK app as the harness runs it: names and kinds, no code.

``python -m compaction_harness check MODULE:ATTR`` imports a team's own
``App`` (or root agent), reads from it what compaction can see (the agents'
names and how they are arranged, each tool's name and kind, the trigger
values, the sizes of the instructions and tool declarations) and writes it
down as an :class:`AppShape`. A script whose ``config.app`` holds a shape is
run through ADK's ``Runner`` on an app built from the shape
(:mod:`compaction_harness.sdk.python.runner_app`): the user's agent and tool
names, every model replaced by the scripted one and every tool body by
scripted outcomes. A fixture of the user's app therefore carries the shape
as data, and its replay imports nothing of the user's code.

What a shape keeps, and what it leaves out (say so wherever a verdict is given):

* ``agent``: the LLM agent whose model the script's ``Text``, ``Calls`` and
  ``Ask`` call (the root when it is an ``LlmAgent``; else the first LLM agent
  of the tree, depth first, that has tools).
* ``tools``: one tool name per kind the app has: ``plain`` (answers at once,
  or hangs when the script says its process died), ``long_running``
  (``LongRunningFunctionTool``: a client answers later; the interim result
  the script may draw is its own too), ``confirmation``
  (``require_confirmation``) and ``credential`` (a tool that asks for a
  credential). A kind the app lacks is never drawn.
* ``helper``: another LLM agent (run by ``Delegate``, no branch of its
  own); ``team`` and ``branches``: a ``ParallelAgent`` and two of its LLM
  sub-agents (run by ``FanOut``, each on its own branch).
* ``root``: the name of the app's root agent, when it is not ``agent``. Then
  the harness's custom root runs the sub-agent each operation names, under
  that name: the order the user's own workflow agent (sequential, loop,
  transfers) would impose is not run, only the agents and branches it has.

Parsing is strict and executes nothing, as every part of a fixture.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .model import ModelError, object_of

__all__ = ["HARNESS_APP", "TOOL_KINDS", "AppShape"]

#: The kinds of tool a script can call, in the order a shape lists them.
TOOL_KINDS = ("plain", "long_running", "confirmation", "credential")

#: What ADK accepts as an agent's name (``BaseAgent.validate_name``: an
#: identifier) and what a function declaration's name may be.
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")


@dataclass(frozen=True)
class AppShape:
    """What compaction can see of one app (see the module docstring).

    Attributes:
        name: the ``App``'s name (the session's ``app_name``).
        agent: the LLM agent the script's model operations call.
        tools: ``(kind, tool name)`` pairs, at most one per kind of
            :data:`TOOL_KINDS`, in that order (JSON: an object of names by
            kind); a missing kind: the app has no such tool.
        helper: an LLM agent ``Delegate`` runs, or None.
        team: a ``ParallelAgent`` ``FanOut`` runs, or None; ``branches``:
            two of its LLM sub-agents (both or neither with ``team``).
        root: the root agent's name when it is not ``agent`` (None: the
            root is ``agent``, or the harness's own root).
        source: where the shape was read (``MODULE:ATTR``), for the record.

    Raises :class:`~compaction_harness.spec.model.ModelError` on a name that
    is not an identifier, a kind not in :data:`TOOL_KINDS`, names that
    collide, or a team without two branches.
    """

    name: str = "harness"
    agent: str = "agent"
    tools: tuple[tuple[str, str], ...] = ()
    helper: str | None = None
    team: str | None = None
    branches: tuple[str, ...] = ()
    root: str | None = None
    source: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.tools, tuple) or not all(
            isinstance(p, tuple) and len(p) == 2 for p in self.tools
        ):
            raise ModelError("config.app.tools: expected an object of tool names by kind")
        kinds = [kind for kind, _ in self.tools]
        if kinds != [k for k in TOOL_KINDS if k in kinds]:
            raise ModelError(
                f"config.app.tools: one tool per kind, kinds among {', '.join(TOOL_KINDS)}"
            )
        for kind, tool in self.tools:
            if kind not in TOOL_KINDS:
                raise ModelError(
                    f"config.app.tools: unknown kind {kind!r} ({', '.join(TOOL_KINDS)})"
                )
            _check_name(f"config.app.tools.{kind}", tool)
        for key in ("name", "agent"):
            _check_name(f"config.app.{key}", getattr(self, key))
        for key in ("helper", "team", "root"):
            if getattr(self, key) is not None:
                _check_name(f"config.app.{key}", getattr(self, key))
        if (self.team is None) != (not self.branches) or len(self.branches) not in (0, 2):
            raise ModelError("config.app: a team needs exactly two branches, and branches a team")
        for branch in self.branches:
            _check_name("config.app.branches", branch)
        agents = [self.agent, self.helper, self.team, *self.branches, self.root]
        named = [a for a in agents if a is not None]
        if len(set(named)) != len(named) or "user" in named:
            raise ModelError("config.app: agent names must differ from each other and from 'user'")
        if not isinstance(self.source, str):
            raise ModelError("config.app.source: expected a string")

    @property
    def tree(self) -> str:
        """``director`` when the shape has sub-agents to run, else ``agent``."""
        return "director" if self.helper or self.team else "agent"

    def tool(self, kind: str) -> str | None:
        """The name of the app's tool of ``kind``, or None."""
        return dict(self.tools).get(kind)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "agent": self.agent, "tools": dict(self.tools)}
        for key in ("helper", "team", "root"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.branches:
            out["branches"] = list(self.branches)
        if self.source:
            out["source"] = self.source
        return out

    @classmethod
    def from_json(cls, data: Any, where: str = "config.app") -> AppShape:
        values = object_of(data, cls, where)
        if "tools" in values:
            tools = values["tools"]
            if not isinstance(tools, dict):
                raise ModelError(f"{where}.tools: expected an object of tool names by kind")
            unknown = sorted(set(tools) - set(TOOL_KINDS))
            if unknown:
                raise ModelError(f"{where}.tools: unknown kind {unknown[0]!r}")
            values["tools"] = tuple((k, tools[k]) for k in TOOL_KINDS if k in tools)
        if "branches" in values:
            if not isinstance(values["branches"], list):
                raise ModelError(f"{where}.branches: expected a list of two agent names")
            values["branches"] = tuple(values["branches"])
        return cls(**values)


def _check_name(where: str, value: Any) -> None:
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        raise ModelError(f"{where}: expected an identifier of at most 64 characters, got {value!r}")


#: The harness's own app: the names every script without ``config.app`` runs with.
HARNESS_APP = AppShape(
    name="harness",
    agent="agent",
    tools=(
        ("plain", "lookup"),
        ("long_running", "export"),
        ("confirmation", "transfer"),
        ("credential", "calendar"),
    ),
    helper="helper",
    team="team",
    branches=("a", "b"),
    root="director",
)
