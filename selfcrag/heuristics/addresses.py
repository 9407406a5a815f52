"""Addresses in text (e-mail, URLs, file paths): words that name a place, not what a sentence is about.

A NEWS line's ``<tgc@jupiterrise.com>`` comes as near "How many moons does Jupiter have?" as a sentence about
Jupiter would: the embedder and the tokenizer read the domain's words. The offline evaluator measures a sentence
holding an address with the addresses masked (issue 46).
"""

from __future__ import annotations

import re

# One pattern, tried left to right: an e-mail (with its angle brackets), a URL (with or without a scheme), a
# Unix path of two parts or more (``/usr/share/doc/x``, ``~/.config/x``) and a Windows path (``C:\x\y``). A
# lone ``/etc`` or ``and/or`` is left: too short to tell from a word.
ADDRESS = re.compile(
    r"<?(?:mailto:)?[\w.+-]+@[\w-]+(?:\.[\w-]+)+>?"
    r"|<?(?:(?:https?|ftp)://|www\.)[^\s<>\"']+?(?=[.,;:!?)\]>]*(?:\s|$))>?"
    r"|(?<![\w/.])(?:~|\.{1,2})?/[\w.+@-]+(?:/[\w.+@-]*)+"
    r"|(?<!\w)[A-Za-z]:\\(?:[\w.+@-]+\\?)*",
    re.IGNORECASE,
)


def mask_addresses(text: str) -> str:
    """Replace every address in a text by a space.

    Args:
        text: A sentence.

    Returns:
        The text without its e-mail addresses, URLs and file paths; the text itself when it holds none.
    """
    return ADDRESS.sub(" ", text)
