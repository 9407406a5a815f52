"""generate: an answer drawn only from the refined knowledge, citing it as [1], [2], ..."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from selfcrag.cite.markers import keep_known_markers
from selfcrag.graph.chat_step import text_step
from selfcrag.graph.context import Context
from selfcrag.graph.resources import current_resources
from selfcrag.graph.state import State
from selfcrag.graph.trace import record
from selfcrag.heuristics.answerer import extractive_answer, format_answer
from selfcrag.index.tokenize import detect_language
from selfcrag.llm.output import checked_answer
from selfcrag.prompts import pick, quote_knowledge
from selfcrag.prompts.answering import GENERATE_STRICT_SYSTEM, GENERATE_SYSTEM, GENERATE_USER


def generate(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Write the answer: with the chat model (tokens stream), or extractively offline.

    After an unsupported answer this is a regeneration: the chat model gets
    the stricter prompt, the extractive answer quotes only its best sentence.
    A chat reply that fails (a fault, a dropped stream, an empty reply, the
    wrong language) is asked for again within bounds, then the extractive
    answer is used; the tokens already streamed are retracted each time.

    Args:
        state: The question, the knowledge and the last support verdict.
        runtime: Its context.

    Returns:
        The ``draft`` answer and the regeneration count.
    """
    context = runtime.context
    strict = state.support == "unsupported"
    question = state.question
    system = GENERATE_STRICT_SYSTEM if strict else GENERATE_SYSTEM
    reply, details, spent = text_step(
        runtime,
        state,
        "generate",
        [
            SystemMessage(pick(system, question)),
            HumanMessage(
                pick(GENERATE_USER, question).format(passages=quote_knowledge(state.knowledge), question=question)
            ),
        ],
        language=detect_language(question),
        wanted=bool(state.knowledge),
        # What streams is what the support check would keep: no marker that points at no source.
        check=lambda text: keep_known_markers(checked_answer(text), state.knowledge),
    )
    draft = reply or ""
    if not draft and state.knowledge:
        profile = current_resources().evaluator(context).profile(question)
        sentences = extractive_answer(
            state.knowledge,
            profile,
            max_sentences=context.max_answer_sentences,
            strict=strict,
            excerpt_chars=context.answer_excerpt_chars,
        )
        draft = format_answer(sentences, profile.language)
        runtime.stream_writer({"type": "token", "text": draft})
    return {
        "draft": draft,
        "support": None,
        "regenerate_count": state.regenerate_count + (1 if strict else 0),
        "trace": record(
            runtime,
            "generate",
            "regenerated" if strict else "generated",
            chars=len(draft),
            regenerate=state.regenerate_count + (1 if strict else 0),
            **details,
        ),
        **spent,
    }
