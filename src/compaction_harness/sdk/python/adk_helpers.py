"""The ADK adapter's calls of the installed release: its compaction helpers,
what the release offers, and the counterfactual replacements of its functions
(:mod:`.adk` re-exports every name).
"""

from __future__ import annotations

import importlib
import inspect
import os
from collections.abc import Sequence
from functools import cache
from typing import Any

from google.adk.apps import compaction as _compaction
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions, EventCompaction
from google.genai import types

from ...spec.model import Session, Step
from ...spec.scripts import SERVER_URL_VARIABLES
from .adk_events import (
    ADK_RELEASE,
    NotApplicable,
    from_adk_events,
    to_adk_events,
    validation_problem,
)


# -- the real helpers --------------------------------------------------------
def _helper(name: str) -> Any:
    fn = getattr(_compaction, name, None)
    if fn is None:
        raise NotApplicable(f"google-adk {ADK_RELEASE} has no google.adk.apps.compaction.{name}")
    return fn


def _accepts(name: str, parameter: str) -> bool:
    # Asked of the helper installed now: a fix may replace it with one that
    # takes more (the 2.11.0 fix of the prefix helper adds all_events=).
    return _takes(_helper(name), parameter)


@cache
def _takes(fn: Any, parameter: str) -> bool:
    return parameter in inspect.signature(fn).parameters


def helper_availability() -> dict[str, str | None]:
    """Helper name -> ``None`` when present, else the reason it is not."""
    out: dict[str, str | None] = {}
    for name in (
        "_longest_self_contained_prefix",
        "_provably_dead_call_ids",
        "_safe_token_compaction_split_index",
        "_events_to_compact_for_token_threshold",
    ):
        try:
            _helper(name)
            out[name] = None
        except NotApplicable as exc:
            out[name] = str(exc)
    return out


def accepts_all_events() -> bool:
    """Whether the installed ``_longest_self_contained_prefix`` takes ``all_events=``."""
    return _accepts("_longest_self_contained_prefix", "all_events")


def longest_self_contained_prefix_window_only(window: list[Event]) -> list[Event]:
    """Call the installed ``_longest_self_contained_prefix`` with the window alone."""
    return _helper("_longest_self_contained_prefix")(window)


def longest_self_contained_prefix(window: list[Event], all_events: list[Event]) -> list[Event]:
    """Call the installed ``_longest_self_contained_prefix``.

    Releases 2.12.0 and later receive ``all_events=``; 2.3.0 to 2.11.0 take
    only the window. Raises :class:`NotApplicable` on releases without it.
    """
    fn = _helper("_longest_self_contained_prefix")
    if _accepts("_longest_self_contained_prefix", "all_events"):
        return fn(window, all_events=all_events)
    return fn(window)


def provably_dead_call_ids(
    window: list[Event], all_events: list[Event], newest_invocation_id: str | None
) -> set[str]:
    """Call the installed ``_provably_dead_call_ids`` (2.12.0 and later)."""
    fn = _helper("_provably_dead_call_ids")
    return set(fn(window, all_events=all_events, newest_invocation_id=newest_invocation_id))


def safe_token_split(candidates: list[Event], retention: int) -> int:
    """Call the installed ``_safe_token_compaction_split_index`` (1.26.0 and later)."""
    fn = _helper("_safe_token_compaction_split_index")
    return fn(candidate_events=candidates, event_retention_size=retention)


def events_to_compact_for_token_threshold(events: list[Event], retention: int) -> list[Event]:
    """Call the installed ``_events_to_compact_for_token_threshold`` (1.26.0 and later)."""
    fn = _helper("_events_to_compact_for_token_threshold")
    return fn(events=events, event_retention_size=retention)


def token_compaction_takes_isolation_scope() -> bool:
    """Whether the installed token-threshold compaction filters by isolation scope."""
    try:
        fn = _helper("_run_compaction_for_token_threshold_config")
    except NotApplicable:
        return False
    return "isolation_scope" in inspect.signature(fn).parameters


