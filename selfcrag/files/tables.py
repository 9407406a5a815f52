"""Write the rows of a table (a sheet, a CSV file, a table in a document or on a slide) as lines of text.

A row read alone, as retrieval reads it, means little without its column
headers ("10 | Buster | 2019-07-06"). Each row is written as one line that
carries them: ``Version: 10; Codename: Buster; Release: 2019-07-06``. The
colon and semicolon mark where a header ends and a value ends, even when a
header has several words or a value holds commas; neither ends a sentence for
the splitter, so a row of data values stays one sentence. (A cell that holds
sentences of its own is split there, like any text; the row's place still
names it.)

Whether the first row is a header is a guess, as it is for a person who opens
the file: a row of short labels, none of them a number or a date, over rows
below it.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from selfcrag.files.containers import ReadingBudget

__all__ = ["MAX_COLUMNS", "cell_text", "is_header_row", "row_line"]

MAX_COLUMNS = 1_000
"""Columns of a row read at most, in any table (Excel allows 16,384; a table a person reads is far narrower).

A count in the file that reaches further (a cell repeated or spanning across columns, a row that starts
late) is cut here, never trusted.
"""

MAX_HEADER_CHARS = 80
"""A header cell is a label: a longer cell makes its row data, not headers."""

# A cell that is a value, not a label: a number (1,234.5 / -3 / 12% / $5), a date or a time, alone.
_VALUE = re.compile(
    r"[-+]?[$€£¥]?\d[\d,.\s]*%?"
    r"|\d{1,4}[-/.年]\d{1,2}[-/.月]\d{1,4}日?"
    r"|\d{1,2}:\d{2}(?::\d{2})?"
)
# A run of white space that is not one space already (a lone space is left alone: see outline._SPACES).
_SPACES = re.compile(r"[^\S ]\s*| \s+")


def cell_text(value: object) -> str:
    """A cell's value as it reads in the row: a whole number without ``.0``, a date without a midnight time.

    Also what a document's cell reads as, its paragraphs (and tables nested in it) joined by spaces.

    Args:
        value: What the library read (str, int, float, bool, date, datetime, time, timedelta or None).

    Returns:
        The text, its white space runs made single spaces ("" for an empty cell).
    """
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"  # as a spreadsheet shows it
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    if isinstance(value, dt.datetime) and value.time() == dt.time():
        return value.date().isoformat()
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    return _SPACES.sub(" ", str(value)).strip()


def is_header_row(cells: Sequence[str], rows_below: int) -> bool:
    """Guess whether a table's first row names its columns.

    Args:
        cells: The first row's cells, as text.
        rows_below: How many rows follow it.

    Returns:
        True when rows follow, and the row's non-empty cells are short labels, none a number or a date.
    """
    labels = [cell for cell in cells if cell]
    return (
        rows_below > 0
        and bool(labels)
        and all(len(label) <= MAX_HEADER_CHARS and not _VALUE.fullmatch(label) for label in labels)
    )


def row_line(cells: Sequence[str], headers: Sequence[str], budget: ReadingBudget) -> str:
    """Write one row as one line, each value after its column's header.

    Args:
        cells: The row's cells, as text (one text may stand in many cells: a cell the file repeats).
        headers: The column headers (none for a table without a header row).
        budget: The document's: the line must fit what it has left before it is built.

    Returns:
        E.g. ``Version: 10; Codename: Buster; Release: 2019-07-06``; an empty cell is left out, a cell
        under no header is written alone; "" for an empty row.

    Raises:
        UnreadableDocument: The line would take the document past its budget.
    """
    length = sum(len(cell) + len(headers[column]) + 4 for column, cell in enumerate(cells[: len(headers)]) if cell)
    budget.expect(length + sum(len(cell) + 2 for cell in cells[len(headers) :]), counting="its repeated cells")
    parts = []
    for column, cell in enumerate(cells):
        if not cell:
            continue
        header = headers[column] if column < len(headers) else ""
        parts.append(f"{header}: {cell}" if header and header != cell else cell)
    return "; ".join(parts)
