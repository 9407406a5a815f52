"""Ingestion: files in, a committed index out, or the previous index untouched.

Order of work, chosen so that any failure leaves the last committed snapshot
whole and queryable:

1. read and split the files; unchanged documents (same content hash) are kept;
2. embed the sentences of new and changed documents in batches and upsert them
   under ids of the new document version (vectors already stored by an
   interrupted run are found by id and not embedded again);
3. commit the new snapshot (documents, sentences, BM25) with one atomic rename;
4. only then delete the vectors no committed sentence names any more.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from selfcrag.errors import EmbeddingServiceError, UserError
from selfcrag.files.loaders import LoadedFile, SkippedFile, discover, nothing_to_ingest, read_document
from selfcrag.index.embed import Embedder, load_embedder, model_slug
from selfcrag.index.lock import writer_lock
from selfcrag.index.records import DocumentRecord, SentenceRecord, content_hash, document_id
from selfcrag.index.snapshot import IndexedDocument, IndexSnapshot
from selfcrag.index.tokenize import tokenize
from selfcrag.index.vectors import VectorStore
from selfcrag.settings import Settings
from selfcrag.split import document_title, split_sentences

# Sentences gathered before they are embedded and upserted together.
FLUSH_SENTENCES = 2048

ProgressCallback = Callable[[str, int, int], None]


@dataclass
class IngestSummary:
    """What an ingest did.

    Attributes:
        added: New documents.
        updated: Documents whose content changed.
        unchanged: Documents already indexed as they are.
        removed: Documents pruned because their files are gone.
        documents: Documents in the index after the run.
        sentences: Sentences in the index after the run.
        embedded: Sentences embedded by this run.
        seconds: Wall time of the run.
        embed_seconds: Time spent inside the embedding model.
        skipped: Files not ingested, with the reason.
    """

    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    documents: int = 0
    sentences: int = 0
    embedded: int = 0
    seconds: float = 0.0
    embed_seconds: float = 0.0
    skipped: list[SkippedFile] = field(default_factory=list)


def collection_name(settings: Settings, embedder: Embedder) -> str:
    """Name the Qdrant collection for an embedding model.

    Args:
        settings: The settings (for the collection prefix).
        embedder: The embedding model.

    Returns:
        ``<prefix>_<model>``: vectors of different models never mix.
    """
    return f"{settings.collection_prefix}_{model_slug(embedder.name)}"


def index_document(loaded: LoadedFile, max_chars: int) -> IndexedDocument:
    """Split and tokenise one document.

    Args:
        loaded: The decoded file.
        max_chars: Longest sentence the embedder takes.

    Returns:
        The document with its sentence records and BM25 tokens.
    """
    source = str(loaded.path)
    doc_id = document_id(source)
    spans = split_sentences(loaded.text, max_chars=max_chars)
    sentences = [
        SentenceRecord(doc_id, position, span.start, span.end, span.section, span.section_index, span.kind)
        for position, span in enumerate(spans)
    ]
    tokens = [tokenize(s.searchable(loaded.text[s.start : s.end])) for s in sentences]
    record = DocumentRecord(
        doc_id=doc_id,
        source=source,
        title=document_title(loaded.text, loaded.path.stem),
        text=loaded.text,
        content_hash=content_hash(loaded.text),
        sentence_count=len(sentences),
    )
    return IndexedDocument(record, sentences, tokens)


class _VectorWriter:
    """Embeds and upserts the missing sentence vectors of documents, in batches."""

    def __init__(self, store: VectorStore, collection: str, embedder: Embedder,
                 progress: ProgressCallback | None) -> None:
        self.store = store
        self.collection = collection
        self.embedder = embedder
        self.progress = progress
        self.pending: list[tuple[str, str, dict[str, object]]] = []
        self.embedded = 0
        self.embed_seconds = 0.0
        self.total = 0

    def add(self, doc: IndexedDocument) -> None:
        ids = doc.point_ids()
        present = self.store.existing(self.collection, ids)
        text = doc.record.text
        for pid, sentence in zip(ids, doc.sentences, strict=True):
            if pid in present:
                continue
            payload: dict[str, object] = {
                "doc_id": sentence.doc_id,
                "doc_hash": doc.record.content_hash,
                "position": sentence.position,
                "section_index": sentence.section_index,
                "text": text[sentence.start : sentence.end],
            }
            self.pending.append((pid, sentence.searchable(text[sentence.start : sentence.end]), payload))
        if len(self.pending) >= FLUSH_SENTENCES:
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        # Similar lengths in one batch waste less padding inside the model.
        batch = sorted(self.pending, key=lambda item: len(item[1]))
        self.pending = []
        size = self.embedder.batch_size
        for start in range(0, len(batch), size):
            chunk = batch[start : start + size]
            began = time.perf_counter()
            vectors = self.embedder.embed_passages([text for _, text, _ in chunk])
            self.embed_seconds += time.perf_counter() - began
            self.store.upsert(self.collection, [pid for pid, _, _ in chunk], np.asarray(vectors),
                              [payload for _, _, payload in chunk])
            self.embedded += len(chunk)
            if self.progress:
                self.progress("embedding", self.embedded, self.total)


def ingest(
    paths: Sequence[str | Path],
    settings: Settings,
    *,
    prune: bool = False,
    progress: ProgressCallback | None = None,
) -> IngestSummary:
    """Index files and folders into the data directory.

    Args:
        paths: Files and folders to ingest (folders recursively).
        settings: Where the index lives and which embedder to use.
        prune: Also remove indexed documents whose files no longer exist.
        progress: Called as ``progress(phase, done, total)``.

    Returns:
        What was done, including the files skipped and why.

    Raises:
        UserError: Nothing to read: every path is missing, or holds no supported file.
    """
    began = time.perf_counter()
    summary = IngestSummary()
    files, skipped = discover(paths)
    if not files and not prune:  # a typo or a folder of other files: say so, and leave the index alone
        raise UserError(nothing_to_ingest(paths, skipped))
    summary.skipped.extend(skipped)
    with writer_lock(settings.data_dir):
        embedder = load_embedder(settings.embedding_model, settings.openai_api_key, settings.embedding_base_url)
        store = VectorStore(settings.data_dir, settings.qdrant_url, settings.qdrant_api_key)
        try:
            collection = collection_name(settings, embedder)
            store.ensure_collection(collection, embedder.dim)
            previous = IndexSnapshot.load(settings.data_dir) or IndexSnapshot(embedder.name, collection)

            changed: list[IndexedDocument] = []
            seen: set[str] = set()
            for number, path in enumerate(files, 1):
                loaded = read_document(path)
                if progress:
                    progress("reading", number, len(files))
                if isinstance(loaded, SkippedFile):
                    summary.skipped.append(loaded)
                    continue
                doc_id = document_id(str(loaded.path))
                seen.add(doc_id)
                old = previous.documents.get(doc_id)
                if old is not None and old.record.content_hash == content_hash(loaded.text):
                    summary.unchanged += 1
                    continue
                changed.append(index_document(loaded, embedder.max_chars))
                if old is None:
                    summary.added += 1
                else:
                    summary.updated += 1

            removed = _gone(previous, seen) if prune else []
            summary.removed = len(removed)
            # A different embedding model means a different collection: the
            # kept documents need vectors there too, from their stored text.
            carried = [] if previous.collection == collection else [
                doc for doc_id, doc in previous.documents.items()
                if doc_id not in removed and doc_id not in {d.record.doc_id for d in changed}
            ]

            writer = _VectorWriter(store, collection, embedder, progress)
            writer.total = sum(len(d.sentences) for d in (*changed, *carried))
            try:
                for doc in (*changed, *carried):
                    writer.add(doc)
                writer.flush()
            except EmbeddingServiceError as error:
                raise EmbeddingServiceError(
                    f"{error}; the previous index is unchanged, and running the same ingest again "
                    f"keeps the {writer.embedded} sentences already embedded"
                ) from None

            snapshot = previous.replaced(changed, removed, embedder.name, collection)
            if carried or changed or removed or not (settings.data_dir / "snapshot.pkl").exists():
                snapshot.save(settings.data_dir)
            _delete_unreferenced(store, collection, snapshot)
            if previous.collection != collection and previous.documents:
                store.client.delete_collection(previous.collection)

            summary.documents = len(snapshot.documents)
            summary.sentences = len(snapshot.sentences)
            summary.embedded = writer.embedded
            summary.embed_seconds = writer.embed_seconds
        finally:
            store.close()
    summary.seconds = time.perf_counter() - began
    return summary


def _gone(snapshot: IndexSnapshot, seen: Iterable[str]) -> list[str]:
    """Ids of indexed documents whose source files no longer exist."""
    seen = set(seen)
    return [doc_id for doc_id, doc in snapshot.documents.items()
            if doc_id not in seen and not Path(doc.record.source).exists()]


def _delete_unreferenced(store: VectorStore, collection: str, snapshot: IndexSnapshot) -> None:
    """Delete vectors that no committed sentence names: old versions, pruned documents, orphans of killed runs."""
    keep = snapshot.row_of_point
    stale = [pid for pid in store.all_ids(collection) if pid not in keep]
    store.delete(collection, stale)
