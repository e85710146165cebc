"""Recorded google-adk sessions (``pipeline`` fixtures) replayed on ADK-JS.

A ``pipeline`` fixture is not a script: it is a session that adk-python's
pipeline recorded (:class:`~compaction_harness.spec.pipeline_case.PipelineCase`: the
steps appended, in order, ``ends`` = after how many appended steps an
invocation ended, and the trigger configuration). This module maps such a
session to one request of the Node driver (``sdks/adk-js/driver.mjs``), so
that :func:`compaction_harness.sdk.js.checks.check_run`, ``new_violations`` and
``known_fault`` judge it exactly as they judge a script's run.

The mapping (:func:`recorded_actions`), step by step, in the recorded order:

* Every recorded step is appended as the ADK-JS event
  :func:`~compaction_harness.sdk.js.events.to_js_event` makes of it: the recorded
  invocation id, author, branch, texts, calls, responses, long-running ids
  and timestamp (seconds, sent as milliseconds), and the recorded
  ``prompt_tokens`` as ``usageMetadata.promptTokenCount`` (tokens; kept as
  recorded, not re-measured: the session is replayed, not re-run). Its id is
  ``e<k>``, ``k`` the step's position, so the run's ``origin`` of a stored
  event is the recorded step it came from (None for a summary ADK-JS made).
* A model call comes right before every step the Python pipeline makes one
  for (:func:`compaction_harness.spec.pipeline_checks.from_model`: an agent's event that
  is not a tool result and not only framework calls), with the clock
  (``now``) at that step's timestamp, by the agent that authored the step
  (the root agent ``agent`` is the only one whose call is checked against
  the running invocation's opener, as in the script mapping). ADK-JS runs
  compaction there, as in every script (``ContextCompactorRequestProcessor``
  before the content processor, ``agents/llm_agent.js``).
* One difference from the Python pipeline: a step on a branch that the
  model wrote (a parallel sub-agent's reply or call, by the same rule) is
  preceded by that sub-agent's own model call on its branch. The Python
  pipeline makes none there only because it assembles the root agent's
  prompt alone; ADK-JS compacts before every agent's model
  call, and the script mapping (``FanOut``) makes the same calls.
* A step opens an invocation (the driver fetches the stored session, as
  ``Runner.runAsync`` does per run) when its invocation id differs from the
  previous step's, or when an ``end`` came just before it (as
  ``pipeline.run_pipeline_case`` decides); the opener is its text when the
  user wrote it. ``ends`` make no compaction: ADK-JS 2.0.0 has none at an
  invocation's end.
* A recorded compaction record (a client's, or an older session's): see
  :func:`compaction_harness.sdk.js.events.client_record_event`.

A recorded tool confirmation is translated first into the events ADK-JS's
Runner stores for the same conversation (:func:`translate_confirmations`:
adk-python's placeholder response is dropped and its confirmation key moves
to the synthetic call's event); a session so translated gets its verdict
labelled :data:`TRANSLATED_LABEL` (:func:`translation_label`).

What ADK-JS cannot represent raises :class:`~compaction_harness.sdk.js.case.NotApplicable`
naming the step, with the reasons of :data:`REFUSED`: a rewind (ADK-JS 2.0.0
has none), a credential request or a confirmation shape the translation
does not cover (a step with ``confirmations``, ``auth_requests`` or a
framework call ``adk_request_confirmation`` / ``adk_request_credential``
that :func:`translate_confirmations` did not translate), an isolation
scope (the driver's model calls run in no isolation scope).

The compactor is the one a script of the same configuration gets
(:func:`compactor_of`): ``compactor_for`` for the token threshold, the
labelled stand-in ``stand_in_for`` for a sliding window.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...spec.model import REQUEST_CONFIRMATION_CALL, Call, Response, Session, Step
from ...spec.pipeline_case import PipelineCase
from ...spec.pipeline_checks import FRAMEWORK_CALLS, from_model
from ...spec.scripts import Script, ScriptConfig
from .case import JsCompactor, NotApplicable, compactor_for, stand_in_for, stand_in_label
from .events import _ms, _requested, client_record_event, to_js_event
from .run import JsRun, observed, run_request, script_seed
from .timeline import JS_CONFIRMATION_HINT

__all__ = [
    "REFUSED",
    "TRANSLATED_LABEL",
    "RecordedActions",
    "Translation",
    "check_recorded",
    "compactor_of",
    "confirmation_problems",
    "recorded_actions",
    "recorded_script",
    "run_recorded",
    "translate_confirmations",
    "translation_label",
]


def recorded_script(case: PipelineCase) -> Script:
    """A script with ``case``'s trigger configuration and no operations: what
    :func:`compaction_harness.sdk.js.case.compactor_for` / ``stand_in_for`` read,
    and what the :class:`~compaction_harness.sdk.js.run.JsRun` carries as its
    ``script`` (memory storage, no strict provider: a pipeline fixture
    records neither)."""
    return Script(ScriptConfig(**dict(case.config)), ())


def compactor_of(case: PipelineCase) -> tuple[JsCompactor, str]:
    """The ADK-JS compactor for ``case`` and its verdict label: a sliding
    window gets the stand-in and its ``stand_in_label``; a token threshold
    alone gets ``compactor_for`` and ``""``. Raises :class:`NotApplicable`
    when no trigger is configured."""
    script = recorded_script(case)
    if case.config.get("compaction_interval") is not None:
        compactor = stand_in_for(script)
        return compactor, stand_in_label(compactor)
    return compactor_for(script), ""


@dataclass
class RecordedActions:
    """The driver actions for a recorded session: ``actions`` (as the driver
    reads them), ``openers`` (model-call action index -> the opener text the
    call is judged against, or None) and ``steps`` (the recorded steps, whose
    positions are the ``e<k>`` ids; a placeholder the translation dropped
    has no event), ``dropped`` (the recorded positions of the confirmation
    placeholders :func:`translate_confirmations` dropped)."""

    actions: list[dict[str, Any]] = field(default_factory=list)
    openers: dict[int, str | None] = field(default_factory=dict)
    steps: tuple[Step, ...] = ()
    dropped: tuple[int, ...] = ()


#: Why a recorded step cannot be replayed, by shape (exact for ADK-JS 2.0.0).
REFUSED = {
    "rewind": "rewinds: ADK-JS 2.0.0 has no rewind (nothing in dist/ reads one)",
    "confirmation": "adk-python's tool confirmation and credential request events: ADK-JS's "
    "Runner stores a confirmation as the synthetic adk_request_confirmation call alone (no "
    "placeholder response); this mapping translates only the confirmation shape whose ADK-JS "
    "counterpart is verified (translate_confirmations), and no credential request",
    "isolation scope": "isolation scopes here: the driver's model calls run in no isolation "
    "scope (InvocationContext.isolationScope unset)",
}


def _refuse(step: Step, k: int, translated: bool = False) -> None:
    """Raise :class:`NotApplicable` for a recorded step ADK-JS cannot hold:
    ``ADK-JS cannot represent <REFUSED reason> (recorded step <k>)``.
    ``translated``: the step is a synthetic confirmation call or the user's
    reply to one that :func:`translate_confirmations` put in ADK-JS's shape."""
    shape = None
    if step.rewind_before is not None:
        shape = "rewind"
    elif not translated and (
        step.confirmations
        or step.auth_requests
        or any(c.name in FRAMEWORK_CALLS for c in step.calls)
        or any(r.name in FRAMEWORK_CALLS for r in step.responses)
    ):
        shape = "confirmation"
    elif step.isolation_scope is not None:
        shape = "isolation scope"
    if shape is not None:
        raise NotApplicable(f"ADK-JS cannot represent {REFUSED[shape]} (recorded step {k})")


