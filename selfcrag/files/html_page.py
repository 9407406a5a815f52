"""HTML to text with its heading path, through selectolax (the Lexbor HTML5 parser).

The page is parsed as a browser would (implied end tags, broken nesting), then
its tree is walked: ``h1``-``h6`` start sections, and the text of paragraphs,
list items, table cells and other blocks is kept. Scripts, styles, navigation
and other things a reader does not read as text are left out, and nothing in a
page is run or fetched. A page nested deeper than
:data:`~selfcrag.files.html_depth.MAX_NESTING` is refused before it is parsed, as is
one with more elements than its budget has pieces left (the parser builds a node for
each, and a few megabytes of ``<p>`` make millions).

What a page shows only when it is asked to is left out too: menus and dropdowns (a role of
``menu``, ``menubar`` or ``listbox``; a checkbox that opens a popup, with the menu beside it, as
Wikipedia's language menu is written), text hidden from readers (``hidden``, ``aria-hidden``),
the widgets of a documentation site's header (Node.js's pickers) and a page's table of contents
(DocBook's, Texinfo's, docutils'), which repeats its headings. A heading that titles only a Sphinx
toctree, with the documents it lists inlined below it (``singlehtml``), is left out and those
documents' headings raised to its level; the author and subtitle headings of a DocBook title page
are written as lines of text, not sections. A definition's term is written at the start of its
definition's first line ("backup: Presumably so ..."), so it is read with what it defines.

A picture's ``alt`` text is read where the picture stands, as a line of its own (a picture of one or two
characters, an emoji or a symbol drawn, within its line), unless it says nothing: empty, a file name, a
generic name (see :mod:`selfcrag.files.alt_text`), or a picture marked as decoration (``role=presentation``,
``aria-hidden``: Wikipedia's drawings of formulas, whose MathML is left out too).

Where a link can open the page (an element's ``id``: a heading's, a section's, a
definition's, an ``<a name>``), the text from there on is marked as standing at
that anchor (:data:`~selfcrag.files.places.ANCHOR`), so a citation links to
``page.html#id``: a heading's anchor holds until the next one, a section's (or
another block's) until the block ends.
"""

from __future__ import annotations

import re

from selectolax.lexbor import LexborHTMLParser, LexborNode

from selfcrag.files.alt_text import alt_text_lines
from selfcrag.files.containers import ReadingBudget, count_tags
from selfcrag.files.html_depth import MAX_NESTING, nesting_depth
from selfcrag.files.places import ANCHOR, Place, PlacedOutline

