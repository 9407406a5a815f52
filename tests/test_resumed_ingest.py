"""An interrupted ingest resumes: ``kill -9`` halfway, and the next run embeds only what is left.

The embedding model is an OpenAI-compatible endpoint on a loopback server: it counts every sentence it is
sent, and holds the request that reaches half of them until the test has killed the ingest, so the kill
lands at a known point (a model call in flight, half the vectors computed) without any timing.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cli_runner import selfcrag
from index_files import FailsAfter
from loopback import JSONHandler, serve

from selfcrag.embed.embedders import Embedder, WrappedEmbedder, load_embedder
from selfcrag.embed.kept_vectors import kept_vectors_file
from selfcrag.errors import NoIndexError
from selfcrag.graph.context import Context
from selfcrag.index.engine import open_reader
from selfcrag.index.generations import index_root
from selfcrag.index.points import document_point_ids
from selfcrag.ingest.run import ingest
from selfcrag.search.retriever import Retriever
from selfcrag.settings import Settings

DIM = 32
DOCUMENTS = 16
SENTENCES_PER_DOCUMENT = 80


class CountingEmbeddings(JSONHandler):
    """An /embeddings endpoint that counts the texts it is sent, and can hold the request that reaches a count."""

    texts: list[str] = []
    hold_at: int | None = None
    holding = threading.Event()
    release = threading.Event()
    seen_readers: list[tuple[int, bool]] = []
    data_dir: Path | None = None

    @classmethod
    def count_from_zero(cls, hold_at: int | None = None) -> None:
        """Forget the texts sent so far, and hold the request that reaches ``hold_at`` of them (None: hold none)."""
        cls.texts, cls.hold_at = [], hold_at
        cls.holding.clear()
        cls.release.clear()

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        cls = type(self)
        cls.texts.extend(text for text in inputs if text != "dimension probe")  # each process asks once
        if cls.hold_at is not None and len(cls.texts) >= cls.hold_at and not cls.holding.is_set():
            cls.holding.set()
            cls.release.wait(timeout=120)
        vectors = [
            np.random.default_rng(int(hashlib.sha256(t.encode()).hexdigest()[:12], 16)).standard_normal(DIM).tolist()
            for t in inputs
        ]
        try:
            self.send_embeddings(body["model"], vectors)
        except OSError:
            pass  # the ingest was killed while it waited


def write_corpus(folder: Path) -> None:
    folder.mkdir()
    for d in range(DOCUMENTS):
        lines = [
            f"Pump {d * 1000 + i} of hall {d} runs at {i} degrees and is checked every {d + i} days."
            for i in range(SENTENCES_PER_DOCUMENT)
        ]
        (folder / f"hall-{d:02d}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")


def cli_environment(url: str) -> dict[str, str]:
    return {"SELFCRAG_EMBEDDING_MODEL": "counted-embed", "SELFCRAG_EMBEDDING_BASE_URL": f"{url}/v1"}


@contextmanager
def held_ingest(root: Path, data_dir: str, url: str, **popen: Any) -> Iterator[subprocess.Popen]:
    """``selfcrag ingest kb --data-dir DATA_DIR`` run in ``root`` on the counting model, until the model holds it.

    Yields once the request reaching :attr:`CountingEmbeddings.hold_at` is held; on leaving, the command is killed
    (if still running) and the request released.

    Args:
        root: The folder holding ``kb``.
        data_dir: The data folder, relative to ``root``.
        url: The counting model's server.
        **popen: How the command is run beyond that (its stderr, a session of its own).
    """
    environment = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "selfcrag.cli", "ingest", "kb", "--data-dir", data_dir],
        cwd=root,
        env={**environment, **cli_environment(url)},
        stdout=subprocess.DEVNULL,
        **popen,
    )
    try:
        assert CountingEmbeddings.holding.wait(timeout=240), "the ingest never reached half its sentences"
        yield proc
    finally:
        proc.kill()
        CountingEmbeddings.release.set()


@dataclass
class Interrupted:
    """The counts and folders of an uninterrupted ingest, and of one killed halfway and run again."""

    total: int
    before_kill: int
    after_kill: int
    killed_status: int
    kept_after_kill: bool
    resumed_output: str
    reference: Path
    resumed: Path


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory) -> Iterator[Interrupted]:
    root = tmp_path_factory.mktemp("resume")
    write_corpus(root / "kb")
    CountingEmbeddings.count_from_zero()
    with serve(CountingEmbeddings) as url:
        env = cli_environment(url)
        reference = selfcrag("ingest", "kb", "--data-dir", "reference", cwd=root, **env)
        assert reference.returncode == 0, reference.stderr
        total = len(CountingEmbeddings.texts)

        CountingEmbeddings.count_from_zero(hold_at=total // 2)
        with held_ingest(root, "resumed", url, stderr=subprocess.DEVNULL) as proc:
            proc.send_signal(signal.SIGKILL)
            killed_status = proc.wait(timeout=30)
        before_kill = len(CountingEmbeddings.texts)
        kept_after_kill = kept_vectors_file(index_root(root / "resumed")).is_file()

        CountingEmbeddings.texts, CountingEmbeddings.hold_at = [], None
        # The killed command's child dies with it; this run waits for its lock if it has not yet.
        resumed = selfcrag("ingest", "kb", "--data-dir", "resumed", cwd=root, **env)
        assert resumed.returncode == 0, resumed.stderr
        after_kill = len(CountingEmbeddings.texts)
    yield Interrupted(
        total,
        before_kill,
        after_kill,
        killed_status,
        kept_after_kill,
        resumed.stdout,
        root / "reference",
        root / "resumed",
    )


def snapshot(data_dir: Path) -> tuple[list, dict]:
    """The documents and every point of an index: sentence, dense vector and sparse vector, by point id."""
    with open_reader(Context(data_dir=str(data_dir)).settings()) as reader:
        documents = sorted(reader.documents(), key=lambda entry: entry.doc_id)
        points = {}
        assert reader.store is not None
        for entry in documents:
            stored = reader.store.retrieve(
                document_point_ids(entry.doc_id, range(entry.sentence_count)), dense=True, sparse=True
            )
            for pid, point in stored.items():
                assert point.dense is not None and point.sparse is not None
                points[pid] = (point.sentence, point.dense.tobytes(), point.sparse.indices, point.sparse.values)
        return documents, points


def test_ingest_killed_halfway_embeds_only_what_is_left_when_run_again(interrupted):
    assert interrupted.killed_status == -signal.SIGKILL
    assert interrupted.before_kill >= interrupted.total // 2, "killed with half the sentences sent to the model"
    embedded_twice = interrupted.before_kill + interrupted.after_kill - interrupted.total
    assert embedded_twice <= 0.10 * interrupted.total, (embedded_twice, interrupted.total)
    assert "kept from an interrupted ingest" in interrupted.resumed_output


def test_ingest_killed_halfway_and_run_again_builds_the_index_an_uninterrupted_one_builds(interrupted):
    documents, points = snapshot(interrupted.resumed)
    expected_documents, expected_points = snapshot(interrupted.reference)
    assert len(points) == interrupted.total == DOCUMENTS * SENTENCES_PER_DOCUMENT
    assert documents == expected_documents
    assert points == expected_points


def test_vectors_kept_by_a_killed_ingest_are_deleted_once_the_next_run_publishes_them(interrupted):
    assert interrupted.kept_after_kill
    assert not kept_vectors_file(index_root(interrupted.resumed)).exists()
    assert not kept_vectors_file(index_root(interrupted.reference)).exists()


def settings_for(data_dir: Path, url: str, publish_every: int) -> Settings:
    return replace(
        Context(data_dir=str(data_dir), embedding_model="counted-embed", embedding_base_url=f"{url}/v1").settings(),
        publish_every=publish_every,
    )


@contextmanager
def stopped_after_three_batches(kb: Path, data_dir: Path) -> Iterator[tuple[Settings, Embedder, Path]]:
    """An ingest of ``kb`` whose model failed at its fourth call, publishing nothing along the way.

    Yields, with the counting model still served: the settings, the model (that no longer fails), and the file of
    the vectors the stopped ingest kept.
    """
    with serve(CountingEmbeddings) as url:
        settings = settings_for(data_dir, url, publish_every=0)
        model = load_embedder(settings.embedding_model, settings.embedding_api_key, settings.embedding_base_url)
        with pytest.raises(OSError):
            ingest([kb], settings, embedder=FailsAfter(model, calls=3))
        yield settings, model, kept_vectors_file(index_root(settings.data_dir))


class WatchingEmbedder(WrappedEmbedder):
    """Before each batch it embeds, opens the index as a search would and notes what it finds there."""

    def __init__(self, embedder: Embedder, settings: Settings) -> None:
        super().__init__(embedder)
        self.settings = settings
        # (documents published, whether each has all its sentences, the best hit's file for hall 00's wing)
        self.seen: list[tuple[int, bool, str]] = []
        self.calls = 0

    def embed_passages(self, texts):
        self.calls += 1
        if self.calls % 8 != 1:  # a look every 8 batches: each opens the index twice
            return self.embedder.embed_passages(texts)
        try:
            with open_reader(self.settings) as reader:
                assert reader.store is not None
                whole = all(
                    len(reader.store.existing(document_point_ids(entry.doc_id, range(entry.sentence_count))))
                    == entry.sentence_count
                    for entry in reader.documents()
                )
                documents = reader.document_count()
            with Retriever(self.settings, Context().search_config(), embedder=self.embedder) as retriever:
                best = retriever.search("amber wing").passages[0]["source"]
            self.seen.append((documents, whole, Path(best).name))
        except NoIndexError:
            self.seen.append((0, True, ""))
        return self.embedder.embed_passages(texts)


def test_long_ingest_publishes_its_finished_documents_along_the_way_whole_and_searchable(tmp_path):
    # Five documents of 700 sentences: a batch is embedded after the third (2,100 sentences), the rest at the end.
    folder = tmp_path / "kb"
    folder.mkdir()
    for d in range(5):
        wing = ("amber", "birch", "cedar", "dune", "elm")[d]
        lines = [f"Pump {i} of the {wing} wing runs at {i % 90} degrees, checked by team {d}-{i}." for i in range(700)]
        (folder / f"hall-{d:02d}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    ticks = itertools.count(0, 1000)  # every look at the clock finds the interval past
    with serve(CountingEmbeddings) as url:
        settings = settings_for(tmp_path / "data", url, publish_every=300)
        embedder = WatchingEmbedder(
            load_embedder(settings.embedding_model, settings.embedding_api_key, settings.embedding_base_url), settings
        )
        summary = ingest([folder], settings, embedder=embedder, clock=lambda: next(ticks))
    assert summary.published_along == 1 and summary.documents == 5
    along = [seen for seen in embedder.seen if seen[0]]
    assert along, "nothing was published before the end"
    assert all(documents == 3 and whole and best == "hall-00.txt" for documents, whole, best in along), along


def test_a_kept_vector_that_fails_its_check_is_embedded_again_and_the_others_are_not(tmp_path):
    write_corpus(tmp_path / "kb")
    with stopped_after_three_batches(tmp_path / "kb", tmp_path / "data") as (settings, model, kept):
        with sqlite3.connect(kept) as db:
            assert db.execute("SELECT count(*) FROM kept").fetchone() == (3 * model.batch_size,)
            # One vector damaged (not of unit length), one cut short.
            db.execute("UPDATE kept SET vector = zeroblob(?) WHERE rowid = 1", (4 * model.dim,))
            db.execute("UPDATE kept SET vector = substr(vector, 1, 8) WHERE rowid = 2")
        db.close()
        summary = ingest([tmp_path / "kb"], settings, embedder=model)
    assert (summary.recalled, summary.embedded) == (3 * model.batch_size - 2, summary.sentences - summary.recalled)


def test_vectors_a_killed_ingest_kept_twice_for_one_text_are_all_deleted_once_published(tmp_path):
    # A text in two batches of one run (a line every document repeats) is kept twice; after the next run
    # publishes, nothing of the killed run's may stay behind in the file.
    write_corpus(tmp_path / "kb")
    for path in sorted((tmp_path / "kb").iterdir()):
        path.write_text("Every hall is swept on Fridays.\n" + path.read_text(encoding="utf-8"), encoding="utf-8")
    with stopped_after_three_batches(tmp_path / "kb", tmp_path / "data") as (settings, model, kept):
        with sqlite3.connect(kept) as db:
            (rows, keys) = db.execute("SELECT count(*), count(DISTINCT key) FROM kept").fetchone()
        db.close()
        assert rows > keys, "the repeated line was kept once only: the case is not made"
        summary = ingest([tmp_path / "kb"], settings, embedder=model)
    assert summary.recalled >= keys
    assert not kept.exists()


def test_ingest_stopped_after_publishing_along_the_way_resumes_from_there_to_the_uninterrupted_index(tmp_path):
    folder = tmp_path / "kb"
    folder.mkdir()
    for d in range(5):  # a batch of 2,100 sentences after the third document, 1,400 at the end
        lines = [f"Valve {i} of line {d} holds {i % 70} bar; inspector {d}-{i} signs it." for i in range(700)]
        (folder / f"line-{d}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    ticks = itertools.count(0, 1000)
    with serve(CountingEmbeddings) as url:
        settings = settings_for(tmp_path / "data", url, publish_every=300)
        model = load_embedder(settings.embedding_model, settings.embedding_api_key, settings.embedding_base_url)
        first_batch = -(-2100 // model.batch_size)
        with pytest.raises(OSError):
            ingest([folder], settings, embedder=FailsAfter(model, first_batch + 10), clock=lambda: next(ticks))
        resumed = ingest([folder], settings, embedder=model, clock=lambda: next(ticks))
        ingest([folder], settings_for(tmp_path / "reference", url, publish_every=0), embedder=model)
    assert (resumed.unchanged, resumed.added) == (3, 2)
    assert (resumed.recalled, resumed.embedded) == (10 * model.batch_size, 1400 - 10 * model.batch_size)
    assert snapshot(tmp_path / "data") == snapshot(tmp_path / "reference")
