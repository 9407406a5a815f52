"""Read pictures of text (scans, photos, screenshots) by OCR: PNG, JPEG, TIFF (every page), WebP and BMP.

Each picture is opened by its header first, and its size checked (:func:`~selfcrag.files.ocr.checked_size`)
before it is decoded; a JPEG is decoded at the size OCR reads (:data:`~selfcrag.files.ocr.WORKING_SIDE`),
not at its full size, and turned as its camera says (EXIF orientation). The text is read by
:mod:`selfcrag.files.ocr`, lines in reading order. A TIFF's pages are each a page of the document, so that
a citation names it (``p. 2``); a single picture is cited by its file's name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from selfcrag.files.containers import ReadingBudget, UnreadableDocument
from selfcrag.files.ocr import (
    MAX_OCR_PAGES,
    MIN_CONFIDENCE,
    REASON_OCR_OFF,
    WORKING_SIDE,
    announce_start,
    checked_size,
    ocr_enabled,
    ocr_image,
    open_image,
)
from selfcrag.files.places import Place, PlacedOutline

if TYPE_CHECKING:
    from PIL import Image

__all__ = ["READ_BY_OCR", "read_image"]

READ_BY_OCR = "ocr"
"""What a document read by OCR says it was read as (:attr:`~selfcrag.files.loaders.LoadedFile.encoding`)."""

_REASON_NO_TEXT = f"no text read by OCR (none with a confidence of {MIN_CONFIDENCE:g} or more)"


def read_image(data: bytes, budget: ReadingBudget) -> tuple[str, tuple[Place, ...], str]:
    """Read a picture's text by OCR; a TIFF's pages each as a page.

    Args:
        data: The file's bytes.
        budget: The document's: its boxes and lines are charged to it.

    Returns:
        The text (each page's lines, in reading order), the places of a TIFF's pages (``Place(offset,
        "page", n)``; none for a single picture) and :data:`READ_BY_OCR`.

    Raises:
        UnreadableDocument: OCR is off, the file is no picture or is damaged, a page declares more pixels
            than :data:`~selfcrag.files.ocr.MAX_IMAGE_PIXELS`, the TIFF has more than
            :data:`~selfcrag.files.ocr.MAX_OCR_PAGES` pages, a page takes too long, or no text was read.
    """
    if not ocr_enabled():
        raise UnreadableDocument(REASON_OCR_OFF)
    announce_start()  # what follows, decoding included, is OCR's work, within its memory limit
    image = open_image(data)
    paged = image.format == "TIFF"  # other formats' frames (an animation, a JPEG's stereo twin) are no pages
    outline = PlacedOutline(budget)
    page = 0
    while True:
        if page:
            if not paged or not _next_frame(image, page):
                break
            if page >= MAX_OCR_PAGES:
                raise UnreadableDocument(f"TIFF has more than {MAX_OCR_PAGES} pages to read by OCR")
        what = f"TIFF page {page + 1}" if paged else "image"
        checked_size(*image.size, what=what)
        lines = [line for block in ocr_image(_decoded(image, what), budget) for line in block]
        if paged:
            outline.place("page", page + 1)
        outline.lines("\n".join(lines))
        page += 1
    if not outline.blocks:
        raise UnreadableDocument(_REASON_NO_TEXT)
    return outline.text(), outline.places() if paged else (), READ_BY_OCR


def _next_frame(image: Image.Image, index: int) -> bool:
    """Go to a multi-page picture's page ``index`` (from 0); False when it has no more."""
    try:
        image.seek(index)
    except EOFError:
        return False
    except (OSError, ValueError, SyntaxError):
        raise UnreadableDocument(f"damaged image (page {index + 1})") from None
    return True


def _decoded(image: Image.Image, what: str) -> Image.Image:
    """The picture decoded (a JPEG at about the size OCR reads) and turned upright as its EXIF data says, in place."""
    from PIL import ImageOps

    try:
        if image.format == "JPEG":
            image.draft("RGB", (WORKING_SIDE, WORKING_SIDE))
        image.load()
        ImageOps.exif_transpose(image, in_place=True)
    except (OSError, ValueError, SyntaxError, EOFError):
        raise UnreadableDocument(f"damaged {what}") from None
    return image
