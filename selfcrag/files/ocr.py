"""Read the text of a picture of a page (a scan, a photo, a screenshot) by OCR, within bounds.

The engine is RapidOCR (``rapidocr-onnxruntime`` 1.4.4, pinned): PP-OCRv4's Chinese and English
detection and recognition models, shipped as ONNX files inside its wheel and run on onnxruntime, so
nothing is fetched at run time (later ``rapidocr`` releases download their models: not those). It is
imported when a picture is first read, and its models are loaded once per process (the reading worker
keeps them for the next file).

A page is read in three steps: the detection model finds the boxes of text; the recognition model
reads each box, with its confidence (boxes under :data:`MIN_CONFIDENCE` are left out); and the boxes
are put in reading order by their geometry (:func:`reading_order`): columns apart, read one after the
other, blocks apart, boxes on one line joined left to right. The engine's own order (top to bottom,
then left to right) would interleave the lines of two columns.

Bounds: a picture's size in pixels is read from its header and checked against :data:`MAX_IMAGE_PIXELS`
before it is decoded (a decompression bomb declares billions); it is decoded at most
:data:`WORKING_SIDE` pixels on its longer side (the engine reads no more); a page's recognition stops
after :data:`PAGE_SECONDS`; each box detected and each line written is charged to the document's
:class:`~selfcrag.files.containers.ReadingBudget`. ``SELFCRAG_OCR=0`` turns OCR off: scans and
pictures are then skipped with :data:`REASON_OCR_OFF`.
"""

from __future__ import annotations

import functools
import io
import os
import statistics
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from selfcrag.files.containers import ReadingBudget, UnreadableDocument

if TYPE_CHECKING:
    import numpy as np
    from PIL import Image

__all__ = [
    "DETECTION_SIDE",
    "MAX_IMAGE_PIXELS",
    "MAX_OCR_PAGES",
    "MIN_CONFIDENCE",
    "OCR_DPI",
    "OCR_SUFFIXES",
    "OCR_VARIABLE",
    "PAGE_SECONDS",
    "REASON_OCR_OFF",
    "WORKING_SIDE",
    "OcrBox",
    "announce_start",
    "checked_size",
    "ocr_enabled",
    "ocr_image",
    "open_image",
    "reading_order",
    "recognise",
    "render_page",
]

OCR_VARIABLE = "SELFCRAG_OCR"
"""``SELFCRAG_OCR=0`` (or ``off``, ``no``, ``false``) turns OCR off; anything else, or unset, leaves it on."""

REASON_OCR_OFF = f"read only by OCR, which {OCR_VARIABLE}=0 turns off (unset it to read this file)"
"""Why a scan or a picture is skipped while OCR is off."""

OCR_DPI = 150
"""A scanned PDF page is rendered at this many dots per inch for OCR (body text is then some 25 pixels high)."""

MAX_IMAGE_PIXELS = 40_000_000
"""A picture (or a TIFF's page) declaring more pixels than this is skipped before it is decoded.

An A4 page scanned at 600 dpi has 35 million, a phone's photo 12 to 24 million; a decompression bomb
declares billions in a few kilobytes. Decoded, 40 million pixels take 120 MB (160 MB with an alpha
channel), within the reading worker's memory limit with the models' 100 MB. PIL's own
``Image.MAX_IMAGE_PIXELS`` is set to it too, for any picture opened in this process.
"""

WORKING_SIDE = 2000
"""A picture is decoded, or a page rendered, at most this many pixels on its longer side (the engine reads no more)."""

MIN_CONFIDENCE = 0.6
"""Recognised text whose confidence (0 to 1) is below this is left out: specks, pictures and torn edges read as text.

A clean 150 dpi page reads at 0.9 to 1.0 a line; 0.5, the engine's own floor, lets through strings of
letters read off a photo's texture.
"""

