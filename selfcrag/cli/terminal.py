r"""Text from documents, file names and the chat model, made safe to write to a terminal.

A document, a file name or a model's reply can hold escape sequences:
``\x1b]0;...`` retitles the window, ``\x1b[8m`` hides the text that follows,
others move the cursor or rewrite what was printed. Every such text passes
through :func:`visible` (or :func:`one_line` for a field on one line) before
it is printed: control characters are shown as visible symbols (ESC as
``␛``), never sent raw. JSON output is written by :func:`json_text`, which
escapes them (and bidirectional controls, which ``json.dumps`` leaves raw)
as ``\uXXXX``: a program reading it gets the text back as it was.
"""

from __future__ import annotations

import json
import re

# DEL, C1 controls, bidirectional embeddings, overrides and isolates (which make text read differently than it
# is), and lone surrogates (a file name's undecodable bytes): never written raw, to a terminal or in JSON.
_UNSAFE_ANYWHERE = "\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff"
# For a terminal, C0 controls other than tab and line feed too.
_UNSAFE = re.compile(f"[\x00-\x08\x0b-\x1f{_UNSAFE_ANYWHERE}]")
_LINE_BREAKS = re.compile("[\n\t]")
# In JSON (json.dumps escapes C0 controls itself), the bidirectional marks too, and the line and paragraph
# separators, which JavaScript and some editors take for line breaks.
_UNSAFE_IN_JSON = re.compile(f"[{_UNSAFE_ANYWHERE}\u061c\u200e\u200f\u2028\u2029]")


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


def json_text(value: object) -> str:
    r"""JSON for programs, as every command writes it: Unicode as it is, but no character a terminal acts on.

    Args:
        value: What to write (what ``json.dumps`` takes).

    Returns:
        The JSON text, on one line; a control character, bidirectional control or lone surrogate is written
        ``\uXXXX`` (inside a JSON string, as every such character is), so ``json.loads`` gives the text back.
    """
    text = json.dumps(value, ensure_ascii=False)
    return _UNSAFE_IN_JSON.sub(lambda match: f"\\u{ord(match.group(0)):04x}", text)
