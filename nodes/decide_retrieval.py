"""decide_retrieval: start a turn, and decide whether it needs the knowledge base (Self-RAG's Retrieve).

The chat model's decision is a suggestion. A question about the conversation itself ("what was my first question?",
"我刚才问了什么？") is answered directly from the conversation without asking the model, in a thread with earlier
questions too (it is never condensed into a search); a greeting or arithmetic the model does not send to retrieval
is answered directly; any other message the model would answer directly is retrieved all the same
when the knowledge base matches it (the offline evaluator's best score reaches ``lower_threshold``), so no model can
answer a question of the documents from its own memory.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime
from langgraph.types import Overwrite

from selfcrag.errors import NoIndexError
from selfcrag.graph.chat_step import structured_step
from selfcrag.graph.context import Context
from selfcrag.graph.memory import forget_old_turns
from selfcrag.graph.question import clean_question
from selfcrag.graph.resources import current_resources
from selfcrag.graph.state import State, fresh_turn
from selfcrag.graph.trace import record
from selfcrag.heuristics.decider import classify_message, knowledge_base_match
from selfcrag.llm.replies import RetrievalDecision
from selfcrag.prompts import history_text, pick
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


def _retrieve_if_the_documents_match(question: str, context: Context) -> tuple[str, float | None]:
    """Overrule a chat model that would answer directly a question the knowledge base matches.

    Args:
        question: The question.
        context: The run's context (data directory, search settings, ``lower_threshold``).

    Returns:
        ``retrieve`` or ``chat``, and the offline evaluator's best score (None with nothing indexed: nothing to
        retrieve).
    """
    resources = current_resources()
    try:
        match = knowledge_base_match(resources.evaluator(context), question, context.search_config())
    except NoIndexError:
        return "chat", None
    return ("retrieve" if match >= context.lower_threshold else "chat"), round(match, 3)


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
    decision, details, spent = structured_step(
        runtime,
        state,
        "decide_retrieval",
        RetrievalDecision,
        [
            SystemMessage(pick(DECIDE_SYSTEM, question)),
            HumanMessage(pick(DECIDE_USER, question).format(history=history_text(history), question=question)),
        ],
        # A question about the conversation needs no documents, whatever a model says: it is not asked.
        wanted=rule not in ("empty", "conversation"),
        offline="rules",
        starts_turn=True,
    )
    route: str = rule
    if decision is not None:
        route = "retrieve" if decision.retrieve else (rule if rule != "retrieve" else "chat")
    if route == "chat":
        route, details["knowledge_base_match"] = _retrieve_if_the_documents_match(question, runtime.context)
    if cleaned.cut:
        details["question_cut"] = {"from": cleaned.original_chars, "to": len(question)}
    if cleaned.removed:
        details["control_chars_removed"] = cleaned.removed
    if not asked:
        messages = [HumanMessage(question)]
    elif question != given:
        # Same id: add_messages replaces the message as given by the cleaned one.
        messages = [HumanMessage(question, id=state.messages[-1].id)]
    else:
        messages = []
    # The conversation keeps its latest turns only: prompts and checkpoints stay bounded (graph.memory).
    messages = [*forget_old_turns(history, runtime.context.history_turns), *messages]
    return {
        **fresh_turn(),
        **spent,
        "question": question,
        "messages": messages,
        "route": route,
        "query": question,
        "trace": Overwrite(record(runtime, "decide_retrieval", route, **details)),
    }