PAGE_SECONDS = 120.0
"""A page whose recognition takes longer than this is skipped with its document (checked between batches of lines).

A dense page takes 5 to 15 s on two busy cores; this bounds a picture drawn to hold thousands of boxes.
"""

MAX_OCR_PAGES = 60
"""A document (a scanned PDF, a TIFF) with more pages to read by OCR than this is skipped.

At 5 to 10 s a page, 60 pages take the reading worker 5 to 10 minutes, within its time limit
(``SELFCRAG_READ_SECONDS``, 660 s); a longer scan is better split, or read where its text layer was made.
"""

OCR_THREADS = 2
"""Threads each of the engine's models runs on (at most the machine's cores): more gain little on a page."""

DETECTION_SIDE = 960
"""The detection model reads a page at most this many pixels on its longer side (a 150 dpi letter page: 0.58 times).

Its memory and time grow with the pixels it reads: 1,664 pixels took 400 MB and 1.3 to 2.6 s, 960 take
150 MB and a third of the time, with the same characters read on the pages measured (``scripts/bench-ocr``).
Recognition reads each line's box from the full picture.
"""

_REC_BATCH = 6  # lines recognised in one run of the model (more pads short lines to the longest: slower, measured)
OCR_SUFFIXES = (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".webp", ".bmp")
"""Pictures read by OCR (:mod:`selfcrag.files.images`); PDFs' scanned pages are too."""

_OFF = {"0", "off", "no", "false"}
_PAPER_SHARE = 0.8  # a line's pixels this far from its ink to its paper, or lighter, are paper (see _whitened)
_MIN_CONTRAST = 40  # grey levels between ink and paper for a line's box to be whitened
# Two boxes are on one line when their vertical overlap is at least this share of the lower one's height.
_SAME_LINE = 0.5
# A vertical gap at least this many times the median box height, through a whole region, parts columns.
_COLUMN_GAP = 1.5
# A horizontal gap at least this many times the median box height, through a whole region, parts blocks.
_BLOCK_GAP = 0.8
_CJK = ("\u2e80", "\u9fff"), ("\uf900", "\ufaff"), ("\uff00", "\uffef"), ("\u3000", "\u303f")
# Rows of pixels a very wide, low picture (a screenshot of one line) is padded to, top and bottom, as the engine does.
_MIN_HEIGHT = 30
_WIDE = 8


announce: Callable[[], None] | None = None
"""Called once per document as OCR starts on it: the reading worker tells its parent, whose OCR memory limit holds."""


@dataclass(frozen=True)
class OcrBox:
    """A box of text recognised on a page.

    Attributes:
        text: What it reads.
        score: The recognition's confidence, 0 to 1.
        left: Its left edge, in pixels of the page read.
        top: Its top edge.
        right: Its right edge.
        bottom: Its bottom edge.
    """

    text: str
    score: float
    left: float
    top: float
    right: float
    bottom: float

    @property
    def height(self) -> float:
        """Its height in pixels."""
        return self.bottom - self.top


def ocr_enabled() -> bool:
    """Tell whether OCR is on (``SELFCRAG_OCR`` unset, or set to anything but ``0``, ``off``, ``no``, ``false``)."""
    return os.environ.get(OCR_VARIABLE, "").strip().casefold() not in _OFF


def checked_size(width: int, height: int, what: str = "image") -> None:
    """Refuse a picture whose declared size is past :data:`MAX_IMAGE_PIXELS` (before anything is decoded).

    Args:
        width: Its width in pixels, as its header declares.
        height: Its height.
        what: What it is, for the reason ("image", "TIFF page 3").

    Raises:
        UnreadableDocument: It declares more pixels than :data:`MAX_IMAGE_PIXELS`, or none.
    """
    if width <= 0 or height <= 0:
        raise UnreadableDocument(f"{what} declares no pixels ({width} x {height})")
    if width * height > MAX_IMAGE_PIXELS:
        raise UnreadableDocument(
            f"{what} of {width:,} x {height:,} pixels, more than {MAX_IMAGE_PIXELS // 1_000_000} million "
            "(a decompression bomb?)"
        )