def token_threshold_summariser_input(
    session: Session, retention: int, threshold: int = 1, isolation_scope: str | None = None
) -> list[Step] | None:
    """The events ADK's token-threshold compaction hands the summariser, or None.

    Runs the real ``_run_compaction_for_token_threshold_config`` (which applies
    rewinds and the isolation-scope filter itself) on an
    ``InMemorySessionService`` session holding the session's events, with a
    recording summariser defined here. The rolling-summary seed event, which
    ADK makes afresh on every call, is left out. ``threshold`` is compared
    with the newest ``prompt_tokens`` of the scope, as ADK's usage metadata
    carries it.
    """
    import asyncio

    from google.adk.agents.llm_agent import LlmAgent
    from google.adk.apps.app import EventsCompactionConfig
    from google.adk.apps.base_events_summarizer import BaseEventsSummarizer
    from google.adk.sessions.in_memory_session_service import InMemorySessionService

    fn = _helper("_run_compaction_for_token_threshold_config")
    events = to_adk_events(session)
    given: list[list[Event]] = []

    class Recorder(BaseEventsSummarizer):
        async def maybe_summarize_events(self, *, events: list[Event]) -> Event | None:
            given.append(list(events))
            stamps = [e.timestamp for e in events]
            return Event(
                author="model",
                invocation_id=Event.new_id(),
                actions=EventActions(
                    compaction=EventCompaction(
                        start_timestamp=min(stamps),
                        end_timestamp=max(stamps),
                        compacted_content=types.Content(
                            role="model", parts=[types.Part(text="recorded")]
                        ),
                    )
                ),
            )

    async def run() -> None:
        service = InMemorySessionService()
        adk_session = await service.create_session(app_name="harness", user_id="u")
        adk_session.events = list(events)
        config = EventsCompactionConfig(
            summarizer=Recorder(), token_threshold=threshold, event_retention_size=retention
        )
        kwargs = {}
        if "isolation_scope" in inspect.signature(fn).parameters:
            kwargs["isolation_scope"] = isolation_scope
        elif isolation_scope is not None:
            raise NotApplicable(
                f"google-adk {ADK_RELEASE}'s token-threshold compaction takes no isolation scope"
            )
        await fn(
            config=config,
            session=adk_session,
            session_service=service,
            agent=LlmAgent(name="agent", model="gemini-2.0-flash"),
            **kwargs,
        )

    asyncio.run(run())
    if not given:
        return None
    received = list(given[0])
    known = {id(e) for e in events}
    if received and id(received[0]) not in known and any(s.compaction for s in session):
        received.pop(0)  # the rolling-summary seed, made afresh on every call
    return list(from_adk_events(received))


async def _dispose(service: Any) -> None:
    engine = getattr(service, "db_engine", None)
    if engine is not None:
        disposed = engine.dispose()
        if inspect.isawaitable(disposed):  # the async engine (2.x)
            await disposed
    elif callable(getattr(service, "close", None)):  # SqliteSessionService (2.x)
        await service.close()


#: The drivers each backend is reached through: the asyncio engine of
#: google-adk 2.x (``_ASYNC_DRIVER_BY_BACKEND`` in
#: ``google/adk/sessions/database_session_service.py``, 2.13.0, names
#: asyncpg and aiomysql) and the synchronous engine of 1.x.
_DRIVERS = {
    (True, "sqlite"): "sqlite+aiosqlite",
    (False, "sqlite"): "sqlite",
    (True, "postgresql"): "postgresql+asyncpg",
    (False, "postgresql"): "postgresql+psycopg2",
    (True, "mysql"): "mysql+aiomysql",
    (False, "mysql"): "mysql+pymysql",
    (True, "mariadb"): "mariadb+aiomysql",
    (False, "mariadb"): "mariadb+pymysql",
}


def server_url(storage: str) -> str:
    """The URL of the server that keeps ``storage`` (a key of
    :data:`SERVER_URL_VARIABLES`), with no driver in its scheme. Raises
    :class:`NotApplicable` (one line) when its variable is unset."""
    variable = SERVER_URL_VARIABLES[storage]
    url = os.environ.get(variable)
    if not url:
        raise NotApplicable(
            f"storage {storage!r} needs a server: {variable} is unset (the test run "
            f"starts one: make fuzz STORAGE={storage}, or make test)"
        )
    return url


def database_url(storage: str, sqlite_path: str | None = None) -> str:
    """The URL ``DatabaseSessionService`` opens for ``storage``: ``database``
    is the SQLite file ``sqlite_path``; ``postgresql`` and ``mariadb`` are
    the server of :func:`server_url`, or whatever URL it names. The driver
    is the one the installed release's engine takes (see :data:`_DRIVERS`)."""
    import google.adk.sessions.database_session_service as db_module

    asynchronous = hasattr(db_module, "create_async_engine")
    if storage == "database":
        return f"{_DRIVERS[asynchronous, 'sqlite']}:///{sqlite_path}"
    from sqlalchemy.engine import make_url

    url = make_url(server_url(storage))
    backend = url.get_backend_name()
    driver = _DRIVERS.get((asynchronous, backend))
    if driver is None:
        raise NotApplicable(f"storage {storage!r}: no driver known for a {backend!r} URL")
    return url.set(drivername=driver).render_as_string(hide_password=False)


