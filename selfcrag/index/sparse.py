"""BM25 as sparse vectors: the engine stores term weights and applies IDF itself.

A sentence becomes a sparse vector whose indices are stable term ids and whose
values are BM25's term-frequency saturation,
``tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / avg_length))``. The
collection's sparse vector has ``Modifier.IDF``, so Qdrant multiplies each
matching term by Lucene's ``log(1 + (N - n + 0.5) / (n + 0.5))`` at query time:
adding documents changes IDF without rewriting old points. A query's values
are its term counts, so a repeated query term counts once per repetition, as
in rank-bm25.

The weights do depend on the average sentence length at the time they were
written; :func:`reweight` recomputes them for a new average from the stored
weight and length alone, without re-tokenising.
"""

from __future__ import annotations

import zlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

K1 = 1.2
B = 0.75


def term_id(term: str) -> int:
    """The id of a term: CRC-32 of its UTF-8 bytes, the same in every process and version.

    Args:
        term: A token from :func:`selfcrag.index.tokenize.tokenize`.

    Returns:
        An unsigned 32-bit integer.
    """
    return zlib.crc32(term.encode("utf-8"))


@dataclass(frozen=True, slots=True)
class SparseVector:
    """Sorted term ids and their values."""

    indices: list[int]
    values: list[float]


def term_counts(tokens: Sequence[str]) -> dict[int, int]:
    """Count the terms of a token list by term id (colliding terms add up)."""
    counts: Counter[int] = Counter(term_id(t) for t in tokens)
    return dict(sorted(counts.items()))


def saturation(tf: float, length: int, avg_length: float, k1: float = K1, b: float = B) -> float:
    """BM25's term-frequency factor of one term in one sentence."""
    norm = k1 * (1.0 - b + b * length / avg_length) if avg_length > 0 else k1
    return tf * (k1 + 1.0) / (tf + norm)


def document_vector(tokens: Sequence[str], avg_length: float, k1: float = K1, b: float = B) -> SparseVector:
    """Encode a sentence's tokens for the index.

    Args:
        tokens: The sentence's terms.
        avg_length: Average number of terms per sentence in the collection.
        k1: Term-frequency saturation.
        b: Length normalisation.

    Returns:
        The sparse vector (empty for a sentence without terms).
    """
    counts = term_counts(tokens)
    length = len(tokens)
    return SparseVector(list(counts), [saturation(tf, length, avg_length, k1, b) for tf in counts.values()])


def query_vector(tokens: Sequence[str]) -> SparseVector:
    """Encode a query's tokens: each term id with its count."""
    counts = term_counts(tokens)
    return SparseVector(list(counts), [float(c) for c in counts.values()])


def weighted_query_vector(weights: Mapping[str, float]) -> SparseVector:
    """Encode a query of weighted terms (a question's words in another language): each term id with its weight.

    Args:
        weights: Term to weight (colliding terms add up).

    Returns:
        The sparse vector.
    """
    summed: dict[int, float] = {}
    for term, weight in weights.items():
        summed[term_id(term)] = summed.get(term_id(term), 0.0) + weight
    ordered = sorted(summed.items())
    return SparseVector([i for i, _ in ordered], [w for _, w in ordered])


def reweight(
    values: Sequence[float], length: int, old_avg: float, new_avg: float, k1: float = K1, b: float = B
) -> list[float]:
    """Recompute stored weights for a new average length.

    The term frequency is recovered from the stored weight ``w`` by inverting
    the saturation: ``tf = w * norm / (k1 + 1 - w)``.

    Args:
        values: Weights written with ``old_avg``.
        length: The sentence's number of terms.
        old_avg: Average length the weights were written with.
        new_avg: The average length now.
        k1: Term-frequency saturation.
        b: Length normalisation.

    Returns:
        The weights for ``new_avg``.
    """
    old_norm = k1 * (1.0 - b + b * length / old_avg) if old_avg > 0 else k1
    result = []
    for w in values:
        tf = round(w * old_norm / (k1 + 1.0 - w))
        result.append(saturation(max(tf, 1), length, new_avg, k1, b))
    return result
