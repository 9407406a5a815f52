"""Find and read the user's documents (Markdown, plain text, PDF, reStructuredText and HTML).

Two entry points:

* :func:`discover` expands the files and folders a user named into the list of
  supported files to ingest, plus a list of paths that were skipped and why.
* :func:`read_document` reads one file into text. Problems the user can cause
  (missing file, binary file, scanned PDF, bad encoding, ...) never raise; they
  come back as a :class:`SkippedFile` whose ``reason`` is one short line.

The module is pure and quiet: it never prints and never configures logging. The
only concession is a :class:`logging.NullHandler` on pypdf's logger so that
pypdf's complaints about broken PDFs do not reach stderr through Python's
last-resort handler; applications that configure logging still receive them.
"""

from __future__ import annotations

import errno
import io
import logging
import os
import re
import stat
import time
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from charset_normalizer import from_bytes

from selfcrag.files.html_page import TooDeeplyNested, html_to_markdown
from selfcrag.files.manpage import is_man_page, man_page_to_markdown
from selfcrag.files.markdown import markdown_text
from selfcrag.files.outline import MarkdownOutline
from selfcrag.files.restructuredtext import rst_to_markdown
from selfcrag.split.sentences import is_markdown_structure, is_title_line

if TYPE_CHECKING:  # pypdf is imported when a PDF is read: 0.12 s of CPU that other ingests do not need
    from pypdf import PageObject, PdfReader

__all__ = [
    "MAX_FILE_BYTES",
    "SUPPORTED_SUFFIXES",
    "LoadedFile",
    "SkippedFile",
    "discover",
    "nothing_to_ingest",
    "read_document",
]

logging.getLogger("pypdf").addHandler(logging.NullHandler())

SUPPORTED_SUFFIXES = (".md", ".markdown", ".txt", ".pdf", ".rst", ".html", ".htm")
"""File suffixes (compared case-insensitively) that can be ingested."""

MAX_FILE_BYTES = 50 * 1024 * 1024
"""Files larger than this many bytes are skipped."""

MAX_TEXT_CHARS = 50_000_000
"""Documents whose text runs past this many characters are skipped (a small PDF can hold far more text than bytes)."""

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

_clock = time.monotonic  # what MAX_READ_SECONDS is measured by (a test gives its own)

# Byte values that count as "control characters" when sniffing for binary data:
# C0 controls except TAB, LF, VT, FF, CR and ESC (ANSI colour codes), plus DEL.
_CONTROL_BYTES = bytes(b for b in range(0x20) if b not in (0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x1B)) + b"\x7f"
# Decoded characters that indicate a failed decode: the same controls, the C1
# controls and U+FFFD (the replacement character).
_BAD_CHARS_RE = re.compile("[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f-\x9f\ufffd]")
# More control bytes than this fraction of the file means "binary file".
_MAX_CONTROL_BYTE_RATIO = 0.05
# More bad characters than this fraction of the decoded text means "undecodable".
_MAX_BAD_CHAR_RATIO = 0.10

_UTF8_BOM = b"\xef\xbb\xbf"
_UTF16_LE_BOM = b"\xff\xfe"
_UTF16_BE_BOM = b"\xfe\xff"

_REASON_UNDECODABLE = "undecodable text (no text encoding fits)"
_REASON_NO_TEXT_LAYER = "no text layer in PDF (scanned?)"
_REASON_UNDECODABLE_NAME = "file name is not valid UTF-8 (rename it)"
_REASON_MARKUP_ONLY = "no text in it, only markup"
# Structured formats: their parser's text, written as Markdown so headings give sections and titles.
_MARKUP_TO_MARKDOWN = {".rst": rst_to_markdown, ".html": html_to_markdown, ".htm": html_to_markdown}
_MARKUP_NAMES = {
    ".rst": "reStructuredText",
    ".html": "HTML",
    ".htm": "HTML",
    ".md": "Markdown",
    ".markdown": "Markdown",
}


