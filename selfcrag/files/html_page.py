"""HTML to text with its heading path, through selectolax (the Lexbor HTML5 parser).

The page is parsed as a browser would (implied end tags, broken nesting), then
its tree is walked: ``h1``-``h6`` start sections, and the text of paragraphs,
list items, table cells and other blocks is kept. Scripts, styles, navigation
and other things a reader does not read as text are left out, and nothing in a
page is run or fetched. A page nested deeper than
:data:`~selfcrag.files.html_depth.MAX_NESTING` is refused before it is parsed.
"""

from __future__ import annotations

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


def html_to_markdown(source: str) -> str:
    """Parse an HTML page and write it as Markdown-shaped text.

    The page's ``<title>`` is its level-1 heading when the page has no ``h1``,
    so the document's title is the page's either way.

    Args:
        source: The page's markup.

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
    outline = MarkdownOutline()
    title = tree.css_first("head > title")
    if title is not None and tree.css_first("h1") is None:
        outline.heading(1, title.text())
    if tree.body is not None:
        _PageWriter(outline).walk(tree.body)
    return outline.text()


class _PageWriter:
    """Walks the body once, gathering inline text until a block ends it."""

    def __init__(self, outline: MarkdownOutline) -> None:
        self.outline = outline
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
            self.outline.heading(_HEADINGS[tag], node.text(deep=True))
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
