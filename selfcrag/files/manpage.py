"""A manual page saved as text (``man userdel | col -b > userdel.txt``), read for its sections and title.

Such a file starts with the page's header line, ``USERDEL(8)   System Management
Commands   USERDEL(8)``, puts each section's name at the left margin (``NAME``,
``OPTIONS``, ``名称``, ``选项``) and indents its text. It is written as Markdown
here: the NAME section's line (``userdel - delete a user account and related
files``) is the title, each section a heading, an option with its indented
description one item, so a question about ``-r`` finds its sentence under
"OPTIONS" and the page is titled by what it is about, not by its header line.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from selfcrag.files.outline import MarkdownOutline
from selfcrag.split.sentences import join_wrapped_lines

if TYPE_CHECKING:
    from selfcrag.files.containers import ReadingBudget

__all__ = ["is_man_page", "man_page_to_markdown"]

# The header (and footer) line: the page's name and section at the left and at the right.
_HEADER = re.compile(r"^(?P<page>[\w.:+-]+)\((?P<section>\w+)\)\s.*\S\s+(?P=page)\((?P=section)\)\s*$")
_FOOTER = re.compile(r"\S\s{2,}.*\s(?P<page>[\w.:+-]+)\((?P<section>\w+)\)\s*$")
_NAME_SECTIONS = frozenset({"NAME", "名称", "名字", "NOM", "NOMBRE", "NAMN", "BEZEICHNUNG", "名前"})


def is_man_page(text: str) -> bool:
    """Tell whether a text file is a manual page: its first line is the page's header.

    Args:
        text: The decoded file.

    Returns:
        True for a first line such as ``USERDEL(8)  系统管理命令  USERDEL(8)``.
    """
    first = next((line for line in text.split("\n") if line.strip()), "")
    return _HEADER.match(first.strip()) is not None


def man_page_to_markdown(text: str, budget: ReadingBudget) -> str:
    """Write a manual page's text as Markdown: title, section headings, paragraphs and option items.

    Args:
        text: A text the :func:`is_man_page` test accepts.
        budget: What reading it may make, charged as it is written.

    Returns:
        ``# name - what it does`` (from the NAME section), then ``## SECTION`` and its blocks.

    Raises:
        UnreadableDocument: It is past its budget.
    """
    lines = text.split("\n")
    header = next(i for i, line in enumerate(lines) if line.strip())
    sections: list[tuple[str, list[str]]] = []
    for line in lines[header + 1 :]:
        if line.strip() and not line[0].isspace():
            if _FOOTER.search(line):
                continue  # the footer: the package, the date and the page again
            sections.append((line.strip(), []))
        elif sections:
            sections[-1][1].append(line)
    outline = MarkdownOutline(budget)
    title = next((_one_text(body) for name, body in sections if name.upper() in _NAME_SECTIONS), "")
    outline.heading(1, title or lines[header].split("(")[0])
    for name, body in sections:
        if name.upper() in _NAME_SECTIONS and title:
            continue
        outline.heading(2, name)
        for block in _blocks(body):
            _write_block(outline, block)
    return outline.text()


def _blocks(body: list[str]) -> list[list[str]]:
    """The blank-line-separated blocks of a section's lines."""
    blocks: list[list[str]] = [[]]
    for line in body:
        if line.strip():
            blocks[-1].append(line)
        elif blocks[-1]:
            blocks.append([])
    return [block for block in blocks if block]


def _write_block(outline: MarkdownOutline, block: list[str]) -> None:
    """A block whose first line is followed by deeper-indented lines is an option and its description."""
    indent = _indent(block[0])
    if len(block) > 1 and all(_indent(line) > indent for line in block[1:]):
        outline.item(f"{block[0].strip()}: {_one_text(block[1:])}")
    else:
        outline.paragraph(_one_text(block))


def _one_text(lines: list[str]) -> str:
    """Indented lines as one line of text (no space between two Chinese characters)."""
    return join_wrapped_lines("\n".join(line.strip() for line in lines if line.strip()))


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())
