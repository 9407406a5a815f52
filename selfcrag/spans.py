"""Spans of source text as the workflow keeps them: one family of JSON-ready types.

Every type here is a range of sentences of one document (:class:`Span`), or a
sentence of one (:class:`SentenceHit`, :class:`Strip`): what retrieval found
(:class:`Passage`, with the sentences its search matched), what refinement
kept (:class:`KnowledgeItem`, numbered for the answer's ``[n]``), and what the
answer cites (:class:`Citation`). They are plain dicts, so a checkpointer can
store them, LangGraph Studio can show them and ``selfcrag search --json`` can
print them. This module sits below retrieval, the graph, the heuristics, the
prompts and the citation code, which all read and write these types.
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


class SentenceHit(TypedDict):
    """One sentence a search matched, with its fused score and each retriever's rank and score.

    Ranks count from 1; a rank and score are None when that retriever did not
    list the sentence. ``dense_score`` is a cosine similarity.
    """

    doc_id: str
    position: int
    score: float
    dense_rank: int | None
    bm25_rank: int | None
    dense_score: float | None
    bm25_score: float | None


class Passage(Span):
    """A retrieved passage: the windows around hit sentences, merged, exactly as the document has them.

    ``id`` is a hash of the text, so the same passage found by two searches is
    kept once. ``start``..``end`` is its character range in the document text.
    ``hits`` are the sentences the search matched, best first; ``score`` and
    the ranks and scores of each retriever are the best among them.
    ``query`` is the search that found it.
    """

    id: str
    doc_id: str
    start: int
    end: int
    text: str
    score: float
    dense_score: float | None
    bm25_score: float | None
    dense_rank: int | None
    bm25_rank: int | None
    hits: list[SentenceHit]
    query: str


class Strip(TypedDict):
    """One knowledge strip (a sentence) of a kept passage, with its relevance score.

    ``leans_on`` lists the positions of the sentences it needs to be
    understood (a list item's lead-in, a clause's continuation). ``dense`` is
    its meaning's closeness to the question, on the embedder's own scale (0:
    what an unrelated sentence scores, 1: a restatement), and ``coverage``
    the IDF-weighted share of the question's words it holds (with its title
    and headings): two of the signals of ``score``.
    """

    position: int
    kind: str
    text: str
    score: float
    dense: float
    coverage: float
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
