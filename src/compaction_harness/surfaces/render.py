"""A fixture for a person: what ``show`` prints (and the fault pages embed).

:func:`render_fixture` gives the header (where it was found, its known
fault as its SDK names it), the violations, and the annotated timeline of
its kind: a unit or token window with the reference's and ADK's cuts, a
recorded session's stored events and summaries, or a script with the
events it stored, each beside the operation that stored it. What is the
SDK's own (its release's name, a compactor, what it raised) is asked of
its entry of the driver registry (:mod:`compaction_harness.sdk.protocol`).
"""

from __future__ import annotations

from ..spec import reference
from ..spec.model import Session, _one_line, summary_number
from ..store.fixtures import Fixture

__all__ = ["render_fixture"]


def _length(value: object) -> int | None:
    return len(value) if isinstance(value, list) else None


def _pipeline_timeline(fixture: Fixture) -> list[str]:
    """A pipeline run as stored in the session: the appended events and, where
    ADK put them, the summaries with the events each was given (the numbering
    the violations use)."""
    case = fixture.case
    stored = fixture.observed.get("stored")
    summaries = fixture.observed.get("summaries", [])
    if not isinstance(stored, list):  # a fixture written before "stored" was recorded
        lines = [
            f"timeline (the events appended; summaries not shown; {_time_note(case.session)}):",
            case.render(),
        ]
        for n, given in enumerate(summaries):
            lines.append(f"summary#{n} was given the stored events {given}")
        return lines
    rendered = [line.split(None, 1)[1] for line in case.session.render().splitlines()]
    ends = list(case.ends)
    lines = [
        "timeline (numbered as stored, summaries included; an event the model wrote "
        "follows a model call, before which token-threshold compaction may run; "
        + _time_note(case.session)
        + "):"
    ]
    ended = False
    for position, entry in enumerate(stored):
        if isinstance(entry, int) and 0 <= entry < len(rendered):
            lines.append(f"#{position:<4}{rendered[entry]}")
            ended = (entry + 1) in ends
            if ended:
                lines.append("  ---- end of invocation: the runner's compaction runs")
            continue
        number = summary_number(str(entry))
        given = summaries[number] if number is not None and number < len(summaries) else []
        when = "at that end" if ended else "before the next model call"
        label = f"summary#{number}" if number is not None else _one_line(str(entry))
        lines.append(
            f"#{position:<4}{label}: a summary made {when}, given "
            + (", ".join(f"#{i}" for i in given) or "nothing")
        )
    lines.append(f"config: {dict(case.config)}")
    if getattr(case, "agents", ()):
        lines.append(f"agents: {', '.join(case.agents)} (root first)")
    return lines + _prompt_lines(fixture)


def _script_timeline(fixture: Fixture) -> list[str]:
    """A script fixture: the script, then the events it stored (as recorded
    when it failed), each with the operation that stored it, the summaries
    where ADK stored them with what each was given, and the prompt of the last
    check."""
    from ..spec.model import ModelError, render_step

    sdk = fixture.sdk_entry()
    script = sdk.script_of(fixture.case)
    lines = sdk.show_lines(fixture.case, fixture.observed)  # a compactor, what it raised
    lines.append("script (operations numbered; replay executes exactly these):")
    lines += ["  " + line for line in script.render().splitlines()]
    try:
        stored = Session.from_json(fixture.observed.get("session", {"steps": []}))
    except ModelError:
        stored = Session()
    origin = fixture.observed.get("origin", [])
    summaries = fixture.observed.get("summaries", [])
    seeds = fixture.observed.get("seeds", [])  # ADK-JS: earlier summaries given
    lines.append(
        f"events as stored when it failed (op = the operation that stored it; "
        f"{_time_note(stored)}):"
    )
    number = 0
    for position, step in enumerate(stored):
        made_by = origin[position] if position < len(origin) else None
        if step.compaction is not None and not isinstance(made_by, int):
            given = summaries[number] if number < len(summaries) else []
            earlier = seeds[number] if number < len(seeds) else []
            shown = (
                ", ".join([f"#{i}" for i in given] + [f"summary#{n}" for n in earlier]) or "nothing"
            )
            lines.append(f"#{position:<4}{render_step(step, stored.origin)}  <- given {shown}")
            number += 1
            continue
        op = f"op {made_by}" if isinstance(made_by, int) else "    "
        lines.append(f"#{position:<4}{op:<7}{render_step(step, stored.origin)}")
    return lines + _prompt_lines(fixture, width=120)


