"""retrieve: hybrid sentence-window search of the knowledge base."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from selfcrag.graph.context import Context
from selfcrag.graph.resources import current_resources
from selfcrag.graph.state import State
from selfcrag.graph.trace import record


def retrieve(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Search the knowledge base with the current query.

    Args:
        state: ``query`` (or the question) and the passages found so far.
        runtime: Its context (data directory, top-k, window, RRF k).

    Returns:
        The passages found (the state's reducer drops those already present).
    """
    retriever = current_resources().retriever(runtime.context)
    query = state.query or state.question
    result = retriever.search(query, runtime.context.search_config())
    passages = result.passages
    known = {p["id"] for p in state.passages}
    new = [p for p in passages if p["id"] not in known]
    found = [
        {
            "source": p["source"],
            "path": p["path"],
            "title": p["title"],
            "section": p["section"],
            "sentences": [p["first"], p["last"]],
        }
        for p in passages
    ]
    return {
        "passages": passages,
        "queries": [*state.queries, query],
        "trace": record(
            runtime,
            "retrieve",
            f"{len(new)} new of {len(passages)}",
            query=query,
            found=found,
            ms={k: round(v, 1) for k, v in result.timings_ms.items()},
        ),
    }
