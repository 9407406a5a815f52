"""Read spreadsheets (.xlsx, .xlsm with openpyxl) and delimited text (.csv, .tsv with the csv module) as Markdown.

Each sheet is a ``#`` section named by the sheet (a CSV or TSV file is one
sheet, named by the file as a spreadsheet names it), and each row one line that carries its
column headers, ``Version: 10; Codename: Buster; Release: 2019-07-06`` (see
:mod:`selfcrag.files.tables`), so a row read alone still says what its values
are. Each row is marked with a ``row`` place: the sheet's name and the row's
number as the spreadsheet shows it (in a CSV file, the record's number, the
header being row 1). A lone title cell over the table is written as a line of
its own. A sheet holding a pivot table takes its header from the table's
definition (``xl/pivotTables/``): the row of "Row Labels" and "Sum of Sales",
below the filters ("Region: (All)"), which are written as lines of their own.
A cell's comment (a note, ``xl/comments``) is written after its row, ``Comment on B3: ...``, at the row's place;
a chart drawn on a sheet is written after its rows by its title, ``Chart: Tonnage by vessel``, under the sheet
and at no row (openpyxl reads neither: their parts are parsed here, bounded by the budget).

What is read is bounded: at most :data:`MAX_ROWS` rows with values and
:data:`MAX_CHARS` characters from a file (a note in the text says where reading
stopped), and :data:`~selfcrag.files.tables.MAX_COLUMNS` columns of a row (openpyxl
is asked for no more, so a value in column XFD makes no row 16,384 cells long). Nothing
in a workbook runs or is fetched: formulas are read as the values the spreadsheet stored
when it last calculated them (a formula never calculated reads as an empty cell),
external links are not loaded, and the macros of an .xlsm are never read.

Counts in the file are charged, not trusted: one shared string may be shown in
thousands of cells, so each cell's text is checked against the document's budget
before it is copied into its row, and a line of a CSV file is refused before the
csv module splits it when it holds more than :data:`MAX_FIELDS` fields.
"""

from __future__ import annotations

import csv
import io
import posixpath
import re
import warnings
import zipfile
import zlib
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from defusedxml import DefusedXmlException
from defusedxml import ElementTree as SafeElementTree

from selfcrag.files.containers import (
    ReadingBudget,
    UnreadableDocument,
    count_tags,
    library_errors,
    open_zip,
    parse_xml,
    read_member,
)
from selfcrag.files.places import PlacedOutline
from selfcrag.files.tables import MAX_COLUMNS, cell_text, is_header_row, row_line

if TYPE_CHECKING:
    from collections.abc import Iterator
    from xml.etree.ElementTree import Element

    from selfcrag.files.places import Place

__all__ = ["MAX_CHARS", "MAX_FIELDS", "MAX_ROWS", "MAX_ROWS_SCANNED", "read_csv", "read_tsv", "read_xlsx"]

MAX_ROWS = 100_000
"""Rows with values read from one file at most, all sheets together (100,000 rows embed in minutes, not hours)."""

MAX_CHARS = 20_000_000
"""Characters of text read from one file at most, all sheets together."""

MAX_ROWS_SCANNED = 500_000
"""Rows passed over at most, empty ones included (a sheet may number its rows with gaps up to a billion).

openpyxl parses about 30,000 rows a second: 1.5 million rows of values beyond the columns read
took 55 s to pass over.
"""

MAX_FIELDS = 100 * MAX_COLUMNS
"""A line of a CSV file with more fields than this is refused before it is split.

The csv module makes every field of a record before the row can be cut to its columns: one
line of 15 million fields took 1.4 GB.
"""

