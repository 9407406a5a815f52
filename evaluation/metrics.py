"""Retrieval metrics as defined in shared/eval/README.md."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from evaluation.sets import Question
from retrieval.contexts import RetrievedContext


def supports(context: RetrievedContext, question: Question) -> bool:
    """Tell whether a context supports a question.

    A context supports it when it comes from an evidence document (the file's
    stem is the ``doc_id``) and contains one of that evidence's strings.

    Args:
        context: A retrieved context.
        question: The question with its gold evidence.

    Returns:
        True when some evidence is inside the context.
    """
    stem = Path(context.source).stem
    return any(
        evidence.doc_id == stem and any(s in context.text for s in evidence.contains)
        for evidence in question.evidence
    )


def found_rank(contexts: Sequence[RetrievedContext], question: Question, depth: int = 5) -> int | None:
    """Rank (from 1) of the first supporting context within ``depth``, or None."""
    for rank, context in enumerate(contexts[:depth], 1):
        if supports(context, question):
            return rank
    return None


@dataclass
class RetrievalScores:
    """Aggregated retrieval metrics over answerable questions."""

    n: int
    hit_at_1: float
    hit_at_5: float
    mrr_at_5: float
    ctx_chars_at_5: float
    p50_ms: float
    p95_ms: float


def aggregate(ranks: Sequence[int | None], chars: Sequence[int], latencies_ms: Sequence[float]) -> RetrievalScores:
    """Turn per-question ranks, context sizes and latencies into the set's metrics.

    Args:
        ranks: Rank found per question (None when not within 5).
        chars: Total characters of the top 5 contexts per question.
        latencies_ms: Search time per question.

    Returns:
        hit@1, hit@5, mrr@5, ctx_chars@5 and latency percentiles.
    """
    n = len(ranks)
    if n == 0:
        return RetrievalScores(0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    return RetrievalScores(
        n=n,
        hit_at_1=sum(1 for r in ranks if r == 1) / n,
        hit_at_5=sum(1 for r in ranks if r is not None and r <= 5) / n,
        mrr_at_5=sum(1.0 / r for r in ranks if r is not None and r <= 5) / n,
        ctx_chars_at_5=sum(chars) / n,
        p50_ms=statistics.median(latencies_ms),
        p95_ms=percentile(latencies_ms, 95),
    )


def percentile(values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile of a non-empty sequence."""
    ordered = sorted(values)
    index = max(0, min(len(ordered) - 1, round(pct / 100 * len(ordered) + 0.5) - 1))
    return ordered[index]
