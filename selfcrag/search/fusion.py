"""Merging rankings: Reciprocal Rank Fusion, and weighted min-max score fusion; BM25's weight in them."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import TypeVar

K = TypeVar("K", bound=Hashable)


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[K]],
    k: int,
    weights: Sequence[float] | None = None,
) -> list[tuple[K, float]]:
    """Fuse rankings by RRF: ``sum_i w_i / (k + rank_i)``, ranks from 1.

    Args:
        rankings: Each a list of ids, best first.
        k: The RRF constant (60 as in Cormack et al.; qdrant-client's default is 2).
        weights: One weight per ranking; 1.0 each when None.

    Returns:
        ``(id, score)`` pairs, best first; ties go to the id that appeared
        first in the earlier ranking, so the order is stable.
    """
    weights = weights or [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ValueError("one weight per ranking")
    scores: dict[K, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, key in enumerate(ranking, 1):
            scores[key] = scores.get(key, 0.0) + weight / (k + rank)
    # dicts keep insertion order, and sorted() is stable: ties keep first appearance.
    return sorted(scores.items(), key=lambda item: -item[1])


def lexical_weight(question: Iterable[str], best_hits: Sequence[set[str]], power: float) -> float:
    """How much BM25's ranking counts in the fusion: the share of the question's terms its best hit holds.

    RRF gives a list's first place the same weight whether it matched the whole question or one word of it. A
    paraphrased question ("If the electricity goes out, how long will it remember my preferences?") shares
    one stem with a document's title ("Electric Kettle") and none with its answer ("The backup battery keeps
    the settings for 48 hours during a power cut"): BM25 then ranks every sentence under that title, and each
    one that the dense ranking also holds outranks the dense ranking's first, which it alone holds. Weighing
    BM25 by how much of the question it found keeps its ranking where it matched the question's words, and lets
    the meaning decide where it did not.

    Args:
        question: The question's terms (:func:`~selfcrag.index.tokenize.tokenize`).
        best_hits: The terms of BM25's best hits, as they were indexed (heading path and sentence).
        power: The share is raised to this power (chosen on the calibration halves: docs/results.md).

    Returns:
        A factor in [0, 1] for BM25's weight; 1 when the question has no terms.
    """
    return float(matched_share(question, best_hits) ** power)


def matched_share(question: Iterable[str], best_hits: Sequence[set[str]]) -> float:
    """The share of the question's terms that the best of some hits holds.

    Args:
        question: The question's terms.
        best_hits: The terms of each hit.

    Returns:
        A share in [0, 1]; 1 when the question has no terms.
    """
    wanted = set(question)
    if not wanted:
        return 1.0
    return max((len(wanted & hit) / len(wanted) for hit in best_hits), default=0.0)


def crossed_weight(own: float, crossed: float, across: float) -> float:
    """How much the ranking by the question's words in another language counts: what it matched against the rest.

    A question crosses into the other language wherever the index holds one, so the crossed ranking is there
    whether the answer is in the question's language or not, and in a folder of both languages it finds the
    other language's documents on the same topic (the Chinese fan's manual for a question about the English
    kettle's). Two measures tell where the answer more likely is:

    * where the question's own words matched well (``own``) and their glosses less (``crossed``), it is in the
      question's language: on XQuAD with Chinese documents carrying English titles, a fixed weight lost 0.093
      of mrr@5 on Chinese questions, this one 0.002;
    * the nearest sentences in meaning (the dense ranking's first :data:`~selfcrag.search.retriever.LANGUAGE_HITS`)
      show which language the topic is written in (``across``): on the paraphrase set (English and Chinese
      manuals of similar appliances) a crossed ranking weighed by the first measure alone lost 0.126 of mrr@5,
      weighed by both nothing; on a set whose documents are all in the other language it changes nothing.

    Args:
        own: The share of the question's terms its own BM25's best hit holds (:func:`matched_share`).
        crossed: The share of the question's crossed words the crossed ranking's best hit holds
            (:meth:`~selfcrag.crossing.glosses.Crossing.matched`).
        across: The share of the nearest sentences in meaning whose documents are in the language crossed into.

    Returns:
        ``crossed² / (crossed² + own²) * across``, a factor in [0, 1]; 0 when the crossed ranking matched nothing.
    """
    if crossed <= 0.0:
        return 0.0
    return crossed**2 / (crossed**2 + own**2) * across


def weighted_score_fusion(
    scored: Sequence[Sequence[tuple[K, float]]],
    weights: Sequence[float],
) -> list[tuple[K, float]]:
    """Fuse scored lists by min-max normalising each and mixing by weight.

    An id missing from a list gets 0 from it.

    Args:
        scored: Each a list of ``(id, score)``, any order.
        weights: One weight per list (e.g. ``[alpha, 1 - alpha]``).

    Returns:
        ``(id, score)`` pairs, best first, ties in order of first appearance.
    """
    if len(weights) != len(scored):
        raise ValueError("one weight per list")
    fused: dict[K, float] = {}
    for items, weight in zip(scored, weights, strict=True):
        if not items:
            continue
        values = [score for _, score in items]
        low, high = min(values), max(values)
        span = high - low
        for key, score in items:
            normalised = (score - low) / span if span > 0 else 1.0
            fused[key] = fused.get(key, 0.0) + weight * normalised
    return sorted(fused.items(), key=lambda item: -item[1])