@dataclass(frozen=True)
class LoadedFile:
    """A document that was read successfully.

    Attributes:
        path: Resolved absolute path of the file (symlinks resolved).
        text: Decoded text with line endings normalised to LF and without a
            byte-order mark. For PDFs, the text of the pages joined by blank
            lines. For reStructuredText and HTML, what their parsers read,
            written as Markdown (``#`` headings, one line per paragraph, list
            item or table row). Never empty or whitespace-only.
        encoding: The text encoding it was read in (``utf-8``, ``cp1252``,
            ``gb18030``, ``utf_16_le``, ...); ``pdf`` for a PDF.

    """

    path: Path
    text: str
    encoding: str = "utf-8"


@dataclass(frozen=True)
class SkippedFile:
    """A path that was not read, with the reason in words a user understands.

    Attributes:
        path: Absolute path as named or found; symlinks are not resolved, so a
            broken link is reported under its own name.
        reason: One short line, e.g. ``"binary file"`` or ``"not found"``.

    """

    path: Path
    reason: str


class _Skip(Exception):
    """Internal signal carrying the reason a file is skipped."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# --------------------------------------------------------------------------- #
# discover
# --------------------------------------------------------------------------- #


def discover(paths: Iterable[str | Path] | str | Path) -> tuple[list[Path], list[SkippedFile]]:
    """Expand files and folders into the list of supported files to read.

    Folders are walked recursively; within a folder, entries are visited in
    sorted name order, so the result is sorted by path below each argument.
    Arguments keep the order they were given in and duplicates (the same file
    named twice, or reached through a symlink) are listed once. Symlinks are
    followed, but a directory is never entered twice, so symlink loops
    terminate. Hidden entries (names starting with ``.``, e.g. ``.git`` or
    ``.selfcrag``) are ignored inside folders, but a hidden path named
    explicitly is honoured. Files with unsupported suffixes are reported as
    skipped, inside folders as when named, so a ``.rst`` is never dropped
    without a word.

    Args:
        paths: Files and folders named by the user. ``~`` is expanded. A single
            ``str`` or ``Path`` is accepted as a one-element list.

    Returns:
        A pair ``(files, skipped)``: ``files`` are resolved absolute paths of
        supported regular files in discovery order; ``skipped`` lists paths that
        were named (or found) but cannot be ingested, e.g. missing paths,
        unsupported explicit files, unreadable folders and symlink loops.

    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    walker = _Walker()
    for raw in paths:
        if not str(raw).strip():  # Path("") would silently mean the current folder
            walker.skip(Path(str(raw)), "empty path")
            continue
        walker.add_argument(Path(raw).expanduser())
    return walker.files, walker.skipped