_KIND = "Excel workbook"
_SNIFF_CHARS = 16 * 1024  # the csv module's Sniffer is slow on long samples; whole lines of this much tell enough
# A sheet's XML: its root, the size it declares (before its rows, where Excel writes it), its rows and each row.
_WORKSHEET = re.compile(rb"<(?:[\w.-]+:)?worksheet[\s>]")
_DIMENSION = re.compile(rb"<(?:[\w.-]+:)?dimension[\s/>]")
_SHEET_DATA = re.compile(rb"<(?:[\w.-]+:)?sheetData[\s/>]")
_ROW = re.compile(rb"<(?:[\w.-]+:)?row[\s/>]")
_CHUNK = 1024 * 1024
_LONGEST_TAG = 64  # the bytes of a row's start tag that may stand split between two chunks, at most
# A sheet's relationship to a pivot table it shows, and the cell reference a pivot table's location starts at.
_PIVOT_TABLE = "/pivotTable"
# A sheet's relationships to its cells' comments and to its drawing, and a drawing's to a chart.
_COMMENTS = "/comments"
_DRAWING = "/drawing"
_CHART = "/chart"
_FIRST_CELL = re.compile(r"\$?([A-Za-z]{1,3})\$?([0-9]{1,7})")


def read_xlsx(data: bytes, budget: ReadingBudget) -> tuple[str, tuple[Place, ...]]:
    """Read a workbook's sheets as Markdown, a section per sheet and a line per row.

    Args:
        data: The .xlsx (or .xlsm) file's bytes.
        budget: What reading it may make: each cell's text is checked against it before it is copied into
            its row, and the rows are charged as they are written.

    Returns:
        The Markdown, and a ``row`` place (sheet name, row number) at each row's line.

    Raises:
        UnreadableDocument: The file is password-protected, corrupt, a zip bomb, declares XML entities,
            is not a workbook, or is past its budget.
    """
    from openpyxl import load_workbook

    with open_zip(data, _KIND) as archive:  # bounds and entity declarations checked: openpyxl reads the same bytes
        _refuse_long_unsized_sheets(archive)
        pivot_headers = _pivot_header_rows(archive, budget)
        drawn = _sheet_notes(archive, budget)
    writer = _SheetWriter(budget)
    with library_errors(_KIND), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # openpyxl warns about extensions it does not read (data validation, ...)
        # data_only: a formula cell reads as its stored value; keep_links=False: external workbooks stay unread.
        workbook = load_workbook(io.BytesIO(data), read_only=True, data_only=True, keep_links=False)
        try:
            for sheet in workbook.worksheets:
                if writer.stopped:
                    break
                sheet.reset_dimensions()  # a declared size may claim a million rows: rows are as many as the sheet has
                values = sheet.iter_rows(min_row=1, max_col=MAX_COLUMNS, values_only=True)
                path = getattr(sheet, "_worksheet_path", "")
                header = pivot_headers.get(path)
                writer.sheet(sheet.title, enumerate(values, start=1), header_row=header, notes=drawn.get(path))
        finally:
            workbook.close()
    return writer.outline.text(), writer.outline.places()


def _refuse_long_unsized_sheets(archive: zipfile.ZipFile) -> None:
    """Refuse a workbook with a sheet that declares no size and has more rows than are looked at.

    openpyxl opens a sheet that declares no size (no ``<dimension>`` before its rows, where Excel,
    LibreOffice and openpyxl write it) by parsing it whole to look for one, before a row is read:
    1.5 million rows took it 26 s. Such a sheet's rows are counted in its bytes first.

    Raises:
        UnreadableDocument: A sheet without a declared size has more than :data:`MAX_ROWS_SCANNED` rows.
    """
    for member in archive.infolist():
        with archive.open(member) as stream:
            chunk = stream.read(_CHUNK)
            data_at = _SHEET_DATA.search(chunk)
            declared = _DIMENSION.search(chunk, 0, data_at.start() if data_at else len(chunk))
            if not _WORKSHEET.search(chunk, 0, 4096) or declared:
                continue
            rows, tail = 0, b""
            while chunk:
                rows += len(_ROW.findall(tail + chunk)) - len(_ROW.findall(tail))
                if rows > MAX_ROWS_SCANNED:
                    raise UnreadableDocument(
                        f"{_KIND} with a sheet of more than {MAX_ROWS_SCANNED:,} rows that declares no size"
                    )
                tail, chunk = chunk[-_LONGEST_TAG:], stream.read(_CHUNK)


def _relationship_parts(archive: zipfile.ZipFile) -> Iterator[tuple[str, str]]:
    """Each XML part with relationships of its own, and the part that lists them (``xl/worksheets/_rels/...``)."""
    for member in archive.namelist():
        folder, name = posixpath.split(member)
        if posixpath.basename(folder) == "_rels" and name.endswith(".xml.rels"):
            yield posixpath.join(posixpath.dirname(folder), name.removesuffix(".rels")), member


