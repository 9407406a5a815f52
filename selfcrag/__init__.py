"""selfcrag: corrective and self-reflective RAG over your own documents.

``from selfcrag import ask, stream_ask`` answers questions from an index built
by ``selfcrag ingest``; see :mod:`selfcrag.graph.api`.
"""

__version__ = "0.1.0"

from selfcrag.graph.api import Answer, Citation, Session, ask, stream_ask  # noqa: E402  (after __version__)

__all__ = ["Answer", "Citation", "Session", "__version__", "ask", "stream_ask"]
