"""Mark where in the original file a reader's text stands (slides, sheet rows), as it writes the text."""

from __future__ import annotations

from selfcrag.files.loaders import Place
from selfcrag.files.outline import MarkdownOutline

__all__ = ["PlacedOutline"]

_BLOCK_SEPARATOR = "\n\n"  # how MarkdownOutline.text joins its blocks


class PlacedOutline(MarkdownOutline):
    """A :class:`MarkdownOutline` that also records the places its blocks stand at in the original.

    A reader calls :meth:`place` before writing what stands at a slide or a row; the place's
    offset is that of the next block written (a place followed by no block is dropped).
    """

    def __init__(self) -> None:
        super().__init__()
        self._marks: list[tuple[int, str, int, str | None]] = []

    def place(self, kind: str, number: int, sheet: str | None = None) -> None:
        """Mark that the blocks written from here on stand at a slide or row of the original.

        Args:
            kind: ``"slide"`` or ``"row"`` (see :class:`~selfcrag.files.loaders.Place`).
            number: The slide's number, or the row's as the sheet or file numbers it, from 1.
            sheet: The sheet's name, for a row of a workbook.
        """
        if self._marks and self._marks[-1][0] == len(self.blocks):
            self._marks.pop()  # the place before wrote nothing
        self._marks.append((len(self.blocks), kind, number, sheet))

    def places(self) -> tuple[Place, ...]:
        """The places marked, their offsets into :meth:`text`, in order."""
        offsets = [0]
        for block in self.blocks:
            offsets.append(offsets[-1] + len(block) + len(_BLOCK_SEPARATOR))
        return tuple(
            Place(offsets[block], kind, number, sheet=sheet)
            for block, kind, number, sheet in self._marks
            if block < len(self.blocks)
        )