#: The label of a verdict on a session :func:`translate_confirmations`
#: changed: the verdict is about the conversation as ADK-JS would have
#: stored it, not about the recorded events literally.
TRANSLATED_LABEL = (
    "translated: adk-python's confirmation placeholder dropped, as ADK-JS stores a confirmation"
)


@dataclass(frozen=True)
class Translation:
    """A recorded session with its tool confirmations in ADK-JS's shape.

    ``case``: the translated session (same configuration; ``ends`` counted
    in translated steps); ``positions[t]``: the recorded position of
    translated step ``t``; ``asked`` / ``replies``: the translated positions
    of the synthetic ``adk_request_confirmation`` calls and of the user's
    replies to them; ``dropped``: the recorded positions of the placeholder
    responses dropped (empty: nothing was translated)."""

    case: PipelineCase
    positions: tuple[int, ...]
    asked: frozenset[int] = frozenset()
    replies: frozenset[int] = frozenset()
    dropped: tuple[int, ...] = ()


def _bare(step: Step, **allowed: Any) -> bool:
    """Whether ``step`` holds nothing but its invocation, author, timestamp
    and the fields in ``allowed`` (with those values): no other part, key,
    branch, scope, rewind or record."""
    empty = Step(step.invocation, step.author, step.timestamp, **allowed)
    return step == empty


