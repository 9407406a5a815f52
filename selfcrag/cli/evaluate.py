"""``selfcrag eval``: measure on a set in the shared/eval format."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from selfcrag.cli.app import DataDir, app, err, fail, out, progress_reporter, settings_for, user_errors


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
        raise fail(f"--mode {mode!r} is not available; use --mode retrieval")
    table = Table("config", "n", "hit@1", "hit@5", "mrr@5", "ctx_chars@5", "p50_ms")
    with user_errors(), progress_reporter() as progress:
        evalset = load_set(set_dir)
        for row in run_retrieval_eval(evalset, settings_for(data_dir), [c for c in configs.split(",") if c],
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
