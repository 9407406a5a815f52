"""BM25 over sentences: rank-bm25's statistics, scored through a sparse matrix.

rank-bm25 computes the corpus statistics (term frequencies, document lengths,
document frequencies). Two of its habits do not suit a sentence index, so this
module keeps its statistics and changes how they are used:

* BM25Okapi's IDF, ``log((N - n + 0.5) / (n + 0.5))``, is zero or negative for
  a term in half the sentences or more, so in a small knowledge base common
  topic words score nothing. :class:`LuceneBM25` uses Lucene's
  ``log(1 + (N - n + 0.5) / (n + 0.5))``, which is always positive.
* ``get_scores`` walks every sentence in Python for every query term. Here the
  per-term BM25 weights are precomputed into a sparse term-by-sentence matrix,
  so a query costs one sparse column sum over the sentences that contain its
  terms.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from rank_bm25 import BM25Okapi
from scipy import sparse


class LuceneBM25(BM25Okapi):
    """BM25Okapi with Lucene's always-positive IDF."""

    def _calc_idf(self, nd: dict[str, int]) -> None:
        for word, freq in nd.items():
            self.idf[word] = math.log(1.0 + (self.corpus_size - freq + 0.5) / (freq + 0.5))
        self.average_idf = sum(self.idf.values()) / max(len(self.idf), 1)


class SentenceBM25:
    """A BM25 index over tokenised sentences, scored by sparse matrix products.

    Args:
        corpus: One token list per sentence (from :func:`lexical.tokenize`).
        k1: Term-frequency saturation.
        b: Length normalisation.
    """

    def __init__(self, corpus: Sequence[Sequence[str]], k1: float = 1.2, b: float = 0.75) -> None:
        self.size = len(corpus)
        self.vocabulary: dict[str, int] = {}
        if self.size == 0:
            self.weights = sparse.csc_matrix((0, 0), dtype=np.float32)
            return
        # rank-bm25 skips nothing, but an empty sentence would make avgdl 0 on an
        # all-empty corpus; a placeholder token keeps the statistics defined.
        stats = LuceneBM25([list(tokens) or ["\x00"] for tokens in corpus], k1=k1, b=b)
        rows: list[int] = []
        cols: list[int] = []
        values: list[float] = []
        for row, (frequencies, length) in enumerate(zip(stats.doc_freqs, stats.doc_len, strict=True)):
            norm = k1 * (1.0 - b + b * length / stats.avgdl)
            for term, tf in frequencies.items():
                col = self.vocabulary.setdefault(term, len(self.vocabulary))
                rows.append(row)
                cols.append(col)
                values.append(stats.idf[term] * tf * (k1 + 1.0) / (tf + norm))
        self.weights = sparse.csc_matrix(
            (np.asarray(values, dtype=np.float32), (rows, cols)),
            shape=(self.size, len(self.vocabulary)),
        )

    def scores(self, query: Sequence[str]) -> np.ndarray:
        """Score every sentence against a tokenised query.

        Args:
            query: Query terms; a repeated term counts once per repetition,
                as in rank-bm25.

        Returns:
            A float32 array with one BM25 score per sentence.
        """
        columns = [self.vocabulary[t] for t in query if t in self.vocabulary]
        if not columns:
            return np.zeros(self.size, dtype=np.float32)
        picked = self.weights[:, columns]
        return np.asarray(picked.sum(axis=1), dtype=np.float32).ravel()

    def top(self, query: Sequence[str], n: int) -> list[tuple[int, float]]:
        """Return the best ``n`` sentences with a positive score.

        Args:
            query: Query terms.
            n: How many to return at most.

        Returns:
            ``(sentence_row, score)`` pairs, best first; ties keep row order.
        """
        scores = self.scores(query)
        candidates = np.flatnonzero(scores > 0)
        if candidates.size > n:
            part = np.argpartition(-scores[candidates], n - 1)[:n]
            candidates = candidates[part]
        order = np.lexsort((candidates, -scores[candidates]))
        return [(int(candidates[i]), float(scores[candidates[i]])) for i in order]