def translate_confirmations(case: PipelineCase) -> Translation:
    """``case`` with every recorded tool confirmation stored as ADK-JS's
    Runner stores the same conversation (``_Timeline._op_ask`` /
    ``_op_reply`` in :mod:`compaction_harness.sdk.js.timeline`, pinned against the
    Runner by tests/slow/adk_js/test_differential_js.py; ``generateRequestConfirmationEvent``
    in agents/functions.js and the confirmation request processor,
    agents/processors/request_confirmation_llm_request_processor.js).

    adk-python records, in one invocation: the root agent's call ``c`` (alone
    on its event), the tool's placeholder response to ``c`` carrying
    ``confirmations=(c,)``, then the synthetic long-running
    ``adk_request_confirmation`` call alone. ADK-JS stores no placeholder:
    it is dropped and ``confirmations=(c,)`` moves to the synthetic call's
    event. A reply (the user's function response to the synthetic id, alone
    on its event) must open an invocation in the recording and be followed,
    in that invocation, by the root agent's real result for ``c`` alone: as
    ADK-JS stores it (the reply is a new run, ``newInvocationContextId`` in
    runner/runner.js; the processor re-runs the tool and stores its result
    before any model call). Both are kept as recorded, invocation ids too:
    ADK-JS would draw a new id for the reply's run, but no compaction or
    contents code in dist/ reads an event's ``invocationId`` (only the
    driver's invocation boundaries and openers matter to the checks, and
    those are the same). Where the recording ends the reply's invocation
    right after the real result, ADK-JS's Runner would call the model next
    (and compact there); the replay, as for every recorded step, calls the
    model only where the recording has the model's step. A session with no
    confirmation comes back as is.

    Raises :class:`NotApplicable` (``ADK-JS cannot represent ... (recorded
    step <k>)``) for a confirmation in any other shape: a placeholder not
    between its call and the synthetic call in one invocation, several calls
    or requests on one event, a reply recorded inside a running invocation
    (adk-python resumed it; ADK-JS's Runner starts a new one), a reply not
    followed by the real result, a second reply to one request, or a call id
    reused before the reply (``differential_js.RUNNER_CANNOT["reply-reused-id"]``)."""
    steps = case.session.steps
    ends = set(case.ends)

    def opens(k: int) -> bool:
        return k == 0 or k in ends or steps[k].invocation != steps[k - 1].invocation

    def refuse(k: int, why: str) -> NotApplicable:
        return NotApplicable(
            f"ADK-JS cannot represent adk-python's tool confirmation here: {why} "
            f"(recorded step {k})"
        )

    dropped: list[int] = []
    asked: dict[str, tuple[int, Call]] = {}  # synthetic id -> (its recorded position, call)
    answered: set[str] = set()
    replies: set[int] = set()
    results: set[int] = set()
    moved: dict[int, Step] = {}
    for k, step in enumerate(steps):
        if step.confirmations and step.responses:
            c = step.confirmations[0]
            if (
                step.author != case.root
                or len(step.responses) != 1
                or not _bare(
                    step, responses=(Response(c, step.responses[0].name),), confirmations=(c,)
                )
            ):
                raise refuse(k, "a placeholder response other than one agent response alone")
            before = steps[k - 1] if k else None
            call = Call(c, step.responses[0].name)
            if (
                before is None
                or opens(k)
                or before.author != case.root
                or not _bare(before, calls=(call,), prompt_tokens=before.prompt_tokens)
            ):
                raise refuse(k, "the placeholder does not follow its call alone in its invocation")
            after = steps[k + 1] if k + 1 < len(steps) else None
            request = after.calls[0] if after is not None and after.calls else None
            if (
                after is None
                or request is None
                or opens(k + 1)
                or after.author != case.root
                or request.name != REQUEST_CONFIRMATION_CALL
                or not _bare(after, calls=(request,), long_running=(request.id,))
            ):
                raise refuse(
                    k,
                    "the placeholder is not followed by the synthetic call alone in its invocation",
                )
            dropped.append(k)
            moved[k + 1] = dataclasses.replace(after, confirmations=(c,))
            asked[request.id] = (k + 1, call)
        elif any(r.name == REQUEST_CONFIRMATION_CALL for r in step.responses):
            (reply,) = step.responses if len(step.responses) == 1 else (None,)
            if reply is None or step.author != "user" or not _bare(step, responses=(reply,)):
                raise refuse(k, "a reply other than the user's one response alone")
            if reply.id not in asked:
                raise refuse(k, "a reply to no translated confirmation request")
            if reply.id in answered:
                raise refuse(k, "a second reply to one confirmation request")
            if not opens(k):
                raise refuse(
                    k,
                    "a reply recorded inside a running invocation (ADK-JS's Runner starts a "
                    "new invocation for it)",
                )
            at, call = asked[reply.id]
            if any(call.id in s.call_ids or call.id in s.response_ids for s in steps[at + 1 : k]):
                raise refuse(k, f"the asked call's id {call.id} was reused before the reply")
            after = steps[k + 1] if k + 1 < len(steps) else None
            if (
                after is None
                or opens(k + 1)
                or after.author != case.root
                or not _bare(after, responses=(Response(call.id, call.name),))
            ):
                raise refuse(
                    k, "the reply is not followed, in its invocation, by the tool's real result"
                )
            answered.add(reply.id)
            replies.add(k)
            results.add(k + 1)
    if not dropped:
        return Translation(case, tuple(range(len(steps))))
    positions = tuple(k for k in range(len(steps)) if k not in dropped)
    translated = tuple(moved.get(k, steps[k]) for k in positions)
    new_ends = tuple(e - sum(d < e for d in dropped) for e in case.ends)
    where = {k: t for t, k in enumerate(positions)}
    return Translation(
        dataclasses.replace(case, session=Session(translated), ends=new_ends),
        positions,
        frozenset(where[at] for at, _ in asked.values()),
        frozenset(where[k] for k in replies),
        tuple(dropped),
    )


