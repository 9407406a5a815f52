"""Which chat-model errors are worth another try, and the retry policy around a call.

Transient faults (429, 5xx, timeouts, dropped connections) are retried with
exponential backoff and full jitter, or after the wait a ``Retry-After``
header asks for when it asks for no more than :data:`MAX_RETRY_AFTER`
seconds. A server asking for a longer wait is not waited for: the step gives
up at once and the node falls back to its offline method.

A request the server refused as malformed is not retried, whatever its status:
llama-cpp-python's server answers a field it does not know with HTTP 500 and
a validation error, and the same request would get the same answer.
"""

from __future__ import annotations

import email.utils
import logging
import os
import re
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import openai
from langchain_core.runnables import Runnable, RunnableConfig
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt, wait_random_exponential

from selfcrag.llm import budget as budget_clock
from selfcrag.llm.budget import CallBudget
from selfcrag.llm.errors import BudgetSpentError, DroppedStreamError, MalformedReplyError, UnusableReplyError
from selfcrag.llm.secrets import redact

log = logging.getLogger(__name__)

# Rate limits, server faults, and the request conflicts OpenAI's own client retries.
RETRYABLE_STATUS = frozenset({408, 409, 429})
# Longest Retry-After (seconds) honoured; a longer one means answering offline now beats waiting.
MAX_RETRY_AFTER = 10.0
# Longest message kept in a trace or log line.
MAX_REASON_CHARS = 300

# An error body that says the request itself was invalid (pydantic's and FastAPI's words, and the usual ones):
# sent again, it would be refused again.
_REQUEST_INVALID = re.compile(
    r"validation error|RequestValidationError|Input should be|Field required|Extra inputs are not permitted|"
    r"literal_error|unrecognized request argument|not supported|unsupported|is not allowed|invalid_request_error",
    re.IGNORECASE,
)
# What a refusal of the structured output names: response_format (JSON schema, JSON mode) or tools (function calling).
_STRUCTURED_OUTPUT_PARTS = re.compile(
    r"response_format|json_schema|json_object|\btools?\b|tool_choice|tool.?call|function.?call", re.IGNORECASE
)

# What the OpenAI client and LangChain raise, while reading a 200 reply, when the reply is not a chat
# completion: an HTML page or a bare string (AttributeError: 'str' object has no attribute 'choices'; through
# LangChain, ValueError: Unexpected response type), a stream holding only ``data: [DONE]`` (AssertionError, or
# ValueError: No generations found in stream), JSON nested deeper than Python's recursion limit (RecursionError).
_CLIENT_PARSE_FAULTS = (AttributeError, AssertionError, RecursionError, ValueError)
# Where such a fault must be raised to be the reply's fault rather than a bug of ours: in the client, its JSON
# decoder, or LangChain's reading of the reply.
_CLIENT_PACKAGES = tuple(
    os.sep + os.path.join(*name.split("/")) + os.sep
    for name in ("openai", "json", "httpx", "langchain_openai", "langchain_core/language_models")
)

_backoff = wait_random_exponential(multiplier=0.5, max=8)

OnRetry = Callable[[str], None]
"""Told, in one line, why an attempt failed before the next one is made."""


def is_transient(error: BaseException) -> bool:
    """Tell whether a failed chat request may succeed if sent again.

    Args:
        error: What the call raised.

    Returns:
        True for 429, 5xx, 408/409, timeouts and dropped connections (a stream that ended before its first token
        included), but not for a request the server refused as invalid.
    """
    if isinstance(error, DroppedStreamError):
        return True
    if isinstance(error, openai.APIStatusError):
        if refused_request(error):
            return False
        return error.status_code in RETRYABLE_STATUS or error.status_code >= 500
    return isinstance(error, openai.APIConnectionError | httpx.TimeoutException | httpx.TransportError)


