"""The ``selfcrag`` command line: one module per command, all registered on one Typer app."""

from selfcrag.cli import (  # noqa: F401  (each registers its command)
    ask,
    bench,
    chat,
    demo,
    evaluate,
    ingest,
    listing,
    model,
    remove,
    search,
    studio,
)
from selfcrag.cli.app import app, run

__all__ = ["app", "run"]
