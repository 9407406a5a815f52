"""The retrieval entry point: a question in, ranked passages out."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np

from selfcrag.crossing.glosses import CROSSED_LANGUAGES, Crossing, cross_question
from selfcrag.embed.embedders import Embedder, settings_embedder
from selfcrag.errors import UserError
from selfcrag.index.engine import open_reader
from selfcrag.index.points import PROPOSITION, StoredSentence, proposed_from
from selfcrag.index.reader import IndexReader
from selfcrag.index.sparse import query_vector, weighted_query_vector
from selfcrag.index.store import APPROXIMATE, EXACT, SearchLists
from selfcrag.index.tokenize import detect_language, tokenize
from selfcrag.search.fusion import crossed_weight, matched_share, reciprocal_rank_fusion, weighted_score_fusion
from selfcrag.search.windows import expand_windows
from selfcrag.settings import Settings
from selfcrag.spans import Passage, SentenceHit

# BM25 hits read to weigh BM25's ranking: how much of the question the best of them holds.
LEXICAL_HITS = 3
# Dense hits read to weigh the crossed ranking: how many of the nearest in meaning are in the language crossed into.
LANGUAGE_HITS = 10


@dataclass(frozen=True, kw_only=True)
class RetrievalConfig:
    """Knobs of one search, derived from the run's context (``Context.search_config``).

    ``top_k``, ``window`` and ``rrf_k`` are the context's knobs; the others
    are fixed choices made on the dev sets (see the README), varied only by
    the evaluation's ablations.

    Attributes:
        top_k: Passages returned.
        mode: ``hybrid`` (dense and BM25 fused), ``dense`` or ``bm25``.
        fusion: ``rrf`` (Reciprocal Rank Fusion) or ``weighted`` (min-max
            normalised scores mixed by weight).
        candidates: Sentences each retriever ranks before fusion.
        rrf_k: The RRF constant.
        dense_weight: Weight of the dense ranking (RRF) or its share (weighted).
        bm25_weight: Weight of the BM25 ranking (RRF) or its share (weighted).
        window: Sentences added on each side of a hit.
        max_context_chars: Cap on a merged passage.
        section_ratio: Coverage of a short section above which the whole
            section is returned.
        semantic_breaks: Semantic boundaries: windows also stop before a
            sentence whose similarity to the previous one is among its
            document's lowest this many per cent (0: at sections only).
        dense_search: ``approximate`` (HNSW over int8 copies, rescored) or
            ``exact`` (every vector scored), so quality figures can be
            measured without the approximation.
        lexical_power: BM25's weight is multiplied by the share of the
            question's terms that its best hits hold, to this power
            (:func:`~selfcrag.search.fusion.lexical_weight`; 0: plain RRF).
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
    semantic_breaks: int = 0
    dense_search: Literal["approximate", "exact"] = "approximate"
    lexical_power: float = 2.0
    cross_languages: bool = True
    crossed_weight: float = 1.0

    def with_(self, **changes: object) -> RetrievalConfig:
        """Return a copy with some fields changed."""
        return replace(self, **changes)  # type: ignore[arg-type]


@dataclass
class SearchResult:
    """Passages and the time each stage took.

    Attributes:
        query: The query searched.
        passages: Best first.
        timings_ms: Milliseconds per stage (embed, dense, bm25, fuse, expand).
    """

    query: str
    passages: list[Passage]
    timings_ms: dict[str, float] = field(default_factory=dict)


