"""google-adk's fixes: named patches of ADK's own source that follow the specification.

A :class:`Fix` removes one or more known faults. It is a unified diff
against adk-python's ``src/`` tree (paths ``a/google/adk/...``): exactly the
change an ADK maintainer would review. A fix carries one diff per release
whose source needs its own, all under one file name (:attr:`Fix.diff`):
``patches/<diff>`` is written against the pinned release (2.13.0),
``patches/<release>/<diff>`` against ``<release>``; a fault that only
older releases have carries only the latter, written against the newest
release it lives on. On the installed release a fix uses its diff written
against that release when there is one; otherwise the first of its diffs
that applies, the pinned release's first, then newest release first
(:func:`diff_release` says which). A fix applies to a release when that
diff exists (:func:`unavailable` says why not otherwise, in one line).

Within :func:`applied`, the chosen diffs of the fixes asked for are applied
in order with GNU ``patch`` (no fuzz; offsets allowed) to the installed
release's own source files; every function, method or new import that the
patched text changes is executed in the module's own namespace, so it sees
the module's globals as ADK's code does, and every name bound to a replaced
function in a loaded ``google.adk`` module (an import, under its own name or
another, or a module-level alias) gets the replacement too; on exit
everything is put back. Several fixes of one file compose as patches do:
hunk by hunk. A fault whose mechanism lies in what ADK is given, not in its
code, may carry a :class:`HarnessChange`, with its reason.

Errors: :class:`~compaction_harness.sdk.python.adk.NotApplicable` where the installed
release cannot take a fix; ``KeyError`` for an unknown fix name;
``RuntimeError`` when a diff changes module text other than definitions and
imports (a patch the harness cannot apply to a running module).
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import inspect
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from ..protocol import patch_binary
from . import python_fixes

__all__ = [
    "FIXES",
    "Fix",
    "HarnessChange",
    "active",
    "applied",
    "diff_release",
    "fix_named",
    "fixes_for",
    "patch_text",
    "patched_sources",
    "unavailable",
    "withheld",
]

PATCHES = Path(__file__).parent / "patches"


@dataclass(frozen=True)
class HarnessChange:
    """A fix that changes what ADK is given rather than ADK's code.

    Attributes:
        factory: returns a context manager that makes the change.
        reason: why no patch of ADK's functions can carry this fix.
    """

    factory: Callable[[], contextlib.AbstractContextManager[Any]]
    reason: str


@dataclass(frozen=True)
class Fix:
    """One named fix of google-adk.

    Attributes:
        name: a stable slug (``FIXES=name,...``).
        faults: the known fault ids it removes.
        summary: one line: what the patched code does differently.
        diff: the file name of its diffs: ``patches/<diff>`` (written
            against the pinned release) and ``patches/<release>/<diff>``
            (written against ``<release>``); None for a :class:`HarnessChange`
            only.
        change: what the harness changes instead of (or beside) ADK's code.
    """

    name: str
    faults: tuple[str, ...]
    summary: str
    diff: str | None = None
    change: HarnessChange | None = field(default=None, compare=False)

    def diffs(self) -> dict[str, Path]:
        """Release written against -> diff file, the pinned release's first,
        then newest release first (empty without a diff)."""
        if self.diff is None:
            return {}
        from ... import DEFAULT_ADK_RELEASE

        if Path(self.diff).is_absolute():  # one diff, anywhere (a test's)
            return {DEFAULT_ADK_RELEASE: Path(self.diff)}
        found = {
            folder.name: folder / self.diff
            for folder in PATCHES.iterdir()
            if folder.is_dir() and (folder / self.diff).is_file()
        }
        if (PATCHES / self.diff).is_file():
            found[DEFAULT_ADK_RELEASE] = PATCHES / self.diff
        newest_first = sorted(found, key=_release_key, reverse=True)
        order = [r for r in newest_first if r == DEFAULT_ADK_RELEASE]
        order += [r for r in newest_first if r != DEFAULT_ADK_RELEASE]
        return {r: found[r] for r in order}

    def diff_text(self) -> str:
        """The diff this fix applies to the installed release ("" without a
        diff); ``NotApplicable`` when none of its diffs applies."""
        release = diff_release(self)
        return self.diffs()[release].read_text(encoding="utf-8") if release else ""


def _release_key(release: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", release))


#: Every google-adk fix, by name (filled from :mod:`.python_fixes` below).
FIXES: dict[str, Fix] = {}


def register(fix: Fix) -> Fix:
    """Add ``fix`` to :data:`FIXES` (its name must be new)."""
    if fix.name in FIXES:
        raise ValueError(f"fix {fix.name!r} is registered twice")
    if fix.diff is None and fix.change is None:
        raise ValueError(f"fix {fix.name!r} has neither a diff nor a harness change")
    FIXES[fix.name] = fix
    return fix


def fix_named(name: str) -> Fix:
    """The fix called ``name``; ``KeyError`` naming the known ones otherwise."""
    try:
        return FIXES[name]
    except KeyError:
        known = ", ".join(sorted(FIXES))
        raise KeyError(f"no fix named {name!r} (known: {known})") from None


def fixes_for(fault_id: str) -> list[Fix]:
    """The fixes that name ``fault_id`` among their faults."""
    return [f for f in FIXES.values() if fault_id in f.faults]


# -- diffs -----------------------------------------------------------------------------
_HEADER = re.compile(r"^\+\+\+ b/(\S+)", re.MULTILINE)


def _per_file(diff: str) -> dict[str, str]:
    """A unified diff split by the file it changes (``google/adk/...py`` -> its hunks)."""
    out: dict[str, str] = {}
    chunks = re.split(r"(?m)^(?=--- a/)", diff)
    for chunk in chunks:
        found = _HEADER.search(chunk)
        if found:
            out[found.group(1)] = out.get(found.group(1), "") + chunk
    return out


def _module_name(path: str) -> str:
    return path.removesuffix(".py").replace("/", ".")


def _installed_file(path: str) -> Path:
    from .adk import ADK_RELEASE, NotApplicable

    try:
        module = importlib.import_module(_module_name(path))
    except ImportError:
        raise NotApplicable(f"google-adk {ADK_RELEASE} has no {path}") from None
    return Path(inspect.getsourcefile(module) or "")


def _patch_binary() -> str:
    """GNU patch on PATH; ``EnvError`` (one line) when there is none."""
    from ...envs import EnvError

    return patch_binary(shutil.which("patch"), "applying a known fault's fix", EnvError)


def diff_release(fix: Fix | str) -> str | None:
    """The release that the diff ``fix`` applies to the installed release is
    written against (None: a fix without a diff): the installed release's own
    diff when the fix has one, else the first of its other diffs that applies
    (:meth:`Fix.diffs` order). Raises ``NotApplicable`` (one line) when none
    applies."""
    fix = fix_named(fix) if isinstance(fix, str) else fix
    return _diff_release(fix)


@cache
def _diff_release(fix: Fix) -> str | None:
    from .adk import ADK_RELEASE, NotApplicable

    diffs = fix.diffs()
    if not diffs:
        if fix.diff is not None:
            raise NotApplicable(f"the fix {fix.name} has no diff file {fix.diff}")
        return None
    tried = [ADK_RELEASE] if ADK_RELEASE in diffs else list(diffs)
    for release in tried:
        try:
            for path, diff in _per_file(diffs[release].read_text(encoding="utf-8")).items():
                _apply(_installed_source(path), (diff,), fix.name)
        except NotApplicable:
            continue
        return release
    against = ", ".join(tried)
    raise NotApplicable(
        f"the fix {fix.name} does not apply to google-adk {ADK_RELEASE}'s own source "
        f"(its diff{'s' if len(tried) > 1 else ''} written against {against})"
    )


@cache
def _apply(original: str, diffs: tuple[str, ...], label: str) -> str:
    """``original`` with each diff applied in order (GNU patch, no fuzz)."""
    from .adk import ADK_RELEASE, NotApplicable

    text = original
    with tempfile.TemporaryDirectory(prefix="harness-fix-") as folder:
        source = Path(folder) / "source.py"
        for diff in diffs:
            source.write_text(text, encoding="utf-8")
            done = subprocess.run(
                [_patch_binary(), "--batch", "--forward", "--silent", "--fuzz=0", str(source)],
                input=diff,
                capture_output=True,
                text=True,
                check=False,
            )
            if done.returncode != 0:
                raise NotApplicable(
                    f"the fix {label} does not apply to google-adk {ADK_RELEASE}'s own source"
                )
            text = source.read_text(encoding="utf-8")
    return text


def patched_sources(names: Iterable[str]) -> dict[str, tuple[str, str]]:
    """``path -> (installed source, source with the fixes' diffs applied)`` for
    every file the fixes ``names`` change, in adk-python's ``src/`` layout."""
    per_path: dict[str, list[str]] = {}
    labels: dict[str, list[str]] = {}
    for name in names:
        fix = fix_named(name)
        for path, diff in _per_file(fix.diff_text()).items():
            per_path.setdefault(path, []).append(diff)
            labels.setdefault(path, []).append(name)
    out = {}
    for path, diffs in per_path.items():
        original = _installed_source(path)
        out[path] = (original, _apply(original, tuple(diffs), "+".join(labels[path])))
    return out


@cache
def _installed_source(path: str) -> str:
    """The installed release's own text of ``path`` (read once a process: a
    classification re-runs a case under many sets of fixes)."""
    return _installed_file(path).read_text(encoding="utf-8")


@cache
def _definitions(text: str) -> dict[tuple[str | None, str], str]:
    """``(class or None, name) -> source`` of each top-level function, each
    method of a top-level class, and (key ``(None, "import <line>")``) each
    top-level import."""
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)

    def segment(node: ast.AST) -> str:
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])
        return "".join(lines[first - 1 : node.end_lineno])

    out: dict[tuple[str | None, str], str] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            out[(None, node.name)] = segment(node)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    out[(node.name, item.name)] = textwrap.dedent(segment(item))
            out[(None, f"class {node.name}")] = "<class>"
        elif isinstance(node, ast.Import | ast.ImportFrom):
            text_of = segment(node)
            out[(None, "import " + text_of)] = text_of
        else:
            out[(None, f"statement {ast.dump(node)}")] = "<statement>"
    return out


