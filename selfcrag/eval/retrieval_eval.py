"""``selfcrag eval --mode retrieval``: the retrieval metrics of a set, per configuration.

Configurations are the ablations of one run: ``hybrid`` (the default),
``dense``, ``bm25``, ``hybrid-nowindow`` (hit sentences alone), ``weighted``
(score fusion instead of RRF), any of them with overrides
(``hybrid@window=2@rrf_k=30``), and ``chunk512``: fixed 512-character chunks
with 10% overlap searched by dense vectors only, the common baseline
(:mod:`selfcrag.eval.chunking`; any size works, e.g. ``chunk256``).

The ways of cutting documents compare side by side: ``chunk512``,
``sentence-windows`` (hybrid windows that stop at sections),
``semantic-windows`` (and at semantic boundaries), ``semantic-chunks``
(LlamaIndex's semantic splitter, chunks searched densely) and
``propositions`` (hybrid over sentences and the propositions a chat model
drew from them, in an index of their own; needs a configured chat model).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from selfcrag.errors import UserError
from selfcrag.eval.chunking import (
    CHUNK_OVERLAP,
    SEMANTIC_CHUNK_BUFFER,
    SEMANTIC_CHUNK_PERCENTILE,
    SEMANTIC_CHUNKS,
    ChunkIndex,
    chunk_size_of,
    fixed_chunks,
    semantic_chunks,
)
from selfcrag.eval.metrics import aggregate, found_rank
from selfcrag.eval.sets import EvalSet, sample_questions
from selfcrag.graph.context import Context, context_from_options
from selfcrag.index.writer import ProgressCallback
from selfcrag.ingest.run import IngestSummary, ingest
from selfcrag.search.retriever import RetrievalConfig, Retriever
from selfcrag.spans import Passage

PROPOSITIONS = "propositions"
# The semantic-boundary percentile the semantic-windows configuration measures; others with
# ``semantic-windows@semantic_breaks=N`` (the sweep on the dev sets is in docs/results.md).
SEMANTIC_BREAKS = 10

# Named configurations: changes to the search settings of the default context; a name may carry
# overrides: ``hybrid@window=2@rrf_k=30``.
NAMED_CONFIGS: dict[str, dict[str, Any]] = {
    "hybrid": {},
    "dense": {"mode": "dense"},
    "bm25": {"mode": "bm25"},
    "hybrid-nowindow": {"window": 0, "section_ratio": 2.0},
    "plain-rrf": {"lexical_power": 0.0},
    "no-crossing": {"cross_languages": False},
    "weighted": {"fusion": "weighted", "dense_weight": 0.5, "bm25_weight": 0.5},
    "sentence-windows": {"semantic_breaks": 0},
    "semantic-windows": {"semantic_breaks": SEMANTIC_BREAKS},
    # Not search settings: cut and searched by their own code (see _searcher); named here so they parse.
    SEMANTIC_CHUNKS: {},
    PROPOSITIONS: {},
}
DEFAULT_ABLATIONS = "dense,bm25,hybrid,hybrid-nowindow,chunk512"


def parse_config(spec: str) -> RetrievalConfig:
    """Turn ``name[@field=value...]`` into a configuration.

    Args:
        spec: E.g. ``hybrid``, ``dense@window=2``, ``weighted@dense_weight=0.7@bm25_weight=0.3``.

    Returns:
        The configuration.

    Raises:
        UserError: Unknown name or field.
    """
    name, *overrides = spec.split("@")
    if name not in NAMED_CONFIGS:
        known = ", ".join([*NAMED_CONFIGS, "chunk<size> (e.g. chunk512)"])
        raise UserError(f"unknown retrieval configuration {name!r}; known: {known}")
    config = context_from_options().search_config().with_(**NAMED_CONFIGS[name])
    types = {f.name: type(getattr(config, f.name)) for f in fields(config)}
    for override in overrides:
        key, _, value = override.partition("=")
        if key not in types:
            raise UserError(f"unknown retrieval setting {key!r} in {spec!r}; settings: {', '.join(types)}")
        try:
            config = replace(config, **{key: _setting(types[key], value)})
        except ValueError:
            raise UserError(f"{key}={value!r} in {spec!r} is not a {types[key].__name__}") from None
    return config


def _setting(kind: type, value: str) -> object:
    """A setting's value from its text: ``bool("false")`` would be True, so a yes or no is read as one."""
    if kind is not bool:
        return kind(value)
    answers = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}
    if value.strip().lower() not in answers:
        raise ValueError(value)
    return answers[value.strip().lower()]


