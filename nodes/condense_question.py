"""condense_question: make a follow-up ("what about the second one?") a standalone question before retrieval.

Only a turn with earlier questions in its thread comes here (see
``graph.builder.route_question``). The chat model rewrites the message from
the conversation; offline, a rule carries the salient words of the previous
question into a follow-up that is short or points back (it, that, 第二个, ...呢).
The standalone question replaces ``question`` and ``query`` for the rest of
the turn; the conversation keeps the message as the user wrote it.

A rewrite that is not one plain question (it holds braces or a line break, or
a role label such as ``AI:``: a model continuing the conversation or its JSON
instead of rewriting) is not searched: the offline rule rewrites the message,
and the step says why in its ``fallback``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime
from pydantic import BaseModel

from selfcrag.graph.chat_step import structured_step
from selfcrag.graph.context import Context
from selfcrag.graph.question import clean_question
from selfcrag.graph.state import State
from selfcrag.graph.trace import record
from selfcrag.heuristics.signals import surface_words
from selfcrag.prompts import history_text, pick
from selfcrag.prompts.condensing import CONDENSE_SYSTEM, CONDENSE_USER

# A question with this many content words or fewer leans on the conversation ("And backups?").
SHORT_QUESTION_WORDS = 2
# Words carried over from the previous question at most.
CARRIED_WORDS = 6
# Earlier questions the rule looks back through (a chain of follow-ups).
LOOK_BACK = 4

_POINTS_BACK_EN = re.compile(
    r"^\s*(?:and|also|what about|how about|what if)\b|"
    r"\b(?:it|its|they|them|their|theirs|these|those|former|latter)\b|"
    r"\bthe (?:first|second|third|fourth|fifth|last|next|previous|other|same) ones?\b|"
    r"\b(?:this|that|another)(?: ones?)?\s*[?.!]*\s*$",
    re.IGNORECASE,
)
_POINTS_BACK_ZH = re.compile(
    r"它|其|(?<!应)该|这个|那个|这些|那些|这种|那种|这样|那样|上面|前面|上述|刚才|另外|还有|"
    r"第[一二三四五六七八九十\d]+|^\s*(?:那|这)|呢\s*[？?]?\s*$"
)


# What a rewritten question never holds: JSON or template braces, a line break, chat-template markers, a role label
# opening it or following one of its sentences.
_NOT_A_QUESTION = re.compile(
    r"[{}\n\r]|<\||\|>|(?:^|[?？.。!！]\s*)(?:ai|human|user|assistant|system|用户|助手|系统)\s*[:：]", re.IGNORECASE
)


class StandaloneQuestion(BaseModel):
    """The latest message rewritten so that it can be understood without the conversation."""

    question: str


def is_follow_up(question: str) -> bool:
    """Tell, by rule, whether a question leans on the conversation before it.

    Args:
        question: The message as written.

    Returns:
        True when it is short or points back (pronouns, ordinals, ellipsis).
    """
    if len(surface_words(question)) <= SHORT_QUESTION_WORDS:
        return True
    return bool(_POINTS_BACK_EN.search(question) or _POINTS_BACK_ZH.search(question))


def standalone_by_rule(question: str, earlier: Sequence[str]) -> str:
    """Carry the salient words of the previous question into a follow-up.

    The previous question is itself made standalone first, so a chain of
    follow-ups keeps the topic it started from.

    Args:
        question: The latest question.
        earlier: The user's earlier questions, oldest first.

    Returns:
        ``"<previous keywords> <question>"``, or the question itself when it
        stands alone or there is nothing before it.
    """
    earlier = list(earlier)[-LOOK_BACK:]
    if not earlier or not is_follow_up(question):
        return question
    previous = standalone_by_rule(earlier[-1], earlier[:-1])
    present = {word.lower() for word in surface_words(question)}
    carried = [word for word in surface_words(previous) if word.lower() not in present][:CARRIED_WORDS]
    return f"{' '.join(carried)} {question.strip()}" if carried else question


def stray_text(rewrite: str) -> bool:
    """Tell whether a model's rewrite holds more than a question: braces, line breaks, role labels, template markers.

    Args:
        rewrite: The rewritten question, as the model wrote it.

    Returns:
        True when it cannot be searched as it is.
    """
    return bool(_NOT_A_QUESTION.search(rewrite.strip()))


def condense_question(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Rewrite the turn's question as a standalone one, from the conversation.

    Args:
        state: The question and the conversation (ending with this question).
        runtime: Its context (chat model settings).

    Returns:
        The standalone ``question`` and search ``query``.
    """
    question = state.question
    history = state.messages[:-1]
    reply, details, spent = structured_step(
        runtime,
        state,
        "condense_question",
        StandaloneQuestion,
        [
            SystemMessage(pick(CONDENSE_SYSTEM, question)),
            HumanMessage(pick(CONDENSE_USER, question).format(history=history_text(history), question=question)),
        ],
        offline="rules",
    )
    if reply is not None and stray_text(reply.question):
        details.update(method="rules", fallback="the rewritten question held stray role text or braces")
        reply = None
    # The model's question is searched and quoted in later prompts: bounded like the user's.
    standalone = clean_question(reply.question).text if reply is not None else ""
    if not standalone:
        earlier = [m.text for m in history if isinstance(m, HumanMessage)]
        standalone = standalone_by_rule(question, earlier)
    decision = "standalone" if standalone == question else "condensed"
    return {
        "question": standalone,
        "query": standalone,
        "trace": record(runtime, "condense_question", decision, asked=question, question=standalone, **details),
        **spent,
    }
