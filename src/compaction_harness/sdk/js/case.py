"""What runs on ADK-JS: its compactors (:class:`JsCompactor`), a script with
one of them (:class:`JsCase`), the compactor that stands for a script's
configuration (:func:`compactor_for`, :func:`stand_in_for`), and
:class:`NotApplicable`, raised for what ADK-JS cannot represent. Talks to
no Node process (a fixture's case loads without Node)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ...spec.scripts import Script

__all__ = [
    "COMPACTORS",
    "DELETING",
    "OPTIONS",
    "STAND_IN_THRESHOLD",
    "TRIGGERED",
    "JsCase",
    "JsCompactor",
    "NotApplicable",
    "compactor_for",
    "stand_in_for",
    "stand_in_label",
]

#: The compactors the driver knows, by the name a request gives.
COMPACTORS = ("token_based", "anchored", "truncating", "thought_pruning", "agent_controlled")
#: The constructor options each compactor reads (dist/esm/context/
#: *_compactor.js, `options.<name>`; the summariser is the driver's own), all
#: non-negative integers: what a fixture's ``compactor.options`` may hold.
OPTIONS: dict[str, tuple[str, ...]] = {
    "token_based": ("tokenThreshold", "eventRetentionSize"),
    "anchored": ("tokenThreshold", "eventRetentionSize"),
    "truncating": ("threshold", "preserveLeadingEvents"),
    "thought_pruning": ("eventRetentionSize",),
    "agent_controlled": (),
}

#: Compactors with a trigger of their own (a token threshold): P6 applies.
TRIGGERED = frozenset({"token_based", "anchored"})
#: Compactors that delete events by design: judged on P0, P1 and P2 only.
DELETING = frozenset({"truncating", "thought_pruning"})


class NotApplicable(Exception):
    """A script or configuration ADK-JS cannot represent; ``str()`` says why."""


@dataclass(frozen=True)
class JsCompactor:
    """A compactor of ADK-JS and its options, as its constructor takes them
    (camel case: ``tokenThreshold``, ``eventRetentionSize``, ``threshold``,
    ``preserveLeadingEvents``)."""

    name: str
    options: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.name not in COMPACTORS:
            raise ValueError(
                f"unknown ADK-JS compactor {self.name!r} (known: {', '.join(COMPACTORS)})"
            )

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "options": dict(self.options)}

    def __hash__(self) -> int:
        return hash((self.name, json.dumps(self.options, sort_keys=True)))

    @classmethod
    def from_json(cls, data: Any, where: str = "compactor") -> JsCompactor:
        """Parse ``{"name": str, "options": {str: int | bool | str}}`` (as
        :meth:`to_json` writes it); raises ``ModelError`` naming ``where``."""
        from ...spec.model import ModelError

        if not isinstance(data, dict) or set(data) != {"name", "options"}:
            raise ModelError(f"{where}: expected an object with exactly 'name' and 'options'")
        name, options = data["name"], data["options"]
        if name not in COMPACTORS:
            raise ModelError(
                f"{where}.name: unknown ADK-JS compactor {name!r} (known: {', '.join(COMPACTORS)})"
            )
        if not isinstance(options, dict):
            raise ModelError(f"{where}.options: expected an object")
        for key, value in options.items():
            if key not in OPTIONS[name]:
                raise ModelError(
                    f"{where}.options.{key}: not an option of the {name} compactor "
                    f"(known: {', '.join(OPTIONS[name]) or 'none'})"
                )
            if type(value) is not int or value < 0:
                raise ModelError(
                    f"{where}.options.{key}: expected a non-negative integer, got {value!r}"
                )
        return cls(name, dict(options))


@dataclass(frozen=True)
class JsCase:
    """A pipeline script and the ADK-JS compactor it runs with: what a JS
    property draws, what an ADK-JS fixture records (``call`` = the script,
    ``compactor`` = :meth:`JsCompactor.to_json`) and what its replay runs."""

    script: Script
    compactor: JsCompactor
    #: Who gave a violation's observed answer (``Violation.render``).
    observer: ClassVar[str] = "ADK-JS"

    @property
    def config(self):  # the script's configuration (a ScriptConfig)
        return self.script.config

    def call_json(self) -> dict[str, Any]:
        """What a fixture records as its ``call``: the script."""
        return self.script.call_json()

    @property
    def window(self) -> tuple[int, ...]:
        return ()

    def render(self) -> str:
        """The compactor, then the script (one operation per line, numbered)."""
        return f"ADK-JS compactor: {self.compactor.to_json()}\n{self.script.render()}"


def compactor_for(script: Script) -> JsCompactor:
    """The ADK-JS compactor that stands for a script's configuration: the
    token-threshold trigger is ``TokenBasedContextCompactor`` with the same
    threshold and retention. Raises :class:`NotApplicable` for a sliding
    window (ADK-JS 2.0.0 has no sliding-window compactor)."""
    config = script.config
    if config.compaction_interval is not None:
        raise NotApplicable(
            "ADK-JS 2.0.0 has no sliding-window compactor (compaction_interval/overlap_size)"
        )
    if config.token_threshold is None:
        raise NotApplicable("the script configures no compaction trigger")
    return JsCompactor(
        "token_based",
        {
            "tokenThreshold": config.token_threshold,
            "eventRetentionSize": config.event_retention_size or 0,
        },
    )


STAND_IN_THRESHOLD = 0
"""The stand-in's ``tokenThreshold``: ``TokenBasedContextCompactor.shouldCompact``
(``dist/esm/context/token_based_context_compactor.js``) fires when the latest
prompt token count is above it, so 0 fires at every model call that has a
count: at least as often as any sliding-window trigger, which fires at most
once per invocation."""


def stand_in_for(script: Script) -> JsCompactor:
    """The clearly labelled stand-in for a sliding-window script (ADK-JS
    2.0.0 has no sliding-window compactor): ``TokenBasedContextCompactor``
    with ``tokenThreshold`` :data:`STAND_IN_THRESHOLD` and
    ``eventRetentionSize`` = ``max(1, overlap_size)``. The Python overlap
    counts invocations, the JS retention counts events, so the stand-in keeps
    at most as much as Python kept and compacts at least as often: it throws
    the session that broke Python at ADK-JS's nearest compactor; it is not
    the same trigger. Retention 0 is raised to 1 because 0 only meets the
    known fault ``js-retention-zero`` at every model call. Raises
    :class:`NotApplicable` when the script has no sliding window."""
    config = script.config
    if config.compaction_interval is None:
        raise NotApplicable("the script configures no sliding window")
    return JsCompactor(
        "token_based",
        {
            "tokenThreshold": STAND_IN_THRESHOLD,
            "eventRetentionSize": max(1, config.overlap_size or 0),
        },
    )


def stand_in_label(compactor: JsCompactor) -> str:
    """``stand-in: token_based threshold=<t>, retention=<r>`` for a verdict."""
    o = compactor.options
    return (
        f"stand-in: {compactor.name} threshold={o['tokenThreshold']}, "
        f"retention={o['eventRetentionSize']}"
    )
