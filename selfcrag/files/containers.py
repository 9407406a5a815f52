"""Open the containers documents come in (ZIP, XML, gzip) without letting a hostile file run away.

Office files (.docx, .pptx, .xlsx, .odt), EPUB books and compressed text are
archives of XML parts, and each part can be made to unpack or expand far past
its size: a zip bomb (a few kilobytes of deflate that unpack to gigabytes), a
"billion laughs" XML part (entities defined in terms of each other, expanding
exponentially), an external entity that reads a local file or a URL. Every
reader of those formats opens its file through this module, so the bounds are
set once:

* :func:`open_zip` opens a ZIP archive from bytes after checking what its
  directory declares (members, total and per-member unpacked size, compression
  ratio), refusing encrypted members, and refusing any XML member that declares
  entities. Python's :mod:`zipfile` never returns more bytes than a member
  declares (a member whose data runs past it fails its CRC check), so libraries
  handed the checked archive (python-docx, python-pptx, openpyxl) stay within
  the bounds checked here.
* :func:`read_member` reads one member, bounded.
* :func:`parse_xml` parses an XML part with defusedxml: entity declarations
  and external references raise instead of being expanded or fetched.
* :func:`gunzip` reads a gzip file through, bounded.
* :func:`library_errors` turns whatever a parsing library raises on a broken
  file into a one-line reason.

What a document is read into is bounded as it grows, by one :class:`ReadingBudget` per
document: every reader charges the text it writes and the pieces it parses or writes, and
checks that text a count in the file multiplies (a cell repeated across columns, a shared
string shown in many cells) fits what is left before it builds it. A 10 KB file is refused
while its text is small, never after gigabytes of it are built. :func:`open_zip` and
:func:`parse_xml` charge the elements of the XML parts a library parses whole.

A file that must be skipped raises :class:`UnreadableDocument`, whose
``reason`` is one line a user understands; ``read_document`` reports it as a
skipped file. Nothing here prints, logs, runs or fetches anything.
"""

from __future__ import annotations

import gzip
import io
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING

from defusedxml import DefusedXmlException
from defusedxml import ElementTree as SafeElementTree

if TYPE_CHECKING:
    from xml.etree.ElementTree import Element

__all__ = [
    "MAX_COMPRESSION_RATIO",
    "MAX_MEMBERS",
    "MAX_MEMBER_BYTES",
    "MAX_TEXT_CHARS",
    "MAX_TEXT_PIECES",
    "MAX_UNPACKED_BYTES",
    "RATIO_FLOOR",
    "ReadingBudget",
    "UnreadableDocument",
    "count_tags",
    "format_size",
    "gunzip",
    "library_errors",
    "open_zip",
    "parse_xml",
    "read_member",
]

MAX_UNPACKED_BYTES = 200 * 1024 * 1024
"""An archive may unpack to at most this many bytes, all members together (a gzip file likewise)."""

MAX_MEMBER_BYTES = 100 * 1024 * 1024
"""One member of an archive may unpack to at most this many bytes (an XML part is parsed whole, in memory)."""

MAX_MEMBERS = 10_000
"""An archive may hold at most this many members (a 1,000-chapter EPUB holds about 2,000)."""

MAX_COMPRESSION_RATIO = 100
"""A member larger than :data:`RATIO_FLOOR` may unpack to at most this many times its compressed size.

XML parts of real office files compress 3 to 12 times (a 100,000-row sheet of
repeated values: 10 times); deflate's ceiling is about 1,000 times, which is
what a zip bomb reaches.
"""

MAX_TEXT_CHARS = 50_000_000
"""Documents whose text runs past this many characters are skipped (a small PDF can hold far more text than bytes)."""

MAX_TEXT_PIECES = 1_000_000
"""Documents parsed into, or written as, more than this many pieces are skipped.

Pieces are what a reader holds one object for: each element of an XML part or HTML page parsed
whole (a library builds a node for each, 150 to 400 bytes), each paragraph, row or page written,
each part of an e-mail, each encoded word of its headers. A 1,000-page Word document holds about
500,000 elements; a million of them take python-docx some 400 MB and 40 s.
"""

RATIO_FLOOR = 1024 * 1024
"""Members that unpack to less than this are not held to :data:`MAX_COMPRESSION_RATIO` (small parts compress oddly)."""

