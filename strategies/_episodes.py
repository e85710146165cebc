"""Episodes: the shapes ADK's runtime writes into a session, one strategy each.

An episode strategy draws an :class:`Episode`: the events it appends at once
(``now``) and follow-ups that arrive later (``later``), each follow-up a
*chain* whose parts must arrive in order (a confirmation is answered before
the tool's real result). Templates carry no invocation id or timestamp; the
session builder (``_sessions.py``) stamps them when it places them, delivers
follow-ups in later turns or invocations, out of order, several in one
event, or never (orphans).

Shapes verified against google-adk 2.13.0 (see ``tests/test_realism.py``,
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

from hypothesis import strategies as st

from compaction_harness.model import Call, Response, Step

AGENT = "agent"
USER = "user"
CONFIRMATION_CALL = "adk_request_confirmation"
AUTH_CALL = "adk_request_credential"


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
def model_text() -> st.SearchStrategy[Episode]:
    """The model answers in text."""
    return st.just(Episode("model text", (Template(text="model text"),)))


@st.composite
def function_calls(draw, ids: st.SearchStrategy[str]) -> Episode:
    """One or several parallel calls; the results arrive now (all, some, in any
    order, together or one by one) and the rest later or never."""
    names = draw(st.lists(st.sampled_from(("lookup", "search")), min_size=1, max_size=3))
    calls: list[Call] = []
    for name in names:
        cid = draw(ids)
        if all(c.id != cid for c in calls):
            calls.append(Call(cid, name))
    now = [Template(calls=tuple(calls))]
    order = draw(st.permutations(calls))
    answered_now = order[: draw(st.integers(0, len(order)))]
    if answered_now:
        if draw(st.booleans()):  # one event answers them together
            now.append(Template(responses=tuple(Response(c.id, c.name) for c in answered_now)))
        else:
            now.extend(_answer(c) for c in answered_now)
    later = tuple((_answer(c),) for c in order[len(answered_now) :])
    return Episode("parallel calls" if len(calls) > 1 else "function call", tuple(now), later)


@st.composite
def long_running_call(draw, ids: st.SearchStrategy[str], call: Call | None = None) -> Episode:
    """A long-running tool: an interim response now (or not), the final answer
    from the client later (or never). ``call``: the call to make long-running
    (drawn when not given)."""
    call = call or Call(draw(ids), "export")
    now = [Template(calls=(call,), long_running=(call.id,))]
    if draw(st.booleans()):
        now.append(_answer(call))  # the interim "pending" result
    return Episode("long-running call", tuple(now), ((_answer(call, USER),),))


@st.composite
def tool_confirmation(
    draw, ids: st.SearchStrategy[str], synthetic: st.SearchStrategy[str], call: Call | None = None
) -> Episode:
    """A tool asks for confirmation: response + request, synthetic call, the
    user's answer to the synthetic call, then the tool's real result."""
    call = call or Call(draw(ids), "transfer")
    request = Call(draw(synthetic), CONFIRMATION_CALL)
    now = (
        Template(calls=(call,)),
        Template(responses=(Response(call.id, call.name),), confirmations=(call.id,)),
        Template(calls=(request,), long_running=(request.id,)),
    )
    later = ((_answer(request, USER), _answer(call)),)
    return Episode("tool confirmation", now, later)


@st.composite
def auth_request(
    draw, ids: st.SearchStrategy[str], synthetic: st.SearchStrategy[str], call: Call | None = None
) -> Episode:
    """A tool asks for credentials: the same shape with requested_auth_configs
    and the synthetic adk_request_credential call."""
    call = call or Call(draw(ids), "calendar")
    request = Call(draw(synthetic), AUTH_CALL)
    now = (
        Template(calls=(call,)),
        Template(responses=(Response(call.id, call.name),), auth_requests=(call.id,)),
        Template(calls=(request,), long_running=(request.id,)),
    )
    later = ((_answer(request, USER), _answer(call)),)
    return Episode("auth request", now, later)


@st.composite
def response_without_call(draw, synthetic: st.SearchStrategy[str]) -> Episode:
    """A function response whose call is nowhere in the session (for example a
    client answering a call that an earlier summary or a rewind removed)."""
    ghost = Call(f"ghost-{draw(synthetic)}", "lookup")
    return Episode("response without call", (_answer(ghost, USER),))
