"""retrieve: hybrid sentence-window search of the knowledge base."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from selfcrag.graph.context import Context
from selfcrag.graph.resources import current_resources
from selfcrag.graph.state import State
from selfcrag.graph.trace import record
from selfcrag.search.contexts import RetrievedContext
from selfcrag.spans import Passage, passage_id


def to_passage(context: RetrievedContext, query: str) -> Passage:
    """Keep a retrieved context as JSON-ready state.

    Args:
        context: From the retriever.
        query: The query that found it.

    Returns:
        The passage.
    """
    return Passage(
        id=passage_id(context.text),
        doc_id=context.doc_id,
        source=context.source,
        title=context.title,
        section=list(context.section),
        first=context.first,
        last=context.last,
        text=context.text,
        score=context.score,
        dense_score=context.dense_score,
        bm25_score=context.bm25_score,
        dense_rank=context.dense_rank,
        bm25_rank=context.bm25_rank,
        hit_positions=sorted(h.position for h in context.hits),
        query=query,
    )


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
    passages = [to_passage(c, query) for c in result.contexts]
    known = {p["id"] for p in state.contexts}
    new = [p for p in passages if p["id"] not in known]
    found = [
        {"source": p["source"], "title": p["title"], "section": p["section"], "sentences": [p["first"], p["last"]]}
        for p in passages
    ]
    return {
        "contexts": passages,
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
