"""Ingest as a pipeline: reading runs ahead of embedding, writing overlaps it, and failures on any thread end as before.

The embedding model is an OpenAI-compatible endpoint on a loopback server (vectors drawn from each text's hash).
Overlap is shown with events, not clocks: a stage waits for an event the next stage sets; run one after the other,
the event would never come, and the wait gives up after a generous timeout.
"""

from __future__ import annotations

import errno
import hashlib
import json
import sqlite3
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from index_files import FailsAfter
from loopback import JSONHandler, serve

from selfcrag.embed.embedders import Embedder, WrappedEmbedder, load_embedder
from selfcrag.embed.kept_vectors import kept_vectors_file
from selfcrag.errors import UserError
from selfcrag.files import loaders
from selfcrag.graph.context import Context
from selfcrag.index import generations
from selfcrag.index.store import EdgeStore, EngineError
from selfcrag.ingest import documents
from selfcrag.ingest import points as point_stage
from selfcrag.ingest.run import ingest
from selfcrag.settings import Settings

DIM = 32
# Far longer than any wait that succeeds: it only bounds how long a broken overlap makes the test hang.
WAIT = 30


class Embeddings(JSONHandler):
    """An /embeddings endpoint: each text's vector drawn from its hash."""

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        vectors = [
            np.random.default_rng(int(hashlib.sha256(t.encode()).hexdigest()[:12], 16)).standard_normal(DIM).tolist()
            for t in inputs
        ]
        self.send_embeddings(body["model"], vectors)


class Panic(BaseException):
    """What a Rust panic raises through pyo3 (``pyo3_runtime.PanicException`` is a BaseException too)."""


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with serve(Embeddings) as base:
        yield base


@pytest.fixture
def settings(tmp_path: Path, url: str) -> Settings:
    return replace(
        Context(
            data_dir=str(tmp_path / "data"), embedding_model="hashed-embed", embedding_base_url=f"{url}/v1"
        ).settings(),
        publish_every=0,
    )


@pytest.fixture
def model(settings: Settings) -> Embedder:
    return load_embedder(settings.embedding_model, settings.embedding_api_key, settings.embedding_base_url)


@pytest.fixture
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    """Batches of 50 sentences: files of 30 sentences make a batch every second file."""
    monkeypatch.setattr(point_stage, "FLUSH_SENTENCES", 50)


def write_halls(folder: Path, halls: range, sentences: int = 30) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for d in halls:
        lines = [
            f"Pump {i} of hall {d} runs at {i} degrees and is checked every {d + i} days." for i in range(sentences)
        ]
        (folder / f"hall-{d}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")


def stage_threads() -> list[str]:
    """The stages' threads still running, once a reading thread left in the middle of a file has ended.

    A stopped ingest does not wait for a file being read (:func:`~selfcrag.ingest.threads.read_ahead`): the
    thread finishes it and ends, so it is given that file; one that never ends still fails after ``WAIT``.
    """
    for thread in threading.enumerate():
        if thread.name == "selfcrag-read":
            thread.join(WAIT)
    return [thread.name for thread in threading.enumerate() if thread.name.startswith("selfcrag-")]


def current(settings: Settings) -> str | None:
    return generations.read_pointer(generations.index_root(settings.data_dir))


def read_watched(monkeypatch: pytest.MonkeyPatch, name: str, then) -> None:
    """Call ``then()`` when the reading stage has read the file called ``name``."""
    read_document = loaders.read_document

    def watched(path, **kwargs):
        loaded = read_document(path, **kwargs)
        if Path(path).name == name:
            then()
        return loaded

    monkeypatch.setattr(documents, "read_document", watched)


