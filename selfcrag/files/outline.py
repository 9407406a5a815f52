"""Write a parsed document as the Markdown the splitter reads its structure from.

reStructuredText and HTML are parsed by their own maintained parsers; what
comes out of either is written here in one shape: ``#`` headings (so every
sentence gets its heading path, and the first level-1 heading is the title),
paragraphs and list items on one line each, table rows as ``| a | b |`` and
code in fences. The splitter then treats these documents exactly as it treats
a Markdown file.
"""

from __future__ import annotations

import re

from selfcrag.files.containers import ReadingBudget
from selfcrag.split.sentences import closes_fence, is_markdown_structure, join_wrapped_lines, opens_fence

__all__ = ["BLOCK_SEPARATOR", "MarkdownOutline", "plain_text", "style_heading_level"]

# A run of spaces, tabs and no-break spaces that is not one space already: one space each. A lone space is left
# alone, so a paragraph of 20 MB is not cut into a string between every two of its words to be joined again.
_SPACES = re.compile(r"[\t\u00a0][ \t\u00a0]*| [ \t\u00a0]+")
_BACKTICKS = re.compile(r"`+")
# A word processor's heading style: Word's "Heading 2" ("heading 2" in its RTF), WPS's "标题 2".
_HEADING_STYLE = re.compile(r"(?:heading|标题)\s*([1-9])", re.IGNORECASE)


BLOCK_SEPARATOR = "\n\n"
"""What :meth:`MarkdownOutline.text` joins the blocks with."""


class MarkdownOutline:
    """The blocks of one document, in order, written as Markdown, each charged to the document's budget.

    Args:
        budget: What reading the document may make: each block written is charged its characters (and the
            blank line after it) and one piece, so a reader stops once the document is past its bounds.
    """

    def __init__(self, budget: ReadingBudget) -> None:
        self.blocks: list[str] = []
        self.budget = budget

    def heading(self, level: int, text: str) -> None:
        """Add a heading; levels past Markdown's six are written as level 6.

        Args:
            level: 1 for the document's title, 2 for its sections, and so on.
            text: The heading's text (wrapped lines are joined).
        """
        title = _one_line(text)
        if title:
            self._add(f"{'#' * min(max(level, 1), 6)} {title}")

    def paragraph(self, text: str) -> None:
        """Add a paragraph, its wrapped lines joined into one (read as text even when it starts with ``#``)."""
        line = _one_line(text)
        if line:
            self._add(_as_text(line))

    def lines(self, text: str) -> None:
        """Add text whose lines stay as they are (a PDF page), none of them read as a heading, fence or table.

        Args:
            text: Lines of plain text; a ``# comment`` line of a code example stays a line of text.
        """
        block = "\n".join(_as_text(line) for line in text.strip("\n").split("\n"))
        if block.strip():
            self._add(block)

    def markdown(self, text: str) -> None:
        """Add a block that is Markdown already (a notebook's Markdown cell): its headings are headings."""
        if text.strip():
            self._add(text.strip("\n"))

    def item(self, text: str) -> None:
        """Add a list item (``- text``), so the splitter starts a unit at it."""
        line = _one_line(text)
        if line:
            self._add(f"- {line}")

    def table(self, rows: list[list[str]]) -> None:
        """Add a table, one ``| a | b |`` line per row; a ``|`` inside a cell is escaped."""
        lines = []
        for row in rows:
            cells = [_one_line(cell).replace("|", "\\|") for cell in row]
            if any(cells):
                lines.append("| " + " | ".join(cells) + " |")
        if lines:
            self._add("\n".join(lines))

    def code(self, text: str) -> None:
        """Add a code block in a fence longer than any run of backticks inside it, so it stays whole."""
        body = text.strip("\n")
        if body.strip():
            longest = max((len(run) for run in _BACKTICKS.findall(body)), default=0)
            fence = "`" * max(3, longest + 1)
            self._add(f"{fence}\n{body}\n{fence}")

    def text(self) -> str:
        """The document: its blocks separated by blank lines (empty when it had no text)."""
        return BLOCK_SEPARATOR.join(self.blocks)

    def _add(self, block: str) -> None:
        """Write a block, once the budget has it."""
        self.budget.charge(len(block) + len(BLOCK_SEPARATOR), pieces=1)
        self.blocks.append(block)


def style_heading_level(name: str) -> int | None:
    """What a paragraph style's name makes its paragraphs: a heading of some level, the title, or neither.

    Args:
        name: The style's name, as a word processor writes it (``Heading 2``, ``heading 2``, ``标题 2``, ``Title``).

    Returns:
        The heading level (1 to 9), 0 for the document's title, None for any other style.
    """
    name = name.strip()
    if name.lower() == "title":
        return 0
    heading = _HEADING_STYLE.fullmatch(name)
    return int(heading.group(1)) if heading else None


def plain_text(text: str) -> str:
    """A plain-text file's text as the splitter must read it: a line starting with ``#`` is a line of text.

    In Markdown ``# Title`` is a heading; in a text file it is a comment, a shell prompt or a
    number sign (issue 34: a ``# ...`` line of tar's NEWS became its title and every citation's
    section). Such a line is indented past Markdown's three spaces, outside code fences. The
    headings plain text does have are kept: a title underlined with ``===``, a line of capitals,
    a numbered title. A file that opens with a ``# Title`` line standing alone is Markdown saved
    as text (notes; the documents of the evaluation sets, ``docs/<id>.txt``, are written so) and
    is read as Markdown.

    Args:
        text: The decoded file, with LF line endings.

    Returns:
        The text, its lines unchanged but for the indentation of those that would read as ``#`` headings.
    """
    lines = text.split("\n")
    first = next((number for number, line in enumerate(lines) if line.strip()), len(lines))
    following = lines[first + 1] if first + 1 < len(lines) else ""
    if first < len(lines) and _is_title_heading(lines[first]) and not following.strip():
        return text  # Markdown saved as text
    fence: str | None = None
    for number, line in enumerate(lines):
        if fence is not None:
            fence = None if closes_fence(line, fence) else fence
        elif (fence := opens_fence(line)) is None and _is_hash_heading(line):
            lines[number] = f"    {line}"
    return "\n".join(lines)


def _is_title_heading(line: str) -> bool:
    """Tell whether a line is a level-1 ``# Title`` heading with a title."""
    return line.startswith("# ") and _is_hash_heading(line) and bool(line[2:].strip(" #"))


def _is_hash_heading(line: str) -> bool:
    """Tell whether Markdown reads a line as an ATX heading (``# Title``): structure that starts with ``#``."""
    return line.lstrip(" \t").startswith("#") and is_markdown_structure(line)


def _as_text(line: str) -> str:
    """The line indented past Markdown's three spaces when the splitter would read it as structure, else itself.

    The indentation is no part of any sentence (sentences are trimmed), so what is quoted is the line as written.
    """
    return f"    {line}" if is_markdown_structure(line) else line


def _one_line(text: str) -> str:
    """Join wrapped lines (no space between two CJK characters) and collapse runs of spaces."""
    return _SPACES.sub(" ", join_wrapped_lines(text.strip())).strip()