def ocr_image(image: Image.Image, budget: ReadingBudget) -> list[list[str]]:
    """Read a decoded picture's text, in reading order.

    Args:
        image: The picture (already checked by :func:`checked_size`), in any mode; it is reduced to
            :data:`WORKING_SIDE` and flattened onto white first.
        budget: The document's: each box detected is charged a piece.

    Returns:
        Its blocks, each a list of lines (empty when no text was read with confidence).

    Raises:
        UnreadableDocument: The page took longer than :data:`PAGE_SECONDS`, or is past the budget.
    """
    try:
        return reading_order(recognise(_as_array(image), budget))
    finally:
        _give_back_memory()


def recognise(pixels: np.ndarray, budget: ReadingBudget, seconds: float = PAGE_SECONDS) -> list[OcrBox]:
    """Detect and recognise the boxes of text on a page.

    Args:
        pixels: The page, as a height x width x 3 array of BGR bytes (OpenCV's order).
        budget: The document's: each box detected is charged a piece, before it is recognised.
        seconds: How long recognition may take.

    Returns:
        The boxes read with at least :data:`MIN_CONFIDENCE`, in the engine's order.

    Raises:
        UnreadableDocument: Recognition took longer than ``seconds``, or the boxes are past the budget.
    """
    import numpy as np

    started = time.monotonic()
    announce_start()
    engine = _engine()
    padding = 0
    height, width = pixels.shape[:2]
    if height <= _MIN_HEIGHT or width / height > _WIDE:  # one low line: the detector wants room around it
        padding = max(int(width / _WIDE), _MIN_HEIGHT) - height // 2
        pixels = np.pad(pixels, ((padding, padding), (0, 0), (0, 0)), constant_values=255)
    found, _ = engine.text_det(pixels)
    if found is None or len(found) == 0:
        return []
    budget.charge(pieces=len(found))
    crops = [_whitened(crop) for crop in engine.get_crop_img_list(pixels, list(found))]
    order = sorted(range(len(crops)), key=lambda i: crops[i].shape[1] / max(crops[i].shape[0], 1))
    read: list[tuple[str, float]] = [("", 0.0)] * len(crops)
    for start in range(0, len(order), _REC_BATCH):
        if time.monotonic() - started > seconds:
            raise UnreadableDocument(f"a page took more than {seconds:g} s to read by OCR")
        chunk = order[start : start + _REC_BATCH]
        results, _ = engine.text_rec([crops[i] for i in chunk])
        for i, result in zip(chunk, results, strict=True):
            read[i] = (str(result[0]), float(result[1]))
    boxes = []
    for points, (text, score) in zip(found, read, strict=True):
        if score < MIN_CONFIDENCE or not text.strip():
            continue
        xs, ys = [float(p[0]) for p in points], [float(p[1]) - padding for p in points]
        boxes.append(OcrBox(text.strip(), score, min(xs), min(ys), max(xs), max(ys)))
    return boxes


def reading_order(boxes: Sequence[OcrBox]) -> list[list[str]]:
    """Put the boxes of a page in the order a person reads them: blocks of lines, columns one after the other.

    The page is cut as a recursive XY-cut does, by the gaps through it: first into columns, where a
    vertical gap of :data:`_COLUMN_GAP` median box heights runs through the whole region; else into blocks,
    where a horizontal gap of :data:`_BLOCK_GAP` heights does; a region neither cuts is a block, whose
    boxes make lines (a box joins a line when it overlaps it vertically by :data:`_SAME_LINE` of its
    height), each read left to right. A title over two columns is a block of its own above them.

    Args:
        boxes: The boxes read.

    Returns:
        The blocks, each a list of lines; boxes on one line are joined by a space, or by nothing between
        Chinese characters.
    """
    if not boxes:
        return []
    unit = max(1.0, statistics.median(box.height for box in boxes))
    blocks: list[list[str]] = []
    _cut(list(boxes), unit, blocks)
    return blocks