class HeldFile:
    """The file called ``name`` read slowly, as a large PDF is: reading it waits until the test releases it.

    Attributes:
        reading: Set when its reading began.
        release: What its reading waits for (a test sets it only once it has seen what it looks at).
        finished: Set when its reading returned.
    """

    def __init__(self, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
        self.reading, self.release, self.finished = threading.Event(), threading.Event(), threading.Event()
        read_document = loaders.read_document

        def held(path, **kwargs):
            if Path(path).name == name:
                self.reading.set()
                self.release.wait(timeout=WAIT)
                self.finished.set()
            return read_document(path, **kwargs)

        monkeypatch.setattr(documents, "read_document", held)


class WaitsForEvent(WrappedEmbedder):
    """Before its first model call, waits for an event, and notes whether it came."""

    def __init__(self, embedder: Embedder, event: threading.Event) -> None:
        super().__init__(embedder)
        self.event = event
        self.came: bool | None = None

    def embed_passages(self, texts):
        if self.came is None:
            self.came = self.event.wait(timeout=WAIT)
        return self.embedder.embed_passages(texts)


def test_files_are_read_and_split_while_the_first_batch_is_embedded(
    tmp_path, settings, model, small_batches, monkeypatch
):
    write_halls(tmp_path / "kb", range(6))
    last_read = threading.Event()
    read_watched(monkeypatch, "hall-5.txt", last_read.set)
    embedder = WaitsForEvent(model, last_read)

    summary = ingest([tmp_path / "kb"], settings, embedder=embedder)

    assert embedder.came, "the first batch was embedded before the files after it were read"
    assert (summary.documents, summary.sentences) == (6, 180)


class MarksSecondBatch(WrappedEmbedder):
    """Sets an event when it is asked to embed a sentence of the second batch (halls 2 and 3)."""

    def __init__(self, embedder: Embedder, event: threading.Event) -> None:
        super().__init__(embedder)
        self.event = event

    def embed_passages(self, texts):
        if any(" of hall 2 " in text or " of hall 3 " in text for text in texts):
            self.event.set()
        return self.embedder.embed_passages(texts)


def test_a_batch_is_written_to_the_engine_while_the_next_one_is_embedded(
    tmp_path, settings, model, small_batches, monkeypatch
):
    write_halls(tmp_path / "kb", range(6))
    second_embedding = threading.Event()
    first_write_waited = []
    upsert = EdgeStore.upsert

    def upsert_after_the_next_batch_began(self, points):
        if not first_write_waited:
            first_write_waited.append(second_embedding.wait(timeout=WAIT))
        return upsert(self, points)

    monkeypatch.setattr(EdgeStore, "upsert", upsert_after_the_next_batch_began)

    summary = ingest([tmp_path / "kb"], settings, embedder=MarksSecondBatch(model, second_embedding))

    assert first_write_waited == [True], "the next batch was embedded only after the first was written"
    assert (summary.documents, summary.sentences) == (6, 180)


def test_the_disk_filling_up_while_files_are_read_ahead_is_one_line_and_leaves_the_previous_index(
    tmp_path, settings, model, small_batches, monkeypatch
):
    write_halls(tmp_path / "kb", range(2))
    ingest([tmp_path / "kb"], settings, embedder=model)
    published = current(settings)
    write_halls(tmp_path / "kb", range(2, 6))

    def full(path, **kwargs):
        if Path(path).name == "hall-4.txt":
            raise OSError(errno.ENOSPC, "No space left on device")
        return loaders.read_document(path, **kwargs)

    monkeypatch.setattr(documents, "read_document", full)
    with pytest.raises(UserError) as failure:
        ingest([tmp_path / "kb"], settings, embedder=model)

    message = str(failure.value)
    assert "\n" not in message and "is full" in message and "the previous index is unchanged" in message
    assert current(settings) == published
    assert stage_threads() == []


def test_a_panic_while_files_are_read_ahead_surfaces_as_raised_and_leaves_the_previous_index(
    tmp_path, settings, model, small_batches, monkeypatch
):
    write_halls(tmp_path / "kb", range(2))
    ingest([tmp_path / "kb"], settings, embedder=model)
    published = current(settings)
    write_halls(tmp_path / "kb", range(2, 6))

    def panics(path, **kwargs):
        if Path(path).name == "hall-4.txt":
            raise Panic("called `Result::unwrap()` on an `Err` value")
        return loaders.read_document(path, **kwargs)

    monkeypatch.setattr(documents, "read_document", panics)
    with pytest.raises(Panic):
        ingest([tmp_path / "kb"], settings, embedder=model)

    assert current(settings) == published
    assert stage_threads() == []


def test_the_engine_failing_while_the_next_batch_is_embedded_is_one_line_and_keeps_the_vectors(
    tmp_path, settings, model, small_batches, monkeypatch
):
    write_halls(tmp_path / "kb", range(2))
    ingest([tmp_path / "kb"], settings, embedder=model)
    published = current(settings)
    write_halls(tmp_path / "kb", range(2, 8))
    upsert = EdgeStore.upsert
    writes = []

    def fails_on_the_second_batch(self, points):
        writes.append(len(points))
        if len(writes) == 2:
            raise EngineError(RuntimeError("Service internal error: simulated"))
        return upsert(self, points)

    monkeypatch.setattr(EdgeStore, "upsert", fails_on_the_second_batch)
    with pytest.raises(UserError) as failure:
        ingest([tmp_path / "kb"], settings, embedder=model)

    message = str(failure.value)
    assert "\n" not in message and message.startswith("the index engine failed")
    assert "the previous index is unchanged" in message
    assert current(settings) == published
    assert stage_threads() == []
    with sqlite3.connect(kept_vectors_file(generations.index_root(settings.data_dir))) as db:
        (kept,) = db.execute("SELECT count(*) FROM kept").fetchone()
    db.close()
    assert kept >= 100, "the vectors of the batches embedded are kept for the next run"


def test_a_panic_while_a_batch_is_embedded_surfaces_as_raised_and_leaves_the_previous_index(
    tmp_path, settings, model, small_batches
):
    write_halls(tmp_path / "kb", range(2))
    ingest([tmp_path / "kb"], settings, embedder=model)
    published = current(settings)
    write_halls(tmp_path / "kb", range(2, 6))

    with pytest.raises(Panic):
        ingest([tmp_path / "kb"], settings, embedder=FailsAfter(model, calls=1, error=Panic("the runtime panicked")))

    assert current(settings) == published
    assert stage_threads() == []
    assert ingest([tmp_path / "kb"], settings, embedder=model).documents == 6


def test_vectors_kept_by_an_interrupted_ingest_outlive_an_ingest_of_another_folder(tmp_path, settings, model):
    write_halls(tmp_path / "a", range(4), sentences=80)
    write_halls(tmp_path / "b", range(10, 11), sentences=5)
    with pytest.raises(OSError, match="went away"):
        ingest([tmp_path / "a"], settings, embedder=FailsAfter(model, calls=3))

    other = ingest([tmp_path / "b"], settings, embedder=model)
    resumed = ingest([tmp_path / "a"], settings, embedder=model)

    assert (other.documents, other.embedded, other.recalled) == (1, 5, 0)
    assert (resumed.recalled, resumed.embedded) == (3 * model.batch_size, 320 - 3 * model.batch_size)
    assert not kept_vectors_file(generations.index_root(settings.data_dir)).exists(), "published: nothing left kept"


class HeldOnFirstCall(WrappedEmbedder):
    """On its first model call, says so and waits until told to go on."""

    def __init__(self, embedder: Embedder, embedding: threading.Event, go_on: threading.Event) -> None:
        super().__init__(embedder)
        self.embedding, self.go_on = embedding, go_on
        self.calls = 0

    def embed_passages(self, texts):
        self.calls += 1
        if self.calls == 1:
            self.embedding.set()
            self.go_on.wait(timeout=WAIT)
        return self.embedder.embed_passages(texts)


def test_ctrl_c_while_a_batch_is_embedded_stops_every_thread_and_keeps_the_vectors(
    tmp_path, settings, model, small_batches
):
    write_halls(tmp_path / "kb", range(2))
    ingest([tmp_path / "kb"], settings, embedder=model)
    published = current(settings)
    write_halls(tmp_path / "kb", range(2, 8))
    embedding, go_on = threading.Event(), threading.Event()

    def ctrl_c_at_the_fifth_file(phase: str, done: int, total: int, detail: str = "", /) -> None:
        # Halls 2 and 3 make the first batch embedded; when hall 4 is read, press Ctrl-C while it is embedded.
        if "5/8 documents read" in detail and embedding.wait(timeout=WAIT):
            go_on.set()
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        ingest(
            [tmp_path / "kb"],
            settings,
            embedder=HeldOnFirstCall(model, embedding, go_on),
            progress=ctrl_c_at_the_fifth_file,
        )

    assert current(settings) == published
    assert stage_threads() == []
    with sqlite3.connect(kept_vectors_file(generations.index_root(settings.data_dir))) as db:
        assert db.execute("SELECT count(*) FROM kept").fetchone() == (60,), "halls 2 and 3, embedded: all kept"
    db.close()


def test_ctrl_c_while_a_file_is_read_ahead_stops_the_ingest_without_waiting_for_that_file(
    tmp_path, settings, model, small_batches, monkeypatch
):
    write_halls(tmp_path / "kb", range(6))
    slow = HeldFile(monkeypatch, "hall-5.txt")
    pressed = []

    def ctrl_c_while_the_last_file_is_read(phase: str, done: int, total: int, detail: str = "", /) -> None:
        # Halls 0-4 taken, hall 5 being read: Ctrl-C (once, on the main thread, as a terminal sends it).
        if threading.current_thread() is threading.main_thread() and "5/6 documents read" in detail and not pressed:
            pressed.append(slow.reading.wait(timeout=WAIT))
            raise KeyboardInterrupt

    try:
        with pytest.raises(KeyboardInterrupt):
            ingest([tmp_path / "kb"], settings, embedder=model, progress=ctrl_c_while_the_last_file_is_read)
        assert pressed == [True], "Ctrl-C came before the last file was being read"
        assert not slow.finished.is_set(), "the ingest waited for the file being read before it stopped"
    finally:
        slow.release.set()
    assert stage_threads() == [], "the reading thread did not end after the file it was reading"


def test_a_failure_while_a_file_is_read_ahead_ends_the_ingest_without_waiting_for_that_file(
    tmp_path, settings, model, small_batches, monkeypatch
):
    write_halls(tmp_path / "kb", range(6))
    slow = HeldFile(monkeypatch, "hall-5.txt")

    def fails_while_the_last_file_is_read(self, points):
        assert slow.reading.wait(timeout=WAIT), "the last file was never read"
        raise EngineError(RuntimeError("Service internal error: simulated"))

    monkeypatch.setattr(EdgeStore, "upsert", fails_while_the_last_file_is_read)
    try:
        with pytest.raises(UserError, match="^the index engine failed"):
            ingest([tmp_path / "kb"], settings, embedder=model)
        assert not slow.finished.is_set(), "the ingest waited for the file being read before it failed"
    finally:
        slow.release.set()
    assert stage_threads() == [], "the reading thread did not end after the file it was reading"
