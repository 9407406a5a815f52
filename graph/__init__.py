"""The self-correcting workflow: LangGraph state, context, wiring, and the Python API.

``from graph import ask`` answers a question; ``from graph.builder import
graph`` is the compiled LangGraph graph (``graph.invoke`` / ``graph.stream``).
The API is imported on first use, so the workflow's own modules can import
``graph.state`` and ``graph.context`` without building the graph.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from graph.api import Answer, Citation, ask, stream_ask
    from graph.context import Context

__all__ = ["Answer", "Citation", "Context", "ask", "stream_ask"]


def __getattr__(name: str) -> Any:
    if name == "Context":
        from graph.context import Context

        return Context
    if name in __all__:
        from graph import api

        return getattr(api, name)
    raise AttributeError(f"module 'graph' has no attribute {name!r}")
