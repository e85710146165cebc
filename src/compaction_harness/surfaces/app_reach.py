"""What an app's configuration can meet: the google-adk known faults whose
fixtures in ``tests/repros/`` need nothing the app lacks (its triggers, its
kinds of tool, a parallel pair or a second agent, its store, the model's
per-turn ids, a strict provider). Part of ``check`` (:mod:`.app_check`);
imports the fault catalogue and the fixture store only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..spec.scripts import ScriptConfig

__all__ = ["reachable_faults"]

ROOT = Path(__file__).resolve().parents[3]


def _trigger_kinds(values: dict[str, Any]) -> set[str]:
    """``sliding`` and ``token``, as the trigger values ``values`` set them."""
    kinds = {"sliding"} if values.get("compaction_interval") is not None else set()
    return kinds | ({"token"} if values.get("token_threshold") is not None else set())


def _setting_features(config: Any) -> set[str]:
    """What a script configuration sets beyond its triggers and operations
    that a fault may need: a stored session's store, the model's per-turn
    call ids, a strict provider."""
    storage = getattr(config, "storage", "memory")
    features = {storage} if storage != "memory" else set()
    if getattr(config, "call_ids", "unique") == "per_turn":
        features.add("per_turn")  # the model numbers its calls per turn
    if getattr(config, "strict_provider", False):
        features.add("strict")
    return features


def _needs(fixture: Any) -> tuple[set[str], set[str]] | None:
    """(trigger kinds, app features) a fixture needs to happen; None when
    its case is no script or session of google-adk's pipeline."""
    case = fixture.case
    config = getattr(case, "config", None)
    if fixture.kind in ("token", "unit", "metamorphic"):
        # The token helpers need a token threshold; the shared prefix helper
        # any trigger. The session's events say what else the app needs.
        return ({"token"} if fixture.kind == "token" else set()), _session_needs(case)
    if config is None:
        return None
    values = config.triggers if hasattr(config, "triggers") else config
    if not isinstance(values, dict):
        return None
    features = _setting_features(config)
    for op in getattr(case, "operations", ()):
        name = type(op).__name__
        if name == "Calls":
            features.update(op.tool_kinds())
        elif name == "Ask":
            features.add("confirmation" if op.kind == "confirmation" else "credential")
        elif name == "FanOut":
            features.add("team")
        elif name == "Delegate":
            features.add("helper")
        elif name in ("ClientRecord", "Skew"):
            features.add(name)
    if not getattr(case, "operations", ()):
        features |= _session_needs(case)
    return _trigger_kinds(values), features


def _session_needs(case: Any) -> set[str]:
    """What the events of ``case``'s session (if it has one) need of an app
    (:func:`_step_features`), all together."""
    session = getattr(case, "session", None)
    steps = getattr(session, "steps", session if isinstance(session, tuple) else ())
    return set().union(*(_step_features(step) for step in steps or ()))


def _step_features(step: Any) -> set[str]:
    """What an event of a session fixture (one without operations) needs of
    an app: a tool of each kind it calls, a confirmation or credential tool,
    a parallel pair for an event on a branch (found by a newcomer: a P5
    session fixture of branch events was listed for an app without any)."""
    needs: set[str] = set()
    for call in step.calls:
        if call.name not in ("adk_request_confirmation", "adk_request_credential"):
            needs.add("long_running" if call.id in step.long_running else "plain")
    if step.confirmations:
        needs.add("confirmation")
    if step.auth_requests:
        needs.add("credential")
    if step.branch:
        needs.add("team")
    return needs


def reachable_faults(config: ScriptConfig, release: str) -> list[tuple[Any, str]]:
    """The google-adk known faults ``config`` (an app's) can meet on
    ``release``, each with the fixture that shows it within the app's reach:
    the fault's releases hold ``release`` (or the matrix has not placed it
    yet), and one of its fixtures needs only the app's triggers (all of the
    fixture's: which of two did it is not recorded) and what the app has:
    its kinds of tool, a parallel agent, a second LLM agent, and the
    settings of :func:`_setting_features` where the check has them (the
    session store it runs on, the model's per-turn ids, a strict provider);
    never a client's own record nor a host's clock skew. Judged from the
    fixtures the harness holds: a fault may reach further than they do."""
    from ..faults.catalogue import PYTHON, faults_of
    from ..store.fixtures import FixtureError, load_fixture

    app = config.app
    have = {kind for kind, _ in app.tools} if app is not None else set()
    if app is not None and app.team:
        have.add("team")
    if app is not None and app.helper:
        have.add("helper")
    have |= _setting_features(config)
    kinds = _trigger_kinds(config.triggers)
    by_fault: dict[str, list[Any]] = {}
    for path in sorted((ROOT / "tests" / "repros").glob("*.json")):
        try:
            fixture = load_fixture(path)
        except FixtureError:
            continue
        if getattr(fixture, "is_js", False) or not fixture.known_fault:
            continue
        by_fault.setdefault(fixture.known_fault, []).append((path.name, fixture))
    out: list[tuple[Any, str]] = []
    for fault in faults_of(PYTHON):
        if fault.releases and release not in fault.releases:
            continue
        for name, fixture in by_fault.get(fault.id, []):
            needs = _needs(fixture)
            if needs is None:
                continue
            triggers, features = needs
            if not triggers <= kinds:
                continue
            if features <= have:
                out.append((fault, name))
                break
    return out