__all__ = ["TooDeeplyNested", "html_to_markdown", "read_html_page"]


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
# header and footer, Sphinx's "related" bar, breadcrumbs; MediaWiki's tagline under an article's title ("From
# Wikipedia, the free encyclopedia") and its "Jump to navigation" links, the same on every page.
_NAVIGATION = (
    "[role=navigation], .nav-panel, .navheader, .navfooter, .related, .breadcrumb, .breadcrumbs, "
    "[aria-label=breadcrumb], [aria-label=Breadcrumb], #siteSub, #jump-to-nav"
)
# Menus and the widgets that open them: ARIA menus and listboxes (a <select>'s options drawn in markup), Bootstrap's
# dropdown menus, MediaWiki's language menu and its "[edit]" links beside a heading, Node.js's header of pickers
# ("Table of contents", "Index", "Other versions", "Options": "View on single page | View as JSON") and the
# "Skip to content" link sites put first.
_MENUS = (
    "[role=menu], [role=menubar], [role=listbox], .dropdown-menu, .mw-portlet-lang, .mw-editsection, "
    "#gtoc, .skip-to-content, .skip-link"
)
# A checkbox that opens a popup, as a button would: its parent is the dropdown, label and menu together (Wikipedia's
# Vector skin writes every menu so, "154 languages" and the list of languages).
_POPUP_CHECKBOXES = "input[type=checkbox][aria-haspopup]:not([aria-haspopup=false])"
# Text not shown to readers: hidden elements (not the inactive tabs of a tab set, nor "until-found" text a browser's
# search opens) and elements hidden from screen readers (not KaTeX's drawing of a formula, whose MathML is gone).
_HIDDEN = "[hidden]:not([hidden=until-found]):not([role=tabpanel]), [aria-hidden=true]:not(.katex-html)"
# A page's table of contents, which repeats its headings as links: DocBook's and MediaWiki's (.toc), docutils' local
# one, Texinfo's (a "contents-heading" and the list after it), Docusaurus' and kramdown's. Classes are matched in
# any case: DocBook's DSSSL stylesheets write them in capitals (CLASS="TOC").
_CONTENTS = (
    "[class~=toc i], #toc, [class~=contents i][class~=topic i], [role=doc-toc], .table-of-contents, #markdown-toc, "
    "h2[class~=contents-heading i], h2[class~=contents-heading i] + div[class~=contents i], "
    "h2[class~=shortcontents-heading i], h2[class~=shortcontents-heading i] + div[class~=shortcontents i]"
)
# At most this many blocks are looked at as tables of contents (each is searched for headings), and as Sphinx
# toctrees: a page with more has a table of contents in each chapter at most (DocBook's), never thousands.
_MAX_CONTENTS = 500
# The headings of a DocBook title page that are no section's title: its authors and other credits, and its subtitle.
_BYLINES = ", ".join(
    [
        f"{heading}[class~={credit} i]"
        for heading in ("h1", "h2", "h3", "h4", "h5", "h6")
        for credit in ("author", "othercredit", "editor", "corpauthor", "collab")
    ]
    + ["[class~=titlepage i] [class~=subtitle i]"]
)
# A term that ends like a sentence is followed by its definition after a space; any other, after a colon.
_TERM_ENDS = tuple(".!?:;。！？：；")
# Link marks that documentation generators put beside a heading or a definition (Sphinx and MkDocs ``¶`` in an
# ``a.headerlink``, VitePress ``#``, Docusaurus' zero-width space, rustdoc ``§``): a way to link there, no word of it.
_LINK_MARKS = "a.headerlink, a.header-anchor, a.hash-link, a.anchorjs-link"
_MARK_TEXTS = frozenset({"", "¶", "#", "§", "\U0001f517", "⚓", "\u200b"})
# A site's name after its page's title: "1. Copyright — Foo 1.0 documentation" (Sphinx), "Gadget Guide | Shop".
_SITE_NAME = re.compile(r"\s+(?:—|\|)\s+")
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_MAX_SYMBOL = 2  # a picture whose alternative text is this short stands for a symbol in its line (an emoji, "→")
# Elements that end the text before them and start a block of their own.
_BLOCKS = frozenset(
    """
    address article aside blockquote body caption dd details dialog div dl dt fieldset figcaption figure footer
    form header hgroup hr html li main ol p section summary ul br
    """.split()
)


# Elements whose anchor holds until the next one, as a heading's does for its section (a definition's, until its
# list ends); any other block's holds while the block lasts (a section, a footnote's list item, a layout div).
_POINT_ANCHORS = frozenset({*_HEADINGS, "a", "dt"})
# The longest id taken as an anchor; a longer one, or one with spaces or unprintable characters, is none a link uses.
_MAX_ANCHOR = 200


class TooDeeplyNested(ValueError):
    """A page nested deeper than :data:`MAX_NESTING`; the message is the reason to show."""


def html_to_markdown(source: str, budget: ReadingBudget, *, under: int = 0) -> str:
    """Parse an HTML page and write it as Markdown-shaped text.

    The page's title is its ``<title>`` without the site's name after it ("1. Copyright —
    Foo 1.0 documentation" is "1. Copyright"). It is the level-1 heading when the page has no
    ``h1``; a page with several ``h1`` (a whole manual on one page) is written under it, its
    headings one level down, so that each of them is a section of the manual. A page with one
    ``h1`` is titled by it. The marks that link to a heading (Sphinx's ``¶``) are left out.

    Args:
        source: The page's markup.
        budget: What reading the document may make: charged the page's elements before it is parsed, and its
            text as it is written.
        under: The heading level the page is read under: 0 for a page on its own; a chapter of a
            book passes the level of its section, so its headings are written below it and its
            ``<title>`` (the book's, or the chapter's again) is not read.

    Returns:
        The text, blocks separated by blank lines; empty when the page holds no text.

    Raises:
        TooDeeplyNested: Its elements nest deeper than :data:`MAX_NESTING` (measured before parsing).
        UnreadableDocument: It is past its budget.
    """
    return _written(source, under, budget).text()


