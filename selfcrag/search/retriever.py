"""The retrieval entry point: a question in, ranked contexts out."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

import numpy as np

from selfcrag.errors import NoIndexError, UserError
from selfcrag.index.embed import Embedder, load_embedder
from selfcrag.index.ingest import collection_name
from selfcrag.index.snapshot import SNAPSHOT_FILE, IndexSnapshot
from selfcrag.index.tokenize import tokenize
from selfcrag.index.vectors import VectorStore
from selfcrag.search.contexts import RetrievedContext, SentenceHit
from selfcrag.search.fusion import reciprocal_rank_fusion, weighted_score_fusion
from selfcrag.search.windows import expand_windows
from selfcrag.settings import Settings


@dataclass(frozen=True, kw_only=True)
class RetrievalConfig:
    """Knobs of one search, derived from the run's context (``Context.search_config``).

    ``top_k``, ``window`` and ``rrf_k`` are the context's knobs; the others
    are fixed choices made on the dev sets (see the README), varied only by
    the evaluation's ablations.

    Attributes:
        top_k: Contexts returned.
        mode: ``hybrid`` (dense and BM25 fused), ``dense`` or ``bm25``.
        fusion: ``rrf`` (Reciprocal Rank Fusion) or ``weighted`` (min-max
            normalised scores mixed by weight).
        candidates: Sentences each retriever ranks before fusion.
        rrf_k: The RRF constant.
        dense_weight: Weight of the dense ranking (RRF) or its share (weighted).
        bm25_weight: Weight of the BM25 ranking (RRF) or its share (weighted).
        window: Sentences added on each side of a hit.
        max_context_chars: Cap on a merged context.
        section_ratio: Coverage of a short section above which the whole
            section is returned.
    """

    top_k: int
    window: int
    rrf_k: int
    mode: Literal["hybrid", "dense", "bm25"] = "hybrid"
    fusion: Literal["rrf", "weighted"] = "rrf"
    candidates: int = 50
    dense_weight: float = 1.0
    bm25_weight: float = 1.0
    max_context_chars: int = 600
    section_ratio: float = 0.6

    def with_(self, **changes: object) -> RetrievalConfig:
        """Return a copy with some fields changed."""
        return replace(self, **changes)  # type: ignore[arg-type]


@dataclass
class SearchResult:
    """Contexts and the time each stage took.

    Attributes:
        query: The query searched.
        contexts: Best first.
        timings_ms: Milliseconds per stage (embed, dense, bm25, fuse, expand).
    """

    query: str
    contexts: list[RetrievedContext]
    timings_ms: dict[str, float] = field(default_factory=dict)


class Retriever:
    """Searches the committed index of a data directory.

    Opening it loads the snapshot and the embedder and, in Qdrant local mode,
    takes the folder's lock until :meth:`close`.

    Args:
        settings: Data directory and services.
        config: Default search configuration.
    """

    def __init__(self, settings: Settings, config: RetrievalConfig) -> None:
        self.settings = settings
        self.config = config
        self.snapshot = self._load_snapshot()
        self.embedder: Embedder = load_embedder(self.snapshot.embedder, settings.openai_api_key,
                                                settings.embedding_base_url)
        if collection_name(settings, self.embedder) != self.snapshot.collection:
            raise UserError(
                f"the index in {settings.data_dir} was built with embedding model {self.snapshot.embedder!r}"
            )
        self.store = VectorStore(settings.data_dir, settings.qdrant_url, settings.qdrant_api_key)

    def _snapshot_path(self) -> Path:
        return self.settings.data_dir / SNAPSHOT_FILE

    def _load_snapshot(self) -> IndexSnapshot:
        snapshot = IndexSnapshot.load(self.settings.data_dir)
        if snapshot is None or not snapshot.documents:
            raise NoIndexError(
                f"nothing is indexed in {self.settings.data_dir} yet: run `selfcrag ingest PATH` first"
            )
        self._snapshot_mtime = self._snapshot_path().stat().st_mtime_ns
        return snapshot

    def _refresh(self) -> None:
        # Another process may have committed an ingest (server mode): pick it up.
        path = self._snapshot_path()
        if path.exists() and path.stat().st_mtime_ns != self._snapshot_mtime:
            self.snapshot = self._load_snapshot()

    def search(self, query: str, config: RetrievalConfig | None = None) -> SearchResult:
        """Retrieve the best contexts for a query.

        Args:
            query: The question or search words.
            config: Overrides the retriever's default configuration.

        Returns:
            The contexts, best first, with per-stage timings.
        """
        config = config or self.config
        self._refresh()
        timings: dict[str, float] = {}
        clock = time.perf_counter()

        def lap(stage: str) -> None:
            nonlocal clock
            now = time.perf_counter()
            timings[stage] = (now - clock) * 1000
            clock = now

        dense: list[tuple[int, float]] = []
        if config.mode in ("hybrid", "dense"):
            vector = self.embedder.embed_question(query)
            lap("embed")
            rows = self.snapshot.row_of_point
            # Vectors of uncommitted or superseded versions may exist after a
            # killed ingest: only ids the committed snapshot names count.
            found = self.store.search(self.snapshot.collection, vector, config.candidates)
            dense = [(rows[pid], score) for pid, score in found if pid in rows]
            lap("dense")
        lexical: list[tuple[int, float]] = []
        if config.mode in ("hybrid", "bm25"):
            lexical = self.snapshot.bm25.top(tokenize(query), config.candidates)
            lap("bm25")

        hits = fuse(dense, lexical, config)
        lap("fuse")
        contexts = expand_windows(self.snapshot, hits, window=config.window,
                                  max_chars=config.max_context_chars, top_k=config.top_k,
                                  section_ratio=config.section_ratio)
        lap("expand")
        return SearchResult(query, contexts, timings)

    def sentence_vectors(self, rows: Sequence[int]) -> np.ndarray:
        """The stored vectors of sentences, embedding any that are missing.

        Args:
            rows: Rows of the snapshot's sentence table.

        Returns:
            An array of shape ``(len(rows), dim)``, in the order of ``rows``.
        """
        vectors = np.zeros((len(rows), self.embedder.dim), dtype=np.float32)
        if not rows:
            return vectors
        ids = [self.snapshot.point_ids[row] for row in rows]
        stored = self.store.vectors(self.snapshot.collection, ids)
        missing = [i for i, pid in enumerate(ids) if pid not in stored]
        for i, pid in enumerate(ids):
            if pid in stored:
                vectors[i] = stored[pid]
        if missing:
            texts = [self.snapshot.sentences[rows[i]].searchable(self.snapshot.sentence_text(rows[i])) for i in missing]
            vectors[missing] = self.embedder.embed_passages(texts)
        return vectors

    def close(self) -> None:
        """Release the vector store (and the local-mode folder lock)."""
        self.store.close()

    def __enter__(self) -> Retriever:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def fuse(dense: list[tuple[int, float]], lexical: list[tuple[int, float]],
         config: RetrievalConfig) -> list[SentenceHit]:
    """Fuse the dense and BM25 lists of sentence rows into ranked hits.

    Args:
        dense: ``(row, cosine)``, best first.
        lexical: ``(row, bm25)``, best first.
        config: Fusion method and weights.

    Returns:
        Hits, best first, each with both retrievers' ranks and scores.
    """
    dense_rank = {row: (rank, score) for rank, (row, score) in enumerate(dense, 1)}
    bm25_rank = {row: (rank, score) for rank, (row, score) in enumerate(lexical, 1)}
    if config.fusion == "rrf":
        fused = reciprocal_rank_fusion([[r for r, _ in dense], [r for r, _ in lexical]], k=config.rrf_k,
                                       weights=[config.dense_weight, config.bm25_weight])
    else:
        fused = weighted_score_fusion([dense, lexical], [config.dense_weight, config.bm25_weight])
    hits = []
    for row, score in fused:
        d = dense_rank.get(row)
        b = bm25_rank.get(row)
        hits.append(SentenceHit(row, score, d[0] if d else None, b[0] if b else None,
                                d[1] if d else None, b[1] if b else None))
    return hits
