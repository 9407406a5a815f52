"""``selfcrag eval --mode retrieval``: the retrieval metrics of a set, per configuration."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, fields, replace

from evaluation.metrics import aggregate, found_rank
from evaluation.sets import EvalSet
from ingestion.pipeline import IngestSummary, ingest
from retrieval.retriever import RetrievalConfig, Retriever
from selfcrag.errors import UserError
from selfcrag.settings import Settings

# Named configurations; a name may carry overrides: ``hybrid@window=2@rrf_k=30``.
NAMED_CONFIGS: dict[str, RetrievalConfig] = {
    "hybrid": RetrievalConfig(),
    "dense": RetrievalConfig(mode="dense"),
    "bm25": RetrievalConfig(mode="bm25"),
    "hybrid-nowindow": RetrievalConfig(window=0, section_ratio=2.0),
    "weighted": RetrievalConfig(fusion="weighted", dense_weight=0.5, bm25_weight=0.5),
}


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
        raise UserError(f"unknown configuration {name!r}; known: {', '.join(NAMED_CONFIGS)}")
    config = NAMED_CONFIGS[name]
    types = {f.name: type(getattr(config, f.name)) for f in fields(config)}
    for override in overrides:
        key, _, value = override.partition("=")
        if key not in types:
            raise UserError(f"unknown retrieval setting {key!r} in {spec!r}")
        config = replace(config, **{key: types[key](value)})
    return config


def eval_data_dir(settings: Settings, evalset: EvalSet) -> Settings:
    """Settings whose data directory is the set's own index (kept between runs)."""
    tag = hashlib.sha1(str(evalset.root).encode()).hexdigest()[:8]
    return replace(settings, data_dir=settings.data_dir / "eval" / f"{evalset.name}-{tag}",
                   collection_prefix=f"{settings.collection_prefix}_eval_{tag}")


def run_retrieval_eval(
    evalset: EvalSet,
    settings: Settings,
    configs: list[str],
    *,
    limit: int | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> Iterator[dict[str, object]]:
    """Ingest a set's documents into its own index and measure each configuration.

    Args:
        evalset: The set.
        settings: Base settings (the set's index goes under their data directory).
        configs: Configuration specs (see :func:`parse_config`).
        limit: Only the first ``limit`` answerable questions.
        progress: Called as ``progress(phase, done, total)``.

    Yields:
        One result per configuration; the first also reports the ingest.
    """
    parsed = [(spec, parse_config(spec)) for spec in configs]
    set_settings = eval_data_dir(settings, evalset)
    summary: IngestSummary | None = ingest([evalset.docs_dir], set_settings, prune=True, progress=progress)
    questions = [q for q in evalset.questions if q.answerable][:limit]
    with Retriever(set_settings) as retriever:
        retriever.search(questions[0].question if questions else "warm up")
        for spec, config in parsed:
            ranks: list[int | None] = []
            chars: list[int] = []
            latencies: list[float] = []
            for number, question in enumerate(questions, 1):
                began = time.perf_counter()
                result = retriever.search(question.question, config)
                latencies.append((time.perf_counter() - began) * 1000)
                ranks.append(found_rank(result.contexts, question))
                chars.append(sum(len(c.text) for c in result.contexts[:5]))
                if progress:
                    progress(f"searching ({spec})", number, len(questions))
            scores = aggregate(ranks, chars, latencies)
            row: dict[str, object] = {
                "set": evalset.name,
                "config": spec,
                "n": scores.n,
                "hit@1": round(scores.hit_at_1, 4),
                "hit@5": round(scores.hit_at_5, 4),
                "mrr@5": round(scores.mrr_at_5, 4),
                "ctx_chars@5": round(scores.ctx_chars_at_5, 1),
                "p50_ms": round(scores.p50_ms, 2),
                "p95_ms": round(scores.p95_ms, 2),
                "settings": {k: v for k, v in asdict(config).items()},
            }
            if summary is not None:
                row["ingest"] = {
                    "documents": summary.documents,
                    "sentences": summary.sentences,
                    "embedded": summary.embedded,
                    "seconds": round(summary.seconds, 1),
                    "sentences_per_s": round(summary.embedded / summary.seconds, 1) if summary.embedded else None,
                }
            yield row
            summary = None