def read_html_page(source: str, budget: ReadingBudget) -> tuple[str, tuple[Place, ...]]:
    """Read an HTML file: its text (as :func:`html_to_markdown` writes it) and the anchors the text stands at.

    Args:
        source: The page's markup.
        budget: What reading it may make (see :func:`html_to_markdown`).

    Returns:
        The text, and where in it each anchor's text starts (:data:`~selfcrag.files.places.ANCHOR` places, and
        :data:`~selfcrag.files.places.NO_PLACE` where a block's anchor ends with no other in force).

    Raises:
        TooDeeplyNested: Its elements nest deeper than :data:`MAX_NESTING` (measured before parsing).
        UnreadableDocument: It is past its budget.
    """
    outline = _written(source, 0, budget)
    return outline.text(), outline.places()


def _written(source: str, under: int, budget: ReadingBudget) -> PlacedOutline:
    """Parse a page and write its blocks, and its anchors, into an outline (see :func:`html_to_markdown`)."""
    if nesting_depth(source, MAX_NESTING) > MAX_NESTING:
        raise TooDeeplyNested(f"HTML nested more than {MAX_NESTING:,} elements deep")
    budget.charge(pieces=count_tags(source))
    tree = LexborHTMLParser(source)
    tree.strip_tags(list(_LEFT_OUT))
    for navigation in tree.css(_NAVIGATION):
        navigation.decompose()
    _remove_menus(tree)
    _remove_tables_of_contents(tree)
    main_headings = len(tree.css("h1"))  # a toctree's heading left out below stands for the documents raised to it
    raised = _raise_inlined_documents(tree)
    _anchor_headings(tree)
    _remove_hidden(tree)
    _remove_link_marks(tree)
    outline = PlacedOutline(budget)
    if not under:
        title = _page_title(tree)
        if title and main_headings != 1:
            outline.heading(1, title)
            under = 1 if main_headings else 0
    if tree.body is not None:
        bylines = {heading.mem_id for heading in tree.css(_BYLINES)}
        _PageWriter(outline, under, raised, bylines).walk(tree.body)
    return outline


def _page_title(tree: LexborHTMLParser) -> str:
    """The page's ``<title>``, without a site's name after an em dash or a bar; empty when it has none."""
    title = tree.css_first("head > title")
    text = " ".join(title.text().split()) if title is not None else ""
    page = _SITE_NAME.split(text, maxsplit=1)[0].strip()
    return page or text


def _remove_menus(tree: LexborHTMLParser) -> None:
    """Leave out menus and dropdowns (see :data:`_MENUS`), and the dropdown around a checkbox that opens a popup."""
    for menu in tree.css(_MENUS):
        menu.decompose()
    for checkbox in tree.css(_POPUP_CHECKBOXES):
        dropdown = checkbox.parent
        if dropdown is not None and dropdown.tag not in ("body", "html", None):
            dropdown.decompose()


def _remove_tables_of_contents(tree: LexborHTMLParser) -> None:
    """Leave out a page's tables of contents (see :data:`_CONTENTS`); one holding sections of its own is kept.

    A table of contents has one heading at most, its title ("Table of Contents"); a block of that class
    with more is the text itself (Sphinx's ``singlehtml`` inlines the documents a toctree lists).
    """
    for contents in tree.css(_CONTENTS)[:_MAX_CONTENTS]:
        if contents.tag in _HEADINGS or len(contents.css(", ".join(_HEADINGS))) <= 1:
            contents.decompose()


def _raise_inlined_documents(tree: LexborHTMLParser) -> dict[int, int]:
    """Leave out a heading that titles only a Sphinx toctree whose documents are inlined below it.

    Sphinx's ``singlehtml`` writes the master document's toctree ("Contents") as a section holding every
    document it lists: were the heading kept, each chapter would stand under "Contents". The chapters' headings
    are raised to the level it had instead.

    Returns:
        For each toctree so titled (by its ``mem_id``), how many levels the headings inside it are raised.
    """
    raised: dict[int, int] = {}
    for toctree in tree.css("div.toctree-wrapper")[:_MAX_CONTENTS]:
        heading = _previous_element(toctree)
        inner = toctree.css(", ".join(_HEADINGS))
        if heading is None or heading.tag not in _HEADINGS or not inner:
            continue
        levels = min(_HEADINGS[found.tag or ""] for found in inner) - _HEADINGS[heading.tag]
        if levels > 0:
            heading.decompose()
            raised[toctree.mem_id] = levels
    return raised


