"""Sentence vectors in Qdrant: local mode on disk by default, a server when configured."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
from qdrant_client import QdrantClient, models
from tenacity import retry, retry_if_exception, stop_after_attempt, wait_random_exponential

from selfcrag.errors import IndexLockedError, UserError

UPSERT_BATCH = 256


def _transient(error: BaseException) -> bool:
    """Tell whether a Qdrant error is worth retrying (server mode network faults)."""
    name = type(error).__name__
    return name in {"ResponseHandlingException", "ConnectError", "ReadTimeout", "WriteTimeout",
                    "RemoteProtocolError", "ConnectTimeout"} or (
        name == "UnexpectedResponse" and getattr(error, "status_code", 0) in {429, 500, 502, 503, 504}
    )


_retrying = retry(
    retry=retry_if_exception(_transient),
    stop=stop_after_attempt(5),
    wait=wait_random_exponential(multiplier=0.5, max=8),
    reraise=True,
)


_local_lock = threading.Lock()
# Local mode lets one client per process open a folder: the stores of one process that open the same
# folder share its client, which the last of them to close closes.
_local_clients: dict[Path, tuple[QdrantClient, int]] = {}


def _open_local(path: Path, data_dir: Path) -> QdrantClient:
    key = path.resolve()
    with _local_lock:
        if key in _local_clients:
            client, users = _local_clients[key]
            _local_clients[key] = (client, users + 1)
            return client
        try:
            client = QdrantClient(path=str(path))
        except RuntimeError as error:
            if "already accessed" in str(error):
                raise IndexLockedError(
                    f"the index in {data_dir} is open in another process (Qdrant local mode allows one); "
                    "close it (e.g. `langgraph dev` or another selfcrag), or set QDRANT_URL to share a server"
                ) from None
            raise
        _local_clients[key] = (client, 1)
        return client


def _release_local(path: Path) -> None:
    key = path.resolve()
    with _local_lock:
        client, users = _local_clients[key]
        if users > 1:
            _local_clients[key] = (client, users - 1)
            return
        del _local_clients[key]
    client.close()


class VectorStore:
    """One Qdrant collection of sentence vectors.

    Args:
        data_dir: The data directory; local mode keeps its files in ``data_dir/qdrant``.
        url: A Qdrant server or cluster URL; None for local mode.
        api_key: The server's API key.
    """

    def __init__(self, data_dir: Path, url: str | None = None, api_key: str | None = None) -> None:
        self.local = url is None
        self._path = data_dir / "qdrant"
        self._closed = False
        if url is None:
            self._path.mkdir(parents=True, exist_ok=True)
            self.client = _open_local(self._path, data_dir)
        else:
            # The version check warns twice when the server is unreachable; the get_collections
            # call below reports that in one line instead.
            self.client = QdrantClient(url=url, api_key=api_key, timeout=30, check_compatibility=False)
            try:
                self.client.get_collections()
            except Exception as error:  # any transport or auth failure: one line for the user
                raise UserError(f"cannot reach Qdrant at {url}: {_one_line(error)}") from None

    def ensure_collection(self, name: str, dim: int) -> None:
        """Create the collection if it does not exist.

        Every embedder here returns unit vectors, so the dot product is the
        cosine. Asking for DOT rather than COSINE matters in local mode, which
        would otherwise re-normalise every stored vector on every query (40 ms
        of a 50 ms search on 12K sentences).

        Args:
            name: Collection name.
            dim: Vector size.
        """
        if self.client.collection_exists(name):
            return
        self.client.create_collection(
            name,
            vectors_config=models.VectorParams(size=dim, distance=models.Distance.DOT),
        )

    def existing(self, collection: str, ids: Sequence[str]) -> set[str]:
        """Return which of the given point ids are already stored.

        Args:
            collection: Collection name.
            ids: Point ids to look for.

        Returns:
            The ids found.
        """
        found: set[str] = set()
        if not ids or not self.client.collection_exists(collection):
            return found
        for start in range(0, len(ids), 1024):
            points = self.client.retrieve(collection, list(ids[start : start + 1024]),
                                          with_payload=False, with_vectors=False)
            found.update(str(p.id) for p in points)
        return found

    def vectors(self, collection: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Read stored vectors by point id.

        Args:
            collection: Collection name.
            ids: Point ids.

        Returns:
            The vectors found, by id (missing ids are left out).
        """
        found: dict[str, np.ndarray] = {}
        for start in range(0, len(ids), 1024):
            points = self.client.retrieve(collection, list(ids[start : start + 1024]),
                                          with_payload=False, with_vectors=True)
            found.update({str(p.id): np.asarray(p.vector, dtype=np.float32) for p in points
                          if isinstance(p.vector, list)})
        return found

    @_retrying
    def _upsert_batch(self, collection: str, points: list[models.PointStruct]) -> None:
        self.client.upsert(collection, points=points, wait=True)

    def upsert(self, collection: str, ids: Sequence[str], vectors: np.ndarray,
               payloads: Sequence[dict[str, object]]) -> None:
        """Write vectors with their payloads, in batches, retrying transient faults.

        Args:
            collection: Collection name.
            ids: Point ids.
            vectors: One row per id.
            payloads: One payload per id.
        """
        for start in range(0, len(ids), UPSERT_BATCH):
            stop = start + UPSERT_BATCH
            batch = [
                models.PointStruct(id=pid, vector=vector.tolist(), payload=payload)
                for pid, vector, payload in zip(ids[start:stop], vectors[start:stop], payloads[start:stop],
                                                strict=True)
            ]
            self._upsert_batch(collection, batch)

    def delete(self, collection: str, ids: Sequence[str]) -> None:
        """Delete points by id (missing ids are ignored).

        Args:
            collection: Collection name.
            ids: Point ids.
        """
        if not ids or not self.client.collection_exists(collection):
            return
        for start in range(0, len(ids), 1024):
            self.client.delete(collection, points_selector=models.PointIdsList(points=list(ids[start : start + 1024])))

    def all_ids(self, collection: str) -> Iterator[str]:
        """Iterate over every point id in the collection.

        Args:
            collection: Collection name.

        Yields:
            Point ids.
        """
        if not self.client.collection_exists(collection):
            return
        offset = None
        while True:
            points, offset = self.client.scroll(collection, limit=2048, offset=offset,
                                                with_payload=False, with_vectors=False)
            yield from (str(p.id) for p in points)
            if offset is None:
                return

    def search(self, collection: str, vector: np.ndarray, limit: int) -> list[tuple[str, float]]:
        """Find the nearest sentences to a query vector.

        Args:
            collection: Collection name.
            vector: The query vector.
            limit: How many to return.

        Returns:
            ``(point_id, cosine)`` pairs, best first.
        """
        response = self.client.query_points(collection, query=vector.tolist(), limit=limit,
                                            with_payload=False, with_vectors=False)
        return [(str(p.id), float(p.score)) for p in response.points]

    def close(self) -> None:
        """Release the collection (in local mode, the folder lock once no store of this process uses it)."""
        if self._closed:
            return
        self._closed = True
        if self.local:
            _release_local(self._path)
        else:
            self.client.close()


def _one_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__
