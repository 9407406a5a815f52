"""The index for other LangChain chains: the BM25 encoder as ``SparseEmbeddings``, and a hybrid ``QdrantVectorStore``.

On a Qdrant server the collection selfcrag builds is an ordinary hybrid
collection (named vectors ``dense`` and ``bm25``), so langchain-qdrant's
``QdrantVectorStore`` in ``RetrievalMode.HYBRID`` can search it directly,
with :class:`BM25SparseEmbeddings` encoding queries exactly as selfcrag does.
Documents it returns carry the sentence payload (document id, source,
section, position) as metadata.
"""

from __future__ import annotations

from typing import Any, cast

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_qdrant import QdrantVectorStore, RetrievalMode, SparseEmbeddings, SparseVector

from selfcrag.embed.embedders import Embedder
from selfcrag.index.points import DENSE, SPARSE
from selfcrag.index.sparse import document_vector, query_vector
from selfcrag.index.tokenize import tokenize

# selfcrag's embedders implement Embeddings without importing LangChain (see selfcrag.embed.embedders).
Embeddings.register(Embedder)


class BM25SparseEmbeddings(SparseEmbeddings):
    """selfcrag's BM25 terms as langchain-qdrant sparse embeddings.

    Args:
        avg_length: Average terms per sentence of the collection (the
            manifest's ``avg_length``), used to weight documents.
    """

    def __init__(self, avg_length: float) -> None:
        self.avg_length = avg_length

    def embed_documents(self, texts: list[str]) -> list[SparseVector]:
        """Encode sentences with BM25 term-frequency weights."""
        vectors = [document_vector(tokenize(text), self.avg_length) for text in texts]
        return [SparseVector(indices=v.indices, values=v.values) for v in vectors]

    def embed_query(self, text: str) -> SparseVector:
        """Encode a query as its term counts (the collection applies IDF)."""
        vector = query_vector(tokenize(text))
        return SparseVector(indices=vector.indices, values=vector.values)


class SentenceVectorStore(QdrantVectorStore):
    """``QdrantVectorStore`` over a selfcrag collection: sentences as documents, their payload as metadata."""

    @classmethod
    def _document_from_point(
        cls, scored_point: Any, collection_name: str, content_payload_key: str, metadata_payload_key: str
    ) -> Document:
        payload = dict(scored_point.payload or {})
        text = payload.pop(content_payload_key, "")
        payload.update(_id=scored_point.id, _collection_name=collection_name)
        return Document(page_content=text, metadata=payload)


def hybrid_vector_store(
    client: Any, collection: str, embedder: Embeddings | Embedder, avg_length: float
) -> SentenceVectorStore:
    """A hybrid (dense + BM25) LangChain vector store over a selfcrag collection on a Qdrant server.

    Args:
        client: A connected ``QdrantClient``.
        collection: The knowledge base's collection.
        embedder: The embedder the collection was built with.
        avg_length: The manifest's average sentence length in terms.

    Returns:
        The vector store; ``as_retriever()`` makes it a LangChain retriever.
    """
    return SentenceVectorStore(
        client=client,
        collection_name=collection,
        embedding=cast(Embeddings, embedder),  # an Embedder is one (registered above); mypy cannot see it
        sparse_embedding=BM25SparseEmbeddings(avg_length),
        retrieval_mode=RetrievalMode.HYBRID,
        vector_name=DENSE,
        sparse_vector_name=SPARSE,
        content_payload_key="text",
    )
