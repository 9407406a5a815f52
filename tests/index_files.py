"""Helpers for tests of the index's files: building with engine options, and what a folder holds."""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from selfcrag.files.loaders import SkippedFile, discover, read_document
from selfcrag.graph.context import Context
from selfcrag.index.embed import Embedder, WrappedEmbedder, load_embedder
from selfcrag.index.ingest import index_document
from selfcrag.index.store import IndexOptions
from selfcrag.index.writer import IndexWriter


def ingest_with_options(paths: Sequence[Path], data_dir: Path, options: IndexOptions) -> str:
    """Index files as ``selfcrag ingest`` reads them (same ids, hashes, embedder), with options it does not expose.

    Returns:
        The generation published.
    """
    settings = Context(data_dir=str(data_dir)).settings()
    embedder = load_embedder(settings.embedding_model, settings.openai_api_key, settings.embedding_base_url)
    with IndexWriter(data_dir, embedder, options=options) as writer:
        for path in discover(paths)[0]:
            loaded = read_document(path)
            assert not isinstance(loaded, SkippedFile), loaded
            writer.add(index_document(loaded, embedder.max_chars))
        name = writer.commit()
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
