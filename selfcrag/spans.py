"""Spans of source text as the workflow keeps them: one family of JSON-ready types.

Every type here is a range of sentences of one document (:class:`Span`), or a
sentence of one (:class:`Strip`): what retrieval found (:class:`Passage`),
what refinement kept (:class:`KnowledgeItem`, numbered for the answer's
``[n]``), and what the answer cites (:class:`Citation`). They are plain
dicts, so a checkpointer can store them and LangGraph Studio can show them.
This module sits below the graph, the heuristics, the prompts and the
citation code, which all read and write these types.
"""

from __future__ import annotations

import hashlib
from typing import TypedDict


class Span(TypedDict):
    """Sentences ``first``..``last`` (positions in the document, from 0, inclusive) of one source."""

    source: str
    title: str
    section: list[str]
    first: int
    last: int


class Passage(Span):
    """A retrieved context.

    ``id`` is a hash of the text, so the same passage found by two searches is
    kept once; ``hit_positions`` are the sentences the search matched.
    """

    id: str
    doc_id: str
    text: str
    score: float
    dense_score: float | None
    bm25_score: float | None
    dense_rank: int | None
    bm25_rank: int | None
    hit_positions: list[int]
    query: str


class Strip(TypedDict):
    """One knowledge strip (a sentence) of a kept passage, with its relevance score.

    ``leans_on`` lists the positions of the sentences it needs to be
    understood (a list item's lead-in, a clause's continuation).
    """

    position: int
    kind: str
    text: str
    score: float
    leans_on: list[int]


class KnowledgeItem(Span):
    """Kept strips of one passage, recomposed in document order: what ``[n]`` cites."""

    n: int
    doc_id: str
    text: str
    score: float
    strips: list[Strip]


class Citation(Span):
    """A source of the answer: where it stands and the quoted text."""

    n: int
    quote: str


def passage_id(text: str) -> str:
    """Hash a passage's text: equal text, equal id.

    Args:
        text: The passage text.

    Returns:
        16 hex digits of its SHA-256.
    """
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
