"""Cost profiles: what compaction costs and saves, invocation by invocation.

A profile runs a workload on real ADK and measures, at every invocation's
end (where the ``Runner`` runs its post-invocation compaction,
``_run_compaction_for_sliding_window`` in ``google.adk.apps.compaction``):

* the prompt's size before and after compaction,
* the summariser's calls (``BaseEventsSummarizer.maybe_summarize_events``),
  the size of what it was given and the size of the summaries it wrote,
* and the running totals of the last three.

Workloads: a script fixture (replayed on the emulating driver,
:mod:`compaction_harness.sdk.python.driver`, whichever driver it records), a
recorded-session pipeline fixture (replayed as
:func:`compaction_harness.sdk.python.pipeline.run_pipeline_case` replays it), or a
seeded script of plain invocations (:func:`seeded_script`). The profile
measures and never judges: no invariant is checked (``replay`` does that),
and ADK's compaction, prompt assembly and session service run exactly as
when they are judged.

Units: tokens of the harness's token model, the one the emulating driver
gives the model's usage metadata: characters as ADK's own estimate counts
them (``_count_chars_in_content`` in ``google/adk/apps/compaction.py``, 2.x:
text, tool names, the JSON of arguments and responses), four characters a
token, rounded down. A prompt's tokens also count the script's system
instruction and tool declarations (``ScriptConfig.system_chars`` and
``tools_chars``), which ADK's estimate leaves out. The prompt is the root
agent's (``agent``, no branch), as ADK's contents assembly builds it
(``_get_contents``).

Each row of a profile is one invocation end. An invocation that a client's
answer resumes ends again and has a row of its own, with the same
invocation number. Where an invocation ends without the runner's compaction
(the script's tool process died; a recorded session stops mid-invocation),
the row says so (``runner_compaction`` false).
"""

from __future__ import annotations

import json
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from ..sdk.python.pipeline import PipelineRun
from ..spec.pipeline_case import PipelineCase
from ..spec.scripts import Calls, End, Open, Script, ScriptConfig, Text

__all__ = [
    "CONFIGS",
    "STANDARD_INVOCATIONS",
    "STANDARD_SEED",
    "TOKEN_CHARS",
    "CostProfile",
    "InvocationCost",
    "ProfileError",
    "plot_profile",
    "profile_case",
    "profile_pipeline_case",
    "profile_script",
    "render_table",
    "seeded_script",
    "standard_costs",
]

#: Characters per token in the harness's token model (ADK estimates tokens
#: as characters / 4).
TOKEN_CHARS = 4

#: The seeded workload's system instruction and tool declarations, in
#: characters: 500 and 300 tokens in every prompt, as an agent with a page of
#: instructions and a handful of tools has.
_SYSTEM_CHARS = 2_000
_TOOLS_CHARS = 1_200
#: The token-threshold configurations' trigger: compact once the newest prompt
#: count reaches 2000 tokens (about three invocations of the seeded workload),
#: keeping the newest 2 events.
_THRESHOLD = 2_000
_RETENTION = 2
#: Releases 1.26.0 to 2.3.0 (of those seen installed; 2.6.1 accepts it) refuse
#: a token threshold without a sliding window
#: (``EventsCompactionConfig.compaction_interval`` is required there), so the
#: token-threshold configurations carry one that never fires: every 10000
#: invocations, more than a profile runs. On 2.13.0 the figures are the same
#: with it and without it (measured on the standard workload).
_NEVER = 10_000

#: The standard configurations, by the name ``profile --config`` takes:
#: ``sliding`` (a sliding window: compaction every 2 invocations, the newest
#: compacted invocation summarised again), ``token-small`` (the token
#: threshold, summaries of a few words: ``summary="tiny"``) and
#: ``token-large`` (the same trigger, each summary larger than the threshold
#: by itself: ``summary="large"``, see ``adk.summary_text``); the token
#: configurations also carry a sliding window that never fires (``_NEVER``).
CONFIGS: dict[str, ScriptConfig] = {
    "sliding": ScriptConfig(
        compaction_interval=2,
        overlap_size=1,
        system_chars=_SYSTEM_CHARS,
        tools_chars=_TOOLS_CHARS,
    ),
    **{
        name: ScriptConfig(
            compaction_interval=_NEVER,
            overlap_size=0,
            token_threshold=_THRESHOLD,
            event_retention_size=_RETENTION,
            summary=summary,
            system_chars=_SYSTEM_CHARS,
            tools_chars=_TOOLS_CHARS,
        )
        for name, summary in (("token-small", "tiny"), ("token-large", "large"))
    },
}
#: The workload :func:`standard_costs` runs every configuration on.
STANDARD_SEED = 0
STANDARD_INVOCATIONS = 100