def _error_text(error: openai.APIStatusError) -> str:
    """The message of an error reply (OpenAI's ``{"error": {"message"}}``, FastAPI's ``{"detail"}``, or the text)."""
    body = error.body
    if isinstance(body, dict):
        inner = body.get("error")
        if isinstance(inner, dict):
            return str(inner.get("message") or inner)
        return str(body.get("message") or body.get("detail") or inner or body)
    return str(body or error.message)


def refused_request(error: BaseException) -> bool:
    """Tell whether the server refused the request as invalid (a field it does not take), whatever the status.

    Args:
        error: What the call raised.

    Returns:
        True for an error reply (400, 422, or a 500 from a server that reports validation errors so) whose message
        says the request was invalid; such a request is not sent again.
    """
    if not isinstance(error, openai.APIStatusError) or error.status_code in (*RETRYABLE_STATUS, 401, 403, 404):
        return False
    if error.status_code in (400, 422):
        return True
    return error.status_code in (500, 501) and bool(_REQUEST_INVALID.search(_error_text(error)))


def refuses_structured_output(error: BaseException) -> bool:
    """Tell whether the server refused how a structured reply was asked for (response_format or tools).

    Args:
        error: What the call raised.

    Returns:
        True for a refused request whose message names ``response_format``, JSON schema or JSON mode, or tools
        (e.g. llama-cpp-python: ``Input should be 'text' or 'json_object'``; Ollama: ``does not support tools``).
    """
    if not isinstance(error, openai.APIStatusError) or not refused_request(error):
        return False
    return bool(_STRUCTURED_OUTPUT_PARTS.search(_error_text(error)))