def database_service(storage: str, sqlite_path: str | None = None, wrap: Any = None) -> Any:
    """``DatabaseSessionService`` for ``storage`` (``database``: the SQLite
    file ``sqlite_path``; ``postgresql``, ``mariadb``: the server of
    :func:`server_url`), of the subclass ``wrap(DatabaseSessionService)``
    makes when ``wrap`` is given. SQLite is opened without waits for the
    disk (:func:`_no_disk_waits`).

    Raises:
        NotApplicable: the release lacks the ``[db]`` extra or the server's
            driver, the server's variable is unset, or the service refuses
            to start (one line each).
    """
    try:
        from google.adk.sessions.database_session_service import DatabaseSessionService
    except ImportError as exc:
        raise NotApplicable(f"google-adk {ADK_RELEASE} without the [db] extra: {exc}") from None
    url = database_url(storage, sqlite_path)
    cls = wrap(DatabaseSessionService) if wrap is not None else DatabaseSessionService
    try:
        service = cls(url)
    except Exception as exc:
        raise NotApplicable(
            f"google-adk {ADK_RELEASE}'s DatabaseSessionService cannot open storage "
            f"{storage!r}: {type(exc).__name__}: {' '.join(str(exc).split())}"
        ) from None
    if storage == "database":
        _no_disk_waits(service.db_engine)
    return service


#: The tables :func:`empty_database` keeps: google-adk's schema version
#: (``adk_internal_metadata``, 2.x), which says how the other tables are laid out.
_KEPT_TABLES = ("adk_internal_metadata",)
#: The databases :func:`empty_database` may empty: those whose name starts so.
EMPTIED_DATABASES = "harness"
#: The database ``check --session-service-uri`` keeps its scripts in, on the
#: user's server (:func:`scratch_database`).
SCRATCH_DATABASE = "harness_check"


def _first_words(exc: BaseException) -> str:
    """``exc``'s message on one line, without SQLAlchemy's pointer to its
    error pages, at most 200 characters."""
    said = " ".join(str(exc).split()).split(" (Background on this error")[0]
    return said[:200]


async def scratch_database(url: str) -> str:
    """The URL of :data:`SCRATCH_DATABASE` on the server ``url`` reaches (a
    user's, given with or without a driver), created there when missing:
    ``check`` keeps its scripts there and empties it, never the database
    ``url`` names. Raises :class:`NotApplicable` (one line) when the server
    does not answer or refuses to create it."""
    from sqlalchemy import text
    from sqlalchemy.engine import make_url
    from sqlalchemy.ext.asyncio import create_async_engine

    given = make_url(url)
    backend = given.get_backend_name()
    driver = _DRIVERS.get((True, backend))
    if driver is None:
        raise NotApplicable(f"no asynchronous driver known for a {backend!r} URL")
    given = given.set(drivername=driver)
    engine = create_async_engine(given, isolation_level="AUTOCOMMIT")
    try:
        async with engine.connect() as connection:
            if backend == "postgresql":
                found = await connection.execute(
                    text("SELECT 1 FROM pg_database WHERE datname = :name"),
                    {"name": SCRATCH_DATABASE},
                )
                if found.first() is None:
                    await connection.execute(text(f'CREATE DATABASE "{SCRATCH_DATABASE}"'))
            else:
                await connection.execute(
                    text(f"CREATE DATABASE IF NOT EXISTS `{SCRATCH_DATABASE}`")
                )
    except Exception as exc:
        shown = given.render_as_string(hide_password=True)
        raise NotApplicable(
            f"{shown}: cannot create the scratch database {SCRATCH_DATABASE}: "
            f"{type(exc).__name__}: {_first_words(exc)}"
        ) from None
    finally:
        await engine.dispose()
    # The tables ADK makes there must be creatable and writable by this user:
    # said now, in one line, rather than as a campaign that runs nothing.
    probe = create_async_engine(given.set(database=SCRATCH_DATABASE))
    try:
        async with probe.begin() as connection:
            await connection.execute(text("CREATE TABLE harness_probe (id INT)"))
            await connection.execute(text("INSERT INTO harness_probe VALUES (1)"))
            await connection.execute(text("DROP TABLE harness_probe"))
            await connection.run_sync(_empty_tables)  # what every script does first
    except Exception as exc:
        shown = given.set(database=SCRATCH_DATABASE).render_as_string(hide_password=True)
        raise NotApplicable(
            f"{shown}: cannot create and write tables in the scratch database: "
            f"{type(exc).__name__}: {_first_words(exc)}"
        ) from None
    finally:
        await probe.dispose()
    scratch = given.set(drivername=backend, database=SCRATCH_DATABASE)
    return scratch.render_as_string(hide_password=False)