def translation_label(case: PipelineCase) -> str:
    """:data:`TRANSLATED_LABEL` when :func:`translate_confirmations` changes
    ``case``, else ``""``. Raises as it does."""
    return TRANSLATED_LABEL if translate_confirmations(case).dropped else ""


def recorded_actions(case: PipelineCase) -> RecordedActions:
    """The driver actions that replay ``case``'s steps in order, with model
    calls where the module docstring says. Raises :class:`NotApplicable`
    for a step ADK-JS cannot represent (the reason names the step).

    The session is :func:`translate_confirmations`'s: event ids are
    ``e<recorded position>`` all the same. The synthetic call's event gets
    ADK-JS's role ``user``, its ``args`` (``originalFunctionCall``,
    ``toolConfirmation``) and ``requestedToolConfirmations[c]``; the user's
    reply the response ``{"confirmed": true}``, as ``_Timeline._op_ask`` /
    ``_op_reply`` store them."""
    translation = translate_confirmations(case)
    out = RecordedActions(steps=tuple(case.session.steps), dropped=translation.dropped)
    ends = list(translation.case.ends)
    previous: str | None = None
    opener: str | None = None
    calls: dict[str, dict[str, Any]] = {}  # call id -> its functionCall as appended
    for t, step in enumerate(translation.case.session.steps):
        k = translation.positions[t]
        _refuse(step, k, t in translation.asked or t in translation.replies)
        while ends and ends[0] == t:
            ends.pop(0)
            previous = None
        if step.invocation != previous:
            out.actions.append({"do": "invocation", "id": step.invocation})
            opener = step.text if step.author == "user" else None
        previous = step.invocation
        before = translation.case.session.steps[t - 1] if t else None
        if from_model(dataclasses.replace(step, branch=None), before):
            out.openers[len(out.actions)] = opener if step.author == case.root else None
            out.actions.append(
                {
                    "do": "model_call",
                    "agent": step.author,
                    "branch": step.branch,
                    "now": _ms(step.timestamp),
                }
            )
        if step.compaction is not None:
            event = client_record_event(step, f"e{k}")
        else:
            event = to_js_event(step, f"e{k}")
        for part in event["content"]["parts"]:
            if "functionCall" in part:
                calls[part["functionCall"]["id"]] = part["functionCall"]
        if t in translation.asked:
            (c,) = step.confirmations
            confirmation = {
                "hint": JS_CONFIRMATION_HINT.format(name=calls[c]["name"]),
                "confirmed": False,
            }
            event["content"]["role"] = "user"
            event["content"]["parts"][0]["functionCall"]["args"] = {
                "originalFunctionCall": calls[c],
                "toolConfirmation": confirmation,
            }
            event["actions"]["requestedToolConfirmations"] = {c: dict(confirmation)}
        if t in translation.replies:
            event["content"]["parts"][0]["functionResponse"]["response"] = {"confirmed": True}
        out.actions.append({"do": "append", "event": event})
    return out


