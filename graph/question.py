"""A question as the workflow takes it: control characters removed, cut to a bounded length.

Every way in passes here: :func:`graph.api.ask` / ``stream_ask`` and ``selfcrag
chat`` before the run (:func:`prepare_question`), the first node
(``decide_retrieval``) for ``graph.invoke`` / ``graph.stream`` and LangGraph
Studio, and ``selfcrag search``, ``bench`` and ``eval`` before they search.
Cleaning is idempotent, so a question cleaned by the API passes the node
unchanged. Among what it removes are lone surrogates: the undecodable bytes of
a command-line argument (Python's surrogateescape) or a ``\udcff`` in JSON,
which the embedder's tokenizer cannot encode.

The length is capped because a question is a search query and a prompt, not
a document: 100,000 pasted characters would blow the chat model's context and
be sent again in every prompt of the run, and the embedder reads only its
first 512 tokens anyway (a 1,000-character question already takes it about
half a second). 1,000 characters leave room for a question with a pasted
paragraph of context.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from selfcrag.errors import UserError

MAX_QUESTION_CHARS = 1000
"""Characters of a question kept; the rest is cut, and the answer's notes say so."""

# A cut that lands within this many characters of a space backs off to it, so no word is split.
_WORD_BACKOFF = 100
# Bidirectional overrides and isolates (which can make text read differently than it is), and the BOM.
_INVISIBLE = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\ufeff")


@dataclass(frozen=True)
class CleanQuestion:
    """A question after cleaning, and what cleaning did.

    Attributes:
        text: The question to answer.
        original_chars: Length of the question as given, after removing control characters.
        removed: Control and invisible formatting characters removed.
    """

    text: str
    original_chars: int
    removed: int = 0

    @property
    def cut(self) -> bool:
        """True when the question was longer than :data:`MAX_QUESTION_CHARS` and was cut."""
        return len(self.text) < self.original_chars


def _dropped(char: str) -> bool:
    """Control characters (tabs and line breaks excepted), lone surrogates, bidi overrides, BOM."""
    if char in "\t\n":
        return False
    return unicodedata.category(char) in ("Cc", "Cs") or char in _INVISIBLE


def clean_question(raw: object, max_chars: int = MAX_QUESTION_CHARS) -> CleanQuestion:
    """Make a question safe to search and to quote in prompts.

    Control characters are removed (tabs become spaces, blank lines collapse
    into one line break), the text is NFC-normalised and stripped, and a
    question longer than ``max_chars`` is cut at a word boundary near the
    limit.

    Args:
        raw: The question as given (None counts as empty; other values as their text).
        max_chars: Characters kept at most.

    Returns:
        The cleaned question.
    """
    text = "" if raw is None else raw if isinstance(raw, str) else str(raw)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    kept = [c for c in text if not _dropped(c)]
    removed = len(text) - len(kept)
    text = unicodedata.normalize("NFC", "".join(kept))
    text = re.sub(r"[ \t]*\n[ \t\n]*", "\n", text).replace("\t", " ").strip()
    original = len(text)
    if original > max_chars:
        cut = text[:max_chars]
        space = cut.rfind(" ", max_chars - _WORD_BACKOFF)
        text = (cut[:space] if space > 0 else cut).rstrip()
    return CleanQuestion(text=text, original_chars=original, removed=removed)


def prepare_question(question: object) -> CleanQuestion:
    """Clean a question for a run or a search, refusing one with nothing left to ask.

    Args:
        question: The question as given.

    Returns:
        The cleaned question (control characters removed, cut to ``MAX_QUESTION_CHARS``).

    Raises:
        UserError: The question is empty, blank, or only control characters.
    """
    cleaned = clean_question(question)
    if not cleaned.text:
        raise UserError("the question is empty" + (" once control characters are removed" if cleaned.removed else ""))
    return cleaned
