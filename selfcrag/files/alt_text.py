"""A picture's alternative text, as the readers of documents with pictures write it.

A picture stands in a document with the words its author gave it for readers who cannot see it: Word's and
LibreOffice's "Alt Text" (a title and a description), HTML's ``alt``, reStructuredText's ``:alt:``. Those words are
the author's, about the picture, so they are read as a line where the picture stands. What a tool wrote there on
its own is not: an empty text, the picture's file name (``IMG_0042.jpg``), or a generic name with a number
(``Picture 3``, ``Image1``, ``Text Box 2``), which every picture of a document has alike.
"""

from __future__ import annotations

import re

__all__ = ["alt_text_lines"]

# A file name or path, as tools write it when the author wrote nothing: ``photo.png``, ``media/image1.jpeg``.
_FILE_NAME = re.compile(
    r"[^\s]*\.(?:png|jpe?g|gif|bmp|tiff?|webp|svg|emf|wmf|ico|heic|avif)",
    re.IGNORECASE,
)
# A shape's generic name, numbered: what Word, LibreOffice and PowerPoint call a picture until someone names it.
_GENERIC = re.compile(
    r"(?:image|picture|pic|img|photo|graphic|graphics|figure|shape|object|drawing|text ?box|frame|图片|图像)"
    r"[\s_-]*\d*",
    re.IGNORECASE,
)


def alt_text_lines(*texts: str | None) -> list[str]:
    """The lines a picture's alternative texts are written as: each meaningful one once, in the order given.

    Args:
        texts: The picture's texts, as its file gives them (a title, then a description; an ``alt``).

    Returns:
        Each text with its whitespace collapsed, left out when empty, a file name, a generic numbered name, or
        the same as one before it.
    """
    lines: list[str] = []
    for text in texts:
        line = " ".join((text or "").split())
        if line and line not in lines and not _FILE_NAME.fullmatch(line) and not _GENERIC.fullmatch(line):
            lines.append(line)
    return lines
