"""Python source laid out as adk-python's formatter lays it out.

adk-python formats its code with pyink (a fork of Black) at 80 columns with
two-space indentation (``[tool.pyink]`` in adk-python's ``pyproject.toml``,
:data:`ADK_PYINK_CONFIG`). The exporter builds expressions as trees of
:class:`Group` and :class:`Atom` and lays them out with :func:`render`, which
follows Black's rules for the shapes it produces: an expression that fits on
its line stays there; otherwise its bracket opens the line, a call's
arguments go on the next line, indented by four, when they fit there
together (with no trailing comma), or else one item a line, each followed by
a comma (a collection literal of several items always so); an item
that is itself too long is split the same way, and a dict value or a
keyword argument too long for its line is wrapped in parentheses. Long strings are never
produced: :class:`Strings` writes a long run of one character as a
repetition (``'x' * 300``) and any other long text as a module-level
constant of ``+``-joined pieces.
Whether the result is what pyink makes of it is checked by the test suite
(``tests/slow/test_export.py``), not assumed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "ADK_PYINK_CONFIG",
    "LINE_LENGTH",
    "Atom",
    "Group",
    "Strings",
    "call",
    "list_of",
    "render",
]

#: adk-python's line length (``[tool.pyink] line-length``).
LINE_LENGTH = 80
#: adk-python's pyink settings, as its ``pyproject.toml`` sets them (2025-2026).
ADK_PYINK_CONFIG = """\
[tool.pyink]
# Format py files following Google style-guide
line-length = 80
unstable = true
pyink-indentation = 2
pyink-use-majority-quotes = true
pyink-annotation-pragmas = [
  "noqa",
  "pylint:",
  "type: ignore",
  "pytype:",
  "mypy:",
  "pyright:",
  "pyre-",
]
"""
#: Heads of collection literals: split, they always take one item a line
#: (Black adds the trailing comma), where a call's arguments may share one.
_LITERALS = ("[", "{", "(")
#: Black's hanging indent inside brackets (pyink keeps four with two-space blocks).
HANG = "    "
#: The longest string literal written as one piece.
_PIECE = 48


@dataclass(frozen=True)
class Atom:
    """Source text that is never split (a name, a number, a short string)."""

    text: str


@dataclass(frozen=True)
class Group:
    """A bracketed expression: ``head`` ends with the opening bracket
    (``"types.Part("``, ``"["``), ``items`` are (prefix, node) pairs (the
    prefix is ``"name="``, ``"'key': "`` or empty), ``close`` is the bracket
    that closes it. ``explode``: one item a line even when they would fit
    (Black keeps a collection written with a trailing comma so)."""

    head: str
    items: tuple[tuple[str, Atom | Group], ...]
    close: str
    explode: bool = False


Node = Atom | Group


def flat(node: Node) -> str:
    """``node`` on one line."""
    if isinstance(node, Atom):
        return node.text
    inner = ", ".join(prefix + flat(item) for prefix, item in node.items)
    return node.head + inner + node.close


def render(node: Node, indent: str = "", lead: str = "", trail: str = "") -> list[str]:
    """The lines of ``lead`` + ``node`` + ``trail`` at ``indent``, laid out as
    pyink lays them out at :data:`LINE_LENGTH` columns (see the module docstring)."""
    line = indent + lead + flat(node) + trail
    if isinstance(node, Atom) and len(line) > LINE_LENGTH and lead.endswith((": ", "=")):
        # A dict value or keyword argument too long for its line is wrapped in
        # parentheses (pyink's ``unstable`` style; a positional one is not).
        return [indent + lead + "(", indent + HANG + node.text, indent + ")" + trail]
    if isinstance(node, Atom) or not node.items:
        return [line]
    if len(line) <= LINE_LENGTH and not node.explode:
        return [line]
    inner = indent + HANG
    lines = [indent + lead + node.head]
    body = ", ".join(prefix + flat(item) for prefix, item in node.items)
    if len(node.items) == 1 and not node.explode:
        prefix, item = node.items[0]
        if len(inner + body) <= LINE_LENGTH or (isinstance(item, Atom) and not prefix):
            lines.append(inner + body)
        else:
            lines += render(item, inner, prefix)
    elif len(inner + body) <= LINE_LENGTH and not node.explode and node.head not in _LITERALS:
        lines.append(inner + body)
    else:
        for prefix, item in node.items:
            lines += render(item, inner, prefix, ",")
    lines.append(indent + node.close + trail)
    return lines


def call(_callee: str, *args: Node, explode: bool = False, **kwargs: Node | None) -> Group:
    """``_callee(args..., key=value...)``; keyword arguments given as None are left out."""
    items = [("", a) for a in args]
    items += [(f"{k}=", v) for k, v in kwargs.items() if v is not None]
    return Group(f"{_callee}(", tuple(items), ")", explode)


def list_of(nodes: list[Node], *, explode: bool = False) -> Group:
    """A list literal."""
    return Group("[", tuple(("", n) for n in nodes), "]", explode)


def _quote(text: str) -> str:
    """A string literal with single quotes where that needs no escape (what
    pyink's majority-quote rule keeps in a file written with single quotes)."""
    return repr(text)


_RUN = re.compile(r"(.)\1{11,}\Z", re.DOTALL)


class Strings:
    """String expressions whose pieces are all short, for a module's source.

    A text of at most :data:`_PIECE` characters is a literal; a text ending in
    a long run of one character is written with a repetition
    (``'user 1 ' + 'x' * 300``); any other long text becomes a module-level
    constant (``_TEXT_1 = (...)``, ``+``-joined pieces one a line), which
    :meth:`definitions` lays out.
    """

    def __init__(self) -> None:
        self._constants: dict[str, str] = {}

    def __call__(self, text: str) -> Atom:
        match = _RUN.search(text)
        head = text[: match.start()] if match else text
        if match and len(head) <= _PIECE:
            repeated = f"{_quote(match.group(1))} * {len(match.group(0))}"
            return Atom(f"{_quote(head)} + {repeated}" if head else repeated)
        if len(text) <= _PIECE:
            return Atom(_quote(text))
        if text not in self._constants:
            self._constants[text] = f"_TEXT_{len(self._constants) + 1}"
        return Atom(self._constants[text])

    def definitions(self) -> list[str]:
        """The constants' source lines (empty when there are none)."""
        lines: list[str] = []
        for text, name in self._constants.items():
            pieces = [_quote(text[k : k + _PIECE]) for k in range(0, len(text), _PIECE)]
            one_line = f"{name} = " + " + ".join(pieces)
            if len(one_line) <= LINE_LENGTH:
                lines.append(one_line)
                continue
            lines.append(f"{name} = (")
            lines.append(HANG + pieces[0])
            lines += [HANG + "+ " + piece for piece in pieces[1:]]
            lines.append(")")
        return lines
