"""A script run on ADK-JS and its record (:class:`JsRun`).

Wire format: :mod:`.timeline` maps each script operation to the events
ADK-JS's ``Runner`` stores for it (as the emulating driver does for ADK
Python), and :func:`run_script` sends them, with the points of the model
calls, as one request to the Node driver (:mod:`.node`); the summaries and
prompts depend on ADK-JS alone, so one request per script suffices and the
Node side needs no knowledge of scripts. Events are ADK-JS event objects
(:mod:`.events`); answers come back as
:class:`~compaction_harness.spec.model.Step` sessions. A run can be made again
with other fixes (``JsRun.rerun``), which is what classification asks of it;
running classifies nothing.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...spec.model import Session, ShownText
from ...spec.pipeline_checks import Prompt
from ...spec.scripts import Script
from .case import JsCompactor, NotApplicable, compactor_for
from .events import from_js_event
from .node import INSTALL, AdkJsUnavailable, active_fixes, driver, package_version
from .timeline import _Timeline, timeline

__all__ = [
    "JsRun",
    "as_adk_js_reads",
    "foreign_records",
    "observed",
    "representable",
    "run_request",
    "run_script",
    "script_seed",
    "summary_branch",
]


def _named(part: list[Any], k: int, position: dict[str, str]) -> ShownText:
    """``part[k]`` naming the stored position of the event the driver says
    the part came from (``part[k + 1]``; ``""`` where it says none)."""
    event = part[k + 1] if len(part) > k + 1 else None
    return ShownText(part[k], position.get(event, "") if event is not None else "")


@dataclass
class JsRun:
    """What ADK-JS did with one script.

    Attributes:
        script, compactor: what ran.
        stored: the session as the session service stores it at the end
            (summaries included), as steps; ``ids`` their event ids.
        calls: one dict per model call, as the driver answers (``before``,
            ``after``, ``stored_before``, ``stored_after``: event ids;
            ``active``, ``active_after``: the ids the compactor's
            ``getActiveEvents`` keeps of ``before`` and of ``after``;
            ``summaries``: ``{"input": [ids], "event": id, "number": n}``;
            ``contents``, ``baseline``, ``baseline_unclaimed``: prompts as
            [role, parts]), plus
            ``opener`` (the text that opened the running invocation, or None).
        exception: ``{"name", "message", "action"}`` if ADK-JS raised.
        version: the installed package version.
    """

    script: Script
    compactor: JsCompactor
    stored: Session
    ids: list[str]
    calls: list[dict[str, Any]]
    exception: dict[str, Any] | None
    version: str
    events: dict[str, dict[str, Any]] = field(repr=False, default_factory=dict)
    #: Per stored position, the index of the script operation that appended
    #: the event (None for the summaries ADK-JS stored).
    origin: list[int | None] = field(default_factory=list)
    #: The ADK-JS fixes the run had (js_fixes.py).
    fixes: tuple[str, ...] = ()
    #: The same request again with other fixes (classification by fix).
    rerun: Callable[[tuple[str, ...]], JsRun] | None = field(
        default=None, repr=False, compare=False
    )

    def prompt(self, call: dict[str, Any], key: str = "contents") -> Prompt:
        """A call's contents in the checkers' form: a response part names the
        stored position of its event, a text part is a
        :class:`~compaction_harness.spec.model.ShownText` naming the stored
        position of the event it came from (the driver's ``["text", text,
        event id]``; ``""`` for a text no event holds, or a prompt recorded
        before texts named their events), and a call part's tool name is one
        naming its event (the driver's ``["call", id, name, event id]``), so
        P4 is checked by event identity, calls too (see ``adk.PromptPart``)."""
        position = {event_id: str(k) for k, event_id in enumerate(self.ids)}
        return [
            (
                role,
                tuple(
                    (p[0], p[1], p[2], position.get(p[3], p[3]))
                    if p[0] == "response"
                    else ("text", _named(p, 1, position))
                    if p[0] == "text"
                    else ("call", p[1], _named(p, 2, position))
                    if p[0] == "call"
                    else tuple(p)
                    for p in parts
                ),
            )
            for role, parts in call[key]
        ]

    def summaries(self) -> list[tuple[int, list[int], list[int]]]:
        """Per summary, in the order made: (stored length then, stored
        positions of the raw events given, numbers of the summaries given)."""
        position = {event_id: k for k, event_id in enumerate(self.ids)}
        made = {s["event"]: s["number"] for c in self.calls for s in c["summaries"]}
        out = []
        for call in self.calls:
            for s in call["summaries"]:
                given = [
                    position[i]
                    for i in s["input"]
                    if i in position
                    and i not in made
                    and not self.events.get(i, {}).get("isCompacted")
                ]
                seeds = [made[i] for i in s["input"] if i in made]
                out.append((len(call["stored_before"]), given, seeds))
        return out


def summary_branch(run: JsRun, made: dict[str, Any]) -> str | None:
    """The branch of the compacted event a summary (an entry of a call's
    ``summaries``) became, as ADK-JS left it in the session (``eventJson``'s
    ``branch``): None, ADK-JS's own (``createCompactedEvent`` gives a summary
    no branch, so every agent reads it), unless a fix gave it one."""
    return (run.events.get(made.get("event") or "") or {}).get("branch") or None


def foreign_records(run: JsRun, length: int | None = None) -> list[int]:
    """Stored positions (among the first ``length``; default all) of the
    compaction records the mapping appended (:func:`client_record_event`: a
    client's or an older session's), not made by ADK-JS's compaction in this
    run; the checkers count the events of their ranges as their writer's
    decision (:func:`pipeline.check_nothing_lost`, as
    ``PipelineRun.foreign_records`` does for adk-python). A summary the
    summariser was given one of them takes it as ADK-JS's own compactors take
    the latest compacted event: in :meth:`JsRun.summaries` it is not a raw
    event given."""
    steps = run.stored.steps[:length]
    return [
        p
        for p, step in enumerate(steps)
        if step.compaction is not None and p < len(run.origin) and run.origin[p] is not None
    ]


def as_adk_js_reads(steps: Session, records: Sequence[int]) -> Session:
    """``steps`` with the range of each foreign compaction record (positions
    ``records``, :func:`foreign_records`) as ADK-JS reads it: from the
    beginning of time to its ``endTime`` (``Compaction.start`` = -inf).

    ADK-JS documents ``getActiveEvents`` (``types/context/compaction_utils.d.ts``)
    as returning "only the active events since the latest compaction",
    "starting with the latest CompactedEvent": the latest compacted event
    replaces the whole history up to it, and the code keeps only raw events
    stamped later than its ``endTime`` (``context/compaction_utils.js``;
    ``startTime``, "the start time of the context that was compacted",
    is read nowhere in ``dist/``). Its own summaries are rolling
    (``TokenBasedContextCompactor.compact`` gives the active compacted event
    to the summariser with the raw events), so each stands for everything
    before it. A record a client or an older session writes in that shape
    therefore claims, in ADK-JS's session, every event stamped up to its
    ``endTime``, whatever its ``startTime`` says: what that hides is its
    writer's decision (P4, P3), as ``pipeline.check_nothing_lost`` counts a
    record for adk-python, which reads ``[start, end]``."""
    chosen = set(records)
    return Session(
        tuple(
            dataclasses.replace(
                step, compaction=dataclasses.replace(step.compaction, start=-math.inf)
            )
            if p in chosen and step.compaction is not None
            else step
            for p, step in enumerate(steps.steps)
        )
    )


def script_seed(script: Script) -> int:
    """The seed of the driver's generators for ``script`` (driver.mjs: event
    ids ADK-JS draws with ``Math.random``, ``randomUUID``'s invocation,
    function-call and session ids): the first 32 bits of the hash
    ``driver.ScriptIds`` seeds adk-python's ids with (SHA-256 of the
    script's configuration, its ``driver`` left out, and not of its
    operations, for the reason given there). The ids are a function of the
    script, so a replay draws them again, while scripts of other
    configurations break an id-decided tie each their own way (DESIGN,
    Determinism)."""
    config = script.config.to_json()
    config.pop("driver", None)
    digest = hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()
    return int(digest[:8], 16)


#: Why ADK-JS refuses a script that reads part of the session (``config.recent_events``).
PARTIAL_READ = (
    "ADK-JS 2.0.0's Runner always loads the whole session: its RunConfig has no "
    "get-session option (runner.js calls sessionService.getSession without a config; "
    "GetSessionConfig.numRecentEvents exists only for direct getSession calls), so "
    "config.recent_events has no ADK-JS counterpart"
)


def representable(script: Script, compactor: JsCompactor) -> _Timeline:
    """The driver actions for ``script`` with ``compactor``, found without
    running Node. Raises :class:`NotApplicable` (one line: why) when ADK-JS
    cannot run it: a compactor with nothing to do in the session model, or
    an operation ADK-JS cannot represent (:func:`timeline`)."""
    if script.config.recent_events is not None:
        raise NotApplicable(PARTIAL_READ)
    if script.config.storage == "sqlite":
        raise NotApplicable("ADK-JS has no SqliteSessionService (storage 'sqlite' is google-adk's)")
    if script.config.storage in ("postgresql", "mariadb"):
        raise NotApplicable(
            f"the Node driver keeps ADK-JS's DatabaseSessionService on SQLite only "
            f"(storage {script.config.storage!r} needs a MikroORM driver it does not install)"
        )
    if compactor.name == "thought_pruning":
        raise NotApplicable("the session model has no thought parts for thought pruning to prune")
    if compactor.name == "agent_controlled":
        raise NotApplicable("no script operation makes the consolidate_context call")
    return timeline(script)


def run_script(
    script: Script,
    compactor: JsCompactor | None = None,
    *,
    seed: int | None = None,
    storage: str = "memory",
    fixes: tuple[str, ...] | None = None,
) -> JsRun:
    """Run ``script`` on ADK-JS with ``compactor`` (default: :func:`compactor_for`)
    on ``storage``: ``memory`` (``InMemorySessionService``) or ``database``
    (``DatabaseSessionService`` on a fresh SQLite file the driver removes
    afterwards, the session reloaded from it at every invocation's start).
    ``seed``: the driver's generators' seed, :func:`script_seed` unless
    given (tests pass another to see a tie broken the other way).
    ``fixes``: the ADK-JS fixes to run with (None: :func:`active_fixes`).

    Raises :class:`NotApplicable` (the script cannot be represented),
    :class:`AdkJsUnavailable` (no Node or no package) or :class:`RuntimeError`
    (the driver refused the request: a harness fault)."""
    compactor = compactor or compactor_for(script)
    built = representable(script, compactor)
    payload = {
        "id": 0,
        "compactor": compactor.to_json(),
        "summary": script.config.summary,
        "seed": script_seed(script) if seed is None else seed,
        "base_chars": script.config.system_chars + script.config.tools_chars,
        "actions": built.actions,
        "storage": storage,
    }
    return run_request(
        script,
        compactor,
        payload,
        built.openers,
        lambda event_id: _origin(built, event_id),
        fixes=fixes,
    )


def run_request(
    script: Script,
    compactor: JsCompactor,
    payload: dict[str, Any],
    openers: Mapping[int, str | None],
    origin: Callable[[str], int | None],
    *,
    fixes: tuple[str, ...] | None = None,
) -> JsRun:
    """Send one emulating-mode ``payload`` (driver.mjs's request) and read
    the answer as the :class:`JsRun` of ``script`` on ``compactor``:
    ``openers`` (action index -> the text that opened the running
    invocation) marks each model call, ``origin`` (event id -> what stored
    it, None for ADK-JS's own events) each stored event. Raises
    :class:`AdkJsUnavailable` (no Node, no package, or for database storage
    no SQLite driver) or :class:`RuntimeError` (the driver refused the
    request: a harness fault). ``fixes``: as :func:`run_script`'s."""
    fixes = active_fixes() if fixes is None else tuple(fixes)
    answer = driver(fixes).request(payload)
    if not answer.get("ok"):
        error = str(answer.get("error"))
        if payload.get("storage") == "database" and (
            "@mikro-orm/sqlite" in error or "node_sqlite3" in error
        ):
            # The SQLite driver is missing or was never built (npm ci
            # --ignore-scripts, a failed node-gyp build): bad environment.
            raise AdkJsUnavailable(
                "ADK-JS's SQLite driver (@mikro-orm/sqlite and the sqlite3 binding) is "
                "missing or not built in sdks/adk-js: delete sdks/adk-js/node_modules, "
                f"then run `{INSTALL}`"
            )
        raise RuntimeError(f"the ADK-JS driver refused the request: {error}")
    events = answer["events"]
    ids = list(answer["stored"])
    calls = answer["calls"]
    for call in calls:
        call["opener"] = openers.get(call["action"])
    return JsRun(
        script,
        compactor,
        Session(tuple(from_js_event(events[i]) for i in ids)),
        ids,
        calls,
        answer.get("exception"),
        package_version(),
        events,
        [origin(i) for i in ids],
        fixes,
        _memoised(
            lambda other: run_request(script, compactor, payload, openers, origin, fixes=other)
        ),
    )


def _memoised(rerun: Callable[[tuple[str, ...]], JsRun]) -> Callable[[tuple[str, ...]], JsRun]:
    """``rerun`` made once per set of fixes (one run's classification asks
    for the same re-runs for each of its violations)."""
    made: dict[tuple[str, ...], JsRun] = {}

    def once(fixes: tuple[str, ...]) -> JsRun:
        key = tuple(fixes)
        if key not in made:
            made[key] = rerun(key)
        return made[key]

    return once


def _origin(built: _Timeline, event_id: str) -> int | None:
    """The operation that appended the event ``e<n>`` (None: ADK-JS made it)."""
    if (
        event_id.startswith("e")
        and event_id[1:].isdigit()
        and int(event_id[1:]) < len(built.origin)
    ):
        return built.origin[int(event_id[1:])]
    return None


def observed(run: JsRun) -> dict[str, Any]:
    """What a fixture records of ``run`` (the keys ``show`` reads for a script
    fixture): ``session`` (the stored events, summaries included, as a
    :class:`Session` document), ``origin`` (per stored event, the operation
    that appended it, or None for a summary), ``summaries`` (per summary, the
    stored positions of the raw events it was given), ``seeds`` (per summary,
    the numbers of the earlier summaries it was given: the anchored
    compactor's scratchpad, for one), ``prompt`` (the last
    model call's contents: [role, [part tuples]]), ``exception`` (what
    ADK-JS raised, or None) and ``package_version``."""
    last = next((c for c in reversed(run.calls) if "contents" in c), None)
    return {
        "session": run.stored.to_json(),
        "origin": list(run.origin),
        "summaries": [given for _, given, _ in run.summaries()],
        "seeds": [seeds for _, _, seeds in run.summaries()],
        "prompt": [[role, [list(p) for p in parts]] for role, parts in run.prompt(last)]
        if last is not None
        else [],
        "exception": run.exception,
        "package_version": run.version,
    }