def _pivot_header_rows(archive: zipfile.ZipFile, budget: ReadingBudget) -> dict[str, int]:
    """The header row of the pivot table each sheet shows (its topmost one), by the sheet's part name.

    A pivot table's definition gives its location: ``<location ref="A3:C9" firstDataRow="2" ...>``, the
    rows of its header running from the top of ``ref`` to the row before its first data row, the filters
    ("Region", "(All)") standing above ``ref``. The header is the last of those rows: "Row Labels", "Sum
    of Sales" (above it, "Column Labels" when columns are grouped). Only a table that starts in the
    sheet's first column is taken: one placed beside other cells shares its rows with them. A definition
    that cannot be read is passed over: the sheet is read as any other.

    Raises:
        UnreadableDocument: The definitions hold more elements than the budget has pieces left.
    """
    headers: dict[str, int] = {}
    for sheet, member in _relationship_parts(archive):
        for target in _related(archive, member, _PIVOT_TABLE, budget):
            row = _pivot_header_row(archive, _target_part(sheet, target))
            if row is not None and (sheet not in headers or row < headers[sheet]):
                headers[sheet] = row
    return headers


class _SheetNotes:
    """What a sheet holds besides its cells' values: its cells' comments by row, and its charts' titles."""

    def __init__(self) -> None:
        self.comments: dict[int, list[str]] = {}  # row number -> "Comment on B3: ..." lines, in the part's order
        self.charts: list[str] = []


def _sheet_notes(archive: zipfile.ZipFile, budget: ReadingBudget) -> dict[str, _SheetNotes]:
    """The comments and chart titles of each sheet, by the sheet's part name (``xl/worksheets/sheet1.xml``).

    A comment is found through the sheet's ``comments`` relationship, a chart through its ``drawing`` and the
    drawing's ``chart`` relationships. Parts that are missing or cannot be parsed are passed over; every part
    parsed is charged to the budget, and the text gathered is checked against it as it grows: a sheet related
    5,000 times to one comment of 900 KB (an 18 KB file) would have held 4.5 GB of copies of it.

    Raises:
        UnreadableDocument: The parts hold more elements, or their text more characters, than the budget has left.
    """
    found: dict[str, _SheetNotes] = {}
    length = 0
    for sheet, member in _relationship_parts(archive):
        if not posixpath.dirname(sheet).endswith("worksheets"):
            continue
        notes = _SheetNotes()
        for target in _related(archive, member, _COMMENTS, budget):
            root = _part(archive, _target_part(sheet, target), budget)
            for comment in root.iter() if root is not None else ():
                if comment.tag.rpartition("}")[2] != "comment":
                    continue
                reference = comment.get("ref") or ""
                cell = _FIRST_CELL.match(reference)
                text = " ".join(_texts(comment, "t").split())
                if cell is not None and text:
                    length += len(text)
                    budget.expect(length, counting="its comments and chart titles")
                    notes.comments.setdefault(int(cell.group(2)), []).append(f"Comment on {reference.upper()}: {text}")
        for target in _related(archive, member, _DRAWING, budget):
            drawing = _target_part(sheet, target)
            rels = posixpath.join(posixpath.dirname(drawing), "_rels", posixpath.basename(drawing) + ".rels")
            for chart in _related(archive, rels, _CHART, budget):
                title = _chart_title(_part(archive, _target_part(drawing, chart), budget))
                if title:
                    length += len(title)
                    budget.expect(length, counting="its comments and chart titles")
                    notes.charts.append(f"Chart: {title}")
        if notes.comments or notes.charts:
            found[sheet] = notes
    return found


def _chart_title(chart: Element | None) -> str:
    """A chart's title: its rich text's runs, or the cell text it shows (cached); empty when it has none."""
    if chart is None:
        return ""
    for element in chart.iter():
        if element.tag.rpartition("}")[2] == "title":  # the chart's own comes first, before its axes'
            return " ".join((_texts(element, "t") or _texts(element, "v")).split())
    return ""


