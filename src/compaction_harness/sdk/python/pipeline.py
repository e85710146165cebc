"""google-adk driven step by step: a pipeline case replayed on a real session, checked as it goes.

A :class:`PipelineCase` is a compaction configuration and a sequence of
operations (append an event; end the invocation, which runs ADK's
post-invocation compaction). An event the model wrote is preceded by a model
call, before which ADK's flow runs token-threshold compaction (2.2.0 and
later). :func:`run_pipeline_case` replays it on a real
``InMemorySessionService`` session through :class:`~compaction_harness.sdk.python.adk.Pipeline`
and checks P1 to P7 after every operation (:class:`PipelineRun`);
:class:`Findings` records what they find, nothing classified (classification by
fix is :mod:`.triage`'s, after the run); :func:`recorded_case` makes a case
of a session ADK's ``Runner`` recorded.

The checkers are pure and belong to the specification:
:mod:`compaction_harness.spec.pipeline_checks` (P1, P5, P6, P7, and the
statement of every pipeline invariant), :mod:`compaction_harness.spec.prompt_checks`
(P2, P4), :mod:`compaction_harness.spec.liveness_checks` (P3), and the
recorded-session helpers in :mod:`compaction_harness.spec.pipeline_case`.
Their names stay importable from here for the other ``sdk.python`` modules
for now; new code imports them from ``spec``. Only the adapter touches ADK.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ...spec import reference
from ...spec.invariants import PIPELINE_INVARIANTS as PIPELINE_INVARIANTS
from ...spec.invariants import Violation
from ...spec.liveness_checks import check_liveness, ranges_beyond_retention
from ...spec.liveness_checks import liveness_bound as liveness_bound
from ...spec.model import ModelError, Session, Step
from ...spec.outcome import UnitOutcome
from ...spec.pipeline_case import (
    CONFIG_KEYS,
    PipelineCase,
    compaction_difference,
    recorded_agents,
    resumes_or_opens,
    summary_ranges,
)
from ...spec.pipeline_case import check_agents as check_agents
from ...spec.pipeline_checks import (
    ABORT_ERROR,
    Prompt,
    _shows,
    check_branch_view,
    check_new_work,
    check_range_safety,
    check_round_trip,
    check_same_view,
    check_stale_counts,
    check_summariser_calls,
    check_summary_bound,
    covered_by_kept,
    from_model,
    live_positions,
    newest_real_count,
    stale_counts,
    summary_branch,
    tool_failed,
)
from ...spec.pipeline_checks import FRAMEWORK_CALLS as FRAMEWORK_CALLS
from ...spec.pipeline_checks import Summaries as Summaries
from ...spec.pipeline_checks import covered_by_records as covered_by_records
from ...spec.pipeline_checks import once_per_branch as once_per_branch
from ...spec.prompt_checks import answers_of_several_call_events as answers_of_several_call_events
from ...spec.prompt_checks import check_model_prompt
from ...spec.prompt_checks import check_nothing_lost as check_nothing_lost
from ...spec.prompt_checks import check_prompt as check_prompt
from ...spec.prompt_checks import parts_of as parts_of

__all__ = [
    "Findings",
    "PipelineRun",
    "chosen_invariants",
    "crash_violation",
    "ended_by_failure",
    "recorded_case",
    "recorded_summary_sizes",
    "run_pipeline_case",
]


def chosen_invariants() -> tuple[str, ...]:
    """The pipeline invariants named by the environment variable
    HARNESS_PIPELINE_INVARIANTS (comma- or space-separated; empty: none named,
    so all apply). Unknown names are returned as given: the caller refuses them."""
    return tuple(os.environ.get("HARNESS_PIPELINE_INVARIANTS", "").replace(",", " ").split())


def pricing_summary(written: Sequence[str], prompt: Prompt) -> str | None:
    """The text of the summary a compaction that waits to save something is
    priced by (P3; see :func:`~compaction_harness.sdk.python.adk.waits_to_save_prompt`):
    the latest summary the summariser wrote (``written``, its texts in the
    order made), which prices the next one even where a client's record hides
    it from the prompt (ADK's ``_previous_summary_chars`` as
    summary-priced-by-the-summarizers-own-output fixes it: its size is the
    summariser's, not the record's), or the latest one ``prompt`` shows, if
    longer; None before any summary."""
    if not written:
        return None
    texts = [p[1] for _, ps in prompt for p in ps if p[0] == "text"]
    kept = [text for text in written if any(_shows(t, text.split("\n", 1)[0]) for t in texts)]
    return max((written[-1], kept[-1]) if kept else (written[-1],), key=len)


class PipelineRun:
    """Operations applied one at a time, each followed by the checks.

    ``strict_provider``: P2's strict clause applies (every call answered by
    the content right after it). ``pipeline_options`` go to
    :class:`~compaction_harness.sdk.python.adk.Pipeline` (storage, summary size, the
    faithful mode the script driver uses).
    """

    def __init__(
        self,
        config: Mapping[str, int | None],
        max_invocation_events: int = 6,
        *,
        strict_provider: bool = False,
        agents: Sequence[str] = (),
        **pipeline_options: Any,
    ) -> None:
        from .adk import Pipeline

        #: The app's agents, the root first (see ``PipelineCase.agents``).
        self.agents = tuple(agents) or ("agent",)
        self.root = self.agents[0]
        if agents:
            pipeline_options = {**pipeline_options, "root": self.root}
        self.config = dict(config)
        self.max_invocation_events = max_invocation_events
        self.strict_provider = strict_provider
        #: Characters of the system instruction and tool declarations (the
        #: token model counts them in every prompt).
        self.base_chars = 0
        #: A recorded run's summary sizes (see ``PipelineCase.summary_sizes``).
        self.summary_sizes = tuple(pipeline_options.get("summary_sizes", ()))
        self.pipeline = Pipeline(**self.config, **pipeline_options)
        self.appended: list[Step] = []
        self.ends: list[int] = []
        self.opener: str | None = None
        #: Each invocation's opener: the text of its first user event.
        self.openers: dict[str, str] = {}
        self._checked_summaries = 0
        #: How many times P6's second clause ran its counterfactual.
        self.stale_checks = 0
        #: The prompt of the latest model call (what P2 and P4 judged).
        self._checked_prompt: Prompt | None = None
        #: Every request sent to the model: (agent, branch, its contents).
        self.requests: list[tuple[str, str | None, Prompt]] = []
        #: Prompt calls left unanswered at the latest model call (P2 reports them).
        self.unanswered: list[str] = []
        #: P3's backlog at the latest invocation end (see :func:`check_liveness`).
        self._backlog: frozenset[Step] | None = None

    def append(self, step: Step, *, opens_invocation: bool = False) -> list[Violation]:
        """Append ``step``; a step the model wrote (see :func:`from_model`) is
        preceded by the model call that produced it, so the prompt is checked
        first (P2, P4)."""
        found: list[Violation] = []
        if from_model(step, self.appended[-1] if self.appended else None):
            # The agent that wrote the reply made the call: a listed sub-agent,
            # else the root (older fixtures name no agents).
            found = self.model_call(step.author if step.author in self.agents else self.root)
        if step.author == "user" and step.text is not None:
            self.openers.setdefault(step.invocation, step.text)
        if opens_invocation:
            # A run of an invocation that a user's answer resumes (a function
            # response, a confirmation) runs for the message that opened it:
            # ADK's ``_find_user_message_for_invocation`` (``runners.py``).
            self.opener = (
                step.text
                if step.author == "user" and step.text is not None
                else self.openers.get(step.invocation)
            )
        self.appended.append(step)
        self.pipeline.append(step)
        return found

    def model_call(
        self, agent_name: str | None = None, branch: str | None = None
    ) -> list[Violation]:
        """A model call of ``agent_name`` on ``branch``: the flow's request
        processors (:meth:`request_processors`), then the request they built is
        sent (:meth:`check_request`)."""
        agent_name = agent_name or self.root
        return self.request_processors(agent_name, branch) + self.check_request(agent_name, branch)

    def request_processors(
        self, agent_name: str | None = None, branch: str | None = None
    ) -> list[Violation]:
        """The flow's request processors of one step of ``agent_name`` on
        ``branch``: token-threshold compaction on releases that run it before
        model calls, with P1, P5 and P6 on a summary it makes. A step may end
        here without calling the model (ADK's flow replays calls a dead turn
        left instead: ``_run_one_step_async``, 2.11.0 and later), so the
        request is judged only by :meth:`check_request`."""
        if not self.pipeline.compacts_before_model_calls:
            return []
        agent_name = agent_name or self.root
        return self._compact(
            lambda: self.pipeline.before_model_call(agent_name, branch),
            before_model_call=True,
            agent=(agent_name, branch),
        )

    def check_request(
        self, agent_name: str | None = None, branch: str | None = None
    ) -> list[Violation]:
        """The request of ``agent_name`` on ``branch`` is sent to the model:
        P2 and P4 on the prompt ADK assembles, and P7 when the session lives in
        a database."""
        from .adk import prunes_orphaned_calls

        agent_name = agent_name or self.root
        out: list[Violation] = []
        steps = self.pipeline.steps()
        prompt = self.pipeline.prompt(agent_name=agent_name, branch=branch)
        self._checked_prompt = prompt
        self.requests.append((agent_name, branch, prompt))
        baseline = self.pipeline.prompt(
            without_summaries=True, agent_name=agent_name, branch=branch
        )
        found, self.unanswered = check_model_prompt(
            steps,
            prompt,
            baseline,
            self.pipeline.summaries,
            self.opener,
            strict=self.strict_clause,
            records=self.foreign_records(steps),
            pruned=prunes_orphaned_calls(),
        )
        out += found
        if self.pipeline.storage != "memory":
            out += self.database_round_trip(agent_name, branch)
        return out

    @property
    def strict_clause(self) -> bool:
        """Whether P2's strict-provider clause applies to the contents as
        assembled. The request a strict provider gets is what ADK's LiteLLM
        adapter makes of them; releases whose adapter puts a placeholder
        result in for every call left unanswered (see
        ``adk.litellm_heals_missing_tool_results``) send a request that meets
        the clause whatever the contents hold."""
        from .adk import litellm_heals_missing_tool_results

        return self.strict_provider and not litellm_heals_missing_tool_results()

    def foreign_records(self, steps: Session) -> list[int]:
        """Positions of compaction records that were appended, not made by
        ADK's compaction in this run (see :func:`check_nothing_lost`)."""
        origins = self.pipeline.origins()
        return [
            i
            for i, step in enumerate(steps)
            if step.compaction is not None and origins[i] is not None
        ]

    def end_invocation(self) -> list[Violation]:
        """End the invocation: compaction runs; P6 around it, then P1, P5 and P6 on
        new summaries and P3."""
        self.opener = None  # no invocation runs until the next one opens
        self._checked_prompt = None
        self.ends.append(len(self.appended))
        # The count the token trigger consults at this end (P3 without a
        # sliding window): the newest real one, before the end's compaction.
        count = newest_real_count(self.pipeline.steps())
        out = self._compact(
            self.pipeline.end_invocation,
            before_model_call=False,
            check_stale=self.pipeline.token_path_runs_at_end,
        )
        steps = self.pipeline.steps()
        prompt = self.pipeline.prompt()
        stalled, self._backlog = check_liveness(
            steps,
            prompt,
            self.pipeline.summaries,
            self.config,
            self.foreign_records(steps),
            self._backlog,
            count,
        )
        return out + [v for v in stalled if not self._waits_to_save_prompt(v, prompt)]

    def _waits_to_save_prompt(self, violation: Violation, prompt: Prompt) -> bool:
        """Whether every range of a P3 backlog is no larger than the summary
        that would replace it (:func:`~compaction_harness.sdk.python.adk.waits_to_save_prompt`:
        a summary as large as what it replaces saves nothing, P6 calls that
        wasted work, and ADK 2.13.0 refuses such a range,
        ``_is_range_worth_compacting``; a delay bounded by the summary's size,
        not a stall). The events are weighed as they are, whoever reads them:
        what the prompt wraps around another agent's reply for the root (a
        preamble of about 430 characters a reply) is presentation, a bounded
        factor on each event, and leaves the delay bounded. With a token
        threshold alone the events it retains are not weighed: no summary would
        take them (:func:`~compaction_harness.spec.liveness_checks.beyond_retention`).
        A call that waits splits the backlog into ranges a summary takes one at
        a time, each weighed on its own
        (:func:`~compaction_harness.spec.liveness_checks.ranges_beyond_retention`)."""
        from .adk import waits_to_save_prompt

        events = self.pipeline.session.events
        ranges = [[events[i] for i in r] for r in ranges_beyond_retention(violation)]
        return waits_to_save_prompt(ranges, pricing_summary(self.pipeline.summary_texts, prompt))

    def _compact(
        self,
        compact: Callable[[], Any],
        *,
        before_model_call: bool,
        check_stale: bool = True,
        agent: tuple[str, str | None] | None = None,
    ) -> list[Violation]:
        """Run one of ADK's compaction entry points (``compact``: before a model
        call, or at an invocation's end) with P6's second and third clauses
        around it (the second only where ``check_stale``: the token path runs),
        then P1, P5 and P6 on the summaries it made."""
        agent = agent or (self.root, None)
        before = self.pipeline.steps()
        prompt_before = self.pipeline.prompt()
        # What ADK's own summaries covered: a summary that takes events only a
        # client's record stood for is ADK's first summary of them, not waste.
        covered_before = covered_by_kept(prompt_before, self.pipeline.summaries)
        out: list[Violation] = []
        if check_stale:
            out += self.stale_count_check(before, before_model_call=before_model_call, agent=agent)
        made = len(self.pipeline.summaries)
        compact()
        stored = self.pipeline.steps()
        foreign = self.foreign_records(stored)
        out += check_summariser_calls(
            [
                summary_branch(stored, number, foreign)
                for number in range(made, len(self.pipeline.summaries))
            ],
            self.config,
            newest_real_count(before, agent[0] if before_model_call else ""),
            token_only=before_model_call,
        )
        token_alone = before_model_call or self.config.get("compaction_interval") is None
        if len(self.pipeline.summaries) > made and token_alone and self.config["token_threshold"]:
            out += self.token_summary_bound(before, made, agent, running=before_model_call)
        return out + self._check_new_summaries(covered_before)

    def token_summary_bound(
        self,
        before: Session,
        number: int,
        agent: tuple[str, str | None],
        *,
        running: bool = False,
    ) -> list[Violation]:
        """P6 (third clause, the bound): the prompt after a token-threshold
        summary (see :func:`check_summary_bound`). ``running``: the summary
        was made before a model call, while the newest invocation runs; then
        that invocation, from its first event on, is floor too: P2 requires
        its opening message in every model call of it, and a summary covers
        a time range, so nothing stamped after the opener can be taken
        without it (google-adk's fix
        ``token-compaction-keeps-the-running-invocation`` keeps exactly
        that)."""
        threshold = self.config["token_threshold"]
        retention = self.config["event_retention_size"] or 0
        live = reference.live_events(before)
        index = {id(s): k for k, s in enumerate(live)}
        newest = next(
            (s.invocation for s in reversed(before) if s.invocation and s.compaction is None),
            None,
        )
        first = next((i for i, s in enumerate(before) if newest and s.invocation == newest), None)
        # Before a model call the range ends before the running invocation,
        # and an obligation only it closes stops the range earlier still.
        compactable = {
            id(live[k])
            for k in reference.token_threshold_range(
                live, retention, newest if running and first is not None else None
            )
        }
        if running and first is not None:
            compactable -= {id(step) for step in before.steps[first:]}
        # What stays when exactly the reference's range is compacted: every
        # live event outside it (what earlier summaries hide stays hidden,
        # since every summary is kept too), every summary, and the new one.
        kept = [
            i
            for i, step in enumerate(before)
            if id(step) in index and (step.compaction is not None or id(step) not in compactable)
        ]
        # The floor as the prompt builder renders it (another agent's message
        # is relayed with a preamble, for one). Compaction appends the new
        # summaries, so earlier positions are unchanged: every summary it
        # wrote at this point is floor, one per branch where the range held
        # several branches' events (P5 keeps them apart, see
        # check_summariser_calls).
        stored = self.pipeline.steps()
        new_summaries = [
            i for i, step in enumerate(stored) if step.compaction is not None and i >= len(before)
        ] or [max(i for i, step in enumerate(stored) if step.compaction is not None)]
        # A response that stays keeps its call: ADK re-injects a compacted call
        # event whose answer survives, so what it restores is floor too.
        taken = [i for i, step in enumerate(before) if id(step) in compactable]
        chars = self.pipeline.prompt_chars_of([*kept, *new_summaries], *agent, compacted=taken)
        if (
            not running
            and first is not None
            and self._shows_opener(
                before[first], self.pipeline.prompt(agent_name=agent[0], branch=agent[1])
            )
            and not self._shows_opener(
                before[first],
                self.pipeline.prompt_of_events([*kept, *new_summaries], *agent, compacted=taken),
            )
        ):
            # After the invocation's end the prompt ADK assembles is still that
            # invocation's (the newest), and a release that restores the
            # running request (google-adk's fix
            # running-request-restored-after-compaction) shows its opening
            # message again though a summary took it, as P2 requires should a
            # client's answer resume the invocation: that message is floor
            # (the floor's events alone may not restore it: the invocation's
            # later events, before which the fix restores it, are not floor).
            chars += self.pipeline.content_chars_of([first])
        after = (self.base_chars + self.pipeline.prompt_chars(*agent)) // 4
        floor = (self.base_chars + chars) // 4
        return check_summary_bound(after, floor, threshold, number)

    @staticmethod
    def _shows_opener(step: Step, prompt: Prompt) -> bool:
        """Whether ``step`` is a user message whose text ``prompt`` shows as a
        user turn."""
        if step.author != "user" or not step.text:
            return False
        return any(role == "user" and ("text", step.text) in parts for role, parts in prompt)

    def _check_new_summaries(self, covered_before: set[int]) -> list[Violation]:
        """P1, P5 and P6 (first clause) on the summaries made since the last call."""
        steps = self.pipeline.steps()
        summaries = self.pipeline.summaries
        foreign = self.foreign_records(steps)
        out: list[Violation] = []
        for number in range(self._checked_summaries, len(summaries)):
            length, taken, _ = summaries[number]
            snapshot = Session(steps.steps[:length])
            out += check_range_safety(snapshot, taken)
            out += check_same_view(snapshot, taken)
            branch = summary_branch(steps, number, foreign)
            out += check_branch_view(snapshot, taken, branch)
            out += check_new_work(taken, covered_before, live_positions(snapshot), number)
        self._checked_summaries = len(summaries)
        return out

    def stale_count_check(
        self,
        steps: Session,
        *,
        before_model_call: bool = False,
        agent: tuple[str, str | None] | None = None,
    ) -> list[Violation]:
        """P6 (second clause) on ``steps``, the session before compaction runs:
        ADK's token trigger (at the invocation's end, or ``before_model_call``)
        on a copy with and without the stale counts."""
        stale = stale_counts(steps)
        if not stale or self.config.get("token_threshold") is None:
            return []
        self.stale_checks += 1
        name, branch = agent or (self.root, None)

        def fires(strip: frozenset[int] = frozenset()) -> bool:
            return self.pipeline.token_trigger_fires(
                strip, before_model_call=before_model_call, agent_name=name, branch=branch
            )

        return check_stale_counts(fires(), fires(stale), stale)

    def database_round_trip(
        self, agent_name: str | None = None, branch: str | None = None
    ) -> list[Violation]:
        """P7: the session stored in and reloaded from ``DatabaseSessionService``
        (SQLite) yields the same prompt as the in-memory one: the events in
        the order they were appended (a session reloaded before an invocation
        is already in the database's order, so the one in hand is not the
        in-memory one)."""
        return check_round_trip(
            self.pipeline.prompt(agent_name=agent_name, branch=branch, as_stored=True),
            self.pipeline.database_prompt(agent_name=agent_name, branch=branch),
            self.pipeline.prompt(
                agent_name=agent_name, branch=branch, as_stored=True, time_ordered=True
            ),
        )

    def case(self, invariants: tuple[str, ...] | None = None) -> PipelineCase:
        return PipelineCase(
            self.config,
            Session(tuple(self.appended)),
            tuple(self.ends),
            self.max_invocation_events,
            invariants=invariants,
            agents=() if self.agents == ("agent",) else self.agents,
            summary_sizes=self.summary_sizes,
        )

    def outcome(self, violations: list[Violation]) -> UnitOutcome:
        """The outcome a fixture records. ``observed``: ``summaries`` (the stored
        positions each summary was given), ``stored`` (the session as stored:
        for each position, the index of the appended step or ``"summary#n"``)
        and ``prompt`` (the prompt that was checked last, so the one that broke
        P2 or P4 when those fired)."""
        prompt = self._checked_prompt
        if prompt is None:
            try:
                prompt = self.pipeline.prompt()
            except Exception:  # the prompt builder itself fails (P0): none to record
                prompt = []
        stored: list[int | str] = []
        for step, origin in zip(self.readable_steps(), self.pipeline.origins(), strict=False):
            stored.append(origin if origin is not None else step.compaction.summary)
        return UnitOutcome(
            violations,
            {},
            {
                "summaries": [list(t) for _, t, _ in self.pipeline.summaries],
                "stored": stored,
                "prompt": [[role, [list(p) for p in parts]] for role, parts in prompt],
            },
        )

    def readable_steps(self) -> Session:
        """The stored session as the model reads it, for an outcome: empty when
        ADK returned events that cannot be read (that is a P0 of its own,
        reported where it was met, see :func:`crash_violation`)."""
        from .adk import UnreadableEvents

        try:
            return self.pipeline.steps()
        except UnreadableEvents:
            return Session(())

    def close(self) -> None:
        self.pipeline.close()


