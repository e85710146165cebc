"""One virtual environment per ADK target, created on first use (standard library only).

Run as ``python -m compaction_harness.envs --adk 2.11.0`` (or
``--adk-src PATH``) with ``src`` on ``PYTHONPATH``; it prints the path of the
environment's Python on standard output and nothing else, so the Makefile can
use it. Environments live in ``.venv/adk-<release>/`` (or
``.venv/adk-src-<hash>/`` for a source checkout) and hold this project
(editable, with its ``dev``, ``upstream``, ``report``, ``shared`` and
``servers`` extras: ruff, pyink for the exported tests' formatting check,
matplotlib, the Redis client for a campaign's shared example database, and
the PostgreSQL and MySQL drivers of ``DatabaseSessionService``), its pinned
test dependencies and the target google-adk.

Errors are one line on standard error and exit status 2: an unknown release,
a missing path, an install that fails (pip's full output is kept in a log
file next to the environment). A half-built environment is never reused: an
environment counts only once its ``.ready`` stamp is written, after every
install step succeeded.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VENVS = ROOT / ".venv"
CONSTRAINTS = ROOT / "constraints.txt"
RELEASE = re.compile(r"^\d+\.\d+\.\d+((a|b|rc)\d+)?$")
#: The first release with event compaction (``google.adk.apps.compaction``).
FIRST_RELEASE_WITH_COMPACTION = (1, 16, 0)


class EnvError(Exception):
    """A one-line, user-facing reason the environment cannot be made."""


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP arrived (``timeout``, a cancelled CI job): unwound like
    Ctrl-C, so a half-built environment is removed on the way out."""


def _terminate(signum: int, frame: object) -> None:
    raise Terminated(signal.Signals(signum).name)


def _version_tuple(release: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", release)[:3])


def _target(args: argparse.Namespace) -> tuple[str, Path, list[str]]:
    """(label, environment folder, pip requirement arguments for ADK)."""
    if args.adk_src:
        src = Path(args.adk_src).expanduser().resolve()
        if not src.exists():
            raise EnvError(f"google-adk source {args.adk_src}: no such directory")
        if not src.is_dir():
            raise EnvError(f"google-adk source {args.adk_src}: not a directory")
        if not (src / "pyproject.toml").is_file() and not (src / "setup.py").is_file():
            raise EnvError(
                f"google-adk source {args.adk_src}: not a Python project (no pyproject.toml)"
            )
        digest = hashlib.sha256(str(src).encode()).hexdigest()[:10]
        return f"source {src}", VENVS / f"adk-src-{digest}", ["-e", f"{src}[db]", "greenlet"]
    release = args.adk
    if not RELEASE.match(release):
        raise EnvError(
            f"google-adk release {release!r}: not a release number (expected e.g. 2.13.0)"
        )
    if _version_tuple(release) < FIRST_RELEASE_WITH_COMPACTION:
        raise EnvError(f"google-adk {release}: event compaction exists only from 1.16.0 on")
    # [db]: DatabaseSessionService's SQLite driver (invariant P7). greenlet: the
    # asyncio engine of SQLAlchemy 2.1 needs it, and the [db] extra of 1.20.0 to
    # 2.9.0 does not ask for it (2.11.0 and later ask for sqlalchemy[asyncio]).
    return (
        f"google-adk {release}",
        VENVS / f"adk-{release}",
        [f"google-adk[db]=={release}", "greenlet"],
    )


def _run(cmd: list[str], log: Path) -> int:
    with log.open("a", encoding="utf-8") as fh:
        fh.write("$ " + " ".join(cmd) + "\n")
        fh.flush()
        return subprocess.call(cmd, stdout=fh, stderr=subprocess.STDOUT, cwd=ROOT)


def ensure(args: argparse.Namespace) -> Path:
    """Create (once) and return the environment's Python for the target."""
    label, folder, adk_requirement = _target(args)
    python = folder / "bin" / "python"
    stamp = folder / ".ready"
    wanted = " ".join(adk_requirement) + "\n" + _fingerprint()
    if stamp.is_file() and stamp.read_text() == wanted and python.exists():
        return python
    if folder.exists():
        shutil.rmtree(folder)
    VENVS.mkdir(exist_ok=True)
    log = VENVS / f"{folder.name}.log"
    log.write_text("")
    print(
        f"creating {folder.relative_to(ROOT)} for {label} (log: {log.relative_to(ROOT)})",
        file=sys.stderr,
    )
    try:
        _install(folder, label, adk_requirement, log)
    except BaseException:
        # Interrupted or failed: never leave a half-built environment behind.
        shutil.rmtree(folder, ignore_errors=True)
        raise
    stamp.write_text(wanted)
    return python


def _install(folder: Path, label: str, adk_requirement: list[str], log: Path) -> None:
    python = folder / "bin" / "python"
    venv.EnvBuilder(with_pip=True, clear=True).create(folder)
    pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    if _run([*pip, "-c", str(CONSTRAINTS), *adk_requirement], log) != 0:
        raise EnvError(
            f"could not install {label}: no such release, or no network "
            f"(pip's output: {log.relative_to(ROOT)})"
        )
    # [dev]: the linter; [upstream]: the checks exported tests must pass (pyink);
    # [report]: matplotlib, for the matrix's heat map and `profile --plot`;
    # [shared]: the Redis client, for an example database shared by campaigns;
    # [servers]: DatabaseSessionService's PostgreSQL and MySQL drivers.
    extras = "dev,upstream,report,shared,servers"
    if _run([*pip, "-c", str(CONSTRAINTS), "-e", f"{ROOT}[{extras}]"], log) != 0:
        raise EnvError(
            f"could not install the harness itself (pip's output: {log.relative_to(ROOT)})"
        )
    check = subprocess.run(
        [str(python), "-c", "import google.adk.apps.compaction"], capture_output=True, text=True
    )
    if check.returncode != 0:
        raise EnvError(f"{label} installed but google.adk.apps.compaction does not import")


def _fingerprint() -> str:
    # Rebuild when the project's declared dependencies or pins change.
    h = hashlib.sha256()
    for name in ("pyproject.toml", "constraints.txt"):
        path = ROOT / name
        if path.is_file():
            h.update(path.read_bytes())
    return h.hexdigest()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m compaction_harness.envs",
        description="Create (once) the virtual environment for an ADK target and print its Python.",
    )
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--adk", default=None, help="a google-adk release, e.g. 2.11.0")
    target.add_argument("--adk-src", default=None, help="a google-adk source checkout")
    args = parser.parse_args(argv)
    if not args.adk and not args.adk_src:
        sys.path.insert(0, str(ROOT / "src"))
        from compaction_harness import DEFAULT_ADK_RELEASE

        args.adk = DEFAULT_ADK_RELEASE
    for name in ("SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), _terminate)
    try:
        print(ensure(args))
    except EnvError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except Terminated as exc:
        print(f"error: {exc} while creating the environment", file=sys.stderr)
        return 143
    except KeyboardInterrupt:
        print("error: interrupted while creating the environment", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PIP_NO_INPUT", "1")
    sys.exit(main())
