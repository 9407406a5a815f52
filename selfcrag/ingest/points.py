"""Vectors -> points: what an ingest adds, written to the engine batch by batch, and published.

A document added is recorded by the writer at once (:meth:`~selfcrag.index.writer.IndexWriter.add`); its sentences
gather into a batch of :data:`FLUSH_SENTENCES`, which is embedded (:class:`~selfcrag.ingest.vectors.VectorStage`)
while the batch before it is measured for semantic boundaries (:func:`with_boundaries`) and written
(:meth:`~selfcrag.index.writer.IndexWriter.write_points`), and the next one gathers. What is finished is published
every ``publish_every`` seconds, and at the end (:meth:`PointStage.commit`). Memory stays flat: a few documents
read ahead, one batch embedding, one being written and one gathering.

Each sentence is stored with its similarity to the one before it, ranked within its document
(:mod:`selfcrag.split.semantic`): semantic boundaries are drawn from those at search time. An index measured another
way (an older :data:`~selfcrag.split.semantic.BOUNDARY_VERSION`) is measured again by the writer from its stored
vectors (:func:`semantic_boundaries`).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import replace

import numpy as np

from selfcrag.embed.embedders import Embedder
from selfcrag.embed.kept_vectors import KeptVectors, kept_vectors_file
from selfcrag.index.manifest import IndexedFile
from selfcrag.index.points import StoredSentence, proposed_from
from selfcrag.index.writer import Boundaries, IndexWriter, ProgressCallback
from selfcrag.ingest.sentences import PreparedDocument
from selfcrag.ingest.vectors import VectorStage
from selfcrag.split.semantic import BOUNDARY_VERSION, adjacent_similarities, similarity_ranks

# Sentences gathered before they are embedded and written together.
FLUSH_SENTENCES = 2048


def with_boundaries(sentences: Sequence[StoredSentence], vectors: np.ndarray) -> list[StoredSentence]:
    """The sentences with what semantic boundaries are drawn from: each one's similarity to the one before, ranked.

    Args:
        sentences: Whole documents, each one's sentences consecutive and in order (propositions pass through).
        vectors: Their dense vectors, one row each.

    Returns:
        The sentences, with ``similarity`` and ``similarity_rank`` set (see :mod:`selfcrag.split.semantic`).
    """
    result = list(sentences)
    start = 0
    while start < len(result):
        end = start
        while end < len(result) and result[end].doc_id == result[start].doc_id:
            end += 1
        if proposed_from(result[start].doc_id) is None:
            document = result[start:end]
            # Rounded as the engine stores them (float16), so measuring again from stored vectors agrees.
            similarities = adjacent_similarities(
                vectors[start:end].astype(np.float16), [s.position == s.section_first for s in document]
            )
            ranks = similarity_ranks(similarities)
            result[start:end] = [
                replace(s, similarity=similarity, similarity_rank=rank)
                for s, similarity, rank in zip(document, similarities, ranks, strict=True)
            ]
        start = end
    return result


def semantic_boundaries() -> Boundaries:
    """How this version measures semantic boundaries (:func:`with_boundaries`), for the writer to measure again."""
    return Boundaries(BOUNDARY_VERSION, with_boundaries)


class PointStage:
    """Documents -> vectors -> points: what an ingest adds, written to the engine batch by batch.

    A document is recorded by the writer at once (:meth:`IndexWriter.add`); its sentences gather into a batch,
    which is embedded (:class:`VectorStage`) while the batch before it is written (:meth:`IndexWriter.write_points`)
    and the next one gathers. The writer settles through this stage before it moves points or publishes, and
    measures semantic boundaries again as this stage does (:func:`semantic_boundaries`, unless it was given its
    own way). Use it as a context manager.

    Args:
        writer: The index being written.
        embedder: The embedding model.
        progress: Told of each model call, as :class:`VectorStage` says.
        publish_every: Seconds after which what is finished is published along the way, looked at after each
            batch sent (so no batch is split: its vectors are those of a run that does not publish, or resumed
            after a kill); None: only at :meth:`commit`.
        clock: Seconds on a clock that only moves forward (tests move their own).
    """

    def __init__(
        self,
        writer: IndexWriter,
        embedder: Embedder,
        *,
        progress: ProgressCallback | None = None,
        publish_every: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.writer = writer
        self.vectors = VectorStage(embedder, KeptVectors(embedder, kept_vectors_file(writer.root)), progress)
        self.publish_every = publish_every
        self.clock = clock
        self._last_publish = clock()
        self._writer_settle = writer.settle
        self._writer_boundaries = writer.boundaries
        self._gathering: list[tuple[StoredSentence, list[str]]] = []
        self._embedding: deque[tuple[list[tuple[StoredSentence, list[str]]], Future[np.ndarray]]] = deque()

    def __enter__(self) -> PointStage:
        self.vectors.__enter__()
        self.writer.settle = self.settle
        if self.writer.boundaries is None:
            self.writer.boundaries = semantic_boundaries()
        return self

    def __exit__(self, *exc: object) -> None:
        self.writer.settle = self._writer_settle
        self.writer.boundaries = self._writer_boundaries
        self.vectors.__exit__(*exc)

    def add(self, document: PreparedDocument, file: IndexedFile | None = None) -> None:
        """Index a new or changed document (see :meth:`IndexWriter.add`); its points follow in its batch.

        Args:
            document: The document.
            file: The file it was read from; None for propositions.
        """
        self.writer.add(document.entry, file)
        self._gathering.extend(zip(document.sentences, document.tokens, strict=True))
        if len(self._gathering) >= FLUSH_SENTENCES:
            self._send()
            if self.publish_every is not None and self.clock() - self._last_publish >= self.publish_every:
                self.publish_finished()

    def _send(self) -> None:
        """Send the batch gathered to be embedded, and write the one before it meanwhile."""
        batch, self._gathering = self._gathering, []
        self._embedding.append((batch, self.vectors.embed([sentence for sentence, _ in batch])))
        while len(self._embedding) > 1:
            self._write_oldest()

    def _write_oldest(self) -> None:
        batch, embedding = self._embedding.popleft()
        vectors = embedding.result()
        sentences = with_boundaries([sentence for sentence, _ in batch], vectors)
        self.writer.write_points(sentences, [terms for _, terms in batch], vectors)

    def settle(self) -> None:
        """Embed what has gathered, and write every batch on its way."""
        if self._gathering:
            self._send()
        while self._embedding:
            self._write_oldest()

    def publish_finished(self) -> None:
        """Publish every document added so far (see :meth:`IndexWriter.publish_finished`)."""
        self.writer.publish_finished()
        self._last_publish = self.clock()
        self.vectors.forget_published()

    def commit(self) -> str | None:
        """Write what is on its way and publish (see :meth:`IndexWriter.commit`); returns the current generation."""
        name = self.writer.commit()
        if self.writer.report.published:
            self.vectors.forget_published()
        return name
