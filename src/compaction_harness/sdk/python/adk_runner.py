"""The runner driver: executes a pipeline script through ADK's own ``Runner``.

Where the emulating driver (:mod:`compaction_harness.sdk.python.driver`) appends the
events it believes the ``Runner`` stores, this driver lets the real
``google.adk.runners.Runner`` store them: a scripted model answers each model
call as the script says, real tools answer, pause or ask the user, and a
client sends the messages the script's operations stand for. What the
``Runner`` stored, what ADK gave the summariser and every ``LlmRequest`` the
model received are recorded, and P0, P1, P2, P4 and P5 are checked on them
with the pure checkers of :mod:`compaction_harness.sdk.python.pipeline`.
``tests/slow/test_differential.py`` runs both drivers on the same scripts and
compares what they stored.

The application (one per run)
-----------------------------
* An ``App`` named ``harness`` whose ``EventsCompactionConfig`` carries the
  script's trigger values and an ``LlmEventSummarizer`` over a scripted
  summary model (its text is ``summary#N`` plus filler to the configured size,
  :func:`compaction_harness.sdk.python.adk.summary_text`); the summariser's
  ``maybe_summarize_events`` is wrapped to record exactly which events it was
  given.
* Tree ``agent`` (the default, and ADK's commonest deployment): the root is
  the ``LlmAgent`` ``agent``, which ADK 2.x runs on its node runtime
  (``Runner.run_async`` -> ``_run_node_async``).
* Tree ``director``: the root is a custom ``BaseAgent`` ``director`` (ADK's
  documented custom-agent pattern) that runs its sub-agents ``agent``,
  ``helper`` (an ``LlmAgent``) and ``team`` (a ``ParallelAgent`` of the
  ``LlmAgent`` s ``a`` and ``b``, which ADK runs on branches ``team.a`` and
  ``team.b``) one after another as the script says. ADK 2.x runs a root that
  is not an ``LlmAgent`` on its older path (``Runner._run_with_trace``).
* ``agent``'s tools: ``lookup`` (a ``FunctionTool`` that answers at once, or
  hangs for good where the script says the tool's process died),
  ``export`` (a ``LongRunningFunctionTool``: returns None, which pauses the
  invocation, or an interim result), ``transfer`` (a
  ``FunctionTool(require_confirmation=True)``) and ``calendar`` (asks for a
  credential with ``ToolContext.request_credential`` until it has one).
* Every ``LlmAgent``'s instruction is a provider (:func:`_gate`) that holds
  the agent's next step until the script reaches the operation that calls
  its model; its ``before_model_callback`` records the request and the
  session the ``Runner`` held then. Neither changes what is sent.

Each model call's reply carries usage metadata from the token model, as the
emulating driver's do: the request's contents counted as ADK's estimate
counts them, plus ``system_chars`` and ``tools_chars``, four characters a
token (no usage metadata where the operation says ``usage=False``).

How operations map onto the Runner
----------------------------------
================  ==========================================================
operation         what the client and the scripted model do
================  ==========================================================
``Open(user)``    ``run_async(new_message=<user text>)``
``Open(agent)``   ``run_async(new_message=None)`` (tree ``agent``; the older
                  path refuses a run without a message: tree ``director``
                  runs it as ``Open(user)``)
``Text``          the waiting model replies with text (with or without usage
                  metadata); tree ``director`` runs ``agent`` for it first
``Calls``         the model replies with ``count`` parallel calls to
                  ``lookup`` (``plain``) or ``export``; ``plain`` with
                  ``fate="later"``: the tools hang and the run is cancelled
                  once the call is stored (the process died: nothing after it
                  runs, no compaction)
``Ask``           the model calls ``transfer`` or ``calendar``; ADK stores its
                  synthetic request and the tool's placeholder and pauses
``Answer``        ``run_async(new_message=<function responses>)``, the
                  documented way to resume (``Runner`` resolves the
                  invocation from the calls they answer)
``Reply``         ``run_async`` with the response to the synthetic
                  ``adk_request_confirmation`` (``{"confirmed": true}``) or
                  ``adk_request_credential`` (the ``AuthConfig`` with a
                  credential) call
``FanOut``        tree ``director`` runs ``team``; both sub-agents' models
                  are called before either replies, then they reply in the
                  script's order
``Delegate``      tree ``director`` runs ``helper``
``End``           where the run ends by itself (a final text in tree
                  ``agent``; ``director`` stops in tree ``director``)
``Rewind``        ``Runner.rewind_async``
``ClientRecord``  the client appends its own compaction record with
                  ``BaseSessionService.append_event``
``Tie``, ``Skew`` the clock (below)
================  ==========================================================

Some shapes a script can hold the ``Runner`` cannot produce: a model call
when the run has ended (after a final text the root ``LlmAgent`` stops), an
invocation end while the model is being called (ADK always calls the model
after tool results or a client's answer), a sub-agent in a run a client's
answer resumed (the ``Runner`` routes it to the agent that made the call).
By default such an operation raises :class:`Inexpressible`; with
``repair=True`` the driver adds the fewest operations that make the script
runnable (a ``Text`` reply, an ``End``) or drops a sub-agent operation tree
``agent`` cannot run, and :attr:`RunnerRun.script` is the script as run, the
one to give the emulating driver for a comparison.

Time
----
ADK stamps an event with ``google.adk.platform.time.get_time()`` when it
builds it (``Event.timestamp``'s default factory, 2.x). The run installs a
provider (``set_time_provider``) that mirrors the emulating driver's clock: it
starts at :data:`~compaction_harness.sdk.python.driver.EPOCH`, moves on by
:data:`~compaction_harness.sdk.python.driver.STEP` at every reading (a real clock never
stands still; ADK reads it a few times per event), by
:data:`~compaction_harness.sdk.python.driver.THINK` before a client's message, and is
read at the script's resolution. ``Skew`` moves the host's clock back, and
``Tie`` holds it where it was when the event stored last was stamped, until
the next event is stored. They take effect where the script has them: the
instruction gate keeps the ``Runner`` from building the next model call's
event (and from running the compaction before it) until the script gets
there. Timestamps are deterministic, but how often the clock is read per
event is ADK's business: compare them by order and ties only, and not at a
millisecond resolution, where that count decides which events share a tick.

Ids
---
Every id ADK draws during the run (``Event.new_id``, invocation ids,
``adk-`` function call ids, the session's id) comes from
:func:`compaction_harness.sdk.python.driver.sdk_ids`: a function of the script's
configuration, the kind of id and how many of that kind came before, so a
replay draws the same ids and a database breaks a timestamp tie by event id
the same way every time (uuids drawn at random broke it either way).

Storage
-------
In memory, one ``InMemorySessionService`` and one ``Runner`` serve the whole
script; with ``storage="database"``, every request (a run, a rewind) gets a
fresh ``DatabaseSessionService`` on one SQLite file and a fresh ``Runner``,
as a server handling each request afresh does (the session is loaded from
the database, in its order, at every request).

Where it lives
--------------
This module holds the entry points (:func:`run_script_with_runner`,
:func:`run_script_outcome`, :func:`runner_script`); the driver is
:class:`~compaction_harness.sdk.python.runner_driver.RunnerDriver`, the
``Runner`` backend of google-adk's one interpreter of the script operations
(:mod:`.interpreter`, whose other backend is the emulating driver); the
application in :mod:`.runner_app`, what a run records in
:mod:`.runner_record`, the checks over it in :mod:`.runner_checks`.

What is checked
---------------
P1, P5 and P6's first clause (new work) on every summariser input, taken as
a window of the session the ``Runner`` held then; P2 and P4 on every
``LlmRequest`` (its contents, call ids restored from ADK's own contents
assembly once that is seen to build the same contents: see
:func:`_restored_prompt`); P7 on every request in the database mode (the
request's prompt against the in-memory order and a timestamp-ordered
reload); P3 at every run's end; P6's second clause (stale counts) at every
consultation of the token trigger made on stale counts, by running ADK's
trigger again on a copy of what it saw (:class:`RecordedTrigger`); P6's
third clause as the number of summaries per compaction point. P6's bound
(the prompt a token-threshold summary leaves) stays with the emulating
driver, which the differential test keeps equal to this one in events,
token counts and requests. P0 for an exception ADK raises.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import inspect
import tempfile
from dataclasses import replace
from itertools import groupby
from typing import Any

from google.adk.runners import Runner

from ...spec import scripts as ops
from ...spec.model import Session
from . import runner_app
from .adk import ADK_RELEASE, NotApplicable, UnreadableEvents, _dispose, from_adk_events
from .interpreter import ScriptIds, sdk_ids
from .pipeline import crash_violation, stale_counts
from .runner_checks import _summaries_in, check_run, operation_of
from .runner_driver import Inexpressible, RunnerDriver
from .runner_record import RecordedCall, RecordedEnd, RecordedSummary, RecordedTrigger, RunnerRun
from .unit import UnitOutcome

__all__ = [
    "TREES",
    "Inexpressible",
    "RecordedCall",
    "RecordedEnd",
    "RecordedSummary",
    "RunnerRun",
    "answers_continue_invocation",
    "reads_part_of_sessions",
    "run_script_outcome",
    "run_script_with_runner",
    "runner_script",
]

#: The agent trees the driver builds (see the module docstring).
TREES = ("agent", "director")


# -- what the installed release's Runner does ------------------------------------------
def answers_continue_invocation(tree: str) -> bool:
    """Whether, with ``tree``'s root, the installed ``Runner`` continues the
    invocation of the call a client's function response answers
    (``Runner._resolve_invocation_id_from_fr``) instead of starting one.

    A root ``LlmAgent`` runs on the node runtime, which does on 2.11.0 and
    2.13.0 (``workflow/_node_runner_utils.run_node_async``); a custom root runs
    on ``Runner.run_async``'s older path, which does from 2.13.0 but starts a
    new invocation for a non-resumable app on 2.11.0. Read from the source."""
    if tree == "agent":
        try:
            from google.adk.workflow import _node_runner_utils as module
        except ImportError:  # releases before the node runtime
            module = None
        if module is not None:
            return "_resolve_invocation_id_from_fr" in inspect.getsource(module)
    return "_resolve_invocation_id_from_fr" in inspect.getsource(Runner.run_async)


def reads_part_of_sessions() -> bool:
    """Whether the installed ``Runner`` loads a session as
    ``RunConfig.get_session_config`` says (``config.recent_events``): the
    field exists (google-adk 2.13.0 has it; read from the model, not from a
    list of releases)."""
    from google.adk.agents.run_config import RunConfig

    return "get_session_config" in RunConfig.model_fields


# -- the entry point --------------------------------------------------------------------
def run_script_with_runner(
    script: ops.Script,
    *,
    tree: str = "agent",
    repair: bool = False,
) -> RunnerRun:
    """Run ``script`` through ADK's ``Runner``, record what it did, and check
    the record after the run (:func:`.runner_checks.check_run`).

    ``tree``: ``agent`` (root ``LlmAgent``) or ``director`` (see the module
    docstring). ``repair``: add or drop the operations the ``Runner`` needs
    to run the script (:attr:`RunnerRun.repairs`) instead of raising
    :class:`Inexpressible`. :attr:`RunnerRun.violations` holds every
    violation of the invariants the script checks, nothing classified
    (classification by fix re-runs the script after the run:
    :func:`compaction_harness.sdk.python.triage.judge`). An exception ADK
    raises ends the run and is a P0 violation. Raises :class:`NotApplicable`
    on releases without what the driver needs.
    """
    if tree not in TREES:
        raise ValueError(f"tree: expected one of {', '.join(TREES)}")
    try:
        from google.adk.platform import time as platform_time
    except ImportError:
        raise NotApplicable(
            f"google-adk {ADK_RELEASE} has no google.adk.platform.time (the clock)"
        ) from None
    if script.config.recent_events is not None and not reads_part_of_sessions():
        raise NotApplicable(
            f"google-adk {ADK_RELEASE}'s RunConfig has no get_session_config "
            "(config.recent_events: the Runner always loads the whole session)"
        )
    if runner_app._ACTIVE is not None:
        raise RuntimeError("runner-driver runs do not nest")
    folder = tempfile.TemporaryDirectory() if script.config.storage != "memory" else None
    loop = asyncio.new_event_loop()
    driver: RunnerDriver | None = None
    try:
        asyncio.set_event_loop(loop)
        driver = loop.run_until_complete(_make(script, tree, repair, folder))
        runner_app._ACTIVE = driver
        platform_time.set_time_provider(driver.clock)
        try:
            with _watching_token_trigger(driver), sdk_ids(ScriptIds(script)):
                loop.run_until_complete(driver.execute())
        finally:
            loop.run_until_complete(_finish(driver))
    finally:
        platform_time.reset_time_provider()
        runner_app._ACTIVE = None
        if driver is not None and driver.service is not None and script.config.storage != "memory":
            loop.run_until_complete(_dispose(driver.service))
        loop.run_until_complete(loop.shutdown_asyncgens())
        asyncio.set_event_loop(None)
        loop.close()
        if folder is not None:
            folder.cleanup()
    record = driver.record
    record.script = ops.Script(script.config, tuple(driver.ran))
    found = check_run(record, script.config)
    if driver.crash is not None:
        record.crashed = driver.crash
        found.append(crash_violation(f"operation {driver.current}", driver.crash))
    chosen = set(script.config.invariants or ()) or None
    record.violations = [v for v in found if chosen is None or v.invariant in chosen]
    return record


#: Where ADK's token trigger is looked up when it runs: the flow's request
#: processor imports it by name; the invocation's end calls it in its module.
_TRIGGER_HOMES = (
    "google.adk.apps.compaction",
    "google.adk.flows.llm_flows.context._compaction",
)


@contextlib.contextmanager
def _watching_token_trigger(driver: RunnerDriver) -> Any:
    """Record every call of ADK's ``_run_compaction_for_token_threshold_config``
    made while the newest counts are stale (see :class:`RecordedTrigger`);
    each call goes on to ADK's function unchanged."""
    homes = []
    for name in _TRIGGER_HOMES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if hasattr(module, "_run_compaction_for_token_threshold_config"):
            homes.append(module)
    if not homes:
        yield
        return
    real = homes[0]._run_compaction_for_token_threshold_config

    async def watched(*given: Any, **arguments: Any) -> Any:
        config, session = arguments.get("config"), arguments.get("session")
        known = not given and config is not None and session is not None
        if known and getattr(config, "token_threshold", None) is not None:
            stale = stale_counts(from_adk_events(session.events))
            if stale:
                others = {
                    k: v for k, v in arguments.items() if k not in ("session", "session_service")
                }
                events = tuple(e.model_copy(deep=True) for e in session.events)
                driver.record.triggers.append(
                    RecordedTrigger(driver.current, events, others, stale)
                )
        return await real(*given, **arguments)

    saved = [(m, m._run_compaction_for_token_threshold_config) for m in homes]
    for module in homes:
        module._run_compaction_for_token_threshold_config = watched
    try:
        yield
    finally:
        for module, fn in saved:
            module._run_compaction_for_token_threshold_config = fn