def confirmation_problems(actions: list[dict[str, Any]]) -> list[str]:
    """Where the driver ``actions`` (as :func:`recorded_actions` builds
    them) store a tool confirmation otherwise than ADK-JS's Runner does
    (``_Timeline._op_ask`` / ``_op_reply``, pinned against the Runner by
    tests/slow/adk_js/test_differential_js.py), one line each; empty when they agree:

    * ``requestedToolConfirmations`` only on a synthetic
      ``adk_request_confirmation`` call's event: author an agent, role
      ``user``, its one call long-running, the key the id of
      ``args.originalFunctionCall``, right after that call's event, with no
      response to the call in between (adk-python's placeholder);
    * a user's response to a synthetic id opens an invocation (a new run)
      and is followed, in that invocation, by the agent's response to the
      original call (the tool's real result) before any model call.

    :func:`run_recorded` refuses a mapping with problems (a harness fault)."""
    problems: list[str] = []
    appended: list[tuple[dict[str, Any], bool]] = []  # (event, opens an invocation)
    opened = False
    for action in actions:
        if action["do"] == "invocation":
            opened = True
        elif action["do"] == "model_call":
            appended.append(({"id": "model_call"}, False))
        elif action["do"] == "append":
            appended.append((action["event"], opened))
            opened = False
    asked: dict[str, str] = {}  # synthetic id -> original call id

    def parts(event: dict[str, Any], kind: str) -> list[dict[str, Any]]:
        return [p[kind] for p in (event.get("content") or {}).get("parts") or [] if kind in p]

    for k, (event, _) in enumerate(appended):
        keys = _requested(event, "requestedToolConfirmations")
        calls = parts(event, "functionCall")
        synthetic = [c for c in calls if c.get("name") == REQUEST_CONFIRMATION_CALL]
        if keys and not synthetic:
            problems.append(
                f"{event['id']}: a confirmation key {list(keys)} on an event with no "
                "adk_request_confirmation call (adk-python's placeholder shape)"
            )
        for call in synthetic:
            original = (call.get("args") or {}).get("originalFunctionCall") or {}
            before = [e for e, _ in appended[:k] if e["id"] != "model_call"][-1:]
            answered = [
                e["id"]
                for e, _ in appended[:k]
                if any(r.get("id") == original.get("id") for r in parts(e, "functionResponse"))
            ]
            if (
                event.get("author") == "user"
                or (event.get("content") or {}).get("role") != "user"
                or len(calls) != 1
                or call.get("id") not in (event.get("longRunningToolIds") or ())
                or keys != (original.get("id"),)
                or not before
                or original not in parts(before[-1], "functionCall")
                or answered
            ):
                problems.append(
                    f"{event['id']}: the adk_request_confirmation call is not ADK-JS's "
                    "(the agent's, role user, long-running, keyed by the original call right "
                    f"after it, no placeholder response; responses before: {answered})"
                )
            asked[call.get("id")] = original.get("id")
    for k, (event, opens) in enumerate(appended):
        for response in parts(event, "functionResponse"):
            if response.get("id") not in asked:
                continue
            original = asked[response["id"]]
            after = appended[k + 1][0] if k + 1 < len(appended) else {}
            real = [r.get("id") for r in parts(after, "functionResponse")]
            if (
                event.get("author") != "user"
                or not opens
                or appended[k + 1 : k + 2] == []
                or appended[k + 1][1]
                or after.get("author") in ("user", None)
                or real != [original]
            ):
                problems.append(
                    f"{event['id']}: the reply to {response['id']} is not ADK-JS's (the user's, "
                    f"opening a run, then the agent's real result for {original} in it)"
                )
    return problems


