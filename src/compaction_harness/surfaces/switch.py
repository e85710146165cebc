"""One switch for the fixed SDK: ``FIXES=all``, ``FIXES=all,-name`` or ``FIXES=name,name``.

``make test``, ``make fuzz``, ``make replay`` and ``make matrix`` take
``FIXES=`` and hand it on as the environment variable ``HARNESS_FIXES``; the
pytest plugin applies those fixes for the whole session (``make test
FIXES=...`` collects the part of the gate that judges ADK: the properties
and the tests marked ``judges_adk``, the fixture replays; the rest is about
the harness and the release as published), and ``replay``,
``show`` and ``minimize`` take ``--fixes`` (default: ``HARNESS_FIXES``).
``all`` is every registered fix the installed release can take, ``all,-a,-b``
all of them but ``a`` and ``b`` (the SDK with those faults alone); empty or
``none`` is the release as published. ADK-JS's fixes (``sdks/adk-js/fixes/``,
:mod:`compaction_harness.sdk.js.js_fixes`) are read from the same variable by the harness's ADK-JS
driver; a name of ADK-JS's fix index is accepted here and left to it, and
an ADK-JS fixture is judged with the ADK-JS fixes the variable asks for.

With fixes applied, a fixture marked with a known fault whose fix is among
them is expected to hold: :func:`judged_with_fixes` says "holds with fix X"
where the verdict without the switch would be XPASS ("the fault no longer
shows"), and names a fixture that still fails as a wrong fix or a second
fault. Under ``all``, :func:`gate_expectation` asks every fault fixture to
hold; only a fault whose record says why no fix can exist is excused.

Errors: :class:`FixesError`, one line naming the fix (an unknown name, or a
fix the installed release cannot take).
"""

from __future__ import annotations

import difflib
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

__all__ = [
    "ENV",
    "FixesError",
    "described",
    "from_environment",
    "gate_expectation",
    "judged_with_fixes",
    "moved_by_fixes",
    "own_fixes",
    "parse",
    "parse_js",
    "unknown_fix",
]

#: The environment variable that carries ``FIXES=`` to pytest and subprocesses.
ENV = "HARNESS_FIXES"


class FixesError(ValueError):
    """A fix that cannot be applied: unknown, or not for the installed release."""


def parse(spec: str | None, *, origin: str = ENV) -> tuple[str, ...]:
    """The fixes ``spec`` names, checked against the installed release:
    ``None``, ``""`` or ``none`` -> (), ``all`` -> every registered fix the
    release can take (registry order), ``all,-a,-b`` -> the same but ``a`` and
    ``b`` (the SDK with those faults alone: ``bench/fault_times.py``), else
    comma-separated names, each a registered fix the release can take.
    ``origin`` names the setting in the error (``HARNESS_FIXES``,
    ``--fixes``)."""
    from ..sdk.python.adk import ADK_RELEASE
    from ..sdk.python.fixes import FIXES, unavailable

    text = (spec or "").strip()
    if text in ("", "none"):
        return ()
    if text == "all":
        return tuple(n for n in FIXES if unavailable(n) is None)
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:  # "," alone: no fix named
        return ()
    js = _js_fix_names()
    if names[0] == "all":  # all,-name,...: every fix the release can take but those
        left_out = names[1:]
        for name in left_out:
            if not name.startswith("-") or name[1:] in ("", "all"):
                raise FixesError(
                    f"{origin}={text}: after 'all' only fixes to leave out, each as -name"
                )
            if name[1:] not in FIXES and name[1:] not in js:
                raise unknown_fix(origin, name[1:], [*FIXES, *js], "faults")
        out = {name[1:] for name in left_out}
        return tuple(n for n in FIXES if n not in out and unavailable(n) is None)
    if "all" in names:
        raise FixesError(
            f"{origin}={text}: 'all' comes first (all, all,-name to leave fixes out, "
            "or names separated by ',')"
        )
    for name in names:
        if name not in FIXES and name in js:
            continue  # an ADK-JS fix: the Node driver reads HARNESS_FIXES itself
        if name not in FIXES:
            raise unknown_fix(origin, name, [*FIXES, *js], "faults")
        why = unavailable(name)
        if why is not None:
            raise FixesError(
                f"{origin}: google-adk {ADK_RELEASE} cannot take the fix {name}: {why}"
            )
    return tuple(dict.fromkeys(n for n in names if n in FIXES))