class Findings:
    """Each operation's violations, recorded as a run goes: what the run
    returns, nothing classified (classification by fix re-runs the case
    after the run: :func:`compaction_harness.sdk.python.triage.judge`).

    ``chosen``: the invariants checked (None: all); calling the object
    records one operation's violations of those. :meth:`outcome` builds the
    run's outcome with every violation in operation order, how many each
    operation found (``batches``) and the case as far as it ran (``ran``).
    """

    def __init__(self, chosen: set[str] | None) -> None:
        self.chosen = chosen
        self.batches: list[list[Violation]] = []

    def __call__(self, found: list[Violation]) -> None:
        found = [v for v in found if self.chosen is None or v.invariant in self.chosen]
        if found:
            self.batches.append(found)

    def outcome(self, make: Callable[[list[Violation]], UnitOutcome], ran: Any) -> UnitOutcome:
        """The run's outcome (``make`` builds it from violations); ``ran``:
        the case as far as the run went."""
        outcome = make([v for batch in self.batches for v in batch])
        outcome.batches = [len(batch) for batch in self.batches]
        outcome.ran = ran
        return outcome


def run_pipeline_case(case: PipelineCase) -> UnitOutcome:
    """Replay ``case`` and check P1 to P7 after every operation.

    Only the invariants ``case.invariants`` names are checked (all when None).
    Nothing is classified: ``violations`` holds every violation of every
    operation, in order (see :class:`Findings`); the run stops only where ADK
    raised (P0), after which nothing can be judged.
    """
    sizes = {"summary_sizes": case.summary_sizes} if case.summary_sizes else {}
    run = PipelineRun(case.config, case.max_invocation_events, agents=case.agents, **sizes)
    chosen = set(case.invariants) if case.invariants else None
    findings = Findings(chosen)
    complete = False

    def outcome() -> UnitOutcome:
        def make(violations: list[Violation]) -> UnitOutcome:
            made = run.outcome(violations)
            if case.recorded is not None:
                upto = None if complete else len(run.appended)
                differs = compaction_difference(case, run.readable_steps(), upto)
                if differs:
                    made.observed["recorded_differs"] = differs
            return made

        return findings.outcome(make, run.case())

    def guarded(what: str, operation: Callable[[], list[Violation]]) -> list[Violation]:
        from .adk import NotApplicable

        try:
            return operation()
        except NotApplicable:
            raise
        except Exception as exc:  # P0: ADK raised; nothing after it can be judged
            return [crash_violation(what, exc)]

    try:
        ends = list(case.ends)
        previous_inv: str | None = None
        for k, step in enumerate(case.session):
            while ends and ends[0] == k:
                ends.pop(0)
                previous_inv = None
                found = guarded("the end of an invocation", run.end_invocation)
                findings(found)
                if _crashed(found):
                    return outcome()
            opens = step.invocation != previous_inv
            previous_inv = step.invocation
            found = guarded(
                f"appending step {k}", lambda s=step, o=opens: run.append(s, opens_invocation=o)
            )
            findings(found)
            if _crashed(found):
                return outcome()
        while ends:
            ends.pop(0)
            found = guarded("the end of an invocation", run.end_invocation)
            findings(found)
            if _crashed(found):
                return outcome()
        complete = True
        return outcome()
    finally:
        run.close()


