"""answer_directly: reply without the knowledge base (greetings, arithmetic, the conversation itself)."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from selfcrag.graph.chat_step import text_step
from selfcrag.graph.context import Context
from selfcrag.graph.state import State
from selfcrag.graph.trace import record
from selfcrag.heuristics.decider import direct_reply
from selfcrag.index.tokenize import detect_language
from selfcrag.prompts import defuse, pick
from selfcrag.prompts.routing import DIRECT_SYSTEM

HISTORY_SHOWN = 8


def answer_directly(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Reply to a message that needs no retrieval.

    Args:
        state: The question, its route and the conversation.
        runtime: Its context.

    Returns:
        The answer (no citations).
    """
    history = state.messages[:-1]
    reply, details, spent = text_step(
        runtime,
        state,
        "answer_directly",
        [
            SystemMessage(pick(DIRECT_SYSTEM, state.question)),
            *(m.model_copy(update={"content": defuse(m.text)}) for m in history[-HISTORY_SHOWN:]),
            HumanMessage(state.question),
        ],
        language=detect_language(state.question),
        wanted=state.route != "empty",
    )
    answer = reply or ""
    if not answer:
        route = (
            state.route if state.route in ("empty", "greeting", "thanks", "arithmetic", "conversation") else "greeting"
        )
        answer = direct_reply(route, state.question, history)  # type: ignore[arg-type]
    return {
        "answer": answer,
        "abstained": False,
        "citations": [],
        "messages": [AIMessage(answer)],
        "trace": record(runtime, "answer_directly", state.route, **details),
        **spent,
    }