async def _make(script: ops.Script, tree: str, repair: bool, folder: Any) -> RunnerDriver:
    return RunnerDriver(script, tree, repair, folder.name if folder is not None else None)


async def _finish(driver: RunnerDriver) -> None:
    """Stop what still runs and read the session as the Runner last held it."""
    if driver.run_task is not None and not driver.run_task.done():
        await driver._cancel_run()
    record = driver.record
    held = list(driver.view.events) if driver.view is not None else []
    if driver.config.recent_events is not None and driver.service is not None:
        # The view holds only what the last request loaded: record the
        # session as stored, every event of it.
        whole = await driver._adk(
            driver.service.peek(
                app_name=driver.names.name, user_id=runner_app.USER, session_id=driver.session_id
            )
        )
        held = list(whole.events) if whole is not None else held
    record.events = held
    try:
        record.session = from_adk_events(held)
    except UnreadableEvents as exc:  # P0 (what ADK returned), not a harness traceback
        record.session = Session(())
        if driver.crash is None:
            driver.crash = exc


def runner_script(script: ops.Script, *, tree: str = "agent") -> ops.Script:
    """``script`` run by this driver (``config.driver="runner"``), with the
    operations the ``Runner`` needs added or dropped (see :attr:`RunnerRun.script`):
    the script a fixture records, whose replay runs exactly that."""
    run = run_script_with_runner(
        ops.Script(replace(script.config, driver="runner"), script.operations),
        tree=tree,
        repair=True,
    )
    return run.script


