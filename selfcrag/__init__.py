"""selfcrag: corrective and self-reflective RAG over your own documents."""

__version__ = "0.1.0"
