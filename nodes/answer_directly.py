"""answer_directly: reply without the knowledge base (greetings, arithmetic, the conversation itself).

A message the rules routed here (a greeting, thanks, arithmetic) gets the offline reply when the chat model fails; a
question about the conversation itself ("what was my first question?") always gets it, quoted from the thread's record
(:mod:`selfcrag.heuristics.conversation`). A message only the chat model judged to need no documents (route ``chat``)
is retrieved instead when the model cannot answer it: a greeting is never the answer to a question.
"""

from __future__ import annotations

from typing import Any, Literal, cast

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.runtime import Runtime
from langgraph.types import Command

from selfcrag.graph.chat_step import text_step
from selfcrag.graph.context import Context
from selfcrag.graph.state import State
from selfcrag.graph.trace import record
from selfcrag.heuristics.decider import Route, direct_reply
from selfcrag.index.tokenize import detect_language
from selfcrag.prompts import defuse, pick
from selfcrag.prompts.routing import DIRECT_SYSTEM

HISTORY_SHOWN = 8


def answer_directly(
    state: State, runtime: Runtime[Context]
) -> dict[str, Any] | Command[Literal["retrieve", "condense_question", "__end__"]]:
    """Reply to a message that needs no retrieval, or send it to retrieval when only the model thought so and failed.

    Args:
        state: The question, its route and the conversation.
        runtime: Its context.

    Returns:
        The answer (no citations); or, for a ``chat`` route whose reply failed, a move to retrieval (through
        ``condense_question`` in a thread with earlier questions, as ``graph.builder.route_question`` routes).
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
        # A question about the conversation is answered from its record, which a model could only misquote.
        wanted=state.route not in ("empty", "conversation"),
    )
    if not reply and state.route == "chat":
        earlier = any(isinstance(m, HumanMessage) for m in history)
        return Command(
            goto="condense_question" if earlier else "retrieve",
            update={
                "route": "retrieve",
                "trace": record(runtime, "answer_directly", "retrieve instead", **details),
                **spent,
            },
        )
    answer = reply or direct_reply(cast(Route, state.route), state.question, history, runtime.context.history_turns)
    return {
        "answer": answer,
        "status": "direct",
        "abstained": False,
        "citations": [],
        "messages": [AIMessage(answer)],
        "trace": record(runtime, "answer_directly", state.route, **details),
        **spent,
    }
