"""HTML to text with its heading path, through selectolax (the Lexbor HTML5 parser).

The page is parsed as a browser would (implied end tags, broken nesting), then
its tree is walked: ``h1``-``h6`` start sections, and the text of paragraphs,
list items, table cells and other blocks is kept. Scripts, styles, navigation
and other things a reader does not read as text are left out, and nothing in a
page is run or fetched. A page nested deeper than
:data:`~selfcrag.files.html_depth.MAX_NESTING` is refused before it is parsed.
"""

from __future__ import annotations

import re

from selectolax.lexbor import LexborHTMLParser, LexborNode

from selfcrag.files.html_depth import MAX_NESTING, nesting_depth
from selfcrag.files.outline import MarkdownOutline

__all__ = ["TooDeeplyNested", "html_to_markdown"]


# Elements whose content is no text of the page: code, styling, site navigation, embedded objects.
_LEFT_OUT = (
    "script",
    "style",
    "nav",
    "noscript",
    "template",
    "svg",
    "math",
    "iframe",
    "object",
    "embed",
    "canvas",
    "select",
    "button",
)
# Navigation that generators write in a plain element: Texinfo's "Next: … Previous: … Up: …" panel, DocBook's
# header and footer, Sphinx's "related" bar, breadcrumbs.
_NAVIGATION = (
    "[role=navigation], .nav-panel, .navheader, .navfooter, .related, .breadcrumb, .breadcrumbs, "
    "[aria-label=breadcrumb], [aria-label=Breadcrumb]"
)
# Link marks that documentation generators put beside a heading or a definition (Sphinx and MkDocs ``¶`` in an
# ``a.headerlink``, VitePress ``#``, Docusaurus' zero-width space, rustdoc ``§``): a way to link there, no word of it.
_LINK_MARKS = "a.headerlink, a.header-anchor, a.hash-link, a.anchorjs-link"
_MARK_TEXTS = frozenset({"", "¶", "#", "§", "\U0001f517", "⚓", "\u200b"})
# A site's name after its page's title: "1. Copyright — Foo 1.0 documentation" (Sphinx), "Gadget Guide | Shop".
_SITE_NAME = re.compile(r"\s+(?:—|\|)\s+")
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
# Elements that end the text before them and start a block of their own.
_BLOCKS = frozenset(
    """
    address article aside blockquote body caption dd details dialog div dl dt fieldset figcaption figure footer
    form header hgroup hr html li main ol p section summary ul br
    """.split()
)


class TooDeeplyNested(ValueError):
    """A page nested deeper than :data:`MAX_NESTING`; the message is the reason to show."""


def html_to_markdown(source: str, *, under: int = 0) -> str:
    """Parse an HTML page and write it as Markdown-shaped text.

    The page's title is its ``<title>`` without the site's name after it ("1. Copyright —
    Foo 1.0 documentation" is "1. Copyright"). It is the level-1 heading when the page has no
    ``h1``; a page with several ``h1`` (a whole manual on one page) is written under it, its
    headings one level down, so that each of them is a section of the manual. A page with one
    ``h1`` is titled by it. The marks that link to a heading (Sphinx's ``¶``) are left out.

    Args:
        source: The page's markup.
        under: The heading level the page is read under: 0 for a page on its own; a chapter of a
            book passes the level of its section, so its headings are written below it and its
            ``<title>`` (the book's, or the chapter's again) is not read.

    Returns:
        The text, blocks separated by blank lines; empty when the page holds no text.

    Raises:
        TooDeeplyNested: Its elements nest deeper than :data:`MAX_NESTING` (measured before parsing).
    """
    if nesting_depth(source, MAX_NESTING) > MAX_NESTING:
        raise TooDeeplyNested(f"HTML nested more than {MAX_NESTING:,} elements deep")
    tree = LexborHTMLParser(source)
    tree.strip_tags(list(_LEFT_OUT))
    for navigation in tree.css(_NAVIGATION):
        navigation.decompose()
    _remove_link_marks(tree)
    outline = MarkdownOutline()
    if not under:
        title = _page_title(tree)
        main_headings = len(tree.css("h1"))
        if title and main_headings != 1:
            outline.heading(1, title)
            under = 1 if main_headings else 0
    if tree.body is not None:
        _PageWriter(outline, under).walk(tree.body)
    return outline.text()