def window_configs(windows: str) -> list[str]:
    """Turn ``--windows 0,1,2`` into the hybrid configurations of those window sizes.

    Args:
        windows: Comma-separated sentence counts.

    Returns:
        ``hybrid@window=N`` specs.

    Raises:
        UserError: A size that is not a whole number from 0.
    """
    specs = []
    for part in (w.strip() for w in windows.split(",")):
        if not part:
            continue
        if not part.isdigit():
            raise UserError(f"--windows takes whole numbers from 0, comma-separated; got {part!r}")
        specs.append(f"hybrid@window={int(part)}")
    return specs


def check_configs(specs: list[str]) -> None:
    """Reject unknown configurations before any work is done.

    Args:
        specs: Configuration specs.

    Raises:
        UserError: One of them is not a configuration.
    """
    for spec in specs:
        if chunk_size_of(spec) is None:
            parse_config(spec)
        if spec == PROPOSITIONS:
            from selfcrag.graph.propositions import chat_propositions

            chat_propositions(context_from_options())  # says, before any work, that a chat model is needed


def eval_context(context: Context, evalset: EvalSet) -> Context:
    """The run settings whose data directory is the set's own index (kept between runs)."""
    tag = hashlib.sha1(str(evalset.root).encode()).hexdigest()[:8]
    return replace(
        context,
        data_dir=str(context.settings().data_dir / "eval" / f"{evalset.name}-{tag}"),
        collection=f"{context.collection}_eval_{tag}",
    )


def ingest_set(
    evalset: EvalSet, context: Context, progress: ProgressCallback | None = None
) -> tuple[Context, IngestSummary]:
    """Bring a set's own index up to date with its documents (unchanged files cost nothing).

    Args:
        evalset: The set.
        context: Base run settings (the set's index goes under their data directory).
        progress: Called as ``progress(phase, done, total)``.

    Returns:
        The set's run settings and what the ingest did.
    """
    set_context = eval_context(context, evalset)
    summary = ingest([evalset.docs_dir], set_context.settings(), prune=True, progress=progress)
    return set_context, summary


def ingest_report(summary: IngestSummary) -> dict[str, object]:
    """The ingest as reported beside the first result of a set."""
    return {
        "documents": summary.documents,
        "sentences": summary.sentences,
        "embedded": summary.embedded,
        "seconds": round(summary.seconds, 1),
        "sentences_per_s": round(summary.embedded / summary.seconds, 1) if summary.embedded else None,
    }


@dataclass
class _Searcher:
    """One configuration's search: the sentence retriever, a chunk baseline, or an index with propositions."""

    search: Callable[[str], list[Passage]]
    settings: dict[str, object]
    close: Callable[[], None] = lambda: None


def _proposition_searcher(evalset: EvalSet, retriever: Retriever, progress: ProgressCallback | None) -> _Searcher:
    """Sentence windows over an index of the set's sentences and the propositions the chat model draws from them.

    The index is the set's own second one (``<set index>/propositions``), kept between runs like the first:
    a second run asks the model only about documents it has not decomposed completely.
    """
    from selfcrag.graph.propositions import chat_propositions

    context = context_from_options(data_dir=str(retriever.settings.data_dir / PROPOSITIONS))
    summary = ingest(
        [evalset.docs_dir], context.settings(), prune=True, progress=progress, propositions=chat_propositions(context)
    )
    config = parse_config("sentence-windows")
    searcher = Retriever(context.settings(), config)
    report = summary.proposition_report
    return _Searcher(
        lambda q: searcher.search(q, config).passages,
        {
            **asdict(config),
            "propositions": summary.propositions,
            "model_calls": report.calls if report else 0,
            "tokens": report.tokens if report else 0,
            "passages_skipped": len(report.skipped) if report else 0,
            "documents_deferred": report.deferred if report else 0,
        },
        searcher.close,
    )


