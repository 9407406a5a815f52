"""Markdown as a reader sees it rendered: the HTML inside it gives its words, never its tags.

A README mixes HTML into Markdown: a centred ``<h1>`` banner, ``<abbr
title="…">SSH</abbr>``, ``<br>``, comments. Rendered, a reader sees the words;
quoted raw, an answer would show the tags. Outside code (fences and backtick
spans) comments are removed, an ``<h1>``-``<h6>`` block becomes a ``#`` heading,
and every other tag is removed, leaving its text. A link reference definition
(``[ci]: https://…``) shows nothing rendered: its line is left empty.
"""

from __future__ import annotations

import re

from selfcrag.split.sentences import closes_fence, opens_fence

__all__ = ["markdown_text"]

# An unclosed comment hides the rest of the document, as a renderer hides it.
_COMMENT = re.compile(r"<!--[\s\S]*?(?:-->|\Z)")
# A heading written in HTML; its text is bounded, so a page of unclosed <h1> stays linear to read.
_HTML_HEADING = re.compile(r"<h([1-6])\b[^<>]*>([\s\S]{0,2000}?)</h\1\s*>", re.IGNORECASE)
# A tag with a real name: "<http://…>" and "<me@example.org>" are links, not tags.
_TAG = re.compile(r"</?([A-Za-z][A-Za-z0-9-]*)(?:\s[^<>]*)?/?>")
# Tags that end a line of text: what stood either side of them is not one sentence.
_BREAKS = frozenset("br p div section article header footer table tr li ul ol dl dd dt hr blockquote details".split())
# A link reference definition (``[ci]: https://… "title"``): a renderer shows nothing of it, only links use it.
# ``[^1]: …`` is a footnote, which is shown.
_REFERENCE_DEFINITION = re.compile(
    r" {0,3}\[(?!\^)[^\[\]]+\]:[ \t]*<?\S+>?"  # [label]: destination
    r"(?:[ \t]+(?:\"[^\"]*\"|'[^']*'|\([^()]*\)))?[ \t]*"  # "title", 'title' or (title)
)
_BACKTICKS = re.compile(r"`+")
_SPACES = re.compile(r"\s+")


def markdown_text(source: str) -> str:
    """Remove the HTML and the link reference definitions from a Markdown document's text, outside its code.

    Args:
        source: The Markdown file's text.

    Returns:
        The text, with HTML comments removed, ``<h2>Usage</h2>`` written as ``## Usage``
        and other tags removed (``<abbr title="Secure Shell">SSH</abbr>`` is ``SSH``); a
        ``<br>``, ``<p>`` or ``<div>`` tag ends a line; a ``[ci]: https://…`` line is left empty.
        Fenced code and `` `code` `` keep their text.
    """
    out: list[str] = []
    prose: list[str] = []
    fence: str | None = None
    for line in source.split("\n"):
        if fence is not None:
            out.append(line)
            if closes_fence(line, fence):
                fence = None
            continue
        fence = opens_fence(line)
        if fence is not None:
            out.extend(_without_html("\n".join(prose)).split("\n") if prose else [])
            prose.clear()
            out.append(line)
        else:
            prose.append(line)
    if prose:
        out.extend(_without_html("\n".join(prose)).split("\n"))
    return "\n".join(out)


def _without_html(text: str) -> str:
    """The HTML of prose (no fenced code in it) as the text a reader sees."""
    text = _COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    text = _HTML_HEADING.sub(_as_heading, text)
    # A reference definition's line stays, empty: line numbers stay the file's.
    return "\n".join("" if _REFERENCE_DEFINITION.fullmatch(line) else _without_tags(line) for line in text.split("\n"))


def _as_heading(m: re.Match[str]) -> str:
    words = _SPACES.sub(" ", _TAG.sub(" ", m.group(2))).strip()
    return f"\n\n{'#' * int(m.group(1))} {words}\n\n" if words else ""


def _without_tags(line: str) -> str:
    """One line of prose without its tags; code spans keep theirs."""
    if "<" not in line:
        return line
    pieces: list[str] = []
    position = 0
    for start, end in _code_spans(line):
        pieces.append(_TAG.sub(_tag_text, line[position:start]))
        pieces.append(line[start:end])
        position = end
    pieces.append(_TAG.sub(_tag_text, line[position:]))
    return "".join(pieces)


def _code_spans(line: str) -> list[tuple[int, int]]:
    """Where the code spans of a line are: a run of backticks up to the next run of the same length.

    A run that no run of its length follows is literal, as in CommonMark. Linear in the line's length.
    """
    runs = [(m.start(), m.end()) for m in _BACKTICKS.finditer(line)]
    following: list[int | None] = [None] * len(runs)
    last_of_length: dict[int, int] = {}
    for index in range(len(runs) - 1, -1, -1):
        length = runs[index][1] - runs[index][0]
        following[index] = last_of_length.get(length)
        last_of_length[length] = index
    spans: list[tuple[int, int]] = []
    index = 0
    while index < len(runs):
        closing = following[index]
        if closing is None:
            index += 1
            continue
        spans.append((runs[index][0], runs[closing][1]))
        index = closing + 1
    return spans


def _tag_text(m: re.Match[str]) -> str:
    return "\n" if m.group(1).lower() in _BREAKS else ""