def retry_after(error: BaseException) -> float | None:
    """Read the wait a server asked for (``retry-after-ms`` or ``Retry-After``, seconds or an HTTP date).

    Args:
        error: What the call raised.

    Returns:
        Seconds to wait, or None when the error carries no such header.
    """
    response = getattr(error, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    try:
        if (ms := headers.get("retry-after-ms")) is not None:
            return max(float(ms) / 1000, 0.0)
        value = headers.get("retry-after")
        if value is None:
            return None
        try:
            return max(float(value), 0.0)
        except ValueError:
            when = email.utils.parsedate_to_datetime(value)
            return max(when.timestamp() - time.time(), 0.0)
    except (TypeError, ValueError, OverflowError):
        return None


def describe_failure(error: BaseException) -> str:
    """Say in one short line, without secrets, why a chat step failed (a fault, or a reply it could not use).

    Args:
        error: What the call raised.

    Returns:
        E.g. ``HTTP 503: upstream overloaded`` or ``APITimeoutError: Request timed out.``
    """
    if isinstance(error, UnusableReplyError | BudgetSpentError):
        text = str(error)
    elif isinstance(error, openai.APIStatusError):
        text = f"HTTP {error.status_code}: {_error_text(error)}"
    else:
        text = f"{type(error).__name__}: {error}"
        if isinstance(error, openai.APIConnectionError):
            root = _root_cause(error)
            if root is not error and str(root) and str(root) != str(error):
                text += f" ({root})"  # e.g. "[Errno 111] Connection refused"
    text = " ".join(text.split())
    # A server that puts its Python traceback in the error (llama-cpp-python's does) says nothing more after it.
    text = text.split(' File "', 1)[0].rstrip()
    return redact(text)[:MAX_REASON_CHARS]


def _root_cause(error: BaseException) -> BaseException:
    seen = {id(error)}
    while error.__cause__ is not None and id(error.__cause__) not in seen:
        error = error.__cause__
        seen.add(id(error))
    return error


def _raised_reading_the_reply(error: BaseException) -> bool:
    """Tell whether an error was raised inside the HTTP client or its JSON decoder (not in our code)."""
    frame = error.__traceback__
    while frame is not None and frame.tb_next is not None:
        frame = frame.tb_next
    return frame is not None and any(part in frame.tb_frame.f_code.co_filename for part in _CLIENT_PACKAGES)


ReadStream = Callable[[Iterator[Any]], Any]
"""Reads a streamed reply chunk by chunk (showing it, stopping it early) and returns the whole reply."""

Request = Callable[[float | None], Runnable[Any, Any]]
"""Makes the runnable of one attempt, given the seconds it may take (None: no question budget)."""


def _invoke_checked(runnable: Runnable[Any, Any], value: Any, config: RunnableConfig, read: ReadStream | None) -> Any:
    """Invoke (or stream) a chat model, turning a reply the client cannot read into :class:`MalformedReplyError`."""
    try:
        return runnable.invoke(value, config) if read is None else read(runnable.stream(value, config))
    except _CLIENT_PARSE_FAULTS as error:
        if not _raised_reading_the_reply(error):
            raise
        what = "JSON nested too deeply to read" if isinstance(error, RecursionError) else "not a chat completion"
        raise MalformedReplyError(f"the server's reply was {what}") from None


def _should_retry(error: BaseException) -> bool:
    hinted = retry_after(error)
    return is_transient(error) and (hinted is None or hinted <= MAX_RETRY_AFTER)


def _wait(state: RetryCallState) -> float:
    error = state.outcome.exception() if state.outcome is not None else None
    hinted = retry_after(error) if error is not None else None
    return hinted if hinted is not None else _backoff(state)


def invoke_with_retries(
    request: Request,
    value: Any,
    config: RunnableConfig,
    attempts: int,
    on_retry: OnRetry | None = None,
    budget: CallBudget | None = None,
    read: ReadStream | None = None,
) -> Any:
    """Invoke a runnable, retrying transient faults with backoff (tenacity) or as ``Retry-After`` asks.

    Plain tenacity rather than ``Runnable.with_retry``: the latter cannot set
    a first wait below one second without tenacity's deprecated ``initial``.

    Args:
        request: Makes the runnable (a chat model or a chain starting with one) of each attempt, given the seconds
            the attempt may take: what is left of the question's time.
        value: Its input.
        config: Its run configuration (tags, run name).
        attempts: Tries in all, the first included.
        on_retry: Told why each failed attempt that is retried failed.
        budget: The question's budget: every attempt counts against it, and no
            retry is made (nor waited for) that it cannot afford.
        read: Stream the reply through this reader instead of invoking: it gets the chunks and returns the reply.

    Returns:
        The runnable's output.

    Raises:
        BudgetSpentError: The budget was spent before an attempt could start.
    """
    name = config.get("run_name", "chat")

    def attempt() -> Any:
        if budget is None:
            return _invoke_checked(request(None), value, config, read)
        seconds = budget.start_call()
        try:
            return _invoke_checked(request(seconds), value, config, read)
        except Exception as error:
            # A 200 that is not a chat completion (an HTML page from a proxy) is the endpoint failing too. A refused
            # way of asking for structured output is not: the caller asks the other way (llm.structured).
            failed = is_transient(error) or isinstance(error, openai.APIStatusError | MalformedReplyError)
            if failed and not refuses_structured_output(error):
                budget.failed()
            raise

    def should_retry(error: BaseException) -> bool:
        if not _should_retry(error):
            return False
        if budget is None:
            return True
        hinted = retry_after(error)
        return budget.allows_wait(hinted if hinted is not None else 0.0)

    def wait(state: RetryCallState) -> float:
        seconds = _wait(state)
        return min(seconds, budget.remaining()) if budget is not None else seconds

    def before_sleep(state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome is not None else None
        reason = describe_failure(error) if error is not None else "unknown error"
        log.info(
            "%s: attempt %d of %d failed (%s); retrying in %.1f s",
            name,
            state.attempt_number,
            attempts,
            reason,
            state.upcoming_sleep,
        )
        if on_retry is not None:
            on_retry(reason)

    retrying = Retrying(
        retry=retry_if_exception(should_retry),
        stop=stop_after_attempt(max(attempts, 1)),
        wait=wait,
        sleep=budget_clock.wait,  # the question's clock: a test's passes at once
        before_sleep=before_sleep,
        reraise=True,
    )
    return retrying(attempt)
