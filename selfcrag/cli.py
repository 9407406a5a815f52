"""The ``selfcrag`` command line: ingest, search, eval, demo."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from selfcrag.errors import UserError
from selfcrag.settings import Settings

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Corrective, self-reflective RAG over your own documents.")
out = Console(highlight=False)
err = Console(stderr=True, highlight=False)

SAMPLE_KB = Path(__file__).resolve().parent.parent / "sample_kb"

DataDir = Annotated[
    Path | None, typer.Option("--data-dir", help="Index folder (default: $SELFCRAG_DATA_DIR or .selfcrag).")
]


def _settings(data_dir: Path | None) -> Settings:
    return Settings.from_env(data_dir=data_dir)


def _fail(message: str) -> typer.Exit:
    err.print(f"error: {message}", markup=False, soft_wrap=True)
    return typer.Exit(1)


@contextmanager
def _user_errors() -> Iterator[None]:
    """Turn the errors a user can cause into one line and exit status 1."""
    try:
        yield
    except UserError as error:
        raise _fail(str(error)) from None
    except KeyboardInterrupt:
        err.print("interrupted: the previous index is unchanged", markup=False)
        raise typer.Exit(130) from None


@contextmanager
def _progress() -> Iterator[Callable[[str, int, int], None]]:
    """A progress bar on a terminal; a few plain lines when piped."""
    if err.is_terminal:
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=err, transient=True) as bar:
            tasks: dict[str, TaskID] = {}

            def update(phase: str, done: int, total: int) -> None:
                if phase not in tasks:
                    tasks[phase] = bar.add_task(phase, total=total)
                bar.update(tasks[phase], completed=done, total=total)

            yield update
        return
    last: dict[str, int] = {}

    def report(phase: str, done: int, total: int) -> None:
        step = max(total // 10, 1)
        if done == total or done - last.get(phase, 0) >= step:
            last[phase] = done
            print(f"{phase}: {done}/{total}", file=sys.stderr, flush=True)

    yield report


@app.command()
def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Files and folders (.md, .txt, .pdf), folders recursively.")],
    prune: Annotated[bool, typer.Option(help="Remove indexed documents whose files are gone.")] = False,
    data_dir: DataDir = None,
) -> None:
    """Index documents: sentence by sentence, dense vectors and BM25."""
    from ingestion.pipeline import ingest as run_ingest

    settings = _settings(data_dir)
    with _user_errors(), _progress() as progress:
        summary = run_ingest(paths, settings, prune=prune, progress=progress)
    rate = f", {summary.embedded / summary.embed_seconds:.0f} sentences/s embedded" if summary.embedded else ""
    out.print(
        f"{summary.documents} documents, {summary.sentences} sentences in {settings.data_dir} "
        f"({summary.added} added, {summary.updated} updated, {summary.unchanged} unchanged, "
        f"{summary.removed} removed; {summary.embedded} sentences embedded) in {summary.seconds:.1f} s{rate}",
        markup=False,
    )
    for skipped in summary.skipped:
        err.print(f"skipped {skipped.path}: {skipped.reason}", markup=False)
    if summary.skipped:
        err.print(f"{len(summary.skipped)} file(s) skipped", markup=False)


@app.command()
def search(
    question: Annotated[str, typer.Argument(help="What to look for.")],
    k: Annotated[int, typer.Option("-k", "--top-k", help="Contexts to return.")] = 5,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for programs.")] = False,
    mode: Annotated[str, typer.Option(help="hybrid, dense or bm25.")] = "hybrid",
    fusion: Annotated[str, typer.Option(help="rrf or weighted.")] = "rrf",
    window: Annotated[int | None, typer.Option(help="Sentences each side of a hit.")] = None,
    data_dir: DataDir = None,
) -> None:
    """Retrieve the best contexts for a question (no answer generation)."""
    from retrieval.retriever import RetrievalConfig, Retriever

    if not question.strip():
        raise _fail("the question is empty")
    if mode not in ("hybrid", "dense", "bm25") or fusion not in ("rrf", "weighted"):
        raise _fail("--mode takes hybrid, dense or bm25; --fusion takes rrf or weighted")
    config = RetrievalConfig(top_k=k, mode=mode, fusion=fusion)  # type: ignore[arg-type]
    if window is not None:
        config = config.with_(window=window)
    with _user_errors(), Retriever(_settings(data_dir), config) as retriever:
        result = retriever.search(question)
    if as_json:
        print(json.dumps({"query": result.query, "timings_ms": result.timings_ms,
                          "contexts": [c.to_dict() for c in result.contexts]}, ensure_ascii=False))
        return
    if not result.contexts:
        out.print("no matching passages", markup=False)
    for rank, context in enumerate(result.contexts, 1):
        where = " > ".join(context.section) or context.title
        ranks = f"dense #{context.dense_rank or '-'}, bm25 #{context.bm25_rank or '-'}, fused {context.score:.4f}"
        span = f"sentences {context.first}-{context.last}"
        out.print(f"[bold][{rank}][/bold] {context.source} | {where} | {span} | {ranks}", markup=False)
        out.print(context.text.strip(), markup=False)
        out.print()


@app.command(name="eval")
def evaluate(
    set_dir: Annotated[Path, typer.Argument(help="A set folder with docs/ and questions.jsonl.")],
    mode: Annotated[str, typer.Option(help="What to measure: retrieval.")] = "retrieval",
    configs: Annotated[str, typer.Option(help="Comma-separated configurations, e.g. hybrid,dense,bm25,weighted,"
                                               "hybrid@window=2.")] = "hybrid",
    limit: Annotated[int | None, typer.Option(help="Only the first N answerable questions.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object a line.")] = False,
    data_dir: DataDir = None,
) -> None:
    """Measure retrieval on a set in the shared/eval format (it gets its own index)."""
    from evaluation.retrieval_eval import run_retrieval_eval
    from evaluation.sets import load_set

    if mode != "retrieval":
        raise _fail(f"--mode {mode!r} is not available; use --mode retrieval")
    table = Table("config", "n", "hit@1", "hit@5", "mrr@5", "ctx_chars@5", "p50_ms")
    with _user_errors(), _progress() as progress:
        evalset = load_set(set_dir)
        for row in run_retrieval_eval(evalset, _settings(data_dir), [c for c in configs.split(",") if c],
                                      limit=limit, progress=progress):
            if "ingest" in row:
                ing = row["ingest"]
                err.print(f"ingest: {ing}", markup=False)  # type: ignore[index]
            if as_json:
                print(json.dumps(row, ensure_ascii=False), flush=True)
            else:
                table.add_row(*(str(row[key]) for key in ("config", "n", "hit@1", "hit@5", "mrr@5",
                                                          "ctx_chars@5", "p50_ms")))
    if not as_json:
        out.print(table)


@app.command()
def demo(data_dir: DataDir = None) -> None:
    """Index the bundled sample knowledge base and answer two sample questions."""
    from ingestion.pipeline import ingest as run_ingest
    from retrieval.retriever import Retriever

    settings = _settings(data_dir or Path(".selfcrag") / "demo")
    with _user_errors():
        with _progress() as progress:
            summary = run_ingest([SAMPLE_KB], settings, progress=progress)
        out.print(f"indexed {summary.documents} sample documents ({summary.sentences} sentences) "
                  f"into {settings.data_dir}", markup=False)
        with Retriever(settings) as retriever:
            for question in ("退款多久能到账？", "How long are access logs kept?"):
                result = retriever.search(question)
                out.print(f"\n[bold]Q: {question}[/bold]")
                for rank, context in enumerate(result.contexts[:3], 1):
                    where = " > ".join(context.section) or context.title
                    out.print(f"  [{rank}] {Path(context.source).name} | {where} | "
                              f"sentences {context.first}-{context.last}", markup=False)
                    out.print("      " + " ".join(context.text.split())[:200], markup=False)


if __name__ == "__main__":
    app()
