"""Read a PDF as a person reads it: by its pages and its chapters, without what repeats on every page.

pypdf extracts each page's text layer, in the order the page draws it (which for
the PDFs LaTeX, Word and LibreOffice write is the reading order, two columns
included: they draw one column after the other). The pages are then read as a
reader of the printed document would:

* the outline (the bookmarks a PDF viewer shows) gives the section path: each
  bookmark becomes a ``#`` heading of its depth, where its title stands on the
  page it points to (at the top of that page when the title is not found there);
  without an outline, the splitter's own heading detection applies;
* running headers and footers (lines at the top or bottom of many pages that
  differ only in the page number, or not at all) are dropped;
* a word hyphenated at a line end is joined (``docu-`` then ``mentation``);
  a compound the document writes with a hyphen elsewhere keeps it;
* a table of contents (lines of a title, a dot leader and a page number) is dropped;
* a sentence that runs over a page break stays one sentence.

Each page's text starts with a :class:`~selfcrag.files.places.Place` naming its
physical page number and, when the PDF labels its pages otherwise, its printed label.
A reviewer's comments (``/Text`` sticky notes and ``/FreeText`` annotations, their
``/Contents``) are written after their page's text, ``Comment: ...``, so they are cited
on their page; at most :data:`_MAX_ANNOTATIONS` annotations of a document are looked at.

A scanned page (a picture of the page, with no text layer or a few words of one) is rendered with
pypdfium2 and read by OCR (:mod:`selfcrag.files.ocr`), then read on as the other pages: a PDF mixing
text pages and scanned ones reads both, each cited by its page.

The work is bounded before any page is read: the number of pages, and the bytes
of drawing instructions (see :data:`PDF_DRAWING_RATIO`; a stream that inflates past
pypdf's own limit is refused as a compression bomb); and while pages are read, by
:data:`MAX_READ_SECONDS` and the document's budget of characters. pypdf's complaints about
broken PDFs go to a :class:`logging.NullHandler`, so that they do not reach stderr
through Python's last-resort handler; applications that configure logging still
receive them.
"""

from __future__ import annotations

import io
import logging
import math
import re
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from selfcrag.files.containers import ReadingBudget, UnreadableDocument, format_size
from selfcrag.files.outline import MarkdownOutline
from selfcrag.files.places import Place
from selfcrag.split.sentences import is_markdown_structure, is_title_line

if TYPE_CHECKING:  # pypdf is imported when a PDF is read: 0.12 s of CPU that other ingests do not need
    from pypdf import PageObject, PdfReader

__all__ = [
    "MAX_OUTLINE_DEPTH",
    "MAX_OUTLINE_ENTRIES",
    "MAX_PDF_PAGES",
    "MAX_READ_SECONDS",
    "PDF_DRAWING_FLOOR",
    "PDF_DRAWING_RATIO",
    "PICTURE_SHARE",
    "READ_WITH_OCR",
    "SCAN_SHARE",
    "SCAN_WORDS",
    "read_pdf",
]

logging.getLogger("pypdf").addHandler(logging.NullHandler())

_MAX_ANNOTATIONS = 10_000  # annotations of a document looked at for comments, at most
_COMMENT_SUBTYPES = ("/Text", "/FreeText")  # a sticky note and a comment written on the page

MAX_PDF_PAGES = 10_000
"""PDFs with more pages than this are skipped."""

PDF_DRAWING_RATIO = 20
"""A PDF's pages may hold drawing instructions up to this many times the file's size.

pypdf reads about 0.6 MB of instructions a second, in Python. Text compresses 3 to 6
times, so an honest file stays well below; more means many pages share one stream or a
compression bomb (issue 20: 20 pages sharing one 7 MB stream, a 14 KB file, took 125 s
and 395 MB). A stream shared by pages is counted once for each page that draws it.
"""

PDF_DRAWING_FLOOR = 8 * 1024 * 1024
"""Small PDFs may hold this many bytes of drawing instructions whatever their size (about 15 s to read)."""

MAX_READ_SECONDS = 600
"""A PDF whose pages take longer than this to read is skipped, checked between pages.

The measures above bound the work before it starts; this bounds what they cannot
foresee (a page whose text pypdf reads slowly). It is ten times what the largest
document the measures admit takes on a quiet machine, so a busy one reads it too.
"""

MAX_OUTLINE_DEPTH = 5
"""Bookmarks nested deeper than this are no headings (the title is ``#``, the outline's levels ``##`` to ``######``)."""

MAX_OUTLINE_ENTRIES = 5_000
"""At most this many bookmarks become headings (a 1,000-page manual has about 1,500)."""

SCAN_WORDS = 50
"""A page whose text layer holds fewer words than this, under pictures that cover most of it, is read by OCR.

A scanner's or a designer's PDF may draw a few words over its page's picture (a stamp, "Background", a
caption); a page of text holds 300 to 600 words.
"""

SCAN_SHARE = 0.5
"""Share of a page pictures cover for the page, with a few words of text layer, to be a scan."""

PICTURE_SHARE = 0.1
"""Share of a page pictures cover for the page, without any text layer, to be read by OCR (a photo, a receipt)."""

