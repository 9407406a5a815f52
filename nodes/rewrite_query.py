"""rewrite_query: a new search query when retrieval found too little (CRAG's Incorrect action)."""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from selfcrag.graph.chat_step import structured_step
from selfcrag.graph.context import Context
from selfcrag.graph.question import clean_question
from selfcrag.graph.resources import current_resources
from selfcrag.graph.state import State
from selfcrag.graph.trace import record
from selfcrag.heuristics.rewriter import rewrite_query as rewrite_offline
from selfcrag.heuristics.signals import term_statistics
from selfcrag.heuristics.strips import passage_strips
from selfcrag.llm.replies import RewrittenQuery
from selfcrag.prompts import defuse, pick
from selfcrag.prompts.rewriting import REWRITE_BOTH_LANGUAGES, REWRITE_ONE_LANGUAGE, REWRITE_SYSTEM, REWRITE_USER

# Sentences of the best passages that feed pseudo-relevance feedback.
FEEDBACK_SENTENCES = 5


def rewrite_query(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Write the next search query and count the rewrite.

    Args:
        state: The question, the queries searched and the graded passages.
        runtime: Its context (chat model settings).

    Returns:
        The new ``query`` and ``requery_count``.
    """
    context = runtime.context
    previous = state.queries or [state.question]
    retriever = current_resources().retriever(context)
    # Titles come from the documents: quoted as a JSON list of strings, defused like passages.
    found = json.dumps(sorted({defuse(p["title"]) for p in state.passages}), ensure_ascii=False)
    reply, details, spent = structured_step(
        runtime,
        state,
        "rewrite_query",
        RewrittenQuery,
        [
            SystemMessage(
                pick(REWRITE_SYSTEM, state.question).format(
                    languages=pick(
                        REWRITE_BOTH_LANGUAGES if retriever.crossing(state.question) else REWRITE_ONE_LANGUAGE,
                        state.question,
                    )
                )
            ),
            HumanMessage(
                pick(REWRITE_USER, state.question).format(
                    question=state.question, queries="; ".join(previous), found=found
                )
            ),
        ],
    )
    # The model's query is searched and quoted in later prompts: cleaned like the user's question (a lone surrogate
    # in its JSON would stop the embedder).
    query = clean_question(reply.query).text if reply is not None else ""
    if not query:
        evaluator = current_resources().evaluator(context)
        profile = evaluator.profile(state.question)
        # Feedback comes only from passages not graded Incorrect: words of a rejected passage (a Chinese prompt line
        # for a question about banana bread) would steer the next search into it. None such: the question's words.
        accepted = [p for p in state.passages if state.grades.get(p["id"], 0.0) >= context.lower_threshold]
        best = sorted(accepted, key=lambda p: -state.grades.get(p["id"], 0.0))[:3]
        strips = [s for p in best for s in passage_strips(retriever.index, p["doc_id"], p["first"], p["last"])]
        ranked = sorted(zip(evaluator.score_strips(profile, strips), strips, strict=True), key=lambda x: -x[0])
        evidence = [s.text for _, s in ranked[:FEEDBACK_SENTENCES]]
        query = rewrite_offline(state.question, evidence, previous, term_statistics(retriever.index))
    count = state.requery_count + 1
    return {
        "query": query,
        "requery_count": count,
        "trace": record(runtime, "rewrite_query", "rewritten", query=query, requery=count, **details),
        **spent,
    }
