"""Writing the index: documents stream through split -> tokenise -> embed -> upsert in batches.

:class:`IndexWriter` holds the writer lock, starts the next generation (a copy
of the current one), checks it against its manifest, takes documents one at a
time and publishes the generation when done. Memory stays bounded: at most
``FLUSH_SENTENCES`` sentences (plus one document) wait to be embedded.
"""

from __future__ import annotations

import shutil
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from selfcrag.errors import UserError
from selfcrag.index import generations
from selfcrag.index.embed import Embedder
from selfcrag.index.manifest import INDEXING_VERSION, MANIFEST_FILE, DocumentEntry, Manifest
from selfcrag.index.points import SentencePoint, StoredSentence, document_point_ids
from selfcrag.index.sparse import K1, B, SparseVector, document_vector, reweight
from selfcrag.index.store import EdgeStore, IndexOptions, SentenceStore, ServerStore
from selfcrag.index.tokenize import TOKENIZER_VERSION, tokenize
from selfcrag.split import document_title, split_sentences

# Sentences gathered before they are embedded and upserted together.
FLUSH_SENTENCES = 2048
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

ProgressCallback = Callable[[str, int, int], None]


@dataclass
class PreparedDocument:
    """A document split into sentences, with their BM25 terms."""

    entry: DocumentEntry
    sentences: list[StoredSentence]
    tokens: list[list[str]]


