"""Reading the index: the current generation, reopened when an ingest publishes a new one.

:class:`IndexReader` is what searches, windows and the offline heuristics
talk to. It never loads sentences wholesale: searches return point ids, and
sentences are fetched by their computed ids (:func:`sentence_point_id`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

import numpy as np

from selfcrag.errors import NoIndexError, UserError
from selfcrag.index import generations
from selfcrag.index.checks import find_damage
from selfcrag.index.manifest import MANIFEST_FILE, DocumentEntry, Manifest
from selfcrag.index.points import StoredSentence, document_point_ids, join_sentences, sentence_point_id
from selfcrag.index.sparse import SparseVector
from selfcrag.index.store import (
    APPROXIMATE,
    DenseSearch,
    EdgeStore,
    EngineError,
    SearchLists,
    SentenceStore,
    ServerStore,
    is_disk_full,
)
from selfcrag.index.writer import SHARD_DIR, ServerTarget

LEGACY_SNAPSHOT = "snapshot.pkl"
# Sentences an open reader remembers (windows and strips read the same neighbourhoods again).
CACHE_SENTENCES = 20_000


class SentenceSource(Protocol):
    """What windows and strips read: sentences by position, documents by id."""

    def sentences(self, keys: Iterable[tuple[str, int]]) -> dict[tuple[str, int], StoredSentence]:
        """Fetch sentences by ``(doc_id, position)``; those that do not exist are absent."""
        ...

    def document(self, doc_id: str) -> DocumentEntry | None:
        """A document's manifest entry."""
        ...


class HeldDocument(Protocol):
    """A document and its sentences as the index stores them, not yet written (an ingest's prepared document)."""

    @property
    def entry(self) -> DocumentEntry: ...  # noqa: D102

    @property
    def sentences(self) -> Sequence[StoredSentence]: ...  # noqa: D102


class MemoryIndex:
    """Sentences held in memory, for code that needs a :class:`SentenceSource` without an engine (tests).

    Args:
        documents: Documents split into sentences as the index stores them.
    """

    def __init__(self, documents: Iterable[HeldDocument]) -> None:
        documents = list(documents)
        self.entries = {d.entry.doc_id: d.entry for d in documents}
        self.by_key: dict[tuple[str, int], StoredSentence] = {}
        for document in documents:
            for sentence in document.sentences:
                self.by_key[(sentence.doc_id, sentence.position)] = sentence

    def sentences(self, keys: Iterable[tuple[str, int]]) -> dict[tuple[str, int], StoredSentence]:  # noqa: D102
        return {key: self.by_key[key] for key in keys if key in self.by_key}

    def document(self, doc_id: str) -> DocumentEntry | None:  # noqa: D102
        return self.entries.get(doc_id)


