"""Ingest as stages: files -> documents -> vectors -> points, each running ahead of the next.

* **files -> documents** (:func:`read_ahead`): files are read, decoded, split and tokenised on a thread of their
  own, at most :data:`READ_AHEAD` documents ahead of the one being indexed.
* **documents -> vectors** (:class:`VectorStage`): the sentences of the documents added are embedded in batches
  of :data:`FLUSH_SENTENCES` on a thread of their own, each vector kept as it is computed
  (:mod:`selfcrag.embed.kept_vectors`), so an interrupted ingest resumes.
* **vectors -> points** (:class:`PointStage`): a batch's points are written to the engine while the next batch
  is embedded, and what is finished is published every ``publish_every`` seconds.

The manifest and the engine stay on the thread that drives the stages (SQLite connections and Qdrant Edge shards
are used from one thread); the embedding thread owns the kept vectors' file. Memory stays flat: a few documents
read ahead, one batch embedding, one being written and one gathering. A failure on either thread is raised in
the driving thread as it was raised, and leaving the stages (a failure, Ctrl-C) stops both threads: the embedding
thread is waited for, and the vectors computed stay kept; the reading thread is waited for unless it is reading a
file (a large PDF can take minutes), which it then finishes on its own, writing nothing, and ends.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from queue import Empty, Full, Queue
from typing import TypeVar

import numpy as np

from selfcrag.embed.embedders import Embedder, WrappedEmbedder
from selfcrag.embed.kept_vectors import KeptVectors, kept_vectors_file
from selfcrag.embed.remembered import RememberedVectors
from selfcrag.index.documents import PreparedDocument
from selfcrag.index.manifest import IndexedFile
from selfcrag.index.points import StoredSentence
from selfcrag.index.writer import IndexWriter, ProgressCallback

# Sentences gathered before they are embedded and written together.
FLUSH_SENTENCES = 2048
# Documents read and split ahead of the one being indexed.
READ_AHEAD = 8
# How often a stopped thread looks up from a full queue.
_POLL_SECONDS = 0.1

Item = TypeVar("Item")


class _Stopped(Exception):
    """The stage was left while this batch waited: nobody needs its vectors."""


@contextmanager
def read_ahead(items: Iterator[Item], limit: int = READ_AHEAD) -> Iterator[Iterator[Item]]:
    """Run an iterator on a thread of its own, at most ``limit`` items ahead of the caller.

    An exception the iterator raises (any :class:`BaseException`) is raised where its item would have been taken.
    Leaving the block stops the thread. A thread waiting to hand an item over is waited for (it sees the stop at
    once); one making an item is not: the caller leaves at once (on Ctrl-C, or a failure, while a large PDF is
    read), and the thread, a daemon, ends once the item is made, handing it to no one. So the iterator must
    only read: whatever is written stays with the caller.

    Args:
        items: What to make ahead: reading and splitting files, say.
        limit: Items made and not yet taken, at most.

    Yields:
        The items, in order.
    """
    queue: Queue[tuple[bool, object]] = Queue(maxsize=limit)
    stop = threading.Event()
    # Held while an item is made, and taken to look at the stop before each: once the caller holds it with the
    # stop set, the thread makes nothing more.
    making = threading.Lock()
    end = object()

    def hand(done: bool, value: object) -> bool:
        while not stop.is_set():
            try:
                queue.put((done, value), timeout=_POLL_SECONDS)
                return True
            except Full:
                continue
        return False

    def make() -> None:
        try:
            while True:
                with making:
                    if stop.is_set():
                        return
                    item = next(items, end)
                if item is end:
                    hand(True, None)
                    return
                if not hand(False, item):
                    return
        except BaseException as error:  # a panic too: raised again in the caller's thread
            hand(True, error)

    def taken() -> Iterator[Item]:
        while True:
            done, value = queue.get()
            if isinstance(value, BaseException):
                raise value
            if done:
                return
            yield value  # type: ignore[misc]

    thread = threading.Thread(target=make, name="selfcrag-read", daemon=True)
    thread.start()
    try:
        yield taken()
    finally:
        stop.set()
        if making.acquire(blocking=False):  # not making an item, and it will make none: wait for it to end
            making.release()
            while thread.is_alive():  # free a slot, so a hand-over waiting on it sees the stop at once
                try:
                    queue.get_nowait()
                except Empty:
                    pass
                thread.join(_POLL_SECONDS)


class VectorStage:
    """Sentences -> vectors: batches embedded one after another on a thread of their own, each kept as computed.

    The thread is the only one that uses the embedder and the kept vectors' file. Use it as a context manager:
    leaving stops the thread after the model call it is in, and waits for it.

    Args:
        embedder: The embedding model.
        kept: The vectors computed and not yet published, from this run and interrupted ones.
        progress: Told, as each model call returns (from the embedding thread), ``progress("recalled", sentences
            recalled, sentences done)`` and ``progress("characters", characters done, sentences done)``, then
            ``progress("embedding", sentences done, sentences sent)``: of the sentences done (given vectors), those
            recalled were given vectors kept or shipped; a batch goes to the model shortest first, so its characters,
            not its sentences, tell how much of it is done.

    Attributes:
        embedded: Sentences given vectors (embedded, or recalled: see :attr:`recalled`).
        characters: Characters of the sentences given vectors (their text).
        seconds: Time inside the embedding model, in the calls that embedded a sentence (not only recalled ones).
    """

    def __init__(self, embedder: Embedder, kept: KeptVectors, progress: ProgressCallback | None = None) -> None:
        self.embedder = embedder
        self.kept = kept
        self.progress = progress
        self.embedded = 0
        self.characters = 0
        self.seconds = 0.0
        self._sent = 0
        self._recalled_before = self._recalled_in_all()  # shipped vectors are one object a process may reuse
        self._stop = threading.Event()
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="selfcrag-embed")

    @property
    def recalled(self) -> int:
        """Sentences given vectors without the model: kept by an interrupted ingest, or shipped (the sample's)."""
        return self._recalled_in_all() - self._recalled_before

    def _recalled_in_all(self) -> int:
        """What the embedders that answer from stored vectors, the kept one and any it wraps, have recalled."""
        recalled = 0
        layer: Embedder = self.kept
        while isinstance(layer, WrappedEmbedder):
            if isinstance(layer, KeptVectors | RememberedVectors):
                recalled += layer.recalled
            layer = layer.embedder
        return recalled

    def embed(self, sentences: Sequence[StoredSentence]) -> Future[np.ndarray]:
        """Send a batch to be embedded after those sent before; its vectors, one row per sentence, when done."""
        sent, self._sent = self._sent, self._sent + len(sentences)
        return self._thread.submit(self._embed, [s.text for s in sentences], [s.searchable() for s in sentences], sent)

    def _embed(self, texts: list[str], searchable: list[str], sent: int) -> np.ndarray:
        size = self.embedder.batch_size
        # Shortest first: model calls of like length pad least.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        vectors = np.zeros((len(texts), self.embedder.dim), dtype=np.float32)
        for start in range(0, len(order), size):
            if self._stop.is_set():
                raise _Stopped
            chunk = order[start : start + size]
            began, recalled = time.perf_counter(), self.recalled
            vectors[chunk] = self.kept.embed_passages([searchable[i] for i in chunk])
            if self.recalled - recalled < len(chunk):  # the model embedded some: its seconds make the rate
                self.seconds += time.perf_counter() - began
            self.embedded += len(chunk)
            self.characters += sum(len(texts[i]) for i in chunk)
            if self.progress:  # within the batch too: one large document is a batch of its own (issue 20, item 8)
                self.progress("recalled", self.recalled, self.embedded)
                self.progress("characters", self.characters, self.embedded)
                self.progress("embedding", sent + start + len(chunk), sent + len(texts))
        return vectors

    def forget_published(self) -> None:
        """Delete the kept vectors now in a published generation (after the batches sent so far)."""
        self._thread.submit(self.kept.forget_published).result()

    def __enter__(self) -> VectorStage:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.submit(self.kept.close)  # on its own thread, after the batch being embedded
        self._thread.shutdown(wait=True)


class PointStage:
    """Documents -> vectors -> points: what an ingest adds, written to the engine batch by batch.

    A document is recorded by the writer at once (:meth:`IndexWriter.add`); its sentences gather into a batch,
    which is embedded (:class:`VectorStage`) while the batch before it is written (:meth:`IndexWriter.write_points`)
    and the next one gathers. The writer settles through this stage before it moves points or publishes. Use it
    as a context manager.

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
        self._gathering: list[tuple[StoredSentence, list[str]]] = []
        self._embedding: deque[tuple[list[tuple[StoredSentence, list[str]]], Future[np.ndarray]]] = deque()

    def __enter__(self) -> PointStage:
        self.vectors.__enter__()
        self.writer.settle = self.settle
        return self

    def __exit__(self, *exc: object) -> None:
        self.writer.settle = self._writer_settle
        self.vectors.__exit__(*exc)

    def add(self, document: PreparedDocument, file: IndexedFile | None = None) -> None:
        """Index a new or changed document (see :meth:`IndexWriter.add`); its points follow in its batch.

        Args:
            document: The document.
            file: The file it was read from; None for propositions.
        """
        self.writer.add(document, file)
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
        batch, vectors = self._embedding.popleft()
        self.writer.write_points(batch, vectors.result())

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