def prepare_document(
    doc_id: str, source: str, text: str, content_hash: str, max_chars: int, title: str | None = None
) -> PreparedDocument:
    """Split and tokenise one document.

    Args:
        doc_id: Its stable id.
        source: Its path.
        text: The decoded text.
        content_hash: SHA-256 of ``text``.
        max_chars: Longest sentence the embedder takes.
        title: Its title (derived from the text when None).

    Returns:
        The sentences as they will be stored, with their terms.
    """
    spans = split_sentences(text, max_chars=max_chars)
    bounds: dict[int, tuple[int, int]] = {}
    for position, span in enumerate(spans):
        first, _ = bounds.get(span.section_index, (position, position))
        bounds[span.section_index] = (first, position)
    sentences: list[StoredSentence] = []
    tokens: list[list[str]] = []
    for position, span in enumerate(spans):
        first, last = bounds[span.section_index]
        following = spans[position + 1].start if position + 1 < len(spans) else span.end
        base = StoredSentence(
            doc_id=doc_id,
            position=position,
            start=span.start,
            end=span.end,
            text=text[span.start : span.end],
            tail=text[span.end : following],
            section=tuple(span.section),
            section_index=span.section_index,
            section_first=first,
            section_last=last,
            section_start=spans[first].start,
            section_end=spans[last].end,
            kind=span.kind,
            source=source,
            content_hash=content_hash,
            terms=0,
        )
        terms = tokenize(base.searchable())
        tokens.append(terms)
        sentences.append(replace(base, terms=len(terms)))
    entry = DocumentEntry(
        doc_id,
        source,
        title if title is not None else document_title(text, Path(source).stem),
        content_hash,
        len(sentences),
        sum(len(t) for t in tokens),
    )
    return PreparedDocument(entry, sentences, tokens)


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
        rebuilt: The engine's data was unreadable or gone and was started anew.
        embedded: Sentences embedded.
        embed_seconds: Time inside the embedding model.
        reweighted: Sparse vectors re-weighted for a new average length.
        deleted_generations: Old generations removed.
    """

    repaired: list[DocumentEntry] = field(default_factory=list)
    rebuilt: str | None = None
    embedded: int = 0
    embed_seconds: float = 0.0
    reweighted: int = 0
    deleted_generations: list[str] = field(default_factory=list)


class IndexWriter:
    """Builds the next generation of a data folder's index.

    Args:
        data_dir: The data folder.
        embedder: The embedding model.
        server: The Qdrant server collection; None for the embedded engine.
        options: How the collection is built.
        on_wait: Told when this writer waits for another one.
        progress: Called as ``progress(phase, done, total)``.
    """

    def __init__(
        self,
        data_dir: Path,
        embedder: Embedder,
        *,
        server: ServerTarget | None = None,
        options: IndexOptions | None = None,
        on_wait: Callable[[str], None] | None = None,
        progress: ProgressCallback | None = None,
    ) -> None:
        self.root = generations.index_root(data_dir)
        self.embedder = embedder
        self.server = server
        self.options = options or IndexOptions()
        self.on_wait = on_wait
        self.progress = progress
        self.report = WriteReport()
        self._pending: list[tuple[StoredSentence, list[str]]] = []
        self._since_optimize = 0
        self._lock: Any = None
        self.tmp: Path | None = None
        self.store: SentenceStore | None = None
        self.manifest: Manifest | None = None

    # ------------------------------------------------------------------ opening

    def __enter__(self) -> IndexWriter:
        self._lock = generations.writer_lock(self.root, self.on_wait)
        self._lock.__enter__()
        try:
            self._open()
        except BaseException:
            self._abandon()
            raise
        return self

    def _open(self) -> None:
        self.tmp = generations.begin(self.root)
        try:
            self.manifest = Manifest(self.tmp / MANIFEST_FILE, writable=True)
        except UserError as error:
            self.report.rebuilt = str(error)
            shutil.rmtree(self.tmp)
            self.tmp.mkdir()
            self.manifest = Manifest(self.tmp / MANIFEST_FILE, writable=True)
        manifest = self.manifest
        old_embedder = manifest.meta("embedder")
        other_model = old_embedder not in (None, self.embedder.name)
        if other_model or manifest.meta("tokenizer") not in (None, str(TOKENIZER_VERSION)):
            # Another model or tokenizer: vectors or terms of the old points do not fit.
            made_by = f"built with {old_embedder!r}" if other_model else "tokenised by an older selfcrag"
            self.report.rebuilt = f"the index was {made_by}; re-indexing every document"
            self.report.repaired = list(manifest.documents())
            self._reset_manifest()
            self.store = self._fresh_store()
        else:
            self.store = self._open_store()
        manifest.set_meta(embedder=self.embedder.name, dim=self.embedder.dim, tokenizer=TOKENIZER_VERSION, k1=K1, b=B)
        if manifest.meta("avg_length") is None:
            manifest.set_meta(avg_length=0)
        self._verify()
        manifest.begin()

    def _open_store(self) -> SentenceStore:
        assert self.manifest is not None and self.tmp is not None
        if self.server is not None:
            store = ServerStore(self.server.client, self.server.collection, self.embedder.dim, self.options)
            if not store.exists():
                if self.manifest.document_count():
                    self.report.rebuilt = f"the Qdrant collection {self.server.collection} is gone; rebuilding it"
                    self.report.repaired = list(self.manifest.documents())
                    self._reset_manifest()
                store.create()
            return store
        shard = self.tmp / SHARD_DIR
        if shard.exists():
            try:
                return EdgeStore(shard, options=self.options)
            except Exception as error:  # noqa: BLE001 - any failure to load means a damaged shard
                self.report.rebuilt = f"the index data was damaged ({type(error).__name__}); rebuilding it"
        elif self.manifest.document_count():
            self.report.rebuilt = "the index data was missing; rebuilding it"
        if self.report.rebuilt:
            self.report.repaired = list(self.manifest.documents())
            self._reset_manifest()
        return self._fresh_store()

    def _fresh_store(self) -> SentenceStore:
        assert self.tmp is not None
        if self.server is not None:
            store = ServerStore(self.server.client, self.server.collection, self.embedder.dim, self.options)
            if store.exists():
                store.drop()
            store.create()
            return store
        shutil.rmtree(self.tmp / SHARD_DIR, ignore_errors=True)
        return EdgeStore(self.tmp / SHARD_DIR, self.embedder.dim, create=True, options=self.options)

    def _reset_manifest(self) -> None:
        assert self.manifest is not None
        self.manifest.db.execute("DELETE FROM documents")
        self.manifest.db.execute("DELETE FROM term_df")
        self.manifest.set_meta(avg_length=0)

    def _verify(self) -> None:
        """Compare the points with the manifest; documents with missing points are indexed again."""
        assert self.manifest is not None and self.store is not None
        expected, _ = self.manifest.totals()
        if self.store.count() == expected:
            return
        broken = []
        for entry in self.manifest.documents():
            ids = document_point_ids(entry.doc_id, range(entry.sentence_count))
            if len(self.store.existing(ids)) != len(ids):
                broken.append(entry)
        for entry in broken:
            self.remove(entry.doc_id)
        self.report.repaired.extend(broken)
        if not broken:
            # Stray points that no document names (a killed server-side write): rebuild the count.
            self.report.rebuilt = self.report.rebuilt or "stray points found"

    # ------------------------------------------------------------------ documents

    def known(self, doc_id: str) -> DocumentEntry | None:
        """The indexed version of a document, if any."""
        assert self.manifest is not None
        return self.manifest.document(doc_id)

    def indexed_now(self, doc_id: str) -> bool:
        """Whether a document was read, split and tokenised by this version (:data:`INDEXING_VERSION`)."""
        assert self.manifest is not None
        return self.manifest.indexing_version(doc_id) == INDEXING_VERSION

    def holds(self, old: DocumentEntry, document: PreparedDocument) -> bool:
        """Whether a document's stored points are the ones it would be written as now.

        An unchanged file indexed by an older version of the reading, splitting
        and tokenising needs no new embedding when its sentences and term count
        come out the same.

        Args:
            old: The document as the manifest has it.
            document: The same file, prepared by this version.
        """
        assert self.store is not None
        if old.sentence_count != len(document.sentences) or old.terms != document.entry.terms:
            return False
        for start in range(0, len(document.sentences), 1024):
            chunk = document.sentences[start : start + 1024]
            stored = self.store.retrieve([s.point_id for s in chunk])
            if any(s.point_id not in stored or stored[s.point_id].sentence != s for s in chunk):
                return False
        return True

    def mark_current(self, entry: DocumentEntry) -> None:
        """Record that a document's points are what this version writes (see :meth:`holds`)."""
        assert self.manifest is not None
        self.manifest.put_document(entry)

    def documents(self) -> list[DocumentEntry]:
        """All documents of the generation being written."""
        assert self.manifest is not None
        return list(self.manifest.documents())

    def add(self, document: PreparedDocument) -> None:
        """Index a new or changed document (its old version, if any, is replaced)."""
        assert self.manifest is not None
        old = self.manifest.document(document.entry.doc_id)
        if old is not None:
            self._drop_points(old, keep=0)
        self.manifest.put_document(document.entry)
        self._pending.extend(zip(document.sentences, document.tokens, strict=True))
        if len(self._pending) >= FLUSH_SENTENCES:
            self._flush()

    def remove(self, doc_id: str) -> None:
        """Remove a document and its points."""
        assert self.manifest is not None
        old = self.manifest.document(doc_id)
        if old is None:
            return
        self._drop_points(old, keep=0)
        self.manifest.remove_document(doc_id)

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

    def _flush(self) -> None:
        assert self.manifest is not None and self.store is not None
        if not self._pending:
            return
        if self._avg_length() <= 0:
            # The first batch of a new index: estimate the average length from its
            # 2,048+ sentences (the commit re-weights if the final average differs).
            lengths = [len(t) for _, t in self._pending]
            self.manifest.set_meta(avg_length=sum(lengths) / len(lengths))
        batch = sorted(self._pending, key=lambda item: len(item[0].text))
        self._pending = []
        avg = self._avg_length()
        counts: Counter[int] = Counter()
        size = self.embedder.batch_size
        for start in range(0, len(batch), size):
            chunk = batch[start : start + size]
            began = time.perf_counter()
            vectors = np.asarray(self.embedder.embed_passages([s.searchable() for s, _ in chunk]))
            self.report.embed_seconds += time.perf_counter() - began
            points = []
            for (sentence, tokens), vector in zip(chunk, vectors, strict=True):
                sparse = document_vector(tokens, avg)
                counts.update(sparse.indices)
                points.append(SentencePoint(sentence, vector, sparse))
            self.store.upsert(points)
            self.report.embedded += len(chunk)
            self._since_optimize += len(chunk)
        if self.progress:
            self.progress("embedding", self.report.embedded, self.report.embedded)
        self.manifest.add_document_frequencies(counts)
        if isinstance(self.store, EdgeStore) and self._since_optimize >= OPTIMIZE_EVERY:
            self.store.optimize()
            self.store.reopen()
            self._since_optimize = 0

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

    def commit(self) -> str:
        """Finish the generation and make it current.

        Returns:
            The new generation's name.
        """
        assert self.manifest is not None and self.store is not None and self.tmp is not None
        self._flush()
        sentences, terms = self.manifest.totals()
        actual = terms / sentences if sentences else 0.0
        used = self._avg_length()
        limit = REWEIGHT_DRIFT if sentences <= REWEIGHT_MAX else REWEIGHT_DRIFT_LARGE
        if sentences and used > 0 and abs(actual - used) / actual > limit:
            if self.progress:
                self.progress("re-weighting", 0, sentences)
            self._reweight_all(used, actual)
            self.manifest.set_meta(avg_length=actual)
        elif sentences and used <= 0:
            self.manifest.set_meta(avg_length=actual)
        self.manifest.db.execute("DELETE FROM term_df WHERE df <= 0")
        self.manifest.set_meta(points=sentences)
        self.manifest.commit()
        if self.progress:
            self.progress("optimizing", 0, 0)
        self.store.optimize()
        self.store.flush()
        if self.server is None:
            self.store.close()
            # Open and close once more: loading settles files the engine rewrites on
            # load, so later readers only ever rewrite them with identical bytes.
            EdgeStore(self.tmp / SHARD_DIR).close()
        self.manifest.close()
        self.store = None
        self.manifest = None
        name = generations.publish(self.root, self.tmp)
        self.tmp = None
        self.report.deleted_generations = generations.sweep(self.root)
        return name

    def _abandon(self) -> None:
        if self.store is not None:
            try:
                self.store.close() if self.server is None else None
            except Exception:  # noqa: BLE001 - closing after a failure must not hide it
                pass
        if self.manifest is not None:
            self.manifest.close()
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
        if self._lock is not None:
            self._lock.__exit__(None, None, None)
            self._lock = None

    def __exit__(self, exc_type: object, *rest: object) -> None:
        self._abandon()
