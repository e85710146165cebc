"""The pipeline: real sessions through many invocations and compactions.

A Hypothesis ``RuleBasedStateMachine`` appends what ADK's runtime appends
(user messages, agent-started invocations, orphan responses, model text,
single and parallel calls answered at once, later by the client -- an
invocation that opens with the function response -- or never, long-running
ones with or without an interim result, tool confirmations and auth requests
answered by the user in a later invocation, a ParallelAgent fan-out on
branches, rewinds). Compaction runs where ADK runs it: token-threshold
compaction before every model call, the runner's post-invocation compaction
when an invocation ends; both on a real ``InMemorySessionService`` session
with a real ``App`` and ``EventsCompactionConfig``. P1 to P6 are checked at
every model call and invocation end, P7 once per run
(``compaction_harness.pipeline``). A failing run raises
``InvariantViolation`` with the run so far, which the plugin writes as a
``pipeline`` fixture.
"""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import assume, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from compaction_harness.adk import (
    ADK_RELEASE,
    NotApplicable,
    _helper,
    helper_availability,
    unsupported,
)
from compaction_harness.checks import met
from compaction_harness.known_faults import matching_fault
from compaction_harness.model import (
    REQUEST_CONFIRMATION_CALL,
    REQUEST_CREDENTIAL_CALL,
    Call,
    Response,
    Step,
)
from compaction_harness.pipeline import PipelineRun, chosen_invariants
from compaction_harness.unit import InvariantViolation

E_MAX = 6  # events one invocation appends at most (the machine's preconditions keep it)
CAMPAIGN_ROUND = 25  # runs per round under a random profile

try:
    _helper("_run_compaction_for_sliding_window")
    _MISSING = None
except NotApplicable as exc:
    _MISSING = str(exc)
_HAS_TOKEN = helper_availability()["_events_to_compact_for_token_threshold"] is None
# Rules whose events a release cannot represent are left out (rewinds arrived
# after 1.16.0, for one).
_CAN_REWIND = unsupported(Step("r1", "user", 1.0, rewind_before="i1")) is None
_CAN_ASK = all(
    unsupported(Step("i1", "agent", 1.0, responses=(Response("c", "t"),), **request)) is None
    for request in ({"confirmations": ("c",)}, {"auth_requests": ("c",)})
)
_CAN_BRANCH = unsupported(Step("i1", "a", 1.0, text="a", branch="team.a")) is None
SLIDING = st.fixed_dictionaries(
    {
        "compaction_interval": st.integers(1, 3),
        "overlap_size": st.integers(0, 2),
        "token_threshold": st.none(),
        "event_retention_size": st.none(),
    }
)
TOKEN = st.fixed_dictionaries(
    {
        "compaction_interval": st.none(),
        "overlap_size": st.none(),
        "token_threshold": st.integers(20, 80),
        "event_retention_size": st.integers(0, 3),
    }
)
BOTH = st.fixed_dictionaries(
    {
        "compaction_interval": st.integers(1, 3),
        "overlap_size": st.integers(0, 2),
        "token_threshold": st.integers(20, 80),
        "event_retention_size": st.integers(0, 3),
    }
)
# Token-threshold compaction arrived in 1.26.0: older releases get sliding windows only.
CONFIGS = st.one_of(SLIDING, TOKEN, BOTH) if _HAS_TOKEN else SLIDING


def config_kind(config) -> str:
    sliding = config["compaction_interval"] is not None
    token = config["token_threshold"] is not None
    return (
        "both triggers" if sliding and token else "sliding window" if sliding else "token threshold"
    )