@cache
def _changes(path: str, original: str, patched: str) -> tuple[tuple[str | None, str, str], ...]:
    """What the patched text defines differently: (class or None, name, source).
    Cached: both texts are parsed once a process for each set of fixes."""
    before, after = _definitions(original), _definitions(patched)
    changed = [(k, v) for k, v in after.items() if before.get(k) != v]
    odd = [k for k, v in changed if v in ("<class>", "<statement>")]
    odd += [k for k in before if k not in after and not k[1].startswith("import ")]
    if odd:
        raise RuntimeError(
            f"a fix of {path} changes {odd[0][1][:60]!r}: only functions, methods and "
            "imports can be replaced in a running module"
        )
    return tuple((owner, name, text) for (owner, name), text in changed)


@cache
def _compiled(path: str, text: str) -> Any:
    """``text``, one definition or import of a fix of ``path``, compiled once a process."""
    return compile(text, f"<fix of {path}>", "exec")


@contextlib.contextmanager
def _replaced(path: str, original: str, patched: str) -> Iterator[None]:
    module = importlib.import_module(_module_name(path))
    saved: list[tuple[Any, str, Any, bool]] = []
    # Each module-level replacement (by identity) and ADK's own function.
    own: dict[int, tuple[Any, Any]] = {}
    try:
        for owner, name, text in _changes(path, original, patched):
            code = _compiled(path, text)
            if name.startswith("import "):
                exec(code, vars(module))  # a new import the fixed functions use
                continue
            holder = module if owner is None else getattr(module, owner)
            if "super()" in text and owner is not None:
                raise RuntimeError(f"a fix of {path} uses super() in {owner}.{name}")
            scope: dict[str, Any] = {}
            exec(code, vars(module), scope)  # defined in ADK's namespace: sees its globals
            replacement = scope[name]
            had = name in vars(holder)
            current = vars(holder).get(name)
            if had and not _own(current, module):
                from .adk import NotApplicable

                where = f"{owner}.{name}" if owner else name
                raise NotApplicable(
                    f"{module.__name__}.{where} is not google-adk's own code now (replaced by "
                    "a test or a stand-in): a fix applies to ADK's code only"
                )
            if isinstance(current, staticmethod | classmethod):
                replacement = type(current)(replacement)
            replacement.__harness_fix__ = True
            saved.append((holder, name, current, had))
            setattr(holder, name, replacement)
            if owner is None and current is not None:
                own[id(replacement)] = (replacement, current)
                # Every other name bound to the replaced function in ADK's
                # modules (an import by name, or an alias such as
                # _rearranger's ``_drop_orphaned_function_responses = ...``).
                for other in list(sys.modules.values()):
                    other_name = getattr(other, "__name__", None) or ""
                    if not other_name.startswith("google.adk"):
                        continue
                    for alias, value in list(vars(other).items()):
                        if value is current and not (other is module and alias == name):
                            saved.append((other, alias, current, True))
                            setattr(other, alias, replacement)
        yield
    finally:
        for holder, name, current, had in reversed(saved):
            if had:
                setattr(holder, name, current)
            else:
                delattr(holder, name)
        # A module of ADK first imported while the fix was on bound the fixed
        # function by name (the loop above knows only the modules loaded when
        # the fix began): give it ADK's own back, or it keeps the fix for good.
        for other in list(sys.modules.values()) if own else ():
            if not (getattr(other, "__name__", None) or "").startswith("google.adk"):
                continue
            for alias, value in list(vars(other).items()):
                if id(value) in own and own[id(value)][0] is value:
                    setattr(other, alias, own[id(value)][1])


