"""decide_retrieval: start a turn, and decide whether it needs the knowledge base (Self-RAG's Retrieve)."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage
from langgraph.runtime import Runtime
from langgraph.types import Overwrite

from selfcrag.graph.context import Context
from selfcrag.graph.question import clean_question
from selfcrag.graph.resources import get_chat_model
from selfcrag.graph.state import State
from selfcrag.graph.trace import record
from selfcrag.heuristics.decider import classify_message
from selfcrag.llm.replies import RetrievalDecision
from selfcrag.llm.retry import describe_failure
from selfcrag.llm.structured import CHAT_FAILURES, invoke_structured
from selfcrag.prompts import defuse, pick
from selfcrag.prompts.routing import DECIDE_SYSTEM, DECIDE_USER


def current_question(state: State) -> str:
    """Return the question of this turn: an unanswered last human message, else ``question``.

    Args:
        state: The state at the start of the turn.

    Returns:
        The question text, as given.
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
        The lines, or ``(none)``; earlier answers quote documents, so they are defused as passages are.
    """
    lines = [f"{m.type}: {defuse(m.text)}" for m in messages[-limit:]]
    return "\n".join(lines) or "(none)"


def decide_retrieval(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Reset the per-question state and route: retrieve, or answer directly.

    The question is cleaned first (control characters removed, cut to
    ``MAX_QUESTION_CHARS``); a cut is noted in the trace, and the
    conversation keeps the cleaned question, not a 100,000-character paste.

    Args:
        state: The state at the start of the turn.
        runtime: Its context (chat model settings).

    Returns:
        The fresh turn, with ``route`` set.
    """
    given = current_question(state)
    cleaned = clean_question(given)
    question = cleaned.text
    asked = bool(state.messages) and isinstance(state.messages[-1], HumanMessage)
    history = state.messages[:-1] if asked else state.messages
    rule = classify_message(question)
    route: str = rule
    details: dict[str, Any] = {"method": "rules"}
    if cleaned.cut:
        details["question_cut"] = {"from": cleaned.original_chars, "to": len(question)}
    if cleaned.removed:
        details["control_chars_removed"] = cleaned.removed
    retries: list[str] = []
    model = get_chat_model(runtime.context) if rule != "empty" else None
    if model is not None:
        try:
            decision = invoke_structured(
                model, RetrievalDecision,
                [SystemMessage(pick(DECIDE_SYSTEM, question)),
                 HumanMessage(pick(DECIDE_USER, question).format(history=history_text(history), question=question))],
                method=runtime.context.structured_output, attempts=runtime.context.max_attempts,
                parse_attempts=runtime.context.parse_attempts, name="decide_retrieval", on_retry=retries.append)
            route = "retrieve" if decision.retrieve else (rule if rule != "retrieve" else "chat")
            details["method"] = "chat"
        except CHAT_FAILURES as error:
            details["fallback"] = describe_failure(error)
    if retries:
        details["retries"] = retries
    if not asked:
        messages = [HumanMessage(question)]
    elif question != given:
        # Same id: add_messages replaces the message as given by the cleaned one.
        messages = [HumanMessage(question, id=state.messages[-1].id)]
    else:
        messages = []
    return {
        "question": question,
        "messages": messages,
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