def _previous_element(node: LexborNode) -> LexborNode | None:
    """The element before ``node`` among its siblings (white space and comments passed over), if any."""
    previous = node.prev
    while previous is not None and (
        previous.tag == "-comment" or (previous.tag == "-text" and not previous.text(deep=False).strip())
    ):
        previous = previous.prev
    return previous


def _remove_hidden(tree: LexborHTMLParser) -> None:
    """Leave out elements not shown to readers (see :data:`_HIDDEN`); an empty one is kept, for its anchor.

    Node.js's pages put an anchor in an empty ``<a aria-hidden="true" id="fs_file_system">``.
    """
    for hidden in tree.css(_HIDDEN):
        child = hidden.child
        empty = child is None or (child.next is None and child.tag == "-text" and not child.text(deep=False).strip())
        if not empty:
            hidden.decompose()


def _anchor_headings(tree: LexborHTMLParser) -> None:
    """Give a heading (or a definition's term) without an ``id`` the first one inside it, before the marks go.

    Node.js's API pages write a heading's anchor on its ``#`` mark (``<h3>fs.readFile()<a class="mark"
    href="#fsreadfile" id="fsreadfile">#</a></h3>``); others put an ``<a name>`` inside the heading.
    """
    for heading in tree.css(", ".join((*_HEADINGS, "dt"))):
        if heading.attributes.get("id"):
            continue
        inner = heading.css_first("[id], a[name]")
        if inner is not None:
            name = inner.attributes.get("id") or inner.attributes.get("name")
            if name:
                heading.attrs["id"] = name


def _remove_link_marks(tree: LexborHTMLParser) -> None:
    """Leave out the links to a heading that generators write beside it, so "Copyright¶" is "Copyright"."""
    for mark in tree.css(_LINK_MARKS):
        mark.decompose()
    for mark in tree.css(", ".join(f"{tag} a[href^='#']" for tag in (*_HEADINGS, "dt"))):
        if mark.text(deep=True).strip() in _MARK_TEXTS:
            mark.decompose()