class Retriever:
    """Searches the committed index of a data directory.

    Opening it opens the index's current generation (Qdrant Edge in the data
    folder, or the server collection) and the embedder it was built with.
    Before each search it checks whether an ingest published a newer
    generation, and moves to it: an open chat sees new documents on its next
    question. Any number of processes can hold one open.

    Args:
        settings: Data directory and services.
        config: Default search configuration.
        embedder: Embeds questions instead of the model the index was built with (benchmarks: an
            index of stand-in vectors searched with a real model's query vectors, for its latency).
    """

    def __init__(self, settings: Settings, config: RetrievalConfig, *, embedder: Embedder | None = None) -> None:
        self.settings = settings
        self.config = config
        self.index: IndexReader = open_reader(settings)
        try:
            self.embedder: Embedder = embedder or settings_embedder(settings, self.index.embedder_name)
        except BaseException:
            self.index.close()
            raise

    def search(self, query: str, config: RetrievalConfig | None = None) -> SearchResult:
        """Retrieve the best passages for a query.

        Hybrid search is one request to the engine for the dense and BM25
        lists, fused here by Reciprocal Rank Fusion (:func:`fuse`), BM25's
        weight set by how much of the question its best hits hold (their
        sentences are fetched, a second request).

        Args:
            query: The question or search words.
            config: Overrides the retriever's default configuration.

        Returns:
            The passages, best first, with per-stage timings.
        """
        config = config or self.config
        if self.index.refresh() and self.index.embedder_name != self.embedder.name:
            raise UserError(
                f"the index in {self.settings.data_dir} was rebuilt with embedding model "
                f"{self.index.embedder_name!r}: start this program again"
            )
        timings: dict[str, float] = {}
        clock = time.perf_counter()

        def lap(stage: str) -> None:
            nonlocal clock
            now = time.perf_counter()
            timings[stage] = (now - clock) * 1000
            clock = now

        dense = None
        if config.mode in ("hybrid", "dense"):
            dense = self.embedder.embed_question(query)
            lap("embed")
        terms = tokenize(query)
        lexical = config.mode in ("hybrid", "bm25")
        sparse = query_vector(terms) if lexical else None
        crossing = self.crossing(query) if lexical and config.cross_languages else None
        lists = self.index.search(
            dense,
            sparse,
            candidates=config.candidates,
            dense_search=EXACT if config.dense_search == "exact" else APPROXIMATE,
            crossed=weighted_query_vector(crossing.weights()) if crossing is not None else None,
        )
        fetched: dict[str, StoredSentence] = {}
        if config.mode == "hybrid" and config.lexical_power:
            # Each BM25 ranking counts by how much of the question its best hits hold (see fusion.py).
            best = lists.sparse[:LEXICAL_HITS] + lists.crossed[:LEXICAL_HITS]
            fetched = self.index.by_point_ids(list(dict.fromkeys(pid for pid, _ in best)))
            held = {pid: set(tokenize(sentence.searchable())) for pid, sentence in fetched.items()}
            own = matched_share(terms, [held[pid] for pid, _ in lists.sparse[:LEXICAL_HITS] if pid in held])
            config = config.with_(bm25_weight=config.bm25_weight * own**config.lexical_power)
            if crossing is not None:
                found = [crossing.matched(held[pid]) for pid, _ in lists.crossed[:LEXICAL_HITS] if pid in held]
                nearest = self.index.by_point_ids([pid for pid, _ in lists.dense[:LANGUAGE_HITS]])
                fetched |= nearest
                across = self._share_in(crossing.language, nearest.values())
                weight = crossed_weight(own, max(found, default=0.0), across)
                config = config.with_(crossed_weight=config.crossed_weight * weight)
        lap("search")
        hits = self._resolve(fuse(lists, config), 2 * config.top_k, fetched)
        passages = expand_windows(
            self.index,
            hits,
            window=config.window,
            max_chars=config.max_context_chars,
            top_k=config.top_k,
            section_ratio=config.section_ratio,
            query=query,
            breaks=config.semantic_breaks,
        )
        lap("expand")
        return SearchResult(query, passages, timings)

    def crossing(self, question: str) -> Crossing | None:
        """The question's words carried into the other language the index holds, if it holds one.

        Args:
            question: The question.

        Returns:
            The crossing; None when every document is in the question's language (or nothing crossed). An index
            whose languages are unknown (written before they were kept) is crossed into the other language.
        """
        held = self.index.languages()
        into = sorted((held if held is not None else CROSSED_LANGUAGES) - {detect_language(question)})
        if not into or into[0] not in CROSSED_LANGUAGES:
            return None
        crossing = cross_question(question, into[0])
        return crossing if crossing.words else None

    def _share_in(self, language: str, sentences: Iterable[StoredSentence]) -> float:
        """The share of some sentences whose documents are in a language (in part: ``en,zh``)."""
        languages: dict[str, list[str]] = {}
        found = 0
        counted = 0
        for sentence in sentences:
            if sentence.doc_id not in languages:
                entry = self.index.document(sentence.doc_id)
                languages[sentence.doc_id] = entry.language.split(",") if entry is not None else []
            found += language in languages[sentence.doc_id]
            counted += 1
        return found / counted if counted else 0.0

    def _resolve(
        self, ranked: list[ScoredHit], batch: int, fetched: dict[str, StoredSentence]
    ) -> Iterator[SentenceHit]:
        """Turn ranked point ids into hits, fetching their sentences a few at a time as windows consume them.

        Sentences already ``fetched`` (BM25's best, read to weigh its ranking) are not fetched again.

        A proposition stands for the sentences it was drawn from: each becomes a hit with its
        scores, so the passage shown (and cited) is the document's own text.
        """
        for start in range(0, len(ranked), batch):
            chunk = ranked[start : start + batch]
            missing = [h.point_id for h in chunk if h.point_id not in fetched]
            found = {**fetched, **self.index.by_point_ids(missing)} if missing else fetched
            for h in chunk:
                sentence = found.get(h.point_id)
                if sentence is None:
                    continue
                doc_id, first, last = sentence.doc_id, sentence.position, sentence.position
                if sentence.kind == PROPOSITION and sentence.source_first is not None:
                    doc_id = proposed_from(sentence.doc_id) or doc_id
                    first, last = sentence.source_first, sentence.source_last or sentence.source_first
                for position in range(first, last + 1):
                    yield SentenceHit(
                        doc_id=doc_id,
                        position=position,
                        score=h.score,
                        dense_rank=h.dense_rank,
                        bm25_rank=h.bm25_rank,
                        dense_score=h.dense_score,
                        bm25_score=h.bm25_score,
                    )

    def sentence_vectors(self, keys: Sequence[tuple[str, int]]) -> np.ndarray:
        """The stored vectors of sentences, embedding any that are missing.

        Args:
            keys: ``(doc_id, position)`` of each sentence.

        Returns:
            An array of shape ``(len(keys), dim)``, in the order of ``keys``.
        """
        vectors = np.zeros((len(keys), self.embedder.dim), dtype=np.float32)
        if not keys:
            return vectors
        stored = self.index.dense_vectors(keys)
        missing = [i for i, key in enumerate(keys) if key not in stored]
        for i, key in enumerate(keys):
            if key in stored:
                vectors[i] = stored[key]
        if missing:
            found = self.index.sentences(keys[i] for i in missing)
            texts = [found[keys[i]].searchable() if keys[i] in found else "" for i in missing]
            vectors[missing] = self.embedder.embed_passages(texts)
        return vectors

    def close(self) -> None:
        """Release the index (an ingest may then delete the generation this one had open)."""
        self.index.close()

    def __enter__(self) -> Retriever:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(frozen=True, slots=True)
