"""Find and read the user's documents (Markdown, plain text, PDF, reStructuredText and HTML).

Two entry points:

* :func:`discover` expands the files and folders a user named into the list of
  supported files to ingest, plus a list of paths that were skipped and why.
  Links inside a folder that lead out of it are skipped unless asked for: a
  downloaded folder may hold ``notes.md -> ~/private.md``.
* :func:`read_document` reads one file into text. Problems the user can cause
  (missing file, binary file, scanned PDF, bad encoding, ...) never raise; they
  come back as a :class:`SkippedFile` whose ``reason`` is one short line.

The module is pure and quiet: it never prints and never configures logging.
PDFs are read by :mod:`selfcrag.files.pdf`.
"""

from __future__ import annotations

import errno
import importlib
import mimetypes
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from charset_normalizer import from_bytes

from selfcrag.files.containers import (
    MAX_COMPRESSION_RATIO,
    MAX_TEXT_CHARS,
    MAX_TEXT_PIECES,
    MAX_UNPACKED_BYTES,
    RATIO_FLOOR,
    ReadingBudget,
    UnreadableDocument,
    format_size,
    gunzip,
)
from selfcrag.files.html_page import TooDeeplyNested, read_html_page
from selfcrag.files.manpage import is_man_page, is_roff_page, man_page_to_markdown, roff_page_to_markdown
from selfcrag.files.markdown import markdown_text
from selfcrag.files.outline import plain_text
from selfcrag.files.places import Place
from selfcrag.files.restructuredtext import rst_to_markdown

__all__ = [
    "LINK_OUTSIDE",
    "MAX_FILE_BYTES",
    "SUPPORTED_SUFFIXES",
    "LoadedFile",
    "Place",
    "SkippedFile",
    "discover",
    "nothing_to_ingest",
    "read_document",
]

SUPPORTED_SUFFIXES = (
    *(".md", ".markdown", ".txt", ".pdf", ".rst", ".html", ".htm"),
    *(".docx", ".docm", ".odt", ".pptx", ".pptm", ".xlsx", ".xlsm", ".csv", ".tsv"),  # office documents and sheets
    *(".epub", ".ipynb", ".eml", ".rtf", ".gz"),  # books, notebooks, e-mail, RTF, compressed text (/usr/share/doc)
    *(".png", ".jpg", ".jpeg", ".tif", ".tiff", ".webp", ".bmp"),  # pictures of text (scans, photos), read by OCR
)
"""File suffixes (compared case-insensitively) that can be ingested; a file without one is read when it holds text."""

MAX_FILE_BYTES = 50 * 1024 * 1024
"""Files larger than this many bytes are skipped."""

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
_REASON_UNDECODABLE_NAME = "file name is not valid UTF-8 (rename it)"
_REASON_MARKUP_ONLY = "no text in it, only markup"
# Office's binary formats before 2007: no maintained library reads their text, and every Office since saves the new one.
_LEGACY_OFFICE = {
    ".doc": "Word 97-2003 document: save it as .docx to index it",
    ".ppt": "PowerPoint 97-2003 presentation: save it as .pptx to index it",
    ".xls": "Excel 97-2003 workbook: save it as .xlsx to index it",
}
_REASON_LINK_ON_THE_WAY = "its path now goes through a link (not followed)"
# Formats known and not read, which Python's table of types lacks: markup read by no reader here (AsciiDoc), and
# binary files (Photoshop, OpenDocument slides, sheets and drawings, Apple's office files, e-books, databases).
_KNOWN_UNREAD = frozenset(
    {".adoc", ".asciidoc", ".psd", ".odp", ".ods", ".odg", ".key", ".pages", ".numbers", ".mobi", ".azw3"}
    | {".djvu", ".chm", ".xps", ".sqlite", ".db"}
)

LINK_OUTSIDE = "a link to outside the folder"
"""Why :func:`discover` skips a link, found inside a folder, whose target lies outside that folder."""

