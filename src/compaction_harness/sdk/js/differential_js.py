"""The ADK-JS emulating mapping stores what ADK-JS's own ``Runner`` stores.

:func:`compare_script` runs one script twice on ADK-JS 2.0.0: through the
emulating mapping (:func:`compaction_harness.sdk.js.run.run_script`: the
harness's ``_Timeline`` appends the events itself through
``InMemorySessionService``) and through the Node driver's runner mode
(``mode: "runner"`` in ``sdks/adk-js/driver.mjs``: ADK-JS's
``InMemoryRunner`` from ``runner/in_memory_runner.js`` with an ``LlmAgent``,
a scripted ``BaseLlm`` replaying the script's model turns, a ``FunctionTool``
and a ``LongRunningFunctionTool``, the same compactor and summariser). It
returns the differences as one-line strings (empty: the two agree).

Compared, per stored event by position: author, content role, the parts
(texts; function call and response ids and names, in order), the
long-running ids, whether it is a compacted event (and its summary number);
per neighbouring pair: whether the two share an invocation id and the order
of their timestamps (``<``, ``=``, ``>``); per model call of the root agent
that the script scripted: the prompt contents (roles and parts; a
response's harness event id is left out, since the Runner's events have
ADK-JS's own ids). Event ids and absolute times differ by construction
(the Runner draws ids and reads ``Date.now``) and are not compared.

What the Runner cannot produce, and :data:`RUNNER_CANNOT` names (the
strategy drops these operations, which leaves a valid script):

* ``Open(opener="agent")``: ``Runner.runAsync`` runs the agent only when it is
  given a new message (``runner/runner.js``: ``if (newMessage)``).
* ``Calls(kind="plain", fate="later")``: a ``FunctionTool`` always answers; a
  tool process that dies without an answer has no counterpart in one Node
  process (a throwing tool yields an error response, not silence).
* ``FanOut`` and ``Delegate``: the runner mode has one agent (no sub-agents).
* ``ClientRecord``: a client appends its compaction record straight to the
  session service (``events.client_record_event``); the Runner never writes one.
* ``Tie``, ``Skew`` and a coarse clock resolution: the Runner's clock is the
  driver's ``Date.now`` (a fresh reading a step later each time); the
  script's ties, host skew and coarse resolution are the emulating clock
  model, and ``getActiveEvents``' time filter makes prompts depend on them.
  :func:`comparable` drops ``Tie`` and ``Skew`` and sets the resolution to
  1 microsecond. (A first run of the comparison with them kept: every
  difference left was a prompt of a script with ``Skew`` or ``Tie``.) The
  ties themselves are compared by hand: the Runner on a held clock
  (``step`` 0, no ``gap``) stores what the mapping stores with a ``Tie``
  before each model call and message (``tests/slow/adk_js/test_differential_js.py``).
* ``Reply`` with ids numbered per turn, when a later call reused the asked
  call's id (``reply-reused-id``): ADK-JS's Runner re-runs the newest call
  with that id, not the asked one (``AUTH_PREPROCESSOR`` searches the
  events from the newest back; the confirmation processor's map of the
  agent's calls keeps the last one of an id and raises
  ``IntentMismatchError`` ``tool_name_mismatch`` when its tool differs), and
  a confirmation whose id a later response to another call carries is
  taken as answered (``hasRespondedAfter``): nothing is re-run.
  Found by ``make differential SDK=js`` with more examples; the mapping
  re-runs the asked call, and :func:`comparable` drops such a ``Reply``.

Ask and Reply are compared like every other operation: a run whose message
answers a framework request names the request by its number among those
stored (``resolve``), since the Runner draws the synthetic calls' ids, and
the comparison names request ids ``request#<k>`` by order on both sides.

Errors: :class:`~compaction_harness.sdk.js.case.NotApplicable` when the script
cannot be run by the Runner (the reason says which rule above);
``RuntimeError`` when the driver refuses a request.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ...spec import scripts as ops
from ...spec.reference import SYNTHETIC_HITL_CALL_NAMES
from .case import JsCompactor, NotApplicable, compactor_for
from .node import driver
from .run import run_script, script_seed
from .timeline import AGENT, _Timeline, timeline

__all__ = [
    "RUNNER_CANNOT",
    "comparable",
    "compare_script",
    "runner_cannot",
    "runner_request",
]

#: Operation -> why ADK-JS's Runner cannot produce it (see the module docstring).
RUNNER_CANNOT = {
    "open-agent": "Runner.runAsync runs the agent only with a new message",
    "calls-plain-later": "a FunctionTool always answers: a dead tool process is not modelled",
    "fan_out": "the runner mode has one agent, no sub-agents",
    "delegate": "the runner mode has one agent, no sub-agents",
    "client_record": "a client writes its compaction record to the session service; "
    "the Runner never does",
    "reply-reused-id": "with ids numbered per turn, a Reply whose asked call's id a later "
    "event reused: ADK-JS's Runner re-runs the newest call with that id (AUTH_PREPROCESSOR, "
    "auth/auth_preprocessor.js, looks the id up from the newest event back; the confirmation "
    "processor keeps the last call of an id and raises IntentMismatchError "
    "tool_name_mismatch), or, for a confirmation, takes a later response to another call "
    "with that id for the answer (hasRespondedAfter) and re-runs nothing",
}
#: Each run's distance from the previous one, and each clock read's step (ms).
GAP_MS = 7000.0
STEP_MS = 0.4
START_MS = 1_700_000_000_000.0


def runner_cannot(op: ops.Operation) -> str | None:
    """The key of :data:`RUNNER_CANNOT` for ``op``, or None (runnable)."""
    if op.op == "open" and op.opener == "agent":
        return "open-agent"
    if op.op == "calls" and op.kind == "plain" and op.fate == "later":
        return "calls-plain-later"
    if op.op in ("fan_out", "delegate", "client_record"):
        return op.op
    return None


def comparable(script: ops.Script) -> ops.Script:
    """``script`` as the Runner can run it: the operations of
    :data:`RUNNER_CANNOT`, ``Tie`` and ``Skew`` dropped, a fine clock; a
    ``Text`` reply (then ``End``) where a
    run would end without the model's final reply (``Runner.runAsync``
    calls the model after every new message, and again after every tool
    result: the emulating mapping makes no model call there, so the
    compactor would not run where the Runner runs it); an ``End`` after
    every ``Text``: a
    text reply is a final response (``isFinalResponse``, ``events/event.js``),
    so ``LlmAgent.runAsyncImpl`` (``agents/llm_agent.js``) ends the run there;
    the emulating mapping would let the model go on in the same invocation.

    Whether a run is still waiting for the model's final reply, and whether a
    ``Reply`` answers a request whose call id a later event reused, is what
    the emulating mapping's interpreter (:class:`~.timeline._Timeline`) says
    of the operations kept so far. Raises :class:`NotApplicable` for an
    operation ADK-JS cannot represent (a rewind)."""
    config = dataclasses.replace(script.config, resolution=1e-6)
    built = _Timeline(ops.Script(config, ()))
    kept: list[ops.Operation] = []

    def keep(*more: ops.Operation) -> None:
        for op in more:
            built.apply(op)
            kept.append(op)

    for op in script.operations:
        if runner_cannot(op) is not None or op.op in ("tie", "skew"):
            continue
        if op.op in ("open", "answer", "reply", "end") and built.running is not None:
            keep(ops.Text(), ops.End())
        if op.op == "reply" and config.call_ids == "per_turn" and built.reuses_asked_id(op):
            continue  # RUNNER_CANNOT["reply-reused-id"]
        keep(op)
        if op.op == "text":
            keep(ops.End())
    if built.running is not None:
        keep(ops.Text(), ops.End())
    return ops.Script(config, tuple(kept))


def runner_request(script: ops.Script, compactor: JsCompactor | None = None) -> dict[str, Any]:
    """The runner-mode request for ``script``: one run per invocation of the
    emulating timeline (its opening user event's content is the new message;
    its model events' parts are the scripted turns, in order, with their
    ``usage`` marks; a tool's result, kept with the turn that made the call
    (call ids repeat across turns with ``call_ids="per_turn"``), is the
    response the emulating mapping appends for it, byte for byte, so token estimates agree; a
    long-running call with no response there gets none: the
    ``LongRunningFunctionTool`` returns ``undefined``). Raises
    :class:`NotApplicable` naming a rule of
    :data:`RUNNER_CANNOT`."""
    for op in script.operations:
        key = runner_cannot(op)
        if key is not None:
            raise NotApplicable(f"ADK-JS's Runner cannot produce {key}: {RUNNER_CANNOT[key]}")
    built = timeline(script)
    runs: list[dict[str, Any]] = []
    position = 0
    for action in built.actions:
        if action["do"] == "invocation":
            runs.append({"gap": GAP_MS, "message": None, "turns": [], "results": {}})
        elif action["do"] == "append":
            step = built.steps[position]
            position += 1
            run = runs[-1]
            content = action["event"]["content"]
            if step.author == "user":
                run["message"] = content
                for r in step.responses:  # a reply to a framework request
                    if r.id in built.request_number:
                        run.setdefault("resolve", {})[r.id] = built.request_number[r.id]
            elif any(c.name in SYNTHETIC_HITL_CALL_NAMES for c in step.calls):
                continue  # ADK-JS makes the synthetic request call itself
            elif step.responses:  # the tools' results for the calls of the last turn
                for part in content["parts"]:
                    response = part["functionResponse"]
                    # Before the run's first turn: a tool the request
                    # processors re-run (a confirmed or authorised call).
                    where = run["turns"][-1]["results"] if run["turns"] else run["results"]
                    where[response["id"]] = response["response"]
            else:
                usage = action.get("usage") == "last_call"
                run["turns"].append({"parts": content["parts"], "usage": usage, "results": {}})
    for run in runs:
        if run["message"] is None:
            raise NotApplicable(
                "ADK-JS's Runner cannot produce open-agent: " + RUNNER_CANNOT["open-agent"]
            )
    compactor = compactor or compactor_for(script)
    return {
        "id": 0,
        "mode": "runner",
        "compactor": compactor.to_json(),
        "summary": script.config.summary,
        "seed": script_seed(script),
        "base_chars": script.config.system_chars + script.config.tools_chars,
        "start": START_MS,
        "step": STEP_MS,
        "runs": runs,
    }


def _request_names(events: list[dict[str, Any]]) -> dict[str, str]:
    """The ids of the framework requests (``adk_request_confirmation`` /
    ``adk_request_credential`` calls) in ``events``, named ``request#<k>`` by
    their order: ADK-JS draws these ids itself, so the two sides are
    compared by which request an id names, not by the id."""
    names: dict[str, str] = {}
    for event in events:
        for p in (event.get("content") or {}).get("parts") or []:
            call = p.get("functionCall") or {}
            if call.get("name") in SYNTHETIC_HITL_CALL_NAMES and call.get("id") not in names:
                names[call.get("id")] = f"request#{len(names)}"
    return names


def _signature(event: dict[str, Any], requests: dict[str, str] | None = None) -> tuple[Any, ...]:
    requests = requests or {}
    content = event.get("content") or {}
    parts: list[tuple[Any, ...]] = []
    for p in content.get("parts") or []:
        if p.get("functionCall"):
            c = p["functionCall"]
            parts.append(("call", requests.get(c.get("id"), c.get("id")), c.get("name")))
        elif p.get("functionResponse"):
            r = p["functionResponse"]
            parts.append(("response", requests.get(r.get("id"), r.get("id")), r.get("name")))
        elif isinstance(p.get("text"), str):
            parts.append(("text", p["text"]))
    summary = None
    if event.get("isCompacted"):
        summary = (event.get("compactedContent") or "").split("\n", 1)[0]
    return (
        event.get("author"),
        content.get("role") if not event.get("isCompacted") else None,
        tuple(parts) if not event.get("isCompacted") else (),
        tuple(sorted(requests.get(i, i) for i in event.get("longRunningToolIds") or ())),
        summary,
        tuple(sorted(event.get("requestedToolConfirmations") or ())),
        tuple(sorted(event.get("requestedAuthConfigs") or ())),
    )


def _order(a: float, b: float) -> str:
    return "<" if a < b else "=" if a == b else ">"


def _prompt(contents: list[Any]) -> list[Any]:
    # Without the event ids the emulating mode's parts carry (a response's, a
    # text's and a call's: driver.mjs's namedTexts): the Runner's name none.
    return [
        [
            role,
            [
                part[:3]
                if part[0] in ("response", "call")
                else part[:2]
                if part[0] == "text"
                else part
                for part in parts
            ],
        ]
        for role, parts in contents
    ]


def compare_script(
    script: ops.Script,
    compactor: JsCompactor | None = None,
    *,
    request: dict[str, Any] | None = None,
) -> list[str]:
    """The differences between the emulating mapping and ADK-JS's Runner for
    ``script`` (one line each; empty when they agree). ``request`` replaces
    the runner-mode request (tests use it to plant a wrong mapping)."""
    compactor = compactor or compactor_for(script)
    request = request or runner_request(script, compactor)
    emulated = run_script(script, compactor)
    answer = driver().request(request)
    if not answer.get("ok"):
        raise RuntimeError(f"the ADK-JS driver refused the runner request: {answer.get('error')}")
    out: list[str] = []
    exc_e, exc_r = emulated.exception, answer.get("exception")
    if (exc_e or {}).get("name") != (exc_r or {}).get("name"):
        out.append(f"exception: emulating {exc_e}, Runner {exc_r}")
    mine = [emulated.events[i] for i in emulated.ids]
    theirs = [answer["events"][i] for i in answer["stored"]]
    if len(mine) != len(theirs):
        out.append(f"stored events: emulating {len(mine)}, Runner {len(theirs)}")
    names_e, names_r = _request_names(mine), _request_names(theirs)
    for k, (a, b) in enumerate(zip(mine, theirs, strict=False)):
        sig_a, sig_b = _signature(a, names_e), _signature(b, names_r)
        if sig_a != sig_b:
            out.append(f"event {k}: emulating {sig_a}, Runner {sig_b}")
    clocked = script.config.resolution <= 1e-6 and not any(
        op.op in ("tie", "skew") for op in script.operations
    )
    for k in range(1, min(len(mine), len(theirs))):
        same_e = mine[k]["invocationId"] == mine[k - 1]["invocationId"]
        same_r = theirs[k]["invocationId"] == theirs[k - 1]["invocationId"]
        if same_e != same_r:
            out.append(f"events {k - 1},{k}: same invocation: emulating {same_e}, Runner {same_r}")
        if clocked:
            o_e = _order(mine[k - 1]["timestamp"], mine[k]["timestamp"])
            o_r = _order(theirs[k - 1]["timestamp"], theirs[k]["timestamp"])
            if o_e != o_r:
                out.append(f"events {k - 1},{k}: timestamps emulating {o_e}, Runner {o_r}")
    prompts_e = [
        _prompt(c["contents"]) for c in emulated.calls if c["agent"] == AGENT and "contents" in c
    ]
    prompts_r = [_prompt(p["contents"]) for p in answer.get("prompts", []) if p["scripted"]]
    if len(prompts_e) != len(prompts_r):
        out.append(f"model calls: emulating {len(prompts_e)}, Runner {len(prompts_r)}")
    for k, (a, b) in enumerate(zip(prompts_e, prompts_r, strict=False)):
        if a != b:
            out.append(f"prompt {k}: emulating {a}, Runner {b}")
    return out