class ScoredHit:
    """A fused search result before its sentence is fetched."""

    point_id: str
    score: float
    dense_rank: int | None
    bm25_rank: int | None
    dense_score: float | None
    bm25_score: float | None


def fuse(lists: SearchLists, config: RetrievalConfig) -> list[ScoredHit]:
    """Rank the sentences of one search, with each retriever's rank and score.

    The engine returns each list, ties in a fixed order; they are fused here, so
    that one implementation of RRF serves every engine.

    Args:
        lists: The engine's answer.
        config: Fusion method and weights.

    Returns:
        Hits, best first.
    """
    dense_rank = {pid: (rank, score) for rank, (pid, score) in enumerate(lists.dense, 1)}
    # BM25's rank is its best in either language: the question's own words, or those carried into the other.
    bm25_rank: dict[str, tuple[int, float]] = {}
    for ranking in (lists.sparse, lists.crossed):
        for rank, (pid, score) in enumerate(ranking, 1):
            if pid not in bm25_rank or rank < bm25_rank[pid][0]:
                bm25_rank[pid] = (rank, score)
    scored = [lists.dense, lists.sparse, lists.crossed]
    weights = [config.dense_weight, config.bm25_weight, config.crossed_weight]
    if config.fusion == "rrf":
        fused = reciprocal_rank_fusion([[p for p, _ in ranking] for ranking in scored], k=config.rrf_k, weights=weights)
    else:
        fused = weighted_score_fusion(scored, weights)
    hits = []
    for pid, score in fused:
        d = dense_rank.get(pid)
        b = bm25_rank.get(pid)
        hits.append(
            ScoredHit(pid, score, d[0] if d else None, b[0] if b else None, d[1] if d else None, b[1] if b else None)
        )
    return hits