def _empty_tables(connection: Any) -> None:
    """Empty every table of ``connection``'s database but :data:`_KEPT_TABLES`
    (see :func:`empty_database`)."""
    from sqlalchemy import inspect as sqlalchemy_inspect
    from sqlalchemy import text

    names = [n for n in sqlalchemy_inspect(connection).get_table_names() if n not in _KEPT_TABLES]
    if not names:
        return
    quote = connection.dialect.identifier_preparer.quote
    if connection.dialect.name == "postgresql":
        connection.execute(text(f"TRUNCATE {', '.join(map(quote, names))}"))
        return
    connection.execute(text("SET FOREIGN_KEY_CHECKS=0"))
    for name in names:
        connection.execute(text(f"DELETE FROM {quote(name)}"))
    connection.execute(text("SET FOREIGN_KEY_CHECKS=1"))


async def empty_database(service: Any) -> None:
    """Empty every table of ``service``'s database but google-adk's schema
    version, so that a script on a shared server starts from an empty store,
    as one on a fresh SQLite file does. PostgreSQL truncates (its heap starts
    afresh, so a tie a release without a tie-breaker leaves to physical order
    is broken the same way on every replay); MySQL and MariaDB delete (InnoDB
    keeps rows in primary-key order whatever was there before). Measured on
    the gate's sample (2 cores): MariaDB through the ``Runner`` 0.53 s a
    script when its tables were dropped and made again, 0.32 s emptied.
    Call it before the service's first use. Raises :class:`NotApplicable` for a database whose
    name does not start with :data:`EMPTIED_DATABASES` (a user's own)."""

    engine = service.db_engine
    name = engine.url.database or ""
    if not name.startswith(EMPTIED_DATABASES):
        raise NotApplicable(
            f"refusing to empty the database {name!r}: the harness empties the tables only of "
            f"databases whose name starts with {EMPTIED_DATABASES!r} (its own servers', and "
            "check's scratch database)"
        )
    try:
        if hasattr(engine, "sync_engine"):
            async with engine.begin() as connection:
                await connection.run_sync(_empty_tables)
        else:
            with engine.begin() as connection:
                _empty_tables(connection)
    except Exception as exc:  # the script's first contact with the server
        shown = engine.url.render_as_string(hide_password=True)
        raise NotApplicable(
            f"the session service's server at {shown} does not answer as expected: "
            f"{type(exc).__name__}: {_first_words(exc)}"
        ) from None


def sqlite_service(path: str, wrap: Any = None) -> Any:
    """``SqliteSessionService(path)`` (``google/adk/sessions/sqlite_session_service.py``:
    what ``adk web`` and ``adk run`` keep sessions in, ``.adk/session.db``),
    of the subclass ``wrap(SqliteSessionService)`` makes when ``wrap`` is
    given. Raises :class:`NotApplicable` on a release without it."""
    try:
        from google.adk.sessions.sqlite_session_service import SqliteSessionService
    except ImportError as exc:
        raise NotApplicable(
            f"google-adk {ADK_RELEASE} has no SqliteSessionService ({exc})"
        ) from None
    cls = wrap(SqliteSessionService) if wrap is not None else SqliteSessionService
    return cls(path)


@cache
def litellm_heals_missing_tool_results() -> bool:
    """Whether the release's LiteLLM adapter (``google/adk/models/lite_llm.py``)
    inserts a placeholder tool result for every call left unanswered before
    the next message (``_ensure_tool_results``: "LiteLLM-backed providers like
    OpenAI and Anthropic reject histories where an assistant tool call is not
    followed by tool responses"): 1.24.0 and later; 1.16.0 and 1.20.0 have no
    such step, and a strict provider refuses their request. Read from the source, so
    the ``litellm`` package need not be installed."""
    import importlib.util

    spec = importlib.util.find_spec("google.adk.models.lite_llm")
    if spec is None or spec.origin is None:
        return False
    with open(spec.origin, encoding="utf-8") as source:
        return "def _ensure_tool_results(" in source.read()