# How a folder on the way to a file is opened when links are not followed: without reading it (O_PATH, where there is
# one), and refusing a link in its place (O_NOFOLLOW).
_FOLDER_FLAGS = getattr(os, "O_PATH", os.O_RDONLY) | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
_FILE_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)  # NONBLOCK: a FIFO swapped in
_OPENS_PART_BY_PART = all(hasattr(os, flag) for flag in ("O_NOFOLLOW", "O_DIRECTORY")) and os.open in os.supports_dir_fd
# Formats read by a reader module of their own, "module:function": the function takes the file's bytes and the
# document's budget (ReadingBudget), and returns its Markdown, or its Markdown and places. Imported when such a file
# is read (python-docx, python-pptx, openpyxl take 0.1 to 0.4 s to import). Macro-enabled files (.docm, .pptm,
# .xlsm) are read for their text; no macro is read or run.
_BINARY_READERS = {
    ".pdf": "selfcrag.files.pdf:read_pdf",
    ".docx": "selfcrag.files.docx:read_docx",
    ".docm": "selfcrag.files.docx:read_docx",
    ".odt": "selfcrag.files.odt:read_odt",
    ".pptx": "selfcrag.files.slides:read_pptx",
    ".pptm": "selfcrag.files.slides:read_pptx",
    ".xlsx": "selfcrag.files.sheets:read_xlsx",
    ".xlsm": "selfcrag.files.sheets:read_xlsx",
    ".epub": "selfcrag.files.epub:read_epub",
    ".ipynb": "selfcrag.files.notebook:read_notebook",
    ".eml": "selfcrag.files.email_message:read_email",
    ".rtf": "selfcrag.files.rtf:read_rtf",
    **dict.fromkeys((".png", ".jpg", ".jpeg", ".tif", ".tiff", ".webp", ".bmp"), "selfcrag.files.images:read_image"),
}
# Text formats read by a reader module of their own once decoded: the function takes the text, the file's stem and
# the budget.
_TEXT_READERS = {".csv": "selfcrag.files.sheets:read_csv", ".tsv": "selfcrag.files.sheets:read_tsv"}
# Structured formats: their parser's text, written as Markdown so headings give sections and titles (each function
# takes the text and the budget).
_MARKUP_TO_MARKDOWN: dict[str, Callable[[str, ReadingBudget], str | tuple[str, tuple[Place, ...]]]] = {
    ".rst": rst_to_markdown,
    ".html": read_html_page,  # with the anchors its text stands at
    ".htm": read_html_page,
}
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
        places: Where stretches of the text stand in the original (pages, slides, rows), in offset order.
        same_lines: The text's lines are the file's own (plain text, and Markdown whose HTML left its lines
            as they were), so a citation can name a line, counted in the text.

    """

    path: Path
    text: str
    encoding: str = "utf-8"
    places: tuple[Place, ...] = ()
    same_lines: bool = False


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


def discover(
    paths: Iterable[str | Path] | str | Path, *, follow_links: bool = False
) -> tuple[list[Path], list[SkippedFile]]:
    """Expand files and folders into the list of supported files to read.

    Folders are walked recursively; within a folder, entries are visited in
    sorted name order, so the result is sorted by path below each argument.
    Arguments keep the order they were given in and duplicates (the same file
    named twice, or reached through a symlink) are listed once. Symlinks
    inside a folder are followed while their targets stay inside it (judged
    on resolved paths); one that leads out of it is skipped as
    :data:`LINK_OUTSIDE`, unless ``follow_links``. A path named as an
    argument is followed wherever it leads: that link is the user's choice.
    A directory is never entered twice, so symlink loops
    terminate. Hidden entries (names starting with ``.``, e.g. ``.git`` or
    ``.selfcrag``) are ignored inside folders, but a hidden path named
    explicitly is honoured. Files with unsupported suffixes are reported as
    skipped, inside folders as when named, so a ``.rst`` is never dropped
    without a word.

    Args:
        paths: Files and folders named by the user. ``~`` is expanded. A single
            ``str`` or ``Path`` is accepted as a one-element list.
        follow_links: Follow every link, also those that lead out of the
            folder they are in.

    Returns:
        A pair ``(files, skipped)``: ``files`` are resolved absolute paths of
        supported regular files in discovery order; ``skipped`` lists paths that
        were named (or found) but cannot be ingested, e.g. missing paths,
        unsupported explicit files, unreadable folders, symlink loops and links
        to outside the folder.

    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    walker = _Walker(follow_links)
    for raw in paths:
        if not str(raw).strip():  # Path("") would silently mean the current folder
            walker.skip(Path(str(raw)), "empty path")
            continue
        walker.add_argument(Path(raw).expanduser())
    return walker.files, walker.skipped