def _own(value: Any, module: Any) -> bool:
    """Whether ``value`` (a function, method or descriptor of ``module``) is
    ADK's own code as its source file defines it, or a fix's replacement."""
    function = getattr(value, "__func__", value)
    if getattr(function, "__harness_fix__", False):
        return True
    code = getattr(inspect.unwrap(function), "__code__", None) if callable(function) else None
    if code is None:
        return True  # not a function (a class or a constant): nothing to tell
    return Path(code.co_filename) == Path(inspect.getsourcefile(module) or "")


def replaced_code(name: str) -> frozenset[Any] | None:
    """The code objects of the functions and methods fix ``name`` replaces,
    as loaded now (a fix already applied stands in for ADK's own), or None
    when the fix cannot be judged by them: a :class:`HarnessChange`, or a
    replaced definition that is not a plain function. A function the fix
    adds is left out: only code it changes can call it. See
    :func:`calls_into`."""
    fix = fix_named(name)
    if fix.change is not None:
        return None
    out: set[Any] = set()
    for path, (original, patched) in patched_sources([name]).items():
        module = importlib.import_module(_module_name(path))
        for owner, fname, _ in _changes(path, original, patched):
            if fname.startswith("import "):
                continue
            holder = module if owner is None else getattr(module, owner, None)
            if holder is None:
                return None
            value = vars(holder).get(fname)
            if value is None:
                continue  # new: called only from the code the fix changes
            value = inspect.unwrap(getattr(value, "__func__", value))
            code = getattr(value, "__code__", None)
            if code is None:
                return None
            out.add(code)
    return frozenset(out)


