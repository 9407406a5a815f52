"""Removing reasoning blocks (``<think>...</think>``) that some models put in their replies."""

from __future__ import annotations

import re

OPEN, CLOSE = "<think>", "</think>"
_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL)


def strip_think(text: str) -> str:
    """Remove reasoning from a complete reply.

    Handles closed blocks, a reply whose opening tag the server dropped (only
    ``</think>`` left) and a reply cut off inside a block.

    Args:
        text: The model's reply.

    Returns:
        The reply without reasoning, stripped of surrounding whitespace.
    """
    text = _BLOCK.sub("", text)
    if CLOSE in text:
        text = text.rsplit(CLOSE, 1)[1]
    if OPEN in text:
        text = text.split(OPEN, 1)[0]
    return text.strip()


class ThinkFilter:
    """Removes reasoning blocks from a reply arriving in pieces (streamed tokens).

    Text that might be the start of a tag is held back until the next piece
    tells; :meth:`flush` releases it at the end.
    """

    def __init__(self) -> None:
        self._pending = ""
        self._inside = False

    def feed(self, piece: str) -> str:
        """Take the next piece of the reply.

        Args:
            piece: New text.

        Returns:
            The visible text that can be shown now.
        """
        self._pending += piece
        shown: list[str] = []
        while self._pending:
            tag = CLOSE if self._inside else OPEN
            at = self._pending.find(tag)
            if at >= 0:
                if not self._inside:
                    shown.append(self._pending[:at])
                self._pending = self._pending[at + len(tag) :]
                self._inside = not self._inside
                continue
            keep = _partial_tag_suffix(self._pending, tag)
            if not self._inside:
                shown.append(self._pending[: len(self._pending) - keep])
            self._pending = self._pending[len(self._pending) - keep :]
            break
        return "".join(shown)

    def flush(self) -> str:
        """Return held-back text at the end of the reply (none if inside a block)."""
        rest, self._pending = ("" if self._inside else self._pending), ""
        return rest


def _partial_tag_suffix(text: str, tag: str) -> int:
    """Length of the longest end of ``text`` that is a beginning of ``tag``."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if tag.startswith(text[-size:]):
            return size
    return 0