def _texts(element: Element, name: str) -> str:
    """The text of the elements named ``name`` (in any namespace) under ``element``, joined."""
    return "".join(node.text or "" for node in element.iter() if node.tag.rpartition("}")[2] == name)


def _target_part(source: str, target: str) -> str:
    """The part a relationship of ``source`` points at: its target, absolute or relative to the source's folder."""
    if target.startswith("/"):
        return target.lstrip("/")
    return posixpath.normpath(posixpath.join(posixpath.dirname(source), target))


def _related(archive: zipfile.ZipFile, rels: str, kind: str, budget: ReadingBudget) -> list[str]:
    """The targets of a part's relationships whose type ends with ``kind``, each once (none when they cannot be read).

    A part related many times over is one part: 700 relationships to a drawing, each to a chart 700 times, would
    have parsed the chart 490,000 times.
    """
    root = _part(archive, rels, budget)
    if root is None:
        return []
    targets = (
        element.get("Target") or ""
        for element in root
        if element.tag.rpartition("}")[2] == "Relationship" and (element.get("Type") or "").endswith(kind)
    )
    return list(dict.fromkeys(targets))


def _pivot_header_row(archive: zipfile.ZipFile, part: str) -> int | None:
    """The sheet row of a pivot table's header, from its definition's ``location``; None when it gives none.

    The location is the definition's first element: the part is parsed (with defusedxml) only as far as it,
    never whole (a definition lists every item of every field).
    """
    location = None
    try:
        with archive.open(part) as stream:
            for _event, element in SafeElementTree.iterparse(
                stream, events=("start",), forbid_dtd=False, forbid_entities=True, forbid_external=True
            ):
                name = element.tag.rpartition("}")[2]
                if name == "location":
                    location = element
                    break
                if name != "pivotTableDefinition":  # past where the location stands
                    break
    except (KeyError, DefusedXmlException, SafeElementTree.ParseError, zipfile.BadZipFile, OSError, zlib.error):
        return None
    if location is None:
        return None
    top = _FIRST_CELL.match(location.get("ref") or "")
    first_data = location.get("firstDataRow") or ""
    # A pivot table beside other cells (placed right of the data it sums) leaves the sheet's rows to tell.
    if top is None or top.group(1).upper() != "A" or not first_data.isdigit() or not 0 < int(first_data) <= 100:
        return None
    return int(top.group(2)) + int(first_data) - 1


def _part(archive: zipfile.ZipFile, name: str, budget: ReadingBudget) -> Element | None:
    """A workbook's XML part, parsed, its elements charged; None when it is missing or damaged."""
    if name not in archive.NameToInfo:
        return None
    try:
        data = read_member(archive, name, _KIND)
    except UnreadableDocument:
        return None
    budget.charge(pieces=count_tags(data))
    try:
        return parse_xml(data, _KIND)
    except UnreadableDocument:
        return None


def read_csv(text: str, name: str, budget: ReadingBudget) -> tuple[str, tuple[Place, ...]]:
    """Read comma- (or semicolon-, tab-, bar-) separated values as Markdown, a line per row.

    Args:
        text: The decoded file; the delimiter and quoting are sniffed from its first lines.
        name: The file's name without its suffix: the heading of its one sheet, as a spreadsheet names it.
        budget: What reading it may make, charged as the rows are written.

    Returns:
        The Markdown, and a ``row`` place (no sheet) at each row's line.

    Raises:
        UnreadableDocument: The csv module cannot read it (a field past its size limit, a NUL character),
            a line holds more than :data:`MAX_FIELDS` fields, or it is past its budget.
    """
    return _read_delimited(text, name, _sniff(text), "CSV file", budget)


def read_tsv(text: str, name: str, budget: ReadingBudget) -> tuple[str, tuple[Place, ...]]:
    """Read tab-separated values as Markdown, a line per row.

    Args:
        text: The decoded file.
        name: The file's name without its suffix: the heading of its one sheet.
        budget: What reading it may make, charged as the rows are written.

    Returns:
        The Markdown, and a ``row`` place (no sheet) at each row's line.

    Raises:
        UnreadableDocument: The csv module cannot read it, a line holds more than :data:`MAX_FIELDS`
            fields, or it is past its budget.
    """
    return _read_delimited(text, name, csv.excel_tab, "TSV file", budget)


