"""Plain-text replies (answers) that are checked before they are used.

A reply is unusable when it is empty once its ``<think>`` blocks are removed,
longer than :data:`MAX_REPLY_CHARS`, when it was cut off in transit (a stream
that ended without a finish reason), or when it is written in the other
language than the question's (Chinese for an English question, or no Chinese
at all for a Chinese one). An unusable
reply is asked for again, up to ``reply_attempts`` requests; then
:class:`~models.errors.UnusableReplyError` tells the node to fall back to
its offline method.

A reply that ran into its step's token limit (finish reason ``length``) or
started repeating itself is cut off too (:class:`~selfcrag.llm.errors.CutOffReplyError`):
its stream is stopped as soon as that shows, and it is not asked for again, since the
same prompt would end the same way. The question's deadline bounds the whole
stream: chunks are read in a thread of their own and waited for no longer
than the question has left.
"""

from __future__ import annotations

import contextvars
import queue
import re
import threading
from collections.abc import Callable, Generator, Iterator, Sequence
from functools import partial

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, BaseMessageChunk
from langchain_core.runnables import RunnableConfig

from selfcrag.index.tokenize import letter_counts
from selfcrag.llm.budget import TIME_RAN_OUT, CallBudget
from selfcrag.llm.chat import limited
from selfcrag.llm.errors import (
    BudgetSpentError,
    CutOffReplyError,
    DroppedStreamError,
    MalformedReplyError,
    UnusableReplyError,
)
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
# The reasons they give for a reply that ran into its token limit (OpenAI and compatible servers, Ollama; Anthropic).
_TOKEN_LIMIT_REASONS = frozenset({"length", "max_tokens"})

REPEATED_STRETCH = 80
"""Characters whose third appearance in a reply means the model is going round in a loop (a repeated paragraph,
"the the the ..."): the reply is cut off there. An honest answer does not write the same 80 characters three times."""
# Characters a streamed reply grows by between two looks for a loop (the look scans the whole reply).
_REPEAT_CHECK_EVERY = 32
REPEATING = "the reply was cut off: it started repeating itself"


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


def reached_token_limit(message: BaseMessage) -> bool:
    """Tell whether a reply ended because it ran into its token limit (finish reason ``length``).

    Args:
        message: The model's reply.

    Returns:
        True when the provider said so.
    """
    metadata = message.response_metadata or {}
    return any(metadata.get(key) in _TOKEN_LIMIT_REASONS for key in _FINISH_KEYS)


def repeats_itself(text: str, stretch: int = REPEATED_STRETCH) -> bool:
    """Tell whether a reply has started going round in a loop: its last ``stretch`` characters appear twice before.

    Args:
        text: The reply so far.
        stretch: How long the repeated stretch must be.

    Returns:
        True when the end of the text is its third copy of the same characters (copies may overlap, so a short
        loop such as "the the the" counts once it is ``stretch`` characters long plus two turns).
    """
    if len(text) <= stretch:
        return False
    tail = text[-stretch:]
    end = len(text) - stretch
    first = text.find(tail)
    if first >= end:
        return False
    return 0 <= text.find(tail, first + 1) < end


def cut_off_reason(token_limit: int | None) -> str:
    """Say that a reply reached its step's token limit.

    Args:
        token_limit: The step's ``max_tokens``, if known.

    Returns:
        The reason, in one line.
    """
    limit = f"its limit of {token_limit:,} tokens" if token_limit is not None else "its token limit"
    return f"the reply was cut off: it reached {limit}"


# Text in quotation marks, of either language's marks.
_QUOTED = re.compile(r'“[^”]*”|"[^"]*"|「[^」]*」|『[^』]*』|‘[^’]*’')


def in_wrong_language(text: str, language: str) -> bool:
    """Tell whether an answer is plainly written in the other language than the question's.

    Lenient on purpose: an English answer may name a Chinese product, a
    Chinese answer may quote English terms, and what stands in quotation
    marks is not counted: an answer quotes a source in the source's own
    language ("the notice says “本次停水不收取任何额外费用”").

    Args:
        text: The answer.
        language: The question's language, ``en`` or ``zh``.

    Returns:
        For ``zh``: the answer has letters but no Chinese character. For
        ``en``: Chinese characters outnumber the other letters.
    """
    cjk, letters = letter_counts(_QUOTED.sub(" ", text))
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


_END = object()