class _Walker:
    """Accumulates the results of :func:`discover` across all arguments."""

    def __init__(self) -> None:
        self.files: list[Path] = []
        self.skipped: list[SkippedFile] = []
        self._seen_files: set[Path] = set()
        self._seen_skips: set[tuple[Path, str]] = set()
        self._visited_dirs: set[tuple[int, int]] = set()

    def skip(self, path: Path, reason: str) -> None:
        key = (_display_path(path), reason)
        if key not in self._seen_skips:
            self._seen_skips.add(key)
            self.skipped.append(SkippedFile(key[0], reason))

    def add_file(self, path: Path) -> None:
        if path not in self._seen_files:
            self._seen_files.add(path)
            self.files.append(path)

    def add_argument(self, path: Path) -> None:
        if _undecodable_name(str(path)):
            self.skip(path, _REASON_UNDECODABLE_NAME)
            return
        try:
            st = os.stat(path)
        except OSError as exc:
            self.skip(path, _os_error_reason(exc))
            return
        if stat.S_ISDIR(st.st_mode):
            key = (st.st_dev, st.st_ino)
            if key in self._visited_dirs:
                return
            self._visited_dirs.add(key)
            self.walk(path, {key})
        elif stat.S_ISREG(st.st_mode):
            resolved = _resolve(path)
            suffix = resolved.suffix.lower()
            if suffix in SUPPORTED_SUFFIXES:
                self.add_file(resolved)
            else:
                self.skip(path, _unsupported_reason(suffix))
        else:
            self.skip(path, "not a regular file")

    def walk(self, top: Path, ancestors: set[tuple[int, int]]) -> None:
        """Walk a folder depth first, in sorted name order, with a stack of its own.

        Not recursive: a folder nested 1,100 deep (deeper than Python's recursion limit) is walked like any.
        """
        stack: list[tuple[Iterator[os.DirEntry[str]], Path, set[tuple[int, int]]]] = []
        listed = self._list(top)
        if listed is not None:
            stack.append((iter(listed), top, ancestors))
        while stack:
            entries, directory, above = stack[-1]
            entry = next(entries, None)
            if entry is None:
                stack.pop()
                continue
            if entry.name.startswith("."):
                continue
            path = directory / entry.name
            if _undecodable_name(entry.name):
                if entry.is_dir() or _is_supported_name(entry.name):
                    self.skip(path, _REASON_UNDECODABLE_NAME)
                continue
            try:
                st = os.stat(path)
            except OSError as exc:
                reason = _os_error_reason(exc)
                if reason == "symlink loop":
                    self.skip(path, reason)
                elif _is_supported_name(entry.name):
                    if reason == "not found" and entry.is_symlink():
                        reason = "broken symlink"
                    self.skip(path, reason)
                continue
            if stat.S_ISDIR(st.st_mode):
                key = (st.st_dev, st.st_ino)
                if key in above:
                    self.skip(path, "symlink loop")
                    continue
                if key in self._visited_dirs:
                    continue
                self._visited_dirs.add(key)
                listed = self._list(path)
                if listed is not None:
                    stack.append((iter(listed), path, above | {key}))
            elif stat.S_ISREG(st.st_mode):
                resolved = _resolve(path)
                if resolved.suffix.lower() in SUPPORTED_SUFFIXES:
                    self.add_file(resolved)
                else:
                    self.skip(path, _unsupported_reason(resolved.suffix.lower()))
            # FIFOs, sockets and devices inside folders are ignored silently.

    def _list(self, directory: Path) -> list[os.DirEntry[str]] | None:
        """A folder's entries in name order, or None (and a skipped line) when it cannot be read."""
        try:
            with os.scandir(directory) as it:
                return sorted(it, key=lambda entry: entry.name)
        except OSError as exc:
            self.skip(directory, _os_error_reason(exc))
            return None


# --------------------------------------------------------------------------- #
# read_document
# --------------------------------------------------------------------------- #


def read_document(path: Path) -> LoadedFile | SkippedFile:
    """Read one Markdown, text, PDF, reStructuredText or HTML file.

    Text files are decoded as UTF-8 (with or without BOM), UTF-16 when a
    UTF-16 BOM is present, and otherwise in the encoding charset-normalizer
    detects. Line endings are normalised to LF and a leading BOM is dropped.
    PDFs are read with pypdf; the text of all pages is joined with blank
    lines, under the PDF's title as a heading. reStructuredText (docutils)
    and HTML (selectolax) are decoded as text, parsed, and written as
    Markdown, so their headings give sections and titles; nothing in them is
    run, included or fetched. Markdown loses its HTML tags (their words stay),
    and a manual page saved as text is written as Markdown by its sections.
    The work per document is bounded before a parser runs: HTML nesting
    depth, PDF pages and drawing instructions, characters of text; and a
    PDF's pages are read for at most :data:`MAX_READ_SECONDS`.

    Args:
        path: The file to read (``str`` is accepted too).

    Returns:
        A :class:`LoadedFile` with the resolved path and the text, or a
        :class:`SkippedFile` when the file cannot be used: not found,
        permission denied, a directory, an unsupported suffix, larger than
        :data:`MAX_FILE_BYTES`, empty or whitespace-only, binary, undecodable,
        a PDF without a text layer, an encrypted or corrupt PDF, a PDF past
        its bounds (pages, drawing instructions, characters, seconds), HTML nested past
        :data:`~selfcrag.files.html_depth.MAX_NESTING`, or markup without text
        (or that its parser cannot read). Problems caused by the user's files
        never raise.

    """
    path = Path(path).expanduser()
    try:
        resolved, data = _read_bytes(path)
        suffix = resolved.suffix.lower()
        if suffix == ".pdf":
            text, encoding = _pdf_text(data), "pdf"
        else:
            text, encoding = _decode_text(data)
            if suffix in _MARKUP_TO_MARKDOWN:
                text = _markup_text(text, suffix)
            elif suffix in (".md", ".markdown"):
                text = _markup_text(text, suffix, markdown_text)
            elif is_man_page(text):
                text = man_page_to_markdown(text)
    except _Skip as skip:
        return SkippedFile(_display_path(path), skip.reason)
    return LoadedFile(resolved, text, encoding)


