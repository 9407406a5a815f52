"""Vectors computed once and kept: an embedder that answers for known texts from them.

Two sets of texts have vectors that are the same in every process using the same embedder, so the
default embedder's ship with the package (``vectors/``, made by ``scripts/ship_vectors.py``):

* the evaluator's background sentences (:mod:`selfcrag.heuristics.background`);
* the sentences of the bundled sample knowledge base, so that ``selfcrag demo`` embeds none of them (about
  12 s of CPU, most of the demo's first run, with the default model).

Each file is NumPy data (never a pickle), named by a digest of the embedder's name, version and size, and
checked when read: a damaged or foreign file is ignored, and the texts are embedded as usual.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import zipfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import BinaryIO

import numpy as np

from selfcrag.embed.embedders import Embedder, WrappedEmbedder

SHIPPED_DIR = Path(__file__).resolve().parent / "vectors"
# A sample file holds a few hundred sentences; anything far larger is not one.
_SAMPLE_FILE_LIMIT = 8 * 2**20


class RememberedVectors(WrappedEmbedder):
    """Answers for known texts from their stored vectors, and asks the embedder about anything else.

    Attributes:
        recalled: Passages answered from the stored vectors so far.
    """

    def __init__(
        self,
        embedder: Embedder,
        passages: Mapping[str, np.ndarray],
        questions: Mapping[str, np.ndarray] | None = None,
    ) -> None:
        super().__init__(embedder)
        self.passages = dict(passages)
        self.questions = dict(questions or {})
        self.recalled = 0

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:  # noqa: D102
        if texts and all(t in self.passages for t in texts):
            self.recalled += len(texts)
            return np.stack([self.passages[t] for t in texts])
        return self.embedder.embed_passages(texts)

    def embed_question(self, text: str) -> np.ndarray:  # noqa: D102
        known = self.questions.get(text)
        return known if known is not None else self.embedder.embed_question(text)


def unit_vectors(vectors: object, shape: tuple[int, ...]) -> np.ndarray | None:
    """``vectors`` if it is a float32 array of ``shape``, finite and of unit length; None for anything else."""
    if not isinstance(vectors, np.ndarray) or vectors.dtype != np.float32 or vectors.shape != shape:
        return None
    if not np.isfinite(vectors).all() or np.abs(np.linalg.norm(vectors, axis=-1) - 1.0).max(initial=0.0) > 0.01:
        return None
    return vectors


def read_vectors(path: Path, shape: tuple[int, ...]) -> np.ndarray | None:
    """Stored vectors of the expected shape (an ``.npy`` file), checked; None for anything else."""
    expected = 4 * int(np.prod(shape))
    try:
        if path.stat().st_size > expected + 4096:
            return None
        vectors = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError):
        return None
    return unit_vectors(vectors, shape)


def _write_atomically(path: Path, save: Callable[[BinaryIO], None]) -> None:
    """Write a file beside ``path`` and put it in place in one step; on failure remove it and raise."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tmp.open("wb") as handle:
            save(handle)
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise


def write_vectors(path: Path, vectors: np.ndarray) -> None:
    """Store vectors atomically; a folder that cannot be written leaves nothing behind."""
    with contextlib.suppress(OSError):
        _write_atomically(path, lambda handle: np.save(handle, vectors, allow_pickle=False))


def sample_vectors_file(embedder: Embedder, folder: Path = SHIPPED_DIR) -> Path:
    """Where an embedder's vectors of the sample knowledge base's sentences are shipped.

    Args:
        embedder: The embedder.
        folder: The folder of shipped vectors.

    Returns:
        A file named by a digest of the embedder's name, version and size.
    """
    key = "\n".join(["sample_kb", embedder.name, embedder.version, str(embedder.dim)])
    return folder / f"sample-{hashlib.sha256(key.encode('utf-8')).hexdigest()[:24]}.npz"


def write_sample_vectors(path: Path, sentences: Sequence[str], vectors: np.ndarray) -> None:
    """Store sentences (as they are embedded) and their vectors, as arrays of text and of float32."""
    texts = np.array(list(sentences), dtype=str)
    _write_atomically(
        path, lambda handle: np.savez_compressed(handle, sentences=texts, vectors=vectors.astype(np.float32))
    )


def read_sample_vectors(path: Path, dim: int) -> dict[str, np.ndarray] | None:
    """Shipped sentences and their vectors, checked; None when missing, damaged or of another size."""
    try:
        if path.stat().st_size > _SAMPLE_FILE_LIMIT:
            return None
        with np.load(path, allow_pickle=False) as stored:
            sentences, vectors = stored["sentences"], stored["vectors"]
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile):
        return None
    if not isinstance(sentences, np.ndarray) or sentences.dtype.kind != "U" or sentences.ndim != 1:
        return None
    checked = unit_vectors(vectors, (len(sentences), dim))
    if checked is None:
        return None
    return dict(zip(sentences.tolist(), checked, strict=True))


def with_sample_vectors(embedder: Embedder) -> Embedder:
    """The embedder, answering for the sample knowledge base's sentences from its shipped vectors, if any.

    Args:
        embedder: The index's embedder.

    Returns:
        A :class:`RememberedVectors` over ``embedder``, or ``embedder`` itself when none ship for it.
    """
    known = read_sample_vectors(sample_vectors_file(embedder), embedder.dim)
    return embedder if known is None else RememberedVectors(embedder, known)
