"""abstain: say, in the question's language, that the knowledge base does not hold the answer."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage
from langgraph.runtime import Runtime

from selfcrag.cite.markers import locate
from selfcrag.graph.context import Context
from selfcrag.graph.state import State
from selfcrag.graph.trace import record
from selfcrag.index.tokenize import detect_language
from selfcrag.prompts import replies
from selfcrag.spans import Citation, Passage

CLOSEST_SHOWN = 3


def abstain(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Decline to answer, and show the closest sources found so the reader can look.

    Args:
        state: The question, passages and grades.
        runtime: Its context.

    Returns:
        The abstention as the answer, ``abstained`` set, and the closest sources.
    """
    language = detect_language(state.question)
    # Searches of the rewritten queries find overlapping windows: show each stretch of a document once.
    nearest: list[Passage] = []
    for passage in sorted(state.passages, key=lambda p: -state.grades.get(p["id"], 0.0)):
        if len(nearest) < CLOSEST_SHOWN and not any(
            p["doc_id"] == passage["doc_id"] and p["first"] <= passage["last"] and passage["first"] <= p["last"]
            for p in nearest
        ):
            nearest.append(passage)
    closest = [
        Citation(
            n=i,
            source=p["source"],
            title=p["title"],
            section=list(p["section"]),
            first=p["first"],
            last=p["last"],
            quote=p["text"],
        )
        for i, p in enumerate(nearest, 1)
    ]
    lines = [replies.ABSTAIN[language]]
    if closest:
        lines.append(replies.CLOSEST_SOURCES[language])
        lines.extend(f"- {locate(c['source'], c['section'], c['first'], c['last'], title=c['title'])}" for c in closest)
    else:
        lines.append(replies.NO_SOURCES[language])
    answer = "\n".join(lines)
    reason = (
        "unsupported"
        if state.support == "unsupported"
        else "no knowledge kept"
        if state.action != "incorrect"
        else "incorrect"
    )
    return {
        "answer": answer,
        "abstained": True,
        "citations": [],
        "closest_sources": closest,
        "messages": [AIMessage(answer)],
        "trace": record(
            runtime,
            "abstain",
            reason,
            requery=state.requery_count,
            regenerate=state.regenerate_count,
            closest=[c["source"] for c in closest],
        ),
    }
