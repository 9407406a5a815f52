"""selfcrag: corrective and self-reflective RAG over your own documents.

``from selfcrag import ask, stream_ask`` answers questions from an index built
by ``selfcrag ingest``; see :mod:`selfcrag.graph.api`.
"""

from typing import Any

__version__ = "0.1.0"

__all__ = ["Answer", "Citation", "Session", "__version__", "ask", "stream_ask"]


def __getattr__(name: str) -> Any:
    # The workflow (LangGraph, LangChain, the chat model) loads on first use, not on
    # `import selfcrag.index...`: a search process is ready a second or two sooner.
    if name in ("Answer", "Citation", "Session", "ask", "stream_ask"):
        from selfcrag.graph import api

        return getattr(api, name)
    raise AttributeError(f"module 'selfcrag' has no attribute {name!r}")