@contextlib.contextmanager
def calls_into(codes: frozenset[Any]) -> Iterator[set[Any]]:
    """Within ``with``, collect which of ``codes`` run (a profile hook on
    this thread and on threads started meanwhile). A fix none of whose
    replaced functions (:func:`replaced_code`) a deterministic run calls
    cannot change that run: the fixed run executes the same code."""
    import threading

    seen: set[Any] = set()

    def hook(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code in codes:
            seen.add(frame.f_code)

    previous = sys.getprofile()
    sys.setprofile(hook)
    threading.setprofile(hook)
    try:
        yield seen
    finally:
        sys.setprofile(previous)
        threading.setprofile(None)  # type: ignore[arg-type]


def could_change(run: Callable[[], Any], names: Iterable[str]) -> Callable[[str], bool]:
    """Whether a fix of ``names`` could change what ``run()`` (a
    deterministic run of one case, as it ran) does. At the first question
    ``run`` is made once, watching which of the fixes' replaced functions it
    calls (:func:`calls_into`); a fix that replaces none of them cannot."""
    names = list(names)
    seen: list[tuple[dict[str, Any], set[Any]]] = []

    def could(name: str) -> bool:
        if not seen:
            codes = {n: replaced_code(n) for n in names}
            watched = frozenset().union(*(c for c in codes.values() if c is not None))
            with calls_into(watched) as called:
                run()
            seen.append((codes, called))
        codes, called = seen[0]
        return codes.get(name) is None or bool(codes[name] & called)

    return could


def unavailable(fix: Fix | str) -> str | None:
    """Why the installed release cannot take ``fix`` now (None: it can): its
    diff does not apply, or a function it replaces is not ADK's own code at
    the moment (a test or a deliberately broken stand-in replaced it; fixing
    that would remove what the stand-in plants, not an ADK fault)."""
    from .adk import NotApplicable

    fix = fix_named(fix) if isinstance(fix, str) else fix
    try:
        for path, (original, patched) in patched_sources([fix.name]).items():
            module = importlib.import_module(_module_name(path))
            for owner, name, _ in _changes(path, original, patched):
                holder = module if owner is None else getattr(module, owner)
                if name in vars(holder) and not _own(vars(holder)[name], module):
                    return (
                        f"{module.__name__}.{name} is not google-adk's own code now (replaced "
                        "by a test or a stand-in): a fix applies to ADK's code only"
                    )
    except NotApplicable as exc:
        return str(exc)
    return None


class _Block:
    """The fixes of one :func:`applied` block, put on and taken off (by the
    block, and around a :func:`withheld` one)."""

    def __init__(self, names: list[str], outer: list[str]) -> None:
        self.fixes = [fix_named(n) for n in names]
        self.outer = outer
        self.on: contextlib.ExitStack | None = None

    def put_on(self) -> None:
        names = [f.name for f in self.fixes]
        # Nested inside another ``applied``: the source is patched afresh with the
        # outer fixes' diffs and these, so the replacements keep the outer fixes.
        together = [f.name for f in map(fix_named, dict.fromkeys(self.outer + names)) if f.diff]
        sources = patched_sources(together)
        with contextlib.ExitStack() as stack:
            for path, (original, patched) in sources.items():
                stack.enter_context(_replaced(path, original, patched))
            for fix in self.fixes:
                if fix.change is not None and fix.name not in self.outer:
                    stack.enter_context(fix.change.factory())
            _ACTIVE.extend(n for n in names if n not in self.outer)
            stack.callback(_ACTIVE.__init__, self.outer)
            self.on = stack.pop_all()

    def take_off(self) -> None:
        on, self.on = self.on, None
        if on is not None:
            on.close()


@contextlib.contextmanager
def applied(names: Iterable[str]) -> Iterator[None]:
    """Within ``with``, the installed google-adk runs with the fixes ``names``.

    Raises ``KeyError`` for an unknown name and
    :class:`~compaction_harness.sdk.python.adk.NotApplicable` when a fix's diff does not
    apply to the installed release (nothing stays patched then)."""
    block = _Block(list(dict.fromkeys(names)), list(_ACTIVE))
    block.put_on()
    _BLOCKS.append(block)
    try:
        yield
    finally:
        _BLOCKS.remove(block)
        block.take_off()


@contextlib.contextmanager
def withheld() -> Iterator[None]:
    """Within ``with``, the installed google-adk runs as published, whatever
    fixes the enclosing :func:`applied` blocks apply (:func:`active` is
    empty); on exit they are applied again. What a run with fixes shows can
    so be told from what the release itself does (``replay --fixes`` of a
    recorded session: do the fixes move its compactions?)."""
    blocks = list(_BLOCKS)
    for block in reversed(blocks):
        block.take_off()
    try:
        yield
    finally:
        for block in blocks:
            block.put_on()


def active() -> tuple[str, ...]:
    """The fixes applied now (by every enclosing :func:`applied`), in order."""
    return tuple(_ACTIVE)


#: The names applied by the enclosing ``applied`` blocks.
_ACTIVE: list[str] = []
#: The enclosing ``applied`` blocks, outermost first.
_BLOCKS: list[_Block] = []


def patch_text(names: Iterable[str]) -> str:
    """The fixes ``names`` as one unified diff against the installed release's
    source files (paths as in adk-python's ``src/``). Raises ``NotApplicable``
    like :func:`applied`."""
    import difflib

    out: list[str] = []
    for path, (original, patched) in sorted(patched_sources(names).items()):
        out.extend(
            difflib.unified_diff(
                original.splitlines(keepends=True),
                patched.splitlines(keepends=True),
                f"a/{path}",
                f"b/{path}",
            )
        )
    return "".join(out)


for _entry in python_fixes.ENTRIES:
    register(Fix(**_entry))
