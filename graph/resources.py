"""Shared, expensive objects of a process: one retriever per data directory, chat models.

Qdrant local mode lets one client per process open a data directory, so every
node of every run reuses the retriever opened here instead of opening its own.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from langchain_core.language_models import BaseChatModel

from selfcrag.errors import UserError
from selfcrag.graph.context import Context
from selfcrag.llm.chat import build_chat_model
from selfcrag.search.retriever import RetrievalConfig, Retriever
from selfcrag.settings import Settings

_lock = threading.Lock()
_retrievers: dict[Path, Retriever] = {}
_chat_model_override: BaseChatModel | None = None


def settings_for(context: Context) -> Settings:
    """Read the settings, with the context's data directory when it names one.

    Args:
        context: The run's context.

    Returns:
        The settings.
    """
    return Settings.from_env(data_dir=context.data_dir or None)


def retrieval_config(context: Context) -> RetrievalConfig:
    """Build the search configuration from the run's knobs.

    Args:
        context: The run's context.

    Returns:
        The retrieval configuration.
    """
    return RetrievalConfig(top_k=context.top_k, window=context.window, rrf_k=context.rrf_k)


def get_retriever(settings: Settings) -> Retriever:
    """Return the process's retriever for a data directory, opening it on first use.

    Args:
        settings: Settings naming the data directory.

    Returns:
        The shared retriever.

    Raises:
        NoIndexError: Nothing has been ingested into the directory.
    """
    key = settings.data_dir.expanduser().resolve()
    with _lock:
        retriever = _retrievers.get(key)
        if retriever is None:
            retriever = _retrievers[key] = Retriever(settings)
        return retriever


def close_retriever(data_dir: Path) -> None:
    """Close the shared retriever of one data directory, if one is open (releasing its Qdrant folder lock).

    Args:
        data_dir: The data directory.
    """
    with _lock:
        retriever = _retrievers.pop(data_dir.expanduser().resolve(), None)
    if retriever is not None:
        retriever.close()


def close_retrievers() -> None:
    """Close every shared retriever (releasing Qdrant's folder locks)."""
    with _lock:
        for retriever in _retrievers.values():
            retriever.close()
        _retrievers.clear()


@contextmanager
def use_chat_model(model: BaseChatModel) -> Iterator[BaseChatModel]:
    """Make every run in this process use a given chat model while the block runs.

    For tests and for embedding the graph in an application that builds its
    own model. ``answerer="offline"`` still wins.

    Args:
        model: Any LangChain chat model supporting ``with_structured_output``.

    Yields:
        The model.
    """
    global _chat_model_override
    previous, _chat_model_override = _chat_model_override, model
    try:
        yield model
    finally:
        _chat_model_override = previous


def get_chat_model(context: Context) -> BaseChatModel | None:
    """Return the chat model a run should use, or None for the offline path.

    Args:
        context: The run's context (``answerer``, model name, timeout).

    Returns:
        The model, or None when offline.

    Raises:
        UserError: ``answerer="chat"`` but no endpoint is configured.
    """
    if context.answerer == "offline":
        return None
    if _chat_model_override is not None:
        return _chat_model_override
    settings = settings_for(context)
    if not (settings.openai_api_key or settings.openai_base_url):
        if context.answerer == "chat":
            raise UserError("answerer=chat needs a chat endpoint: set OPENAI_API_KEY or OPENAI_BASE_URL")
        return None
    return build_chat_model(context.chat_model, settings.openai_api_key, settings.openai_base_url,
                            context.request_timeout, context.temperature)