def _crashed(found: list[Violation]) -> bool:
    return any(v.invariant == "P0" for v in found)


def crash_violation(what: str, exc: BaseException) -> Violation:
    """P0: ADK raised ``exc`` during ``what`` (compaction, prompt assembly or
    the session service), or returned there what cannot be read
    (:class:`~compaction_harness.sdk.python.adk.UnreadableEvents`: the violation names
    the event and the field, and ``details["exception"]`` the error met
    reading it)."""
    from .adk import UnreadableEvents

    if isinstance(exc, UnreadableEvents):
        cause = exc.cause
        return Violation(
            "P0",
            f"{exc} (during {what})",
            expected="events of the types ADK declares",
            observed=f"{type(cause).__name__}: {cause}",
            details={
                "cause": "unreadable",
                "exception": type(cause).__name__,
                "unreadable": str(exc),
            },
        )
    return Violation(
        "P0",
        f"google-adk raised {type(exc).__name__} during {what}: {exc}",
        expected="no exception",
        observed=f"{type(exc).__name__}: {exc}",
        details={"cause": "exception", "exception": type(exc).__name__},
    )


def recorded_summary_sizes(
    session: Session, texts: Session | None = None
) -> tuple[tuple[float, float, int], ...]:
    """The summaries ``session`` stores as (start, end, characters in ADK's
    size check), in order; ``texts``: the session their texts are read from,
    when ``session``'s were replaced (an anonymised copy of it)."""
    from .adk import serialized_chars

    ranges = [s.compaction for s in session if s.compaction is not None]
    words = [s.compaction.summary for s in (texts or session) if s.compaction is not None]
    return tuple(
        (c.start, c.end, serialized_chars(text)) for c, text in zip(ranges, words, strict=True)
    )


