"""The documentation: a README that fits on a screen, and pages that link up.

The README holds what a newcomer needs first (what the project is, the two
set-up commands, the first failure found and replayed, the command line in
one table) and links every page under ``docs/``, where the rest lives. These
tests keep it so: the README stays short, every page is linked from it, and
every relative link in the README and the pages reaches a file that exists,
and a heading that exists where it names one.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
#: The most lines the README may have: about a screen or two.
README_LINES = 300
#: Links to pages another change writes, before they exist (none now: the
#: per-fault pages of docs/faults/ are generated and committed). Until a page
#: exists such a link is not dead, only early; once it exists it is checked
#: like every other link, anchors included.
PENDING: set[str] = set()

_FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.M | re.S)
_CODE_SPAN = re.compile(r"(`+).+?\1", re.S)
_INLINE_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$", re.M)
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)


def pages() -> list[Path]:
    """The README and the docs pages whose links are checked."""
    return [README, *sorted(DOCS.glob("*.md"))]


def _prose(text: str) -> str:
    """``text`` without fenced code blocks and code spans: a link in code is
    an example, not a link."""
    return _CODE_SPAN.sub("", _FENCE.sub("", text))


def links(text: str) -> list[str]:
    """Every link target of Markdown ``text`` (inline links and reference
    definitions), outside code."""
    prose = _prose(text)
    return _INLINE_LINK.findall(prose) + _REFERENCE.findall(prose)


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped
    (letters, digits, spaces, ``-`` and ``_`` kept), spaces as ``-``."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    """The anchors of a Markdown page's headings (a repeated one gets ``-1``,
    ``-2``, ... as GitHub numbers them)."""
    seen: dict[str, int] = {}
    out = set()
    for heading in _HEADING.findall(_FENCE.sub("", text)):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        out.add(base if count == 0 else f"{base}-{count}")
    return out


def dead_links(page: Path, root: Path = ROOT) -> list[str]:
    """The relative links of ``page`` whose file (or heading) does not exist,
    each as ``target: why``."""
    out = []
    text = page.read_text(encoding="utf-8")
    for target in links(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
            continue  # a URL (https:, mailto:): not a file of the project
        path_part, _, anchor = target.partition("#")
        path = (page.parent / path_part).resolve() if path_part else page
        try:
            shown = path.relative_to(root.resolve()).as_posix()
        except ValueError:
            out.append(f"{target}: outside the project")
            continue
        if not path.exists():
            if shown not in PENDING:
                out.append(f"{target}: no file {shown}")
            continue
        if (
            anchor
            and path.suffix == ".md"
            and anchor not in anchors(path.read_text(encoding="utf-8"))
        ):
            out.append(f"{target}: no heading #{anchor} in {shown}")
    return out


def unlinked_pages(readme: Path = README, docs: Path = DOCS) -> list[str]:
    """The docs pages (``docs/*.md``) the README does not link."""
    linked = {
        (readme.parent / t.partition("#")[0]).resolve()
        for t in links(readme.read_text(encoding="utf-8"))
        if t.partition("#")[0]
    }
    return [p.name for p in sorted(docs.glob("*.md")) if p.resolve() not in linked]


def test_the_readme_fits_in_its_budget():
    lines = len(README.read_text(encoding="utf-8").splitlines())
    assert lines <= README_LINES, (
        f"README.md has {lines} lines (at most {README_LINES}): move detail into docs/"
    )


@pytest.mark.parametrize("page", pages(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_reaches_a_file_and_heading_that_exist(page: Path):
    dead = dead_links(page)
    assert dead == [], f"{page.relative_to(ROOT)}: dead links:\n" + "\n".join(dead)


def test_the_readme_links_every_docs_page():
    missing = unlinked_pages()
    assert missing == [], f"README.md links no docs/{', docs/'.join(missing)}"


def test_the_readme_keeps_what_a_newcomer_needs_first():
    text = README.read_text(encoding="utf-8")
    for needed in ("make fuzz", "make test", "## Your first failure, found and replayed"):
        assert needed in text, needed
    assert "## Where the rest is" in text


# -- the checks themselves: each catches what it is for -----------------------------------
def test_the_link_check_finds_a_dead_file_and_a_dead_anchor(tmp_path: Path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n\n## Some part: here\n", encoding="utf-8")
    page = tmp_path / "README.md"
    page.write_text(
        "[ok](docs/a.md) [ok](docs/a.md#some-part-here) [ok](#top) [web](https://example.org)\n"
        "[gone](docs/b.md) [bad](docs/a.md#nowhere) `[code](docs/c.md)`\n\n# Top\n\n"
        "```\n[block](docs/d.md)\n```\n[ref]: docs/e.md\n",
        encoding="utf-8",
    )
    assert dead_links(page, tmp_path) == [
        "docs/b.md: no file docs/b.md",
        "docs/a.md#nowhere: no heading #nowhere in docs/a.md",
        "docs/e.md: no file docs/e.md",
    ]


def test_the_page_check_finds_a_page_the_readme_does_not_link(tmp_path: Path):
    (tmp_path / "docs").mkdir()
    for name in ("a.md", "b.md"):
        (tmp_path / "docs" / name).write_text("# page\n", encoding="utf-8")
    readme = tmp_path / "README.md"
    readme.write_text("see [a](docs/a.md#page)\n", encoding="utf-8")
    assert unlinked_pages(readme, tmp_path / "docs") == ["b.md"]


def test_slugs_are_githubs():
    assert slug("ADK for TypeScript (`SDK=js`)") == "adk-for-typescript-sdkjs"
    assert slug("The runner driver: ADK's own `Runner` as ground truth") == (
        "the-runner-driver-adks-own-runner-as-ground-truth"
    )
    assert anchors("# A\n## A\n```\n# not a heading\n```\n") == {"a", "a-1"}
