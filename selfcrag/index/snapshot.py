"""The committed state of the index, written atomically.

The snapshot holds the documents, their sentences, the BM25 token lists and
the BM25 matrix. Vectors live in Qdrant under ids derived from (document,
version, position), so new vectors can be written before the snapshot that
uses them is committed. Committing is one ``os.replace`` of the snapshot
file: a failed or killed ingest leaves the previous snapshot, and the vectors
it names, untouched.
"""

from __future__ import annotations

import os
import pickle
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from selfcrag.errors import UserError
from selfcrag.index.bm25 import SentenceBM25
from selfcrag.index.records import DocumentRecord, SentenceRecord, point_id
from selfcrag.index.tokenize import TOKENIZER_VERSION, tokenize

SNAPSHOT_FILE = "snapshot.pkl"
FORMAT_VERSION = 1


@dataclass
class IndexedDocument:
    """A document together with its sentences and their BM25 tokens."""

    record: DocumentRecord
    sentences: list[SentenceRecord]
    tokens: list[list[str]]

    def point_ids(self) -> list[str]:
        """Return the vector ids of this document version's sentences."""
        return [point_id(self.record.doc_id, self.record.content_hash, s.position) for s in self.sentences]


@dataclass
class IndexSnapshot:
    """Documents, sentences and BM25, as last committed.

    Attributes:
        embedder: Name of the embedding model the vectors were made with.
        collection: Qdrant collection holding the vectors.
        documents: Indexed documents in ingestion order.
    """

    embedder: str
    collection: str
    documents: dict[str, IndexedDocument] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._derive()

    def _derive(self, bm25: SentenceBM25 | None = None) -> None:
        """Build the flat sentence table, id lookups and (unless given) BM25 from the documents."""
        self.sentences: list[SentenceRecord] = []
        self.point_ids: list[str] = []
        self.first_row: dict[str, int] = {}
        tokens: list[list[str]] = []
        for doc_id, doc in self.documents.items():
            self.first_row[doc_id] = len(self.sentences)
            self.sentences.extend(doc.sentences)
            self.point_ids.extend(doc.point_ids())
            tokens.extend(doc.tokens)
        self.row_of_point = {pid: row for row, pid in enumerate(self.point_ids)}
        self.bm25 = bm25 if bm25 is not None else SentenceBM25(tokens)

    def __getstate__(self) -> dict[str, object]:
        # The lookups are cheap to derive but large to store: keep only the source.
        return {"version": FORMAT_VERSION, "tokenizer": TOKENIZER_VERSION, "embedder": self.embedder,
                "collection": self.collection, "documents": self.documents, "bm25": self.bm25}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.embedder = state["embedder"]  # type: ignore[assignment]
        self.collection = state["collection"]  # type: ignore[assignment]
        self.documents = state["documents"]  # type: ignore[assignment]
        if state.get("tokenizer") == TOKENIZER_VERSION:
            self._derive(state["bm25"])  # type: ignore[arg-type]
            return
        # Saved by a version that tokenised differently: re-tokenise from the
        # stored text (seconds), so BM25 terms match the queries' terms.
        for doc in self.documents.values():
            doc.tokens = [tokenize(s.searchable(doc.record.text[s.start : s.end])) for s in doc.sentences]
        self._derive()

    def replaced(self, updates: Iterable[IndexedDocument], removed: Iterable[str],
                 embedder: str | None = None, collection: str | None = None) -> IndexSnapshot:
        """Return a new snapshot with documents added or replaced and others removed.

        Args:
            updates: New or changed documents.
            removed: Ids of documents to drop.
            embedder: The embedding model of the new snapshot, if it changed.
            collection: Its collection, if it changed.

        Returns:
            The new snapshot (this one is left as it is).
        """
        documents = dict(self.documents)
        for doc_id in removed:
            documents.pop(doc_id, None)
        for doc in updates:
            documents[doc.record.doc_id] = doc
        return IndexSnapshot(embedder or self.embedder, collection or self.collection, documents)

    def sentence_text(self, row: int) -> str:
        """Return the text of the sentence at a row of the sentence table."""
        sentence = self.sentences[row]
        return self.documents[sentence.doc_id].record.text[sentence.start : sentence.end]

    def save(self, directory: Path) -> None:
        """Commit the snapshot atomically into ``directory``.

        Args:
            directory: The data directory.
        """
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".snapshot-", suffix=".tmp", dir=directory)
        try:
            with os.fdopen(fd, "wb") as handle:
                pickle.dump(self, handle, protocol=pickle.HIGHEST_PROTOCOL)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, directory / SNAPSHOT_FILE)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    @staticmethod
    def load(directory: Path) -> IndexSnapshot | None:
        """Load the committed snapshot, if there is one.

        Args:
            directory: The data directory.

        Returns:
            The snapshot, or None when nothing was ever committed there.
        """
        path = directory / SNAPSHOT_FILE
        if not path.exists():
            return None
        try:
            with path.open("rb") as handle:
                snapshot = pickle.load(handle)
        except (pickle.UnpicklingError, EOFError, AttributeError, ImportError, IndexError) as error:
            raise UserError(
                f"the index file {path} cannot be read ({type(error).__name__}); it was written by another "
                "version or damaged: move it away and run `selfcrag ingest` again"
            ) from None
        if not isinstance(snapshot, IndexSnapshot):
            raise UserError(f"{path} is not a selfcrag index file")
        return snapshot