_CHUNK = 64 * 1024
# The compound-file (OLE2) signature: legacy .doc/.xls/.ppt, and Office's password-protected OOXML files, which
# are an OLE2 file holding the encrypted package under this stream name.
_OLE2_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_ENCRYPTED_PACKAGE = "EncryptedPackage".encode("utf-16-le")
_BOMB = "compressed content too large (a zip bomb?)"
_ENTITIES = "XML declares entities (a billion laughs or external entity attack?)"


class ReadingBudget:
    """What reading one document may make, charged as it is made: characters of text and pieces.

    A reader charges each paragraph, row or page it writes (a
    :class:`~selfcrag.files.outline.MarkdownOutline` does it for it), and the pieces it parses
    whole before it parses them. A count the file declares (a cell repeated across a thousand
    columns, one shared string shown in three thousand cells, a substitution used a million
    times) is never trusted to be small: before text it multiplies is built, :meth:`expect`
    checks that it fits what is left. So a reader stops, with its reason, while what it has
    built is within the bounds, however small the file and however large its counts.

    Attributes:
        max_chars: Characters of text the document may be read into.
        max_pieces: Pieces it may be parsed into or written as.
        chars: Characters charged so far.
        pieces: Pieces charged so far.
    """

    def __init__(self, max_chars: int = MAX_TEXT_CHARS, max_pieces: int = MAX_TEXT_PIECES) -> None:
        self.max_chars = max_chars
        self.max_pieces = max_pieces
        self.chars = 0
        self.pieces = 0

    def charge(self, chars: int = 0, pieces: int = 0) -> None:
        """Count text written, or pieces parsed or written.

        Args:
            chars: Characters of text.
            pieces: Pieces (see :data:`MAX_TEXT_PIECES`).

        Raises:
            UnreadableDocument: The document is now past either bound.
        """
        self.chars += chars
        self.pieces += pieces
        if self.chars > self.max_chars:
            raise UnreadableDocument(f"more than {self.max_chars:,} characters of text")
        if self.pieces > self.max_pieces:
            raise UnreadableDocument(
                f"more than {self.max_pieces:,} pieces (XML elements, paragraphs, rows, cells or parts)"
            )

    def expect(self, chars: int, *, counting: str | None = None) -> None:
        """Check, before it is built, that text a count in the file multiplies fits what is left.

        Nothing is charged: the text is charged when it is written.

        Args:
            chars: Characters the text will hold, each repeat counted.
            counting: What multiplied it, for the reason (``"its repeated cells"``); None for text that is
                kept to be written later (a PDF's pages, read before they are written).

        Raises:
            UnreadableDocument: It would take the document past :attr:`max_chars`.
        """
        if self.chars + chars > self.max_chars:
            once = f" once {counting} are counted" if counting else ""
            raise UnreadableDocument(f"more than {self.max_chars:,} characters of text{once}")


