"""The chunk baselines: documents cut into chunks, each embedded whole and searched by dense vectors only.

Fixed-size character chunks with overlap are what most RAG pipelines do, and
what selfcrag's sentence windows are measured against (``--configs chunk512``).
Semantic chunks (``--configs semantic-chunks``) are LlamaIndex's
``SemanticSplitterNodeParser``: runs of sentences cut where the similarity of
adjacent sentences (each averaged with its neighbours, ``buffer_size=1``) falls
below the document's 5th percentile (its ``breakpoint_percentile_threshold=95``
on distances), measured here on the sentence vectors the index stores. The
chunks are cut from the same document texts the index holds, embedded with the
index's embedder as passages, and searched exactly (a matrix product over unit
vectors), as LlamaIndex's default vector index does. Their vectors are cached
beside the set's index, keyed by the chunks' text and the model, so a second
run embeds nothing.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from selfcrag.embed.embedders import Embedder, model_slug, passage_batch
from selfcrag.index.manifest import DocumentEntry
from selfcrag.index.points import StoredSentence, join_sentences, proposed_from
from selfcrag.index.reader import IndexReader
from selfcrag.spans import Passage, located, passage_id
from selfcrag.split.semantic import semantic_groups

CHUNK_OVERLAP = 0.10
_CHUNK_CONFIG = re.compile(r"^chunk(\d+)$")
SEMANTIC_CHUNKS = "semantic-chunks"
# LlamaIndex's defaults: breakpoint_percentile_threshold=95 (on distances) and buffer_size=1.
SEMANTIC_CHUNK_PERCENTILE = 5
SEMANTIC_CHUNK_BUFFER = 1


def chunk_size_of(name: str) -> int | None:
    """Read the chunk size from a configuration name such as ``chunk512``.

    Args:
        name: A configuration name.

    Returns:
        The size in characters, or None when the name is not a chunk baseline.
    """
    match = _CHUNK_CONFIG.match(name)
    return int(match.group(1)) if match and int(match.group(1)) > 0 else None


def fixed_spans(length: int, size: int, overlap: float = CHUNK_OVERLAP) -> list[tuple[int, int]]:
    """Cut a text of ``length`` characters into windows of ``size`` that overlap by a share of ``size``.

    Args:
        length: Characters in the text.
        size: Characters per chunk.
        overlap: Share of a chunk repeated at the start of the next one.

    Returns:
        ``(start, end)`` offsets; the last chunk ends at ``length``. An empty
        text has no chunks.
    """
    stride = max(1, size - round(size * overlap))
    spans: list[tuple[int, int]] = []
    start = 0
    while start < length:
        end = min(start + size, length)
        spans.append((start, end))
        if end == length:
            break
        start += stride
    return spans


@dataclass(frozen=True)
class Chunk:
    """One piece of a document.

    Attributes:
        positions: The chunk's number twice (fixed-size chunks), or the positions of its first and last
            sentences (semantic chunks): what its passage shows as ``first`` and ``last``.
    """

    doc_id: str
    source: str
    title: str
    positions: tuple[int, int]
    start: int
    end: int
    text: str


def _documents(index: IndexReader) -> Iterator[tuple[DocumentEntry, list[StoredSentence]]]:
    """Every indexed document with its sentences (propositions are not a document's text)."""
    for entry in index.documents():
        sentences = list(index.iter_sentences(entry.doc_id))
        if sentences and proposed_from(entry.doc_id) is None:
            yield entry, sentences


def fixed_chunks(index: IndexReader, size: int) -> list[Chunk]:
    """Cut every indexed document into chunks of ``size`` characters that overlap by :data:`CHUNK_OVERLAP`.

    Args:
        index: The open index (texts are rebuilt from its sentences).
        size: Characters per chunk.

    Returns:
        The chunks, document by document.
    """
    chunks: list[Chunk] = []
    for entry, sentences in _documents(index):
        text, base = join_sentences(sentences), sentences[0].start
        chunks.extend(
            Chunk(entry.doc_id, entry.source, entry.title, (number, number), base + start, base + end, text[start:end])
            for number, (start, end) in enumerate(fixed_spans(len(text), size))
        )
    return chunks


def semantic_chunks(index: IndexReader) -> list[Chunk]:
    """Cut every indexed document into runs of sentences at its semantic boundaries, as LlamaIndex does.

    Args:
        index: The open index: its sentences, and their stored vectors (nothing is embedded to cut).

    Returns:
        The chunks, document by document.
    """
    chunks: list[Chunk] = []
    for entry, sentences in _documents(index):
        keys = [(s.doc_id, s.position) for s in sentences]
        stored = index.dense_vectors(keys)
        vectors = np.stack([stored[key] for key in keys])
        for first, last in semantic_groups(vectors, SEMANTIC_CHUNK_PERCENTILE, buffer=SEMANTIC_CHUNK_BUFFER):
            run = sentences[first : last + 1]
            span = (run[0].position, run[-1].position)
            chunks.append(
                Chunk(entry.doc_id, entry.source, entry.title, span, run[0].start, run[-1].end, join_sentences(run))
            )
    return chunks


class ChunkIndex:
    """Fixed-size chunks of an index's documents with their vectors, searched densely.

    Args:
        chunks: The chunks.
        vectors: One unit vector per chunk (rows).
        embedder: The model that made them (questions are embedded with it too).
    """

    def __init__(self, chunks: list[Chunk], vectors: np.ndarray, embedder: Embedder) -> None:
        self.chunks = chunks
        self.vectors = vectors
        self.embedder = embedder

    @classmethod
    def build(
        cls,
        chunks: list[Chunk],
        name: str,
        embedder: Embedder,
        cache_dir: Path,
        progress: Callable[[str, int, int], None] | None = None,
    ) -> ChunkIndex:
        """Embed chunks (or load their vectors from the cache).

        Args:
            chunks: The chunks (:func:`fixed_chunks`, :func:`semantic_chunks`).
            name: The configuration they were cut by (``chunk512``, ``semantic-chunks``): names the cache file.
            embedder: The index's embedder.
            cache_dir: Folder for the cached vectors.
            progress: Called as ``progress(phase, done, total)`` while embedding.

        Returns:
            The chunk index.
        """
        digest = hashlib.sha256(embedder.name.encode())
        for chunk in chunks:
            digest.update(chunk.text.encode("utf-8"))
            digest.update(b"\0")
        key = digest.hexdigest()[:16]
        cache = cache_dir / f"{name}-{model_slug(embedder.name)}.npz"
        if cache.exists():
            stored = np.load(cache)
            if str(stored["key"]) == key and len(stored["vectors"]) == len(chunks):
                return cls(chunks, stored["vectors"], embedder)
        vectors = embed_in_batches(embedder, [c.text for c in chunks], progress, phase=f"embedding {name}")
        cache_dir.mkdir(parents=True, exist_ok=True)
        np.savez(cache, key=np.array(key), vectors=vectors)
        return cls(chunks, vectors, embedder)

    def search(self, query: str, top_k: int = 5) -> list[Passage]:
        """Return the ``top_k`` chunks closest to a query, best first.

        Args:
            query: The question.
            top_k: Chunks returned.

        Returns:
            The chunks as retrieved passages (no sentence hits: a chunk is embedded and found whole).
        """
        if not self.chunks:
            return []
        scores = self.vectors @ self.embedder.embed_question(query)
        count = min(top_k, len(self.chunks))
        best = np.argpartition(-scores, count - 1)[:count]
        best = best[np.argsort(-scores[best], kind="stable")]
        return [self._passage(int(i), float(scores[i]), query) for i in best]

    def _passage(self, index: int, score: float, query: str) -> Passage:
        chunk = self.chunks[index]
        return Passage(
            id=passage_id(chunk.text),
            doc_id=chunk.doc_id,
            source=chunk.source,
            **located(Path(chunk.source).name, None),  # a baseline of fixed chunks: no place is kept
            title=chunk.title,
            section=[],
            first=chunk.positions[0],
            last=chunk.positions[1],
            start=chunk.start,
            end=chunk.end,
            text=chunk.text,
            score=score,
            dense_score=None,
            bm25_score=None,
            dense_rank=None,
            bm25_rank=None,
            hits=[],
            query=query,
        )


def embed_in_batches(
    embedder: Embedder,
    texts: list[str],
    progress: Callable[[str, int, int], None] | None = None,
    *,
    phase: str = "embedding",
) -> np.ndarray:
    """Embed passages as ingestion does: sorted by length, in the embedder's batch size.

    Args:
        embedder: The model.
        texts: Passages.
        progress: Called as ``progress(phase, done, total)`` after each batch.
        phase: The progress label.

    Returns:
        One vector per text, in the order given.
    """
    vectors = np.zeros((len(texts), embedder.dim), dtype=np.float32)
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    size = embedder.batch_size
    for start in range(0, len(order), size):
        batch = order[start : start + size]
        with passage_batch(len(texts)):  # the last, shorter call too: on the runtime of the whole batch
            vectors[batch] = embedder.embed_passages([texts[i] for i in batch])
        if progress:
            progress(phase, min(start + size, len(order)), len(order))
    return vectors
