"""decide_retrieval: start a turn, and decide whether it needs the knowledge base (Self-RAG's Retrieve)."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage
from langgraph.runtime import Runtime
from langgraph.types import Overwrite

from graph.context import Context
from graph.resources import get_chat_model
from graph.state import State
from graph.trace import record
from models import CHAT_FAILURES, invoke_structured
from models.replies import RetrievalDecision
from offline.decider import classify_message
from prompts import pick
from prompts.routing import DECIDE_SYSTEM, DECIDE_USER


def current_question(state: State) -> str:
    """Return the question of this turn: an unanswered last human message, else ``question``.

    Args:
        state: The state at the start of the turn.

    Returns:
        The question text.
    """
    if state.messages and isinstance(state.messages[-1], HumanMessage):
        return state.messages[-1].text
    return state.question


def history_text(messages: list[AnyMessage], limit: int = 6) -> str:
    """Render the last messages of a conversation as ``role: text`` lines.

    Args:
        messages: Earlier messages.
        limit: How many to show.

    Returns:
        The lines, or ``(none)``.
    """
    lines = [f"{m.type}: {m.text}" for m in messages[-limit:]]
    return "\n".join(lines) or "(none)"


def decide_retrieval(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Reset the per-question state and route: retrieve, or answer directly.

    Args:
        state: The state at the start of the turn.
        runtime: Its context (chat model settings).

    Returns:
        The fresh turn, with ``route`` set.
    """
    question = current_question(state).strip()
    asked = bool(state.messages) and isinstance(state.messages[-1], HumanMessage)
    history = state.messages[:-1] if asked else state.messages
    rule = classify_message(question)
    route: str = rule
    details: dict[str, Any] = {"method": "rules"}
    model = get_chat_model(runtime.context) if rule != "empty" else None
    if model is not None:
        try:
            decision = invoke_structured(
                model, RetrievalDecision,
                [SystemMessage(pick(DECIDE_SYSTEM, question)),
                 HumanMessage(pick(DECIDE_USER, question).format(history=history_text(history), question=question))],
                method=runtime.context.structured_output, attempts=runtime.context.max_attempts,
                parse_attempts=runtime.context.parse_attempts, name="decide_retrieval")
            route = "retrieve" if decision.retrieve else (rule if rule != "retrieve" else "chat")
            details = {"method": "chat"}
        except CHAT_FAILURES as error:
            details = {"method": "rules", "fallback": f"{type(error).__name__}: {error}"[:300]}
    return {
        "question": question,
        "messages": [] if asked else [HumanMessage(question)],
        "route": route,
        "query": question,
        "queries": [],
        "contexts": Overwrite([]),
        "grades": {},
        "action": None,
        "knowledge": [],
        "draft": "",
        "support": None,
        "requery_count": 0,
        "regenerate_count": 0,
        "answer": "",
        "citations": [],
        "closest_sources": [],
        "abstained": False,
        "trace": Overwrite(record(runtime, "decide_retrieval", route, **details)),
    }