class _PageWriter:
    """Walks the body once, gathering inline text until a block ends it."""

    def __init__(
        self,
        outline: PlacedOutline,
        under: int = 0,
        raised: dict[int, int] | None = None,
        bylines: set[int] | None = None,
    ) -> None:
        self.outline = outline
        self.under = under  # levels the page's headings are written down by
        self.raised = raised or {}  # blocks whose headings are written up by some levels (a titled Sphinx toctree)
        self.bylines = bylines or set()  # headings written as lines of text (a title page's authors)
        self.words: list[str] = []
        self.in_item = False
        self.anchors = 0  # anchors marked so far: each mark is numbered in the page's order
        self.anchor: str | None = None  # the anchor in force
        self.before: dict[int, str | None] = {}  # a block with an anchor of its own: the anchor in force before it
        self.in_term = 0  # definition terms (<dt>) open around the text being gathered
        self.terms: list[str] = []  # terms read and not yet written: they open their definition's first line
        self.lists: list[bool] = []  # for each definition list open, whether it holds definitions (<dd>)

    def walk(self, body: LexborNode) -> None:
        """Write the blocks under ``body`` in document order (an explicit stack: any nesting depth works)."""
        # Each entry is (node, entering); a block is seen again on leaving, to end its text.
        stack: list[tuple[LexborNode, bool]] = [(body, True)]
        while stack:
            node, entering = stack.pop()
            tag = node.tag or ""
            if not entering:
                self.leave(node, tag)
                continue
            if tag == "-text":
                self.words.append(node.text_content or "")
                continue
            if (tag in _HEADINGS and node.mem_id not in self.bylines) or tag in ("pre", "table"):
                self.end_block("")
                self.write_terms()
                before, anchored = self.anchor, self.anchor_at(node, tag)
                self.write_whole(node, tag)
                if anchored and tag not in _HEADINGS:
                    self.mark(before)
                continue
            if tag in _BLOCKS or tag in _HEADINGS:  # a byline's heading is a line of text
                self.enter(node, tag)
                stack.append((node, False))
            elif tag == "a":
                self.anchor_at(node, tag)
            elif tag == "img":
                self.picture(node)
            stack.extend((child, True) for child in reversed(list(node.iter(include_text=True))))
        self.end_block("")
        self.write_terms()

    def enter(self, node: LexborNode, tag: str) -> None:
        """Start a block: end the text before it, and note what it changes until it ends."""
        self.end_block("")
        if tag == "li":
            self.write_terms()  # a list in a definition: its term stands on its own line above it
        before = self.anchor
        # A definition's anchor (<dt id>) holds until the next, and ends with its list.
        if (self.anchor_at(node, tag) and tag not in _POINT_ANCHORS) or tag == "dl":
            self.before[node.mem_id] = before
        self.in_item = self.in_item or tag == "li"
        if tag == "dl":
            self.lists.append(_holds_definitions(node))
        elif tag == "dt":
            self.in_term += 1
        self.under -= self.raised.get(node.mem_id, 0)

    def leave(self, node: LexborNode, tag: str) -> None:
        """End a block: write its text, and undo what it changed."""
        self.end_block(tag)
        if tag == "dl":
            self.write_terms()  # terms without a definition after them
            if self.lists:
                self.lists.pop()
        elif tag == "dt":
            self.in_term = max(self.in_term - 1, 0)
        self.under += self.raised.get(node.mem_id, 0)
        if node.mem_id in self.before and (previous := self.before.pop(node.mem_id)) != self.anchor:
            self.mark(previous)  # the block's anchor ends with it

    def anchor_at(self, node: LexborNode, tag: str) -> bool:
        """Mark the text from here on as standing at the element's anchor, if it has one a link can open at.

        Returns:
            Whether it had one.
        """
        attributes = node.attributes
        name = attributes.get("id") or (attributes.get("name") if tag == "a" else None)
        if tag == "a" and attributes.get("href") is not None:
            return False  # a link, not a place to link to (a footnote mark's back-reference)
        if not name or len(name) > _MAX_ANCHOR or not name.isprintable() or any(c.isspace() for c in name):
            return False
        self.mark(name)
        return True

    def mark(self, name: str | None) -> None:
        """Mark the text from here on as standing at anchor ``name`` (None: at none)."""
        self.anchor = name
        if name is None:
            self.outline.unplace()
            return
        self.anchors += 1
        self.outline.place(ANCHOR, self.anchors, label=name)

    def end_block(self, tag: str) -> None:
        """Write the text gathered so far as a paragraph, or as an item inside a list item.

        A definition's term is held instead, to open the first line of its definition: "backup: Presumably
        so ..." is read as one, and the term never trails the definition before it.
        """
        text = "".join(self.words)
        self.words.clear()
        if self.in_term and self.lists and self.lists[-1]:
            if text.strip():
                self.terms.append(" ".join(text.split()))
            return
        if self.terms and text.strip():
            text = _defined(self.terms, text)
            self.terms.clear()
        if self.in_item:
            self.outline.item(text)
        else:
            self.outline.paragraph(text)
        if tag == "li" or text.strip():
            self.in_item = False

    def picture(self, node: LexborNode) -> None:
        """Write a picture's alternative text as a line of its own where it stands (a symbol's, within its line)."""
        attributes = node.attributes
        if attributes.get("role") in ("presentation", "none") or attributes.get("aria-hidden") == "true":
            return
        for text in alt_text_lines(attributes.get("alt")):
            if len(text) <= _MAX_SYMBOL:
                self.words.append(text)
                continue
            self.end_block("")
            self.words.append(text)
            self.end_block("")

    def write_terms(self) -> None:
        """Write the terms held as a line of their own: what follows them is no line of text (a list, a table)."""
        if self.terms:
            self.outline.paragraph(", ".join(self.terms))
            self.terms.clear()

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


def _holds_definitions(definition_list: LexborNode) -> bool:
    """Whether a ``<dl>`` holds a definition (``<dd>``) of its own, or in a ``<div>`` grouping a term with it.

    A list of terms alone (DocBook's table of contents) is a list of lines, none opening the next.
    """
    for child in definition_list.iter():
        if child.tag == "dd" or (child.tag == "div" and any(inner.tag == "dd" for inner in child.iter())):
            return True
    return False


def _defined(terms: list[str], text: str) -> str:
    """A definition's first line, opened by its terms: "backup: Presumably so ...", "-q, --quiet: Print less"."""
    term = ", ".join(terms)
    return f"{term} {text.strip()}" if term.endswith(_TERM_ENDS) else f"{term}: {text.strip()}"


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
