"""What a run opens: retrievers (an index and its Qdrant engine), their offline evaluators, the chat model.

A :class:`Resources` owns what it opens and closes it: ``with Resources() as
resources, resources.active(): graph.invoke(...)``. The Python API
(:class:`selfcrag.graph.api.Session`), the CLI and the evaluation open one
for as long as they answer questions; nodes reach the active one through
:func:`current_resources`.

A graph run by ``langgraph dev`` / LangGraph Studio has no caller to open one:
its runs share a server-wide instance, opened on first use and closed when the
server process exits (the graph's lifespan).
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from selfcrag.errors import UserError
from selfcrag.graph.context import Context
from selfcrag.heuristics.evaluator import OfflineEvaluator
from selfcrag.llm.capabilities import FILE_NAME, EndpointMemory
from selfcrag.search.retriever import Retriever
from selfcrag.settings import Settings

# The chat model stack (langchain-openai, openai) is imported when a chat model is built, not by an offline run.
if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel


class Resources:
    """Retrievers and evaluators per data directory, and the chat model, opened on first use.

    Thread-safe: the runs of one session may share it.

    Args:
        chat_model: A chat model to use instead of building one from the
            environment (tests; applications that build their own).
            ``answerer="offline"`` still wins.
    """

    def __init__(self, chat_model: BaseChatModel | None = None) -> None:
        self._lock = threading.Lock()
        # Keyed by all the settings, not the folder alone: a run naming another Qdrant server or embedding
        # endpoint for the same folder gets a retriever of its own, and never hands its servers to later runs.
        self._retrievers: dict[Settings, Retriever] = {}
        self._evaluators: dict[Settings, OfflineEvaluator] = {}
        self._memories: dict[Path, EndpointMemory] = {}
        self._chat_model = chat_model
        self._closed = False

    def retriever(self, context: Context) -> Retriever:
        """The retriever of the context's data directory and servers, opened on first use.

        Args:
            context: The run's context.

        Returns:
            The retriever.

        Raises:
            NoIndexError: Nothing has been ingested into the directory.
        """
        settings = context.settings()
        key = _cache_key(settings)
        with self._lock:
            if self._closed:
                raise RuntimeError("these resources are closed")
            retriever = self._retrievers.get(key)
            if retriever is None:
                retriever = self._retrievers[key] = Retriever(settings, context.search_config())
            return retriever

    def evaluator(self, context: Context) -> OfflineEvaluator:
        """The offline evaluator of the context's index (kept for its caches).

        Args:
            context: The run's context.

        Returns:
            The evaluator.
        """
        retriever = self.retriever(context)
        key = _cache_key(retriever.settings)
        with self._lock:
            evaluator = self._evaluators.get(key)
            if evaluator is None or evaluator.retriever is not retriever:
                evaluator = self._evaluators[key] = OfflineEvaluator(retriever)
            return evaluator

    def chat_model(self, context: Context) -> BaseChatModel | None:
        """The chat model a run should use, or None for the offline path.

        Each request is limited further by the step that makes it (its tokens, what is left of the question's
        time: :func:`selfcrag.llm.chat.limited`).

        Args:
            context: The run's context (``answerer``, model name, ``request_timeout``).

        Returns:
            The model, or None when offline.

        Raises:
            UserError: ``answerer="chat"`` but no endpoint is configured.
        """
        if context.answerer == "offline":
            return None
        if self._chat_model is not None:
            return self._chat_model
        settings = context.settings()
        if not (settings.openai_api_key or settings.openai_base_url):
            if context.answerer == "chat":
                raise UserError("answerer=chat needs a chat endpoint: set OPENAI_API_KEY or OPENAI_BASE_URL")
            return None
        from selfcrag.llm.chat import build_chat_model

        return build_chat_model(
            context.chat_model,
            settings.openai_api_key,
            settings.openai_base_url,
            context.request_timeout,
            context.temperature,
        )

    def endpoint_memory(self, context: Context) -> EndpointMemory:
        """What the chat endpoints were found to refuse, kept in the context's data folder.

        Args:
            context: The run's context.

        Returns:
            The memory of ``<data dir>/chat_endpoints.json``.
        """
        from selfcrag.llm.structured import STRUCTURED_OUTPUT_METHODS

        key = context.settings().data_dir.resolve()
        with self._lock:
            memory = self._memories.get(key)
            if memory is None:
                memory = self._memories[key] = EndpointMemory(key / FILE_NAME, STRUCTURED_OUTPUT_METHODS)
            return memory

    def release(self, data_dir: Path) -> None:
        """Close the retrievers of one data directory, if open (before another process rewrites it).

        Args:
            data_dir: The data directory.
        """
        folder = data_dir.expanduser().resolve()
        with self._lock:
            keys = [key for key in self._retrievers if key.data_dir == folder]
            retrievers = [self._retrievers.pop(key) for key in keys]
            for key in keys:
                self._evaluators.pop(key, None)
        for retriever in retrievers:
            retriever.close()

    def close(self) -> None:
        """Close every retriever; the object cannot be used afterwards."""
        with self._lock:
            retrievers = list(self._retrievers.values())
            self._retrievers.clear()
            self._evaluators.clear()
            self._closed = True
        for retriever in retrievers:
            retriever.close()

    @contextmanager
    def active(self) -> Iterator[Resources]:
        """Make these the resources that nodes use, in this thread and the threads its runs start.

        Yields:
            These resources.
        """
        token = _active.set(self)
        try:
            yield self
        finally:
            _active.reset(token)

    def __enter__(self) -> Resources:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _cache_key(settings: Settings) -> Settings:
    """The settings a retriever is kept under: its folder resolved, so two spellings of one folder share it."""
    return replace(settings, data_dir=settings.data_dir.resolve())


_active: ContextVar[Resources | None] = ContextVar("selfcrag_resources", default=None)
_server_lock = threading.Lock()
_server: Resources | None = None


def current_resources() -> Resources:
    """The resources a node uses: the caller's active ones, else the server-wide ones of ``langgraph dev``.

    Returns:
        The resources.
    """
    active = _active.get()
    if active is not None:
        return active
    global _server
    with _server_lock:
        if _server is None:
            _server = Resources()
            atexit.register(_server.close)
        return _server