def _read_delimited(
    text: str, name: str, dialect: type[csv.Dialect] | csv.Dialect, kind: str, budget: ReadingBudget
) -> tuple[str, tuple[Place, ...]]:
    writer = _SheetWriter(budget)
    reader = csv.reader(_lines_within_fields(text, dialect.delimiter, kind), dialect)
    try:
        # The record's number is the row a spreadsheet shows it in (a quoted field may span lines).
        writer.sheet(name, enumerate(reader, start=1), in_workbook=False)
    except csv.Error as error:
        raise UnreadableDocument(f"unreadable {kind} (record {reader.line_num:,}: {error})") from None
    return writer.outline.text(), writer.outline.places()


def _lines_within_fields(text: str, delimiter: str, kind: str) -> Iterator[str]:
    """The file's lines (ended by LF, as the loader leaves them), each refused with too many fields to split.

    Cut from the text one at a time: an ``io.StringIO`` of the text would hold it again, four bytes a character.

    Raises:
        UnreadableDocument: A line holds more than :data:`MAX_FIELDS` delimiters (quoted ones counted too).
    """
    start, number = 0, 0
    while start < len(text):
        end = text.find("\n", start) + 1 or len(text)
        line, start, number = text[start:end], end, number + 1
        if line.count(delimiter) >= MAX_FIELDS:
            raise UnreadableDocument(f"{kind} with more than {MAX_FIELDS:,} fields on line {number:,}")
        yield line


def _without_trailing_empty(values: Sequence[object]) -> Sequence[object]:
    """A row's values up to its last that is not empty (None), found in C-speed steps.

    openpyxl asked for :data:`MAX_COLUMNS` columns gives every row that many: a row of three values is
    three and 997 empty cells, which looked at one by one would cost a 100,000-row sheet 30 s. The end is
    where it would be were all empty cells at the end (most rows); else it is found by halving, each step
    counting the empty cells of a slice.
    """
    empty = values.count(None)
    low, high = len(values) - empty, len(values)  # the end is at least low; values[high:] are all empty
    if values[low:].count(None) == empty:
        return values[:low]
    while low < high:
        middle = (low + high) // 2
        if values[middle:].count(None) == len(values) - middle:
            high = middle
        else:
            low = middle + 1
    return values[:low]


def _sniff(text: str) -> type[csv.Dialect] | csv.Dialect:
    """The dialect of a CSV file, sniffed from its first whole lines; plain commas when that tells nothing."""
    sample = text[:_SNIFF_CHARS]
    if len(text) > _SNIFF_CHARS and "\n" in sample:
        sample = sample[: sample.rindex("\n")]
    try:
        return csv.Sniffer().sniff(sample, delimiters=",;\t|")
    except csv.Error:
        return csv.excel


