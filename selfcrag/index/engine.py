"""Which engine holds a knowledge base: Qdrant Edge in the data folder, or a Qdrant server.

``QDRANT_URL`` unset: the embedded engine, on disk in ``<data>/index``.
``QDRANT_URL=http://...``: a Qdrant server or cluster through qdrant-client,
one collection per knowledge base (``SELFCRAG_COLLECTION``), built with the
shard, replica, on-disk and quantization settings of the configuration.
``QDRANT_URL=local:PATH`` runs the server code path against qdrant-client's
local mode in ``PATH`` (one process at a time): that is how the server path
is tested on machines where no Qdrant server can run.
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from selfcrag.errors import UserError
from selfcrag.index.reader import IndexReader
from selfcrag.index.store import IndexOptions
from selfcrag.index.writer import Boundaries, EmbeddingModel, IndexWriter, ProgressCallback, ServerTarget
from selfcrag.settings import Settings

LOCAL_PREFIX = "local:"

_local_lock = threading.Lock()
# Local mode lets one client per process open a folder: users in one process share it.
_local_clients: dict[Path, Any] = {}


@atexit.register
def _close_local_clients() -> None:
    # Closed before the interpreter tears down the modules their finalizers need.
    with _local_lock:
        for client in _local_clients.values():
            client.close()
        _local_clients.clear()


def index_options(settings: Settings) -> IndexOptions:
    """The collection build settings of a configuration."""
    return IndexOptions(
        quantization=settings.qdrant_quantization,
        vectors_on_disk=settings.qdrant_on_disk,
        shard_number=settings.qdrant_shards,
        replication_factor=settings.qdrant_replicas,
    )


def _one_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__


def server_target(settings: Settings) -> ServerTarget | None:
    """Connect to the configured Qdrant server, or None for the embedded engine.

    Raises:
        UserError: The server cannot be reached or refuses the key (one line, without the key).
    """
    url = settings.qdrant_url
    if not url:
        return None
    from qdrant_client import QdrantClient

    if url.startswith(LOCAL_PREFIX):
        path = Path(url.removeprefix(LOCAL_PREFIX)).expanduser().resolve()
        with _local_lock:
            client = _local_clients.get(path)
            if client is None:
                path.mkdir(parents=True, exist_ok=True)
                try:
                    client = _local_clients[path] = QdrantClient(path=str(path))
                except RuntimeError as error:
                    raise UserError(
                        f"{url} is open in another process (qdrant-client local mode allows one): {_one_line(error)}"
                    ) from None
    else:
        # The version check warns twice when the server is unreachable; the call below says it in one line.
        client = QdrantClient(url=url, api_key=settings.qdrant_api_key, timeout=30, check_compatibility=False)
        try:
            client.get_collections()
        except Exception as error:  # noqa: BLE001 - any transport or auth failure: one line for the user
            raise UserError(f"cannot reach Qdrant at {url}: {_one_line(error)}") from None
    return ServerTarget(client, settings.collection_prefix)


def open_reader(settings: Settings) -> IndexReader:
    """Open the committed index of a configuration for searching."""
    return IndexReader(settings.data_dir, server=server_target(settings))


def open_writer(
    settings: Settings,
    embedder: EmbeddingModel,
    *,
    on_wait: Callable[[str], None] | None = None,
    progress: ProgressCallback | None = None,
    boundaries: Boundaries | None = None,
) -> IndexWriter:
    """Start writing the next generation of a configuration's index (use it as a context manager).

    Args:
        settings: Where the index lives, and on which engine.
        embedder: The embedding model its vectors come from.
        on_wait: Told when the writer waits for another one.
        progress: Told how far the writer's own long steps have come.
        boundaries: How semantic boundaries are measured (see :class:`~selfcrag.index.writer.IndexWriter`).
    """
    return IndexWriter(
        settings.data_dir,
        embedder,
        server=server_target(settings),
        options=index_options(settings),
        on_wait=on_wait,
        progress=progress,
        boundaries=boundaries,
    )
