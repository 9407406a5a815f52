"""Read an OpenDocument text (.odt) as Markdown, from its ``content.xml`` parsed with defusedxml.

The text of an ODF document is a small vocabulary (``text:h`` headings with their
outline level, ``text:p`` paragraphs, ``text:list`` items, ``table:table`` rows),
so it is read here from the XML rather than through odfpy, which builds a DOM of
Python objects for every node (slow, and its loader expands what its SAX parser
is given). Headings keep their outline levels, a paragraph in the "Title" style
is the document's title, list items are items, and a table is written one row a
line, each value after its column header (see :mod:`selfcrag.files.tables`),
each row marked with a ``table row`` place, ``table 2, row 4``: the tables
counted in the document's order, the rows in the table's, its first (header)
row being row 1. The text after a table stands at no place again.

A footnote or endnote (``text:note``, kept inline where its mark stands) is no
part of the sentence around it: it is written as a paragraph of its own,
``Footnote 1: ...`` (its mark as the document shows it), after the paragraph,
heading, list item or table it stands in, so it is found and cited under the
section of its mark. A comment (``office:annotation``) is written the same way,
``Comment 1: ...``, numbered in the document's order, as a Word document's are.
A picture's alternative text (its frame's ``svg:title`` and ``svg:desc``) is a
paragraph after the paragraph the frame is anchored in, as are the paragraphs
of a text box; a file name or a generic name ("Image1") is no alternative text
(see :mod:`selfcrag.files.alt_text`). Page headers and footers (in ``styles.xml``)
are not read: the same lines on every page, as in a Word document (see
:mod:`selfcrag.files.docx`). Tables of contents and other generated indexes are
left out (they repeat the headings). Nothing is run or fetched.

A cell repeated across columns (``table:number-columns-repeated``) is written in
each, up to :data:`~selfcrag.files.tables.MAX_COLUMNS` columns; what the repeats
would make is checked against the document's budget before it is built, in a
row and in a table nested in a cell alike. A repeated row is written once.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from selfcrag.files.alt_text import alt_text_lines
from selfcrag.files.containers import ReadingBudget, UnreadableDocument, open_zip, parse_xml, read_member
from selfcrag.files.places import TABLE_ROW, PlacedOutline
from selfcrag.files.tables import MAX_COLUMNS, cell_text, is_header_row, row_line

if TYPE_CHECKING:
    from xml.etree.ElementTree import Element

    from selfcrag.files.places import Place

__all__ = ["read_odt"]

_KIND = "OpenDocument text"
_MAX_NESTING = 100  # lists in lists, spans in spans, tables in cells: deeper is no document a person wrote

_TEXT = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"
_TABLE = "{urn:oasis:names:tc:opendocument:xmlns:table:1.0}"
_OFFICE = "{urn:oasis:names:tc:opendocument:xmlns:office:1.0}"
_STYLE = "{urn:oasis:names:tc:opendocument:xmlns:style:1.0}"
_DRAW = "{urn:oasis:names:tc:opendocument:xmlns:drawing:1.0}"
_SVG = "{urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0}"

# Inline elements whose text is no part of the sentence around them: notes, comments, ruby annotations, frames
# (a note's, a comment's and a text box's paragraphs are written after the paragraph they stand in).
_NOT_INLINE = {
    f"{_TEXT}note",
    f"{_OFFICE}annotation",
    f"{_OFFICE}annotation-end",
    f"{_TEXT}ruby-text",
    f"{_DRAW}frame",
    f"{_DRAW}custom-shape",
    f"{_DRAW}g",
}
# Blocks that hold no text of the document's own: generated indexes (they repeat the headings), declarations, forms.
# Blocks whose text is no part of the document's own: comments.
_NOT_BLOCKS = {f"{_OFFICE}annotation", f"{_OFFICE}annotation-end"}
_NOT_TEXT = re.compile(r"\{[^}]*\}(?:table-of-content|[a-z-]*-index|bibliography|[a-z-]*-decls|forms|tracked-changes)$")
_HEADING_STYLE = re.compile(r"Heading_20_(\d)")


def read_odt(data: bytes, budget: ReadingBudget) -> tuple[str, tuple[Place, ...]]:
    """Read an OpenDocument text as Markdown.

    Args:
        data: The .odt file's bytes.
        budget: What reading it may make: charged the elements of its content before they are parsed, and
            its text as it is written; a repeated cell is checked against it before its row is built.

    Returns:
        The Markdown: ``#`` headings by outline level, a line per paragraph, ``- `` list items, a line per
        table row, and a ``Footnote 1: ...`` line after what holds each note; and a ``table row`` place
        (``table 2``, the row's number) at each table row's line, ended after each table.

    Raises:
        UnreadableDocument: The file is password-protected, corrupt, a zip bomb, declares XML entities,
            is nested more than ``_MAX_NESTING`` levels deep, or is past its budget.
    """
    with open_zip(data, _KIND) as archive:
        names = set(archive.namelist())
        manifest = read_member(archive, "META-INF/manifest.xml", _KIND) if "META-INF/manifest.xml" in names else b""
        if b"encryption-data" in manifest:  # ODF encrypts its members one by one and says so in the manifest
            raise UnreadableDocument(f"password-protected {_KIND} (save it without a password to read it)")
        root = parse_xml(read_member(archive, "content.xml", _KIND), _KIND, budget)
    body = root.find(f"{_OFFICE}body/{_OFFICE}text")
    if body is None:
        raise UnreadableDocument(f"not an {_KIND} (no text body in it)")
    writer = _ContentWriter(_parent_styles(root), budget)
    writer.blocks(body, has_title=writer.has_title(body))
    return writer.outline.text(), writer.outline.places()


def _parent_styles(root: Element) -> dict[str, str]:
    """The named style each automatic style of the document derives from ("P3" -> "Title")."""
    parents = {}
    for style in root.iterfind(f"{_OFFICE}automatic-styles/{_STYLE}style"):
        name, parent = style.get(f"{_STYLE}name"), style.get(f"{_STYLE}parent-style-name")
        if name and parent:
            parents[name] = parent
    return parents


class _ContentWriter:
    """Writes the blocks of one document's body."""

    def __init__(self, parents: dict[str, str], budget: ReadingBudget) -> None:
        self.parents = parents
        self.budget = budget
        self.outline = PlacedOutline(budget)
        self.shift = 0  # heading levels are one deeper under a title paragraph
        self.tables = 0
        self.comments = 0  # the comments written so far, numbered from 1

    def has_title(self, body: Element) -> bool:
        """Whether a paragraph of the body is in the "Title" style."""
        return any(self._style(p) == "Title" for p in body.iter(f"{_TEXT}p"))

    def blocks(self, parent: Element, has_title: bool = False, depth: int = 0) -> None:
        """Write the blocks inside ``parent``: headings, paragraphs, lists, tables, sections."""
        if depth > _MAX_NESTING:
            raise UnreadableDocument(f"{_KIND} nested more than {_MAX_NESTING} levels deep")
        self.shift = int(has_title) if depth == 0 else self.shift
        for child in parent:
            tag = child.tag
            if tag == f"{_TEXT}h":
                level = _int(child.get(f"{_TEXT}outline-level"), 1)
                self.outline.heading(level + self.shift, _inline_text(child))
                self._notes(child)
                self._frames(child, depth)
            elif tag == f"{_TEXT}p":
                self._paragraph(child)
                self._notes(child)
                self._frames(child, depth)
            elif tag == f"{_TEXT}list":
                self._list(child, depth + 1)
            elif tag == f"{_TABLE}table":
                self._table(child, depth + 1)
                self._notes(child)  # after the table: a note is no row of it
            elif tag not in _NOT_BLOCKS and not _NOT_TEXT.match(tag):
                self.blocks(child, depth=depth + 1)  # sections, frames and text boxes, and other containers

    def _paragraph(self, paragraph: Element) -> None:
        style = self._style(paragraph)
        heading = _HEADING_STYLE.fullmatch(style)
        if style == "Title":
            self.outline.heading(1, _inline_text(paragraph))
        elif heading:
            self.outline.heading(int(heading.group(1)) + self.shift, _inline_text(paragraph))
        else:
            self.outline.paragraph(_inline_text(paragraph))

    def _frames(self, paragraph: Element, depth: int) -> None:
        """Write the pictures' alternative text, text boxes and shapes with text anchored in a paragraph, after it."""
        pending = list(reversed(paragraph))
        while pending:
            node = pending.pop()
            if node.tag in (f"{_DRAW}text-box", f"{_DRAW}custom-shape"):
                self.blocks(node, depth=depth + 1)  # its own frames are written with its paragraphs
                continue
            if node.tag == f"{_DRAW}frame":
                title, description = node.find(f"{_SVG}title"), node.find(f"{_SVG}desc")
                for line in alt_text_lines(*(part.text if part is not None else None for part in (title, description))):
                    self.outline.paragraph(line)
            if node.tag not in (f"{_TEXT}note", f"{_OFFICE}annotation"):
                pending.extend(reversed(node))

    def _list(self, listed: Element, depth: int) -> None:
        if depth > _MAX_NESTING:
            raise UnreadableDocument(f"{_KIND} nested more than {_MAX_NESTING} levels deep")
        for item in listed:
            for child in item:
                if child.tag == f"{_TEXT}p":
                    self.outline.item(_inline_text(child))
                    self._notes(child)
                elif child.tag == f"{_TEXT}list":
                    self._list(child, depth + 1)
                else:  # a heading, a table or a section where an item's paragraph could be
                    self.blocks(_wrap(child), depth=depth + 1)

    def _table(self, table: Element, depth: int) -> None:
        self.tables += 1
        header_rows, rows = _table_rows(table, depth, self.budget)
        rows = [(number, row) for number, row in rows if any(row)]
        headers = header_rows[0][1] if header_rows else []
        if not header_rows and rows and is_header_row(rows[0][1], len(rows) - 1):
            headers, rows = rows[0][1], rows[1:]
        for number, row in rows:
            self.outline.place(TABLE_ROW, number, f"table {self.tables}")
            self.outline.paragraph(row_line(row, headers, self.budget))
        self.outline.unplace()  # the text after the table stands on none of its rows

    def _notes(self, element: Element) -> None:
        """Write the footnotes and endnotes that stand in a paragraph, heading or table, each a paragraph."""
        pending = list(reversed(element))
        while pending:
            node = pending.pop()
            if node.tag == f"{_TEXT}note":
                self._note(node)
            elif node.tag == f"{_OFFICE}annotation":
                self._comment(node)
            elif node.tag not in _NOT_INLINE:  # a text box's notes are written with its own paragraphs
                pending.extend(reversed(node))

    def _note(self, note: Element) -> None:
        kind = "Endnote" if note.get(f"{_TEXT}note-class") == "endnote" else "Footnote"
        citation = note.find(f"{_TEXT}note-citation")
        mark = " ".join("".join(citation.itertext()).split()) if citation is not None else ""
        body = note.find(f"{_TEXT}note-body")
        if body is None:
            return
        text = " ".join(" ".join(map(_inline_text, _paragraphs(body))).split())
        if text:
            self.outline.paragraph(f"{kind} {mark}: {text}" if mark else f"{kind}: {text}")

    def _comment(self, annotation: Element) -> None:
        """Write a comment's paragraphs (not its author and date) as one paragraph, ``Comment 1: ...``."""
        text = " ".join(" ".join(map(_inline_text, _paragraphs(annotation))).split())
        if text:
            self.comments += 1
            self.outline.paragraph(f"Comment {self.comments}: {text}")

    def _style(self, element: Element) -> str:
        name = element.get(f"{_TEXT}style-name") or ""
        return self.parents.get(name, name)


def _paragraphs(element: Element) -> list[Element]:
    """The paragraphs and headings under ``element`` whose text no paragraph around them reads, in document order.

    :func:`_inline_text` reads a paragraph's nested elements but those of :data:`_NOT_INLINE` (a note, a frame), so
    a paragraph nested in another's span is read with it, and one in a note or frame inside it on its own: each text
    is read once (read with each paragraph around it, 15,000 nested paragraphs made a 3 KB comment gigabytes long).
    """
    found: list[Element] = []
    pending = [(child, False) for child in reversed(element)]  # (element, whether a paragraph around it reads it)
    while pending:
        node, read = pending.pop()
        if node.tag in (f"{_TEXT}p", f"{_TEXT}h") and not read:
            found.append(node)
            read = True
        elif node.tag in _NOT_INLINE:
            read = False
        pending.extend((child, read) for child in reversed(node))
    return found


def _wrap(element: Element) -> Element:
    """An element holding ``element`` alone, for :meth:`_ContentWriter.blocks`."""
    from xml.etree.ElementTree import Element as NewElement

    holder = NewElement("holder")
    holder.append(element)
    return holder


_NumberedRows = list[tuple[int, list[str]]]  # each row's number in its table (from 1) and its cells as text


def _table_rows(table: Element, depth: int, budget: ReadingBudget) -> tuple[_NumberedRows, _NumberedRows]:
    """A table's header rows (those the document marks as such) and its other rows, numbered."""
    header_rows: _NumberedRows = []
    rows: _NumberedRows = []
    number = 1
    pending: list[tuple[Element, bool]] = [(table, False)]
    while pending:
        element, in_header = pending.pop()
        for child in reversed(element):  # pushed in reverse, popped in order
            if child.tag == f"{_TABLE}table-row":
                pending.append((child, in_header))
            elif child.tag in (f"{_TABLE}table-header-rows", f"{_TABLE}table-rows", f"{_TABLE}table-row-group"):
                pending.append((child, in_header or child.tag == f"{_TABLE}table-header-rows"))
        if element.tag == f"{_TABLE}table-row":
            # A repeated row is written once: repeats are empty rows kept for layout, or the same values again.
            (header_rows if in_header else rows).append((number, _row_cells(element, depth, budget)))
            number += max(_int(element.get(f"{_TABLE}number-rows-repeated"), 1), 1)
    return header_rows, rows


def _row_cells(row: Element, depth: int, budget: ReadingBudget) -> list[str]:
    """A row's cells as text, each repeated as the file says (one text, standing in each), to MAX_COLUMNS."""
    cells: list[str] = []
    for cell in row:
        if cell.tag not in (f"{_TABLE}table-cell", f"{_TABLE}covered-table-cell"):
            continue
        # A covered cell is merged into another.
        text = _cell_text(cell, depth, budget) if cell.tag == f"{_TABLE}table-cell" else ""
        repeat = min(_int(cell.get(f"{_TABLE}number-columns-repeated"), 1), MAX_COLUMNS - len(cells))
        cells.extend([text] * max(repeat, 0))
        if len(cells) >= MAX_COLUMNS:
            break
    while cells and not cells[-1]:
        cells.pop()
    return cells


def _cell_text(cell: Element, depth: int, budget: ReadingBudget) -> str:
    """A cell's paragraphs, list items and nested tables, on one line (checked against ``budget`` as it grows)."""
    if depth > _MAX_NESTING:
        raise UnreadableDocument(f"{_KIND} nested more than {_MAX_NESTING} levels deep")
    parts: list[str] = []
    length = 0
    for child in cell:
        if child.tag in (f"{_TEXT}p", f"{_TEXT}h"):
            parts.append(_inline_text(child))
        elif child.tag == f"{_TABLE}table":
            header_rows, rows = _table_rows(child, depth + 1, budget)
            for _, row in header_rows + rows:
                parts.extend(row)  # one text a repeated cell's columns share, until joined
                length += sum(map(len, row))
                budget.expect(length, counting="its repeated cells")
        elif child.tag not in _NOT_INLINE:
            parts.append(_cell_text(child, depth + 1, budget))
    return cell_text(" ".join(parts))


def _inline_text(element: Element) -> str:
    """The text of a paragraph or heading: its spans and links, ``text:s`` spaces, tabs and line breaks."""
    parts: list[str] = []
    # (element, True) writes an element's text and children; (element, False) writes the tail after it.
    pending: list[tuple[Element, bool]] = [(element, True)]
    while pending:
        node, opening = pending.pop()
        if not opening:
            parts.append(node.tail or "")
            continue
        tag = node.tag
        if tag == f"{_TEXT}s":
            parts.append(" " * min(_int(node.get(f"{_TEXT}c"), 1), 100))
        elif tag == f"{_TEXT}tab":
            parts.append(" ")
        elif tag == f"{_TEXT}line-break":
            parts.append("\n")
        elif tag not in _NOT_INLINE or node is element:
            parts.append(node.text or "")
            for child in reversed(node):
                pending.append((child, False))
                pending.append((child, True))
    return "".join(parts)


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default