class _SheetWriter:
    """Writes the sheets of one file, a line per row, within the file's bounds and its budget."""

    def __init__(self, budget: ReadingBudget) -> None:
        self.budget = budget
        self.outline = PlacedOutline(budget)
        self.rows = 0
        self.scanned = 0
        self.chars = 0
        self.stopped = False
        self.comments: dict[int, list[str]] = {}  # the sheet's comments not yet written, by row
        self.comment_rows: list[int] = []  # their rows, in order (the first still unwritten at comment_at)
        self.comment_at = 0

    def sheet(
        self,
        heading: str,
        rows: Iterable[tuple[int, Sequence[object]]],
        in_workbook: bool = True,
        header_row: int | None = None,
        notes: _SheetNotes | None = None,
    ) -> None:
        """Write one sheet: its name as a heading (when it has rows with values), then its rows.

        Args:
            heading: The sheet's name (a CSV or TSV file's, its file name).
            rows: ``(number, values)`` for each row, numbered as the sheet numbers them.
            in_workbook: The sheet is one of a workbook's, so its places name it (a CSV file's name none).
            header_row: The row known to hold the column headers (a pivot table's); the rows above it are
                written as lines of their own. None: the first rows tell.
            notes: The sheet's comments, each written after its row (or the first row written below it), and
                its charts' titles, written after its rows.
        """
        name = heading if in_workbook else None
        self.comments = dict(notes.comments) if notes is not None else {}
        self.comment_rows, self.comment_at = sorted(self.comments), 0
        headers: list[str] | None = None  # None until the second row with values tells what the first is
        first: tuple[int, list[str]] | None = None
        named = False
        for number, values in rows:
            self.scanned += 1
            if self.rows >= MAX_ROWS:
                self._stop(name, number, f"at most {MAX_ROWS:,} rows of a file are read")
                return
            if self.chars >= MAX_CHARS:
                self._stop(name, number, f"at most {MAX_CHARS:,} characters of a file are read")
                return
            if self.scanned > MAX_ROWS_SCANNED:
                self._stop(name, number, f"at most {MAX_ROWS_SCANNED:,} rows of a file are looked at, empty or not")
                return
            cells = self._cells(_without_trailing_empty(values[:MAX_COLUMNS]))
            if not any(cells):
                continue
            if not named:
                self.outline.place("row", number, name)  # the sheet's heading stands with its first row
                self.outline.heading(1, heading)
                named = True
            if header_row is not None and headers is None:
                if number < header_row:  # a pivot table's filters above its header: "Region: (All)"
                    pair = len([cell for cell in cells if cell]) == 2 and len(cells) == 2
                    self._row(name, number, cells[1:] if pair else cells, cells[:1] if pair else [])
                    continue
                headers = cells if number == header_row else []
                if number == header_row:
                    continue
            if headers is None and first is None:
                first = (number, cells)
                continue
            if headers is None and first is not None:
                headers = self._headers(name, first, cells)
                if headers is None:  # the first row was a title over the table: this one may be its header
                    first = (number, cells)
                    continue
            self._row(name, number, cells, headers or [])
        if headers is None and first is not None:
            self._row(name, first[0], first[1], [])  # a table of one row
        if notes is not None and (self.comments or notes.charts):
            if not named:
                self.outline.heading(1, heading)
            for row in sorted(self.comments):  # comments on rows below the last written, or on no row written
                self.outline.place("row", row, name)
                for line in self.comments.pop(row):
                    self.outline.paragraph(line)
            self.outline.unplace()  # a chart stands on no row
            for line in notes.charts:
                self.outline.paragraph(line)

    def _cells(self, values: Sequence[object]) -> list[str]:
        """A row's cells as text, each checked against the budget before it is copied.

        A shared string is one text however many cells show it; each cell's copy counts.
        """
        length = 0
        cells = []
        for value in values:
            if isinstance(value, str):
                length += len(value)
                self.budget.expect(length, counting="its cells' shared strings")
            cells.append(cell_text(value))
        return cells

    def _headers(self, name: str | None, first: tuple[int, list[str]], second: list[str]) -> list[str] | None:
        """Decide what the first row with values is, seeing the second: its headers, a title (None), or data ([])."""
        number, cells = first
        labels = [cell for cell in cells if cell]
        if len(labels) == 1 and len([cell for cell in second if cell]) > 1:
            self.outline.place("row", number, name)
            self.outline.paragraph(labels[0])
            return None
        if is_header_row(cells, 1):
            return cells
        self._row(name, number, cells, [])
        return []

    def _row(self, name: str | None, number: int, cells: list[str], headers: list[str]) -> None:
        line = row_line(cells, headers, self.budget)
        self.outline.place("row", number, name)
        self.outline.paragraph(line)
        self.rows += 1
        self.chars += len(line)
        # Its comments, and those of rows above unwritten: found in order, never by looking through all that wait
        # (20,000 comments on rows below the last made each of 100,000 rows look through them all: 30 s).
        while self.comment_at < len(self.comment_rows) and self.comment_rows[self.comment_at] <= number:
            for comment in self.comments.pop(self.comment_rows[self.comment_at]):
                self.outline.paragraph(comment)
                self.chars += len(comment)
            self.comment_at += 1

    def _stop(self, name: str | None, number: int, bound: str) -> None:
        """Say in the text where reading stopped, and why, and stop."""
        where = f"sheet {name}" if name else "this file"
        self.outline.paragraph(f"(Not read: the rows of {where} from row {number:,} on; {bound}.)")
        self.stopped = True
