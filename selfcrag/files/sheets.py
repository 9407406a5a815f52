"""Read spreadsheets (.xlsx, .xlsm with openpyxl) and delimited text (.csv, .tsv with the csv module) as Markdown.

Each sheet is a ``#`` section named by the sheet (a CSV or TSV file is one
sheet, named by the file as a spreadsheet names it), and each row one line that carries its
column headers, ``Version: 10; Codename: Buster; Release: 2019-07-06`` (see
:mod:`selfcrag.files.tables`), so a row read alone still says what its values
are. Each row is marked with a ``row`` place: the sheet's name and the row's
number as the spreadsheet shows it (in a CSV file, the record's number, the
header being row 1). A lone title cell over the table is written as a line of
its own.

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
import re
import warnings
import zipfile
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from selfcrag.files.containers import ReadingBudget, UnreadableDocument, library_errors, open_zip
from selfcrag.files.places import PlacedOutline
from selfcrag.files.tables import MAX_COLUMNS, cell_text, is_header_row, row_line

if TYPE_CHECKING:
    from collections.abc import Iterator

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
                writer.sheet(sheet.title, enumerate(values, start=1))
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

    def sheet(self, heading: str, rows: Iterable[tuple[int, Sequence[object]]], in_workbook: bool = True) -> None:
        """Write one sheet: its name as a heading (when it has rows with values), then its rows.

        Args:
            heading: The sheet's name (a CSV or TSV file's, its file name).
            rows: ``(number, values)`` for each row, numbered as the sheet numbers them.
            in_workbook: The sheet is one of a workbook's, so its places name it (a CSV file's name none).
        """
        name = heading if in_workbook else None
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

    def _stop(self, name: str | None, number: int, bound: str) -> None:
        """Say in the text where reading stopped, and why, and stop."""
        where = f"sheet {name}" if name else "this file"
        self.outline.paragraph(f"(Not read: the rows of {where} from row {number:,} on; {bound}.)")
        self.stopped = True
