"""An RTF document as text, through striprtf, each of its paragraphs a paragraph.

striprtf is a small pure-Python reader of RTF's control words, kept up to date
(it handles Unicode escapes, code pages and the font table's charsets). Two of its
regular expressions take time that grows with the square or the cube of what they
scan (a 31 KB run of unclosed hyperlink fields took 19 s; a 56 KB font table of
entries without a charset, 6 s), so what it is given is prepared here in linear time:
embedded pictures, objects and theme data are cut out (they are most of a large
file's bytes, and no text), the font table is rewritten to the font numbers and
charsets striprtf reads from it, and a field group is spelt so that its hyperlink
pattern never starts (the link's shown text is kept; its address is not). What
remains is bounded by :data:`MAX_RTF_CHARS`. Nothing in a document is run or fetched.
"""

from __future__ import annotations

import re

from striprtf.striprtf import rtf_to_text

from selfcrag.files.containers import UnreadableDocument
from selfcrag.files.outline import MarkdownOutline

__all__ = ["MAX_RTF_CHARS", "read_rtf"]

MAX_RTF_CHARS = 20 * 1024 * 1024
"""An RTF document may hold this many characters of markup and text once its pictures are cut out (about 15 s)."""

_MAX_FONTS = 10_000
# A group whose content is data, no text: pictures, embedded objects, Word's data store and theme.
_PAYLOAD = re.compile(r"\{(?:\\\*)?\\(?:pict|objdata|datastore|themedata|colorschememapping)(?![a-zA-Z])")
# What counts for finding a group's end: binary data (skipped by its length), escaped braces, braces.
_GROUP_TOKEN = re.compile(r"\\bin(\d{1,9}) ?|\\[{}\\]|[{}]")
_FONT_TABLE = re.compile(r"\{(?:\\\*)?\\fonttbl(?![a-zA-Z])")
_FONT_NUMBER = re.compile(r"\\f(\d{1,6})(?![a-zA-Z])")
_FONT_CHARSET = re.compile(r"\\fcharset(\d{1,3})(?![a-zA-Z])")


def read_rtf(data: bytes) -> str:
    """Read an RTF document's text.

    Args:
        data: The ``.rtf`` file's bytes.

    Returns:
        Its paragraphs, one per line with a blank line between them (a ``#`` or a ``|`` at the
        start of one is text, not Markdown).

    Raises:
        UnreadableDocument: The file is no RTF, holds more than :data:`MAX_RTF_CHARS` of markup
            and text, or striprtf cannot read it.
    """
    try:
        source = data.decode("utf-8")
    except UnicodeDecodeError:  # RTF is 7-bit; a writer that put raw bytes in meant its code page
        source = data.decode("cp1252", errors="replace")
    source = source.removeprefix("\ufeff")
    if not source.lstrip().startswith("{\\rtf"):
        raise UnreadableDocument("not an RTF document (no {\\rtf header)")
    source = _with_plain_font_table(_without_payloads(source)).replace("{\\field{", "{\\field {")
    if len(source) > MAX_RTF_CHARS:
        raise UnreadableDocument(f"RTF document holds more than {MAX_RTF_CHARS:,} characters of text and markup")
    try:
        text = rtf_to_text(source, errors="replace")
    except Exception:  # striprtf raises what its parsing meets (a bad \u number, a bad \bin length)
        raise UnreadableDocument("corrupt or unreadable RTF document") from None
    outline = MarkdownOutline()
    for paragraph in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        outline.paragraph(paragraph)  # an empty one is left out
    return outline.text()


def _without_payloads(source: str) -> str:
    """The document without its picture, object and theme groups."""
    pieces: list[str] = []
    position = 0
    while (found := _PAYLOAD.search(source, position)) is not None:
        pieces.append(source[position : found.start()])
        position = _group_end(source, found.start())
    pieces.append(source[position:])
    return "".join(pieces)


def _with_plain_font_table(source: str) -> str:
    r"""The document with its font table rewritten as ``{\f1\fcharset134 F;}`` entries, one per font with a charset.

    striprtf reads the font table with a pattern whose time grows with the square of a table of
    entries without a charset; entries in this form it reads in one step each.
    """
    found = _FONT_TABLE.search(source)
    if found is None:
        return source
    end = _group_end(source, found.start())
    entries: list[str] = []
    for entry in source[found.end() : end].split(";")[:_MAX_FONTS]:
        number, charset = _FONT_NUMBER.search(entry), _FONT_CHARSET.search(entry)
        if number is not None and charset is not None:
            entries.append(f"{{\\f{number.group(1)}\\fcharset{charset.group(1)} F;}}")
    return f"{source[: found.start()]}{{\\fonttbl{''.join(entries)}}}{source[end:]}"


def _group_end(source: str, start: int) -> int:
    """The offset after the group that opens at ``start`` (the end of the text when it never closes)."""
    depth = 0
    position = start
    while (token := _GROUP_TOKEN.search(source, position)) is not None:
        position = token.end()
        if token.group(1) is not None:
            position += int(token.group(1))  # binary data: its bytes may be braces
        elif token.group() == "{":
            depth += 1
        elif token.group() == "}":
            depth -= 1
            if depth == 0:
                return position
    return len(source)