def run_script_outcome(script: ops.Script) -> UnitOutcome:
    """Run ``script`` through the ``Runner`` (tree ``director`` when it has
    sub-agent operations, else ``agent``; repairing what it cannot run as
    given) and return what a fixture records, as
    :func:`compaction_harness.sdk.python.driver.run_script` does for the emulating
    driver: ``violations`` (every one, nothing classified; ``ran``: the
    script as run, on this driver, what classification by fix re-runs after
    the run), ``observed`` with ``session`` (the
    events the ``Runner`` stored), ``origin`` (the operation of the script as
    run that stored each, or ``summary#N``), ``summaries`` (the stored
    positions each summary was given), ``script`` (the script as run, when
    the driver repaired it), ``prompt`` (the last request's contents) and
    ``tool_runs`` (every run of a tool's body:
    :class:`~compaction_harness.spec.tool_runs.ToolRun` as JSON).
    Raises :class:`NotApplicable` where the release lacks what the driver
    needs."""
    # Sub-agent operations need tree director; every other script runs on the
    # commonest deployment, a root LlmAgent.
    tree = (
        "director"
        if any(isinstance(op, ops.FanOut | ops.Delegate) for op in script.operations)
        else "agent"
    )
    run = run_script_with_runner(script, tree=tree, repair=True)
    ids = [e.id for e in run.events]
    last = run.calls[-1].sent if run.calls else []
    observed: dict[str, Any] = {
        "session": run.session.to_json(),
        "origin": list(run.origin[: len(run.session)]),
        "summaries": [list(p) for _, p, _ in _summaries_in(ids, run.summaries, len(run.summaries))],
        "prompt": [[role, [list(p) for p in parts]] for role, parts in last],
        "tool_runs": [r.to_json() for r in run.tool_runs],
    }
    if run.repairs:
        observed["script"] = run.script.to_json()
        observed["repairs"] = list(run.repairs)
    # By operation, as the emulating driver records them: a verdict reports
    # the new violations of the first operation that found any.
    ordered = sorted(run.violations, key=lambda v: operation_of(run, v))  # stable
    outcome = UnitOutcome(ordered, {}, observed)
    outcome.batches = [
        len(list(group)) for _, group in groupby(ordered, key=lambda v: operation_of(run, v))
    ]
    outcome.ran = run.ran  # re-runs go through the Runner too
    operations = run.script.operations
    labels = {f"runner: stored by {operations[o].op}" for o in run.origin if isinstance(o, int)}
    labels.add("runner: summarised" if run.summaries else "runner: no summary")
    if run.repairs:
        labels.add("runner: script repaired")
    if script.config.recent_events is not None:
        labels.add("runner: partial read")
    outcome.labels = sorted(labels)
    return outcome