class CompactionMachine(RuleBasedStateMachine):
    run: PipelineRun
    #: The invariants a run fails on (None: all of P1 to P7). The environment
    #: variable HARNESS_PIPELINE_INVARIANTS (e.g. "P3") narrows it, to ask
    #: whether one invariant alone finds a fault (the harness's pytest plugin
    #: has refused unknown names already).
    only: frozenset[str] | None = frozenset(chosen_invariants()) or None
    #: How many runs started, for the campaign summary (a state machine has no
    #: Hypothesis handle for the plugin to count examples through).
    runs = 0
    #: Runs per label, over all runs so far (the campaign summary shows the
    #: known-fault ones).
    tally: Counter[str] = Counter()

    def __init__(self) -> None:
        super().__init__()
        self.reported: set[str] = set()

    def label(self, text: str) -> None:
        """Report what a rule did (Hypothesis's ``event``: ``--hypothesis-show-statistics``),
        once per run."""
        event(text)
        if text not in self.reported:
            self.reported.add(text)
            type(self).tally[text] += 1

    @initialize(config=CONFIGS)
    def configure(self, config):
        type(self).runs += 1
        try:
            self.run = PipelineRun(config, E_MAX)
        except NotApplicable:
            assume(False)  # a configuration this release does not accept
        self.label(f"config: {config_kind(config)}")
        self.clock = 0.0
        self.invocations = 0
        self.inv: str | None = None
        self.opened = False
        self.count = 0
        self.serial = 0
        # Call events answered later (by the client) or never.
        self.pending: list[tuple[Call, ...]] = []
        # Tool calls waiting for the user (confirmation or credentials), each
        # with the synthetic long-running call that asks.
        self.asked: list[tuple[Call, Call]] = []
        self.known_stall = False
        self.round_tripped = False

    def teardown(self):
        if getattr(self, "run", None) is not None:
            self.run.close()

    # -- helpers ---------------------------------------------------------------
    def _append(self, author: str, **fields) -> None:
        self.clock += 1
        self.count += 1
        step = Step(self.inv or "", author, self.clock, **fields)
        opens = not self.opened
        self.opened = True
        self._raise_new(self.run.append(step, opens_invocation=opens))

    def _raise_new(self, violations) -> None:
        """Raise for violations no known upstream fault of this release explains."""
        new = []
        for v in violations:
            if self.only is not None and v.invariant not in self.only:
                continue
            if v.invariant == "P3" and self.known_stall:
                continue  # the same stall, already recognised in this run
            fault = matching_fault(self.run.case(), v, ADK_RELEASE)
            if fault is None:
                new.append(v)
                continue
            label = f"known upstream fault: {fault.id}"
            if label not in self.reported:
                met(fault.id)  # once per run, for the campaign summary
            self.label(label)
            self.known_stall |= v.invariant == "P3"
        if new:
            chosen = tuple(sorted(self.only)) if self.only else None
            raise InvariantViolation(self.run.case(chosen), self.run.outcome(new))

    def _fresh(self, n: int, name: str) -> tuple[Call, ...]:
        calls = []
        for _ in range(n):
            self.serial += 1
            calls.append(Call(f"c{self.serial}", name))
        return tuple(calls)

    # -- rules -------------------------------------------------------------------
    @precondition(lambda self: self.inv is None)
    @rule(
        opener=st.sampled_from(
            ["user", "agent", "client answer", "user answers", "orphan response"]
        ),
        which=st.integers(0, 3),
    )
    def start_invocation(self, opener, which):
        # A call answered later is answered by the client, opening an
        # invocation with the function response (ADK's resume shape); one
        # never answered is an orphan. A user answering a confirmation or
        # credential request answers the synthetic call; the tool then runs
        # and its real result answers the original call a second time.
        self.invocations += 1
        self.inv, self.opened, self.count = f"i{self.invocations}", False, 0
        if opener == "client answer" and self.pending:
            calls = self.pending.pop(which % len(self.pending))
            self.label("opener: client answer")
            self._append("user", responses=tuple(Response(c.id, c.name) for c in calls))
        elif opener == "user answers" and self.asked:
            call, request = self.asked.pop(which % len(self.asked))
            compacted = bool(self.run.pipeline.summaries)
            self.label("opener: user answers")
            if compacted:
                self.label("opener: user answers after a compaction")
            self._append("user", responses=(Response(request.id, request.name),))
            self._append("agent", responses=(Response(call.id, call.name),))
        elif opener == "orphan response":
            # Deliberately an answer with nothing to answer: a client posts the
            # result of a call the session never recorded (it was made in
            # another session, or the call event was lost).
            self.label("opener: orphan response")
            self.serial += 1
            self._append("user", responses=(Response(f"ghost{self.serial}", "lookup"),))
        elif opener == "agent":
            self.label("opener: agent")
        else:
            self.label("opener: user message")
            self._append("user", text=f"user {self.invocations}")

    @precondition(lambda self: self.inv is not None and self.count < E_MAX)
    @rule()
    def model_text(self):
        # The model's usage metadata: the size of the prompt it was sent.
        tokens = 10 * len(self.run.pipeline.prompt())
        self._append("agent", text=f"model {self.clock + 1:g}", prompt_tokens=tokens)

    @precondition(lambda self: self.inv is not None and self.count <= E_MAX - 2)
    @rule(
        parallel=st.integers(1, 2),
        fate=st.sampled_from(
            ["answered now", "answered later", "long-running", "long-running with interim"]
        ),
    )
    def call_tools(self, parallel, fate):
        # A long-running tool may report an interim result now (the same id
        # is answered again by the final result, later or never).
        self.label(f"call: {fate}{', parallel' if parallel > 1 else ''}")
        long_running = fate.startswith("long-running")
        calls = self._fresh(parallel, "export" if long_running else "lookup")
        lr = tuple(c.id for c in calls) if long_running else ()
        self._append("agent", calls=calls, long_running=lr)
        if fate in ("answered now", "long-running with interim"):
            self._append("agent", responses=tuple(Response(c.id, c.name) for c in calls))
        if fate != "answered now":
            self.pending.append(calls)

    @precondition(lambda self: _CAN_ASK and self.inv is not None and self.count <= E_MAX - 3)
    @rule(kind=st.sampled_from(["tool confirmation", "auth request"]))
    def ask_the_user(self, kind):
        # The tool's response carries the pending request
        # (EventActions.requested_tool_confirmations / requested_auth_configs);
        # the framework then appends the synthetic long-running call that asks
        # (generate_request_confirmation_event / generate_auth_event), and the
        # invocation waits for the user.
        self.label(f"ask the user: {kind}")
        confirm = kind == "tool confirmation"
        (call,) = self._fresh(1, "transfer" if confirm else "calendar")
        self._append("agent", calls=(call,))
        pending = {"confirmations" if confirm else "auth_requests": (call.id,)}
        self._append("agent", responses=(Response(call.id, call.name),), **pending)
        self.serial += 1
        name = REQUEST_CONFIRMATION_CALL if confirm else REQUEST_CREDENTIAL_CALL
        request = Call(f"adk-{self.serial}", name)
        self._append("agent", calls=(request,), long_running=(request.id,))
        self.asked.append((call, request))
        # The request event is a final response (it has long_running_tool_ids):
        # the invocation stops there and waits for the user.
        self.end_invocation()

    @precondition(lambda self: _CAN_BRANCH and self.inv is not None and self.count <= E_MAX - 2)
    @rule(order=st.sampled_from(["ab", "ba"]))
    def fan_out(self, order):
        # A ParallelAgent "team" runs sub-agents a and b, each on a branch of
        # its own (ADK's _create_branch_ctx_for_sub_agent: "team.a", "team.b");
        # each answers in text, in either order.
        self.label("fan-out to branches")
        for name in order:
            self._append(name, text=f"{name} says {self.clock + 1:g}", branch=f"team.{name}")

    @precondition(lambda self: _CAN_REWIND and self.inv is None and self.invocations > 0)
    @rule(back=st.integers(1, 3))
    def rewind(self, back):
        # ADK's Runner.rewind_async appends one user event, in an invocation of
        # its own, naming the invocation to rewind before.
        self.label("rewind")
        target = f"i{max(1, self.invocations - back + 1)}"
        self.invocations += 1
        self.inv, self.opened, self.count = f"r{self.invocations}", False, 0
        self._append("user", rewind_before=target)
        self.end_invocation()

    @precondition(
        lambda self: self.inv is None and self.run.pipeline.summaries and not self.round_tripped
    )
    @rule()
    def database_round_trip(self):
        # Once per run: a SQLite round trip costs a tenth of a second or more.
        self.round_tripped = True
        try:
            self._raise_new(self.run.database_round_trip())
            self.label("database round trip")
        except NotApplicable as exc:
            self.label(f"not applicable: {exc}")

    @precondition(lambda self: self.inv is not None and self.count >= 1)
    @rule()
    def end_invocation(self):
        self.inv = None
        made, stale_checks = len(self.run.pipeline.summaries), self.run.stale_checks
        self._raise_new(self.run.end_invocation())
        if len(self.run.pipeline.summaries) > made:
            self.label(f"summary made ({config_kind(self.run.config)})")
        if self.run.stale_checks > stale_checks:
            self.label("token trigger checked without stale counts")

    @invariant()
    def machine_bounds_hold(self):
        # Not an ADK invariant: the machine's own promise behind P3's bound.
        assert not hasattr(self, "count") or self.count <= E_MAX


@pytest.mark.property
@pytest.mark.skipif(_MISSING is not None, reason=f"not applicable: {_MISSING}")
def test_pipeline_meets_p1_to_p7() -> None:
    # A plain function (not the generated TestCase), so the harness's plugin
    # can run it as a campaign and write its failures as fixtures.
    # A third of the profile's examples: each step drives real ADK compaction
    # and prompt assembly, and a run may take a database round trip. Random
    # profiles (a campaign's rounds) take rounds of at most 25 runs, a few
    # seconds each, so the campaign keeps to its budget.
    current = settings.default
    runs = max(1, current.max_examples // 3)
    if not current.derandomize:
        runs = min(runs, CAMPAIGN_ROUND)
    run_state_machine_as_test(CompactionMachine, settings=settings(current, max_examples=runs))


# The campaign summary counts a state machine's runs through this (pytest_plugin).
test_pipeline_meets_p1_to_p7.examples_run = lambda: CompactionMachine.runs
test_pipeline_meets_p1_to_p7.labels = lambda: CompactionMachine.tally
