"""Writing the index: the engine's side of an ingest, documents recorded and their points written.

:class:`IndexWriter` holds the writer lock and checks the current generation
against its manifest (through a private view of its shard: see
:mod:`selfcrag.index.shard_files`). Only when something changes does it start
the next generation: hard links to the current one's immutable segment files,
copies of the files the engine changes and of the manifest; or an empty one
when the current data cannot be trusted (damaged, another embedding model).
It records documents one at a time (:meth:`IndexWriter.add`: a manifest entry),
writes their points once they have vectors (:meth:`IndexWriter.write_points`:
the ingest's stages make them), and publishes the generation when done; a run
with nothing to change publishes nothing. The manifest and the engine are used
from the thread that opened the writer only.

Each sentence is stored with its similarity to the one before it, ranked within
its document: semantic boundaries are drawn from those at search time. The
ingest measures them (:class:`Boundaries`) before it writes the points; an index
measured another way (an older :attr:`Boundaries.version`) is measured again
from its stored vectors when it is next written (:meth:`IndexWriter.update_boundaries`).
"""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from selfcrag.errors import UserError
from selfcrag.index import generations
from selfcrag.index.checks import find_damage
from selfcrag.index.manifest import (
    INDEXING_VERSION,
    MANIFEST_FILE,
    DocumentEntry,
    IndexedFile,
    Manifest,
    ManifestError,
    at_or_under,
)
from selfcrag.index.points import (
    SentencePoint,
    StoredSentence,
    document_point_ids,
    proposed_from,
    propositions_id,
)
from selfcrag.index.records import document_id
from selfcrag.index.shard_files import copy_sparse, mirror_shard
from selfcrag.index.sparse import K1, B, SparseVector, document_vector, reweight
from selfcrag.index.store import EdgeStore, EngineError, IndexOptions, SentenceStore, ServerStore, StoredPoint
from selfcrag.index.tokenize import TOKENIZER_VERSION

# Points written between two optimizer runs of the embedded engine, so HNSW is
# built in parts and no segment grows past what one build handles quickly.
OPTIMIZE_EVERY = 100_000
# Re-weight all sparse vectors when the average sentence length moved by more than this,
# or, above REWEIGHT_MAX sentences (where re-weighting rewrites every segment), by more than
# REWEIGHT_DRIFT_LARGE: there a few per cent barely move BM25's ranking.
REWEIGHT_DRIFT = 0.01
REWEIGHT_DRIFT_LARGE = 0.10
REWEIGHT_MAX = 200_000
SHARD_DIR = "shard"


class ProgressCallback(Protocol):
    """Told how far a long step has come: ``progress(phase, done, total)``, with a line of detail for people.

    An ingest's ``indexing`` counts bytes, its detail the documents read and the sentences embedded; other
    phases count what they name and give no detail.
    """

    def __call__(self, phase: str, done: int, total: int, detail: str = "", /) -> None:
        """Report ``done`` of ``total``."""


class EmbeddingModel(Protocol):
    """What the writer knows of the embedding model: its name and vector size (the manifest records them).

    Attributes:
        name: The model's name: an index built with another model is rebuilt.
        dim: Its vector size.
        batch_size: Points written to the engine at a time.
    """

    @property
    def name(self) -> str: ...  # noqa: D102

    @property
    def dim(self) -> int: ...  # noqa: D102

    @property
    def batch_size(self) -> int: ...  # noqa: D102


@dataclass(frozen=True)
class Boundaries:
    """How the ingest measures semantic boundaries, for documents the writer measures again from stored vectors.

    Attributes:
        version: The way of measuring; an index written another way (the manifest's ``boundaries``) is measured
            again.
        measure: ``measure(sentences, vectors)``: whole documents' sentences with ``similarity`` and
            ``similarity_rank`` set from their dense vectors (one row each).
    """

    version: int
    measure: Callable[[Sequence[StoredSentence], np.ndarray], list[StoredSentence]]


