"""Tool runs: what a driver that runs an SDK's tools records of each run of a
tool's body, and the checker of P8 over them.

A tool's body is the user's code, and its side effects are real: a second
run of it for one function call is a second payment, a second ticket, a
second e-mail. A driver that runs the SDK's own tools (google-adk's runner
driver: the ``Runner`` calls the harness's tool functions) records every run
as a :class:`ToolRun`, in the order the runs started; a trace's
``tool_runs`` is that list (None from a driver that runs no tool body: the
emulating drivers append the events a tool's run stores, and run nothing).

**P8 tool runs at most once** (:func:`check_tool_runs`): for each function
call (its id, and the stored model event that made it: a model that numbers
its calls per turn reuses ids), ``tool_runs`` holds one run, and a second
only after a run that did not finish the call:

* one that *asked the user first*: the tool asked for a credential
  (``ToolContext.request_credential``) or a confirmation, and ADK runs it
  again with the user's answer (google-adk 2.11.0 and 2.13.0:
  ``auth/auth_preprocessor.py``, "Find the original function call event and
  re-execute the tools that needed auth"; ``flows/llm_flows/tools/_confirmation.py``,
  "Re-execute the confirmed tools");
* one that *never returned* (its process died): ADK's flow runs a call that
  has no response again when the invocation resumes
  (``flows/llm_flows/core/_resume.py``, ``decide_step_resume``:
  ``REPLAY_CALLS``, "A tool call was never executed").

Never after a run that *returned*: a result, an interim result, or nothing
yet from a long-running tool. ADK says so itself: ``_unexecuted_calls_event``
(2.13.0) skips long-running calls "because a long-running tool that returns
``None`` writes no response event when it starts", and 2.11.0's returns
nothing once the agent wrote an event after the calls, since "a call still
missing its response then ran and lost it, or is pending"; the confirmation
processor drops confirmations already consumed, so that a client that sends
its approval again (a retry, a resubmitted form) does not run the tool again
(``_confirmation.py``, step 2).

Pure: imports only :mod:`compaction_harness.spec` and the standard library.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .invariants import Violation
from .model import ModelError, object_of

__all__ = ["ENDINGS", "FINISHING", "ToolRun", "check_tool_runs", "runs_per_call"]

#: How a run of a tool's body ended: ``returned`` (a result, an interim
#: result, or None from a long-running tool), ``asked`` (it asked the user for
#: a credential or a confirmation first) or ``died`` (it never returned: its
#: process died, and the run was cancelled).
ENDINGS = ("returned", "asked", "died")
#: The endings after which the call's tool must not run again (P8).
FINISHING = ("returned",)


@dataclass(frozen=True)
class ToolRun:
    """One run of a tool's body.

    Attributes:
        call_id: the function call's id (``ToolContext.function_call_id``).
        call_event: the id of the stored event that made the call: the newest
            stored model event with a call of that id to ``tool`` when the run
            started (a model that numbers ids per turn gives other tools'
            calls the same id; the body that ran tells which tool's call it
            was); ``""`` when none was stored.
        tool: the name of the tool whose body ran.
        ended: one of :data:`ENDINGS`.
        op: the index of the script's operation running when the run
            started (the script as run).
    """

    call_id: str
    call_event: str
    tool: str
    ended: str
    op: int

    def __post_init__(self) -> None:
        if self.ended not in ENDINGS:
            raise ModelError(f"tool run: ended: expected one of {', '.join(ENDINGS)}")

    def to_json(self) -> dict[str, Any]:
        return {
            "call_id": self.call_id,
            "call_event": self.call_event,
            "tool": self.tool,
            "ended": self.ended,
            "op": self.op,
        }

    @classmethod
    def from_json(cls, data: Any, where: str = "tool_run") -> ToolRun:
        values = object_of(data, cls, where)
        for key in ("call_id", "call_event", "tool", "ended"):
            if not isinstance(values.get(key), str):
                raise ModelError(f"{where}.{key}: expected a string")
        if type(values.get("op")) is not int:
            raise ModelError(f"{where}.op: expected an integer")
        return cls(**values)


def runs_per_call(runs: Sequence[ToolRun]) -> dict[tuple[str, str], list[ToolRun]]:
    """``runs`` grouped by call (its id and the event that made it), in the
    order each call first ran, each group in run order: ``len`` of a group
    is how many times the call's tool body ran."""
    out: dict[tuple[str, str], list[ToolRun]] = {}
    for run in runs:
        out.setdefault((run.call_id, run.call_event), []).append(run)
    return out


def check_tool_runs(
    runs: Sequence[ToolRun], positions: Mapping[str, int] | None = None
) -> list[Violation]:
    """P8 on a trace's ``tool_runs`` (see the module docstring): one violation
    per run of a call's tool that follows a run of it that returned.
    ``positions``: stored event id -> its position in the session as stored,
    for the violation's ``positions`` (the call's event). The violation's
    ``details["op"]`` is the operation the extra run started in."""
    out: list[Violation] = []
    for (call_id, event), group in runs_per_call(runs).items():
        for number, run in enumerate(group[1:], start=2):
            finished = [r for r in group[: number - 1] if r.ended in FINISHING]
            if not finished:
                continue
            where = () if positions is None or event not in positions else (positions[event],)
            out.append(
                Violation(
                    "P8",
                    f"tool {run.tool!r} ran again for call {call_id!r} (run {number}, "
                    f"operation {run.op}) after a run that {finished[0].ended} "
                    f"(operation {finished[0].op}): a second side effect",
                    ids=(call_id,),
                    positions=where,
                    expected="one run per call, or another only after one that asked the "
                    "user or never returned",
                    observed=[r.ended for r in group],
                    details={"op": run.op},
                )
            )
    return out