class ProfileError(Exception):
    """The workload cannot be profiled here (a release without event
    compaction, or one that refuses the configuration); one line."""


@dataclass(frozen=True)
class InvocationCost:
    """What one invocation end cost. Sizes in tokens (see the module docstring).

    Attributes:
        invocation: the invocation's number, from 1, in the order invocations
            were opened (a resumed invocation keeps its number).
        prompt_before: the root agent's prompt at the invocation's end, with
            the summaries this invocation made left out (before model calls
            and at its end): the prompt had it compacted nothing.
        prompt_after: the root agent's prompt at the invocation's end, after
            the runner's compaction: what the next invocation starts from.
        summariser_calls: the summariser's calls during the invocation.
        summariser_input: the events those calls were given (a rolling
            summary's seed included), as ADK's estimate counts them, per call
            rounded down; the summariser's own instruction is not counted.
        summary_tokens: the texts of the summaries stored, per summary
            rounded down: what the summaries add to the session.
        total_calls, total_input, total_summary: running totals of the three
            above, from the first invocation to this one.
        runner_compaction: whether the runner's post-invocation compaction
            ran at this end.
    """

    invocation: int
    prompt_before: int
    prompt_after: int
    summariser_calls: int
    summariser_input: int
    summary_tokens: int
    total_calls: int
    total_input: int
    total_summary: int
    runner_compaction: bool = True


