"""The ``selfcrag`` command line: one module per command, all registered on one Typer app."""

from selfcrag.cli import ask, bench, chat, demo, evaluate, ingest, model, search, studio  # noqa: F401  (each registers its command)
from selfcrag.cli.app import app, run

__all__ = ["app", "run"]