def unknown_fix(
    origin: str, name: str, known: Iterable[str], listing: str, *, noun: str = "fix"
) -> FixesError:
    """The one-line error for a fix name that is not registered: the name,
    the closest registered one (if any is close), and the command that lists
    them all (``python -m compaction_harness <listing>``), not the list
    itself, which runs to some 1,500 characters."""
    shown = name if len(name) <= 50 else name[:47] + "..."
    close = difflib.get_close_matches(name, sorted(set(known)), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return FixesError(
        f"{origin}: no {noun} named {shown!r}{hint}; "
        f"`python -m compaction_harness {listing}` lists them"
    )


def _js_fix_names() -> set[str]:
    """The fixes ADK-JS's index registers (``sdks/adk-js/fixes/index.json``)."""
    from ..faults.catalogue import _js_fixes

    return {name for names in _js_fixes().values() for name in names}


def from_environment() -> tuple[str, ...]:
    """:func:`parse` of ``HARNESS_FIXES`` (raises :class:`FixesError`)."""
    return parse(os.environ.get(ENV))


def described(names: Sequence[str], *, short: bool = False) -> str:
    """``with fixes a, b`` (``short``: ``with 8 fixes`` for more than one)."""
    if not names:
        return "with no fix (none of the registered fixes applies to this release)"
    if short and len(names) > 1:
        return f"with {len(names)} fixes"
    return f"with {'fix' if len(names) == 1 else 'fixes'} {', '.join(names)}"


def own_fixes(fault_id: str | None, names: Sequence[str]) -> tuple[str, ...]:
    """The fixes among ``names`` that remove ``fault_id`` (its own fixes,
    google-adk's or ADK-JS's)."""
    from ..sdk.js.js_fixes import js_fixes
    from ..sdk.python.fixes import fixes_for

    if not fault_id:
        return ()
    own = [f.name for f in fixes_for(fault_id)]
    own += [n for n, f in js_fixes().items() if fault_id in f.faults]
    return tuple(n for n in own if n in names)


def _names_for(fixture: Any, names: Sequence[str]) -> tuple[str, ...]:
    """The fixes ``fixture`` was replayed with, as its SDK's entry of the
    driver registry says (``Sdk.active_fixes``): ``names`` (google-adk's) for
    a google-adk fixture, the ADK-JS fixes ``HARNESS_FIXES`` asks for (the
    Node driver's) for an ADK-JS fixture."""
    entry = getattr(fixture, "sdk_entry", None)  # a stand-in of a test may have none
    return tuple(entry().active_fixes(tuple(names))) if entry else tuple(names)


def judged_with_fixes(fixture: Any, judged: Any, names: Sequence[str]) -> Any:
    """``judged`` (a :class:`~compaction_harness.surfaces.verdicts.FixtureVerdict` of
    ``fixture`` replayed with the fixes ``names`` applied) as a user of the
    switch reads it. A google-adk fixture marked with a fault whose fix is
    applied: ``ok`` "holds with fix X" when nothing shows (without the
    switch that is XPASS); ``XFAIL`` when only other known faults show;
    ``FAIL`` "still fails with fix X" when a violation no fix removes
    shows. A marked fixture that holds with fixes none of which is its
    fault's: ``ok``, saying so. Anything else is returned as it is."""
    from .verdicts import FixtureVerdict

    fault_id = getattr(fixture, "known_fault", None)
    names = _names_for(fixture, names)
    if not names or not fault_id:
        return judged
    verdict = judged.verdict
    own = own_fixes(fault_id, names)
    if not own:
        if judged.label == "XPASS" and not verdict.new and not verdict.known:
            # Other fixes removed what it showed: it is not (only) the fault it is marked with.
            return replace(
                judged,
                label="ok",
                reason=f"holds {described(names, short=True)}, none of them its fault "
                f"{fault_id}'s: they remove what it shows (it is marked with the wrong fault, "
                "or that fault's recogniser matched another's violation)",
            )
        return judged
    if judged.label == "NOREPRO":
        return judged
    fix = "+".join(own)
    if verdict.new:
        return FixtureVerdict(
            "FAIL",
            verdict,
            f"still fails with fix {fix} applied: a wrong fix, or a second fault no fix removes",
        )
    others = [f for f in verdict.faults if f != fixture.known_fault]
    if others:
        shown = ", ".join(f"{f} ({e})" for f, e in verdict.evidence.items())
        return FixtureVerdict(
            "XFAIL", verdict, f"holds with fix {fix} but for known upstream fault {shown}"
        )
    return replace(judged, label="ok", reason=f"holds with fix {fix}")


def moved_by_fixes(differs: str, names: Sequence[str]) -> str:
    """Why a recorded session replayed with the fixes ``names`` is not judged
    (``NOREPRO``), when the replay without them makes the summaries the run
    stored and with them makes others (``differs``:
    :func:`~compaction_harness.spec.pipeline_case.compaction_difference`'s
    line): the fixes move ADK's compactions. The run's summaries are the
    evidence that the replay is the run (the events and token counts after a
    summary are those the published release's compaction left), so no
    configuration brings such a replay back, and checking --config /
    --agent, the advice for a replay that differs without fixes, would
    mislead."""
    from ..spec.pipeline_case import CHECK_CONFIGURATION

    fact = differs.removesuffix(f"; {CHECK_CONFIGURATION}")
    return (
        f"{fact}; the fixes change where ADK compacts (without them the replay compacts as the "
        f"run did), and a recorded session is judged only where it does: not "
        f"{described(names, short=True)}"
    )


def gate_expectation(
    fixture: Any, judged: Any, names: Sequence[str], spec: str | None
) -> str | None:
    """Why the gate must fail ``fixture`` under the switch, or None. Under
    ``FIXES=all`` every fault fixture (of either SDK) must hold: its fault's fix
    is applied and nothing shows; a fault with no fix is excused only when
    its record says why none can exist. ``judged`` is
    :func:`judged_with_fixes`'s verdict."""
    from ..faults.catalogue import fault_for

    if (spec or "").strip() != "all":
        return None
    names = _names_for(fixture, names)
    fault_id = getattr(fixture, "known_fault", None)
    if not fault_id or judged.label in ("ok", "FAIL", "NOREPRO"):
        return None  # FAIL fails by itself; an unmarked fixture keeps its verdict
    if own_fixes(fault_id, names):
        return f"FIXES=all: {judged.reason}; every fault fixture must hold with every fix"
    fault = fault_for(fault_id)
    if fault is not None and fault.no_fix_reason:
        return None
    return (
        f"FIXES=all: the fault {fault_id} has no fix yet ({judged.label}: {judged.reason}); "
        "every fault fixture must hold with every fix"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m compaction_harness.surfaces.switch [--sdk=js] SPEC``: check
    ``SPEC`` as ``make`` is given it (``FIXES=``; ``--sdk=js``: ADK-JS's fixes,
    ``SDK=js``); prints the fixes, or one line ``error:`` and exit status 2."""
    args = list(sys.argv[1:] if argv is None else argv)
    js = "--sdk=js" in args
    args = [a for a in args if a != "--sdk=js"]
    spec = args[0] if args else os.environ.get(ENV, "")
    try:
        names = parse_js(spec, origin="FIXES") if js else parse(spec, origin="FIXES")
    except FixesError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(" ".join(names))
    return 0


def parse_js(spec: str | None, *, origin: str = ENV) -> tuple[str, ...]:
    """The ADK-JS fixes ``spec`` names (``make ... SDK=js FIXES=``): ``all``
    -> every fix of ADK-JS's index; ``all,-a,-b`` -> every fix but ``a`` and
    ``b``; names -> each must be a fix of the index
    (:class:`FixesError` naming the known ones otherwise)."""
    from ..sdk.js.js_fixes import JsFixError, js_fixes

    text = (spec or "").strip()
    try:
        fixes = js_fixes()
    except JsFixError as exc:
        raise FixesError(str(exc)) from None
    if text in ("", "none"):
        return ()
    if text == "all":
        return tuple(fixes)
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        return ()
    left_out = names[1:] if names[0] == "all" else []
    if names[0] == "all":
        if not all(n.startswith("-") and n[1:] not in ("", "all") for n in left_out):
            raise FixesError(f"{origin}={text}: after 'all' only fixes to leave out, each as -name")
        names = [n[1:] for n in left_out]
    for name in names:
        if name not in fixes:
            raise unknown_fix(origin, name, fixes, "faults --sdk adk-js", noun="ADK-JS fix")
    if left_out:
        return tuple(n for n in fixes if n not in set(names))
    return tuple(dict.fromkeys(names))


if __name__ == "__main__":
    raise SystemExit(main())
