"""The README and the docs/ pages link only to files (and headings) that exist in the checkout."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

_FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.DOTALL)
# [text](target) and ![alt](target), the target up to a space (a title) or the closing parenthesis.
_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)


def prose(page: Path) -> str:
    """The page without code blocks and code spans, where a ``[x](y)`` is text, not a link."""
    return _CODE_SPAN.sub("", _FENCE.sub("", page.read_text(encoding="utf-8")))


def relative_links(page: Path) -> list[str]:
    return [t for t in _LINK.findall(prose(page)) if not re.match(r"[a-z][a-z0-9+.-]*:", t, re.IGNORECASE)]


def anchors(page: Path) -> set[str]:
    """GitHub's anchors for a page's headings: lower case, punctuation dropped (a code span's text kept), spaces
    as hyphens."""
    headings = _HEADING.findall(_FENCE.sub("", page.read_text(encoding="utf-8")))
    return {re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-") for title in headings}


def test_the_readme_links_to_each_docs_page() -> None:
    linked = {(ROOT / link.split("#")[0]).resolve() for link in relative_links(ROOT / "README.md")}
    assert set(PAGES[1:]) <= linked


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.relative_to(ROOT).as_posix())
def test_every_relative_link_points_at_an_existing_file_and_heading(page: Path) -> None:
    links = relative_links(page)
    broken = []
    for link in links:
        path, _, fragment = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        if not target.exists():
            broken.append(link)
        elif fragment and target.suffix == ".md" and fragment not in anchors(target):
            broken.append(link)
    assert broken == [], f"{page.name}: links to nothing: {broken}"


def test_the_link_check_sees_a_broken_link(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "# Page\n\nSee [gone](gone.md), [here](#page), [no heading](#nowhere) and `[not a link](x.md)`.\n",
        encoding="utf-8",
    )
    assert relative_links(page) == ["gone.md", "#page", "#nowhere"]
    assert "page" in anchors(page) and "nowhere" not in anchors(page)