def compaction_config(summarizer: Any, triggers: dict[str, int | None]) -> Any:
    """ADK's ``EventsCompactionConfig`` with ``summarizer`` and the ``triggers``
    that are not None (``compaction_interval``, ``overlap_size``,
    ``token_threshold``, ``event_retention_size``). Raises
    :class:`NotApplicable` when the release has no such field (the token
    threshold arrived in 1.26.0) or refuses the values (releases before 2.6.1
    require both sliding-window fields), naming the field."""
    from google.adk.apps.app import EventsCompactionConfig
    from pydantic import ValidationError

    for name, value in triggers.items():
        if value is not None and name not in EventsCompactionConfig.model_fields:
            raise NotApplicable(f"google-adk {ADK_RELEASE} has no EventsCompactionConfig.{name}")
    try:
        return EventsCompactionConfig(
            summarizer=summarizer, **{k: v for k, v in triggers.items() if v is not None}
        )
    except ValidationError as exc:
        raise NotApplicable(
            f"google-adk {ADK_RELEASE} refuses this configuration: {validation_problem(exc)}"
        ) from None


def summariser_called(
    events: Sequence[Event],
    config: Any,
    entry_point: Any,
    strip_counts: frozenset[int] = frozenset(),
    *,
    loop: Any = None,
) -> bool:
    """Whether one of ADK's token-threshold entry points calls the summariser
    on a copy of ``events``: ``entry_point(config, session, service)`` is
    awaited with a copy of ``config`` (an ``EventsCompactionConfig``) whose
    summariser only counts its calls, and the copy in a fresh
    ``InMemorySessionService``; ``events`` are untouched. ``strip_counts``:
    positions of events whose ``usage_metadata.prompt_token_count`` is removed
    in the copy. ``loop``: the event loop to run on (default: a new one; never
    one that is running)."""
    import asyncio

    from google.adk.apps.base_events_summarizer import BaseEventsSummarizer
    from google.adk.sessions.in_memory_session_service import InMemorySessionService

    calls: list[int] = []

    class Counter(BaseEventsSummarizer):
        async def maybe_summarize_events(self, *, events: list[Event]) -> Event | None:
            calls.append(len(events))
            return None  # nothing is appended to the copy

    copied = [e.model_copy(deep=True) for e in events]
    for k in strip_counts:
        if copied[k].usage_metadata is not None:
            copied[k].usage_metadata.prompt_token_count = None
    counting = config.model_copy(update={"summarizer": Counter()})

    async def run() -> None:
        service = InMemorySessionService()
        copy = await service.create_session(app_name="harness", user_id="u")
        copy.events = copied
        await entry_point(counting, copy, service)

    if loop is not None:
        loop.run_until_complete(run())
    else:
        asyncio.run(run())
    return bool(calls)


@cache
def prunes_orphaned_calls() -> bool:
    """Whether the release's contents assembly prunes function calls that no
    response answers (``drop_orphaned_function_calls`` in
    ``google/adk/flows/llm_flows/tools/_rearranger.py``: 2.11.0 and later;
    earlier releases send such calls as they are). P4 reads it (see
    ``prompt_checks.check_nothing_lost``)."""
    try:
        from google.adk.flows.llm_flows.tools import _rearranger
    except ImportError:
        return False
    return hasattr(_rearranger, "drop_orphaned_function_calls")


def _found_in(modules: Sequence[str], name: str) -> list[Any]:
    """The distinct objects named ``name`` in those of ``modules`` that the
    installed release has, in the order given (ADK moves its pieces between
    modules from one release to the next)."""
    found: list[Any] = []
    for module in modules:
        try:
            value = getattr(importlib.import_module(module), name, None)
        except ImportError:
            continue
        if value is not None and not any(value is f for f in found):
            found.append(value)
    return found


def _compaction_request_processor() -> Any:
    """The LLM flow's ``CompactionRequestProcessor`` instance
    (``request_processor``), or None on releases without one (before 2.2.0)."""
    modules = (
        "google.adk.flows.llm_flows.context._compaction",
        "google.adk.flows.llm_flows.compaction",
    )
    return next(iter(_found_in(modules, "request_processor")), None)


def _no_disk_waits(engine: Any) -> None:
    """SQLite without fsync on this throw-away file: the service commits once per
    appended event, and waiting for the disk each time would make P7 the slowest
    step of a run. What is stored and read back is unchanged."""
    from sqlalchemy import event as sqlalchemy_event

    def pragmas(connection: Any, record: Any) -> None:
        cursor = connection.cursor()
        cursor.execute("PRAGMA synchronous=OFF")
        cursor.execute("PRAGMA journal_mode=MEMORY")
        cursor.close()

    sqlalchemy_event.listen(getattr(engine, "sync_engine", engine), "connect", pragmas)