def _read_bytes(path: Path) -> tuple[Path, bytes]:
    """Check and read a file's bytes.

    Args:
        path: The file to read.

    Returns:
        The resolved path and the file's contents.

    Raises:
        _Skip: The file is missing, unreadable, not a regular file, of an
            unsupported type, too large or empty.

    """
    try:
        st = os.stat(path)
    except OSError as exc:
        raise _Skip(_os_error_reason(exc)) from None
    if stat.S_ISDIR(st.st_mode):
        raise _Skip("is a directory")
    if not stat.S_ISREG(st.st_mode):
        raise _Skip("not a regular file")
    resolved = _resolve(path)
    suffix = resolved.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        raise _Skip(_unsupported_reason(suffix))
    limit = MAX_FILE_BYTES
    if st.st_size > limit:
        raise _Skip(f"larger than {_format_size(limit)}")
    try:
        with open(resolved, "rb") as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise _Skip(_os_error_reason(exc)) from None
    if len(data) > limit:
        raise _Skip(f"larger than {_format_size(limit)}")
    if not data:
        raise _Skip("empty file")
    return resolved, data


def _decode_text(data: bytes) -> tuple[str, str]:
    """Decode the bytes of a text file, detecting its encoding.

    A byte-order mark decides; else strict UTF-8; else charset-normalizer
    (maintained, statistical) names the encoding: GB18030 Chinese, Latin-1 or
    Windows-1252 Western text, UTF-16 without a BOM. A file with NUL bytes is
    binary unless it is detected as UTF-16 or UTF-32.

    Args:
        data: Raw file contents (not empty).

    Returns:
        The decoded text (without BOM, with LF line endings) and the encoding used.

    Raises:
        _Skip: The data is binary, undecodable or whitespace-only.

    """
    if data.startswith(_UTF16_LE_BOM) or data.startswith(_UTF16_BE_BOM):
        encoding = "utf-16-le" if data.startswith(_UTF16_LE_BOM) else "utf-16-be"
        text = _decode_with_fallback(data[2:], (encoding,))
    elif data.startswith(_UTF8_BOM):
        encoding, text = "utf-8", _decode_with_fallback(_not_binary(data)[3:], ("utf-8",))
    else:
        try:
            # NUL bytes: binary, or UTF-16/UTF-32 without a BOM, which only detection tells apart.
            encoding, text = _detect(data) if b"\x00" in data else ("utf-8", _not_binary(data).decode("utf-8"))
        except UnicodeDecodeError:
            encoding, text = _detect(data)
        if _bad_char_ratio(text) > _MAX_BAD_CHAR_RATIO:
            raise _Skip("binary file" if b"\x00" in data else _REASON_UNDECODABLE)
    text = _normalise_newlines(text.removeprefix("\ufeff"))
    if not text.strip():
        raise _Skip("empty file")
    return text, encoding


def _markup_text(source: str, suffix: str, reader: Callable[[str], str] | None = None) -> str:
    """Parse reStructuredText or HTML (or read the HTML out of Markdown) and return its text as Markdown.

    Args:
        source: The decoded file.
        suffix: ``.rst``, ``.html``, ``.htm``, ``.md`` or ``.markdown``.
        reader: What turns the source into Markdown (default: the parser of the suffix's format).

    Returns:
        The text, as :func:`~selfcrag.files.restructuredtext.rst_to_markdown`,
        :func:`~selfcrag.files.html_page.html_to_markdown` or
        :func:`~selfcrag.files.markdown.markdown_text` writes it.

    Raises:
        _Skip: The parser cannot read it, or it holds no text (only markup, scripts or directives).
    """
    try:
        text = (reader or _MARKUP_TO_MARKDOWN[suffix])(source)
    except TooDeeplyNested as refused:
        raise _Skip(str(refused)) from None
    except Exception:  # a parser may raise anything on a document it cannot read: that file is skipped
        raise _Skip(f"unreadable {_MARKUP_NAMES[suffix]}") from None
    if not text.strip():
        raise _Skip(_REASON_MARKUP_ONLY)
    return text


