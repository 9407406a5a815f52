"""answer_directly: reply without the knowledge base (greetings, arithmetic, the conversation itself)."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from selfcrag.graph.context import Context
from selfcrag.graph.resources import get_chat_model
from selfcrag.graph.state import State
from selfcrag.graph.trace import record, retract, retracting
from selfcrag.heuristics.decider import direct_reply
from selfcrag.index.tokenize import detect_language
from selfcrag.llm.retry import describe_failure
from selfcrag.llm.structured import CHAT_FAILURES
from selfcrag.llm.text import invoke_text
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
    context = runtime.context
    history = state.messages[:-1]
    answer = ""
    details: dict[str, Any] = {"method": "offline"}
    retries: list[str] = []
    model = get_chat_model(context) if state.route != "empty" else None
    if model is not None:
        try:
            answer = invoke_text(
                model,
                [SystemMessage(pick(DIRECT_SYSTEM, state.question)),
                 *(m.model_copy(update={"content": defuse(m.text)}) for m in history[-HISTORY_SHOWN:]),
                 HumanMessage(state.question)],
                name="answer_directly", attempts=context.max_attempts, reply_attempts=context.parse_attempts,
                language=detect_language(state.question), on_retry=retracting(runtime, "answer_directly", retries))
            details = {"method": "chat"}
        except CHAT_FAILURES as error:
            details = {"method": "offline", "fallback": describe_failure(error)}
            retract(runtime, "answer_directly", details["fallback"])
    if retries:
        details["retries"] = retries
    if not answer:
        route = state.route if state.route in ("empty", "greeting", "thanks", "arithmetic", "conversation") \
            else "greeting"
        answer = direct_reply(route, state.question, history)  # type: ignore[arg-type]
    return {
        "answer": answer,
        "abstained": False,
        "citations": [],
        "messages": [AIMessage(answer)],
        "trace": record(runtime, "answer_directly", state.route, **details),
    }
