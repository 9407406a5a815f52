"""Semantic boundaries: where a document changes topic, judged by how alike adjacent sentences are.

LlamaIndex's ``SemanticSplitterNodeParser`` breaks a document where the cosine
distance between adjacent sentences rises above a percentile of that
document's distances (:func:`semantic_groups` reproduces it, for the
``semantic-chunks`` baseline). selfcrag keeps the measurement and leaves the
cut to the search: the ingest stores, with each sentence, its similarity to
the sentence before it and where that similarity ranks among the document's
(:func:`similarity_ranks`), computed from the vectors it embeds anyway. A
window then stops before a sentence whose similarity is among the document's
lowest ``percentile`` per cent, rounded down (:func:`starts_topic`), so
choosing another percentile re-indexes nothing, and a new way of measuring
(:data:`BOUNDARY_VERSION`) re-derives the ranks from the stored vectors
without embedding again.

Rounding down keeps short documents whole: LlamaIndex's interpolated
percentile marks at least one boundary in any document of three sentences or
more. The percentiles measured are in docs/results.md ("Chunking strategies
side by side").

Pure functions over arrays: no I/O, no model.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# How similarities and ranks are measured; when it changes, the next ingest re-derives them for
# every document from its stored vectors (see selfcrag.ingest.points). 1: the cosine of a sentence
# and the one before it in its section, ranked within the document.
BOUNDARY_VERSION = 1


def adjacent_similarities(
    vectors: np.ndarray, starts: Sequence[bool] | None = None, *, buffer: int = 0
) -> list[float | None]:
    """The cosine similarity of each sentence with the one before it.

    Args:
        vectors: One row per sentence, in document order.
        starts: True where a sentence opens a unit (a section) that is never compared with what
            precedes it; None compares every pair.
        buffer: Sentences on each side averaged into each one's vector before comparing
            (LlamaIndex's ``buffer_size``); 0 compares the sentences themselves.

    Returns:
        One value per sentence: None for the first sentence and for those that open a unit.
    """
    count = len(vectors)
    if count == 0:
        return []
    rows = np.asarray(vectors, dtype=np.float32)
    rows = rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
    if buffer > 0:
        # Each sentence with its neighbours: a running sum over a window of 2 * buffer + 1 rows.
        padded = np.vstack([np.zeros((1, rows.shape[1]), dtype=np.float32), np.cumsum(rows, axis=0)])
        lo = np.clip(np.arange(count) - buffer, 0, count)
        hi = np.clip(np.arange(count) + buffer + 1, 0, count)
        rows = padded[hi] - padded[lo]
        rows = rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
    cosines = np.einsum("ij,ij->i", rows[1:], rows[:-1])
    result: list[float | None] = [None]
    for position in range(1, count):
        opens = starts is not None and starts[position]
        result.append(None if opens else round(float(cosines[position - 1]), 6))
    return result


def similarity_ranks(similarities: Sequence[float | None]) -> list[float | None]:
    """Where each similarity stands among a document's: the share of its pairs that are at most as similar.

    The ``k``-th least similar of ``n`` pairs (from 1) ranks ``k / n`` (ties go in document order),
    so the pairs ranked at most ``p / 100`` are the document's lowest ``p`` per cent, rounded down.

    Args:
        similarities: Per sentence, as :func:`adjacent_similarities` returns them.

    Returns:
        One rank in ``(0, 1]`` per compared sentence; None where the similarity is None.
    """
    compared = [(value, position) for position, value in enumerate(similarities) if value is not None]
    ranks: list[float | None] = [None] * len(similarities)
    for order, (_, position) in enumerate(sorted(compared), 1):
        ranks[position] = order / len(compared)
    return ranks


def starts_topic(rank: float | None, percentile: int) -> bool:
    """Whether a sentence opens a new topic: its similarity to the one before is among the document's lowest.

    Args:
        rank: The sentence's similarity rank (:func:`similarity_ranks`); None when it was not compared.
        percentile: Share of a document's adjacent pairs, in per cent (rounded down to whole pairs), that
            are boundaries; 0 marks none.

    Returns:
        True at a semantic boundary.
    """
    return rank is not None and rank <= percentile / 100


def semantic_groups(vectors: np.ndarray, percentile: int, *, buffer: int = 1) -> list[tuple[int, int]]:
    """Cut a document into runs of sentences where LlamaIndex's semantic splitter cuts it.

    Its rule: a boundary where the cosine distance of adjacent (buffered) sentences is above the
    ``100 - percentile``-th percentile of the document's distances, as ``numpy.percentile``
    interpolates it.

    Args:
        vectors: One row per sentence, in document order.
        percentile: LlamaIndex's default ``breakpoint_percentile_threshold=95`` (on distances) is 5 here.
        buffer: Neighbours averaged into each sentence before comparing (LlamaIndex's default: 1).

    Returns:
        ``(first, last)`` positions of each run, in order, covering every sentence.
    """
    similarities = adjacent_similarities(vectors, buffer=buffer)
    distances = [1 - s for s in similarities if s is not None]
    threshold = float(np.percentile(distances, 100 - percentile)) if distances else 0.0
    groups: list[tuple[int, int]] = []
    first = 0
    for position, similarity in enumerate(similarities):
        if similarity is not None and 1 - similarity > threshold:
            groups.append((first, position - 1))
            first = position
    if similarities:
        groups.append((first, len(similarities) - 1))
    return groups
