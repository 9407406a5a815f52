"""The chat model: ``ChatOpenAI`` against OpenAI or any OpenAI-compatible server."""

from __future__ import annotations

from functools import lru_cache

from langchain_openai import ChatOpenAI
from pydantic import SecretStr


@lru_cache(maxsize=32)
def build_chat_model(
    model: str, api_key: str | None, base_url: str | None, timeout: float, temperature: float
) -> ChatOpenAI:
    """Build (once per configuration) the chat model.

    The OpenAI client's own retries are switched off: :mod:`models.retry`
    retries transient faults with tenacity, with backoff and jitter, around
    every call.

    Args:
        model: Model name at the endpoint.
        api_key: API key; servers that need none get a placeholder.
        base_url: OpenAI-compatible endpoint, or None for OpenAI's.
        timeout: Seconds before a request times out.
        temperature: Sampling temperature.

    Returns:
        The model.
    """
    return ChatOpenAI(
        model=model,
        api_key=SecretStr(api_key or "unused"),
        base_url=base_url,
        timeout=timeout,
        max_retries=0,
        temperature=temperature,
    )
