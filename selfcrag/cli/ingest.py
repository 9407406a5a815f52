"""``selfcrag ingest``: index files and folders."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from selfcrag.cli.app import DataDir, app, context_for, err, out, progress_reporter, user_errors
from selfcrag.cli.terminal import one_line


@app.command()
def ingest(
    # readable=False: click would turn one unreadable path into a usage error for the whole command; the
    # loader reports it as a skipped line instead, and ingests the rest.
    paths: Annotated[
        list[Path],
        typer.Argument(help="Files and folders (.md, .txt, .pdf, .rst, .html), folders recursively.", readable=False),
    ],
    prune: Annotated[bool, typer.Option(help="Remove indexed documents whose files are gone.")] = False,
    data_dir: DataDir = None,
) -> None:
    """Index documents: sentence by sentence, dense vectors and BM25."""
    from selfcrag.index.ingest import ingest as run_ingest

    with user_errors(), progress_reporter() as progress:
        settings = context_for(data_dir).settings()
        summary = run_ingest(
            paths,
            settings,
            prune=prune,
            progress=progress,
            on_wait=lambda message: err.print(message, markup=False, soft_wrap=True),
        )
    for note in summary.notes:
        err.print(note, markup=False, soft_wrap=True)
    rate = f", {summary.embedded / summary.embed_seconds:.0f} sentences/s embedded" if summary.embedded else ""
    out.print(
        f"{summary.documents} documents, {summary.sentences} sentences in {one_line(settings.data_dir)} "
        f"({summary.added} added, {summary.updated} updated, {summary.unchanged} unchanged, "
        f"{summary.removed} removed{f', {summary.repaired} repaired' if summary.repaired else ''}; "
        f"{summary.embedded} sentences embedded) in {summary.seconds:.1f} s{rate}",
        markup=False,
    )
    for path, encoding in summary.encodings:
        err.print(f"read {one_line(path)} as {encoding}", markup=False, soft_wrap=True)
    for skipped in summary.skipped:
        err.print(f"skipped {one_line(skipped.path)}: {one_line(skipped.reason)}", markup=False, soft_wrap=True)
    if summary.skipped:
        err.print(f"{len(summary.skipped)} file(s) skipped", markup=False)