class prefix_helper_replaced:
    """Within ``with``, ADK's ``_longest_self_contained_prefix`` answers with
    ``answer(window_positions, session) -> length`` instead.

    For counterfactual replays only (known-fault predicates): ``answer`` gets
    the window as positions in the model of ``all_events``.
    """

    def __init__(self, answer) -> None:
        self.answer = answer

    def __enter__(self) -> None:
        self.original = getattr(_compaction, "_longest_self_contained_prefix", None)

        def replaced(events, all_events=None):
            everything = list(all_events if all_events is not None else events)
            position = {id(e): i for i, e in enumerate(everything)}
            window = tuple(position[id(e)] for e in events)
            return events[: self.answer(window, from_adk_events(everything))]

        _compaction._longest_self_contained_prefix = replaced

    def __exit__(self, *exc) -> None:
        _compaction._longest_self_contained_prefix = self.original


class summary_price_from_adk_summaries:
    """Within ``with``, ADK's ``_previous_summary_chars`` (``apps/compaction.py``,
    2.13.0: the size of the latest compaction event, which
    ``_is_range_worth_compacting`` takes as the price of the next summary)
    reads only summaries ADK's summariser wrote (their text starts with
    ``summary#``, as the harness's summariser writes them), never a record a
    client appended. For counterfactual replays only (known-fault
    predicates); on a release without the function it changes nothing.
    """

    def __enter__(self) -> None:
        self.original = getattr(_compaction, "_previous_summary_chars", None)
        if self.original is None:
            return
        original = self.original

        def adk_written(event: Event) -> bool:
            content = event.actions.compaction.compacted_content
            parts = (content.parts or []) if content else []
            return bool(parts) and (parts[0].text or "").startswith("summary#")

        def priced(events):
            written = [e for e in events if e.actions and e.actions.compaction and adk_written(e)]
            return original(written[-1:]) if written else 0

        _compaction._previous_summary_chars = priced

    def __exit__(self, *exc) -> None:
        if self.original is not None:
            _compaction._previous_summary_chars = self.original


class reloaded_actions_validated:
    """Within ``with``, ``DatabaseSessionService`` gives back each stored
    event's ``actions`` validated into ``EventActions``, nested models
    included (``actions.compaction`` an ``EventCompaction``, its
    ``compacted_content`` a ``types.Content``), as the event was appended: the
    session a reload returns holds the same events as the session stored.
    Wraps ``StorageEvent.to_event`` (``google/adk/sessions/
    database_session_service.py``; ``sessions/schemas/v0.py`` and ``v1.py`` on
    releases that moved it): the event it builds gets its actions validated
    again. On google-adk 1.18.0 it rebuilds the actions with
    ``EventActions().model_copy(update=self.actions.model_dump())``, a copy
    that validates nothing, so every nested model comes back a plain dict.

    For counterfactual replays (known-fault predicates) and as the fault's fix
    (``tests/upstream_fixes.py``). Raises :class:`NotApplicable` on entry when
    the release has no ``StorageEvent.to_event``.
    """

    def __enter__(self) -> None:
        import warnings

        modules = (
            "google.adk.sessions.database_session_service",
            "google.adk.sessions.schemas.v0",
            "google.adk.sessions.schemas.v1",
        )
        self.homes = [c for c in _found_in(modules, "StorageEvent") if hasattr(c, "to_event")]
        if not self.homes:
            raise NotApplicable(f"google-adk {ADK_RELEASE} has no StorageEvent.to_event")
        self.originals = [home.to_event for home in self.homes]

        def validated(original: Any) -> Any:
            def to_event(storage: Any, *args: Any, **kwargs: Any) -> Event:
                event = original(storage, *args, **kwargs)
                if event.actions is not None:
                    with warnings.catch_warnings():  # pydantic warns of the dicts it dumps
                        warnings.simplefilter("ignore")
                        dumped = event.actions.model_dump()
                    event.actions = EventActions.model_validate(dumped)
                return event

            return to_event

        for home, original in zip(self.homes, self.originals, strict=True):
            home.to_event = validated(original)

    def __exit__(self, *exc) -> None:
        for home, original in zip(self.homes, self.originals, strict=True):
            home.to_event = original
