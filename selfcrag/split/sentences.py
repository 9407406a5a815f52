"""Structure-aware sentence splitting for Chinese and English Markdown/plain text.

The splitter works in two passes:

1. A line-based block pass recognises Markdown structure (ATX headings, fenced
   code, pipe tables, blank-line paragraph breaks) and the line-start markers of
   numbered clauses and list items. It yields *units*: stretches of text that a
   sentence may never cross.
2. Each unit is split into sentences by scanning only for terminator characters
   with one compiled regex, so the cost is linear in the text length; each
   candidate is then judged by looking at a few characters around it.

Every span is trimmed of surrounding whitespace, never empty and never longer
than ``max_chars``; together the spans cover each non-whitespace character of
the input exactly once. Offsets are Python string indices (code points).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "SentenceSpan",
    "closes_fence",
    "document_title",
    "is_markdown_structure",
    "is_title_line",
    "join_wrapped_lines",
    "opens_fence",
    "split_sentences",
    "table_header_lines",
    "without_links",
]


@dataclass(frozen=True, slots=True)
class SentenceSpan:
    """One sentence (or structural unit) of a document.

    Attributes:
        start: Offset of the first character in the document text.
        end: Exclusive end offset; ``text[start:end]`` is the sentence, with no
            leading or trailing whitespace.
        section: Markdown heading path of the sentence, e.g.
            ``("退款政策", "7.1 时限")``; ``()`` before any heading.
        section_index: 0 before the first heading, +1 at each heading; a
            heading belongs to the section it opens.
        kind: One of ``"heading"``, ``"text"``, ``"list"``, ``"clause"``,
            ``"code"`` or ``"table"``.
        header: For a piece of a table cut at the limit, other than its first: where the table's header
            (:func:`table_header_lines`) stands, ``(start, end)`` offsets; None otherwise. The piece is read
            under it, as its rows are, though the header's text is the first piece's.

    """

    start: int
    end: int
    section: tuple[str, ...]
    section_index: int
    kind: str
    header: tuple[int, int] | None = None


# --- Block-level patterns (matched against a single line) -------------------

# CommonMark ATX heading: up to 3 spaces of indent, 1-6 '#', then a space/tab
# or end of line ("#hashtag" is text, not a heading).
# The body is captured whole and stripped in Python: a lazy body followed by
# optional trailing blanks would backtrack quadratically on long blank runs.
_ATX = re.compile(r"[ \t]{0,3}(#{1,6})(?:[ \t]+(.*)|\r)?$")
_FENCE = re.compile(r"[ \t]{0,3}(`{3,}|~{3,})")
_TABLE = re.compile(r"[ \t]{0,3}\|")
# The row under a table's header that marks it as one ("|---|:--:|"): pipes, colons, spaces and dashes.
_TABLE_SEPARATOR = re.compile(r"[ \t|:]*-[ \t|:-]*")
# A setext heading's underline: a line of "=" (level 1) or "-" (level 2) under a one-line paragraph.
_UNDERLINE = re.compile(r"[ \t]{0,3}(={3,}|-{3,})[ \t]*$")
# Lines indented as a code block: never a title.
_INDENTED = re.compile(r"(?: {4}|\t)")
# Characters at most of a numbered title directly over its text, with no blank line between: a longer line is
# more likely a hard-wrapped sentence's first line ("1. The kettle must stand on a flat" / "surface.").
_TITLE_OVER_TEXT = 40

# Line-start markers. The lookahead after ASCII markers demands whitespace or a
# non-ASCII (typically CJK) character, so "3.14159" or "1)foo" glued to ASCII
# is not taken as a marker while "7.1时限" is.
_AFTER = r"(?=\s|[^\x00-\x7f]|$)"
_CN_NUM = "一二三四五六七八九十百千零〇两"
_CLAUSE = re.compile(
    r"[ \t\u3000]*(?:"
    rf"\d{{1,3}}(?:\.\d{{1,3}})+\.?{_AFTER}"  # 7.1 / 7.2.3 / 7.1.
    rf"|\d{{1,3}}[.)]{_AFTER}"  # 1. / 1)
    r"|\d{1,3}[、．]"  # 1、 / 1．
    r"|[(（]\d{1,3}[)）]"  # (1) / （1）
    rf"|[a-zA-Z][)）]{_AFTER}"  # a)
    r"|[(（][a-zA-Z][)）]"  # (a)
    "|[\u2460-\u2473\u2474-\u2487\u2776-\u277f]"  # ①..⑳, ⑴..⒇, ❶..❿
    rf"|第[{_CN_NUM}\d]{{1,6}}[条章节款项编]"  # 第三条
    rf"|[{_CN_NUM}]{{1,4}}[、．]"  # 一、
    rf"|[(（][{_CN_NUM}]{{1,4}}[)）]"  # （一）
    r")"
)
_LIST = re.compile(r"[ \t\u3000]*[-*+•](?:[ \t]|$)")
# A section number opening a plain-text heading line: "6. ", "2.1 ", "第二章 ", "一、" (group 1 the digits,
# group 2 a 章/节 heading's unit), then a title (see _numbered_heading_level).
_NUMBERED_HEADING = re.compile(
    r"[ \t\u3000]*(?:(\d{1,3}(?:\.\d{1,3})*)\.?[ \t\u3000]+"
    rf"|第[{_CN_NUM}\d]{{1,6}}([章节])[ \t\u3000]*"
    rf"|[{_CN_NUM}]{{1,4}}、)"
)

# --- Sentence-level patterns -------------------------------------------------

# Candidate terminator run plus the closing quotes/brackets that stay with it.
# "." is a candidate too; decimals, versions, URLs and e-mails are rejected in
# _is_break because their dot is not followed by whitespace.
_CLOSERS = "”’」』）)\"'\\]】》〉"
# Group 1 is the terminator run, group 2 what stays with it: closing quotes
# and brackets, then Wikipedia-style citation marks ("。[7]").
_TERM = re.compile(rf"([。！？；…!?.]+)([{_CLOSERS}]*(?:\[\d{{1,3}}\])*)")
_NONSPACE = re.compile(r"\S")
_LAST_NONSPACE = re.compile(r"[\s\S]*(\S)")
_ENUMERATOR = re.compile(r"\d{1,3}|[A-Za-z]|[ivxIVX]{1,3}")
_CJK_STOP = frozenset("。！？；")
# Brackets that hold a sentence together across a "!", "?" or "." inside them, when they close within
# _BRACKET_SPAN characters on the same line (see _Splitter._inside_brackets).
_OPENING = "(（["
_CLOSING = ")）]"
_BRACKET_SPAN = 120
# Tokenised English (PTB style) puts the closing quote or bracket after a
# space: "... no more . ''" — it belongs to the sentence that just ended.
_PTB_CLOSE = re.compile(r"(?:[ \t]+(?:''|'|\"|\)|”|’))+(?=\s|$)")
_NEXT = re.compile(r"\s*(\S)")
# The ASCII word before a period ("Dr", "U.S", "e.g"); brackets, digits and
# CJK text glued in front are left out.
_WORD_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz.")
_INITIALISM = re.compile(r"(?:[A-Za-z]\.)+[A-Za-z]")
# Abbreviations (lower-cased, without the final dot) after which "." does not
# end a sentence. Those in the second set are also ordinary words ("no",
# "art", "est") and count only when capitalised: "the answer was no. Then".
_ABBREVIATIONS = frozenset(
    """
    mr mrs ms mx dr prof st sr jr messrs vs v c ca cf al approx pp etc ph.d
    """.split()
)
_ABBREVIATIONS_CAPITALISED = frozenset(
    """
    no nos fig figs inc ltd co corp dept est vol vols pg ed eds ch chap sec art
    op rev hon fr gen gov lt col sgt capt cmdr adm maj mt ft jan feb apr jun
    jul aug sep sept oct nov dec
    """.split()
)
# After one of these the text continues the same sentence ("etc., and ...").
_CONTINUERS = frozenset(",;:，、；：")

# Over-long cutting: greedy ".*X" finds the *last* X inside the window in a
# single backwards scan, keeping each cut linear in max_chars. The comma and
# pipe patterns are matched one character past the window so that a comma's
# next character is visible; their trailing "(?=[\s\S])" keeps the break
# itself inside the window. A comma or colon between digits ("$4,287.50",
# "1,000,000", "10:30") is part of a number, never a cut point.
_LAST_COMMA = re.compile(r"[\s\S]*(?:[，、：]|(?<!\d)[,:]|[,:](?!\d))(?=[\s\S])")
_LAST_SPACE = re.compile(r"[\s\S]*\s")
_LAST_PIPE = re.compile(r"[\s\S]*\|(?=[\s\S])")


def split_sentences(text: str, max_chars: int = 400) -> list[SentenceSpan]:
    """Split a Markdown or plain-text document into sentence spans.

    Headings, fenced code blocks and pipe tables are kept as their own spans;
    paragraphs are split into sentences, with numbered clauses and list items
    starting new units at the start of a line. Spans longer than
    ``max_chars`` are cut (at a comma or whitespace when possible).

    Args:
        text: The document text.
        max_chars: Maximum length of a span, in characters. Must be >= 1.

    Returns:
        Ordered, non-overlapping spans that together cover every
        non-whitespace character of ``text`` exactly once; ``[]`` for empty or
        whitespace-only text.

    Raises:
        ValueError: If ``max_chars`` is smaller than 1.

    """
    if max_chars < 1:
        raise ValueError(f"max_chars must be >= 1, got {max_chars}")
    return _Splitter(text, max_chars).run()


def document_title(text: str, fallback: str) -> str:
    """Pick a document's title from its text: a real title, never the first sentence or a line of code.

    Args:
        text: The document text.
        fallback: Returned when the document has no title line (the caller passes the file name's stem).

    Returns:
        The text of the first level-1 heading (``# Title``, or ``Title`` underlined
        with ``===``) outside code; otherwise the document's first line when it is a
        heading of another level or a title line (see :func:`is_title_line`) standing
        alone; otherwise ``fallback``. Code (fenced or indented) holds no title: its
        ``# comment`` lines are comments. HTML tags and Markdown links are no part
        of a title: a README's ``<p align="center">`` banner is skipped, ``<h1>Rich</h1>``
        is ``Rich``, ``# [Rich](https://…)`` is ``Rich``.

    """
    lines = text.split("\n")
    first: str | None = None  # the title the first line offers, when no level-1 heading follows
    seen_text = False
    fence: str | None = None
    for i, raw in enumerate(lines):
        line = _HTML_TAG.sub("", raw)
        if raw.strip() and not line.strip():
            continue  # markup alone, such as a centred banner
        if fence is not None:
            if closes_fence(line, fence):
                fence = None
            continue
        fence = opens_fence(line)
        if fence is not None or not line.strip() or _INDENTED.match(line) or _setext_level(lines, i):
            continue  # code, a blank line or an underline is no title
        heading = _ATX.match(line)
        level = len(heading.group(1)) if heading else _setext_level(lines, i + 1)
        title = _heading_title(heading) if heading else without_links(line).strip()
        if level == 1 and title:
            return title
        if not seen_text:
            alone = i + 1 >= len(lines) or not lines[i + 1].strip()
            first = title if title and (level or (alone and is_title_line(title))) else None
        seen_text = True
    return first or fallback


def is_title_line(line: str) -> bool:
    """Tell whether a line reads as a title rather than a sentence: short, no sentence in it or ending it.

    Args:
        line: One line of text (a heading's or a document's first line).

    Returns:
        True for "Libtasn1 Reference Manual" or "Backup notes"; False for "The job
        runs at 02:00.", a line ending in a colon or comma, a line of links only, or
        a line over 80 characters.
    """
    text = without_links(line).strip()
    return (
        0 < len(text) <= 80
        and any(ch.isalpha() for ch in text)
        and not _SENTENCE_END.search(text)
        and not _SENTENCE_INSIDE.search(text)
    )


def without_links(text: str) -> str:
    """Markdown links and images as the words a reader sees: ``[Install](http://…)`` is ``Install``.

    Args:
        text: A heading or a line of Markdown.

    Returns:
        The text with each link replaced by its text, each image and each HTML tag removed; when only images
        hold words (a logo above its ``===`` underline), their alt texts (``![libsodium](logo.png)`` is
        ``libsodium``).
    """
    words = _HTML_TAG.sub("", _LINK.sub(lambda m: "" if m.group(1) else m.group(2), text))
    if words.strip():
        return words
    return _HTML_TAG.sub("", _LINK.sub(lambda m: m.group(2), text))


def is_markdown_structure(line: str) -> bool:
    """Tell whether the splitter reads a line as Markdown structure: a heading, a fence, a table row or an underline.

    Args:
        line: One line.

    Returns:
        True when the line would start a heading, a code block or a table, or underline a heading.
    """
    return bool(_ATX.match(line) or _FENCE.match(line) or _TABLE.match(line) or _UNDERLINE.match(line))


def table_header_lines(lines: Sequence[str]) -> int:
    """How many of a pipe table's first lines are its header: the first, and the separator row under it if any.

    A table without a separator row (one an HTML or reStructuredText reader wrote) is read the same way: its
    first row names its columns, as a ``<thead>`` does.

    Args:
        lines: The table's lines, blank lines left out.

    Returns:
        2 when the second line is a separator row (``|---|---|``), else 1.
    """
    return 2 if len(lines) > 1 and _TABLE_SEPARATOR.fullmatch(lines[1].strip()) else 1


def _plain_heading_level(lines: list[str], i: int, first: bool) -> int:
    """The level of line ``i``, which starts a block, as a plain-text heading, or 0 when it is none.

    Two kinds, as plain-text handbooks, RFCs and manuals write them: a line of capitals standing alone between
    blank lines ("OPENING HOURS AND CORE HOURS"; level 1 when it is the document's ``first`` line, its title,
    else 2), or a section number and a title (see :func:`_numbered_heading_level`), alone or directly over its
    text ("2.1 包装清单", then "音箱主机一台…" on the next line). Never indented code, nor the first line of a
    hard-wrapped paragraph: a numbered line over an indented or lower-case line, one longer than
    ``_TITLE_OVER_TEXT`` or one with a comma, colon or semicolon in it is the start of a sentence that goes on.
    """
    line = lines[i]
    if _INDENTED.match(line):
        return 0
    following = lines[i + 1] if i + 1 < len(lines) else ""
    if not following.strip():
        return (1 if first else 2) if _is_caps_heading(line) else _numbered_heading_level(lines, i)
    title = line.strip()
    if _INDENTED.match(following) or _UNDERLINE.match(following) or following.lstrip()[:1].islower():
        return 0
    if len(title) > _TITLE_OVER_TEXT:
        return 0
    if any(mark in title for mark in _CONTINUERS):
        return 0
    return _numbered_heading_level(lines, i)


def _is_caps_heading(line: str) -> bool:
    """Tell whether a line is capitals and no sentence: "ACCESS BADGES", not "NOTE: DO NOT IMMERSE." or a list item.

    Text without letter case (Chinese) never qualifies.
    """
    text = line.strip()
    letters = [ch for ch in text if ch.isalpha()]
    return (
        len(letters) >= 3
        and len(text) <= 60
        and all(ch.isascii() and ch.isupper() for ch in letters)
        and not _LIST.match(line)
        and is_title_line(text)
    )


def _numbered_heading_level(lines: list[str], i: int) -> int:
    """The level of line ``i``, standing alone, as a heading by its number, or 0 when it is none.

    A section number (``6.``, ``2.1``, ``第二章``, ``一、``) and a title, no sentence: "6. 常见问题" is level 2
    (under the document's title), "6.1 Wi-Fi" level 3, ``第二章`` 2 and ``第一节`` 3. A list item's marker
    (``①``, ``(1)``, ``a)``) or an article (``第三条``) heads no section, nor does a line whose nearest neighbour
    on either side is numbered at the same depth: items of a loose list ("1. Install it", a blank line, "2. Run
    it") or of a man page's exit values ("0 成功") stand alone too.
    """
    line = lines[i]
    match = _NUMBERED_HEADING.match(line)
    if match is None or not is_title_line(line[match.end() :]):
        return 0
    depth = _depth(match)
    for steps in (range(i - 1, -1, -1), range(i + 1, len(lines))):
        neighbour = _NUMBERED_HEADING.match(next((lines[j] for j in steps if lines[j].strip()), ""))
        if neighbour is not None and _depth(neighbour) == depth:
            return 0
    return 1 + depth


def _depth(number: re.Match[str]) -> int:
    """How deep a section number goes (``6.`` 1, ``6.1`` 2, ``第二章`` 1, ``第一节`` 2)."""
    if number.group(1):
        return len([part for part in number.group(1).split(".") if part])
    return 2 if number.group(2) == "节" else 1


def _setext_level(lines: list[str], i: int) -> int:
    """The level of the heading line ``i`` underlines (1 for ``===``, 2 for ``---``), or 0 when it underlines none.

    A heading line is one line of text between a blank line (or the document's
    start, or an overline of ``=``) and its underline; a longer paragraph over
    ``---`` is no heading, nor is a list item.
    """
    if i < 1 or i >= len(lines):
        return 0
    underline = _UNDERLINE.match(lines[i])
    title = lines[i - 1]
    if underline is None or not title.strip() or is_markdown_structure(title) or _LIST.match(title):
        return 0
    mark = underline.group(1)[0]
    before = lines[i - 2] if i >= 2 else ""
    overline = _UNDERLINE.match(before)
    if before.strip() and not (overline and mark == "=" and overline.group(1)[0] == "="):
        return 0
    return 1 if mark == "=" else 2


_HTML_TAG = re.compile(r"<!--.*?-->|</?[a-zA-Z][^<>]*>")
# A Markdown image (group 1 set) or link: ``![alt](src)``, ``[text](url)``, ``[text][ref]``.
_LINK = re.compile(r"(!?)\[([^\[\]\n]*)\](?:\([^()\s]*(?:\s+\"[^\"]*\")?\)|\[[^\[\]\n]*\])")
_SENTENCE_END = re.compile(r"[.!?。！？;；:：,，、]$")
_SENTENCE_INSIDE = re.compile(r"[.!?](?=\s+\S)|[。！？]")
_LINE_BREAK = re.compile(r"[ \t]*\n[ \t\u3000]*")


def join_wrapped_lines(text: str) -> str:
    """Undo hard wrapping: the lines of one paragraph (or list item) as one line.

    A sentence of a Markdown or plain-text paragraph may run over several
    lines; quoted as it is, each line would read as a sentence of its own. A
    break between two CJK characters is dropped (``选`` then ``择`` on the next line is ``选择``), any
    other becomes one space. Use it on text and list spans, not on tables or
    code, whose lines mean something.

    Args:
        text: A span of one paragraph (no blank lines).

    Returns:
        The text on one line.
    """

    def joined(m: re.Match[str]) -> str:
        before, after = text[m.start() - 1 : m.start()], text[m.end() : m.end() + 1]
        return "" if before and after and _is_cjk(before) and _is_cjk(after) else " "

    return _LINE_BREAK.sub(joined, text)


def _heading_title(m: re.Match[str]) -> str:
    """Return the text of an ATX heading match without '#' marks, spaces, links or HTML tags."""
    body = without_links(m.group(2) or "").strip()
    # Drop an optional closing sequence ("## Title ##"); "C#" keeps its '#'.
    bare = body.rstrip("#")
    if bare != body and (not bare or bare[-1] in " \t"):
        body = bare.strip()
    return body


def opens_fence(line: str) -> str | None:
    """Return the fence string if ``line`` opens a fenced code block."""
    m = _FENCE.match(line)
    if m is None:
        return None
    fence = m.group(1)
    # CommonMark: a backtick fence's info string has no backtick, so a line
    # like "```x``` is inline code" does not swallow the rest of the text.
    if fence[0] == "`" and "`" in line[m.end() :]:
        return None
    return fence


def closes_fence(line: str, fence: str) -> bool:
    """Tell whether ``line`` closes a code fence opened with ``fence``."""
    stripped = line.strip()
    return (
        len(line) - len(line.lstrip(" \t")) <= 3
        and len(stripped) >= len(fence)
        and stripped == fence[0] * len(stripped)
    )


class _Splitter:
    """Single-use worker holding the text, the limit and the heading state."""

    def __init__(self, text: str, max_chars: int) -> None:
        self.text = text
        self.max_chars = max_chars
        self.out: list[SentenceSpan] = []
        self.levels: list[tuple[int, str]] = []
        self.section: tuple[str, ...] = ()
        self.section_index = 0
        # The header of the table being emitted: its later pieces are read under it (SentenceSpan.header).
        self.header: tuple[int, int] | None = None

    # -- block pass ---------------------------------------------------------

    def run(self) -> list[SentenceSpan]:
        """Walk the lines once, dispatching each block to its emitter."""
        text = self.text
        lines = text.split("\n")
        # starts[i] is the offset of line i; a sentinel closes the last line.
        starts = [0] * (len(lines) + 1)
        pos = 0
        for i, line in enumerate(lines):
            starts[i] = pos
            pos += len(line) + 1
        starts[-1] = len(text) + 1

        unit_start = -1  # offset of the open paragraph unit, -1 when none
        unit_kind = "text"
        i = 0
        n = len(lines)
        while i < n:
            line = lines[i]
            line_start = starts[i]
            line_end = line_start + len(line)
            if not line.strip():
                if unit_start >= 0:
                    self._emit_unit(unit_start, line_start, unit_kind)
                    unit_start = -1
                i += 1
                continue
            level = _setext_level(lines, i) if unit_kind == "text" and unit_start >= 0 else 0
            if level and unit_start in (starts[i - 1], starts[i - 2]):
                # The open one-line paragraph (under its "===" overline, if any) is a heading's text.
                self._open_section(level, without_links(lines[i - 1]).strip())
                self._emit_range(unit_start, line_end, "heading")
                unit_start = -1
                i += 1
                continue
            fence = opens_fence(line)
            if fence is not None:
                # Fences, headings and tables interrupt a paragraph, as in
                # CommonMark, so close the unit before them.
                if unit_start >= 0:
                    self._emit_unit(unit_start, line_start, unit_kind)
                    unit_start = -1
                j = i + 1
                while j < n and not closes_fence(lines[j], fence):
                    j += 1
                last = min(j, n - 1)  # an unclosed fence runs to the end
                self._emit_lines(i, last, starts, lines, "code")
                i = last + 1
                continue
            m = _ATX.match(line)
            if m:
                if unit_start >= 0:
                    self._emit_unit(unit_start, line_start, unit_kind)
                    unit_start = -1
                self._open_section(len(m.group(1)), _heading_title(m))
                self._emit_range(line_start, line_end, "heading")
                i += 1
                continue
            if _TABLE.match(line):
                if unit_start >= 0:
                    self._emit_unit(unit_start, line_start, unit_kind)
                    unit_start = -1
                j = i
                while j + 1 < n and _TABLE.match(lines[j + 1]):
                    j += 1
                self._emit_lines(i, j, starts, lines, "table")
                i = j + 1
                continue
            # A plain-text heading: capitals or a section number, alone ("OPENING HOURS", "6. 常见问题").
            level = (
                _plain_heading_level(lines, i, _NONSPACE.search(text, 0, line_start) is None) if unit_start < 0 else 0
            )
            if level:
                self._open_section(level, line.strip())
                self._emit_range(line_start, line_end, "heading")
                i += 1
                continue
            if _LIST.match(line):
                kind = "list"
            elif _CLAUSE.match(line):
                kind = "clause"
            else:
                kind = ""
            if kind:
                if unit_start >= 0:
                    self._emit_unit(unit_start, line_start, unit_kind)
                unit_start, unit_kind = line_start, kind
            elif unit_start < 0:
                unit_start, unit_kind = line_start, "text"
            # A plain line inside an open unit just continues it: a single
            # newline is not a sentence end in English or Chinese prose.
            i += 1
        if unit_start >= 0:
            self._emit_unit(unit_start, len(text), unit_kind)
        return self.out

    def _open_section(self, level: int, title: str) -> None:
        """Update the heading path for a heading of ``level``."""
        levels = self.levels
        while levels and levels[-1][0] >= level:
            levels.pop()
        levels.append((level, title))
        self.section = tuple(t for _, t in levels)
        self.section_index += 1

    # -- emitters -------------------------------------------------------------

    def _emit_lines(self, first: int, last: int, starts: list[int], lines: list[str], kind: str) -> None:
        """Emit lines ``first..last`` as whole spans, cut at line boundaries; a table's later pieces name its header."""
        text = self.text
        if kind == "table":
            head = table_header_lines(lines[first : min(first + 2, last + 1)])
            self.header = _trim(text, starts[first], starts[first + head - 1] + len(lines[first + head - 1]))
        cur_start = -1
        cur_end = -1
        for k in range(first, last + 1):
            s, e = _trim(text, starts[k], starts[k] + len(lines[k]))
            if s >= e:
                continue  # blank line inside a block: whitespace only
            if cur_start >= 0 and e - cur_start <= self.max_chars:
                cur_end = e
                continue
            if cur_start >= 0:
                self._add(cur_start, cur_end, kind)
            if e - s > self.max_chars:
                # A single line over the limit: fall back to the generic cut.
                # Table rows prefer to break between cells.
                self._emit_long(s, e, kind, pipe=kind == "table")
                cur_start = -1
            else:
                cur_start, cur_end = s, e
        if cur_start >= 0:
            self._add(cur_start, cur_end, kind)
        self.header = None

    def _emit_range(self, start: int, end: int, kind: str) -> None:
        """Emit ``text[start:end]`` as one span, cut if over the limit."""
        s, e = _trim(self.text, start, end)
        if s >= e:
            return
        if e - s > self.max_chars:
            self._emit_long(s, e, kind)
        else:
            self._add(s, e, kind)

    def _emit_unit(self, start: int, end: int, kind: str) -> None:
        """Split one paragraph unit into sentences and emit them."""
        prev = start
        for cut in self._sentence_cuts(start, end):
            self._emit_range(prev, cut, kind)
            prev = cut
        self._emit_range(prev, end, kind)

    def _emit_long(self, s: int, e: int, kind: str, pipe: bool = False) -> None:
        """Cut trimmed ``text[s:e]`` into pieces of at most max_chars."""
        text = self.text
        limit = self.max_chars
        # Below this a "nice" cut would make a uselessly short piece.
        floor = limit // 2
        while e - s > limit:
            end = s + limit
            cut = -1
            patterns = (_LAST_PIPE, _LAST_COMMA) if pipe else (_LAST_COMMA,)
            best = -1
            for pat in patterns:
                m = pat.match(text, s, end + 1)
                if m and m.end() > best:
                    best = m.end()
                if best - s >= floor:
                    cut = best
                    break
            if cut < 0:
                # Whitespace may sit right at the limit: the piece ends before it.
                m = _LAST_SPACE.match(text, s, end + 1)
                space = m.end() - 1 if m else -1
                if space - s >= floor:
                    cut = space
                else:
                    cut = max(best, space)
                    if cut <= s:
                        cut = end  # no usable break: hard cut
            ps, pe = _trim(text, s, cut)
            if ps < pe:
                self._add(ps, pe, kind)
            s, e = _trim(text, cut, e)
        if s < e:
            self._add(s, e, kind)

    def _add(self, s: int, e: int, kind: str) -> None:
        header = self.header if self.header is not None and s >= self.header[1] else None
        self.out.append(SentenceSpan(s, e, self.section, self.section_index, kind, header))

    # -- sentence pass --------------------------------------------------------

    def _sentence_cuts(self, start: int, end: int) -> list[int]:
        """Return the offsets inside ``[start, end)`` where sentences end."""
        text = self.text
        cuts: list[int] = []
        last_cut = start
        # Offset of the first non-space character of the current sentence;
        # computed once per cut so the scan stays linear.
        first = _NONSPACE.search(text, start, end)
        sent_start = first.start() if first else end
        for m in _TERM.finditer(text, start, end):
            # Punctuation opening a sentence belongs to it: a snippet
            # separator "。 ... 除了" must not become a span "..." of its own.
            if m.start() <= sent_start or m.start() < last_cut:
                continue
            cut = self._is_break(m, end, sent_start)
            if cut > 0:
                cuts.append(cut)
                last_cut = cut
                first = _NONSPACE.search(text, cut, end)
                sent_start = first.start() if first else end
        return cuts

    def _is_break(self, m: re.Match[str], end: int, sent_start: int) -> int:
        """Judge a terminator candidate.

        Args:
            m: Match of ``_TERM``: a terminator run plus closing quotes.
            end: End of the unit the match lies in.
            sent_start: Offset of the first character of the current sentence.

        Returns:
            The offset after which the sentence ends, or -1 for no break.

        """
        text = self.text
        core = m.group(1)
        stop = m.end()
        if stop >= end:
            return -1  # the unit ends here anyway
        if any(ch in _CJK_STOP for ch in core):
            return stop  # 。！？； always end a sentence
        nxt = text[stop]
        if not nxt.isspace():
            # Glued to the next character: a decimal, version, URL, e-mail,
            # or "!"/"?"/"…" used the Chinese way, directly before CJK text.
            if "." in core and "…" not in core:
                return -1
            if _is_cjk(nxt) or ("…" in core and not nxt.islower() and nxt not in _CONTINUERS):
                return stop
            return -1
        pm = _PTB_CLOSE.match(text, stop, end)
        if pm:
            stop = pm.end()
        nm = _NEXT.match(text, stop, end)
        if nm is None:
            return -1  # only whitespace left in the unit
        following = nm.group(1)
        if following in _CONTINUERS:
            return -1  # "etc., and ...": the sentence goes on
        if "." in core and following in ".…·":
            return -1  # dot leaders of a table of contents ("Introduction . . . . 1") are one line, not sentences
        # "?" and "!" end a sentence even before lowercase, as in most
        # splitters (and the gold of the English dev set: `` now ? '' info).
        # After a period or an ellipsis a lowercase word means the sentence
        # goes on: "e.g. the", "wait... what", unknown abbreviations.
        if following.islower():
            if "!" not in core and "?" not in core:
                return -1
            # ... but not when a closing bracket shows the "!"/"?" sat inside
            # a parenthetical: ( `` Que le peuple décide ! '' ) is rejected.
            if ")" in text[m.end(1) : stop] or "）" in text[m.end(1) : stop]:
                return -1
        if self._inside_brackets(m.start(), sent_start, end):
            return -1
        if core == "." and not m.group(2):
            dot = m.start()
            if self._is_enumerator(dot, sent_start) or self._is_abbreviation(dot):
                return -1
        return stop

    def _inside_brackets(self, at: int, sent_start: int, end: int) -> bool:
        """Tell whether ``at`` sits inside brackets opened in this sentence and closed soon after on its line.

        A name or a reference in brackets keeps its "!", "?" or "." inside the sentence: "（包括TOKIO及Hey! Say!
        JUMP）出版…", "(Pres. Proclamation No. 347)". Brackets left open, or closed only far off or on another
        line, end nothing here: an emoticon's "(" or a list's "a)" do not hold a sentence together.
        """
        text = self.text
        opened = max(text.rfind(ch, max(sent_start, at - _BRACKET_SPAN), at) for ch in _OPENING)
        if opened < 0 or any(text.find(ch, opened, at) >= 0 for ch in _CLOSING):
            return False  # the innermost bracket before it is closed already (an outer one is not looked for)
        limit = min(end, at + _BRACKET_SPAN)
        line_end = text.find("\n", at, limit)
        if line_end >= 0:
            limit = line_end
        return any(text.find(ch, at, limit) >= 0 for ch in _CLOSING)

    def _is_enumerator(self, dot: int, sent_start: int) -> bool:
        """Tell whether the period at ``dot`` closes an inline item number.

        "1. Open it." or "Steps: 2. Close it." number an item rather than end a
        sentence; "He scored 12. Then ..." does not qualify because the number
        neither opens the sentence nor follows a colon.
        """
        text = self.text
        i = dot
        while i > sent_start and dot - i < 3 and text[i - 1].isalnum():
            i -= 1
        if i == dot or _ENUMERATOR.fullmatch(text, i, dot) is None:
            return False
        if i == sent_start:
            return True
        if i - 1 < sent_start or not text[i - 1].isspace():
            return False
        before = _LAST_NONSPACE.match(text, max(sent_start, i - 16), i)
        return before is not None and before.group(1) in ":："

    def _is_abbreviation(self, dot: int) -> bool:
        """Tell whether the word ending at the period ``dot`` is an abbreviation."""
        text = self.text
        # Only look back a bounded distance so the check stays O(1).
        lo = max(0, dot - 32)
        i = dot
        while i > lo and text[i - 1] in _WORD_CHARS:
            i -= 1
        if i > 0 and (i == lo or (text[i - 1].isascii() and text[i - 1].isalnum())):
            # Only the tail of a longer word ("1st", a 40-letter token): not an
            # abbreviation. CJK glued in front ("他是Dr.") does not count.
            return False
        token = text[i:dot].lstrip(".")
        if not token:
            # A standalone " . " (tokenised text) is a real terminator.
            return False
        if len(token) == 1 and "A" <= token <= "Z":
            return True  # an initial: "J. K. Rowling"
        lower = token.lower()
        if lower in _ABBREVIATIONS or (token[0].isupper() and lower in _ABBREVIATIONS_CAPITALISED):
            return True
        # Dotted initialisms: U.S., e.g., i.e., a.m., p.m.
        return _INITIALISM.fullmatch(token) is not None


def _trim(text: str, s: int, e: int) -> tuple[int, int]:
    """Shrink ``[s, e)`` so it neither starts nor ends with whitespace."""
    while s < e and text[s].isspace():
        s += 1
    while e > s and text[e - 1].isspace():
        e -= 1
    return s, e


def _is_cjk(ch: str) -> bool:
    """Tell whether ``ch`` is a CJK ideograph, kana, hangul or CJK punctuation."""
    o = ord(ch)
    return (
        0x2E80 <= o <= 0x9FFF
        or 0xAC00 <= o <= 0xD7AF
        or 0xF900 <= o <= 0xFAFF
        or 0xFF00 <= o <= 0xFFEF
        or 0x20000 <= o <= 0x3134F
    )
