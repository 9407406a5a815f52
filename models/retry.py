"""Which chat-model errors are worth another try, and the retry policy around a call."""

from __future__ import annotations

from typing import Any

import httpx
import openai
from langchain_core.runnables import Runnable, RunnableConfig
from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_random_exponential

# Rate limits, server faults, and the request conflicts OpenAI's own client retries.
RETRYABLE_STATUS = frozenset({408, 409, 429})


def is_transient(error: BaseException) -> bool:
    """Tell whether a failed chat request may succeed if sent again.

    Args:
        error: What the call raised.

    Returns:
        True for 429, 5xx, 408/409, timeouts and dropped connections.
    """
    if isinstance(error, openai.APIStatusError):
        return error.status_code in RETRYABLE_STATUS or error.status_code >= 500
    return isinstance(error, openai.APIConnectionError | httpx.TimeoutException | httpx.TransportError)


def invoke_with_retries(runnable: Runnable[Any, Any], value: Any, config: RunnableConfig, attempts: int) -> Any:
    """Invoke a runnable, retrying transient faults with exponential backoff and full jitter (tenacity).

    Plain tenacity rather than ``Runnable.with_retry``: the latter cannot set
    a first wait below one second without tenacity's deprecated ``initial``.

    Args:
        runnable: A chat model or a chain starting with one.
        value: Its input.
        config: Its run configuration (tags, run name).
        attempts: Tries in all, the first included.

    Returns:
        The runnable's output.
    """
    retrying = Retrying(retry=retry_if_exception(is_transient), stop=stop_after_attempt(max(attempts, 1)),
                        wait=wait_random_exponential(multiplier=0.5, max=8), reraise=True)
    return retrying(runnable.invoke, value, config)
