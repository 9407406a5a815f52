"""Read a Word document (.docx, .docm) with python-docx, written as Markdown.

Headings come from paragraph styles: "Title" is the document's title, "Heading N"
(or a style with an outline level, as WPS and custom styles have) a heading of
level N, so every sentence gets its heading path. A numbered or bulleted
paragraph is a list item. A table is written one row a line, each value after
its column header (see :mod:`selfcrag.files.tables`).

Only the document's body is read: page headers and footers (the same lines on
every page), comments, footnotes, text boxes and content controls (where Word
keeps its table of contents) are not. Nothing in the file runs or is fetched:
python-docx reads the XML parts and never the macros of a .docm, and linked
images and external links stay unloaded relationships.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

from selfcrag.files.containers import library_errors, open_zip
from selfcrag.files.outline import MarkdownOutline, style_heading_level
from selfcrag.files.tables import is_header_row, row_line

if TYPE_CHECKING:
    from docx.document import Document
    from docx.styles.style import ParagraphStyle
    from docx.table import Table, _Cell, _Row
    from docx.text.paragraph import Paragraph

__all__ = ["read_docx"]

_KIND = "Word document"
_MACRO_DOCUMENT = "application/vnd.ms-word.document.macroEnabled.main+xml"
_MAX_NESTING = 20  # tables in table cells, and base styles of styles, followed this deep at most


def read_docx(data: bytes) -> str:
    """Read a Word document's body as Markdown.

    Args:
        data: The .docx (or .docm) file's bytes.

    Returns:
        ``#`` headings from the heading styles, a line per paragraph, ``- `` list items, and a line per table row.

    Raises:
        UnreadableDocument: The file is password-protected, corrupt, a zip bomb, declares XML entities,
            or is not a Word document.
    """
    with open_zip(data, _KIND):
        pass  # bounds and entity declarations checked: python-docx reads the same bytes within them
    with library_errors(_KIND):
        document = _open_document(data)
        return _DocumentWriter(document).write()


def _open_document(data: bytes) -> Document:
    """Open the document, also a macro-enabled one (python-docx's ``Document()`` refuses a .docm)."""
    from docx.opc.part import PartFactory
    from docx.package import Package
    from docx.parts.document import DocumentPart

    # The same part as a .docx's main document, under another content type; its macros are another part, never read.
    PartFactory.part_type_for.setdefault(_MACRO_DOCUMENT, DocumentPart)
    part = Package.open(io.BytesIO(data)).main_document_part
    if not isinstance(part, DocumentPart):
        raise ValueError(f"not a Word document: {part.content_type}")
    return part.document


class _DocumentWriter:
    """Writes one document's body, remembering what each paragraph style means."""

    def __init__(self, document: Document) -> None:
        self.document = document
        self.outline = MarkdownOutline()
        self.styles: dict[str | None, tuple[int, bool]] = {}  # style id -> (heading level, 0 none / -1 title; list)

    def write(self) -> str:
        """The document as Markdown."""
        from docx.table import Table

        blocks = list(self.document.iter_inner_content())
        paragraphs = [block for block in blocks if not isinstance(block, Table)]
        has_title = any(self._style_meaning(paragraph)[0] == -1 for paragraph in paragraphs)
        for block in blocks:
            if isinstance(block, Table):
                self._table(block)
                continue
            paragraph = block
            level, listed = self._style_meaning(paragraph)
            text = paragraph.text
            if level == -1:
                self.outline.heading(1, text)
            elif level > 0:
                self.outline.heading(level + has_title, text)  # under a Title, Heading 1 is level 2
            elif listed:
                self.outline.item(text)
            else:
                self.outline.paragraph(text)
        return self.outline.text()

    def _table(self, table: Table) -> None:
        rows = [row for row in map(_row_cells, table.rows) if any(row)]
        if not rows:
            return
        headers: list[str] = []
        if is_header_row(rows[0], len(rows) - 1):
            headers, rows = rows[0], rows[1:]
        for row in rows:
            self.outline.paragraph(row_line(row, headers))

    def _style_meaning(self, paragraph: Paragraph) -> tuple[int, bool]:
        """What a paragraph's style makes it: its heading level (-1 the title, 0 none), and whether a list item."""
        own = paragraph._p.pPr
        if own is not None and own.outlineLvl is not None and own.outlineLvl.val < 9:
            return own.outlineLvl.val + 1, False
        style_id = paragraph._p.style
        if style_id not in self.styles:
            self.styles[style_id] = _meaning(paragraph.style)
        level, listed = self.styles[style_id]
        return level, listed or (own is not None and own.numPr is not None)


def _meaning(style: ParagraphStyle | None) -> tuple[int, bool]:
    """A paragraph style's heading level (-1 the title, 0 none) and whether it numbers its paragraphs.

    Its base styles count: a custom "My Heading" based on "Heading 2" is a level-2 heading.
    """
    listed = False
    for _ in range(_MAX_NESTING):
        if style is None:
            break
        name = style.name or ""
        level = style_heading_level(name)
        if level is not None:
            return level or -1, False  # 0: the title
        properties = style.element.pPr
        if properties is not None:
            if properties.outlineLvl is not None and properties.outlineLvl.val < 9:
                return properties.outlineLvl.val + 1, False
            listed = listed or properties.numPr is not None
        listed = listed or name.lower().startswith("list ")
        style = style.base_style
    return 0, listed


def _row_cells(row: _Row, depth: int = 0) -> list[str]:
    """A row's cells as text, one for each column of the table's grid, so that each stands under its header.

    A cell merged across columns stands under its first (python-docx repeats it for each column it spans);
    a cell merged down rows is repeated in each, as the rows below share it.
    """
    cells = [""] * (row.grid_cols_before or 0)
    previous = None
    for cell in row.cells:
        cells.append("" if cell._tc is previous else _cell_text(cell, depth))
        previous = cell._tc
    return cells


def _cell_text(cell: _Cell, depth: int = 0) -> str:
    """A cell's paragraphs and the tables nested in it, on one line."""
    from docx.table import Table

    parts: list[str] = []
    for block in cell.iter_inner_content():
        if not isinstance(block, Table):
            parts.append(block.text)
        elif depth < _MAX_NESTING:
            parts.extend(" ".join(_row_cells(row, depth + 1)) for row in block.rows)
    return " ".join(" ".join(parts).split())
