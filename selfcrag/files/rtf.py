r"""An RTF document as text, through striprtf, each of its paragraphs a paragraph.

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

Hidden text (``\v``, up to a ``\v0``, a ``\plain`` or its group's end) is left out, as Word leaves it out
of the page: its control words stay, so paragraphs and tables are read as before, its characters go. A
footnote (``{\footnote ...}``, an endnote when it has ``\ftnalt``) is read as the other readers write notes:
a paragraph ``Footnote 1: ...`` after the paragraph its mark stands in, numbered in the order of their marks.

striprtf gives the text but not the paragraphs' styles, so headings are found here, in one
pass over the control words: a paragraph whose style the stylesheet names ``heading N``
(or gives an outline level), or that has an ``\outlinelevelN`` of its own, is a heading of
level N (a ``Title`` paragraph is the document's title, and the headings stand under it).
A mark striprtf carries through as text is put at such a paragraph's end, and the line it
ends is written as a ``#`` heading, so every sentence gets its section path. The pass keeps
no more than :data:`_MAX_DEPTH` nested groups' state, whatever the nesting of the input.
"""

from __future__ import annotations

import codecs
import re
from typing import Generic, TypeVar

from striprtf.striprtf import rtf_to_text

from selfcrag.files.containers import ReadingBudget, UnreadableDocument
from selfcrag.files.outline import MarkdownOutline, style_heading_level

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

# A heading paragraph's end is marked with U+FDD0 + its level (U+FDD0: the title) for striprtf to carry into its
# text: Unicode keeps these noncharacters for a program's own use, so no document's text holds them.
_MARK_BASE = 0xFDD0
_MARKS = re.compile("[\ufdd0-\ufdd9]")
_TITLE = 0
_BODY = -1  # ``\outlinelevel9``: body text, whatever the style says
_MAX_DEPTH = 256  # groups nested deeper than this keep their parent's paragraph style
_State = TypeVar("_State")
_MAX_STYLES = 10_000
_MAX_BASED_ON = 20  # a style's base styles followed this deep at most
_STYLESHEET = re.compile(r"\{(?:\\\*)?\\stylesheet(?![a-zA-Z])")
_STYLE_NUMBER = re.compile(r"\\s(\d{1,5})(?![a-zA-Z0-9])")
_OUTLINE_LEVEL = re.compile(r"\\outlinelevel(\d{1,3})(?![a-zA-Z0-9])")
_BASED_ON = re.compile(r"\\sbasedon(\d{1,5})(?![a-zA-Z0-9])")
_ANSI_CODEPAGE = re.compile(r"\\ansicpg(\d{1,5})(?![a-zA-Z0-9])")
# In a style's name: runs of \'xx bytes (decoded together: one GBK character is two), \uN, other control words.
_HEX_RUN = re.compile(r"(?:\\'[0-9a-fA-F]{2})+")
_UNICODE = re.compile(r"\\u(-?\d{1,6}) ?(?:\\'[0-9a-fA-F]{2}|\?)?")
_CONTROL = re.compile(r"\\[a-zA-Z]{1,32}(?:-?\d{1,10})? ?|\\[^a-zA-Z]|[{}]")
# What the pass over the body reads: binary data (skipped by its length), the control words of a paragraph's style
# and end, escaped braces and backslashes (no group), and braces. Other control words are passed over unread.
# What the pass that moves footnotes reads: binary data, an escaped backslash, a paragraph's end, a note's start.
_NOTE_TOKEN = re.compile(r"\\bin(\d{1,9}) ?|\\\\|\\par(?![a-zA-Z])|\{(?:\\\*)?\\footnote(?![a-zA-Z])")
_ENDNOTE = re.compile(r"\s*(?:\\[a-zA-Z]+-?\d* ?)*?\\ftnalt(?![a-zA-Z])")
# Hidden text's control word, and what the pass that cuts it reads: binary data, control words (their name and
# number), and, as text, \'xx bytes, control symbols, braces and runs of plain characters.
_HIDDEN = re.compile(r"\\v(?![a-zA-Z])")
_TEXT_TOKEN = re.compile(
    r"\\bin(\d{1,9}) ?|\\([a-zA-Z]{1,32})(-?\d{1,10})? ?|\\'[0-9a-fA-F]{2}|\\.|\\\Z|[{}]|[^\\{}]+", re.S
)
_BODY_TOKEN = re.compile(r"\\bin(\d{1,9}) ?|\\(pard|par|s|outlinelevel)(-?\d{1,10})?(?![a-zA-Z])|\\[{}\\]|[{}]")


