"""What the command line's commands share: bad input as one line, fixture loading, numbers.

:class:`CliError` is bad input or an unusable target (one line, exit status
2, never a traceback); :func:`_load_each` loads the fixtures named (a folder
stands for its ``*.json`` files), each bad one said in one line.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..spec.model import _one_line
from ..spec.scripts import SERVER_URL_VARIABLES
from ..store import servers
from ..store.fixtures import Fixture, FixtureError, load_fixture, newer_than_known

__all__ = ["CONFIG_FLAGS", "CliError"]


class CliError(Exception):
    """Bad input or an unusable target: one line, exit status 2."""


#: minimize's limits: Hypothesis draws one choice per event, and the search
#: replays ADK on every candidate.
MAX_SESSION_EVENTS = 1_000


MAX_SESSION_BYTES = 50_000_000

#: How an SQLite file begins (its header string).
SQLITE_HEADER = b"SQLite format 3\x00"


def read_session_text(path: Path) -> str:
    """The text of a recorded session's JSON document at ``path``. Raises
    :class:`CliError` (one line, without the path: the caller names it) for
    a file that cannot be read, one that is not UTF-8 text, and a session
    store given in its place (an SQLite file, as ``adk web`` keeps
    ``.adk/session.db``: the message says how to export a session from it)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise CliError(f"cannot read: {exc.strerror or exc}") from None
    if raw.startswith(SQLITE_HEADER):
        raise CliError(
            "an SQLite session store, not a session document: export one session "
            "as JSON first ((await service.get_session(...)).model_dump_json())"
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise CliError("not UTF-8 text") from None


#: The trigger flags of a recorded session's configuration (minimize, replay).
CONFIG_FLAGS = ("compaction-interval", "overlap-size", "token-threshold", "event-retention-size")


def _at_least(low: int) -> Callable[[str], int]:
    """An argparse type: a whole number of at least ``low``."""

    def whole(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"expected at least {low}, got {value}")
        return value

    return whole


_natural = _at_least(0)


_positive = _at_least(1)


def _expand(paths: Sequence[str]) -> list[Path]:
    """The fixture files named: a directory stands for its ``*.json`` files."""
    out: list[Path] = []
    for name in paths:
        path = Path(name)
        if path.is_dir():
            found = sorted(path.glob("*.json"))
            if not found:
                out.append(path)  # reported as bad input by the loader
            out.extend(found)
        else:
            out.append(path)
    return out


def _load_each(paths: Sequence[str]) -> list[tuple[Path, Fixture | None]]:
    """Each named fixture loaded, or None after its one-line error on stderr."""
    loaded: list[tuple[Path, Fixture | None]] = []
    for path in _expand(paths):
        if path.is_dir():
            _error(f"{path}: a directory with no .json fixtures")
            loaded.append((path, None))
            continue
        try:
            fixture = load_fixture(path)
        except FixtureError as exc:
            _error(str(exc))
            loaded.append((path, None))
            continue
        newer = newer_than_known(fixture)
        if newer:
            print(f"warning: {newer}", file=sys.stderr, flush=True)
        storage = getattr(getattr(fixture.case, "config", None), "storage", "memory")
        if storage in SERVER_URL_VARIABLES:  # kept on a PostgreSQL or MariaDB server
            try:
                servers.serve(storage)
            except servers.ServerError as exc:
                _error(f"{path}: its session is kept on {storage}: {exc}")
                loaded.append((path, None))
                continue
        loaded.append((path, fixture))
    return loaded


def _error(message: str) -> None:
    print(f"error: {message}", file=sys.stderr, flush=True)


def _whole(option: str, text: str | None, low: int, high: int | None = None) -> int | None:
    """``text`` as a whole number from ``low`` to ``high``, or a CliError."""
    if text is None:
        return None
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < low or (high is not None and value > high):
        limits = f"from {low} to {high}" if high is not None else f"of at least {low}"
        raise CliError(f"{option} {text!r}: expected a whole number {limits}")
    return value


def _minimize_config(args: argparse.Namespace) -> dict[str, int | None] | None:
    """minimize's configuration: --config (a JSON object, or a file holding
    one) with the trigger flags over it; None when neither is given."""
    from ..spec.pipeline_case import CONFIG_KEYS

    config: dict[str, Any] | None = None
    if args.config is not None:
        text = args.config
        if not text.lstrip().startswith("{"):
            try:
                text = Path(text).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise CliError(
                    f"--config {args.config}: neither a JSON object nor a readable file: "
                    f"{getattr(exc, 'strerror', None) or exc}"
                ) from None
        try:
            config = json.loads(text)
        except ValueError as exc:
            raise CliError(f"--config: invalid JSON: {_one_line(str(exc))}") from None
        if not isinstance(config, dict):
            raise CliError("--config: expected a JSON object of trigger values")
        unknown = sorted(set(config) - set(CONFIG_KEYS))
        if unknown:
            raise CliError(
                f"--config: unknown key {unknown[0]!r} (expected {', '.join(CONFIG_KEYS)})"
            )
        for key, value in config.items():
            if value is not None and (type(value) is not int or value < 0):
                raise CliError(f"--config: {key}: expected a non-negative integer or null")
    for key in CONFIG_KEYS:
        value = getattr(args, key)
        if value is not None:
            config = {**(config or {}), key: value}
    return config