def ended_by_failure(last: Step, before: Step | None = None) -> bool:
    """Whether an invocation whose last event is ``last`` (``before``: the
    event just before it) failed, so ADK ran no compaction at its end: ADK
    sealed it as aborted (:data:`ABORT_ERROR`), a tool raised
    (:func:`tool_failed`), or a model call raised. The node runner stores a
    content-less ``Event(error_code=<status or class name>)`` for any
    exception (``workflow/_node_runner.py``, 2.x) and ``run_async`` raises,
    so the Runner's end-of-invocation compaction does not run
    (``Runner._run_with_trace``). An error code the model itself sets comes
    with a response it sent, and the invocation completes: a finish or block
    reason of ``google.genai`` (:func:`~compaction_harness.sdk.python.adk.model_set_error`)."""
    if last.error is None:
        return False
    if last.error == ABORT_ERROR or tool_failed(last, before):
        return True
    from .adk import model_set_error

    silent = last.text is None and not last.calls and not last.responses
    return silent and not model_set_error(last.error)


def recorded_case(
    session: Session,
    config: Mapping[str, int | None],
    *,
    agents: Sequence[str] = (),
    invariants: tuple[str, ...] | None = None,
    texts: Session | None = None,
    evidence: bool = True,
) -> PipelineCase:
    """A session that ADK's ``Runner`` recorded, as a case to replay with the
    configuration it ran with (``config``: the keys of :data:`CONFIG_KEYS`,
    None where unset) and its app's agents (``agents``, the root first;
    default :func:`recorded_agents`).

    The compaction events the run stored are left out: the replay runs ADK's
    compaction with the same configuration, at the same points (an
    invocation ends after the last event of each run of one invocation id,
    and before a user's event that resumes it, see :func:`resumes_or_opens`;
    a reply is preceded by its model call), and judges what it makes. Every
    other event is appended as recorded (ids, authors, times, token counts).

    An invocation that ended by failing (see :func:`ended_by_failure`) ends
    without compaction: the Runner compacts after the agent's events only
    when the run completes and was not aborted (``Runner._run_with_trace``,
    2.x), and a tool's exception propagates out of ``run_async``.

    The summaries the replay makes have the sizes of the run's
    (``summary_sizes``; ``texts``: the session their texts are read from,
    default ``session``), and their ranges are compared with the run's
    (``recorded``) when ``evidence``.
    """
    steps = tuple(s for s in session if s.compaction is None)
    ends = [
        k + 1
        for k in range(len(steps))
        if (k + 1 == len(steps) or resumes_or_opens(steps[k], steps[k + 1]))
        and not ended_by_failure(steps[k], steps[k - 1] if k else None)
    ]
    full = {key: config.get(key) for key in CONFIG_KEYS}
    unknown = sorted(set(config) - set(CONFIG_KEYS))
    if unknown:
        raise ModelError(f"config: unknown key {unknown[0]!r} (expected {', '.join(CONFIG_KEYS)})")
    return PipelineCase(
        full,
        Session(steps),
        tuple(ends),
        invariants=invariants,
        agents=tuple(agents) or recorded_agents(session),
        summary_sizes=recorded_summary_sizes(session, texts),
        recorded=tuple(summary_ranges(session)) if evidence else None,
    )