def read_rtf(data: bytes, budget: ReadingBudget) -> str:
    """Read an RTF document's text.

    Args:
        data: The ``.rtf`` file's bytes.
        budget: What reading it may make, charged as it is written.

    Returns:
        Its paragraphs, one per line with a blank line between them (a ``#`` or a ``|`` at the
        start of one is text, not Markdown).

    Raises:
        UnreadableDocument: The file is no RTF, holds more than :data:`MAX_RTF_CHARS` of markup
            and text, striprtf cannot read it, or it is past its budget.
    """
    try:
        source = data.decode("utf-8")
    except UnicodeDecodeError:  # RTF is 7-bit; a writer that put raw bytes in meant its code page
        source = data.decode("cp1252", errors="replace")
    source = source.removeprefix("\ufeff")
    if not source.lstrip().startswith("{\\rtf"):
        raise UnreadableDocument("not an RTF document (no {\\rtf header)")
    source = _with_plain_font_table(_without_payloads(source)).replace("{\\field{", "{\\field {")
    source = _without_hidden_text(_with_notes_after_paragraphs(source))
    source = _with_heading_marks(source, _heading_styles(source))
    if len(source) > MAX_RTF_CHARS:
        raise UnreadableDocument(f"RTF document holds more than {MAX_RTF_CHARS:,} characters of text and markup")
    try:
        text = rtf_to_text(source, errors="replace")
    except MemoryError:
        raise
    except Exception:  # striprtf raises what its parsing meets (a bad \u number, a bad \bin length)
        raise UnreadableDocument("corrupt or unreadable RTF document") from None
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    levels = [_line_level(line) for line in lines]
    under_title = _TITLE in levels  # under a title, a "heading 1" is a level-2 heading
    outline = MarkdownOutline(budget)
    for line, level in zip(lines, levels, strict=True):
        text = _MARKS.sub("", line)
        if level is None:
            outline.paragraph(text)  # an empty one is left out
        else:
            outline.heading(level + under_title if level else 1, text)
    return outline.text()


def _with_notes_after_paragraphs(source: str) -> str:
    r"""The document with each footnote's group moved after the ``\par`` that ends its paragraph, as a paragraph.

    ``{\footnote X}`` (which striprtf leaves out, as a destination) becomes ``{\pard\plain Footnote 1: X\par}``
    after the paragraph; ``Endnote 1:`` when the note has ``\ftnalt``. A note after the last ``\par`` stands
    at the document's end.
    """
    if "\\footnote" not in source:
        return source
    pieces: list[str] = []
    pending: list[str] = []
    numbers = {"Footnote": 0, "Endnote": 0}
    copied = 0
    position = 0
    while (token := _NOTE_TOKEN.search(source, position)) is not None:
        position = token.end()
        if token.group(1) is not None:
            position += int(token.group(1))  # binary data: its bytes may look like anything
        elif token.group().startswith("{"):
            end = _group_end(source, token.start())
            inner = source[token.end() : end - 1 if source.endswith("}", 0, end) else end]
            kind = "Endnote" if _ENDNOTE.match(inner, 0, 256) else "Footnote"
            numbers[kind] += 1
            pending.append(f"{{\\pard\\plain {kind} {numbers[kind]}: {inner}\\par}}")
            pieces.append(source[copied : token.start()])
            copied = position = end
        elif token.group() != "\\\\" and pending:  # a \par: the paragraph's notes after it
            pieces.append(source[copied:position])
            pieces.extend(pending)
            pending.clear()
            copied = position
    rest = source[copied:]
    if pending:  # no \par after them: before the document's closing brace
        closing = rest.rfind("}")
        closing = closing if closing >= 0 else len(rest)
        rest = f"{rest[:closing]}\\par {''.join(pending)}{rest[closing:]}"
    pieces.append(rest)
    return "".join(pieces)


class _Groups(Generic[_State]):
    """The state each open group (``{``) will restore when it ends, for :data:`_MAX_DEPTH` nested groups.

    Groups nested deeper are counted, not kept: their end restores nothing, whatever the nesting of the input.
    """

    def __init__(self) -> None:
        self.saved: list[_State] = []
        self.too_deep = 0

    def open(self, state: _State) -> None:
        """A group begins, in ``state``."""
        if len(self.saved) < _MAX_DEPTH:
            self.saved.append(state)
        else:
            self.too_deep += 1

    def close(self, state: _State) -> _State:
        """A group ends: the state it began in, or ``state`` when it was too deep or none is open."""
        if self.too_deep:
            self.too_deep -= 1
            return state
        return self.saved.pop() if self.saved else state


def _without_hidden_text(source: str) -> str:
    r"""The document without the characters of its hidden text (``\v`` on, until ``\v0``, ``\plain`` or its group ends).

    Control words and braces stay (a hidden run's ``\par`` still ends its paragraph); text, ``\'xx`` bytes,
    ``\uN`` characters and escaped characters go. The state of :data:`_MAX_DEPTH` nested groups is kept.
    """
    if _HIDDEN.search(source) is None:
        return source
    pieces: list[str] = []
    copied = 0
    hidden = False
    groups: _Groups[bool] = _Groups()
    position = 0
    while (token := _TEXT_TOKEN.search(source, position)) is not None:
        position = token.end()
        word = token.group(2)
        if token.group(1) is not None:
            position += int(token.group(1))  # binary data, kept as it is
        elif token.group() == "{":
            groups.open(hidden)
        elif token.group() == "}":
            hidden = groups.close(hidden)
        elif word == "v":
            hidden = token.group(3) != "0"
        elif word == "plain":
            hidden = False
        elif hidden and (word is None or word == "u") and not token.group().startswith(("\\*", "\\\n", "\\\r")):
            pieces.append(source[copied : token.start()])  # hidden text: left out
            copied = position
    pieces.append(source[copied:])
    return "".join(pieces)


