"""The ADK adapter's :class:`Pipeline`: a real ADK session driven step by step
(:mod:`.adk` re-exports it).
"""

from __future__ import annotations

import inspect
from collections.abc import Collection, Sequence
from functools import cached_property
from typing import Any

from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions, EventCompaction
from google.genai import types

from ...spec.model import Session, Step
from .adk_events import from_adk_events, to_adk_event
from .adk_helpers import (
    SERVER_URL_VARIABLES,
    _compaction_request_processor,
    _dispose,
    _helper,
    compaction_config,
    database_service,
    empty_database,
    sqlite_service,
    summariser_called,
)
from .adk_prompt import (
    _EVENT_KEY,
    PromptContent,
    _prompt_of,
    _tag_untagged,
    prompt_chars,
    request_content,
    request_text_chars,
    seed_numbers,
    sized_summary_text,
    summary_reply,
    summary_text,
)


class Pipeline:
    """A real ADK session driven step by step, as the runtime drives one.

    A session service holds the session (``InMemorySessionService``, or with
    ``storage="database"`` ``DatabaseSessionService`` on a SQLite file, from
    which :meth:`reload` reads the session afresh); a real ``App`` carries an
    ``EventsCompactionConfig`` with the given trigger values and a recording
    summariser (its summary text names the summary, ``summary#N``, and it
    keeps exactly which events it was given). :meth:`before_model_call` runs
    what the LLM flow runs before a model call (its
    ``CompactionRequestProcessor``), :meth:`end_invocation` what the runner
    runs after an invocation (``_run_compaction_for_sliding_window``, which
    tries token-threshold compaction first); :meth:`prompt` is ADK's own
    contents assembly for an agent.

    ``faithful`` (what the script driver uses): summaries are made by ADK's
    own ``LlmEventSummarizer`` over a scripted summary model, so the summary
    event (author, range by the first and last event given, usage) is ADK's;
    ``summary`` sets the summary's length (``tiny``, ``large``: larger than
    ``token_threshold`` by itself, ``grows``: half of what it was given);
    ``clock`` stamps summary events and ``new_id`` names every event, so a
    run is reproducible; and the end of an invocation passes what the
    ``Runner`` passes. Without ``faithful`` (recorded-session fixtures), the
    recorder builds its own summary event just after the newest event.

    Raises :class:`NotApplicable` on releases without event compaction or
    that refuse the configuration.
    """

    AGENT = "agent"

    def __init__(
        self,
        *,
        compaction_interval: int | None = None,
        overlap_size: int | None = None,
        token_threshold: int | None = None,
        event_retention_size: int | None = None,
        storage: str = "memory",
        summary: str = "tiny",
        faithful: bool = False,
        clock: Any = None,
        new_id: Any = None,
        root: str = AGENT,
        summary_sizes: Sequence[tuple[float, float, int]] = (),
    ) -> None:
        import asyncio
        import itertools

        from google.adk.agents.llm_agent import LlmAgent
        from google.adk.apps.app import App

        self._sliding = _helper("_run_compaction_for_sliding_window")
        #: The root agent's name: the harness's own ``agent``, or the name a
        #: recorded session's app gave it (its events are judged as that agent's).
        self.AGENT = root
        self.faithful = faithful
        self.storage = storage
        self.summary_size = summary
        #: A recorded session's summaries, (start, end, characters) each in
        #: the order the run stored them: the recorder's summaries take their
        #: sizes (see :meth:`recorded_text`).
        self.summary_sizes = tuple(summary_sizes)
        self._clock = clock
        counter = itertools.count(1)
        self._new_id = new_id or (lambda kind: Event.new_id())
        self._serial = counter
        #: A token-threshold summary was made before a model call of the
        #: running invocation (see before_model_call).
        self._token_compacted = False
        self._loop = asyncio.new_event_loop()
        self._folder = None
        if storage != "memory":
            self._service = self._database_service(storage)
        else:
            from google.adk.sessions.in_memory_session_service import InMemorySessionService

            self._service = InMemorySessionService()
        #: Ids of every event appended to the session service (ADK's summaries
        #: and the harness's events alike), in the order they were appended:
        #: the order an in-memory session keeps, whatever a reload gives back.
        self.stored_order: list[str] = []
        self._record_appends()
        self.session = self._loop.run_until_complete(
            self._service.create_session(app_name="harness", user_id="u")
        )
        #: Ids of the events appended through :meth:`append`, in order (every
        #: other stored event is one ADK's compaction made).
        self.appended_ids: list[str] = []
        #: One entry per summariser call: (session length then, input positions,
        #: numbers of earlier summaries it was given as a rolling-summary seed).
        self.summaries: list[tuple[int, tuple[int, ...], tuple[int, ...]]] = []
        #: The text of each summary, by number.
        self.summary_texts: list[str] = []
        #: For each summariser call, the characters of the events it was given
        #: (a rolling summary's seed included), as ADK's estimate counts them
        #: (:func:`prompt_chars`); the summariser's own instruction is not counted.
        self.summary_input_chars: list[int] = []
        #: The ids of the stored events each summary was given (positions move
        #: when a reload reorders the session; ids do not).
        self.summary_ids: list[tuple[str, ...]] = []
        self.token_threshold = token_threshold
        summarizer = self._summarizer()
        values = {
            "compaction_interval": compaction_interval,
            "overlap_size": overlap_size,
            "token_threshold": token_threshold,
            "event_retention_size": event_retention_size,
        }
        config = compaction_config(summarizer, values)
        self.app = App(
            name="harness",
            root_agent=LlmAgent(name=self.AGENT, model="gemini-2.0-flash"),
            events_compaction_config=config,
        )

    # -- the summariser ---------------------------------------------------------
    def _record(self, events: list[Event]) -> int:
        """Record a summariser call's input; returns the summary's number."""
        position = {id(e): i for i, e in enumerate(self.session.events)}
        taken = tuple(position[id(e)] for e in events if id(e) in position)
        seeds = seed_numbers(events, position)
        self.summaries.append((len(self.session.events), taken, seeds))
        self.summary_ids.append(tuple(e.id for e in events if id(e) in position))
        self.summary_input_chars.append(prompt_chars([e.content for e in events if e.content]))
        return len(self.summaries) - 1

    def summary_text(self, number: int, given_chars: int) -> str:
        """The text of summary ``number``: ``summary#N``, then filler to the
        configured size (``given_chars``: the size of what it was given)."""
        return summary_text(number, given_chars, self.summary_size, self.token_threshold)

    def recorded_text(self, number: int, start: float, end: float) -> str:
        """The text of summary ``number`` over ``[start, end]`` when the
        summaries a recorded run stored are known: ``summary#N``, then filler
        to the size of the recorded summary with that range, else of the
        recorded summary of that number in order (else the last one). ADK
        weighs the next range against the previous summary's size before it
        compacts again (2.13.0's ``_is_range_worth_compacting``), so a replay
        whose summaries had another size would compact where the run did not."""
        sizes = self.summary_sizes
        chars = next(
            (c for s, e, c in sizes if (s, e) == (start, end)),
            sizes[min(number, len(sizes) - 1)][2],
        )
        return sized_summary_text(number, chars)

    def _summarizer(self) -> Any:
        pipeline = self
        if self.faithful:
            try:
                from google.adk.apps.llm_event_summarizer import LlmEventSummarizer
                from google.adk.models.base_llm import BaseLlm
            except ImportError:  # pragma: no cover - every release with compaction has it
                LlmEventSummarizer = None
            if LlmEventSummarizer is not None:

                class SummaryModel(BaseLlm):
                    """The summariser's model: answers with the next summary text
                    and usage metadata from the token model (4 characters a token)."""

                    async def generate_content_async(self, llm_request, stream=False):
                        given = request_text_chars(llm_request)
                        text = pipeline.summary_text(len(pipeline.summaries) - 1, given)
                        pipeline.summary_texts.append(text)
                        yield summary_reply(text, given)

                class Summarizer(LlmEventSummarizer):
                    async def maybe_summarize_events(self, *, events):
                        pipeline._record(events)
                        made = await super().maybe_summarize_events(events=events)
                        if made is not None:
                            # What ADK stamps at construction ("now"), from the run's clock.
                            made.id = pipeline._new_id("event")
                            made.invocation_id = pipeline._new_id("invocation")
                            if pipeline._clock is not None:
                                made.timestamp = pipeline._clock()
                        return made

                return Summarizer(llm=SummaryModel(model="summary-model"))
        from google.adk.apps.base_events_summarizer import BaseEventsSummarizer

        class Recorder(BaseEventsSummarizer):
            async def maybe_summarize_events(self, *, events: list[Event]) -> Event | None:
                number = pipeline._record(events)
                stamps = [e.timestamp for e in events]
                if pipeline.summary_sizes:
                    text = pipeline.recorded_text(number, min(stamps), max(stamps))
                else:
                    text = pipeline.summary_text(number, 0)
                pipeline.summary_texts.append(text)
                return Event(
                    author="model",
                    # Deterministic, and just after the newest event, as a
                    # summary written at the end of an invocation would be.
                    invocation_id=f"summary{number}",
                    timestamp=max(e.timestamp for e in pipeline.session.events) + 0.5,
                    actions=EventActions(
                        compaction=EventCompaction(
                            start_timestamp=min(stamps),
                            end_timestamp=max(stamps),
                            compacted_content=types.Content(
                                role="model", parts=[types.Part(text=text)]
                            ),
                        )
                    ),
                )

        return Recorder()

    # -- storage ----------------------------------------------------------------
    def _database_service(self, storage: str = "database") -> Any:
        """A stored session's service: ``database`` (``DatabaseSessionService``
        on a fresh SQLite file), ``sqlite`` (``SqliteSessionService`` on one),
        ``postgresql`` or ``mariadb`` (``DatabaseSessionService`` on that
        server, emptied first: :func:`.adk_helpers.empty_database`)."""
        import tempfile

        self._folder = tempfile.TemporaryDirectory()
        if storage == "sqlite":
            return sqlite_service(f"{self._folder.name}/session.db")
        service = database_service(storage, f"{self._folder.name}/session.db")
        if storage in SERVER_URL_VARIABLES:
            self._loop.run_until_complete(empty_database(service))
        return service

    def _record_appends(self) -> None:
        """Note in :attr:`stored_order` every event appended to the service."""
        service, real = self._service, self._service.append_event
        order = self.stored_order

        async def append_event(session: Any, event: Event, *args: Any, **kwargs: Any) -> Any:
            made = await real(session, event, *args, **kwargs)
            order.append(event.id)
            return made

        service.append_event = append_event

    def as_stored(self) -> list[Event]:
        """The session in hand's events in the order they were appended (an
        in-memory session's order; a reload from a database may differ)."""
        by_id = {e.id: e for e in self.session.events}
        order = [by_id[i] for i in dict.fromkeys(self.stored_order) if i in by_id]
        noted = {e.id for e in order}
        return order + [e for e in self.session.events if e.id not in noted]

    def reload(self) -> None:
        """Read the session afresh from its service, as a server handling a new
        request does (``Runner.run_async`` calls ``get_session``)."""
        again = self._loop.run_until_complete(
            self._service.get_session(app_name="harness", user_id="u", session_id=self.session.id)
        )
        self.session = again
        # The database may give the events back in another order: every
        # recorded position follows its event.
        position = {e.id: i for i, e in enumerate(again.events)}
        self.summaries = [
            (length, tuple(position[x] for x in ids if x in position), seeds)
            for (length, _, seeds), ids in zip(self.summaries, self.summary_ids, strict=True)
        ]

    # -- appending ----------------------------------------------------------------
    def append(self, step: Step | Event, *, tag: bool = True) -> None:
        """Append an event (a :class:`~compaction_harness.spec.model.Step`, or an
        ``Event`` built by the caller) through the session service.

        ``tag``: each function response carries the event's id
        (``_EVENT_KEY``, see ``PromptPart``); without, the response is stored
        as given (a response ADK builds itself, which carries no tag when the
        ``Runner`` stores it), and :meth:`prompt` tags it when it reads it."""
        event = to_adk_event(step) if isinstance(step, Step) else step
        event.id = self._new_id("event")  # the service deduplicates equal events by id
        self.appended_ids.append(event.id)
        for part in event.content.parts if event.content and tag else ():
            if part.function_response is not None:  # see PromptPart
                part.function_response.response = {
                    **(part.function_response.response or {}),
                    _EVENT_KEY: event.id,
                }
        self._loop.run_until_complete(self._service.append_event(self.session, event))

    @cached_property
    def compacts_before_model_calls(self) -> bool:
        """Whether the release's LLM flow runs token-threshold compaction before
        each model call (its ``CompactionRequestProcessor``: 2.2.0 and later)."""
        if getattr(self.app.events_compaction_config, "token_threshold", None) is None:
            return False
        return _compaction_request_processor() is not None

    def before_model_call(self, agent_name: str | None = None, branch: str | None = None) -> bool:
        """What the LLM flow runs before each model call: on releases with
        :attr:`compacts_before_model_calls`, the flow's own
        ``CompactionRequestProcessor`` for the agent ``agent_name`` on
        ``branch`` (in the faithful mode; otherwise the function inside it,
        ``_run_compaction_for_token_threshold_config``, for the same agent and
        branch).
        Returns whether it made a summary."""
        if not self.compacts_before_model_calls:
            return False
        agent_name = agent_name or self.AGENT
        config = self.app.events_compaction_config
        if self.faithful:
            made = self._loop.run_until_complete(self._run_request_processor(agent_name, branch))
        else:
            made = self._loop.run_until_complete(
                self._token_compaction_for_agent(
                    self.session, self._service, config, agent_name, branch
                )
            )
        self._token_compacted |= bool(made)
        return bool(made)

    async def _run_request_processor(self, agent_name: str, branch: str | None) -> bool:
        from google.adk.agents.invocation_context import InvocationContext
        from google.adk.agents.llm_agent import LlmAgent
        from google.adk.models.llm_request import LlmRequest

        processor = _compaction_request_processor()
        agent = (
            self.app.root_agent
            if agent_name == self.AGENT
            else LlmAgent(name=agent_name, model="gemini-2.0-flash")
        )
        fields: dict[str, Any] = {
            "session_service": self._service,
            "invocation_id": self.session.events[-1].invocation_id
            if self.session.events
            else "e-0",
            "agent": agent,
            "session": self.session,
            "branch": branch,
            "events_compaction_config": self.app.events_compaction_config,
        }
        context = InvocationContext(
            **{k: v for k, v in fields.items() if k in InvocationContext.model_fields}
        )
        async for _ in processor.run_async(context, LlmRequest()):
            pass
        return bool(getattr(context, "token_compaction_checked", False))

    async def _token_compaction_for_agent(
        self,
        session: Any,
        service: Any,
        config: Any,
        agent_name: str | None = None,
        branch: str | None = None,
    ) -> bool:
        """``_run_compaction_for_token_threshold_config`` with the arguments
        ``CompactionRequestProcessor`` passes for the agent ``agent_name``
        (default the root) on ``branch`` (no isolation scope): a recorded
        session's sub-agent is compacted for as itself, with its own counts."""
        from google.adk.agents.llm_agent import LlmAgent

        fn = _helper("_run_compaction_for_token_threshold_config")
        name = agent_name or self.AGENT
        arguments: dict[str, Any] = {
            "config": config,
            "session": session,
            "session_service": service,
            "agent": self.app.root_agent
            if name == self.AGENT
            else LlmAgent(name=name, model="gemini-2.0-flash"),
            "agent_name": name,
            "current_branch": branch,
        }
        if "isolation_scope" in inspect.signature(fn).parameters:
            arguments["isolation_scope"] = None
        return await fn(**arguments)

    def calls_to_replay(
        self, invocation_id: str, tools: Sequence[str], agent_name: str | None = None
    ) -> tuple[str, ...]:
        """Ids of the calls ADK's flow runs again before it calls the model of
        ``agent_name`` in ``invocation_id`` (no branch), or ``()``.

        A step of the LLM flow asks ``decide_step_resume``
        (``google.adk.flows.llm_flows.core._resume``, 2.11.0 and later) whether
        the invocation left calls of its own tools (``tools``: their names)
        never executed, as when the process running them died and a client's
        answer to one of them resumed the invocation; if so it runs them and
        stores their results instead of calling the model, and the next step
        runs the request processors again. This asks ADK's own function on the
        session in hand, with the ``App``'s resumability (none). Releases
        without it: ``()``."""
        try:
            from google.adk.flows.llm_flows.core._resume import (
                ResumeAction,
                decide_step_resume,
            )
        except ImportError:
            return ()
        from google.adk.agents.invocation_context import InvocationContext

        fields: dict[str, Any] = {
            "session_service": self._service,
            "invocation_id": invocation_id,
            "agent": self.app.root_agent,
            "session": self.session,
            "branch": None,
        }
        context = InvocationContext(
            **{k: v for k, v in fields.items() if k in InvocationContext.model_fields}
        )
        decision = decide_step_resume(context, dict.fromkeys(tools))
        if decision.action is not ResumeAction.REPLAY_CALLS:
            return ()
        return tuple(c.id for c in decision.replay_event().get_function_calls() if c.id)

    @cached_property
    def _sliding_takes_skip(self) -> bool:
        """Whether the release's sliding-window runner takes ``skip_token_compaction``."""
        return "skip_token_compaction" in inspect.signature(self._sliding).parameters

    @property
    def token_path_runs_at_end(self) -> bool:
        """Whether :meth:`end_invocation` will try token-threshold compaction."""
        return not (self._sliding_takes_skip and self._skip_at_end())

    def _skip_at_end(self) -> bool:
        # The Runner passes its root invocation context's token_compaction_checked,
        # which the flow sets on the agent's own (child) context, so it is False
        # (seen with the real Runner on 2.11.0); the faithful mode passes that.
        return False if self.faithful else self._token_compacted

    def end_invocation(self) -> None:
        kwargs = {}
        if self._sliding_takes_skip:
            kwargs["skip_token_compaction"] = self._skip_at_end()
        self._token_compacted = False

        async def run() -> None:
            result = self._sliding(self.app, self.session, self._service, **kwargs)
            if inspect.isasyncgen(result):  # 2.13.0: the runner appends what it yields
                async for event in result:
                    await self._service.append_event(self.session, event)
            else:  # earlier releases append the summary themselves
                await result

        self._loop.run_until_complete(run())

    def token_trigger_fires(
        self,
        strip_counts: frozenset[int] = frozenset(),
        *,
        before_model_call: bool = False,
        agent_name: str | None = None,
        branch: str | None = None,
    ) -> bool:
        """Whether ADK's token-threshold compaction would call the summariser now.

        Runs the release's ``_run_compaction_for_token_threshold`` (1.26.0 and
        later; as the invocation's end does), or with ``before_model_call``
        ``_run_compaction_for_token_threshold_config`` for ``agent_name`` on
        ``branch`` (as :meth:`before_model_call` does), on a copy of the
        session in a fresh ``InMemorySessionService``, with a summariser that
        only counts its calls; this session and :attr:`summaries` are
        untouched. ``strip_counts``: positions of events whose
        ``usage_metadata.prompt_token_count`` is removed in the copy. Raises
        :class:`NotApplicable` on releases without token-threshold compaction.
        """
        run_token = _helper("_run_compaction_for_token_threshold")
        app = self.app
        agent_name = agent_name or self.AGENT

        async def entry_point(config: Any, session: Any, service: Any) -> None:
            if before_model_call:
                await self._token_compaction_for_agent(session, service, config, agent_name, branch)
            else:
                await run_token(
                    app.model_copy(update={"events_compaction_config": config}), session, service
                )

        return summariser_called(
            self.session.events,
            app.events_compaction_config,
            entry_point,
            strip_counts,
            loop=self._loop,
        )

    def steps(self) -> Session:
        """The session as the model sees it (summaries included)."""
        return from_adk_events(self.session.events)

    def origins(self) -> list[int | None]:
        """For each stored event, the number of the :meth:`append` call that
        stored it, or None for an event ADK's compaction made."""
        number = {event_id: k for k, event_id in enumerate(self.appended_ids)}
        return [number.get(e.id) for e in self.session.events]

    def prompt(
        self,
        *,
        without_summaries: bool = False,
        agent_name: str | None = None,
        branch: str | None = None,
        time_ordered: bool = False,
        as_stored: bool = False,
    ) -> list[PromptContent]:
        """``LlmRequest.contents`` as ADK assembles them for ``agent_name`` on
        ``branch``, with function call ids kept (as for models that pair by id).

        ``without_summaries``: as if no compaction had happened (the baseline
        of P4: what the prompt builder shows of the raw events).
        ``time_ordered``: the events put in order of timestamp, then id, as
        ``DatabaseSessionService.get_session`` returns them.
        ``as_stored``: the events in the order they were appended
        (:meth:`as_stored`), as an in-memory session holds them."""
        agent_name = agent_name or self.AGENT
        events = _tag_untagged(self.as_stored() if as_stored else self.session.events)
        if time_ordered:
            events.sort(key=lambda e: (e.timestamp, e.id))
        if without_summaries:
            events = [e for e in events if not (e.actions and e.actions.compaction)]
        return _prompt_of(
            self._contents(_tag_untagged(events), agent_name, branch), self._positions()
        )

    def _positions(self) -> dict[str, int]:
        """Event id -> position in the session in hand."""
        return {e.id: i for i, e in enumerate(self.session.events)}

    def prompt_chars_of(
        self,
        positions: Sequence[int],
        agent_name: str | None = None,
        branch: str | None = None,
        *,
        compacted: Sequence[int] = (),
    ) -> int:
        """Characters of the prompt ADK would assemble for ``agent_name`` from
        the stored events at ``positions`` alone, as ADK's estimate counts them.

        ``compacted``: stored positions of events a summary is taken to have
        replaced. Where the release re-injects a compacted call whose response
        survives (``_recover_compacted_function_calls`` in
        ``google.adk.flows.llm_flows.context._compaction``, where the release has it),
        it is given these events as its source, so the count includes what ADK
        must restore to keep that response paired; older releases restore
        nothing and the count leaves it out as they do.
        """
        return prompt_chars(self._subset_contents(positions, agent_name, branch, compacted))

    def prompt_of_events(
        self,
        positions: Sequence[int],
        agent_name: str | None = None,
        branch: str | None = None,
        *,
        compacted: Sequence[int] = (),
    ) -> list[PromptContent]:
        """The prompt :meth:`prompt_chars_of` counts: what ADK assembles for
        ``agent_name`` from the stored events at ``positions`` alone."""
        contents = self._subset_contents(positions, agent_name, branch, compacted)
        return _prompt_of(contents, self._positions())

    def _subset_contents(
        self,
        positions: Sequence[int],
        agent_name: str | None,
        branch: str | None,
        compacted: Sequence[int],
    ) -> list[Any]:
        agent_name = agent_name or self.AGENT
        events = self.session.events
        chosen = [events[i] for i in sorted(positions)]
        if compacted:
            try:
                from google.adk.flows.llm_flows.context._compaction import (
                    _recover_compacted_function_calls as recover,
                )
            except ImportError:
                recover = None
            if recover is not None:
                source = [events[i] for i in sorted({*positions, *compacted})]
                chosen = recover(chosen, source)
        return self._contents(chosen, agent_name, branch)

    def content_chars_of(self, positions: Sequence[int]) -> int:
        """Characters of the stored events at ``positions`` as their own
        content holds them (a compaction event: its summary), counted as
        :func:`prompt_chars` counts a prompt (ADK's token estimate), but
        without what prompt assembly wraps around them for a reader (another
        agent's reply reaches the root as a user content that opens with a
        "For context: ..." preamble of about 430 characters)."""
        events = self.session.events
        contents = [request_content(events[i]) for i in sorted(positions)]
        return prompt_chars([c for c in contents if c is not None])

    def prompt_chars(
        self,
        agent_name: str | None = None,
        branch: str | None = None,
        *,
        leave_out: Collection[str] = (),
    ) -> int:
        """The size of the prompt ADK assembles now, as ADK's estimate counts it.

        ``leave_out``: ids of stored events to assemble the prompt without (the
        cost profile leaves out the summaries an invocation made, to size the
        prompt as it would be had that invocation compacted nothing)."""
        agent_name = agent_name or self.AGENT
        events = [e for e in self.session.events if e.id not in leave_out]
        return prompt_chars(self._contents(events, agent_name, branch))

    def _contents(self, events: list[Event], agent_name: str, branch: str | None) -> list[Any]:
        try:
            from google.adk.flows.llm_flows.context._contents import _get_contents
        except ImportError:  # releases before the context/ package
            from google.adk.flows.llm_flows.contents import _get_contents
        params = inspect.signature(_get_contents).parameters
        if "preserve_function_call_ids" in params:
            return _get_contents(branch, events, agent_name, preserve_function_call_ids=True)
        return _get_contents(branch, events, agent_name)

    def database_prompt(
        self, agent_name: str | None = None, branch: str | None = None
    ) -> list[PromptContent]:
        """P7: the prompt after a round trip through ``DatabaseSessionService``.

        With ``storage="database"``, the session is read afresh from its own
        database. Otherwise every event of the session (summaries included) is
        stored in a fresh SQLite file through ADK's ``DatabaseSessionService``
        (the ``google-adk[db]`` extra) and the session reloaded from it. The
        prompt is assembled from what came back. Raises :class:`NotApplicable`
        without the extra.
        """
        agent_name = agent_name or self.AGENT
        if self.storage != "memory":
            again = self._loop.run_until_complete(
                self._service.get_session(
                    app_name="harness", user_id="u", session_id=self.session.id
                )
            )
            return _prompt_of(
                self._contents(_tag_untagged(again.events), agent_name, branch),
                self._positions(),
            )
        import tempfile

        async def round_trip(folder: str) -> list[Event]:
            service = database_service("database", f"{folder}/session.db")
            try:
                stored = await service.create_session(app_name="harness", user_id="u")
                for event in self.session.events:
                    await service.append_event(stored, event.model_copy(deep=True))
                again = await service.get_session(
                    app_name="harness", user_id="u", session_id=stored.id
                )
                return list(again.events)
            finally:
                await _dispose(service)

        with tempfile.TemporaryDirectory() as folder:
            events = self._loop.run_until_complete(round_trip(folder))
        return _prompt_of(
            self._contents(_tag_untagged(events), agent_name, branch), self._positions()
        )

    def close(self) -> None:
        if self.storage != "memory":
            self._loop.run_until_complete(_dispose(self._service))
        # Async generators ADK left open (a compaction span, say) are closed
        # here, not by the garbage collector after the loop is gone.
        self._loop.run_until_complete(self._loop.shutdown_asyncgens())
        self._loop.close()
        if self._folder is not None:
            self._folder.cleanup()