@dataclass
class ServerTarget:
    """Where a Qdrant server keeps this knowledge base.

    Attributes:
        client: A connected ``QdrantClient`` (a server URL, or local mode in tests).
        collection: The knowledge base's collection.
    """

    client: Any
    collection: str


@dataclass
class WriteReport:
    """What the writer found and did.

    Attributes:
        repaired: Documents whose points were missing and must be indexed again.
        rebuilt: Why the index is started anew (its data was unreadable, gone, or of another model).
        written: Points written for the documents added.
        reweighted: Sparse vectors re-weighted for a new average length.
        rederived: Sentences whose semantic boundaries were measured again from their stored vectors.
        published: A new generation was published (False when nothing changed).
        published_along: Generations published along the way, each with the documents finished by then.
        deleted_generations: Old generations removed.
    """

    repaired: list[DocumentEntry] = field(default_factory=list)
    rebuilt: str | None = None
    written: int = 0
    reweighted: int = 0
    rederived: int = 0
    published: bool = False
    published_along: int = 0
    deleted_generations: list[str] = field(default_factory=list)


class IndexWriter:
    """Builds the next generation of a data folder's index.

    Until the first change it only reads: the current generation's manifest,
    and its shard through a private view. The first change starts the next
    generation (:meth:`start_next_generation`).

    Args:
        data_dir: The data folder.
        embedder: The embedding model (its name and vector size; the writer embeds nothing).
        server: The Qdrant server collection; None for the embedded engine.
        options: How the collection is built.
        on_wait: Told when this writer waits for another one.
        progress: Called as ``progress(phase, done, total)``.
        boundaries: How semantic boundaries are measured (see :attr:`boundaries`).

    Attributes:
        settle: Writes every point still on its way (the ingest's stage that writes this writer's points sets it);
            called before points are moved or a generation is published.
        boundaries: How the ingest measures semantic boundaries (its stage that writes points sets it too): documents
            measured another way are measured again from their stored vectors before a publish; None: they are left
            as they are.
    """

    def __init__(
        self,
        data_dir: Path,
        embedder: EmbeddingModel,
        *,
        server: ServerTarget | None = None,
        options: IndexOptions | None = None,
        on_wait: Callable[[str], None] | None = None,
        progress: ProgressCallback | None = None,
        boundaries: Boundaries | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.root = generations.index_root(data_dir)
        self.embedder = embedder
        self.server = server
        self.options = options or IndexOptions()
        self.on_wait = on_wait
        self.progress = progress
        self.report = WriteReport()
        self.settle: Callable[[], None] = self._nothing_on_the_way
        self.boundaries = boundaries
        # Sentences of the documents added whose points are not written yet.
        self._unwritten = 0
        # Documents embedded by this run: their boundaries are measured as they are embedded.
        self._embedded_documents: set[str] = set()
        self._since_optimize = 0
        self._lock: Any = None
        # The generation this run started from, and whether the next one starts empty instead of from it.
        self._current: str | None = None
        self._start_empty = True
        self.tmp: Path | None = None
        self.store: SentenceStore | None = None
        self.manifest: Manifest | None = None

    # ------------------------------------------------------------------ opening

    def __enter__(self) -> IndexWriter:
        generations.check_data_dir(self.data_dir)
        self._lock = generations.writer_lock(self.root, self.on_wait)
        self._lock.__enter__()
        try:
            self._open()
        except BaseException:
            self._abandon()
            raise
        return self

    def _open(self) -> None:
        """Look at the current generation: build on it when it is sound, else rebuild from the documents."""
        generations.clean_leftovers(self.root)
        try:
            self._current = generations.read_pointer(self.root)
        except UserError:
            self._rebuild("the pointer to the current index was damaged; rebuilding the index from the files given")
            return
        if self._current is None:
            return  # nothing published yet: the first change starts an empty generation
        current = self.root / self._current
        if not current.is_dir():
            self._rebuild("the index data was missing; rebuilding it from the files given")
            return
        try:
            manifest = Manifest(current / MANIFEST_FILE)
            self.manifest = manifest
            manifest.validate()
        except ManifestError as error:  # missing, damaged, foreign, or with values selfcrag never writes
            self._rebuild(f"the index manifest {error.reason}; rebuilding the index from the files given")
            return
        old_embedder = manifest.meta("embedder")
        other_model = old_embedder not in (None, self.embedder.name)
        if other_model or manifest.meta("tokenizer") not in (None, str(TOKENIZER_VERSION)):
            # Another model or tokenizer: vectors or terms of the old points do not fit.
            made_by = f"built with {old_embedder!r}" if other_model else "tokenised by an older selfcrag"
            self._rebuild(f"the index was {made_by}; re-indexing every document", manifest.documents())
            return
        self.store = self._open_current_store(current)
        if self.store is not None:
            self._verify()

    def _open_current_store(self, current: Path) -> SentenceStore | None:
        """The current generation's points, read-only; None when they are gone or unreadable (a rebuild follows)."""
        assert self.manifest is not None
        if self.server is not None:
            server = ServerStore(self.server.client, self.server.collection, self.embedder.dim, self.options)
            if server.exists():
                self._start_empty = False
                return server
            if self.manifest.document_count():
                self._rebuild(
                    f"the Qdrant collection {self.server.collection} is gone; rebuilding it", self.manifest.documents()
                )
            return None
        shard = current / SHARD_DIR
        if not shard.is_dir():
            if self.manifest.document_count():
                self._rebuild("the index data was missing; rebuilding it", self.manifest.documents())
            return None
        try:
            store = EdgeStore.open_view(shard, self.root, current.name)
        except EngineError as error:
            self._rebuild(f"the index data was damaged ({error}); rebuilding it", self.manifest.documents())
            return None
        self._start_empty = False
        return store

    def _rebuild(self, reason: str, documents: Iterable[DocumentEntry] = ()) -> None:
        """Start over: the next generation starts empty, and the documents listed are read again from their files."""
        self.report.rebuilt = reason
        self.report.repaired = list(documents)
        self._close_parts()
        self._start_empty = True

    def _verify(self) -> None:
        """Compare the points with the manifest; documents with missing points are indexed again."""
        assert self.manifest is not None and self.store is not None
        expected, _ = self.manifest.totals()
        try:
            if self.store.count() == expected:
                damage = find_damage(self.store, self.manifest, searches=True)
                if damage:
                    self._rebuild(f"the index data was damaged ({damage}); rebuilding it", self.manifest.documents())
                return
            broken = []
            for entry in self.manifest.documents():
                ids = document_point_ids(entry.doc_id, range(entry.sentence_count))
                if len(self.store.existing(ids)) != len(ids):
                    broken.append(entry)
        except EngineError as error:
            self._rebuild(f"the index data was damaged ({error}); rebuilding it", self.manifest.documents())
            return
        if not broken:
            # Points that no document names: a killed server-side write, or damaged deletion flags that
            # brought deleted sentences back. Only a rebuild knows which to drop.
            self._rebuild(
                "the index data holds sentences its manifest does not name; rebuilding it", self.manifest.documents()
            )
            return
        for entry in broken:
            self.remove(entry.doc_id)
        self.report.repaired.extend(broken)

    def start_next_generation(self) -> None:
        """Start the generation that changes go to (every change calls it; once started, it does nothing).

        It starts from the current generation (hard links and copies) or, for a rebuild or a
        first ingest, empty.
        """
        if self.tmp is not None:
            return
        self.tmp = generations.begin(self.root)
        if self._start_empty:
            self._close_parts()
            self.manifest = Manifest(self.tmp / MANIFEST_FILE, writable=True)
            self.store = self._fresh_store()
        else:
            assert self._current is not None
            current = self.root / self._current
            copy_sparse(current / MANIFEST_FILE, self.tmp / MANIFEST_FILE)
            if self.server is None:
                mirror_shard(current / SHARD_DIR, self.tmp / SHARD_DIR, for_writer=True)
                self._close_parts()
                self.store = EdgeStore(self.tmp / SHARD_DIR, options=self.options)
            else:
                if self.manifest is not None:
                    self.manifest.close()  # the server's collection is written in place
                if self.store is None:  # closed by a publish along the way
                    self.store = ServerStore(
                        self.server.client, self.server.collection, self.embedder.dim, self.options
                    )
            self.manifest = Manifest(self.tmp / MANIFEST_FILE, writable=True)
        manifest = self.manifest
        manifest.set_meta(embedder=self.embedder.name, dim=self.embedder.dim, tokenizer=TOKENIZER_VERSION, k1=K1, b=B)
        if manifest.meta("avg_length") is None:
            manifest.set_meta(avg_length=0)
        manifest.begin()

    def _fresh_store(self) -> SentenceStore:
        assert self.tmp is not None
        if self.server is not None:
            store = ServerStore(self.server.client, self.server.collection, self.embedder.dim, self.options)
            if store.exists():
                store.drop()
            store.create()
            return store
        return EdgeStore(self.tmp / SHARD_DIR, self.embedder.dim, create=True, options=self.options)

    # ------------------------------------------------------------------ documents

    def known(self, doc_id: str) -> DocumentEntry | None:
        """The indexed version of a document, if any."""
        return self.manifest.document(doc_id) if self.manifest is not None else None

    def indexed_now(self, doc_id: str) -> bool:
        """Whether a document was read, split and tokenised by this version (:data:`INDEXING_VERSION`)."""
        return self.manifest is not None and self.manifest.indexing_version(doc_id) == INDEXING_VERSION

    def up_to_date(self, doc_id: str, content_hash: str) -> DocumentEntry | None:
        """The indexed version of a document when it holds this text and this version indexed it, else None.

        Such a document has nothing to split, tokenise or embed again.

        Args:
            doc_id: The document.
            content_hash: Its text's :func:`~selfcrag.index.records.content_hash`, as read now.
        """
        old = self.known(doc_id)
        return old if old is not None and old.content_hash == content_hash and self.indexed_now(doc_id) else None

    def holds(self, old: DocumentEntry, entry: DocumentEntry, sentences: Sequence[StoredSentence]) -> bool:
        """Whether a document's stored points are the sentences it would be written as now.

        An unchanged file indexed by an older version of the reading, splitting
        and tokenising needs no new embedding when its sentences and term count
        come out the same. Where they are said to stand (path, place) and the table
        header they are shown under may differ: :meth:`relabel` writes that anew.

        Args:
            old: The document as the manifest has it.
            entry: The same file as this version records it.
            sentences: Its points' sentences as this version writes them.
        """
        assert self.store is not None
        if old.sentence_count != len(sentences) or old.terms != entry.terms:
            return False
        for start in range(0, len(sentences), 1024):
            chunk = sentences[start : start + 1024]
            stored = self.store.retrieve([s.point_id for s in chunk])
            if any(s.point_id not in stored or stored[s.point_id].sentence.unplaced() != s.unplaced() for s in chunk):
                return False
        return True

    def relabel(self, old: DocumentEntry, entry: DocumentEntry, sentences: Sequence[StoredSentence]) -> None:
        """Record that a document's points are what this version writes, their paths and places written anew.

        For a document that :meth:`holds`: the points whose path, place, table header or language differ (an index
        written before places or languages were kept) are written again with the vectors they have, so nothing is
        embedded.

        Args:
            old: The document as the manifest has it.
            entry: The same file as this version records it.
            sentences: Its points' sentences as this version writes them.
        """
        self.start_next_generation()
        assert self.manifest is not None and self.store is not None
        self.manifest.put_document(replace(old, language=entry.language))
        for start in range(0, len(sentences), 1024):
            chunk = sentences[start : start + 1024]
            stored = self.store.retrieve([s.point_id for s in chunk], dense=True, sparse=True)
            points = [
                SentencePoint(
                    replace(s, similarity=point.sentence.similarity, similarity_rank=point.sentence.similarity_rank),
                    point.dense,
                    point.sparse or SparseVector([], []),
                )
                for s in chunk
                if (point := stored[s.point_id]).sentence != s and point.dense is not None
            ]
            self.store.upsert(points)
            self._since_optimize += len(points)
        self._optimize_in_parts()

    def documents(self) -> list[DocumentEntry]:
        """All documents of the generation being written."""
        return list(self.manifest.documents()) if self.manifest is not None else []

    def add(self, entry: DocumentEntry, file: IndexedFile | None = None) -> None:
        """Index a new or changed document (its old version, if any, is replaced, and its propositions dropped).

        A document's propositions (see :func:`~selfcrag.index.points.propositions_id`) are added the same way,
        after the document. When the old version's text lives on in identical copies, it stays indexed under
        the first of them (see :meth:`remove_file`); a file that was such a copy is indexed as itself from now on.

        Its points are written once they have vectors (:meth:`write_points`), before the generation is published.

        Args:
            entry: The document, as the manifest records it.
            file: The file it was read from (see :meth:`files`); None for propositions.
        """
        self.start_next_generation()
        assert self.manifest is not None
        doc_id = entry.doc_id
        old = self.manifest.document(doc_id)
        if old is not None and old.content_hash != entry.content_hash and self._hand_over(old):
            old = None  # its copies keep the old text
        if old is not None:
            self._drop_points(old, keep=0)
        if proposed_from(doc_id) is None:
            self.remove(propositions_id(doc_id))  # drawn from the old text
            self.manifest.forget_file(entry.source)  # a copy of another document until now
        self.manifest.put_document(entry)
        if file is not None:
            self.manifest.put_file(file)
        self._embedded_documents.add(doc_id)
        self._unwritten += entry.sentence_count

    def files(self, doc_id: str | None = None) -> list[IndexedFile]:
        """The files read as a document, its own first and then its identical copies (all files when None)."""
        return self.manifest.files(doc_id) if self.manifest is not None else []

    def file(self, source: str) -> IndexedFile | None:
        """What the index holds of a file (by its resolved path), or None."""
        return self.manifest.file(source) if self.manifest is not None else None

    def original_of(self, content_hash: str, doc_id: str) -> DocumentEntry | None:
        """The document first indexed with a text, other than ``doc_id``'s (the file's own), or None."""
        if self.manifest is None:
            return None
        documents = self.manifest.documents_with_text(content_hash)
        return next((d for d in documents if d.doc_id != doc_id and proposed_from(d.doc_id) is None), None)

    def describe(self, file: IndexedFile) -> None:
        """Record the file of a document indexed before files were (a document unchanged by this run)."""
        if self.file(file.source) is None:
            self.start_next_generation()
            assert self.manifest is not None
            self.manifest.put_file(file)

    def skipped(self) -> list[tuple[str, str]]:
        """``(path, reason)`` of the files skipped by the ingests so far (see :meth:`record_skipped`)."""
        return self.manifest.skipped() if self.manifest is not None else []

    def record_skipped(self, under: Iterable[str], skipped: Iterable[tuple[str, str]]) -> None:
        """Remember the files skipped at or under some paths, in place of what was skipped there before.

        Args:
            under: The paths ingested (absolute): a file skipped there before and not now was read, removed or
                deleted since.
            skipped: ``(path, reason)`` of the files skipped there now.
        """
        folders = list(under)
        before = self.skipped()
        after = {row for row in before if not any(at_or_under(row[0], folder) for folder in folders)} | set(skipped)
        # Into an empty data folder, a skipped list alone publishes nothing: `search` must go on saying that
        # nothing is indexed yet, and `list` says so too.
        if after != set(before) and (self.tmp is not None or self._current is not None):
            self.start_next_generation()
            assert self.manifest is not None
            self.manifest.set_skipped(sorted(after))

    def add_copy(self, file: IndexedFile) -> None:
        """Record a file whose text is an indexed document's, as another file of that document: nothing is embedded.

        What was indexed from that file before (another text) is removed.

        Args:
            file: The copy, its ``doc_id`` the document with its text.
        """
        recorded = self.file(file.source)
        if recorded is not None and recorded.doc_id == file.doc_id:
            return
        self.remove_file(file.source)
        self.start_next_generation()
        assert self.manifest is not None
        self.manifest.put_file(file)

    def remove_file(self, source: str) -> None:
        """Remove a file from the index: its document, or, for an identical copy, only the copy.

        A document whose text lives on in identical copies stays indexed under the first of them, with its
        propositions: its points move there with their vectors, so nothing is embedded again.

        Args:
            source: The file's resolved path, as the index holds it.
        """
        recorded = self.file(source)
        if recorded is not None and recorded.doc_id != document_id(source):
            self.start_next_generation()
            assert self.manifest is not None
            self.manifest.forget_file(source)
            return
        entry = self.known(document_id(source))
        if entry is not None and not self._hand_over(entry):
            self.remove(entry.doc_id)

    def remove(self, doc_id: str) -> None:
        """Remove a document, its points and its propositions (its identical copies too: see :meth:`remove_file`)."""
        if proposed_from(doc_id) is None:
            self.remove(propositions_id(doc_id))
        if self.known(doc_id) is None:
            return
        self.start_next_generation()
        assert self.manifest is not None
        old = self.manifest.document(doc_id)
        assert old is not None
        self._drop_points(old, keep=0)
        self.manifest.remove_document(doc_id)

    def _hand_over(self, entry: DocumentEntry) -> bool:
        """Make the first identical copy of a document the document, if it has one; returns whether it had.

        Its points and propositions move to the copy's ids with their vectors, so nothing is embedded; the
        document's own file is forgotten.
        """
        heirs = [file for file in self.files(entry.doc_id) if file.source != entry.source]
        if not heirs:
            return False
        heir, doc_id = heirs[0], entry.doc_id
        self.start_next_generation()
        assert self.manifest is not None
        self.settle()  # its points may still be on their way
        new_id = document_id(heir.source)
        self.manifest.forget_file(entry.source)
        self.manifest.move_files(doc_id, new_id)
        for old_id, moved_id in ((doc_id, new_id), (propositions_id(doc_id), propositions_id(new_id))):
            moved = self.manifest.document(old_id)
            if moved is None:
                continue
            version = self.manifest.indexing_version(old_id)
            self._move_points(moved, moved_id, heir)
            self.manifest.remove_document(old_id)
            self.manifest.put_document(replace(moved, doc_id=moved_id, source=heir.source, also=()), version)
            if old_id in self._embedded_documents:
                self._embedded_documents.add(moved_id)
        return True

    def _move_points(self, entry: DocumentEntry, doc_id: str, heir: IndexedFile) -> None:
        """Write a document's points again under another document's ids, source and path, with their vectors."""
        assert self.store is not None
        ids = document_point_ids(entry.doc_id, range(entry.sentence_count))
        for start in range(0, len(ids), 1024):
            chunk = ids[start : start + 1024]
            stored = self.store.retrieve(chunk, dense=True, sparse=True)
            points = [
                SentencePoint(
                    replace(point.sentence, doc_id=doc_id, source=heir.source, path=heir.path),
                    point.dense,
                    point.sparse or SparseVector([], []),
                )
                for point in stored.values()
                if point.dense is not None
            ]
            self.store.upsert(points)
            self.store.delete(chunk)
            self._since_optimize += len(points)
        self._optimize_in_parts()

    def _drop_points(self, entry: DocumentEntry, keep: int) -> None:
        assert self.manifest is not None and self.store is not None
        ids = document_point_ids(entry.doc_id, range(keep, entry.sentence_count))
        for start in range(0, len(ids), 1024):
            chunk = ids[start : start + 1024]
            stored = self.store.retrieve(chunk, sparse=True)
            counts: Counter[int] = Counter()
            for point in stored.values():
                if point.sparse is not None:
                    counts.update(point.sparse.indices)
            self.manifest.add_document_frequencies(counts, sign=-1)
            self.store.delete(chunk)

    def _avg_length(self) -> float:
        assert self.manifest is not None
        return self.manifest.avg_length

    def write_points(
        self, sentences: Sequence[StoredSentence], terms: Sequence[Sequence[str]], vectors: np.ndarray
    ) -> None:
        """Write the points of documents added: each sentence with its dense vector, and a BM25 vector of its terms.

        Args:
            sentences: Whole documents' sentences as stored (their boundaries measured), each document's
                consecutive and in order.
            terms: Each sentence's BM25 terms, encoded as this index weighs them.
            vectors: Their dense vectors, one row each.
        """
        assert self.manifest is not None and self.store is not None
        if not sentences:
            return
        if self._avg_length() <= 0:
            # The first batch of a new index: estimate the average length from its
            # 2,048+ sentences (the commit re-weights if the final average differs).
            lengths = [len(t) for t in terms]
            self.manifest.set_meta(avg_length=sum(lengths) / len(lengths))
        avg = self._avg_length()
        counts: Counter[int] = Counter()
        size = self.embedder.batch_size
        for start in range(0, len(sentences), size):
            points = []
            for i in range(start, min(start + size, len(sentences))):
                sparse = document_vector(terms[i], avg)
                counts.update(sparse.indices)
                points.append(SentencePoint(sentences[i], vectors[i], sparse))
            self.store.upsert(points)
            self.report.written += len(points)
            self._since_optimize += len(points)
        self._unwritten -= len(sentences)
        self.manifest.add_document_frequencies(counts)
        self._optimize_in_parts()

    def _nothing_on_the_way(self) -> None:
        """What :attr:`settle` does when no stage writes points: there must be none waiting."""
        if self._unwritten:
            raise RuntimeError(f"{self._unwritten} sentences added were never given their points")

    def _optimize_in_parts(self) -> None:
        """Build HNSW over what was written once enough points wait (Edge), so no single build grows large."""
        assert self.store is not None
        if isinstance(self.store, EdgeStore) and self._since_optimize >= OPTIMIZE_EVERY:
            self.store.optimize()
            self.store.reopen()
            self._since_optimize = 0

    # ------------------------------------------------------------------ semantic boundaries

    def update_boundaries(self) -> None:
        """Measure again, from their stored vectors, the boundaries of documents measured another way.

        When :attr:`boundaries` measures another way (its version) than the index was written
        with (or the index predates boundaries), every document this run did not embed has its
        similarities and ranks recomputed and its points written again with the vectors they
        have: nothing is embedded. :meth:`commit` calls it; without :attr:`boundaries` it does nothing.
        """
        if self.boundaries is None:
            return
        if self.manifest is None or self.manifest.meta("boundaries") == str(self.boundaries.version):
            return
        stale = [
            entry
            for entry in self.manifest.documents()
            if entry.doc_id not in self._embedded_documents and proposed_from(entry.doc_id) is None
        ]
        if stale:
            self.start_next_generation()
        for number, entry in enumerate(stale, 1):
            self._measure_again(entry)
            if self.progress:
                self.progress("measuring semantic boundaries", number, len(stale))
        if self.tmp is not None:
            assert self.manifest is not None
            self.manifest.set_meta(boundaries=self.boundaries.version)

    def _measure_again(self, entry: DocumentEntry) -> None:
        assert self.store is not None and self.boundaries is not None
        ids = document_point_ids(entry.doc_id, range(entry.sentence_count))
        stored: dict[str, StoredPoint] = {}
        for start in range(0, len(ids), 1024):
            stored.update(self.store.retrieve(ids[start : start + 1024], dense=True, sparse=True))
        points = [stored[pid] for pid in ids if pid in stored]
        if len(points) != len(ids) or any(p.dense is None for p in points):
            return  # a damaged document: the checks at open handle it
        vectors = np.stack([p.dense for p in points if p.dense is not None])
        sentences = self.boundaries.measure([p.sentence for p in points], vectors)
        for start in range(0, len(points), 1024):
            self.store.upsert(
                [
                    SentencePoint(sentence, vector, point.sparse or SparseVector([], []))
                    for sentence, vector, point in zip(
                        sentences[start : start + 1024], vectors[start : start + 1024], points[start : start + 1024]
                    )
                ]
            )
        self.report.rederived += len(points)
        self._since_optimize += len(points)
        self._optimize_in_parts()

    # ------------------------------------------------------------------ finishing

    def _reweight_all(self, old_avg: float, new_avg: float) -> None:
        assert self.manifest is not None and self.store is not None
        done = 0
        for entry in list(self.manifest.documents()):
            ids = document_point_ids(entry.doc_id, range(entry.sentence_count))
            for start in range(0, len(ids), 1024):
                stored = self.store.retrieve(ids[start : start + 1024], sparse=True)
                keys = [pid for pid, p in stored.items() if p.sparse is not None and p.sparse.indices]
                vectors = [
                    SparseVector(
                        stored[pid].sparse.indices,  # type: ignore[union-attr]
                        reweight(
                            stored[pid].sparse.values,  # type: ignore[union-attr]
                            stored[pid].sentence.terms,
                            old_avg,
                            new_avg,
                        ),
                    )
                    for pid in keys
                ]
                self.store.update_sparse(keys, vectors)
                done += len(keys)
        self.report.reweighted = done

    def commit(self) -> str | None:
        """Finish the generation and make it current; with nothing changed, publish nothing.

        Returns:
            The current generation's name (None when nothing was ever published).
        """
        self.update_boundaries()
        if self.tmp is None:
            self._close_parts()
            self.report.deleted_generations = generations.sweep(self.root)
            return self._current
        return self._publish(final=True)

    def publish_finished(self) -> None:
        """Publish the documents written so far, and go on writing the next generation from them.

        Searches answer from them meanwhile. Each document published is whole: its sentences were embedded
        and written together (none waits when this is called after a batch). BM25's average length stays the
        one the run started with until :meth:`commit` re-weights, and the engine builds its search graph over
        the new points then (or every :data:`OPTIMIZE_EVERY` points): a search meanwhile scores them all.
        Points still on their way are written first (:attr:`settle`).
        """
        self.update_boundaries()
        if self.tmp is None:
            return
        self._publish(final=False)
        self.report.published_along += 1
        self.start_next_generation()

    def _publish(self, *, final: bool) -> str:
        """Write the points on their way, close and publish the generation being written; returns its name."""
        self.settle()
        self._nothing_on_the_way()
        assert self.tmp is not None and self.manifest is not None and self.store is not None
        sentences, terms = self.manifest.totals()
        actual = terms / sentences if sentences else 0.0
        used = self._avg_length()
        limit = REWEIGHT_DRIFT if sentences <= REWEIGHT_MAX else REWEIGHT_DRIFT_LARGE
        if final and sentences and used > 0 and abs(actual - used) / actual > limit:
            if self.progress:
                self.progress("re-weighting", 0, sentences)
            self._reweight_all(used, actual)
            self.manifest.set_meta(avg_length=actual)
        elif sentences and used <= 0:
            self.manifest.set_meta(avg_length=actual)
        self.manifest.db.execute("DELETE FROM term_df WHERE df <= 0")
        self.manifest.set_meta(points=sentences)
        self.manifest.commit()
        if final:
            if self.progress:
                self.progress("optimizing", 0, 0)
            self.store.optimize()
        self.store.flush()
        self._close_parts()
        name = generations.publish(self.root, self.tmp)
        self.tmp = None
        self._current = name
        self._start_empty = False
        self.report.published = True
        self.report.deleted_generations += generations.sweep(self.root)
        return name

    def _close_parts(self) -> None:
        """Close the store and the manifest open now (the current generation's, or the next one's)."""
        store, manifest = self.store, self.manifest
        self.store = self.manifest = None
        try:
            if isinstance(store, EdgeStore):
                store.close()
        finally:
            if manifest is not None:
                manifest.close()

    def _abandon(self) -> None:
        try:
            self._close_parts()
        except EngineError:
            pass  # closing after a failure must not hide it
        finally:
            if self.tmp is not None:
                shutil.rmtree(self.tmp, ignore_errors=True)
                self.tmp = None
            if self._lock is not None:
                self._lock.__exit__(None, None, None)
                self._lock = None

    def __exit__(self, exc_type: object, *rest: object) -> None:
        self._abandon()