def run_recorded(
    case: PipelineCase,
    compactor: JsCompactor | None = None,
    *,
    seed: int | None = None,
    mapping: Callable[[PipelineCase], RecordedActions] = recorded_actions,
) -> JsRun:
    """Replay ``case`` on ADK-JS with ``compactor`` (default: :func:`compactor_of`).

    ``mapping`` builds the actions (tests pass a deliberately broken one).
    Returns a :class:`~compaction_harness.sdk.js.run.JsRun` whose ``script`` is
    :func:`recorded_script` and whose ``origin`` gives, per stored event, the
    recorded step's position (None: ADK-JS made it). Raises
    :class:`NotApplicable`, :class:`~compaction_harness.sdk.js.node.AdkJsUnavailable`
    or :class:`RuntimeError` (the driver refused the request) as
    ``run.run_script`` does, and :class:`RuntimeError` when the mapping
    stores a confirmation otherwise than ADK-JS (:func:`confirmation_problems`)."""
    compactor = compactor or compactor_of(case)[0]
    if compactor.name == "thought_pruning":
        raise NotApplicable("the session model has no thought parts for thought pruning to prune")
    if compactor.name == "agent_controlled":
        raise NotApplicable("no recorded step makes the consolidate_context call")
    script = recorded_script(case)
    built = mapping(case)
    problems = confirmation_problems(built.actions)
    if problems:
        raise RuntimeError(
            "the mapping stores a confirmation otherwise than ADK-JS: " + "; ".join(problems)
        )
    payload = {
        "id": 0,
        "compactor": compactor.to_json(),
        "summary": script.config.summary,
        "seed": script_seed(script) if seed is None else seed,
        "base_chars": 0,
        "actions": built.actions,
    }

    def origin(event_id: str) -> int | None:
        if event_id.startswith("e") and event_id[1:].isdigit():
            k = int(event_id[1:])
            return k if k < len(built.steps) else None
        return None

    return run_request(script, compactor, payload, built.openers, origin)


def check_recorded(
    case: PipelineCase, compactor: JsCompactor | None = None, *, seed: int | None = None
):
    """Replay ``case`` on ADK-JS and triage it as ``triage.check_case``
    triages a script: a :class:`~compaction_harness.spec.outcome.UnitOutcome` with
    the new violations, the (violation, fault id) pairs in ``known``,
    ``observed`` as ``run.observed`` and ``triaged`` True. Raises as
    :func:`run_recorded` does."""
    from ...spec.outcome import UnitOutcome
    from .triage import triage

    run = run_recorded(case, compactor, seed=seed)
    new, known = triage(run)
    return UnitOutcome(new, {}, observed(run), [], known, True)
