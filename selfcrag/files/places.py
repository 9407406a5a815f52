"""Mark where in the original file a reader's text stands (pages, slides, rows), as it writes the text."""

from __future__ import annotations

from dataclasses import dataclass

from selfcrag.files.containers import ReadingBudget
from selfcrag.files.outline import BLOCK_SEPARATOR, MarkdownOutline
from selfcrag.spans import ANCHOR, TABLE_ROW

__all__ = ["ANCHOR", "NO_PLACE", "TABLE_ROW", "Place", "PlacedOutline"]

NO_PLACE = "none"
"""The kind of a :class:`Place` that ends the one before it: the text from there on stands at no page, slide or row
(a document's paragraphs after a table), and is cited by its section."""


@dataclass(frozen=True)
class Place:
    """Where in the original file the text from ``offset`` on stands, until the next place.

    Readers of paged or tabular formats mark each page, slide or row as they
    write the text, so that a citation can say where to look ("p. 6 (printed 3)",
    "slide 4", "sheet Releases, row 12", "table 2, row 4"). Text formats carry no
    places: their citations name the line, counted from the text itself.

    Attributes:
        offset: The first character in :attr:`~selfcrag.files.loaders.LoadedFile.text` that stands there.
        kind: ``"page"``, ``"slide"``, ``"row"`` (of a sheet or CSV file), :data:`TABLE_ROW` (of a document's
            table), :data:`ANCHOR` (an HTML page's element that a link can open at), or :data:`NO_PLACE` (no
            place: the text from here on is cited by its section alone).
        number: The page (physical, from 1), slide (from 1) or row (as the sheet numbers it; in a document's
            table, counted from its first row, 1); an anchor's place in the page's order of anchors (from 1).
        label: A PDF's printed page label when it differs from ``number`` ("iii", "3"); an anchor's ``id``;
            None otherwise.
        sheet: For a row, the sheet's name (None in a CSV or TSV file); for a table row, the table ("table 2").
    """

    offset: int
    kind: str
    number: int
    label: str | None = None
    sheet: str | None = None


class PlacedOutline(MarkdownOutline):
    """A :class:`MarkdownOutline` that also records the places its blocks stand at in the original.

    A reader calls :meth:`place` before writing what stands at a slide or a row; the place's
    offset is that of the next block written (a place followed by no block is dropped).

    Args:
        budget: What reading the document may make (see :class:`MarkdownOutline`).
    """

    def __init__(self, budget: ReadingBudget) -> None:
        super().__init__(budget)
        self._marks: list[tuple[int, str, int, str | None, str | None]] = []

    def place(self, kind: str, number: int, sheet: str | None = None, label: str | None = None) -> None:
        """Mark that the blocks written from here on stand at a slide or row of the original.

        Args:
            kind: ``"slide"``, ``"row"``, :data:`TABLE_ROW` or :data:`ANCHOR` (see :class:`Place`).
            number: The slide's number, or the row's as the sheet or file numbers it, from 1; an anchor's.
            sheet: The sheet's name, for a row of a workbook; the table's ("table 2"), for a row of a document's.
            label: An anchor's ``id``.
        """
        if self._marks and self._marks[-1][0] == len(self.blocks):
            self._marks.pop()  # the place before wrote nothing
        self._marks.append((len(self.blocks), kind, number, sheet, label))

    def unplace(self) -> None:
        """Mark that the blocks written from here on stand at no place (a document's text after a table)."""
        if self._marks and self._marks[-1][1] != NO_PLACE:
            self.place(NO_PLACE, 0)

    def places(self) -> tuple[Place, ...]:
        """The places marked, their offsets into :meth:`text`, in order."""
        offsets = [0]
        for block in self.blocks:
            offsets.append(offsets[-1] + len(block) + len(BLOCK_SEPARATOR))
        return tuple(
            Place(offsets[block], kind, number, label=label, sheet=sheet)
            for block, kind, number, sheet, label in self._marks
            if block < len(self.blocks)
        )
