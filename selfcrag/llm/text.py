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

from collections.abc import Callable, Iterator, Sequence
from functools import partial

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, BaseMessageChunk
from langchain_core.runnables import RunnableConfig

from selfcrag.index.tokenize import letter_counts
from selfcrag.llm.budget import CallBudget
from selfcrag.llm.errors import BudgetSpentError, MalformedReplyError, UnusableReplyError
from selfcrag.llm.output import CheckedStream, checked_answer
from selfcrag.llm.retry import OnRetry, invoke_with_retries
from selfcrag.llm.think import strip_think

MAX_REPLY_CHARS = 20_000
"""Characters a reply may hold once its reasoning is removed; a longer one (a runaway model, a server sending a
megabyte) is not used: it is asked for again, then the step falls back to its offline method."""

# What LangChain raises for a stream that ended before its first chunk (a connection closed early).
_NO_CHUNKS = "No generation chunks were returned"
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


def _until_cut_off(chunks: Iterator[BaseMessageChunk]) -> Iterator[BaseMessageChunk]:
    """The chunks of a stream; one whose connection closed before the first chunk just ends (LangChain raises)."""
    try:
        yield from chunks
    except ValueError as error:
        if str(error) != _NO_CHUNKS:
            raise


def read_reply(
    chunks: Iterator[BaseMessageChunk],
    *,
    show: Callable[[str], None] | None,
    check: Callable[[str], str],
    budget: CallBudget | None,
) -> BaseMessageChunk:
    """Read a streamed reply, showing it as it passes the answer's checks, and stop it when it cannot be used.

    Args:
        chunks: The reply's chunks, as the chat model streams them.
        show: Given each stretch of checked text as it settles (see :class:`~selfcrag.llm.output.CheckedStream`).
        check: What each stretch passes through before it is shown.
        budget: The question's chat budget: its deadline bounds the whole stream, not only each read.

    Returns:
        The whole reply.

    Raises:
        UnusableReplyError: The reply grew past :data:`MAX_REPLY_CHARS`, or the stream ended before its first token.
        BudgetSpentError: The question's deadline passed while the reply streamed.
    """
    stream = CheckedStream(check, limit=MAX_REPLY_CHARS)
    reply: BaseMessageChunk | None = None
    try:
        for chunk in _until_cut_off(chunks):
            reply = chunk if reply is None else reply + chunk
            shown = stream.feed(chunk.text)
            if shown and show is not None:
                show(shown)
            if stream.over_limit:
                raise UnusableReplyError(f"the reply grew past the limit of {MAX_REPLY_CHARS:,} characters")
            if budget is not None and budget.remaining() <= 0:
                raise BudgetSpentError("the question's time for the chat model ran out while the answer streamed")
    finally:
        close = getattr(chunks, "close", None)
        if close is not None:
            close()  # stops the request: nothing more is read of a reply that is not used
    if reply is None:
        raise UnusableReplyError("the reply was cut off")
    rest = stream.flush()
    if rest and show is not None:
        show(rest)
    return reply


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
    show: Callable[[str], None] | None = None,
    check: Callable[[str], str] = checked_answer,
) -> str:
    """Ask the chat model for a text reply, streaming it through the answer's checks, retrying what fails.

    The request is tagged ``nostream``: LangGraph's ``messages`` stream (LangGraph Studio's) never carries its raw
    tokens. Only text that passed the checks reaches ``show``, and the step's result reaches the state.

    Args:
        model: The chat model.
        messages: The prompt.
        name: Run name, shown in traces.
        attempts: Tries per request on transient faults (429, 5xx, timeouts, dropped connections).
        reply_attempts: Requests made while replies are unusable.
        language: The language the reply must be in, or None for any.
        on_retry: Told why each failed attempt failed, before the next one; a streaming
            caller uses it to withdraw the tokens already shown.
        budget: The question's chat budget, shared by its steps.
        show: Given the reply's checked text as it streams.
        check: What streamed text passes through (default: plain links, no credentials).

    Returns:
        The reply's text, without ``<think>`` blocks, with images and links as plain text and no
        credentials (see :mod:`llm.output`).

    Raises:
        UnusableReplyError: No reply could be used.
        openai.OpenAIError: A request failed for good (after its retries).
    """
    reason = ""
    config: RunnableConfig = {"run_name": name, "tags": ["nostream"]}
    for attempt in range(max(reply_attempts, 1)):
        if attempt and on_retry is not None:
            on_retry(reason)
        try:
            reply = invoke_with_retries(
                model,
                list(messages),
                config,
                attempts,
                on_retry,
                budget,
                read=partial(read_reply, show=show, check=check, budget=budget),
            )
        except UnusableReplyError as error:
            if isinstance(error, MalformedReplyError):
                raise  # the endpoint failing, not a reply worth asking for again
            reason = str(error)
            continue
        text = strip_think(reply.text)
        problem = unusable(reply, text, language)
        if problem is None:
            return checked_answer(text)
        reason = problem
    raise UnusableReplyError(reason)