def _page_title(tree: LexborHTMLParser) -> str:
    """The page's ``<title>``, without a site's name after an em dash or a bar; empty when it has none."""
    title = tree.css_first("head > title")
    text = " ".join(title.text().split()) if title is not None else ""
    page = _SITE_NAME.split(text, maxsplit=1)[0].strip()
    return page or text


def _remove_link_marks(tree: LexborHTMLParser) -> None:
    """Leave out the links to a heading that generators write beside it, so "Copyright¶" is "Copyright"."""
    for mark in tree.css(_LINK_MARKS):
        mark.decompose()
    for mark in tree.css(", ".join(f"{tag} a[href^='#']" for tag in (*_HEADINGS, "dt"))):
        if mark.text(deep=True).strip() in _MARK_TEXTS:
            mark.decompose()


class _PageWriter:
    """Walks the body once, gathering inline text until a block ends it."""

    def __init__(self, outline: MarkdownOutline, under: int = 0) -> None:
        self.outline = outline
        self.under = under  # levels the page's headings are written down by
        self.words: list[str] = []
        self.in_item = False

    def walk(self, body: LexborNode) -> None:
        """Write the blocks under ``body`` in document order (an explicit stack: any nesting depth works)."""
        # Each entry is (node, entering); a block is seen again on leaving, to end its text.
        stack: list[tuple[LexborNode, bool]] = [(body, True)]
        while stack:
            node, entering = stack.pop()
            tag = node.tag or ""
            if not entering:
                self.end_block(tag)
                continue
            if tag == "-text":
                self.words.append(node.text_content or "")
                continue
            if tag in _HEADINGS or tag in ("pre", "table"):
                self.end_block("")
                self.write_whole(node, tag)
                continue
            if tag in _BLOCKS:
                self.end_block("")
                self.in_item = self.in_item or tag == "li"
                stack.append((node, False))
            stack.extend((child, True) for child in reversed(list(node.iter(include_text=True))))
        self.end_block("")

    def end_block(self, tag: str) -> None:
        """Write the text gathered so far as a paragraph, or as an item inside a list item."""
        text = "".join(self.words)
        self.words.clear()
        if self.in_item:
            self.outline.item(text)
        else:
            self.outline.paragraph(text)
        if tag == "li" or text.strip():
            self.in_item = False

    def write_whole(self, node: LexborNode, tag: str) -> None:
        """Write a heading, a preformatted block or a table, which are read whole."""
        if tag in _HEADINGS:
            self.outline.heading(self.under + _HEADINGS[tag], node.text(deep=True))
        elif tag == "pre":
            self.outline.code(node.text(deep=True))
        else:
            caption = node.css_first("caption")
            if caption is not None:
                self.outline.paragraph(caption.text(deep=True))
            rows = [[cell.text(deep=True) for cell in _own(row, "th, td")] for row in _own(node, "tr")]
            self.outline.table(rows)


def _own(table_or_row: LexborNode, selector: str) -> list[LexborNode]:
    """The rows of a table, or the cells of a row, without those of a table nested inside it."""
    owner = table_or_row if table_or_row.tag == "table" else _enclosing_table(table_or_row)
    return [found for found in table_or_row.css(selector) if _same(_enclosing_table(found), owner)]


def _enclosing_table(node: LexborNode) -> LexborNode | None:
    """The nearest ``table`` above ``node``."""
    parent = node.parent
    while parent is not None and parent.tag != "table":
        parent = parent.parent
    return parent


def _same(a: LexborNode | None, b: LexborNode | None) -> bool:
    return a is not None and b is not None and a.mem_id == b.mem_id
