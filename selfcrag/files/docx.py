"""Read a Word document (.docx, .docm) with python-docx, written as Markdown.

Headings come from paragraph styles: "Title" is the document's title, "Heading N"
(or a style with an outline level, as WPS and custom styles have) a heading of
level N, so every sentence gets its heading path. A numbered or bulleted
paragraph is a list item. A table is written one row a line, each value after
its column header (see :mod:`selfcrag.files.tables`), and each row is marked
with a ``table row`` place, ``table 2, row 4``: the tables counted in the
document's order, the rows in the table's, its header row being row 1. The text
after a table stands at no place again, and is cited by its section. A table's
cells are read from its XML here, not through python-docx's grid, which makes an
entry for every column a cell spans or a row skips: a ``w:gridSpan`` or
``w:gridBefore`` of a hundred million would make as many. A row is read across
:data:`~selfcrag.files.tables.MAX_COLUMNS` columns at most, and a cell merged down
rows is written in each (its text charged to the document's budget each time).

Footnotes and endnotes are read (python-docx does not read them: their parts
are parsed here with defusedxml): each note is written as a paragraph,
``Footnote 1: ...``, after the paragraph, heading or table that refers to it,
so it is found and cited under the section where its mark stands, which is
where a reader of the document finds it. Notes are numbered in the order
their marks stand, footnotes and endnotes each from 1, as Word counts them; the
form Word shows the number in (endnotes may read i, ii, iii) and a custom mark
(``*``) are not read. A note no mark refers to is not written. Comments are
read the same way, from their own part: ``Comment 1: ...`` after the paragraph
(or table) their mark stands in, numbered in the order of their marks.

Equations (Office Math, ``m:oMath``) are read where they stand in their
paragraph, in a linear form: a fraction ``(a)/(b)``, a power ``x^(2)``, an
index ``x_(i)``, a root ``√(x)``, a delimiter's brackets and an n-ary operator's
sign kept; the rest is the equation's text in order. A paragraph reads "For
x^2+1, the angle is θ." where python-docx's text has a hole.

Tracked changes are read as the document reads once they are accepted: inserted
text (``w:ins``, ``w:moveTo``) is read, deleted text (``w:del``, ``w:delText``)
is not. A picture's alternative text (its ``wp:docPr`` title and description,
Word's "Alt Text") and a text box's paragraphs (a DrawingML ``wps:txbx`` or a
VML ``v:textbox``) are read where they are anchored: each a paragraph after the
paragraph (or in the table cell) that holds them. Word writes a text box twice,
a DrawingML one in ``mc:Choice`` and a VML copy in ``mc:Fallback``; the first
that holds anything is read, never both. A file name or a generic name
("Picture 3") as alternative text is no text (see :mod:`selfcrag.files.alt_text`).

Page headers and footers are not read: they hold the same lines on every page
(a company's name, "Confidential", a page number, the running title), which as
sentences would match many questions and answer none, and as a title would name
every document of a template alike (a document without a heading is titled by
its first line when that reads as a title, else by its file name). Content
controls that stand between paragraphs (where Word keeps its table of contents)
are not read either. Nothing in the file runs or is fetched:
python-docx reads the XML parts and never the macros of a .docm, and linked
images and external links stay unloaded relationships.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

from selfcrag.files.alt_text import alt_text_lines
from selfcrag.files.containers import ReadingBudget, library_errors, open_zip, parse_xml
from selfcrag.files.outline import style_heading_level
from selfcrag.files.places import TABLE_ROW, PlacedOutline
from selfcrag.files.tables import MAX_COLUMNS, cell_text, is_header_row, row_line

if TYPE_CHECKING:
    from xml.etree.ElementTree import Element

    from docx.document import Document
    from docx.oxml.xmlchemy import BaseOxmlElement
    from docx.styles.style import ParagraphStyle
    from docx.table import Table, _Cell
    from docx.text.paragraph import Paragraph

    from selfcrag.files.places import Place

__all__ = ["read_docx"]

_KIND = "Word document"
_MACRO_DOCUMENT = "application/vnd.ms-word.document.macroEnabled.main+xml"
_MAX_NESTING = 20  # tables in table cells, and base styles of styles, followed this deep at most

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_RELATIONSHIPS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
# The parts that hold the notes (by their relationship to the document), and the element of each note in them.
_NOTE_PARTS = {
    f"{_RELATIONSHIPS}/footnotes": "footnote",
    f"{_RELATIONSHIPS}/endnotes": "endnote",
    f"{_RELATIONSHIPS}/comments": "comment",
}
# The mark of a note in the body (its id is the note's), and what the note is called in the text.
_NOTE_MARKS = {"footnoteReference": "Footnote", "endnoteReference": "Endnote", "commentReference": "Comment"}
_M = "{http://schemas.openxmlformats.org/officeDocument/2006/math}"
# An equation's structures written in a linear form: their parts, in order, each bracketed unless one character,
# and what stands between them. Others (a matrix, a box, an accent) are their parts' text in order.
_MATH_FORMS = {
    f"{_M}f": ((f"{_M}num", f"{_M}den"), "/"),
    f"{_M}sSup": ((f"{_M}e", f"{_M}sup"), "^"),
    f"{_M}sSub": ((f"{_M}e", f"{_M}sub"), "_"),
}
# What in a note's runs reads as a space (a tab, a line break); its text is in w:t, a hard hyphen in w:noBreakHyphen.
_SPACE_RUNS = {f"{_W}tab", f"{_W}br", f"{_W}cr"}
# What holds a paragraph's runs besides the paragraph itself: a link, a tracked insertion or move, a smart tag,
# custom XML, an inline content control, a simple field (its shown text). A deletion (w:del, w:moveFrom) is not read.
_RUN_HOLDERS = frozenset(
    f"{_W}{tag}" for tag in ("hyperlink", "ins", "moveTo", "smartTag", "customXml", "sdt", "sdtContent", "fldSimple")
)
_DELETIONS = frozenset({f"{_W}del", f"{_W}moveFrom"})
_MC = "{http://schemas.openxmlformats.org/markup-compatibility/2006}"
_WP = "{http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing}"
_VML = "{urn:schemas-microsoft-com:vml}"
_OFFICE = "{urn:schemas-microsoft-com:office:office}"
# What in a run holds a drawing: a picture or text box (DrawingML, VML), or both, as alternatives.
_DRAWINGS = frozenset({f"{_W}drawing", f"{_W}pict", f"{_W}object", f"{_MC}AlternateContent"})


def read_docx(data: bytes, budget: ReadingBudget) -> tuple[str, tuple[Place, ...]]:
    """Read a Word document's body and its notes as Markdown.

    Args:
        data: The .docx (or .docm) file's bytes.
        budget: What reading it may make: charged the elements of its XML parts before python-docx parses
            them, and the text as it is written.

    Returns:
        The Markdown: ``#`` headings from the heading styles, a line per paragraph, ``- `` list items, a line
        per table row, and a ``Footnote N: ...`` line after what refers to each note; and a ``table row``
        place (``table 2``, the row's number) at each table row's line, ended after each table.

    Raises:
        UnreadableDocument: The file is password-protected, corrupt, a zip bomb, declares XML entities,
            is not a Word document, or is past its budget.
    """
    with open_zip(data, _KIND, budget=budget):
        pass  # bounds, entity declarations and elements checked: python-docx reads the same bytes within them
    with library_errors(_KIND):
        document = _open_document(data)
        writer = _DocumentWriter(document, _notes(document), budget)
        writer.write()
        return writer.outline.text(), writer.outline.places()


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


def _notes(document: Document) -> dict[tuple[str, str], str]:
    """The text of the document's footnotes and endnotes, by kind and id (``("footnote", "2")``).

    python-docx keeps their parts unparsed; they are parsed here with defusedxml, as the ODF reader parses its
    content. Word's separator "notes" (the line above the notes) hold no text and come out empty. A part is parsed
    once however many relationships lead to it (5,000 to one footnotes part kept a 48 KB file busy for minutes).
    """
    notes: dict[tuple[str, str], str] = {}
    parsed: set[str] = set()
    for relationship in document.part.rels.values():
        if relationship.is_external or relationship.reltype not in _NOTE_PARTS:
            continue
        element = _NOTE_PARTS[relationship.reltype]
        part = relationship.target_part
        if f"{element} {part.partname}" in parsed:
            continue
        parsed.add(f"{element} {part.partname}")
        root = parse_xml(part.blob, _KIND)
        for note in root.iterfind(f"{_W}{element}"):
            note_id = note.get(f"{_W}id")
            if note_id is not None:
                notes[(element, note_id)] = " ".join(_note_paragraph(p) for p in note.iter(f"{_W}p"))
    return notes


def _note_paragraph(paragraph: Element) -> str:
    """A note's paragraph as text: its runs' text, tabs and breaks as spaces (deleted text, fields' codes left out).

    The paragraphs nested in it (a text box's) are left to be read on their own, so each text is read once: read
    with each paragraph around them, 7,000 nested paragraphs made a 5 KB file's note billions of characters long.
    """
    parts = []
    pending = list(reversed(paragraph))
    while pending:
        node = pending.pop()
        if node.tag == f"{_W}t":
            parts.append(node.text or "")
        elif node.tag in _SPACE_RUNS:
            parts.append(" ")
        elif node.tag == f"{_W}noBreakHyphen":
            parts.append("-")
        if node.tag != f"{_W}p":
            pending.extend(reversed(node))
    return "".join(parts)


class _DocumentWriter:
    """Writes one document's body, remembering what each paragraph style means and which notes are written."""

    def __init__(self, document: Document, notes: dict[tuple[str, str], str], budget: ReadingBudget) -> None:
        self.document = document
        self.notes = notes
        self.budget = budget
        self.outline = PlacedOutline(budget)
        self.styles: dict[str | None, tuple[int, bool]] = {}  # style id -> (heading level, 0 none / -1 title; list)
        self.tables = 0
        self.numbers = {"Footnote": 0, "Endnote": 0, "Comment": 0}  # the notes written so far, each kind from 1
        self.written: set[tuple[str, str]] = set()

    def write(self) -> None:
        """Write the document as Markdown into :attr:`outline`."""
        from docx.table import Table

        blocks = list(self.document.iter_inner_content())
        paragraphs = [block for block in blocks if not isinstance(block, Table)]
        has_title = any(self._style_meaning(paragraph)[0] == -1 for paragraph in paragraphs)
        for block in blocks:
            if isinstance(block, Table):
                self._table(block)
                self._notes_of(block._tbl)  # after the table: a note is no row of it
                continue
            paragraph = block
            level, listed = self._style_meaning(paragraph)
            text = _paragraph_text(paragraph._p)
            if level == -1:
                self.outline.heading(1, text)
            elif level > 0:
                self.outline.heading(level + has_title, text)  # under a Title, Heading 1 is level 2
            elif listed:
                self.outline.item(text)
            else:
                self.outline.paragraph(text)
            for line in _anchored_lines(paragraph._p, self.budget):
                self.outline.paragraph(line)
            self._notes_of(paragraph._p)

    def _table(self, table: Table) -> None:
        self.tables += 1
        rows = [(number, row) for number, row in enumerate(_rows(table, self.budget), start=1) if any(row)]
        if not rows:
            return
        headers: list[str] = []
        if is_header_row(rows[0][1], len(rows) - 1):
            headers, rows = rows[0][1], rows[1:]
        for number, row in rows:
            self.outline.place(TABLE_ROW, number, f"table {self.tables}")
            self.outline.paragraph(row_line(row, headers, self.budget))
        self.outline.unplace()  # the text after the table stands on none of its rows

    def _notes_of(self, element: BaseOxmlElement) -> None:
        """Write the notes whose marks stand in a paragraph or table, each once, in the order of their marks."""
        for mark in element.iter(*(f"{_W}{tag}" for tag in _NOTE_MARKS)):
            kind = _NOTE_MARKS[mark.tag.removeprefix(_W)]
            key = (kind.lower(), mark.get(f"{_W}id") or "")
            text = self.notes.get(key, "").strip()
            if key in self.written or not text:
                continue
            self.written.add(key)
            self.numbers[kind] += 1
            self.outline.paragraph(f"{kind} {self.numbers[kind]}: {text}")

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


def _rows(table: Table, budget: ReadingBudget, depth: int = 0) -> list[list[str]]:
    """A table's rows, each its cells as text, one for each column of the table's grid (to :data:`MAX_COLUMNS`).

    A cell spanning columns stands under its first, the others empty; the columns a row skips before its first
    cell (``w:gridBefore``) are empty. A cell merged down rows (``w:vMerge``) is repeated in each, as the rows
    below share it. The counts are the file's, so they are cut at :data:`MAX_COLUMNS`, never trusted.
    """
    from docx.table import _Cell

    rows: list[list[str]] = []
    above: dict[int, str] = {}  # the text of the cell a vertical merge started in, by its column
    for tr in table._tbl.tr_lst:
        cells = [""] * min(tr.grid_before, MAX_COLUMNS)
        for tc in tr.tc_lst:
            if len(cells) >= MAX_COLUMNS:
                break
            column = len(cells)
            if tc.vMerge == "continue":
                text = above.get(column, "")
            else:
                text = _cell_text(_Cell(tc, table), budget, depth)
                if tc.vMerge == "restart":
                    above[column] = text
                else:
                    above.pop(column, None)
            cells.append(text)
            cells.extend([""] * min(tc.grid_span - 1, MAX_COLUMNS - len(cells)))
        rows.append(cells)
    return rows


def _cell_text(cell: _Cell, budget: ReadingBudget, depth: int = 0) -> str:
    """A cell's paragraphs and the tables nested in it, on one line."""
    from docx.table import Table

    parts: list[str] = []
    length = 0
    for block in cell.iter_inner_content():
        if not isinstance(block, Table):
            parts.append(_paragraph_text(block._p))
            parts.extend(_anchored_lines(block._p, budget, depth))
        elif depth < _MAX_NESTING:
            for row in _rows(block, budget, depth + 1):
                parts.extend(row)  # a merged cell's text stands in each row, until joined
                length += sum(map(len, row))
                budget.expect(length, counting="its merged cells")
    return cell_text(" ".join(parts))


def _paragraph_text(paragraph: Element) -> str:
    """A paragraph's text: its runs' text as python-docx reads each, inserted text included, deleted text not.

    Runs in a link, a tracked insertion or move, a smart tag or an inline content control are read in their
    order; equations are written in a linear form.
    """
    parts: list[str] = []
    _run_texts(paragraph, parts, 0)
    return "".join(parts)


def _run_texts(element: Element, parts: list[str], depth: int) -> None:
    """Add the text of the runs and equations under a paragraph, or under what holds runs in one, to ``parts``."""
    for child in element:
        if child.tag == f"{_W}r":
            parts.append(child.text or "")  # python-docx's CT_R: its text, tabs and breaks
        elif child.tag in (f"{_M}oMath", f"{_M}oMathPara"):
            parts.append(_math_text(child, 0))
        elif child.tag in _RUN_HOLDERS and depth < _MAX_NESTING:
            _run_texts(child, parts, depth + 1)


def _anchored_lines(paragraph: Element, budget: ReadingBudget, depth: int = 0) -> list[str]:
    """What a paragraph's drawings hold, as lines: each picture's alternative text, each text box's paragraphs.

    In the order they are anchored. Of a drawing's alternatives (``mc:Choice``, ``mc:Fallback``: the same text
    box in DrawingML and in VML) the first that holds anything is read. Text boxes in text boxes are followed
    :data:`_MAX_NESTING` deep.
    """
    lines: list[str] = []
    for drawing in _outermost(paragraph, _DRAWINGS):
        lines.extend(_drawing_lines(drawing, budget, depth))
    return lines


def _drawing_lines(drawing: Element, budget: ReadingBudget, depth: int) -> list[str]:
    """The lines of one drawing (``w:drawing``, ``w:pict``) or of the first of its alternatives that has any."""
    if drawing.tag == f"{_MC}AlternateContent":
        for alternative in drawing:
            if alternative.tag in (f"{_MC}Choice", f"{_MC}Fallback"):
                chosen = [
                    line
                    for inner in _outermost(alternative, _DRAWINGS)
                    for line in _drawing_lines(inner, budget, depth)
                ]
                if chosen:
                    return chosen
        return []
    lines: list[str] = []
    for properties in drawing.iter(f"{_WP}docPr"):  # a DrawingML picture's (or shape's) Alt Text
        lines.extend(alt_text_lines(properties.get("title"), properties.get("descr")))
    for shape in drawing.iter(f"{_VML}shape"):  # a VML picture's: its alt, its image's title
        image = shape.find(f"{_VML}imagedata")
        lines.extend(alt_text_lines(shape.get("alt"), image.get(f"{_OFFICE}title") if image is not None else None))
    if depth >= _MAX_NESTING:
        return lines
    for box in _outermost(drawing, {f"{_W}txbxContent"}):
        for inner in _outermost(box, {f"{_W}p"}):  # its paragraphs, also those in its tables
            text = _paragraph_text(inner)
            budget.expect(len(text))
            lines.append(text)
            lines.extend(_anchored_lines(inner, budget, depth + 1))
    return lines


def _outermost(element: Element, tags: set[str] | frozenset[str]) -> list[Element]:
    """The elements under ``element`` whose tag is one of ``tags`` and that stand in none such, in document order.

    What a tracked deletion holds is passed over: a deleted picture or text box is no longer in the document.
    """
    found: list[Element] = []
    stack = list(reversed(list(element)))
    while stack:
        node = stack.pop()
        if node.tag in tags:
            found.append(node)
        elif node.tag not in _DELETIONS:
            stack.extend(reversed(list(node)))
    return found


def _math_text(element: Element, depth: int) -> str:
    """An equation (or a part of one) in a linear form (see the module's notes), followed so deep at most."""
    tag = element.tag
    if tag == f"{_M}t":
        return element.text or ""
    if depth >= _MAX_NESTING:
        return "".join(node.text or "" for node in element.iter(f"{_M}t"))
    if tag in _MATH_FORMS:
        names, between = _MATH_FORMS[tag]
        return between.join(_bracketed(_math_text(part, depth + 1)) for name in names for part in element.findall(name))
    if tag == f"{_M}sSubSup":
        base, low, high = (_math_of(element, name, depth) for name in ("e", "sub", "sup"))
        return f"{base}_{_bracketed(low)}^{_bracketed(high)}"
    if tag == f"{_M}rad":
        degree = _math_of(element, "deg", depth)
        return f"{f'root({degree})' if degree else '√'}({_math_of(element, 'e', depth)})"
    if tag == f"{_M}d":
        opening, closing, separator = (
            _math_property(element, "dPr", name, default)
            for name, default in (("begChr", "("), ("endChr", ")"), ("sepChr", "|"))
        )
        inside = separator.join(_math_text(part, depth + 1) for part in element.findall(f"{_M}e"))
        return f"{opening}{inside}{closing}"
    if tag == f"{_M}nary":
        low, high = _math_of(element, "sub", depth), _math_of(element, "sup", depth)
        limits = (f"_{_bracketed(low)}" if low else "") + (f"^{_bracketed(high)}" if high else "")
        return f"{_math_property(element, 'naryPr', 'chr', '∫')}{limits} {_math_of(element, 'e', depth)}"
    if tag.endswith("Pr"):
        return ""  # a structure's or a run's properties: no text
    separator = " " if tag == f"{_M}oMathPara" else ""  # the equations of a display block, one after another
    return separator.join(_math_text(child, depth + 1) for child in element)


def _math_of(element: Element, name: str, depth: int) -> str:
    """The linear text of a structure's part (``e``, ``sub``, ``deg``, ...), empty when it has none."""
    part = element.find(f"{_M}{name}")
    return _math_text(part, depth + 1) if part is not None else ""


def _math_property(element: Element, properties: str, name: str, default: str) -> str:
    """A character a structure's properties set (a bracket, an operator's sign), else Word's default for it."""
    found = element.find(f"{_M}{properties}/{_M}{name}")
    return found.get(f"{_M}val", default) if found is not None else default


def _bracketed(text: str) -> str:
    """A part of a fraction, power or index: in brackets, unless one character alone."""
    return text if len(text) <= 1 else f"({text})"
