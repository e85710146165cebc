"""The Node client: the one long-lived Node process running
``sdks/adk-js/driver.mjs`` (one per Python process, so one per xdist
worker), the driver for each set of ADK-JS fixes (:func:`driver`), and where
Node and the installed ``@google/adk`` are (:func:`node_path`,
:func:`package_version`). Errors: :class:`AdkJsUnavailable` (one line,
naming ``make js-env``) when Node or the package is missing."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any

__all__ = [
    "INSTALL",
    "PACKAGE",
    "SDK_DIR",
    "AdkJsUnavailable",
    "active_fixes",
    "driver",
    "node_path",
    "package_version",
]

PACKAGE = "@google/adk"
#: Where the Node driver lives (``HARNESS_ADK_JS_DIR`` overrides it).
SDK_DIR = Path(
    os.environ.get("HARNESS_ADK_JS_DIR") or Path(__file__).resolve().parents[4] / "sdks" / "adk-js"
)
INSTALL = "make js-env"


class AdkJsUnavailable(RuntimeError):
    """Node or the installed package is missing; the message is one line."""


def package_version() -> str:
    """The installed ``@google/adk`` version; raises :class:`AdkJsUnavailable`."""
    manifest = SDK_DIR / "node_modules" / "@google" / "adk" / "package.json"
    try:
        return json.loads(manifest.read_text())["version"]
    except (OSError, ValueError, KeyError):
        raise AdkJsUnavailable(
            f"ADK-JS ({PACKAGE}) is not installed in sdks/adk-js: run `{INSTALL}`"
        ) from None


def node_path() -> str:
    """Where ``node`` is, once Node and the package are both there; raises
    :class:`AdkJsUnavailable` (one line) otherwise."""
    node = shutil.which("node")
    if node is None:
        raise AdkJsUnavailable(
            f"node is not installed (ADK-JS needs Node 20): then run `{INSTALL}`"
        )
    package_version()
    return node


class _Node:
    """The one Node process running ``driver.mjs``: started on first use,
    restarted when it died; one request and one answer per line. It serves
    every set of ADK-JS fixes: each request names the patched copy of the
    package it runs on (``"entry"``), and the process loads each copy once
    (a copy costs its own modules, about 0.15 s; the package's dependencies,
    about 1 s, load once), so a classification that re-runs a case under
    about 15 sets of fixes starts no further process."""

    def __init__(self) -> None:
        self._process: subprocess.Popen[str] | None = None
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self.starts = 0

    def _start(self) -> subprocess.Popen[str]:
        node = node_path()
        env = dict(os.environ)
        env.pop("HARNESS_ADK_JS_ENTRY", None)
        self.starts += 1
        return subprocess.Popen(
            [node, str(SDK_DIR / "driver.mjs")],
            cwd=SDK_DIR,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            encoding="utf-8",
            bufsize=1,
        )

    def request(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Send one request and return its answer; a process that died (or
        was inherited through a fork) is replaced once and the request sent
        again. Raises :class:`RuntimeError` when the fresh process dies too."""
        line = json.dumps(payload, separators=(",", ":")) + "\n"
        with self._lock:
            if self._pid != os.getpid():  # a forked child: never share the parent's pipes
                self._process, self._pid = None, os.getpid()
            for attempt in (1, 2):
                if self._process is None or self._process.poll() is not None:
                    self._process = self._start()
                process = self._process
                assert process.stdin is not None and process.stdout is not None
                try:
                    process.stdin.write(line)
                    process.stdin.flush()
                    answer = process.stdout.readline()
                except (BrokenPipeError, OSError):
                    answer = ""
                if answer:
                    return json.loads(answer)
                self.close()
                if attempt == 2:
                    raise RuntimeError("the ADK-JS driver died twice on one request")
        raise AssertionError("unreachable")

    def close(self) -> None:
        """End the process: its standard input closed, it exits and removes
        its database folder; killed when it has not within 5 s."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        try:
            assert process.stdin is not None
            process.stdin.close()
            process.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            process.kill()
            process.wait()


#: This Python process's Node process (tests replace it to start afresh).
_NODE = _Node()


class _Driver:
    """ADK-JS with one set of fixes: the shared Node process (:data:`_NODE`),
    each request sent with the entry module of the package copy that has
    those fixes (``js_fixes.py``, made once per set; none for the
    package as installed)."""

    def __init__(self, fixes: tuple[str, ...] = ()) -> None:
        #: The ADK-JS fixes this driver runs with (js_fixes.py).
        self.fixes = fixes
        #: The entry module of its package copy, made on the first request
        #: (as a process of its own was started once before).
        self._entry: Path | None = None

    @property
    def _process(self) -> subprocess.Popen[str] | None:
        return _NODE._process

    @property
    def starts(self) -> int:
        return _NODE.starts

    def request(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Send one request (driver.mjs's) on this driver's copy of the
        package and return its answer; raises as :meth:`_Node.request`,
        :class:`AdkJsUnavailable` when Node or the package is missing (the
        process's start checks), and ``JsFixError`` for a fix that does not
        apply."""
        from .js_fixes import patched_package

        if self.fixes and self._entry is None:
            node_path()  # Node and the package first: one line when either is missing
            self._entry = patched_package(self.fixes)
        entry = self._entry
        return _NODE.request({**payload, "entry": None if entry is None else str(entry)})

    def close(self) -> None:
        """Stop the shared Node process (the next request starts another)."""
        _NODE.close()


#: One driver per set of ADK-JS fixes, the most recently used last (they
#: share one Node process).
_DRIVERS: dict[tuple[str, ...], _Driver] = {}


def driver(fixes: tuple[str, ...] | None = None) -> _Driver:
    """This process's driver for ``fixes`` (None: :func:`active_fixes`, what
    ``HARNESS_FIXES`` asks for; () the package as published). Tests use it to
    kill and restart the process."""
    fixes = active_fixes() if fixes is None else tuple(fixes)
    found = _DRIVERS.get(fixes)
    if found is None:
        found = _DRIVERS[fixes] = _Driver(fixes)
    return found


def active_fixes() -> tuple[str, ...]:
    """The ADK-JS fixes ``HARNESS_FIXES`` asks for (``js_fixes.active``)."""
    from .js_fixes import active

    return active()


@atexit.register
def _close_drivers() -> None:
    _NODE.close()
