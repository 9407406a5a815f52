"""The chat model: ``ChatOpenAI`` against OpenAI or any OpenAI-compatible server, and the limits of one request."""

from __future__ import annotations

from functools import lru_cache
from urllib.parse import urlsplit

from langchain_core.language_models import BaseChatModel
from langchain_openai import ChatOpenAI
from langchain_openai.chat_models.base import BaseChatOpenAI
from pydantic import SecretStr

OPENAI_API = "https://api.openai.com/v1"


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


def is_openai(base_url: str | None) -> bool:
    """Tell whether an endpoint is OpenAI's own API (no base URL, or api.openai.com).

    Args:
        base_url: The configured base URL.

    Returns:
        True for OpenAI's API.
    """
    return not base_url or (urlsplit(base_url).hostname or "").endswith("api.openai.com")


def endpoint_of(model: BaseChatModel) -> str:
    """Name the endpoint and model a chat model talks to, to remember what that endpoint can do.

    Args:
        model: The chat model.

    Returns:
        ``"<base URL> <model name>"`` for ChatOpenAI; the class and model name of any other chat model.
    """
    if isinstance(model, BaseChatOpenAI):
        return f"{(model.openai_api_base or OPENAI_API).rstrip('/')} {model.model_name}"
    name = getattr(model, "model_name", None) or getattr(model, "model", None) or ""
    return f"{type(model).__name__} {name}".strip()


def limited(model: BaseChatModel, *, max_tokens: int | None = None, timeout: float | None = None) -> BaseChatModel:
    """The chat model with the limits of one request: the tokens it may generate, the seconds it may take.

    ChatOpenAI sends a token limit as ``max_completion_tokens``, the name OpenAI's API wants; many OpenAI-compatible
    servers do not read it (llama-cpp-python's server then generates until its context is full). To any other
    server the limit goes as ``max_tokens``, the name they all read. The timeout goes with the request, so each
    attempt gets what is left of the question's time (never more than the model's own timeout).

    A chat model of another kind (one a caller built) gets ``max_tokens`` when it has such a field, and keeps its
    own timeout.

    Args:
        model: The chat model.
        max_tokens: Tokens the reply may hold (None: no limit of ours).
        timeout: Seconds the request may take (None: the model's own timeout).

    Returns:
        A copy of the model with the limits (sharing its HTTP client), or the model itself.
    """
    if not isinstance(model, BaseChatOpenAI):
        if max_tokens is not None and "max_tokens" in type(model).model_fields:
            return model.model_copy(update={"max_tokens": max_tokens})
        return model
    update: dict[str, object] = {}
    if timeout is not None:
        own = model.request_timeout
        if isinstance(own, int | float):
            timeout = min(timeout, float(own))
        update["model_kwargs"] = {**model.model_kwargs, "timeout": timeout}
    if max_tokens is not None:
        if is_openai(model.openai_api_base):
            update["max_tokens"] = max_tokens
        else:
            update["extra_body"] = {**(model.extra_body or {}), "max_tokens": max_tokens}
    return model.model_copy(update=update) if update else model