class _Walker:
    """Accumulates the results of :func:`discover` across all arguments."""

    def __init__(self, follow_links: bool = False) -> None:
        self.follow_links = follow_links
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
            self.walk(path, {key}, _resolve(path))
        elif stat.S_ISREG(st.st_mode):
            resolved = _resolve(path)
            if _is_supported_name(resolved.name):
                self.add_file(resolved)
            else:
                self.skip(path, _unsupported_reason(resolved.suffix))
        else:
            self.skip(path, "not a regular file")

    def walk(self, top: Path, ancestors: set[tuple[int, int]], root: Path) -> None:
        """Walk a folder depth first, in sorted name order, with a stack of its own.

        Not recursive: a folder nested 1,100 deep (deeper than Python's recursion limit) is walked like any.
        Unless links are followed, nothing is taken from outside ``root`` (the folder's resolved path).
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
            if not self.follow_links and _is_link(entry) and not _resolve(path).is_relative_to(root):
                self.skip(path, LINK_OUTSIDE)
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
                if not self.follow_links and not resolved.is_relative_to(root):
                    # A folder on the way became a link after it was listed: its files are outside too.
                    self.skip(path, LINK_OUTSIDE)
                elif _is_supported_name(resolved.name):
                    self.add_file(resolved)
                else:
                    self.skip(path, _unsupported_reason(resolved.suffix))
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


def read_document(path: Path, *, follow_links: bool = True) -> LoadedFile | SkippedFile:
    """Read one Markdown, text, PDF, reStructuredText or HTML file.

    Text files are decoded as UTF-8 (with or without BOM), UTF-16 when a
    UTF-16 BOM is present, and otherwise in the encoding charset-normalizer
    detects. Line endings are normalised to LF and a leading BOM is dropped.
    PDFs are read with pypdf (see :func:`~selfcrag.files.pdf.read_pdf`): their
    pages, under the PDF's title and its outline's headings. reStructuredText (docutils)
    and HTML (selectolax) are decoded as text, parsed, and written as
    Markdown, so their headings give sections and titles; nothing in them is
    run, included or fetched. Markdown loses its HTML tags (their words stay),
    and a manual page saved as text is written as Markdown by its sections.
    Word, OpenDocument and PowerPoint files, workbooks and CSV/TSV files are
    read by their reader modules (:data:`_BINARY_READERS`, :data:`_TEXT_READERS`)
    as Markdown, slides and rows marked as :attr:`LoadedFile.places`; their
    archives are opened within the bounds of :mod:`selfcrag.files.containers`.
    So are EPUB books, notebooks, e-mail (``.eml``) and RTF, read as Markdown by
    theirs. A ``.gz`` file is unpacked, bounded, and read as the name inside says
    (``NEWS.md.gz`` as Markdown, ``changelog.Debian.gz`` as text). Plain text (a
    ``.txt``, or a file without an extension, or with one of no known type, that
    holds text: ``README.Debian``, ``tmux.conf``) is read as it is: a ``# ...``
    line in it is a line of text, not a heading, unless the file opens with one
    (Markdown saved as text). A manual page's roff source (``ls.1``,
    ``chage.zh_CN.1.gz``) is written as Markdown by its sections. A legacy ``.doc``, ``.ppt`` or ``.xls`` is
    skipped with what to save it as.
    The work per document is bounded before a parser runs: HTML nesting
    depth, PDF pages and drawing instructions, the elements of what is parsed
    whole; what it is read into is bounded as it grows, by one
    :class:`~selfcrag.files.containers.ReadingBudget` of :data:`MAX_TEXT_CHARS`
    characters and :data:`MAX_TEXT_PIECES` pieces that every reader charges (a
    count in the file that multiplies text is checked against it before the
    text is built); and a PDF's pages are read for at most
    :data:`~selfcrag.files.pdf.MAX_READ_SECONDS`. This reads in the calling
    process: :func:`selfcrag.files.worker.read_document` reads in a worker
    process whose memory and time are bounded too.

    Args:
        path: The file to read (``str`` is accepted too).
        follow_links: Follow links in the path. Without, the path is read as
            it is, the resolved path :func:`discover` found: a link anywhere
            in it (one put there since) is refused, not followed.

    Returns:
        A :class:`LoadedFile` with the resolved path and the text, or a
        :class:`SkippedFile` when the file cannot be used: not found,
        permission denied, a directory, an unsupported suffix, larger than
        :data:`MAX_FILE_BYTES`, empty or whitespace-only, binary, undecodable,
        a PDF without a text layer, an encrypted or corrupt PDF, a PDF past
        its bounds (pages, drawing instructions, characters, seconds), a path
        through a link when links are not followed, HTML nested past
        :data:`~selfcrag.files.html_depth.MAX_NESTING`, or markup without text
        (or that its parser cannot read), or an office file that is
        password-protected, corrupt, a zip bomb or declares XML entities, or a
        document past its budget. Problems caused by the user's files never
        raise (memory that runs out does: :class:`MemoryError`).

    """
    path = Path(path).expanduser()
    budget = ReadingBudget(MAX_TEXT_CHARS, MAX_TEXT_PIECES)
    try:
        resolved, data = _read_bytes(path, follow_links)
        suffix = resolved.suffix.lower()
        if suffix == ".gz":  # compressed text, as /usr/share/doc ships it: read as the name inside says
            data, suffix = _gunzipped(data, resolved.stem)
        same_lines = False
        places: tuple[Place, ...] = ()
        if suffix in _BINARY_READERS:
            text, places, read_as = _read_with(_BINARY_READERS[suffix], data, budget=budget)
            encoding = read_as or suffix[1:]
        else:
            text, encoding = _decode_text(data, resolved.suffix if suffix not in (*SUPPORTED_SUFFIXES, "") else "")
            data = b""  # the file's bytes are its text now: a 50 MB file is not held twice while it is read
            decoded_lines = text.count("\n")
            if suffix in _TEXT_READERS:
                text, places, _ = _read_with(_TEXT_READERS[suffix], text, resolved.stem, budget=budget)
            elif suffix in _MARKUP_TO_MARKDOWN:
                parse = _MARKUP_TO_MARKDOWN[suffix]
                text, places = _markup_text(text, suffix, lambda source: parse(source, budget))
            elif suffix in (".md", ".markdown"):
                text, _ = _markup_text(text, suffix, markdown_text)
                # An HTML heading or line break adds lines: then no line number would be the file's.
                same_lines = text.count("\n") == decoded_lines
            elif is_roff_page(resolved.stem if resolved.suffix.lower() == ".gz" else resolved.name, text):
                text = roff_page_to_markdown(text, budget)  # a manual page's source: ls.1, chage.zh_CN.1.gz
            elif is_man_page(text):
                text = man_page_to_markdown(text, budget)
            else:  # plain text (.txt, or a name without a known suffix): a "# ..." line in it is no heading
                text, same_lines = plain_text(text), True
    except (_Skip, UnreadableDocument) as skip:
        return SkippedFile(_display_path(path), skip.reason)
    return LoadedFile(resolved, text, encoding, places, same_lines=same_lines)


def _gunzipped(data: bytes, name: str) -> tuple[bytes, str]:
    """A gzip file's contents, and the suffix they are read by: the inner name's (``NEWS.md.gz``: ``.md``).

    What is unpacked is bounded before it is inflated: at most
    :data:`~selfcrag.files.containers.MAX_COMPRESSION_RATIO` times the file's size (a gzip bomb
    stops there), then at most :data:`MAX_FILE_BYTES`, as a text file is. An inner name whose
    suffix is no type of file (``changelog.Debian``, ``changelog.1``, ``README``) is read as text
    when it holds text; one of a type not read here (``manual.ps``) is skipped unread.

    Args:
        data: The compressed file.
        name: The name inside: the file's name without ``.gz``.

    Returns:
        The uncompressed bytes, and the inner name's suffix ("" for one read as text).

    Raises:
        _Skip: A gzip bomb, a damaged file, more than :data:`MAX_FILE_BYTES` unpacked, or a type not read.
    """
    suffix = Path(name).suffix.lower()
    if suffix == ".gz" or (suffix not in SUPPORTED_SUFFIXES and _names_a_file_type(suffix)):
        raise _Skip(f"{_unsupported_reason(Path(name).suffix)} (compressed)")
    limit = min(MAX_UNPACKED_BYTES, max(RATIO_FLOOR, MAX_COMPRESSION_RATIO * len(data)))
    try:
        unpacked = gunzip(data, "gzip file", limit)
    except UnreadableDocument as unreadable:
        raise _Skip(unreadable.reason) from None
    if len(unpacked) > MAX_FILE_BYTES:
        raise _Skip(f"larger than {format_size(MAX_FILE_BYTES)} uncompressed")
    if not unpacked:
        raise _Skip("empty file")
    return unpacked, suffix if suffix in SUPPORTED_SUFFIXES else ""


def _names_a_file_type(suffix: str) -> bool:
    """Tell whether a suffix names a type of file that is no text (``.ps``, ``.png``); ``.Debian`` or ``.1`` do not.

    Python's own table of types is asked, not the system's, so that every machine reads the same files.
    """
    kind, _ = mimetypes.MimeTypes().guess_type(f"file{suffix}", strict=False)
    return kind is not None and not kind.startswith("text/")


def _read_bytes(path: Path, follow_links: bool = True) -> tuple[Path, bytes]:
    """Check and read a file's bytes.

    Args:
        path: The file to read.
        follow_links: Follow links in the path (see :func:`read_document`).

    Returns:
        The resolved path and the file's contents.

    Raises:
        _Skip: The file is missing, unreadable, not a regular file, of an
            unsupported type, too large or empty, or (links not followed)
            its path goes through a link.

    """
    resolved = _resolve(path) if follow_links else Path(os.path.abspath(path))
    limit = MAX_FILE_BYTES

    def check(found: os.stat_result) -> None:
        _check_regular(found)
        if not _is_supported_name(resolved.name):
            raise _Skip(_unsupported_reason(resolved.suffix))
        if found.st_size > limit:
            raise _Skip(f"larger than {format_size(limit)}")

    try:
        with _open_regular_file(path, follow_links, check) as handle:
            # As much as the file holds (a read of the bound would set 50 MB aside for every note), then what it
            # grew by since, to the bound.
            size = min(os.fstat(handle.fileno()).st_size, limit)
            data = handle.read(size + 1)
            if len(data) > size:
                data += handle.read(limit + 1 - len(data))
    except OSError as exc:
        raise _Skip(_os_error_reason(exc)) from None
    if len(data) > limit:
        raise _Skip(f"larger than {format_size(limit)}")
    if not data:
        raise _Skip("empty file")
    return resolved, data


def _open_regular_file(path: Path, follow_links: bool, check: Callable[[os.stat_result], None]) -> BinaryIO:
    """Open a regular file to read, following links in its path or none.

    Args:
        path: The file.
        follow_links: Follow links. Without, the file is opened one part of
            its absolute path at a time from the root, each part refusing a
            link: the file read is the one the path names when read, not one
            a link swapped in after a check leads to (no window between a
            check and the open).
        check: Raises ``_Skip`` for a file not to open, told its status (a regular file's, or not).

    Returns:
        The open file.

    Raises:
        _Skip: Missing, unreadable, a directory, not a regular file, refused by ``check``; or, links not followed,
            a link in the path.
    """
    if follow_links or not _OPENS_PART_BY_PART:
        if not follow_links and _resolve(path) != Path(os.path.abspath(path)):
            raise _Skip(_REASON_LINK_ON_THE_WAY)  # no O_NOFOLLOW here: this check is the closest to the open
        try:
            check(os.stat(path))  # before opening: opening a device or FIFO may block or act
            return open(path, "rb")
        except OSError as exc:
            raise _Skip(_os_error_reason(exc)) from None
    parts = Path(os.path.abspath(path)).parts
    if len(parts) < 2:
        raise _Skip("is a directory")  # the root folder
    top, *folders, name = parts
    folder = os.open(top, _FOLDER_FLAGS)
    try:
        for part in folders:
            inner = _open_part(part, _FOLDER_FLAGS, folder)
            os.close(folder)
            folder = inner
        try:
            found = os.stat(name, dir_fd=folder, follow_symlinks=False)
        except OSError as exc:
            raise _Skip(_os_error_reason(exc)) from None
        if stat.S_ISLNK(found.st_mode):
            raise _Skip(_REASON_LINK_ON_THE_WAY)
        check(found)  # before opening, as above
        handle = os.fdopen(_open_part(name, _FILE_FLAGS, folder), "rb")
    finally:
        os.close(folder)
    try:
        check(os.fstat(handle.fileno()))  # the file opened, should it have changed since it was checked
    except BaseException:
        handle.close()
        raise
    return handle


def _open_part(name: str, flags: int, folder: int) -> int:
    """Open one part of a path inside an open folder, refusing a link (as ``_Skip``)."""
    try:
        return os.open(name, flags, dir_fd=folder)
    except OSError as exc:
        # A link refused by O_NOFOLLOW is ELOOP, or ENOTDIR where a folder was asked for.
        if exc.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link_in(name, folder):
            raise _Skip(_REASON_LINK_ON_THE_WAY) from None
        raise _Skip(_os_error_reason(exc)) from None


def _is_link_in(name: str, folder: int) -> bool:
    """Tell whether ``name`` in an open folder is a link."""
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _check_regular(found: os.stat_result) -> None:
    """Raise ``_Skip`` unless ``found`` is a regular file's."""
    if stat.S_ISDIR(found.st_mode):
        raise _Skip("is a directory")
    if not stat.S_ISREG(found.st_mode):
        raise _Skip("not a regular file")


def _decode_text(data: bytes, unknown_suffix: str = "") -> tuple[str, str]:
    """Decode the bytes of a text file, detecting its encoding.

    A byte-order mark decides; else strict UTF-8; else charset-normalizer
    (maintained, statistical) names the encoding: GB18030 Chinese, Latin-1 or
    Windows-1252 Western text, UTF-16 without a BOM. A file with NUL bytes is
    binary unless it is detected as UTF-16 or UTF-32.

    Args:
        data: Raw file contents (not empty).
        unknown_suffix: The suffix of a file read by its content (``.Debian``, as its name writes it): when it
            holds no text, it is skipped as of an unsupported type, not as a binary file.

    Returns:
        The decoded text (without BOM, with LF line endings) and the encoding used.

    Raises:
        _Skip: The data is binary, undecodable or whitespace-only.

    """
    if unknown_suffix:
        try:
            return _decode_text(data)
        except _Skip as skip:
            if skip.reason == "empty file":
                raise
            raise _Skip(_unsupported_reason(unknown_suffix)) from None
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


def _read_with(
    reader: str, source: bytes | str, *names: str, budget: ReadingBudget
) -> tuple[str, tuple[Place, ...], str | None]:
    """Read a file with a reader module's function, named ``"module:function"``.

    Args:
        reader: The function, e.g. ``"selfcrag.files.docx:read_docx"``.
        source: The file's bytes, or its decoded text for a text format.
        names: What else the function takes (a text format's reader, the file's name without its suffix).
        budget: The document's budget, which the reader charges.

    Returns:
        The Markdown text, the places in it (none for a reader that marks none) and what the reader says the
        file was read as, when it says (``pdf+ocr``, ``ocr``: read by OCR; else None).

    Raises:
        UnreadableDocument: The reader refused the file, or it is past its budget.
        _Skip: Its text is empty.
    """
    module, _, function = reader.partition(":")
    read = getattr(importlib.import_module(module), function)(source, *names, budget=budget)
    text, places, read_as = (read, (), None) if isinstance(read, str) else (*read, None)[:3]
    if not text.strip():
        raise _Skip("no text in it")
    return text, places, read_as


def _markup_text(
    source: str, suffix: str, reader: Callable[[str], str | tuple[str, tuple[Place, ...]]]
) -> tuple[str, tuple[Place, ...]]:
    """Parse reStructuredText or HTML (or read the HTML out of Markdown) and return its text as Markdown.

    Args:
        source: The decoded file.
        suffix: ``.rst``, ``.html``, ``.htm``, ``.md`` or ``.markdown``.
        reader: What turns the source into Markdown: the parser of the suffix's format (with the document's
            budget), or :func:`~selfcrag.files.markdown.markdown_text`.

    Returns:
        The text, as :func:`~selfcrag.files.restructuredtext.rst_to_markdown`,
        :func:`~selfcrag.files.html_page.read_html_page` or
        :func:`~selfcrag.files.markdown.markdown_text` writes it, and the places in it (an HTML page's anchors).

    Raises:
        UnreadableDocument: It is past its budget.
        _Skip: The parser cannot read it, or it holds no text (only markup, scripts or directives).
    """
    try:
        read = reader(source)
    except TooDeeplyNested as refused:
        raise _Skip(str(refused)) from None
    except (UnreadableDocument, MemoryError):
        raise
    except Exception:  # a parser may raise anything on a document it cannot read: that file is skipped
        raise _Skip(f"unreadable {_MARKUP_NAMES[suffix]}") from None
    text, places = read if isinstance(read, tuple) else (read, ())
    if not text.strip():
        raise _Skip(_REASON_MARKUP_ONLY)
    return text, places


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


def _is_link(entry: os.DirEntry[str]) -> bool:
    """Tell whether a folder's entry is a link (when that cannot be told, it is taken as one: it is checked)."""
    try:
        return entry.is_symlink()
    except OSError:
        return True


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
    """Tell whether a file name has a supported suffix, none, or one read by content (see :func:`_read_by_content`).

    ``README`` and ``NEWS``, ``README.Debian`` and ``example_tmux.conf`` are read when they hold text.
    """
    suffix = Path(name).suffix.lower()
    return suffix in (*SUPPORTED_SUFFIXES, "") or _read_by_content(suffix)


def _read_by_content(suffix: str) -> bool:
    """Tell whether a suffix no reader knows names no type of file either, so that the file's content decides.

    ``.Debian``, ``.source``, ``.conf``, ``.catalog`` or a manual's section (``.1``, ``.3ssl``) say nothing of what
    the file holds: it is read when it holds text (as a file without a suffix is), and skipped as of an unsupported
    type when not. A suffix of a type that is no text (``.png``, ``.ps``, ``.zip``, by Python's table of types, and
    the few of :data:`_KNOWN_UNREAD` that table lacks) is skipped by its name.

    Args:
        suffix: The suffix, in lower case.
    """
    return (
        suffix not in SUPPORTED_SUFFIXES
        and suffix not in _LEGACY_OFFICE
        and suffix not in _KNOWN_UNREAD
        and not _names_a_file_type(suffix)
    )


def _unsupported_reason(suffix: str) -> str:
    """Return the skip reason for an unsupported suffix (as the name writes it); for legacy Office, what to do."""
    if suffix.lower() in _LEGACY_OFFICE:
        return _LEGACY_OFFICE[suffix.lower()]
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
