r"""Text from documents, file names and the chat model, made safe to write to a terminal.

A document, a file name or a model's reply can hold escape sequences:
``\x1b]0;...`` retitles the window, ``\x1b[8m`` hides the text that follows,
others move the cursor or rewrite what was printed. Every such text passes
through :func:`visible` (or :func:`one_line` for a field on one line) before
it is printed: control characters are shown as visible symbols (ESC as
``␛``), never sent raw. JSON output needs none of this: ``json.dumps``
escapes them.
"""

from __future__ import annotations

import re

# C0 controls other than tab and line feed, DEL, C1 controls, bidirectional overrides and isolates (which
# make text read differently than it is), and lone surrogates (a file name's undecodable bytes).
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_LINE_BREAKS = re.compile("[\n\t]")


def _shown(match: re.Match[str]) -> str:
    char = match.group(0)
    code = ord(char)
    if code < 0x20:
        return chr(0x2400 + code)  # the Control Pictures block: ␛ for ESC, ␇ for BEL
    if code == 0x7F:
        return "\u2421"  # ␡
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code - 0xDC00:02x}"  # an undecodable byte of a file name, as Python's surrogateescape keeps it
    return f"\\u{code:04x}"


def visible(text: object) -> str:
    """Show control characters of a text as visible symbols; line breaks and tabs stay.

    Args:
        text: Untrusted text (or anything, shown as its ``str``).

    Returns:
        The text, with no character a terminal would act on.
    """
    return _UNSAFE.sub(_shown, str(text))


def one_line(text: object) -> str:
    """Like :func:`visible`, and a line break or tab is shown too, so the text stays on one line.

    Args:
        text: A file name, a section heading, a question.

    Returns:
        The text on one line (a line break shown as ``␤``).
    """
    return _LINE_BREAKS.sub(lambda m: "\u2424" if m.group(0) == "\n" else " ", visible(text))
