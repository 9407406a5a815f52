"""Hybrid sentence retrieval: dense and BM25 rankings, fused, expanded into windows."""

from retrieval.contexts import RetrievedContext, SentenceHit
from retrieval.fusion import reciprocal_rank_fusion, weighted_score_fusion
from retrieval.retriever import RetrievalConfig, Retriever, SearchResult
from retrieval.windows import expand_windows

__all__ = [
    "RetrievedContext",
    "RetrievalConfig",
    "Retriever",
    "SearchResult",
    "SentenceHit",
    "expand_windows",
    "reciprocal_rank_fusion",
    "weighted_score_fusion",
]
