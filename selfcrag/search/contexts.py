"""What retrieval hands to the rest of the workflow."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True, slots=True)
class SentenceHit:
    """One retrieved sentence and how each retriever ranked it.

    Attributes:
        doc_id: The sentence's document.
        position: Its position in the document, from 0.
        score: Fused score.
        dense_rank: Rank in the dense list, from 1; None when not in it.
        bm25_rank: Rank in the BM25 list, from 1; None when not in it.
        dense_score: Cosine similarity, when in the dense list.
        bm25_score: BM25 score, when in the BM25 list.
    """

    doc_id: str
    position: int
    score: float
    dense_rank: int | None = None
    bm25_rank: int | None = None
    dense_score: float | None = None
    bm25_score: float | None = None


@dataclass(frozen=True, slots=True)
class RetrievedContext:
    """A passage for the answer step: hit sentences with their windows, merged.

    Attributes:
        doc_id: Document id.
        source: Path of the source file.
        title: Document title.
        section: Heading path of the passage.
        first: Position of the first sentence in the document.
        last: Position of the last sentence (inclusive).
        start: Character offset of the passage in the document text.
        end: End offset (exclusive).
        text: The passage, exactly as it stands in the document.
        score: Best fused score among its hits.
        hits: The retrieved sentences inside the passage, best first.
    """

    doc_id: str
    source: str
    title: str
    section: tuple[str, ...]
    first: int
    last: int
    start: int
    end: int
    text: str
    score: float
    hits: tuple[SentenceHit, ...]

    @property
    def dense_rank(self) -> int | None:
        """Best dense rank among the hits."""
        ranks = [h.dense_rank for h in self.hits if h.dense_rank is not None]
        return min(ranks) if ranks else None

    @property
    def bm25_rank(self) -> int | None:
        """Best BM25 rank among the hits."""
        ranks = [h.bm25_rank for h in self.hits if h.bm25_rank is not None]
        return min(ranks) if ranks else None

    @property
    def dense_score(self) -> float | None:
        """Highest cosine similarity among the hits."""
        scores = [h.dense_score for h in self.hits if h.dense_score is not None]
        return max(scores) if scores else None

    @property
    def bm25_score(self) -> float | None:
        """Highest BM25 score among the hits."""
        scores = [h.bm25_score for h in self.hits if h.bm25_score is not None]
        return max(scores) if scores else None

    def to_dict(self) -> dict[str, object]:
        """Return a JSON-ready dictionary."""
        data = asdict(self)
        data["section"] = list(self.section)
        data["hits"] = [asdict(h) for h in self.hits]
        data["dense_rank"] = self.dense_rank
        data["bm25_rank"] = self.bm25_rank
        return data
