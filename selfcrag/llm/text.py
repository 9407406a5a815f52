"""Plain-text replies (answers) that are checked before they are used.

A reply is unusable when it is empty once its ``<think>`` blocks are removed,
longer than :data:`MAX_REPLY_CHARS`, when it was cut off in transit (a stream
that ended without a finish reason), or when it is written in the other
language than the question's (Chinese for an English question, or no Chinese
at all for a Chinese one). An unusable
reply is asked for again, up to ``reply_attempts`` requests; then
:class:`~models.errors.UnusableReplyError` tells the node to fall back to
its offline method.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage

from selfcrag.index.tokenize import letter_counts
from selfcrag.llm.budget import CallBudget
from selfcrag.llm.errors import UnusableReplyError
from selfcrag.llm.output import checked_answer
from selfcrag.llm.retry import OnRetry, invoke_with_retries
from selfcrag.llm.think import strip_think

MAX_REPLY_CHARS = 20_000
"""Characters a reply may hold once its reasoning is removed; a longer one (a runaway model, a server sending a
megabyte) is not used: it is asked for again, then the step falls back to its offline method."""

# The keys in which LangChain's provider integrations report why a reply ended.
_FINISH_KEYS = ("finish_reason", "stop_reason", "done_reason")


def cut_off(message: BaseMessage) -> bool:
    """Tell whether a reply ended without the server saying why: its stream was dropped mid-answer.

    Args:
        message: The model's reply.

    Returns:
        True when a provider integration filled in the reply's metadata but no finish reason
        (test doubles that report no metadata at all are taken as complete).
    """
    metadata = message.response_metadata or {}
    return "model_provider" in metadata and not any(metadata.get(key) for key in _FINISH_KEYS)


def in_wrong_language(text: str, language: str) -> bool:
    """Tell whether an answer is plainly written in the other language than the question's.

    Lenient on purpose: an English answer may name a Chinese product, a
    Chinese answer may quote English terms.

    Args:
        text: The answer.
        language: The question's language, ``en`` or ``zh``.

    Returns:
        For ``zh``: the answer has letters but no Chinese character. For
        ``en``: Chinese characters outnumber the other letters.
    """
    cjk, letters = letter_counts(text)
    letters -= cjk
    if language == "zh":
        return cjk == 0 and letters > 0
    return cjk > letters


def too_long(text: str) -> str:
    """Say that a reply is over :data:`MAX_REPLY_CHARS`.

    Args:
        text: The reply, without reasoning.

    Returns:
        The reason, in one line.
    """
    return f"the reply was {len(text):,} characters long, over the limit of {MAX_REPLY_CHARS:,}"


def unusable(message: BaseMessage, text: str, language: str | None) -> str | None:
    """Say why a text reply cannot be used, if it cannot.

    Args:
        message: The raw reply.
        text: Its text without reasoning.
        language: The language it must be in, or None for any.

    Returns:
        The reason, or None when the reply is usable.
    """
    if cut_off(message):
        return "the reply was cut off"
    if not text:
        return "the reply was empty"
    if len(text) > MAX_REPLY_CHARS:
        return too_long(text)
    if language is not None and in_wrong_language(text, language):
        return f"the reply was not in the question's language, {language}"
    return None


def invoke_text(
    model: BaseChatModel,
    messages: Sequence[BaseMessage],
    *,
    name: str,
    attempts: int,
    reply_attempts: int,
    language: str | None = None,
    on_retry: OnRetry | None = None,
    budget: CallBudget | None = None,
) -> str:
    """Ask the chat model for a text reply, retrying faults and unusable replies.

    Args:
        model: The chat model (its tokens stream when the graph streams messages).
        messages: The prompt.
        name: Run name, shown in traces.
        attempts: Tries per request on transient faults (429, 5xx, timeouts, dropped connections).
        reply_attempts: Requests made while replies are unusable.
        language: The language the reply must be in, or None for any.
        on_retry: Told why each failed attempt failed, before the next one; a streaming
            caller uses it to withdraw the tokens already shown.
        budget: The question's chat budget, shared by its steps.

    Returns:
        The reply's text, without ``<think>`` blocks, with images and links as plain text and no
        credentials (see :mod:`llm.output`).

    Raises:
        UnusableReplyError: No reply could be used.
        openai.OpenAIError: A request failed for good (after its retries).
    """
    reason = ""
    for attempt in range(max(reply_attempts, 1)):
        if attempt and on_retry is not None:
            on_retry(reason)
        reply = invoke_with_retries(model, list(messages), {"run_name": name}, attempts, on_retry, budget)
        text = strip_think(reply.text)
        problem = unusable(reply, text, language)
        if problem is None:
            return checked_answer(text)
        reason = problem
    raise UnusableReplyError(reason)