def _within_deadline(
    chunks: Iterator[BaseMessageChunk], budget: CallBudget | None
) -> Generator[BaseMessageChunk, None, None]:
    """The chunks of a stream, each waited for no longer than the question has left.

    The stream is read in a thread of its own: a server that stops sending mid-answer (or takes minutes over its
    prompt) cannot hold the question past its deadline, whatever its read timeout. Once the reader stops, the thread
    closes the stream at its next chunk, or ends when the request's own timeout (never longer than the question's
    time) fires.

    Args:
        chunks: The stream (its generator is closed when reading stops).
        budget: The question's chat budget; None reads the stream here, without a deadline.

    Yields:
        The chunks, in order.

    Raises:
        BudgetSpentError: The question's deadline passed before the next chunk came.
    """
    if budget is None:
        try:
            yield from _until_cut_off(chunks)
        finally:
            _close(chunks)
        return
    pieces: queue.Queue[tuple[object, BaseException | None]] = queue.Queue()
    stop = threading.Event()

    def pump() -> None:
        try:
            for chunk in _until_cut_off(chunks):
                pieces.put((chunk, None))
                if stop.is_set():
                    break
        except BaseException as error:  # handed to the reader, which raises it in its own thread
            pieces.put((_END, error))
        else:
            pieces.put((_END, None))
        finally:
            _close(chunks)  # stops the request: nothing more is read of a reply that is not used

    # The request runs in the caller's context (its run, tags and callbacks), in a thread of its own.
    context = contextvars.copy_context()
    threading.Thread(target=context.run, args=(pump,), name="selfcrag-chat-stream", daemon=True).start()
    try:
        while True:
            try:
                chunk, error = pieces.get(timeout=budget.remaining())
            except queue.Empty:
                raise BudgetSpentError(f"{TIME_RAN_OUT} while the answer streamed") from None
            if chunk is _END:
                if error is not None:
                    raise error
                return
            yield chunk  # type: ignore[misc]
    finally:
        stop.set()


def _close(chunks: Iterator[BaseMessageChunk]) -> None:
    close = getattr(chunks, "close", None)
    if close is not None:
        close()


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
        UnusableReplyError: The reply grew past :data:`MAX_REPLY_CHARS`.
        DroppedStreamError: The stream ended before its first token.
        CutOffReplyError: The reply started repeating itself.
        BudgetSpentError: The question's deadline passed while the reply streamed.
    """
    stream = CheckedStream(check, limit=MAX_REPLY_CHARS)
    reply: BaseMessageChunk | None = None
    text, looked_at = "", 0
    arriving = _within_deadline(chunks, budget)
    try:
        for chunk in arriving:
            reply = chunk if reply is None else reply + chunk
            text += chunk.text
            shown = stream.feed(chunk.text)
            if shown and show is not None:
                show(shown)
            if stream.over_limit:
                raise UnusableReplyError(f"the reply grew past the limit of {MAX_REPLY_CHARS:,} characters")
            if len(text) - looked_at >= _REPEAT_CHECK_EVERY:
                looked_at = len(text)
                if repeats_itself(text):
                    raise CutOffReplyError(REPEATING)
            if budget is not None and budget.remaining() <= 0:
                raise BudgetSpentError(f"{TIME_RAN_OUT} while the answer streamed")
    finally:
        arriving.close()  # stops the request now, not when the traceback that holds this frame is freed
    if reply is None:
        raise DroppedStreamError("the reply was cut off before its first token")
    if repeats_itself(text):
        raise CutOffReplyError(REPEATING)
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
    max_tokens: int | None = None,
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
        max_tokens: Tokens the reply may hold; one that reaches the limit is cut off and not used.

    Returns:
        The reply's text, without ``<think>`` blocks, with images and links as plain text and no
        credentials (see :mod:`llm.output`).

    Raises:
        UnusableReplyError: No reply could be used.
        CutOffReplyError: The reply reached its token limit or repeated itself (not asked for again).
        openai.OpenAIError: A request failed for good (after its retries).
    """
    reason = ""
    config: RunnableConfig = {"run_name": name, "tags": ["nostream"]}
    for attempt in range(max(reply_attempts, 1)):
        if attempt and on_retry is not None:
            on_retry(reason)
        try:
            reply = invoke_with_retries(
                lambda seconds: limited(model, max_tokens=max_tokens, timeout=seconds),
                list(messages),
                config,
                attempts,
                on_retry,
                budget,
                read=partial(read_reply, show=show, check=check, budget=budget),
            )
        except UnusableReplyError as error:
            if isinstance(error, MalformedReplyError | DroppedStreamError | CutOffReplyError):
                # The endpoint failing (retried already, as a fault), or a reply that would end the same way again.
                raise
            reason = str(error)
            continue
        if reached_token_limit(reply):
            raise CutOffReplyError(cut_off_reason(max_tokens), token_limit=max_tokens)
        text = strip_think(reply.text)
        problem = unusable(reply, text, language)
        if problem is None:
            return checked_answer(text)
        reason = problem
    raise UnusableReplyError(reason)