@dataclass(frozen=True)
class CostProfile:
    """A workload's profile: one :class:`InvocationCost` per invocation end.

    ``source`` names the workload, ``config`` is the script configuration's
    JSON form (a pipeline fixture's: its ``EventsCompactionConfig`` triggers),
    ``driver`` what executed it (``emulated``, or ``pipeline`` for a recorded
    session), ``stopped`` why it ended early (ADK raised; None when it ran
    to the end), ``seconds`` the wall-clock time it took.
    """

    source: str
    adk_release: str
    driver: str
    config: dict[str, Any]
    rows: tuple[InvocationCost, ...]
    stopped: str | None = None
    seconds: float = field(default=0.0, compare=False)

    @property
    def summariser_calls(self) -> int:
        return self.rows[-1].total_calls if self.rows else 0

    @property
    def calls_per_100(self) -> float:
        """Summariser calls per 100 invocation ends (0.0 with no rows)."""
        return round(100 * self.summariser_calls / len(self.rows), 1) if self.rows else 0.0

    @property
    def steady_state_prompt(self) -> int:
        """The median ``prompt_after`` over the last half of the rows (the
        middle row included when their number is odd), rounded down; 0 with
        no rows."""
        half = self.rows[len(self.rows) // 2 :]
        return int(statistics.median(r.prompt_after for r in half)) if half else 0

    def totals(self) -> dict[str, Any]:
        """The whole run: ``invocation_ends`` (rows), ``summariser_calls``,
        ``summariser_input`` and ``summary_tokens`` (tokens), the calls per
        100 invocation ends, ``steady_state_prompt`` and
        ``peak_prompt_before`` (the largest ``prompt_before``, tokens)."""
        last = self.rows[-1] if self.rows else None
        return {
            "invocation_ends": len(self.rows),
            "summariser_calls": self.summariser_calls,
            "summariser_input": last.total_input if last else 0,
            "summary_tokens": last.total_summary if last else 0,
            "summariser_calls_per_100": self.calls_per_100,
            "steady_state_prompt": self.steady_state_prompt,
            "peak_prompt_before": max((r.prompt_before for r in self.rows), default=0),
        }

    def to_json(self) -> dict[str, Any]:
        """The JSON form ``profile --json`` prints: ``source``,
        ``adk_release``, ``driver``, ``config``, ``units``, ``invocations``
        (one object per row, the fields of :class:`InvocationCost`),
        ``totals`` and ``stopped``."""
        return {
            "source": self.source,
            "adk_release": self.adk_release,
            "driver": self.driver,
            "config": self.config,
            "units": "tokens: ADK's character estimate (system instruction and tool "
            f"declarations included in prompts) / {TOKEN_CHARS}, rounded down",
            "invocations": [asdict(r) for r in self.rows],
            "totals": self.totals(),
            "stopped": self.stopped,
        }


#: The table's columns: (heading, InvocationCost field).
COLUMNS = (
    ("inv", "invocation"),
    ("prompt_before", "prompt_before"),
    ("prompt_after", "prompt_after"),
    ("calls", "summariser_calls"),
    ("input", "summariser_input"),
    ("summary", "summary_tokens"),
    ("total_calls", "total_calls"),
    ("total_input", "total_input"),
    ("total_summary", "total_summary"),
)


def render_table(profile: CostProfile) -> str:
    """The profile as a text table: a header naming the workload, release and
    units, one right-aligned row per invocation end (``*`` after the
    invocation number: no runner compaction at that end), and the totals."""
    config = ", ".join(f"{k}={v}" for k, v in profile.config.items() if v is not None)
    how = "emulating driver" if profile.driver == "emulated" else "recorded session"
    lines = [
        f"cost profile of {profile.source} on google-adk {profile.adk_release} ({how})",
        f"config: {config}",
        "tokens = ADK's character estimate / 4; prompt: the root agent's at each invocation "
        "end; calls, input, summary: the summariser's",
    ]
    cells = [[h for h, _ in COLUMNS]]
    for row in profile.rows:
        values = [str(getattr(row, name)) for _, name in COLUMNS]
        values[0] += "" if row.runner_compaction else "*"
        cells.append(values)
    widths = [max(len(c[k]) for c in cells) for k in range(len(COLUMNS))]
    for k, line in enumerate(cells):
        lines.append("  ".join(c.rjust(w) for c, w in zip(line, widths, strict=True)))
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    totals = profile.totals()
    ends, calls = totals["invocation_ends"], totals["summariser_calls"]
    lines.append(
        f"{ends} invocation end{'' if ends == 1 else 's'}, {calls} summariser "
        f"call{'' if calls == 1 else 's'} ({totals['summariser_calls_per_100']} per 100 "
        "invocation ends), steady-state prompt "
        f"{totals['steady_state_prompt']} tokens (median after compaction, last half), "
        f"peak before compaction {totals['peak_prompt_before']}"
    )
    if any(not r.runner_compaction for r in profile.rows):
        lines.append("* the invocation ended without the runner's compaction")
    return "\n".join(lines)


def config_named(text: str) -> ScriptConfig:
    """``profile --config``: a name of :data:`CONFIGS`, or a JSON object of a
    script configuration (your own trigger values: ``{"compaction_interval":
    3, "overlap_size": 1}``; also ``summary``, ``system_chars``,
    ``tools_chars``). Raises :class:`ProfileError` (one line) otherwise."""
    if text in CONFIGS:
        return CONFIGS[text]
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        raise ProfileError(
            f"--config {text!r}: expected one of {', '.join(CONFIGS)} or a JSON object of "
            'trigger values, such as \'{"compaction_interval": 3, "overlap_size": 1}\''
        ) from None
    from ..spec.model import ModelError

    try:
        config = ScriptConfig.from_json(data, "--config")
    except (ModelError, TypeError) as exc:
        raise ProfileError(str(exc).splitlines()[0]) from None
    if config.compaction_interval is None and config.token_threshold is None:
        raise ProfileError("--config: no trigger (compaction_interval or token_threshold)")
    return config


# -- workloads ----------------------------------------------------------------------
def seeded_script(seed: int, invocations: int, config: str | ScriptConfig) -> Script:
    """A reproducible workload of ``invocations`` plain invocations.

    Each invocation: a user message of 40 to 400 characters, up to two model
    turns of 1 to 3 parallel plain tool calls answered at once (each response
    100 to 1200 characters), a text reply of 80 to 800 characters, then the
    invocation ends. Sizes come from ``random.Random(seed)``: the same seed
    gives the same script on every machine and Python. ``config``: a name in
    :data:`CONFIGS` or a :class:`ScriptConfig`. Raises ``KeyError`` for an
    unknown name and ``ValueError`` for fewer than one invocation.
    """
    if invocations < 1:
        raise ValueError(f"expected at least 1 invocation, got {invocations}")
    chosen = CONFIGS[config] if isinstance(config, str) else config
    rng = random.Random(seed)
    ops: list[Any] = []
    for _ in range(invocations):
        ops.append(Open("user", rng.randint(40, 400)))
        for _ in range(rng.randint(0, 2)):
            ops.append(Calls(rng.randint(1, 3), "plain", "now", rng.randint(100, 1200)))
        ops.append(Text(rng.randint(80, 800)))
        ops.append(End())
    return Script(chosen, tuple(ops))


# -- measuring ----------------------------------------------------------------------
class _Measured(PipelineRun):
    """A :class:`~compaction_harness.sdk.python.pipeline.PipelineRun` that runs ADK's
    compaction and the runner's post-invocation compaction as the checked run
    does, and judges nothing."""

    def check_request(self, agent_name: str = "agent", branch: str | None = None) -> list:
        return []

    def _compact(self, compact: Callable[[], Any], **_: Any) -> list:
        compact()
        return []

    def end_invocation(self) -> list:
        self.opener = None
        self.ends.append(len(self.appended))
        self.pipeline.end_invocation()
        return []


class _Meter:
    """Reads one row off the pipeline at each invocation end."""

    def __init__(self, run: PipelineRun) -> None:
        self.run = run
        self.rows: list[InvocationCost] = []
        self._calls = 0
        self._seen: set[str] = set()

    def row(self, invocation: int, *, runner_compaction: bool = True) -> None:
        pipeline = self.run.pipeline
        # The summaries ADK's compaction stored since the last row (a client's
        # compaction record is appended, not made).
        old = set(pipeline.appended_ids) | self._seen
        made = [
            e
            for e in pipeline.session.events
            if e.actions and e.actions.compaction and e.id not in old
        ]
        self._seen.update(e.id for e in made)
        calls = len(pipeline.summaries) - self._calls
        given = pipeline.summary_input_chars[self._calls :]
        self._calls = len(pipeline.summaries)
        base = self.run.base_chars
        before = (base + pipeline.prompt_chars(leave_out={e.id for e in made})) // TOKEN_CHARS
        after = (base + pipeline.prompt_chars()) // TOKEN_CHARS
        summary = sum(_summary_chars(e) // TOKEN_CHARS for e in made)
        given_tokens = sum(chars // TOKEN_CHARS for chars in given)
        last = self.rows[-1] if self.rows else None
        self.rows.append(
            InvocationCost(
                invocation=invocation,
                prompt_before=before,
                prompt_after=after,
                summariser_calls=calls,
                summariser_input=given_tokens,
                summary_tokens=summary,
                total_calls=(last.total_calls if last else 0) + calls,
                total_input=(last.total_input if last else 0) + given_tokens,
                total_summary=(last.total_summary if last else 0) + summary,
                runner_compaction=runner_compaction,
            )
        )


def _summary_chars(event: Any) -> int:
    content = event.actions.compaction.compacted_content
    return sum(len(p.text or "") for p in (content.parts or [])) if content else 0


def _adk() -> Any:
    """The ADK adapter, or :class:`ProfileError` on a release without event
    compaction (``google.adk.apps.compaction``: 1.16.0 and later)."""
    from importlib import metadata

    try:
        from ..sdk.python import adk
    except ImportError as exc:
        try:
            release = metadata.version("google-adk")
        except metadata.PackageNotFoundError:
            raise ProfileError(f"google-adk is not installed here: {exc}") from None
        raise ProfileError(
            f"google-adk {release} has no event compaction (google.adk.apps.compaction, "
            f"1.16.0 and later): {exc}"
        ) from None
    return adk


def _crash_note(what: str, exc: BaseException) -> str:
    first = str(exc).splitlines()[0] if str(exc) else ""
    return f"google-adk raised {type(exc).__name__} during {what}: {first}"


def profile_script(script: Script, *, source: str = "a script") -> CostProfile:
    """The cost profile of ``script`` on the emulating driver (its
    ``config.driver`` is ignored, and the profile's ``config`` says the
    emulating driver ran it). An exception ADK raises ends the profile
    there (``stopped`` says where). Raises :class:`ProfileError` on a
    release without event compaction or that refuses the configuration."""
    adk = _adk()
    from ..sdk.python.driver import ScriptRun

    class Profiled(ScriptRun):
        pipeline_run = _Measured

        def _end(self, *, compaction: bool = True) -> list:
            running = self.running
            found = super()._end(compaction=compaction)
            if running is not None:
                meter.row(self.invocations.index(running) + 1, runner_compaction=compaction)
            return found

    started = time.perf_counter()
    try:
        run = Profiled(script)
    except adk.NotApplicable as exc:
        raise ProfileError(str(exc)) from None
    meter = _Meter(run.run)
    stopped = None
    try:
        for index, op in enumerate(script.operations):
            try:
                run.apply(index, op)
            except Exception as exc:
                stopped = _crash_note(f"operation {index} ({op.op!r})", exc)
                break
        else:
            try:
                run.finish()
            except Exception as exc:
                stopped = _crash_note("the last invocation's end", exc)
    finally:
        run.close()
    return CostProfile(
        source,
        adk.ADK_RELEASE,
        "emulated",
        replace(script.config, driver="emulated").to_json(),
        tuple(meter.rows),
        stopped,
        round(time.perf_counter() - started, 2),
    )


def profile_pipeline_case(case: PipelineCase, *, source: str = "a recorded session") -> CostProfile:
    """The cost profile of a recorded-session pipeline case: its events are
    appended as :func:`~compaction_harness.sdk.python.pipeline.run_pipeline_case`
    appends them (a model event after a model call, before which
    token-threshold compaction runs), with the runner's compaction at each of
    ``case.ends``; events after the last end make a last row without it.
    Errors as :func:`profile_script`."""
    adk = _adk()
    started = time.perf_counter()
    try:
        run = _Measured(case.config, case.max_invocation_events)
    except adk.NotApplicable as exc:
        raise ProfileError(str(exc)) from None
    meter = _Meter(run)
    numbers: dict[str, int] = {}
    stopped = None
    ends = list(case.ends)
    previous: str | None = None
    try:
        for k in range(len(case.session) + 1):
            while ends and ends[0] == k:
                ends.pop(0)
                previous = None
                try:
                    run.end_invocation()
                except Exception as exc:
                    stopped = _crash_note(f"the end of an invocation (after step {k - 1})", exc)
                    break
                meter.row(_last_invocation(run, numbers))
            if stopped or k == len(case.session):
                break
            step = case.session[k]
            opens = step.invocation != previous
            previous = step.invocation
            numbers.setdefault(step.invocation, len(numbers) + 1)
            try:
                run.append(step, opens_invocation=opens)
            except Exception as exc:
                stopped = _crash_note(f"appending step {k}", exc)
                break
        if not stopped and case.session and (not case.ends or case.ends[-1] < len(case.session)):
            meter.row(_last_invocation(run, numbers), runner_compaction=False)
    finally:
        run.close()
    return CostProfile(
        source,
        adk.ADK_RELEASE,
        "pipeline",
        dict(case.config),
        tuple(meter.rows),
        stopped,
        round(time.perf_counter() - started, 2),
    )


def _last_invocation(run: PipelineRun, numbers: dict[str, int]) -> int:
    return numbers.get(run.appended[-1].invocation, 0) if run.appended else 0


def profile_case(case: Any, *, source: str) -> CostProfile:
    """:func:`profile_script` or :func:`profile_pipeline_case`, by the case's
    kind; a ``ProfileError`` for any other kind of case."""
    if isinstance(case, Script):
        return profile_script(case, source=source)
    if isinstance(case, PipelineCase):
        return profile_pipeline_case(case, source=source)
    raise ProfileError(
        f"{source}: a {type(case).__name__}; profile takes script and pipeline fixtures "
        "(unit, token and metamorphic fixtures are single helper calls, with no invocations)"
    )


# -- the release matrix -------------------------------------------------------------
def standard_costs(
    release: str | None = None,
    *,
    seed: int = STANDARD_SEED,
    invocations: int | None = None,
) -> dict[str, Any]:
    """The standard cost figures of the installed google-adk release.

    Runs each of :data:`CONFIGS` on ``seeded_script(seed, invocations)`` (the
    fixed workload: seed 0, 100 invocations) and returns::

        {"adk_release": "2.13.0", "seed": 0, "invocations": 100,
         "configurations": {
             "sliding": {"summariser_calls_per_100": 50.0,
                         "steady_state_prompt": 1234,   # tokens
                         "summariser_calls": 50, "summariser_input": ...,
                         "summary_tokens": ..., "peak_prompt_before": ...,
                         "seconds": 3.1},
             "token-small": {...},
             "token-large": {"not_applicable": "google-adk 1.24.0 has no ..."}}}

    A configuration the release cannot run has ``not_applicable`` (token
    threshold before 1.26.0); one where ADK raised has ``stopped`` beside
    the figures up to there. ``invocations``: None for
    :data:`STANDARD_INVOCATIONS`. ``release``: the release the caller expects;
    one process has one ADK, so a different installed release raises
    :class:`ProfileError` (run it in that release's environment), as does a
    release without event compaction.
    """
    adk = _adk()
    invocations = invocations or STANDARD_INVOCATIONS
    if release is not None and release != adk.ADK_RELEASE:
        raise ProfileError(
            f"google-adk {adk.ADK_RELEASE} is installed, not {release}: run standard_costs "
            "in that release's environment"
        )
    out: dict[str, Any] = {
        "adk_release": adk.ADK_RELEASE,
        "seed": seed,
        "invocations": invocations,
        "configurations": {},
    }
    for name in CONFIGS:
        script = seeded_script(seed, invocations, name)
        try:
            profile = profile_script(script, source=f"seed {seed}, {name}")
        except ProfileError as exc:
            out["configurations"][name] = {"not_applicable": str(exc)}
            continue
        figures = {
            key: value for key, value in profile.totals().items() if key != "invocation_ends"
        }
        figures["seconds"] = profile.seconds
        if profile.stopped:
            figures["stopped"] = profile.stopped
        out["configurations"][name] = figures
    return out


# -- the plot -------------------------------------------------------------------------
class MissingExtra(ProfileError):
    """matplotlib is not installed: the ``report`` extra."""


def plot_profile(profile: CostProfile, path: str) -> None:
    """Write ``profile`` as a PNG at ``path``: the prompt before and after
    compaction (tokens) over the invocation ends (with the configuration's
    ``token_threshold`` as a dashed line), and below it the summariser's
    calls at each end. Needs matplotlib (the ``report`` extra):
    :class:`MissingExtra` without it. Raises ``OSError`` when ``path``
    cannot be written."""
    pyplot = _pyplot()
    from matplotlib.ticker import MaxNLocator

    x = list(range(1, len(profile.rows) + 1))
    figure, (top, bottom) = pyplot.subplots(
        2, 1, sharex=True, figsize=(9, 6), gridspec_kw={"height_ratios": [3, 1]}
    )
    try:
        top.plot(x, [r.prompt_before for r in profile.rows], label="before compaction", lw=1)
        top.plot(x, [r.prompt_after for r in profile.rows], label="after compaction", lw=1.5)
        threshold = profile.config.get("token_threshold")
        if threshold:
            top.axhline(threshold, color="grey", ls="--", lw=1, label="token_threshold")
        top.set_ylabel("prompt (tokens)")
        top.set_title(f"{profile.source}: google-adk {profile.adk_release}", fontsize=10)
        top.legend(loc="upper left", fontsize=8)
        top.grid(alpha=0.3)
        bottom.bar(x, [r.summariser_calls for r in profile.rows], width=0.8, color="tab:red")
        bottom.set_ylabel("summariser calls")
        bottom.yaxis.set_major_locator(MaxNLocator(integer=True))  # calls are whole
        bottom.set_xlabel("invocation end")
        bottom.grid(alpha=0.3)
        figure.tight_layout()
        figure.savefig(path, dpi=100, format="png")
    finally:
        pyplot.close(figure)


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise MissingExtra(
            "--plot needs matplotlib: install the harness's `report` extra "
            "(pip install 'compaction-harness[report]')"
        ) from None
    matplotlib.use("Agg")
    from matplotlib import pyplot

    return pyplot


def dumps(profile: CostProfile) -> str:
    """:meth:`CostProfile.to_json` as indented JSON text."""
    return json.dumps(profile.to_json(), indent=2)


__all__ += ["COLUMNS", "MissingExtra", "dumps"]
