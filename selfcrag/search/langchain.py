"""selfcrag's retrieval as a LangChain ``BaseRetriever``, for other chains.

``SelfcragRetriever(retriever=Retriever(settings, config))`` returns the same
merged sentence-window passages as ``selfcrag search``, one ``Document`` each,
with source, section, sentence range, fused score and each retriever's rank
as metadata. It works on either engine (Qdrant Edge or a Qdrant server).
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict

from selfcrag.search.retriever import RetrievalConfig, Retriever


class SelfcragRetriever(BaseRetriever):
    """Hybrid sentence-window retrieval over a selfcrag index.

    Attributes:
        retriever: An open :class:`~selfcrag.search.retriever.Retriever` (its owner closes it).
        config: Search settings; the retriever's own when None.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    retriever: Any
    config: RetrievalConfig | None = None

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        search: Retriever = self.retriever
        documents = []
        for passage in search.search(query, self.config).passages:
            metadata: dict[str, Any] = {k: v for k, v in passage.items() if k not in ("text", "hits")}
            metadata["hit_positions"] = sorted(h["position"] for h in passage["hits"])
            documents.append(Document(page_content=passage["text"], metadata=metadata))
        return documents
