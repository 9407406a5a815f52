"""The evaluator's background sentences are embedded once, not once per process.

The default embedder's vectors ship with the package; any other embedder's are embedded once per data folder
and kept there (the tests of the data folder's copies stand in for such an embedder by hiding the shipped ones).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from index_files import CountingEmbedder, copy_index, same_model_vectors

from selfcrag.embed.remembered import SHIPPED_DIR
from selfcrag.graph.context import Context
from selfcrag.heuristics import background
from selfcrag.heuristics.background import (
    BACKGROUND_SENTENCES,
    CACHE_DIR,
    background_cache_file,
    background_vectors,
)
from selfcrag.heuristics.evaluator import OfflineEvaluator
from selfcrag.search.retriever import Retriever

QUESTION = "How long are access tokens valid?"


class MakesADirectory:
    """Unpickling this creates a folder: a cache file holding it must never be unpickled."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return os.mkdir, (str(self.path),)


@pytest.fixture
def fresh_dir(kb_dir: Path, tmp_path: Path) -> Path:
    """A private copy of the sample index without cached vectors (other tests' processes may have left some)."""
    copy = tmp_path / "data"
    copy_index(kb_dir, copy, without=[CACHE_DIR])
    return copy


@pytest.fixture
def data_dir(fresh_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh copy of the index, with the shipped vectors out of sight: an embedder that has none shipped."""
    monkeypatch.setattr(background, "SHIPPED_DIR", tmp_path / "nothing shipped")
    return fresh_dir


def dense_scale_of(data_dir: Path) -> tuple[float, float, CountingEmbedder]:
    """A fresh evaluator's reading of the dense signal for QUESTION (a fresh process's), and what it embedded."""
    context = Context(data_dir=str(data_dir))
    with Retriever(context.settings(), context.search_config()) as retriever:
        counting = CountingEmbedder(retriever.embedder)
        retriever.embedder = counting
        profile = OfflineEvaluator(retriever).profile(QUESTION)
    return profile.scale.floor, profile.scale.ceiling, counting


def test_a_second_evaluator_reads_the_background_vectors_instead_of_embedding_them(data_dir: Path) -> None:
    first = dense_scale_of(data_dir)
    assert first[2].passages == len(BACKGROUND_SENTENCES["en"])
    assert list((data_dir / CACHE_DIR).glob("background-*.npy"))

    second = dense_scale_of(data_dir)
    assert second[2].passages == 0 and second[2].questions == 1  # the question itself, nothing else
    assert second[:2] == pytest.approx(first[:2], abs=1e-6)


def damage(path: Path, how: str, marker: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if how == "garbage":
        path.write_bytes(b"\x93NUMPY not really" * 100)
    elif how == "truncated":
        np.save(path, np.ones((2, 24, 384), dtype=np.float32))
        path.write_bytes(path.read_bytes()[:1000])
    elif how == "wrong shape":
        np.save(path, np.ones((2, 3, 384), dtype=np.float32) / np.sqrt(384))
    elif how == "not unit vectors":
        np.save(path, np.full((2, 24, 384), 7.0, dtype=np.float32))
    elif how == "not finite":
        vectors = np.ones((2, 24, 384), dtype=np.float32) / np.sqrt(384)
        vectors[1, 5, 7] = np.nan
        np.save(path, vectors)
    elif how == "a pickled object":
        np.save(path, np.array([MakesADirectory(marker)], dtype=object), allow_pickle=True)
    else:
        path.write_bytes(b"")


@pytest.mark.parametrize(
    "how", ["garbage", "truncated", "wrong shape", "not unit vectors", "not finite", "a pickled object", "empty"]
)
def test_a_damaged_cache_file_is_ignored_and_replaced(data_dir: Path, tmp_path: Path, how: str) -> None:
    expected = dense_scale_of(data_dir)  # writes a sound cache file
    context = Context(data_dir=str(data_dir))
    with Retriever(context.settings(), context.search_config()) as retriever:
        path = background_cache_file(data_dir / CACHE_DIR, retriever.embedder, BACKGROUND_SENTENCES["en"])
    marker = tmp_path / "unpickled"
    damage(path, how, marker)

    again = dense_scale_of(data_dir)

    assert again[:2] == pytest.approx(expected[:2], abs=1e-6)
    assert again[2].passages == len(BACKGROUND_SENTENCES["en"])  # computed afresh
    assert not marker.exists()
    replaced = np.load(path, allow_pickle=False)
    assert replaced.dtype == np.float32 and replaced.shape == (2, len(BACKGROUND_SENTENCES["en"]), 384)


def test_vectors_of_another_embedder_version_are_not_used(data_dir: Path) -> None:
    first = dense_scale_of(data_dir)
    context = Context(data_dir=str(data_dir))
    with Retriever(context.settings(), context.search_config()) as retriever:
        sentences = BACKGROUND_SENTENCES["en"]
        current = background_cache_file(data_dir / CACHE_DIR, retriever.embedder, sentences)
        retriever.embedder.version, kept = "0.0.0-other", retriever.embedder.version
        try:
            other = background_cache_file(data_dir / CACHE_DIR, retriever.embedder, sentences)
        finally:
            retriever.embedder.version = kept
    assert current != other and current.exists() and not other.exists()
    assert first[2].passages == len(sentences)


def test_the_shipped_vectors_are_the_default_embedders(retriever: Retriever) -> None:
    # Made by scripts/ship_vectors.py; a new version of the embedder needs them made again.
    embedder = retriever.embedder
    for language, sentences in BACKGROUND_SENTENCES.items():
        path = background_cache_file(SHIPPED_DIR, embedder, sentences)
        assert path.exists(), f"no shipped {language} vectors for {embedder.name} {embedder.version}: run the script"
        shipped = np.load(path, allow_pickle=False)
        assert shipped.dtype == np.float32
        assert same_model_vectors(shipped, background_vectors(embedder, sentences))


def test_a_new_data_folder_embeds_no_background_sentence_and_keeps_no_copy(fresh_dir: Path) -> None:
    floor, ceiling, counting = dense_scale_of(fresh_dir)
    assert counting.passages == 0 and counting.questions == 1  # the question itself, nothing else
    assert not (fresh_dir / CACHE_DIR).exists()
    assert 0.0 < floor < ceiling <= 1.0