def _not_binary(data: bytes) -> bytes:
    """Return the data, or raise ``_Skip("binary file")`` for NUL bytes or many control bytes."""
    if b"\x00" in data:
        raise _Skip("binary file")
    control = len(data) - len(data.translate(None, _CONTROL_BYTES))
    if control > _MAX_CONTROL_BYTE_RATIO * len(data):
        raise _Skip("binary file")
    return data


def _detect(data: bytes) -> tuple[str, str]:
    """Detect the encoding of text that is not UTF-8 (charset-normalizer), and decode it.

    Among equally plausible Western code pages the most common, Windows-1252
    (a superset of Latin-1's printable characters), is preferred.

    Returns:
        The encoding and the text.

    Raises:
        _Skip: No encoding fits, or NUL bytes in what is not UTF-16/UTF-32.

    """
    matches = list(from_bytes(data))
    if not matches:
        raise _Skip("binary file" if b"\x00" in data else _REASON_UNDECODABLE)
    best = matches[0]
    wide = best.encoding.startswith(("utf_16", "utf_32"))
    if not wide:
        _not_binary(data)
        ties = [m for m in matches if (m.chaos, m.coherence) == (best.chaos, best.coherence)]
        if any("cp1252" in m.could_be_from_charset for m in ties):
            return "cp1252", _decode_with_fallback(data, ("cp1252",))
    return best.encoding, str(best)


def _decode_with_fallback(data: bytes, codecs: tuple[str, ...]) -> str:
    """Decode strictly with the first codec that works, else with replacement.

    Args:
        data: Bytes to decode.
        codecs: Codec names, in order of preference.

    Returns:
        The decoded text. When no codec decodes strictly, the lenient decode
        with the fewest bad characters is used, provided bad characters stay
        below :data:`_MAX_BAD_CHAR_RATIO`.

    Raises:
        _Skip: The best lenient decode is mostly garbage.

    """
    for codec in codecs:
        try:
            text = data.decode(codec)
        except UnicodeDecodeError:
            continue
        if _bad_char_ratio(text) > _MAX_BAD_CHAR_RATIO:
            raise _Skip(_REASON_UNDECODABLE)
        return text
    candidates = [data.decode(codec, errors="replace") for codec in codecs]
    text = min(candidates, key=_bad_char_ratio)
    if _bad_char_ratio(text) > _MAX_BAD_CHAR_RATIO:
        raise _Skip(_REASON_UNDECODABLE)
    return text


def _bad_char_ratio(text: str) -> float:
    """Return the fraction of control and replacement characters in ``text``."""
    if not text:
        return 0.0
    return len(_BAD_CHARS_RE.findall(text)) / len(text)