def _cut(boxes: list[OcrBox], unit: float, blocks: list[list[str]]) -> None:
    """Cut a region into columns, else blocks, and those again; write each block that cuts no further, in order.

    A stack, not recursion: a thousand boxes laid out as a spiral cut one at a time stay within Python's limit.
    """
    regions = [boxes]
    while regions:
        region = regions.pop()
        for vertical, gap in ((True, _COLUMN_GAP), (False, _BLOCK_GAP)):
            parts = _split(region, vertical=vertical, gap=gap * unit)
            if len(parts) > 1:
                regions.extend(reversed(parts))  # the first part is cut (or written) next
                break
        else:
            blocks.append(_lines(region))


def _split(boxes: list[OcrBox], *, vertical: bool, gap: float) -> list[list[OcrBox]]:
    """The boxes in the parts that gaps of at least ``gap`` through the whole region part (one part: no such gap)."""
    spans = sorted(((b.left, b.right) if vertical else (b.top, b.bottom), i) for i, b in enumerate(boxes))
    parts: list[list[OcrBox]] = [[]]
    reach = spans[0][0][1]
    for (start, end), i in spans:
        if start - reach >= gap:
            parts.append([])
        parts[-1].append(boxes[i])
        reach = max(reach, end)
    return parts


def _lines(boxes: list[OcrBox]) -> list[str]:
    """The lines a block's boxes make, top to bottom, each read left to right."""
    rows: list[list[OcrBox]] = []
    for box in sorted(boxes, key=lambda b: (b.top + b.bottom) / 2):
        row = rows[-1] if rows else None
        if row is not None:
            top, bottom = min(b.top for b in row), max(b.bottom for b in row)
            overlap = min(bottom, box.bottom) - max(top, box.top)
            if overlap >= _SAME_LINE * min(box.height, bottom - top):
                row.append(box)
                continue
        rows.append([box])
    lines = []
    for row in rows:
        line = ""
        for box in sorted(row, key=lambda b: b.left):
            line += box.text if not line or (_is_cjk(line[-1]) and _is_cjk(box.text[0])) else " " + box.text
        lines.append(line)
    return lines


def _is_cjk(char: str) -> bool:
    """Tell whether a character is Chinese (or a full-width sign), which no space parts from its neighbours."""
    return any(low <= char <= high for low, high in _CJK)


def _whitened(crop: np.ndarray) -> np.ndarray:
    """A line's box with its paper made white and its ink stretched to black (levels, as a scanner's driver sets).

    The recognition model reads the faint noise JPEG leaves between words (a scanned PDF's usual
    compression) as ink, and joins the words: "Thekeeperwinds". Pixels lighter than :data:`_PAPER_SHARE` of
    the way from the ink (the crop's 2nd percentile) to the paper (its 80th) become white; a crop without
    that contrast (a faint stamp) stays as it is.
    """
    import numpy as np

    gray = crop.mean(axis=2)
    ink, paper = np.percentile(gray, (2, 80))
    if paper - ink < _MIN_CONTRAST:
        return crop
    white = ink + _PAPER_SHARE * (paper - ink)
    stretched = (crop.astype(np.float32) - ink) * (255.0 / (white - ink))
    return np.clip(stretched, 0, 255).astype(np.uint8)


def _as_array(image: Image.Image) -> np.ndarray:
    """A picture as the engine reads it: RGB on white, at most :data:`WORKING_SIDE` a side, as a BGR array."""
    import numpy as np
    from PIL import Image

    if image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        flat = Image.new("RGB", rgba.size, (255, 255, 255))
        flat.paste(rgba, mask=rgba.getchannel("A"))
        image = flat
    elif image.mode != "RGB":
        image = image.convert("RGB")
    if max(image.size) > WORKING_SIDE:
        scale = WORKING_SIDE / max(image.size)
        size = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
        image = image.resize(size, Image.Resampling.LANCZOS, reducing_gap=3.0)  # a new picture, not a copy first
    return np.ascontiguousarray(np.asarray(image)[:, :, ::-1])