def _searcher(spec: str, evalset: EvalSet, retriever: Retriever, progress: ProgressCallback | None) -> _Searcher:
    size = chunk_size_of(spec)
    cache = retriever.settings.data_dir / "baselines"
    if size is not None:
        chunks = ChunkIndex.build(fixed_chunks(retriever.index, size), spec, retriever.embedder, cache, progress)
        return _Searcher(
            lambda q: chunks.search(q, 5),
            {"mode": "dense", "chunk_chars": size, "chunk_overlap": CHUNK_OVERLAP, "chunks": len(chunks.chunks)},
        )
    if spec == SEMANTIC_CHUNKS:
        chunks = ChunkIndex.build(semantic_chunks(retriever.index), spec, retriever.embedder, cache, progress)
        return _Searcher(
            lambda q: chunks.search(q, 5),
            {
                "mode": "dense",
                "breakpoint_percentile": SEMANTIC_CHUNK_PERCENTILE,
                "buffer": SEMANTIC_CHUNK_BUFFER,
                "chunks": len(chunks.chunks),
            },
        )
    if spec == PROPOSITIONS:
        return _proposition_searcher(evalset, retriever, progress)
    config = parse_config(spec)
    return _Searcher(lambda q: retriever.search(q, config).passages, dict(asdict(config)))


def run_retrieval_eval(
    evalset: EvalSet,
    retriever: Retriever,
    configs: list[str],
    *,
    limit: int | None = None,
    seed: int = 0,
    progress: ProgressCallback | None = None,
) -> Iterator[dict[str, object]]:
    """Measure each configuration on a set's answerable questions.

    Args:
        evalset: The set.
        retriever: An open retriever on the set's index (see :func:`ingest_set`).
        configs: Configuration specs (see :func:`parse_config`; ``chunk<size>`` for the baseline).
        limit: Only a sample of this many answerable questions (see :func:`~selfcrag.eval.sets.sample_questions`).
        seed: Seed of that sample.
        progress: Called as ``progress(phase, done, total)``.

    Yields:
        One result per configuration.
    """
    check_configs(configs)
    questions = sample_questions([q for q in evalset.questions if q.answerable], limit, seed)
    retriever.search(questions[0].question if questions else "warm up")
    for spec in configs:
        searcher = _searcher(spec, evalset, retriever, progress)
        ranks: list[int | None] = []
        chars: list[int] = []
        latencies: list[float] = []
        try:
            for number, question in enumerate(questions, 1):
                began = time.perf_counter()
                passages = searcher.search(question.question)
                latencies.append((time.perf_counter() - began) * 1000)
                ranks.append(found_rank(passages, question))
                chars.append(sum(len(p["text"]) for p in passages[:5]))
                if progress:
                    progress(f"{evalset.name}: searching ({spec})", number, len(questions))
        finally:
            searcher.close()
        scores = aggregate(ranks, chars, latencies)
        yield {
            "mode": "retrieval",
            "set": evalset.name,
            "config": spec,
            "n": scores.n,
            "hit@1": round(scores.hit_at_1, 4),
            "hit@5": round(scores.hit_at_5, 4),
            "mrr@5": round(scores.mrr_at_5, 4),
            "ctx_chars@5": round(scores.ctx_chars_at_5, 1),
            "p50_ms": round(scores.p50_ms, 2),
            "p95_ms": round(scores.p95_ms, 2),
            "settings": searcher.settings,
        }
