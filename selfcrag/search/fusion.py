"""Merging rankings: Reciprocal Rank Fusion, and weighted min-max score fusion."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
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