def _prompt_lines(fixture: Fixture, width: int | None = None) -> list[str]:
    """The prompt the fixture recorded at its last check, a line a content
    (each part cut to ``width`` characters when given); none when it has none."""
    prompt = fixture.observed.get("prompt")
    if not (isinstance(prompt, list) and prompt):
        return []
    lines = ["prompt at the last check (role: parts):"]
    for content in prompt:
        role, parts = content[0], content[1]
        shown = "; ".join(_one_line(" ".join(str(x) for x in part))[:width] for part in parts)
        lines.append(f"  {role}: {shown}")
    return lines


def _time_note(session: Session) -> str:
    return f"t = seconds after the first event, exactly; its timestamp is {session.origin!r}"


def render_fixture(fixture: Fixture) -> str:
    """The fixture for a person: header, violations, and the annotated timeline."""
    case = fixture.case
    if fixture.kind == "token":
        expected = _length(fixture.expected.get("range"))
        observed = _length(fixture.observed.get("range"))
    else:
        expected = fixture.expected.get("prefix_length")
        observed = fixture.observed.get("prefix_length")
    sdk = fixture.sdk_entry()
    lines = [
        f"fixture    {fixture.path}",
        f"invariant  {fixture.invariant}   found on {sdk.found_on(fixture.adk_release)}",
    ]
    if fixture.known_fault:
        fault = sdk.fault(fixture.known_fault)  # (title, what a user sees)
        title = f" ({fault[0]}; see docs/faults/{fixture.known_fault}.md)" if fault else ""
        lines.append(f"known upstream fault: {fixture.known_fault}{title}")
        if fault and fault[1]:
            lines.append(f"  what a user sees: {fault[1]}")
    if fixture.note:
        lines.append(f"note: {fixture.note}")
    lines += ["", "violations:"] + [f"  {v}" for v in fixture.violations] + [""]
    if fixture.kind == "pipeline":
        return "\n".join(lines + _pipeline_timeline(fixture))
    if fixture.kind == "script":
        return "\n".join(lines + _script_timeline(fixture))
    session, window = case.session, case.window
    lines.append(
        "timeline (W = in the compaction window; open = obligations still open after the "
        "event when no id is exempted as provably dead; " + _time_note(session) + "):"
    )
    dead = reference.provably_dead_call_ids(session, window)
    position = {step: pos for pos, step in enumerate(window)}
    for index, line in enumerate(session.render({i: "W" for i in window}).splitlines()):
        note = ""
        if index in position:
            pos = position[index]
            still_open = reference.open_obligations(session, window, pos + 1, exempt_dead=False)
            opened = sorted({o.id for o in still_open})
            note = f"   open={{{','.join(opened)}}}" if opened else ""
        lines.append(line + note)
        if index in position:
            cut = position[index] + 1
            if cut == expected:
                lines.append(f"  ---- reference cut: compact {expected} window event(s)")
            if cut == observed:
                lines.append(f"  ---- ADK cut: compacted {observed} window event(s)")
    if expected == 0:
        lines.append("  (reference: compact nothing)")
    if observed == 0:
        lines.append("  (ADK: compacted nothing)")
    if fixture.kind == "token":
        lines.append(f"event_retention_size: {fixture.case.retention}")
        lines.append(
            f"split (reference): {fixture.expected.get('split')}   "
            f"split (ADK): {fixture.observed.get('split')}"
        )
    lines.append(f"dead ids (reference): {sorted(dead) or 'none'}")
    if "dead_ids" in fixture.observed:
        lines.append(f"dead ids (ADK):       {fixture.observed['dead_ids'] or 'none'}")
    return "\n".join(lines)
