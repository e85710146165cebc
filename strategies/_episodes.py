"""Episodes: the shapes ADK's runtime writes into a session, one strategy each.

An episode strategy draws an :class:`Episode`: the events it appends at once
(``now``) and follow-ups that arrive later (``later``), each follow-up a
*chain* whose parts must arrive in order (a confirmation is answered before
the tool's real result). Templates carry no invocation id or timestamp; the
session builder (``_sessions.py``) stamps them when it places them, delivers
follow-ups in later turns or invocations, out of order, several in one
event, or never (orphans).

Shapes verified against google-adk 2.13.0 (see ``tests/fast/test_realism.py``,
which rebuilds them with ADK's own helpers):

* function call: the model's event holds one or several parallel
  ``function_call`` parts, authored by the agent; the tool results come back
  in an event authored by the agent with role ``user``
  (``flows/llm_flows/tools/_caller.py``, ``_batch_executor.py``).
* long-running tool: the call's id is in ``Event.long_running_tool_ids``; the
  tool may answer at once with an interim response; the final answer comes
  later from the client, as a user event.
* tool confirmation: the tool's response event carries
  ``actions.requested_tool_confirmations[call_id]``; then an event with a
  synthetic ``adk_request_confirmation`` call with its own id, long-running
  (``generate_request_confirmation_event``); the user answers that id; then
  the tool's real result for the original id.
* auth request: the same with ``requested_auth_configs`` and
  ``adk_request_credential`` (``build_auth_request_event``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache

from hypothesis import strategies as st

from compaction_harness.spec.model import (
    REQUEST_CONFIRMATION_CALL,
    REQUEST_CREDENTIAL_CALL,
    Call,
    Response,
    Step,
)

AGENT = "agent"
USER = "user"
CONFIRMATION_CALL = REQUEST_CONFIRMATION_CALL
AUTH_CALL = REQUEST_CREDENTIAL_CALL


@dataclass(frozen=True)
class Template:
    """A step without invocation id and timestamp (filled in when placed)."""

    author: str = AGENT
    text: str | None = None
    calls: tuple[Call, ...] = ()
    responses: tuple[Response, ...] = ()
    long_running: tuple[str, ...] = ()
    confirmations: tuple[str, ...] = ()
    auth_requests: tuple[str, ...] = ()

    def place(self, invocation: str, timestamp: float, **extra) -> Step:
        return Step(
            invocation=invocation,
            author=self.author,
            timestamp=timestamp,
            text=self.text,
            calls=self.calls,
            responses=self.responses,
            long_running=self.long_running,
            confirmations=self.confirmations,
            auth_requests=self.auth_requests,
            **extra,
        )

    @property
    def is_plain_answer(self) -> bool:
        """A response-only template that may share an event with other answers."""
        return bool(self.responses) and not (
            self.calls or self.text or self.confirmations or self.auth_requests
        )


@dataclass(frozen=True)
class Episode:
    """What an episode appends now, and the chains of follow-ups it leaves."""

    name: str
    now: tuple[Template, ...]
    later: tuple[tuple[Template, ...], ...] = field(default=())


def _answer(call: Call, author: str = AGENT) -> Template:
    return Template(author=author, responses=(Response(call.id, call.name),))


# -- the episode strategies ----------------------------------------------------
# Strategies here are built once and shared: building a strategy per draw costs
# more than the draw. Ids that must be unique are drawn as placeholders
# (:data:`NEW_ID`, :data:`NEW_SYNTHETIC_ID`) that the session builder renames.

#: Placeholder for a never-used call id; renamed to ``f<n>`` when placed.
NEW_ID = "new"
#: Placeholder for the id ADK gives a synthetic call; renamed to ``adk-<n>``.
NEW_SYNTHETIC_ID = "adk-new"

#: How many parallel calls (their tools alternate between two names).
_COUNT = st.integers(1, 3)
_TOOL_NAMES = ("lookup", "search")
_BOOL = st.booleans()


@cache
def _upto(n: int) -> st.SearchStrategy[int]:
    return st.integers(0, n)


def rotated(items: list, start: int, backwards: bool) -> list:
    """``items`` read from ``start`` round to the start, forwards or backwards:
    two choices (shrinking towards the order as given) where a permutation
    would cost one per item; it reaches every order of two or three items
    that answers arrive in, as far as the properties tell them apart."""
    turned = items[start:] + items[:start]
    return turned[::-1] if backwards else turned


def model_text() -> st.SearchStrategy[Episode]:
    """The model answers in text."""
    return _MODEL_TEXT


_MODEL_TEXT = st.just(Episode("model text", (Template(text="model text"),)))


@st.composite
def function_calls(draw, ids: st.SearchStrategy[str]) -> Episode:
    """One or several parallel calls; the results arrive now (all, some, in any
    order, together or one by one) and the rest later or never."""
    calls: list[Call] = []
    for k in range(draw(_COUNT)):
        cid = draw(ids)
        if all(c.id != cid for c in calls):
            calls.append(Call(cid, _TOOL_NAMES[k % 2]))
    now = [Template(calls=tuple(calls))]
    order = rotated(calls, draw(_upto(len(calls) - 1)), draw(_BOOL)) if len(calls) > 1 else calls
    answered_now = order[: draw(_upto(len(order)))]
    if answered_now:
        if draw(_BOOL):  # one event answers them together
            now.append(Template(responses=tuple(Response(c.id, c.name) for c in answered_now)))
        else:
            now.extend(_answer(c) for c in answered_now)
    later = tuple((_answer(c),) for c in order[len(answered_now) :])
    return Episode("parallel calls" if len(calls) > 1 else "function call", tuple(now), later)


def long_running_episode(call: Call, interim: bool) -> Episode:
    """``call`` made long-running: an interim response now if ``interim``, the
    final answer from the client later (or never)."""
    now = [Template(calls=(call,), long_running=(call.id,))]
    if interim:
        now.append(_answer(call))  # the interim "pending" result
    return Episode("long-running call", tuple(now), ((_answer(call, USER),),))


def _request_episode(label: str, call: Call, request: Call, **pending: tuple[str, ...]) -> Episode:
    """The shared HITL shape: the call; its tool's response carrying the pending
    request (``confirmations`` or ``auth_requests``); the synthetic,
    long-running ``request`` call; later the user's answer to the request,
    then the tool's real result."""
    now = (
        Template(calls=(call,)),
        Template(responses=(Response(call.id, call.name),), **pending),
        Template(calls=(request,), long_running=(request.id,)),
    )
    return Episode(label, now, ((_answer(request, USER), _answer(call)),))


