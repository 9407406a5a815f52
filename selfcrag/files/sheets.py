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
stopped), and :data:`MAX_COLUMNS` columns of a row. Nothing in a workbook runs
or is fetched: formulas are read as the values the spreadsheet stored when it
last calculated them (a formula never calculated reads as an empty cell),
external links are not loaded, and the macros of an .xlsm are never read.
"""

from __future__ import annotations

import csv
import io
import warnings
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from selfcrag.files.containers import UnreadableDocument, library_errors, open_zip
from selfcrag.files.places import PlacedOutline
from selfcrag.files.tables import cell_text, is_header_row, row_line

if TYPE_CHECKING:
    from selfcrag.files.places import Place

__all__ = ["MAX_CHARS", "MAX_COLUMNS", "MAX_ROWS", "read_csv", "read_tsv", "read_xlsx"]

MAX_ROWS = 100_000
"""Rows with values read from one file at most, all sheets together (100,000 rows embed in minutes, not hours)."""

MAX_CHARS = 20_000_000
"""Characters of text read from one file at most, all sheets together."""

MAX_COLUMNS = 1_000
"""Columns of a row read at most (Excel allows 16,384; a table a person reads is far narrower)."""

MAX_ROWS_SCANNED = 2_000_000
"""Rows passed over at most, empty ones included (a sheet may number its rows with gaps up to a billion)."""

_KIND = "Excel workbook"
_SNIFF_CHARS = 16 * 1024  # the csv module's Sniffer is slow on long samples; whole lines of this much tell enough


def read_xlsx(data: bytes) -> tuple[str, tuple[Place, ...]]:
    """Read a workbook's sheets as Markdown, a section per sheet and a line per row.

    Args:
        data: The .xlsx (or .xlsm) file's bytes.

    Returns:
        The Markdown, and a ``row`` place (sheet name, row number) at each row's line.

    Raises:
        UnreadableDocument: The file is password-protected, corrupt, a zip bomb, declares XML entities,
            or is not a workbook.
    """
    from openpyxl import load_workbook

    with open_zip(data, _KIND):
        pass  # bounds and entity declarations checked: openpyxl reads the same bytes within them
    writer = _SheetWriter()
    with library_errors(_KIND), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # openpyxl warns about extensions it does not read (data validation, ...)
        # data_only: a formula cell reads as its stored value; keep_links=False: external workbooks stay unread.
        workbook = load_workbook(io.BytesIO(data), read_only=True, data_only=True, keep_links=False)
        try:
            for sheet in workbook.worksheets:
                if writer.stopped:
                    break
                sheet.reset_dimensions()  # a declared size may claim 16,384 columns: rows are as long as their cells
                values = sheet.iter_rows(min_row=1, values_only=True)
                writer.sheet(sheet.title, enumerate(values, start=1))
        finally:
            workbook.close()
    return writer.outline.text(), writer.outline.places()


def read_csv(text: str, name: str) -> tuple[str, tuple[Place, ...]]:
    """Read comma- (or semicolon-, tab-, bar-) separated values as Markdown, a line per row.

    Args:
        text: The decoded file; the delimiter and quoting are sniffed from its first lines.
        name: The file's name without its suffix: the heading of its one sheet, as a spreadsheet names it.

    Returns:
        The Markdown, and a ``row`` place (no sheet) at each row's line.

    Raises:
        UnreadableDocument: The csv module cannot read it (a field past its size limit, a NUL character).
    """
    return _read_delimited(text, name, _sniff(text), "CSV file")


def read_tsv(text: str, name: str) -> tuple[str, tuple[Place, ...]]:
    """Read tab-separated values as Markdown, a line per row.

    Args:
        text: The decoded file.
        name: The file's name without its suffix: the heading of its one sheet.

    Returns:
        The Markdown, and a ``row`` place (no sheet) at each row's line.

    Raises:
        UnreadableDocument: The csv module cannot read it.
    """
    return _read_delimited(text, name, csv.excel_tab, "TSV file")


def _read_delimited(
    text: str, name: str, dialect: type[csv.Dialect] | csv.Dialect, kind: str
) -> tuple[str, tuple[Place, ...]]:
    writer = _SheetWriter()
    reader = csv.reader(io.StringIO(text, newline=""), dialect)
    try:
        # The record's number is the row a spreadsheet shows it in (a quoted field may span lines).
        writer.sheet(name, enumerate(reader, start=1), in_workbook=False)
    except csv.Error as error:
        raise UnreadableDocument(f"unreadable {kind} (record {reader.line_num:,}: {error})") from None
    return writer.outline.text(), writer.outline.places()


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
    """Writes the sheets of one file, a line per row, within the file's bounds."""

    def __init__(self) -> None:
        self.outline = PlacedOutline()
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
            cells = [cell_text(value) for value in values[:MAX_COLUMNS]]
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
        line = row_line(cells, headers)
        self.outline.place("row", number, name)
        self.outline.paragraph(line)
        self.rows += 1
        self.chars += len(line)

    def _stop(self, name: str | None, number: int, bound: str) -> None:
        """Say in the text where reading stopped, and why, and stop."""
        where = f"sheet {name}" if name else "this file"
        self.outline.paragraph(f"(Not read: the rows of {where} from row {number:,} on; {bound}.)")
        self.stopped = True