def _pdf_text(data: bytes) -> str:
    """Extract the text layer of a PDF, written as Markdown: its title as a heading, then its pages.

    The pages are read as plain text: a line that looks like Markdown structure
    (a ``#`` comment in a code example, a row of dashes) is kept from being read as
    a heading or a table. The work is bounded before any page is read: the number
    of pages, and the bytes of drawing instructions (see :data:`PDF_DRAWING_RATIO`);
    and while pages are read, by :data:`MAX_READ_SECONDS`.

    Args:
        data: Raw PDF bytes (not empty).

    Returns:
        The title heading (when the PDF has a title) and the non-empty page texts, joined by blank lines.

    Raises:
        _Skip: The PDF is encrypted, corrupt, too costly to read or has no text layer.

    """
    from pypdf import PdfReader
    from pypdf.errors import FileNotDecryptedError

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            reader = PdfReader(io.BytesIO(data))
            if reader.is_encrypted:
                _decrypt_with_empty_password(reader)
            pages = list(reader.pages)
        except _Skip:
            raise
        except FileNotDecryptedError:
            raise _Skip("encrypted PDF (password required)") from None
        except Exception:  # pypdf documents that broken files may raise anything
            raise _Skip("corrupt or unreadable PDF") from None
        if len(pages) > MAX_PDF_PAGES:
            raise _Skip(f"PDF has {len(pages):,} pages, more than {MAX_PDF_PAGES:,}")
        readable = _pages_within_budget(pages, max(PDF_DRAWING_FLOOR, PDF_DRAWING_RATIO * len(data)))
        texts: list[str] = []
        failed = len(pages) - len(readable)
        characters = 0
        started = _clock()
        for number, page in enumerate(readable, start=1):
            if _clock() - started > MAX_READ_SECONDS:
                read = f"{number - 1:,} of {len(pages):,} pages read"
                raise _Skip(f"PDF took more than {MAX_READ_SECONDS:,} s to read ({read})")
            try:
                page_text = page.extract_text() or ""
            except Exception:  # one broken page must not lose the others
                failed += 1
                continue
            page_text = _normalise_newlines(page_text).strip()
            characters += len(page_text)
            if characters > MAX_TEXT_CHARS:
                raise _Skip(f"more than {MAX_TEXT_CHARS:,} characters of text")
            if page_text:
                texts.append(page_text)
        title = _pdf_title(reader, texts)
    if not pages:
        raise _Skip("PDF has no pages")
    if not texts:
        if failed == len(pages):
            raise _Skip("corrupt or unreadable PDF")
        raise _Skip(_REASON_NO_TEXT_LAYER)
    outline = MarkdownOutline()
    if title:
        outline.heading(1, title)
        first, _, rest = texts[0].partition("\n")
        if first.strip() == title:  # the title line of the first page is that heading
            texts[0] = rest
    for page_text in texts:
        outline.lines(page_text)
    return outline.text()


def _pages_within_budget(pages: list[PageObject], budget: int) -> list[PageObject]:
    """The pages whose drawing instructions can be decoded, once the whole document is known to fit ``budget``.

    Args:
        pages: The document's pages.
        budget: Bytes of decoded drawing instructions the document may hold in all.

    Returns:
        The pages to read (a page whose streams cannot be decoded is left out, as a broken page).

    Raises:
        _Skip: The pages draw more than ``budget`` bytes.
    """
    readable: list[PageObject] = []
    decoded: dict[int, int] = {}  # bytes of each stream object, decoded once however many pages draw it
    total = 0
    for page in pages:
        try:
            total += _drawing_bytes(page, decoded)
        except Exception:  # a stream pypdf cannot decode (or refuses to: its own limits): the page is broken
            continue
        if total > budget:
            raise _Skip(
                f"PDF pages draw more than {_format_size(budget)} of instructions (pages sharing one stream, "
                "or a compression bomb)"
            )
        readable.append(page)
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


_FILE_NAME_TITLE = re.compile(r"\.(?:docx?|pdf|tex|dvi|ps|odt|rtf|txt|md|html?|indd|pptx?|xlsx?)\s*$", re.IGNORECASE)