def render_page(page: Any) -> Image.Image:
    """Render a PDF page as OCR reads it: at :data:`OCR_DPI`, at most :data:`WORKING_SIDE` pixels a side.

    Args:
        page: The page, a ``pypdfium2.PdfPage``.

    Returns:
        The page's picture, in RGB.

    Raises:
        UnreadableDocument: The page has no size.
    """
    width, height = page.get_size()  # in points, 72 an inch
    if not (width > 0 and height > 0):
        raise UnreadableDocument("a PDF page has no size")
    scale = min(OCR_DPI / 72, WORKING_SIDE / max(width, height))
    checked_size(max(1, round(width * scale)), max(1, round(height * scale)), what="PDF page")
    picture: Image.Image = page.render(scale=scale, may_draw_forms=True).to_pil()
    return picture if picture.mode == "RGB" else picture.convert("RGB")


def open_image(data: bytes) -> Image.Image:
    """Open a picture from its bytes, its header only: nothing is decoded until it is read.

    Raises:
        UnreadableDocument: It is no picture PIL reads, or is damaged.
    """
    from PIL import Image, UnidentifiedImageError

    Image.MAX_IMAGE_PIXELS = None  # the header alone is read here: checked_size says why a bomb is skipped
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return Image.open(io.BytesIO(data))
    except (UnidentifiedImageError, Image.DecompressionBombError, OSError, ValueError, SyntaxError):
        raise UnreadableDocument("not an image that can be read, or damaged") from None
    finally:
        Image.MAX_IMAGE_PIXELS = MAX_IMAGE_PIXELS  # and PIL's own check stands behind it, for any picture decoded


def announce_start() -> None:
    """Say that OCR starts (see :data:`announce`), once per document read."""
    global announce
    if announce is not None:
        told, announce = announce, None
        told()


@functools.cache
def _engine() -> Any:
    """The OCR engine, its models loaded once for the process (some 0.4 s and 100 MB)."""
    import logging

    from rapidocr_onnxruntime import RapidOCR
    from rapidocr_onnxruntime.utils.infer_engine import OrtInferSession

    threads = max(1, min(OCR_THREADS, os.cpu_count() or 1))
    library_options = OrtInferSession._init_sess_opts

    def options(config: dict[str, Any]) -> Any:
        # onnxruntime's threads wait for work by spinning: on cores other processes share (an ingest embeds
        # meanwhile) that burns them. Measured on 2 busy cores: 8.4 s CPU a page spinning, 5.3 s not.
        made = library_options(config)
        made.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return made

    OrtInferSession._init_sess_opts = staticmethod(options)  # type: ignore[method-assign]
    try:
        engine = RapidOCR(intra_op_num_threads=threads, inter_op_num_threads=1, rec_batch_num=_REC_BATCH, use_cls=False)
    finally:
        OrtInferSession._init_sess_opts = staticmethod(library_options)  # type: ignore[method-assign]
    engine.text_det.limit_type, engine.text_det.limit_side_len = "max", DETECTION_SIDE
    for name in ("RapidOCR", "OrtInferSession"):  # it logs to stderr by a handler of its own
        logging.getLogger(name).handlers.clear()
        logging.getLogger(name).addHandler(logging.NullHandler())
        logging.getLogger(name).propagate = False
    return engine


def _give_back_memory() -> None:
    """Return the memory the models' runs freed to the system (glibc keeps it otherwise, and the worker looks big)."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    if name and os.name == "posix":
        try:
            ctypes.CDLL(name).malloc_trim(0)
        except (OSError, AttributeError):  # not glibc (musl, macOS): nothing to trim
            pass