class UnreadableDocument(Exception):
    """A document that cannot be read and is skipped, with the reason in words a user understands.

    Attributes:
        reason: One short line, e.g. ``"password-protected Word document (save it without a password)"``.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def open_zip(data: bytes, kind: str, *, check_xml: bool = True, budget: ReadingBudget | None = None) -> zipfile.ZipFile:
    """Open a ZIP container from its bytes, once what it would unpack to is known to be within bounds.

    Args:
        data: The whole file.
        kind: What the file should be, for the reasons: ``"Word document"``, ``"EPUB book"``, ...
        check_xml: Parse the prolog of every member that looks like XML and refuse one that declares
            entities (the only way to a billion laughs or an external entity); a ``<!DOCTYPE html>``
            without declarations is allowed.
        budget: Charge it the elements of every XML member, counted in their bytes: for a library
            that parses every part whole (python-docx, python-pptx). None: count none.

    Returns:
        The open archive (over an in-memory copy of ``data``); members read through it never
        unpack past the sizes checked here.

    Raises:
        UnreadableDocument: The file is password-protected, a legacy binary Office file, not a ZIP
            archive or corrupt, has encrypted members, more than :data:`MAX_MEMBERS` members, or
            would unpack past :data:`MAX_UNPACKED_BYTES`, :data:`MAX_MEMBER_BYTES` or
            :data:`MAX_COMPRESSION_RATIO`; an XML member declares entities; or the members hold more
            elements than ``budget`` has pieces left.
    """
    if data.startswith(_OLE2_MAGIC):
        if _ENCRYPTED_PACKAGE in data:
            raise UnreadableDocument(f"password-protected {kind} (save it without a password to read it)")
        raise UnreadableDocument(f"not a {kind} but an older binary Office file (save it in the newer format)")
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError):
        raise UnreadableDocument(f"corrupt or unreadable {kind} (not a valid ZIP archive)") from None
    if len(members) > MAX_MEMBERS:
        raise UnreadableDocument(f"{kind} holds more than {MAX_MEMBERS:,} parts")
    total = 0
    for member in members:
        if member.flag_bits & 0x1:
            raise UnreadableDocument(f"password-protected {kind} (save it without a password to read it)")
        total += member.file_size
        too_dense = member.file_size > RATIO_FLOOR and member.file_size > MAX_COMPRESSION_RATIO * max(
            member.compress_size, 1
        )
        if too_dense or member.file_size > MAX_MEMBER_BYTES or total > MAX_UNPACKED_BYTES:
            raise UnreadableDocument(_BOMB)
    if check_xml:
        for member in members:
            _refuse_entity_declarations(archive, member, kind)
    if budget is not None:
        for member in members:
            budget.charge(pieces=_member_tags(archive, member, kind))
    return archive


def read_member(archive: zipfile.ZipFile, name: str, kind: str) -> bytes:
    """Read one member of an archive opened by :func:`open_zip`.

    Args:
        archive: The archive.
        name: The member's name (``"content.xml"``).
        kind: What the file is, for the reasons.

    Returns:
        The member's bytes (at most :data:`MAX_MEMBER_BYTES`).

    Raises:
        UnreadableDocument: The member is missing, corrupt or larger than its bound.
    """
    try:
        with archive.open(name) as stream:
            data = stream.read(MAX_MEMBER_BYTES + 1)
    except KeyError:
        raise UnreadableDocument(f"corrupt or unreadable {kind} (no {name} in it)") from None
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, zlib.error, NotImplementedError):
        raise UnreadableDocument(f"corrupt or unreadable {kind} ({name} is damaged)") from None
    if len(data) > MAX_MEMBER_BYTES:
        raise UnreadableDocument(_BOMB)
    return data


def parse_xml(data: bytes, kind: str, budget: ReadingBudget | None = None) -> Element:
    """Parse an XML part with defusedxml: entities are refused, never expanded, and nothing is fetched.

    Args:
        data: The part's bytes (any encoding its declaration names).
        kind: What the file is, for the reasons.
        budget: Charge it the part's elements, counted before it is parsed (None: a part charged already).

    Returns:
        The root element (:mod:`xml.etree.ElementTree`).

    Raises:
        UnreadableDocument: The part declares entities or references something external, is not well-formed,
            or holds more elements than ``budget`` has pieces left.
    """
    if budget is not None:
        budget.charge(pieces=count_tags(data))
    try:
        return SafeElementTree.fromstring(data, forbid_dtd=False, forbid_entities=True, forbid_external=True)
    except DefusedXmlException:
        raise UnreadableDocument(_ENTITIES) from None
    except (SafeElementTree.ParseError, ValueError, RecursionError):
        raise UnreadableDocument(f"corrupt or unreadable {kind} (damaged XML)") from None


def gunzip(data: bytes, kind: str = "compressed file", limit: int = MAX_UNPACKED_BYTES) -> bytes:
    """Read a gzip file through (all its members, as ``gzip -d`` does), bounded.

    Args:
        data: The compressed bytes.
        kind: What the file is, for the reasons.
        limit: Bytes it may unpack to at most.

    Returns:
        The uncompressed bytes.

    Raises:
        UnreadableDocument: It is not gzip, is truncated or corrupt, or unpacks past ``limit``.
    """
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as stream:
            # GzipFile.read(n) inflates at most what it returns, so a bomb stops at limit + 1 bytes.
            unpacked = stream.read(limit + 1)
    except (OSError, EOFError, zlib.error, ValueError):  # gzip.BadGzipFile is an OSError
        raise UnreadableDocument(f"corrupt or unreadable {kind} (damaged gzip data)") from None
    if len(unpacked) > limit:
        raise UnreadableDocument(_BOMB)
    return unpacked


def count_tags(markup: bytes | str) -> int:
    """Count the elements of XML or HTML from its text, before a parser builds them: its start and empty tags.

    Every ``<`` but those of end tags (a ``<`` in a comment or a CDATA section counts too: more, never fewer).

    Args:
        markup: The part's or page's text.

    Returns:
        The count.
    """
    if isinstance(markup, str):
        return markup.count("<") - markup.count("</")
    return markup.count(b"<") - markup.count(b"</")


def format_size(size: float) -> str:
    """Say a byte count as people read it: a skipped file's bound, an ingest's progress, ``selfcrag list``'s sizes.

    Args:
        size: The byte count.

    Returns:
        ``812 B``, ``4.2 KB``, ``12.5 MB``, ``1.3 GB``; a whole number of its unit without the decimal (``50 MB``,
        ``64 KB``: the bounds a file is skipped by read as they were set).
    """
    unit = "B"
    for larger in ("KB", "MB", "GB"):
        if size < 1024:
            break
        size, unit = size / 1024, larger
    return f"{size:.0f} {unit}" if unit == "B" or size == int(size) else f"{size:.1f} {unit}"


@contextmanager
def library_errors(kind: str) -> Iterator[None]:
    """Turn whatever a parsing library raises on a broken file into ``UnreadableDocument("corrupt or unreadable …")``.

    python-docx, python-pptx and openpyxl document no exceptions of their own for a broken
    file: a missing part is a KeyError, a bad value a ValueError, damaged XML an lxml error.
    An :class:`UnreadableDocument` raised inside passes through unchanged, as does a
    :class:`MemoryError` (the reading worker says how much memory the file needed).

    Args:
        kind: What the file is, for the reason.

    Raises:
        UnreadableDocument: The library failed on the file.
    """
    try:
        yield
    except (UnreadableDocument, MemoryError):  # memory that ran out is no damage of the file's
        raise
    except DefusedXmlException:
        raise UnreadableDocument(_ENTITIES) from None
    except Exception:  # a library may raise anything on a document it cannot read: that file is skipped
        raise UnreadableDocument(f"corrupt or unreadable {kind}") from None


def _refuse_entity_declarations(archive: zipfile.ZipFile, member: zipfile.ZipInfo, kind: str) -> None:
    """Parse an XML member up to its root element, where any entity declaration must stand (the prolog).

    Reads one chunk or two of each member, so checking every part of an archive costs little.

    Raises:
        UnreadableDocument: The member declares entities or an external reference, or cannot be read.
    """
    if member.is_dir() or member.file_size == 0:
        return
    try:
        with archive.open(member) as stream:
            head = stream.read(64)
            if not _looks_like_xml(head):
                return
            source = io.BufferedReader(_Prepended(head, stream))
            for _event in SafeElementTree.iterparse(source, events=("start",), forbid_entities=True):
                return  # the root element has started: the prolog held no declaration
    except DefusedXmlException:
        raise UnreadableDocument(_ENTITIES) from None
    except SafeElementTree.ParseError:
        return  # not XML after all, or damaged: the reader that parses it says so
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, zlib.error, NotImplementedError):
        raise UnreadableDocument(f"corrupt or unreadable {kind} ({member.filename} is damaged)") from None


def _member_tags(archive: zipfile.ZipFile, member: zipfile.ZipInfo, kind: str) -> int:
    """Count the elements of an archive's member that looks like XML (see :func:`count_tags`), reading it in chunks.

    Raises:
        UnreadableDocument: The member cannot be read.
    """
    if member.is_dir() or member.file_size == 0:
        return 0
    tags = 0
    try:
        with archive.open(member) as stream:
            chunk = stream.read(_CHUNK)
            if not _looks_like_xml(chunk[:64]):
                return 0
            while chunk:
                tags += count_tags(chunk)
                following = stream.read(_CHUNK)
                if chunk.endswith(b"<") and following.startswith(b"/"):
                    tags -= 1  # an end tag split between two chunks
                chunk = following
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, zlib.error, NotImplementedError):
        raise UnreadableDocument(f"corrupt or unreadable {kind} ({member.filename} is damaged)") from None
    return tags


def _looks_like_xml(head: bytes) -> bool:
    """Tell whether a member's first bytes start an XML document (UTF-8 or UTF-16, with or without a BOM)."""
    if head.startswith((b"\xff\xfe", b"\xfe\xff", b"<\x00", b"\x00<")):
        return True
    return head.removeprefix(b"\xef\xbb\xbf").lstrip().startswith(b"<")


class _Prepended(io.RawIOBase):
    """A stream that yields some bytes already read, then the rest of another stream."""

    def __init__(self, head: bytes, rest: IO[bytes]) -> None:
        self._head = head
        self._rest = rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        if self._head:
            size = min(len(buffer), len(self._head))
            buffer[:size] = self._head[:size]
            self._head = self._head[size:]
            return size
        chunk = self._rest.read(min(len(buffer), _CHUNK))
        buffer[: len(chunk)] = chunk
        return len(chunk)