def _pdf_title(reader: PdfReader, texts: list[str]) -> str | None:
    """A PDF's title: its metadata's, else its first bookmark, else a title-like first line.

    Metadata that only names a file or a program ("report.docx", "Microsoft Word - ...", "untitled") is no title.

    Args:
        reader: The open PDF.
        texts: The page texts.

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
    try:
        first = next((entry for entry in reader.outline if not isinstance(entry, list)), None)
        bookmark = str(first.title).strip() if first is not None and first.title else ""
    except Exception:  # a damaged outline is no title
        bookmark = ""
    if bookmark:
        return " ".join(bookmark.split())
    first_line = texts[0].split("\n", 1)[0].strip() if texts else ""
    # A "# comment" or "$ command" of a code example on top of the first page is code, no title.
    looks_like_code = is_markdown_structure(first_line) or first_line.startswith(("$ ", "> ", "//"))
    return first_line if is_title_line(first_line) and not looks_like_code else None


def _decrypt_with_empty_password(reader: PdfReader) -> None:
    """Open an encrypted PDF that has an empty user password.

    Args:
        reader: A reader whose document is encrypted.

    Raises:
        _Skip: A password is needed, or decryption is not possible here.

    """
    from pypdf.errors import DependencyError, PyPdfError

    try:
        result = reader.decrypt("")
    except (DependencyError, NotImplementedError):
        raise _Skip("encrypted PDF (unsupported encryption)") from None
    except PyPdfError:
        raise _Skip("encrypted PDF (password required)") from None
    if not result:
        raise _Skip("encrypted PDF (password required)")


# --------------------------------------------------------------------------- #
# helpers
# --------------------------------------------------------------------------- #


def _normalise_newlines(text: str) -> str:
    """Convert CRLF and lone CR line endings to LF."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _resolve(path: Path) -> Path:
    """Resolve symlinks and make ``path`` absolute, falling back gracefully."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # RuntimeError: symlink loop on Python < 3.13
        return Path(os.path.abspath(path))


def _display_path(path: Path) -> Path:
    """Return the absolute path to report for a skipped file (links kept)."""
    return Path(os.path.abspath(path))


def _undecodable_name(name: str) -> bool:
    """Tell whether a file name held bytes the file system's encoding could not decode (kept as surrogates)."""
    return any("\udc80" <= char <= "\udcff" for char in name)


def nothing_to_ingest(paths: Iterable[str | Path], skipped: Iterable[SkippedFile]) -> str:
    """Say in one line why paths gave no file to read, for :func:`discover` results without files.

    Args:
        paths: The paths named.
        skipped: What :func:`discover` skipped in them.

    Returns:
        E.g. ``docs/missing: not found`` or ``nothing to ingest in docs: no .md, .markdown, .txt, .pdf, .rst,
        .html or .htm files (skipped: docs/a.adoc: unsupported type .adoc)``.
    """
    named = [str(p) for p in paths]
    skipped = list(skipped)
    if [s.path for s in skipped] == [_display_path(Path(n).expanduser()) for n in named]:
        # Each path named is missing, unreadable or unsupported: that is the whole story.
        return "; ".join(f"{n}: {s.reason}" for n, s in zip(named, skipped, strict=True))
    reasons = [f"{s.path}: {s.reason}" for s in skipped]
    kinds = f"{', '.join(SUPPORTED_SUFFIXES[:-1])} or {SUPPORTED_SUFFIXES[-1]}"
    shown = "; ".join(reasons[:3]) + (f"; and {len(reasons) - 3} more" if len(reasons) > 3 else "")
    return f"nothing to ingest in {', '.join(named) or 'no path'}: no {kinds} files" + (
        f" (skipped {shown})" if shown else ""
    )


def _is_supported_name(name: str) -> bool:
    """Tell whether a file name has a supported suffix."""
    return Path(name).suffix.lower() in SUPPORTED_SUFFIXES


def _unsupported_reason(suffix: str) -> str:
    """Return the skip reason for an unsupported suffix."""
    return f"unsupported type {suffix}" if suffix else "unsupported type (no extension)"


def _os_error_reason(exc: OSError) -> str:
    """Translate an ``OSError`` into a one-line reason."""
    if isinstance(exc, FileNotFoundError):
        return "not found"
    if isinstance(exc, PermissionError):
        return "permission denied"
    if isinstance(exc, IsADirectoryError):
        return "is a directory"
    if exc.errno == errno.ELOOP:
        return "symlink loop"
    if exc.errno == errno.ENAMETOOLONG:
        return "path too long"
    detail = exc.strerror or type(exc).__name__
    return f"cannot read ({detail})"


def _format_size(size: int) -> str:
    """Format a byte count for humans, e.g. ``50 MB``."""
    for unit, factor in (("MB", 1024 * 1024), ("KB", 1024)):
        if size >= factor and size % factor == 0:
            return f"{size // factor} {unit}"
    return f"{size} bytes"