def _line_level(line: str) -> int | None:
    """The heading level a line of striprtf's text was marked with (0: the title), or None."""
    marks = _MARKS.findall(line)
    return ord(marks[-1]) - _MARK_BASE if marks else None


def _heading_styles(source: str) -> dict[int, int]:
    """The paragraph styles of the stylesheet that make headings: style number to level (0: the title).

    A style is a heading by its name (``heading 2``, as Word writes even a localised style's name, or ``标题 2``),
    its outline level, or its base style's.
    """
    found = _STYLESHEET.search(source)
    if found is None:
        return {}
    end = _group_end(source, found.start())
    codepage = _codepage(source)
    own: dict[int, int | None] = {}
    based_on: dict[int, int] = {}
    position = found.end()
    for _ in range(_MAX_STYLES):
        start = source.find("{", position, end)
        if start < 0:
            break
        position = _group_end(source, start)
        entry = source[start:position]
        if entry.startswith("{\\*"):
            continue  # a character, section or table style: no paragraph is of it
        number = _STYLE_NUMBER.search(entry)
        style = int(number.group(1)) if number else 0  # Word leaves out the \s0 of "Normal"
        own[style] = _style_level(entry, codepage)
        if (base := _BASED_ON.search(entry)) is not None:
            based_on[style] = int(base.group(1))
    levels: dict[int, int] = {}
    for style in own:
        current: int | None = style
        for _ in range(_MAX_BASED_ON):
            if current is None or current not in own:
                break
            if (level := own[current]) is not None:
                if level != _BODY:
                    levels[style] = level
                break
            current = based_on.get(current)
    return levels


def _style_level(entry: str, codepage: str) -> int | None:
    """What one stylesheet entry makes its paragraphs: a heading level, the title, body text, or None (its base's)."""
    outline = _OUTLINE_LEVEL.search(entry)
    if outline is not None:
        return int(outline.group(1)) + 1 if int(outline.group(1)) < 9 else _BODY
    for name in _style_name(entry, codepage).split(","):  # "heading 1,h1": a name and its aliases
        if (level := style_heading_level(name)) is not None:
            return level  # 0: the title
    return None


def _style_name(entry: str, codepage: str) -> str:
    r"""A stylesheet entry's name: its text up to the ``;``, ``\'xx`` and ``\uN`` decoded."""
    # \uN first: the \'xx after one is its stand-in for readers without Unicode, not a character of its own.
    text = _UNICODE.sub(lambda escape: chr(int(escape.group(1)) % 0x10000), entry)
    text = _HEX_RUN.sub(lambda run: bytes.fromhex(run.group().replace("\\'", "")).decode(codepage, "replace"), text)
    return _CONTROL.sub("", text).split(";")[0].strip()


def _codepage(source: str) -> str:
    r"""The document's ANSI code page (``\ansicpg936``), as a codec name; Windows-1252 when it names none known."""
    found = _ANSI_CODEPAGE.search(source, 0, 4096)
    name = f"cp{found.group(1)}" if found else "cp1252"
    try:
        codecs.lookup(name)
    except LookupError:
        return "cp1252"
    return name


def _with_heading_marks(source: str, styles: dict[int, int]) -> str:
    r"""The document with a mark (see ``_MARK_BASE``) before the ``\par`` that ends each heading paragraph.

    A paragraph's style (``\sN``) and outline level are paragraph properties: ``\pard`` resets them, and a
    group's end restores its parent's (kept for :data:`_MAX_DEPTH` groups; deeper ones change nothing).
    """
    if not styles and "\\outlinelevel" not in source:
        return source
    pieces: list[str] = []
    copied = 0
    style: int | None = None  # the heading level of the paragraph's style
    outline: int | None = None  # its own outline level
    groups: _Groups[tuple[int | None, int | None]] = _Groups()
    position = 0
    while (token := _BODY_TOKEN.search(source, position)) is not None:
        position = token.end()
        if token.group(1) is not None:
            position += int(token.group(1))  # binary data: its bytes may be braces or backslashes
        elif token.group() == "{":
            groups.open((style, outline))
        elif token.group() == "}":
            style, outline = groups.close((style, outline))
        elif groups.too_deep or token.group(2) is None:
            continue
        elif token.group(2) == "pard":
            style, outline = None, None
        elif token.group(2) == "s" and token.group(3) is not None:
            style = styles.get(int(token.group(3)))
        elif token.group(2) == "outlinelevel" and token.group(3) is not None:
            outline = int(token.group(3)) + 1 if 0 <= int(token.group(3)) < 9 else _BODY
        elif token.group(2) == "par":
            level = outline if outline is not None else style
            if level is not None and level != _BODY:
                pieces.append(source[copied : token.start()])
                pieces.append(f"{{\\uc0\\u{_MARK_BASE + level - 0x10000}}}")  # RTF writes \uN as a signed 16-bit number
                copied = token.start()
    pieces.append(source[copied:])
    return "".join(pieces)


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
