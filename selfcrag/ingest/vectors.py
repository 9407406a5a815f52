"""Sentences -> vectors: the sentences of the documents added, embedded in batches on a thread of their own.

Each vector is kept as it is computed (:mod:`selfcrag.embed.kept_vectors`), so an interrupted ingest resumes: the
next run embeds only what is left, and counts the vectors it recalls apart from those it embeds. The embedding
thread is the only one that uses the embedder and the kept vectors' file; leaving the stage (a failure, Ctrl-C)
stops it after the model call it is in, waits for it, and the vectors computed stay kept.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from selfcrag.embed.embedders import Embedder, WrappedEmbedder, passage_batch
from selfcrag.embed.kept_vectors import KeptVectors
from selfcrag.embed.remembered import RememberedVectors
from selfcrag.index.points import StoredSentence
from selfcrag.index.writer import ProgressCallback


class _Stopped(Exception):
    """The stage was left while this batch waited: nobody needs its vectors."""


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
        self._largest = 0  # the largest batch sent: later ones are embedded as it was (see _embed)
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
        # Every model call of a batch, and of the batches after this ingest's largest, is one of a batch that large:
        # a runtime chosen by a call's size (passage_batch) is then the same for a batch's last, shorter call, and for
        # a batch sent early by a publish, whenever the clock sends it.
        self._largest = max(self._largest, len(texts))
        with passage_batch(self._largest):
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