class IndexReader:
    """The committed index of a data folder, for searching.

    On Qdrant Edge it loads the shard through a private view (the engine writes
    into what it loads; a published generation must not change), checks the
    engine's point count against the manifest and reads a few sentences back:
    damaged engine files are one line that says to run ``selfcrag ingest``,
    at open or, when the engine fails later, at the search that meets them.

    Args:
        data_dir: The data folder.
        server: The Qdrant server collection; None for the embedded engine.

    Raises:
        NoIndexError: Nothing is indexed there yet.
        UserError: The index is damaged or of another version (one line saying what to do).
    """

    def __init__(self, data_dir: Path, server: ServerTarget | None = None) -> None:
        self.data_dir = data_dir
        self.root = generations.index_root(data_dir)
        self.server = server
        self._lock = threading.RLock()
        self.lease: generations.Lease | None = None
        self.store: SentenceStore | None = None
        self.manifest: Manifest | None = None
        self._cache: OrderedDict[tuple[str, int], StoredSentence | None] = OrderedDict()
        # The generation left at the last refresh: closed at the next one, so a search that
        # another thread started on it just before the switch can finish.
        self._retired: tuple[generations.Lease | None, Manifest | None, SentenceStore | None] | None = None
        # The languages of the generation last asked (see languages()), and its manifest.
        self._languages: frozenset[str] | None = None
        self._languages_of: Manifest | None = None
        self._open()

    def _open(self) -> None:
        generations.check_data_dir(self.data_dir)
        if (self.data_dir / LEGACY_SNAPSHOT).exists() and not self.root.exists():
            raise UserError(
                f"{self.data_dir} holds an index of an older selfcrag version (never read: it is a "
                "pickle); run `selfcrag ingest PATH` to build the new index there"
            )
        lease = generations.acquire(self.root)
        if lease is None:
            raise NoIndexError(f"nothing is indexed in {self.data_dir} yet: run `selfcrag ingest PATH` first")
        manifest: Manifest | None = None
        try:
            manifest = Manifest(lease.path / MANIFEST_FILE)
            store = self._open_store(lease.path, manifest)
        except BaseException:
            if manifest is not None:
                manifest.close()
            lease.release()
            raise
        self.lease, self.manifest, self.store = lease, manifest, store
        if not manifest.document_count():
            self.close()
            raise NoIndexError(f"nothing is indexed in {self.data_dir} yet: run `selfcrag ingest PATH` first")

    @property
    def _repair(self) -> str:
        return f"run `selfcrag ingest PATH` to repair the index in {self.data_dir}"

    def _open_store(self, path: Path, manifest: Manifest) -> SentenceStore:
        repair = self._repair
        if self.server is not None:
            store = ServerStore(self.server.client, self.server.collection)
            if not store.exists():
                raise UserError(f"the Qdrant collection {self.server.collection} is missing: {repair}")
            return store
        shard = path / SHARD_DIR
        if not shard.is_dir():
            raise UserError(f"the index data in {shard} is missing: {repair}")
        try:
            edge = EdgeStore.open_view(shard, self.root, path.name)
        except EngineError as error:
            raise UserError(f"the index data in {shard} cannot be loaded ({error}): {repair}") from None
        except OSError as error:
            if is_disk_full(error):
                raise UserError(
                    f"the disk holding {self.data_dir} is full: free some space to open the index there"
                ) from None
            raise UserError(f"cannot open the index in {self.data_dir}: {error.strerror or error}") from None
        try:
            damage = find_damage(edge, manifest)
        except EngineError as error:
            damage = str(error)
        except BaseException:
            self._close_parts(None, None, edge)
            raise
        if damage:
            self._close_parts(None, None, edge)
            raise UserError(f"the index data in {shard} is damaged ({damage}): {repair}")
        return edge

    @contextmanager
    def _engine_failures(self) -> Iterator[None]:
        """Damage the checks at open could not see is still one line, at the search that meets it."""
        try:
            yield
        except EngineError as error:
            raise UserError(f"the index data in {self.data_dir} is damaged ({error}): {self._repair}") from None

    @property
    def generation(self) -> str:
        """The name of the generation open."""
        assert self.lease is not None
        return self.lease.name

    @property
    def embedder_name(self) -> str:
        """The embedding model the index was built with."""
        assert self.manifest is not None
        return self.manifest.meta("embedder") or ""

    def refresh(self) -> bool:
        """Open the newest generation if an ingest published one since.

        Returns:
            True when the reader moved to a new generation.
        """
        with self._lock:
            try:
                current = generations.read_pointer(self.root)
            except UserError:
                return False
            if current is None or self.lease is None or current == self.lease.name:
                return False
            old = (self.lease, self.manifest, self.store)
            self._open()
            self._cache.clear()
            if self._retired is not None:
                self._close_parts(*self._retired)
            self._retired = old
            return True

    # ------------------------------------------------------------------ searching

    def search(
        self,
        dense: np.ndarray | None,
        sparse: SparseVector | None,
        *,
        candidates: int,
        dense_search: DenseSearch = APPROXIMATE,
        crossed: SparseVector | None = None,
    ) -> SearchLists:
        """Rank sentences (see :meth:`SentenceStore.search`)."""
        store = self.store
        assert store is not None
        with self._engine_failures():
            return store.search(dense, sparse, candidates=candidates, dense_search=dense_search, crossed=crossed)

    def sentences(self, keys: Iterable[tuple[str, int]]) -> dict[tuple[str, int], StoredSentence]:
        """Fetch sentences by ``(doc_id, position)`` (retrieve by computed id); those that do not exist are absent."""
        with self._lock:
            assert self.store is not None
            result: dict[tuple[str, int], StoredSentence] = {}
            wanted: dict[str, tuple[str, int]] = {}
            for key in keys:
                if key in self._cache:
                    self._cache.move_to_end(key)
                    cached = self._cache[key]
                    if cached is not None:
                        result[key] = cached
                else:
                    wanted[sentence_point_id(*key)] = key
            if wanted:
                with self._engine_failures():
                    found = self.store.retrieve(list(wanted))
                for pid, key in wanted.items():
                    point = found.get(pid)
                    self._remember(key, point.sentence if point is not None else None)
                    if point is not None:
                        result[key] = point.sentence
            return result

    def _remember(self, key: tuple[str, int], sentence: StoredSentence | None) -> None:
        self._cache[key] = sentence
        if len(self._cache) > CACHE_SENTENCES:
            self._cache.popitem(last=False)

    def by_point_ids(self, ids: Sequence[str]) -> dict[str, StoredSentence]:
        """Fetch sentences by point id (the hits of a search)."""
        with self._lock:
            assert self.store is not None
            with self._engine_failures():
                found = {pid: point.sentence for pid, point in self.store.retrieve(ids).items()}
            for sentence in found.values():
                self._remember((sentence.doc_id, sentence.position), sentence)
            return found

    def iter_sentences(self, doc_id: str | None = None) -> Iterator[StoredSentence]:
        """Every sentence (of one document, or of all in ingestion order), fetched by computed ids in batches."""
        entries = [self.document(doc_id)] if doc_id is not None else self.documents()
        for entry in entries:
            if entry is None:
                continue
            for start in range(0, entry.sentence_count, 1024):
                with self._lock, self._engine_failures():
                    assert self.store is not None
                    found = self.store.retrieve(
                        document_point_ids(entry.doc_id, range(start, min(start + 1024, entry.sentence_count)))
                    )
                yield from sorted((p.sentence for p in found.values()), key=lambda s: s.position)

    def document_text(self, doc_id: str) -> str:
        """A document's text from its first to its last sentence, rebuilt from the stored sentences."""
        return join_sentences(list(self.iter_sentences(doc_id)))

    def dense_vectors(self, keys: Sequence[tuple[str, int]]) -> dict[tuple[str, int], np.ndarray]:
        """The stored dense vectors of sentences."""
        store = self.store
        assert store is not None
        wanted = {sentence_point_id(d, p): (d, p) for d, p in keys}
        with self._engine_failures():
            found = store.retrieve(list(wanted), dense=True)
        return {wanted[pid]: point.dense for pid, point in found.items() if point.dense is not None}

    def document(self, doc_id: str) -> DocumentEntry | None:
        """A document's manifest entry."""
        with self._lock:
            assert self.manifest is not None
            return self.manifest.document(doc_id)

    def documents(self) -> list[DocumentEntry]:
        """All documents."""
        with self._lock:
            assert self.manifest is not None
            return list(self.manifest.documents())

    def languages(self) -> frozenset[str] | None:
        """The languages of the index's documents (``en``, ``zh``); None when unknown (see :meth:`Manifest.languages`).

        Read once per generation: a search asks it every time.
        """
        with self._lock:
            manifest = self.manifest
            assert manifest is not None
            if self._languages_of is not manifest:
                self._languages, self._languages_of = manifest.languages(), manifest
            return self._languages

    def point_count(self) -> int:
        """Points the engine holds (equal to :meth:`sentence_count` in a sound index)."""
        store = self.store
        assert store is not None
        with self._engine_failures():
            return store.count()

    @property
    def avg_length(self) -> float:
        """Average BM25 terms per sentence the sparse weights were written with."""
        with self._lock:
            assert self.manifest is not None
            return self.manifest.avg_length

    def document_count(self) -> int:
        """Documents in the index."""
        with self._lock:
            assert self.manifest is not None
            return self.manifest.document_count()

    def sentence_count(self) -> int:
        """Sentences in the index."""
        with self._lock:
            assert self.manifest is not None
            return self.manifest.totals()[0]

    def idf(self, terms: Iterable[str]) -> dict[str, float]:
        """Lucene IDF of terms over the index's sentences."""
        with self._lock:
            assert self.manifest is not None
            return self.manifest.idf(terms)

    # ------------------------------------------------------------------ closing

    @staticmethod
    def _close_parts(lease: generations.Lease | None, manifest: Manifest | None, store: SentenceStore | None) -> None:
        try:
            if store is not None and isinstance(store, EdgeStore):
                store.close()
        except EngineError:
            pass  # closing a damaged shard: what matters is that its view and lease are released
        finally:
            if manifest is not None:
                manifest.close()
            if lease is not None:
                lease.release()

    def close(self) -> None:
        """Release the generation (an ingest may then delete it)."""
        with self._lock:
            if self._retired is not None:
                self._close_parts(*self._retired)
                self._retired = None
            self._close_parts(self.lease, self.manifest, self.store)
            self.lease = self.manifest = self.store = None

    def __enter__(self) -> IndexReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