def confirmation_episode(call: Call, request_id: str) -> Episode:
    """``call``'s tool asks for confirmation (``requested_tool_confirmations``),
    answered through the synthetic ``adk_request_confirmation`` call."""
    request = Call(request_id, CONFIRMATION_CALL)
    return _request_episode("tool confirmation", call, request, confirmations=(call.id,))


def auth_episode(call: Call, request_id: str) -> Episode:
    """``call``'s tool asks for credentials (``requested_auth_configs``),
    answered through the synthetic ``adk_request_credential`` call."""
    request = Call(request_id, AUTH_CALL)
    return _request_episode("auth request", call, request, auth_requests=(call.id,))


def long_running_call(ids: st.SearchStrategy[str]) -> st.SearchStrategy[Episode]:
    """A long-running tool call (see :func:`long_running_episode`)."""
    return st.builds(long_running_episode, st.builds(Call, ids, st.just("export")), _BOOL)


def tool_confirmation(
    ids: st.SearchStrategy[str], synthetic: st.SearchStrategy[str]
) -> st.SearchStrategy[Episode]:
    """A tool confirmation (see :func:`confirmation_episode`)."""
    return st.builds(confirmation_episode, st.builds(Call, ids, st.just("transfer")), synthetic)


def auth_request(
    ids: st.SearchStrategy[str], synthetic: st.SearchStrategy[str]
) -> st.SearchStrategy[Episode]:
    """An auth request (see :func:`auth_episode`)."""
    return st.builds(auth_episode, st.builds(Call, ids, st.just("calendar")), synthetic)


def response_without_call(synthetic: st.SearchStrategy[str]) -> st.SearchStrategy[Episode]:
    """A function response whose call is nowhere in the session (for example a
    client answering a call that an earlier summary or a rewind removed)."""
    return st.builds(
        lambda sid: Episode(
            "response without call", (_answer(Call(f"ghost-{sid}", "lookup"), USER),)
        ),
        synthetic,
    )
