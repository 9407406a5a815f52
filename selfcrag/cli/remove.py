"""``selfcrag remove``: take documents, or every document under a folder, out of the index."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from selfcrag.cli.app import DataDir, app, context_for, err, out, user_errors
from selfcrag.cli.ingest import in_child_process
from selfcrag.cli.terminal import one_line
from selfcrag.settings import Settings


@app.command()
def remove(
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="Files or folders as `selfcrag list` shows them (they may be gone from the disk).", readable=False
        ),
    ],
    data_dir: DataDir = None,
) -> None:
    """Remove documents from the index: the files named, and every file under the folders named."""
    with user_errors():
        settings = context_for(data_dir).settings()
    # As an ingest: the engine writes through memory maps, and a full disk kills the writer with SIGBUS.
    in_child_process(lambda: _remove(paths, settings), settings.data_dir)


def _remove(paths: list[Path], settings: Settings) -> None:
    """The command's body, in the child process."""
    from selfcrag.ingest.run import remove as remove_files

    with user_errors():
        summary = remove_files(
            paths, settings, on_wait=lambda message: err.print(message, markup=False, soft_wrap=True)
        )
    out.print(
        f"removed {summary.removed} file(s); {summary.documents} documents, {summary.sentences} sentences left in "
        f"{one_line(settings.data_dir)}",
        markup=False,
        soft_wrap=True,
    )
