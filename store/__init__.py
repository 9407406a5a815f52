"""The on-disk knowledge index: a committed snapshot of documents and sentences, and their vectors in Qdrant."""

from store.records import DocumentRecord, SentenceRecord
from store.snapshot import IndexSnapshot
from store.vectors import VectorStore

__all__ = ["DocumentRecord", "IndexSnapshot", "SentenceRecord", "VectorStore"]
