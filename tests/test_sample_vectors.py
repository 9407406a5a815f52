"""The sample knowledge base's vectors ship with the package: `selfcrag demo` embeds none of its sentences.

They must be the default embedder's vectors of exactly the sentences an ingest of the sample asks for; when
the embedder's version, the sample or the splitter changes, these tests fail until
``scripts/ship_vectors.py`` is run again. A damaged or planted file is ignored, never unpickled.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from index_files import CountingEmbedder, same_model_vectors

from selfcrag.embed.embedders import Embedder, load_embedder
from selfcrag.embed.remembered import (
    RememberedVectors,
    read_sample_vectors,
    sample_vectors_file,
    with_sample_vectors,
    write_sample_vectors,
)
from selfcrag.files.sample import sample_kb
from selfcrag.graph.context import Context
from selfcrag.ingest.run import ingest

RUN_THE_SCRIPT = "run scripts/ship_vectors.py"


@pytest.fixture(scope="module")
def default_embedder() -> Embedder:
    return load_embedder(Context().embedding_model)


def test_an_ingest_of_the_sample_embeds_none_of_its_sentences(default_embedder: Embedder, tmp_path: Path) -> None:
    counting = CountingEmbedder(default_embedder)
    embedder = with_sample_vectors(counting)
    assert isinstance(embedder, RememberedVectors), f"no sample vectors for {counting.version}: {RUN_THE_SCRIPT}"

    summary = ingest([sample_kb()], Context(data_dir=str(tmp_path / "data")).settings(), embedder=embedder)

    assert counting.passages == 0, f"the sample has sentences the shipped vectors lack: {RUN_THE_SCRIPT}"
    assert embedder.recalled == summary.sentences > 200


def test_the_shipped_sample_vectors_are_the_default_embedders(default_embedder: Embedder) -> None:
    known = read_sample_vectors(sample_vectors_file(default_embedder), default_embedder.dim)
    assert known is not None, RUN_THE_SCRIPT
    sentences = sorted(known)[::10]  # a sample of them: embedding all costs 12 s of CPU
    fresh = default_embedder.embed_passages(sentences)
    assert same_model_vectors(np.stack([known[s] for s in sentences]), fresh), RUN_THE_SCRIPT


class MakesADirectory:
    """Unpickling this creates a folder: a vectors file holding it must never be unpickled."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[object, tuple[str]]:
        import os

        return os.mkdir, (str(self.path),)


def unit(rows: int, dim: int) -> np.ndarray:
    vectors = np.random.default_rng(0).standard_normal((rows, dim)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


@pytest.mark.parametrize("how", ["garbage", "empty", "pickled sentences", "wrong size", "not unit", "too many rows"])
def test_a_damaged_or_planted_sample_file_is_ignored(tmp_path: Path, how: str) -> None:
    path, marker = tmp_path / "sample.npz", tmp_path / "unpickled"
    if how == "garbage":
        path.write_bytes(b"PK\x03\x04 not a zip" * 50)
    elif how == "empty":
        path.write_bytes(b"")
    elif how == "pickled sentences":
        np.savez(path, sentences=np.array([MakesADirectory(marker)], dtype=object), vectors=unit(1, 8))
    elif how == "wrong size":
        write_sample_vectors(path, ["one", "two"], unit(2, 16))
    elif how == "not unit":
        write_sample_vectors(path, ["one", "two"], unit(2, 8) * 3)
    else:
        write_sample_vectors(path, ["one", "two"], unit(3, 8))

    assert read_sample_vectors(path, dim=8) is None
    assert not marker.exists()


def test_a_sound_sample_file_reads_back(tmp_path: Path) -> None:
    path = tmp_path / "sample.npz"
    vectors = unit(2, 8)
    write_sample_vectors(path, ["第一句。", "The second one."], vectors)
    known = read_sample_vectors(path, dim=8)
    assert known is not None and list(known) == ["第一句。", "The second one."]
    assert np.array_equal(known["The second one."], vectors[1])
