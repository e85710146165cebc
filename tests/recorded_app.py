"""Test support: real sessions, recorded by ADK's own ``Runner``.

An ADK app as a user writes one: a root ``LlmAgent`` named ``assistant``
(not the harness's ``agent``), a scripted ``BaseLlm`` that replies ``OK.``
(the same text at every turn) or calls tools as its script says, the tools
``get_weather`` (a ``FunctionTool``), ``start_export`` (a
``LongRunningFunctionTool`` whose job reports back later) and
``audit_ledger`` (a ``FunctionTool`` that raises: the run raises, and ADK
stores an error event after the call), ``pay`` (a ``FunctionTool`` with
``require_confirmation``: the run pauses until the client answers ADK's
``adk_request_confirmation``), and an ``App``
with an ``EventsCompactionConfig`` whose summariser is ADK's
``LlmEventSummarizer`` over a scripted summary model. :func:`record` runs the
turns through ``Runner.run_async`` on an ``InMemorySessionService`` and
returns the session as that service stores it (``Session.model_dump_json()``),
the format ``minimize`` and ``replay`` read.

Each model reply carries usage metadata (four characters a token of what the
model was sent), as a real model's does, so ADK's token trigger reads the
counts it reads in production.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

from google.adk.agents.llm_agent import LlmAgent
from google.adk.apps.app import App, EventsCompactionConfig
from google.adk.apps.llm_event_summarizer import LlmEventSummarizer
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions.in_memory_session_service import InMemorySessionService
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.long_running_tool import LongRunningFunctionTool
from google.genai import types

ROOT = "assistant"
APP = "weather_app"
USER = "user-1"

#: One model reply: ``"OK."`` (any text), ``("call", tool, ...)`` (calls to
#: the tools named, in one event: parallel calls when more than one).
Reply = str | tuple[str, ...]
#: One turn: the user's message (or ``("answer", tool)``: the client answers
#: the pending long-running call of that tool; ``("confirm", "pay")``: the
#: client confirms the pending confirmation request) and the model's replies
#: in order. An answer resumes the invocation of the call it answers.
Turn = tuple[str | tuple[str, str], Sequence[Reply]]


def get_weather(city: str) -> dict:
    """Returns the weather of a city."""
    return {"city": city, "forecast": "sunny"}


def start_export(what: str) -> dict:
    """Starts an export; the job reports back later."""
    return {"status": "pending"}


def start_job(what: str) -> None:
    """Starts a job; returns nothing until the client reports its result."""
    return None


def pay(what: str) -> dict:
    """Pays (ADK asks the user to confirm first)."""
    return {"paid": what}


class LedgerUnreachable(RuntimeError):
    """What ``audit_ledger`` raises."""


class ModelUnreachable(RuntimeError):
    """What the scripted model raises for a ``("raise",)`` reply."""


def audit_ledger(what: str) -> dict:
    """Audits the ledger; always fails."""
    raise LedgerUnreachable("ledger unreachable")


def _chars(request: Any) -> int:
    total = 0
    for content in request.contents or []:
        for part in content.parts or []:
            total += len(part.text or "")
            if part.function_call:
                total += len(part.function_call.name or "") + len(
                    json.dumps(part.function_call.args or {})
                )
            if part.function_response:
                total += len(part.function_response.name or "") + len(
                    json.dumps(part.function_response.response or {})
                )
    return total


def _usage(given: int, out: int) -> types.GenerateContentResponseUsageMetadata:
    return types.GenerateContentResponseUsageMetadata(
        prompt_token_count=given // 4,
        candidates_token_count=out // 4,
        total_token_count=given // 4 + out // 4,
    )


#: What the model was sent at each call of the latest :func:`record`: the
#: running turn's message and the texts of the request's contents.
REQUESTS: list[tuple[str, tuple[str, ...]]] = []


def lost_openers() -> list[str]:
    """The running user messages missing from a request of the latest
    :func:`record` (each once, in order): what the real run lost."""
    lost: list[str] = []
    for message, texts in REQUESTS:
        if message not in texts and message not in lost:
            lost.append(message)
    return lost


class ScriptedLlm(BaseLlm):
    """Replies as the script says, one reply per model call."""

    replies: list[Any] = []
    calls: int = 0
    turn: str = ""

    async def generate_content_async(self, llm_request, stream: bool = False):
        texts = tuple(p.text for c in llm_request.contents or [] for p in c.parts or [] if p.text)
        REQUESTS.append((self.turn, texts))
        reply = self.replies.pop(0) if self.replies else "OK."
        if reply == ("raise",):  # the model's service fails: the call raises
            raise ModelUnreachable("model unreachable")
        given = _chars(llm_request) + len(str(llm_request.config.system_instruction or ""))
        if isinstance(reply, str):
            parts = [types.Part(text=reply)]
        else:
            parts = []
            for tool in reply[1:]:
                self.calls += 1
                args = {"city": "Paris"} if tool == "get_weather" else {"what": "report"}
                parts.append(
                    types.Part(
                        function_call=types.FunctionCall(
                            id=f"call_{self.calls}", name=tool, args=args
                        )
                    )
                )
        yield LlmResponse(
            content=types.Content(role="model", parts=parts), usage_metadata=_usage(given, 8)
        )


class SummaryLlm(BaseLlm):
    """The summariser's model: ``text`` (a short summary unless told), with
    usage metadata."""

    text: str = "Summary of the talk."

    async def generate_content_async(self, llm_request, stream: bool = False):
        given = _chars(llm_request)
        yield LlmResponse(
            content=types.Content(role="model", parts=[types.Part(text=self.text)]),
            usage_metadata=_usage(given, len(self.text)),
        )


#: Plain turns: a weather question answered by a tool call, then "OK." turns.
PLAIN: tuple[Turn, ...] = (
    ("What is the weather in Paris?", [("call", "get_weather"), "OK."]),
    ("Thanks.", ["OK."]),
    ("And tomorrow?", [("call", "get_weather"), "OK."]),
    ("Fine.", ["OK."]),
    ("Good.", ["OK."]),
    ("And in Rome?", [("call", "get_weather"), "OK."]),
    ("Nice.", ["OK."]),
    ("And in Oslo?", [("call", "get_weather"), "OK."]),
    ("Bye.", ["OK."]),
)

#: With ``token_threshold=110, event_retention_size=2``: the count reaches the
#: threshold at the first model call of "And in Oslo?", so ADK's compaction
#: before the second model call of that invocation summarises the running
#: user message (known fault 5, token-compaction-summarises-the-running-request).
FAULT5: tuple[Turn, ...] = (
    *PLAIN[:-2],
    ("Sure.", ["OK."]),
    ("Right.", ["OK."]),
    ("Ok then.", ["OK."]),
    *PLAIN[-2:],
)
TOKEN_CONFIG = {"token_threshold": 110, "event_retention_size": 2}


def record(
    config: dict[str, int | None],
    turns: Sequence[Turn] = PLAIN,
    *,
    root: str = ROOT,
    summary: str = SummaryLlm.model_fields["text"].default,
) -> str:
    """The session ADK's ``Runner`` stores for ``turns`` with the trigger
    values ``config`` (keys of ``EventsCompactionConfig``; None: unset), as
    ``InMemorySessionService`` stores it (``Session.model_dump_json()``);
    ``summary``: the text of every summary the summariser writes."""
    return asyncio.run(_record(config, turns, root, summary))


async def _record(
    config: dict[str, int | None], turns: Sequence[Turn], root: str, summary: str
) -> str:
    REQUESTS.clear()
    model = ScriptedLlm(model="scripted")
    model.replies = [r for _, replies in turns for r in replies]
    agent = LlmAgent(
        name=root,
        model=model,
        instruction="You answer weather questions.",
        tools=[
            FunctionTool(get_weather),
            LongRunningFunctionTool(start_export),
            LongRunningFunctionTool(start_job),
            FunctionTool(audit_ledger),
            FunctionTool(pay, require_confirmation=True),
        ],
    )
    compaction = EventsCompactionConfig(
        summarizer=LlmEventSummarizer(llm=SummaryLlm(model="summary", text=summary)),
        **{k: v for k, v in config.items() if v is not None},
    )
    app = App(name=APP, root_agent=agent, events_compaction_config=compaction)
    service = InMemorySessionService()
    runner = Runner(app=app, session_service=service)
    session = await service.create_session(app_name=APP, user_id=USER)
    for message, _ in turns:
        model.turn = message if isinstance(message, str) else ""
        if isinstance(message, tuple):  # the client answers a pending call
            stored = await service.get_session(app_name=APP, user_id=USER, session_id=session.id)
            confirm = message[0] == "confirm"
            name = "adk_request_confirmation" if confirm else message[1]
            answered = {r.id for e in stored.events for r in e.get_function_responses()}
            pending = [
                (c, e.invocation_id)
                for e in stored.events
                for c in e.get_function_calls()
                if c.name == name
                and (c.id not in answered if confirm else c.id in (e.long_running_tool_ids or ()))
            ]
            call, invocation = pending[-1]
            # The resumed invocation runs for the message that opened it.
            model.turn = next(
                (
                    p.text
                    for e in stored.events
                    if e.invocation_id == invocation and e.author == "user"
                    for p in (e.content.parts if e.content else None) or []
                    if p.text
                ),
                "",
            )
            response = {"confirmed": True} if confirm else {"status": "done"}
            part = types.Part(
                function_response=types.FunctionResponse(id=call.id, name=name, response=response)
            )
            content = types.Content(role="user", parts=[part])
        else:
            content = types.Content(role="user", parts=[types.Part(text=message)])
        try:
            async for _ in runner.run_async(
                user_id=USER, session_id=session.id, new_message=content
            ):
                pass
        except (
            LedgerUnreachable,
            ModelUnreachable,
        ):  # the run raises; the session keeps ADK's error event
            pass
    stored = await service.get_session(app_name=APP, user_id=USER, session_id=session.id)
    await runner.close()
    return stored.model_dump_json()


#: A long-running export, parallel calls, and two parallel long-running calls
#: of which the client answers only the second ("OK." every turn).
LONG_RUNNING: tuple[Turn, ...] = (
    ("Export the report.", [("call", "start_export"), "OK."]),
    ("Thanks.", ["OK."]),
    ("Weather in Paris and Rome?", [("call", "get_weather", "get_weather"), "OK."]),
    (("answer", "start_export"), ["OK."]),
    ("Fine.", ["OK."]),
    ("Export again.", [("call", "start_export", "start_export"), "OK."]),
    ("Good.", ["OK."]),
    (("answer", "start_export"), ["OK."]),
    ("Bye.", ["OK."]),
    ("Bye again.", ["OK."]),
)


#: Two parallel long-running jobs that return nothing; the client answers
#: only the second: the next request pairs two calls with one response
#: (known fault 7, partial-answer-to-parallel-calls-makes-an-invalid-request).
PARTIAL: tuple[Turn, ...] = (
    ("Hello.", ["OK."]),
    ("Start two jobs.", [("call", "start_job", "start_job")]),
    (("answer", "start_job"), ["OK."]),
    ("Thanks.", ["OK."]),
)


#: ``audit_ledger`` raises: ADK stores its call, then an error event of the
#: root (``error_code='LedgerUnreachable'``, no content); no model call
#: follows it, and the run raises. The next turns run as usual.
#: The model call of "Thanks." raises: ADK stores a content-less error event
#: of the root (``error_code='ModelUnreachable'``) after the call was sent, the
#: run raises, and the Runner compacts nothing at that invocation's end.
MODEL_RAISES: tuple[Turn, ...] = (
    ("What is the weather in Paris?", [("call", "get_weather"), "OK."]),
    ("Thanks.", [("raise",)]),
    ("Hello?", ["OK."]),
    ("Bye.", ["OK."]),
    ("More?", ["OK."]),
    ("Again?", ["OK."]),
)


CRASH: tuple[Turn, ...] = (
    ("What is the weather in Paris?", [("call", "get_weather"), "OK."]),
    ("Thanks.", ["OK."]),
    ("Audit my ledger.", [("call", "audit_ledger")]),
    ("Hello?", ["OK."]),
    ("Bye.", ["OK."]),
)


#: ``pay`` pauses its invocation for the user's confirmation; "Hello?" runs
#: before the client confirms, then the confirmation resumes the paused
#: invocation (same invocation id) in a new ``run_async``.
CONFIRM: tuple[Turn, ...] = (
    ("Hello.", ["OK."]),
    ("Pay the bill.", [("call", "pay")]),
    ("Hello?", ["OK."]),
    (("confirm", "pay"), ["Paid."]),
    ("Thanks.", ["OK."]),
)

#: ``pay`` pauses and the client confirms right away: the paused run and its
#: resumption are two ``run_async`` calls, each compacted at its end.
CONFIRM_AT_ONCE: tuple[Turn, ...] = (
    ("What is the weather in Paris?", [("call", "get_weather"), "OK."]),
    ("Pay the bill.", [("call", "pay")]),
    (("confirm", "pay"), ["Paid."]),
    ("Thanks.", ["OK."]),
    ("Bye.", ["OK."]),
)