READ_WITH_OCR = "pdf+ocr"
"""What a PDF some pages of which were read by OCR says it was read as (its ``encoding``)."""

_clock = time.monotonic  # what MAX_READ_SECONDS is measured by (a test gives its own)

_REASON_NO_TEXT_LAYER = "no text layer in PDF (scanned?)"
_REASON_CORRUPT = "corrupt or unreadable PDF"
_REASON_PASSWORD = "encrypted PDF (password required)"

# Lines this many from the top and from the bottom of a page are where running headers and footers stand.
_EDGE_LINES = 2
# A running header or footer is short; a longer line at a page's edge is text.
_MAX_RUNNING_CHARS = 150
# A line repeated word for word at the edge of at least this share of the pages (and of 3) runs on every page.
_RUNNING_SHARE = 0.2
_DIGITS = re.compile(r"\d+")
# What stands around a page number in a header or footer: "- 3 -", "[3]", "3 |".
_NUMBER_PUNCTUATION = "-–—|[](){}.:,"
# A table of contents entry ends with a page number, arabic or roman.
_PAGE_NUMBER_AT_END = re.compile(r"(?:\d{1,4}|(?<![^\W\d_])[ivxlcdm]{1,7})[ \t]*$", re.IGNORECASE)
_LEADER = " \t.·…_\u2002\u2003"
_CONTENTS_TITLE = re.compile(
    r"(?:table of )?contents|目\s*[录次]|inhalt(?:sverzeichnis)?|sommaire|table des mati[eè]res|[íi]ndice|contenido",
    re.IGNORECASE,
)
# Share of a page's lines that are table of contents entries for the page to be a table of contents.
_TOC_SHARE = 0.5
# A word broken at a line end: letters, then a hyphen (or a soft hyphen, or the Unicode hyphen).
_BROKEN_WORD = re.compile(r"([^\W\d_]+)([-\u00ad\u2010])$")
_FIRST_WORD = re.compile(r"[ \t]*(\S+)[ \t]*")
_LETTERS = re.compile(r"[^\W\d_]+")
_COMPOUND = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)+")
_WORD_PUNCTUATION = ".,;:!?()[]{}\"'“”‘’«»"
# No word broken at a line end is longer than this (the longest English words have about 30 letters).
_LONGEST_WORD = 64
_SENTENCE_END = ".!?:;。！？：；…\"'”’)）」』"
# What may stand before a bookmark's title in the heading line on the page: "2.1", "Chapter 3", "Appendix A".
_HEADING_NUMBER = re.compile(r"(?:chapter|appendix|part|section|annex|第)?(?:\d+|[ivxlcdm]+|[a-z]\d*)?[章节部]?")
_NOT_WORD = re.compile(r"[\W_]+")
# A bookmark's title is looked for in this many lines after the heading before it on its page.
_TITLE_SEARCH_LINES = 400
# A line longer than this is no heading; a heading's number ("appendix", "chapter 12", "2.1.3") no longer than that.
_LONGEST_HEADING = 300
_LONGEST_NUMBER = 16
_FILE_NAME_TITLE = re.compile(r"\.(?:docx?|pdf|tex|dvi|ps|odt|rtf|txt|md|html?|indd|pptx?|xlsx?)\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class _Heading:
    """Where a bookmark's heading goes on its page: before line ``at``, instead of the lines ``at`` to ``end``."""

    at: int
    end: int
    level: int
    text: str


@dataclass(frozen=True)
class _Bookmark:
    """One outline entry that points to a page of the document."""

    page: int  # index of the page it points to
    level: int  # 1 for the outline's top level
    title: str


def read_pdf(data: bytes, budget: ReadingBudget) -> tuple[str, tuple[Place, ...], str]:
    """Read a PDF's text layer as Markdown: its title, its outline's headings and its pages' text, with their places.

    Scanned pages (:func:`_read_scanned_pages`) are read by OCR and go on as the pages around them.

    Args:
        data: Raw PDF bytes (not empty).
        budget: What reading it may make: its pages' text is checked against it as each page is read, and
            charged as it is written.

    Returns:
        The text (the title as a ``#`` heading when the PDF has one, the outline's entries as
        headings, the pages' lines without running headers, footers and tables of contents), a
        ``Place(offset, "page", number, label)`` where each page's text starts, and what it was read as:
        ``pdf``, or :data:`READ_WITH_OCR` when pages of it were read by OCR.

    Raises:
        UnreadableDocument: The PDF is encrypted, corrupt, too costly to read or has no text (no text layer
            and no scanned page, or OCR read nothing, or OCR is off).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reader, pages = _open(data)
        texts = _page_texts(pages, len(data), budget)
        scanned = _read_scanned_pages(data, texts, budget)
        if not any(texts):
            raise UnreadableDocument(_REASON_NO_TEXT_LAYER if scanned is None else scanned)
        bookmarks = _bookmarks(reader, len(pages))
        printed, labelled = _page_labels(reader, len(pages))
        title = _pdf_title(reader, next(text for text in texts if text), use_bookmark=not bookmarks)
        comments = _page_comments(pages, budget)
    page_lines = _as_read(texts, printed, title)
    if not any(page_lines):  # nothing but lines on every page, or a table of contents: keep what is printed
        page_lines = [[line for line in text.split("\n") if line.strip()] for text in texts]
    writer = _PagedMarkdown(budget)
    headings = _place_bookmarks(page_lines, [b for b in bookmarks if b.title.casefold() != (title or "").casefold()])
    title_page = next(index for index, text in enumerate(texts) if text)
    for index, lines in enumerate(page_lines):
        writer.page(index + 1, printed[index] if labelled and printed[index] != str(index + 1) else None)
        if index == title_page and title:
            writer.heading(1, title)
        start = 0
        for heading in headings.get(index, ()):
            writer.lines(lines[start : heading.at])
            writer.heading(heading.level, heading.text)
            start = heading.end  # the lines that print the heading are the heading
        writer.lines(lines[start:])
        for comment in comments.get(index, ()):
            writer.paragraph(f"Comment: {comment}")
    return writer.text(), writer.places(), READ_WITH_OCR if scanned == "" else "pdf"


def _page_comments(pages: list[PageObject], budget: ReadingBudget) -> dict[int, list[str]]:
    """The text of each page's comments (``/Text`` and ``/FreeText`` annotations), by the page's index.

    At most :data:`_MAX_ANNOTATIONS` annotations of the document are looked at; one that cannot be read is
    passed over. Their text is checked against the budget before it is kept.

    Raises:
        UnreadableDocument: The comments would take the document past its budget.
    """
    comments: dict[int, list[str]] = {}
    looked_at = 0
    characters = 0
    for index, page in enumerate(pages):
        try:
            annotations = page.get("/Annots")
            annotations = annotations.get_object() if annotations is not None else []
            annotations = list(annotations[: _MAX_ANNOTATIONS - looked_at])
        except MemoryError:
            raise
        except Exception:  # a broken annotation array loses the page's comments, not the page
            continue
        for reference in annotations:
            looked_at += 1
            try:
                annotation = reference.get_object()
                if annotation.get("/Subtype") not in _COMMENT_SUBTYPES:
                    continue
                text = " ".join(str(annotation.get("/Contents") or "").split())
            except MemoryError:
                raise
            except Exception:
                continue
            if text:
                characters += len(text)
                budget.expect(characters)
                comments.setdefault(index, []).append(text)
        if looked_at >= _MAX_ANNOTATIONS:
            break
    return comments


def _as_read(texts: list[str], printed: list[str], title: str | None) -> list[list[str]]:
    """The lines of each page a person reads: without the title line, running lines, tables of contents and breaks.

    Args:
        texts: Each page's text.
        printed: Each page's printed number.
        title: The document's title, written as its heading: the first page's line that prints it is dropped.

    Returns:
        Each page's lines, none blank, words hyphenated at a line end joined.
    """
    pages = [text.split("\n") if text else [] for text in texts]
    first = next(lines for lines in pages if lines)
    if title and first[0].strip() == title:  # the title line of the first page is the title heading
        first[0] = ""
    for lines, running in zip(pages, _running_lines(pages, printed), strict=True):
        for i in running:
            lines[i] = ""
    pages = [[line for line in lines if line.strip()] for lines in pages]
    _drop_tables_of_contents(pages)
    _join_broken_words(pages)
    return pages


def _open(data: bytes) -> tuple[PdfReader, list[PageObject]]:
    """Open a PDF and list its pages, decrypting one whose user password is empty.

    Raises:
        UnreadableDocument: The PDF is encrypted with a password, corrupt, or has more than :data:`MAX_PDF_PAGES`.
    """
    from pypdf import PdfReader
    from pypdf.errors import FileNotDecryptedError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            _decrypt_with_empty_password(reader)
        pages = list(reader.pages)
    except (UnreadableDocument, MemoryError):
        raise
    except FileNotDecryptedError:
        raise UnreadableDocument(_REASON_PASSWORD) from None
    except Exception:  # pypdf documents that broken files may raise anything
        raise UnreadableDocument(_REASON_CORRUPT) from None
    if len(pages) > MAX_PDF_PAGES:
        raise UnreadableDocument(f"PDF has {len(pages):,} pages, more than {MAX_PDF_PAGES:,}")
    return reader, pages


def _page_texts(pages: list[PageObject], file_size: int, budget: ReadingBudget) -> list[str]:
    """The text of each page ("" for a page without text or that cannot be read), within the bounds.

    Args:
        pages: The document's pages.
        file_size: The file's size in bytes, which bounds the drawing instructions read.
        budget: The document's: the pages' text read so far must fit it.

    Returns:
        One text per page, with LF line endings and no blank lines at either end; at least one is not empty.

    Raises:
        UnreadableDocument: The pages draw too much, take too long or hold too many characters; the PDF
            has no pages, no readable page, or no text.
    """
    readable = _pages_within_budget(pages, max(PDF_DRAWING_FLOOR, PDF_DRAWING_RATIO * file_size))
    texts = [""] * len(pages)
    failed = len(pages) - len(readable)
    characters = 0
    started = _clock()
    for number, (index, page) in enumerate(readable, start=1):
        if _clock() - started > MAX_READ_SECONDS:
            read = f"{number - 1:,} of {len(pages):,} pages read"
            raise UnreadableDocument(f"PDF took more than {MAX_READ_SECONDS:,} s to read ({read})")
        try:
            page_text = page.extract_text() or ""
        except MemoryError:
            raise
        except Exception:  # one broken page must not lose the others
            failed += 1
            continue
        page_text = page_text.replace("\r\n", "\n").replace("\r", "\n").strip()
        characters += len(page_text)
        budget.expect(characters)
        texts[index] = page_text
    if not pages:
        raise UnreadableDocument("PDF has no pages")
    if failed == len(pages):
        raise UnreadableDocument(_REASON_CORRUPT)
    return texts


def _read_scanned_pages(data: bytes, texts: list[str], budget: ReadingBudget) -> str | None:
    """Read the scanned pages of a PDF by OCR, in place of their text layer.

    A page is scanned when pictures cover :data:`SCAN_SHARE` of it and its text layer holds fewer than
    :data:`SCAN_WORDS` words (none, or a few words drawn around the picture), or when it has no text
    layer and a picture covers :data:`PICTURE_SHARE` of it. Each is rendered at
    :data:`~selfcrag.files.ocr.OCR_DPI` with pypdfium2 and read by :mod:`selfcrag.files.ocr`; its lines
    become the page's text, read from then on as every page is (running lines, broken words, places).

    Args:
        data: The PDF's bytes.
        texts: Each page's text layer; a scanned page's is replaced by what OCR read on it.
        budget: The document's: the pages' text must fit it.

    Returns:
        None when no page is scanned; "" when the scanned pages were read; else why they were not (OCR is
        off, or it read no text), for a PDF that holds no other text.

    Raises:
        UnreadableDocument: More than :data:`~selfcrag.files.ocr.MAX_OCR_PAGES` pages are scanned, a page
            takes too long or declares too many pixels, or the text is past the budget.
    """
    import pypdfium2

    from selfcrag.files.ocr import MAX_OCR_PAGES, REASON_OCR_OFF, ocr_enabled, ocr_image, render_page

    try:
        document = pypdfium2.PdfDocument(data)
    except pypdfium2.PdfiumError:
        return None  # pypdf reads what pdfium cannot open: its text layer is all there is
    try:
        scanned = [i for i in range(min(len(document), len(texts))) if _is_scanned(document[i], texts[i])]
        if not scanned:
            return None
        if not ocr_enabled():
            return f"{_REASON_NO_TEXT_LAYER}: {REASON_OCR_OFF}"
        if len(scanned) > MAX_OCR_PAGES:
            raise UnreadableDocument(
                f"PDF has {len(scanned):,} scanned pages, more than {MAX_OCR_PAGES} to read by OCR"
            )
        started = _clock()
        for number, index in enumerate(scanned, start=1):
            if _clock() - started > MAX_READ_SECONDS:
                read = f"{number - 1:,} of {len(scanned):,} scanned pages read"
                raise UnreadableDocument(f"PDF took more than {MAX_READ_SECONDS:,} s to read by OCR ({read})")
            picture = render_page(document[index])
            texts[index] = "\n".join(line for block in ocr_image(picture, budget) for line in block)
            picture.close()
            budget.expect(sum(map(len, texts)))
    finally:
        document.close()
    return "" if any(texts[i] for i in scanned) else "no text layer in PDF, and no text read by OCR"


def _is_scanned(page: Any, text: str) -> bool:
    """Tell whether a page is a scan: pictures cover most of it, and its text layer is empty or a few words.

    Args:
        page: The page, a ``pypdfium2.PdfPage``.
        text: Its text layer, as pypdf read it.
    """
    import pypdfium2.raw as pdfium_c

    words = len(text.split())
    if words >= SCAN_WORDS:
        return False
    left, bottom, right, top = page.get_cropbox()
    area = (right - left) * (top - bottom)
    if not area > 0:
        return False
    covered = 0.0
    for picture in page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE]):
        x0, y0, x1, y1 = picture.get_bounds()
        covered += max(0.0, min(x1, right) - max(x0, left)) * max(0.0, min(y1, top) - max(y0, bottom))
    return covered >= (PICTURE_SHARE if not words else SCAN_SHARE) * area


def _pages_within_budget(pages: list[PageObject], budget: int) -> list[tuple[int, PageObject]]:
    """The pages whose drawing instructions can be decoded, once the whole document is known to fit ``budget``.

    Args:
        pages: The document's pages.
        budget: Bytes of decoded drawing instructions the document may hold in all.

    Returns:
        The pages to read, with their indexes (a page whose streams cannot be decoded is left out, as a broken page).

    Raises:
        UnreadableDocument: The pages draw more than ``budget`` bytes, or a stream inflates past pypdf's limit.
    """
    from pypdf.errors import LimitReachedError

    readable: list[tuple[int, PageObject]] = []
    decoded: dict[int, int] = {}  # bytes of each stream object, decoded once however many pages draw it
    total = 0
    for index, page in enumerate(pages):
        try:
            total += _drawing_bytes(page, decoded)
        except LimitReachedError:
            raise UnreadableDocument("PDF stream too large once decompressed (a compression bomb?)") from None
        except MemoryError:
            raise
        except Exception:  # a stream pypdf cannot decode: the page is broken
            continue
        if total > budget:
            raise UnreadableDocument(
                f"PDF pages draw more than {format_size(budget)} of instructions (pages sharing one stream, "
                "or a compression bomb)"
            )
        readable.append((index, page))
    return readable


def _drawing_bytes(page: PageObject, decoded: dict[int, int]) -> int:
    """Bytes of instructions pypdf reads to extract a page's text: its content streams and the forms it draws.

    Args:
        page: The page.
        decoded: Sizes of the streams decoded so far, by object id.

    Returns:
        The page's total, counting a stream once for this page.
    """
    from pypdf.generic import ArrayObject, DictionaryObject, StreamObject

    total = 0
    seen: set[int] = set()
    pending: list[object] = [page.get("/Contents"), page.get("/Resources")]
    while pending:
        item = pending.pop()
        found = item.get_object() if hasattr(item, "get_object") else item
        if found is None or id(found) in seen:
            continue
        seen.add(id(found))
        if isinstance(found, ArrayObject):
            pending.extend(found)
        elif isinstance(found, StreamObject):  # a content stream, or a form drawn from the resources
            if id(found) not in decoded:
                decoded[id(found)] = len(found.get_data())
            total += decoded[id(found)]
            pending.append(found.get("/Resources"))
        elif isinstance(found, DictionaryObject):  # resources: the forms among their XObjects
            xobjects = found.get("/XObject")
            xobjects = xobjects.get_object() if xobjects is not None else None
            if isinstance(xobjects, DictionaryObject):
                forms = (x.get_object() for x in xobjects.values())
                pending.extend(
                    form for form in forms if isinstance(form, StreamObject) and form.get("/Subtype") == "/Form"
                )
    return total


def _decrypt_with_empty_password(reader: PdfReader) -> None:
    """Open an encrypted PDF that has an empty user password.

    Args:
        reader: A reader whose document is encrypted.

    Raises:
        UnreadableDocument: A password is needed, or decryption is not possible here.
    """
    from pypdf.errors import DependencyError, PyPdfError

    try:
        result = reader.decrypt("")
    except (DependencyError, NotImplementedError):
        raise UnreadableDocument("encrypted PDF (unsupported encryption)") from None
    except PyPdfError:
        raise UnreadableDocument(_REASON_PASSWORD) from None
    if not result:
        raise UnreadableDocument(_REASON_PASSWORD)


def _pdf_title(reader: PdfReader, first_text: str, *, use_bookmark: bool) -> str | None:
    """A PDF's title: its metadata's, else a title-like first line, else (without headings from it) its first bookmark.

    Metadata that only names a file or a program ("report.docx", "Microsoft Word - ...", "untitled") is no title.
    When the outline gives the sections, its first entry is a section ("1 Introduction"), not the title.

    Args:
        reader: The open PDF.
        first_text: The text of the first page that has text.
        use_bookmark: Fall back on the first bookmark.

    Returns:
        The title, or None.
    """
    try:
        info = reader.metadata
        named = str(info.title or "").strip() if info is not None else ""
    except Exception:  # damaged metadata is no title
        named = ""
    if named and not _FILE_NAME_TITLE.search(named) and not named.lower().startswith(("microsoft ", "untitled")):
        return " ".join(named.split())
    first_line = first_text.split("\n", 1)[0].strip()
    # A "# comment" or "$ command" of a code example on top of the first page is code, no title.
    looks_like_code = is_markdown_structure(first_line) or first_line.startswith(("$ ", "> ", "//"))
    if is_title_line(first_line) and not looks_like_code:
        return first_line
    if not use_bookmark:
        return None
    try:
        first = next((entry for entry in reader.outline if not isinstance(entry, list)), None)
        bookmark = str(first.title).strip() if first is not None and first.title else ""
    except Exception:  # a damaged outline is no title
        bookmark = ""
    return " ".join(bookmark.split()) or None


def _page_labels(reader: PdfReader, count: int) -> tuple[list[str], bool]:
    """The number printed on each page, and whether the PDF labels its pages (else the physical numbers).

    Args:
        reader: The open PDF.
        count: Its number of pages.

    Returns:
        One label per page ("iii", "3", "A-1"), and True when they are the PDF's own page labels.
    """
    physical = [str(n) for n in range(1, count + 1)]
    try:
        if "/PageLabels" not in reader.root_object:
            return physical, False
        labels = [str(label) for label in reader.page_labels]
    except Exception:  # damaged page labels: the pages go by their physical numbers
        return physical, False
    return (labels, True) if len(labels) == count else (physical, False)


def _bookmarks(reader: PdfReader, count: int) -> list[_Bookmark]:
    """The outline's entries that point to a page, in the order of their pages (at most :data:`MAX_OUTLINE_ENTRIES`).

    Args:
        reader: The open PDF.
        count: Its number of pages.

    Returns:
        The entries, each once, none nested deeper than :data:`MAX_OUTLINE_DEPTH`; empty when the PDF has
        no outline or pypdf cannot read it (pypdf bounds the outline's depth and entries, and stops at a cycle).
    """
    try:
        outline = reader.outline
    except Exception:  # a damaged or hostile outline: no sections from it
        return []
    found: list[_Bookmark] = []
    seen: set[_Bookmark] = set()
    stack: list[tuple[Iterator[Any], int]] = [(iter(outline), 1)]  # pypdf nests the entries under one in a list
    while stack and len(found) < MAX_OUTLINE_ENTRIES:
        entries, level = stack[-1]
        entry = next(entries, None)
        if entry is None:
            stack.pop()
        elif isinstance(entry, list):  # the entries under the one before
            if level < MAX_OUTLINE_DEPTH:
                stack.append((iter(entry), level + 1))
        else:
            try:
                page = reader.get_destination_page_number(entry)
                title = " ".join(str(entry.title or "").split())
            except Exception:  # a bookmark pointing nowhere readable is no heading
                continue
            bookmark = _Bookmark(page, level, title) if page is not None and 0 <= page < count and title else None
            if bookmark is not None and bookmark not in seen:  # an outline that loops lists an entry again
                seen.add(bookmark)
                found.append(bookmark)
    return sorted(found, key=lambda bookmark: bookmark.page)  # stable: the outline's order within a page


def _place_bookmarks(pages: list[list[str]], bookmarks: list[_Bookmark]) -> dict[int, list[_Heading]]:
    """Where each bookmark's heading goes: at its title's line on its page, else at the top (or after the one before).

    The line that prints the title (or the two lines it wraps over) becomes the heading, in the words the
    page prints it ("2.1 ASN.1 syntax" for the bookmark "ASN.1 syntax").

    Args:
        pages: Each page's lines.
        bookmarks: The outline's entries, in page order.

    Returns:
        For each page with headings, its headings in the order of their lines.
    """
    placed: dict[int, list[_Heading]] = {}
    bare: dict[int, list[str]] = {}  # each page's lines as titles are compared, worked out once
    cursor = (-1, 0)  # the page, and its line after the last heading placed
    for bookmark in bookmarks:
        lines = pages[bookmark.page]
        if bookmark.page not in bare:
            bare[bookmark.page] = [_bare(line) if len(line) <= _LONGEST_HEADING else "" for line in lines]
        start = cursor[1] if cursor[0] == bookmark.page else 0
        found = _find_title(bare[bookmark.page], start, _bare(bookmark.title))
        if found is None:
            heading = _Heading(start, start, bookmark.level + 1, bookmark.title)
        else:
            at, end = found
            heading = _Heading(at, end, bookmark.level + 1, " ".join(line.strip() for line in lines[at:end]))
        placed.setdefault(bookmark.page, []).append(heading)
        cursor = (bookmark.page, heading.end)
    return placed


def _bare(text: str) -> str:
    """Text as a title is compared: its letters and digits, in lower case ("2.1 ASN.1 syntax" is "21asn1syntax")."""
    return _NOT_WORD.sub("", text.casefold())


def _find_title(lines: list[str], start: int, title: str) -> tuple[int, int] | None:
    """Find the line (or two) from ``start`` that prints a title, perhaps after its number ("2.1", "Appendix A").

    Only the next :data:`_TITLE_SEARCH_LINES` lines are looked at (a page holds about 60), so that
    thousands of bookmarks pointing to one long page cost no more than they would on pages of their own.

    Args:
        lines: The page's lines, as :func:`_bare` leaves them.
        start: The first line to look at.
        title: The title, as :func:`_bare` leaves it.

    Returns:
        The index of the first line and of the line after the title, or None when it is not found.
    """
    if not title:
        return None
    for i in range(start, min(len(lines), start + _TITLE_SEARCH_LINES)):
        for end in (i + 1, i + 2):
            printed = "".join(lines[i:end])
            number = len(printed) - len(title)
            if end <= len(lines) and 0 <= number <= _LONGEST_NUMBER and printed.endswith(title):
                if _HEADING_NUMBER.fullmatch(printed[:number]):
                    return i, end
    return None


def _running_lines(pages: list[list[str]], printed: list[str]) -> list[set[int]]:
    """The lines of each page that are a running header or footer.

    A line near the top or bottom of a page (:data:`_EDGE_LINES` from either end) is a running line when
    the same words stand at the edge of other pages and either the line carries the page's number (its
    printed label, or a number that runs with the pages: "Chapter 2: ASN.1 structure handling 3", "Page 7",
    "- 12 -") or it repeats word for word on at least :data:`_RUNNING_SHARE` of the pages and 3 ("ACME
    Confidential"). Digits are compared as digits, so that a footer's changing page number still matches.

    Args:
        pages: Each page's lines.
        printed: Each page's printed number (its label, or its physical number).

    Returns:
        For each page, the indexes of its running lines.
    """
    groups: dict[str, list[tuple[int, int]]] = {}
    for page, lines in enumerate(pages):
        filled = [i for i, line in enumerate(lines) if line.strip()]
        for i in sorted({*filled[:_EDGE_LINES], *filled[-_EDGE_LINES:]}):
            if len(lines[i]) <= _MAX_RUNNING_CHARS:
                groups.setdefault(_running_key(lines[i], printed[page]), []).append((page, i))
    running: list[set[int]] = [set() for _ in pages]
    repeats = min(len(pages), max(3, math.ceil(_RUNNING_SHARE * len(pages))))
    for members in groups.values():
        if len({page for page, _ in members}) < 2:
            continue
        found = {(page, i): " ".join(pages[page][i].split()) for page, i in members}
        # Each count is of pages: a page whose header and footer both match counts once.
        same = Counter(line for line, _ in {(line, page) for (page, _), line in found.items()})
        labelled = {page for (page, _), line in found.items() if _carries_label(line, printed[page])}
        offsets = Counter(
            o for o, _ in {(o, page) for (page, _), line in found.items() for o in _page_offsets(line, page)}
        )
        counters = {offset for offset, count in offsets.items() if count >= 2}
        for (page, i), line in found.items():
            counts_pages = (page in labelled and len(labelled) >= 2) or bool(counters & _page_offsets(line, page))
            repeated = same[line] >= repeats and sum(ch.isalpha() for ch in line) >= 3
            if counts_pages or repeated:
                running[page].add(i)
    return running


def _running_key(line: str, label: str) -> str:
    """A line as running lines are compared: lower case, its page label and its digits as ``#``."""
    words = []
    for word in line.split():
        number = word.strip(_NUMBER_PUNCTUATION)
        words.append(word.replace(number, "#") if number and number.casefold() == label.casefold() else word)
    return _DIGITS.sub("#", " ".join(words).casefold())


def _carries_label(line: str, label: str) -> bool:
    """Tell whether a word of the line is the page's printed label ("iii", "7")."""
    return any(word.strip(_NUMBER_PUNCTUATION).casefold() == label.casefold() for word in line.split())


def _page_offsets(line: str, page: int) -> set[int]:
    """The differences between the page's index and the numbers at either end of the line (where page numbers go)."""
    words = [word.strip(_NUMBER_PUNCTUATION) for word in line.split()]
    ends = {words[0], words[-1]} if words else set()
    return {int(word) - page for word in ends if word.isdigit() and len(word) <= 5}


def _toc_entry(line: str) -> int:
    """How much a line reads as an entry of a table of contents: 2 with a dot leader, 1 a title and a number, 0 not."""
    number = _PAGE_NUMBER_AT_END.search(line)
    if number is None:
        return 0
    before = line[: number.start()]
    title = before.rstrip(_LEADER)
    if not any(ch.isalpha() for ch in title):
        return 0
    leader = before[len(title) :]
    if leader.count(".") + leader.count("·") + leader.count("_") + 3 * leader.count("…") >= 3:
        return 2
    return 1 if leader and len(line) <= 100 else 0


def _drop_tables_of_contents(pages: list[list[str]]) -> None:
    """Empty the pages that are a table of contents (or an index), and the entries of one that starts mid-page.

    A page is a table of contents when at least :data:`_TOC_SHARE` of its lines (and 3) are entries with a
    dot leader, or when it is titled "Contents" and at least that share are entries with a page number.
    On other pages, the entries after a "Contents" line, or at the top of the page after a table of
    contents, are dropped.

    Args:
        pages: Each page's lines, changed in place.
    """
    after_contents = False
    for lines in pages:
        kinds = [_toc_entry(line) for line in lines]
        titled = next((i for i, line in enumerate(lines[:3]) if _CONTENTS_TITLE.fullmatch(line.strip())), None)
        share = max(3, _TOC_SHARE * len(lines))
        if kinds.count(2) >= share or (titled is not None and sum(1 for k in kinds if k) >= share):
            lines.clear()
            after_contents = True
            continue
        if titled is not None:  # "Contents", then its entries, then the text
            first, start, weakest = titled, titled + 1, 1
        elif after_contents:  # the end of the table of contents on the page before, then the text
            first, start, weakest = 0, 0, 2  # a line of text may end in a number: only entries with a dot leader
        else:
            continue
        after_contents = False
        end = start
        while end < len(lines) and (kinds[end] >= weakest or (end + 1 < len(lines) and kinds[end + 1] >= weakest)):
            end += 1  # an entry may wrap over two lines
        if end > start:
            del lines[first:end]


def _join_broken_words(pages: list[list[str]]) -> None:
    """Join each word hyphenated at a line end (within a page, or over a page break) with its rest on the next line.

    The rest of the word moves up to the line that holds its start ("docu-" then "mentation kept" is
    "documentation" then "kept"). A word is broken only when the next line goes on in lower case. The
    hyphen stays when the document writes that compound with a hyphen elsewhere and never without one
    ("well-" then "known", where "well-known" stands whole on another line), and when what stands before
    it is no word in lower case (the format "YYMMDDhhmm-hh"). A soft hyphen always goes.

    Args:
        pages: Each page's lines, changed in place (a line whose only word moved up is removed).
    """
    compounds: set[str] = set()
    words: set[str] = set()
    for lines in pages:
        for line in lines:
            compounds.update(_compounds(line))
            words.update(w.casefold() for w in _LETTERS.findall(line))
    previous: tuple[list[str], int] | None = None
    for lines in pages:
        if not lines:  # a page without text (or a table of contents) between: no word runs over it
            previous = None
        i = 0
        while i < len(lines):
            if previous is not None:
                above, j = previous
                broken = _broken_word(above[j])
                rest = _FIRST_WORD.match(lines[i])
                if broken and rest and rest.group(1)[0].islower():
                    head, tail = broken.group(1), _LETTERS.match(rest.group(1))
                    whole = (head + (tail.group(0) if tail else "")).casefold()
                    compound = f"{head}-{tail.group(0) if tail else ''}".casefold()
                    a_word = len(head) > 1 and head[1:].islower()  # "docu", "Manip"; not "YYMMDDhhmm-hh" (a format)
                    keep = broken.group(2) != "\u00ad" and (
                        not a_word or (compound in compounds and whole not in words)
                    )
                    above[j] = above[j][: broken.end(1)] + ("-" if keep else "") + rest.group(1)
                    lines[i] = lines[i][rest.end() :]
                    if not lines[i].strip():  # its only word moved up: the line above stays the one to join to
                        i += 1
                        continue
            previous = (lines, i)
            i += 1
    for lines in pages:
        lines[:] = [line for line in lines if line.strip()]


def _compounds(line: str) -> set[str]:
    """The words of a line written with a hyphen ("well-known"), in lower case; not one broken at the line's end."""
    words = (word.strip(_WORD_PUNCTUATION) for word in line.split() if "-" in word)
    return {word.casefold() for word in words if _COMPOUND.fullmatch(word)}


def _broken_word(line: str) -> re.Match[str] | None:
    """The start of a word broken at the end of the line (its letters and its hyphen), if there is one.

    Only the line's last :data:`_LONGEST_WORD` characters are looked at: a regular expression that ends
    at a line's end would otherwise try every position of a long line of letters, and each would run to its end.
    """
    if not line.endswith(("-", "\u00ad", "\u2010")):
        return None
    return _BROKEN_WORD.search(line, max(0, len(line) - _LONGEST_WORD))


def _runs_on(last_line: str, next_line: str) -> bool:
    """Tell whether the text of the next page goes on with the sentence the page before left open."""
    last, following = last_line.rstrip(), next_line.lstrip()
    if not last or not following or last[-1] in _SENTENCE_END:
        return False
    return following[0].islower() or (_is_ideograph(last[-1]) and _is_ideograph(following[0]))


def _is_ideograph(char: str) -> bool:
    """Tell whether a character is a CJK ideograph (Chinese text, which has no letter case)."""
    return "\u4e00" <= char <= "\u9fff" or "\u3400" <= char <= "\u4dbf"


class _PagedMarkdown:
    """The document's Markdown, written page by page, with the offset where each page's text starts.

    Blocks are separated by a blank line, but for a page whose text goes on with the sentence the page
    before left open: one line break, so that the splitter keeps that sentence whole. The text is joined
    once, at the end (a book whose every page runs on is one paragraph, not a string copied per page).
    """

    def __init__(self, budget: ReadingBudget) -> None:
        self.outline = MarkdownOutline(budget)
        self.breaks: list[str] = []  # what stands before each block of the outline
        self.marks: list[tuple[int, int, str | None]] = []  # block, page number, label
        self.pending: tuple[int, str | None] | None = None  # the page whose first text is still to come
        self.open_line: str | None = None  # the last line written, when the last block is text

    def page(self, number: int, label: str | None) -> None:
        """Start a page: its place is marked at the first text written from now on."""
        self.pending = (number, label)

    def heading(self, level: int, title: str) -> None:
        """Write a heading."""
        self._added(self.outline.heading, level, title)
        self.open_line = None

    def paragraph(self, text: str) -> None:
        """Write a paragraph of its own (a comment on the page)."""
        self._added(self.outline.paragraph, text)
        self.open_line = None

    def lines(self, lines: list[str]) -> None:
        """Write a page's lines (none of them read as Markdown structure), going on with the sentence left open."""
        if lines:
            runs_on = self.pending is not None and self.open_line is not None and _runs_on(self.open_line, lines[0])
            self._added(self.outline.lines, "\n".join(lines), runs_on=runs_on)
            self.open_line = lines[-1]

    def _added(self, write: Callable[..., None], *args: Any, runs_on: bool = False) -> None:
        before = len(self.outline.blocks)
        write(*args)
        if len(self.outline.blocks) > before:
            self.breaks.append("\n" if runs_on else "\n\n" if before else "")
            if self.pending is not None:
                self.marks.append((before, *self.pending))
                self.pending = None

    def text(self) -> str:
        """The document's Markdown."""
        return "".join(part for pair in zip(self.breaks, self.outline.blocks, strict=True) for part in pair)

    def places(self) -> tuple[Place, ...]:
        """Where each page's text starts in :meth:`text`."""
        starts = []
        at = 0
        for separator, block in zip(self.breaks, self.outline.blocks, strict=True):
            starts.append(at + len(separator))
            at += len(separator) + len(block)
        return tuple(Place(starts[block], "page", number, label) for block, number, label in self.marks)
