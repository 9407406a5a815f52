"""Shared pieces of the command line: the Typer app, consoles, settings, error and progress handling."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from typer.core import TyperGroup

from selfcrag.cli.terminal import visible
from selfcrag.env_file import load_env_file
from selfcrag.errors import UserError
from selfcrag.files.sample import sample_kb

if TYPE_CHECKING:
    from selfcrag.graph.context import Context

__all__ = ["SAMPLE_KB", "DataDir", "app", "err", "fail", "out", "progress_reporter", "context_for", "user_errors"]


class _CommandList(TyperGroup):
    """The command group, listing each command's first sentence whole (wrapped, never cut with "...")."""

    # Click's Context and HelpFormatter (Typer ships its own copy of Click: typed loosely on purpose).
    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """Write the Commands section of ``--help``."""
        rows = [
            (name, command.get_short_help_str(limit=1_000))
            for name in self.list_commands(ctx)
            if (command := self.get_command(ctx, name)) is not None and not command.hidden
        ]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


# Click's plain help: Typer's Rich panels print a type such as <bool> after every flag, --help included,
# as if a flag took a value.
app = typer.Typer(
    cls=_CommandList,
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode=None,
    help="Corrective, self-reflective RAG over your own documents.",
)
out = Console(highlight=False)
err = Console(stderr=True, highlight=False)
# Wrapping is for a terminal's width; in a pipe or a file it only breaks lines (a URL, a Chinese line, a summary).
for _console in (out, err):
    _console.soft_wrap = not _console.is_terminal

SAMPLE_KB = sample_kb()

DataDir = Annotated[
    Path | None, typer.Option("--data-dir", help="Index folder (default: $SELFCRAG_DATA_DIR or .selfcrag).")
]


def context_for(data_dir: Path | None, **options: Any) -> Context:
    """The run settings of a command: its options, then the environment, then the defaults.

    Args:
        data_dir: ``--data-dir``, if given.
        **options: Other options given on the command line (None: not given).

    Returns:
        The context.
    """
    from selfcrag.graph.context import context_from_options

    return context_from_options(data_dir=data_dir, **options)


# Commands that end when their one search or answer is done: their index is left to the process's exit.
ONE_SHOT_COMMANDS = ("search", "ask")


@app.callback()
def main(
    ctx: typer.Context,
    env_file: Annotated[
        Path | None,
        typer.Option(
            "--env-file",
            help="Read settings from this .env file (a .env in the current folder is never read by "
            "itself). Variables already set win.",
        ),
    ] = None,
) -> None:
    """Corrective, self-reflective RAG over your own documents."""
    with user_errors():
        load_env_file(env_file)
    if ctx.invoked_subcommand in ONE_SHOT_COMMANDS:
        # Closing the engine syncs its files and drops them from the page cache: the exit does neither.
        # Only for the command's run (the app may be run in a process that goes on: tests, scripts).
        from selfcrag.index.store import leave_readers_to_exit

        leave_readers_to_exit()
        ctx.call_on_close(lambda: leave_readers_to_exit(False))


def fail(message: str) -> typer.Exit:
    """Print ``error: message`` as one line on stderr and return the exit to raise."""
    err.print(f"error: {visible(message)}", markup=False, soft_wrap=True)
    return typer.Exit(1)


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn the errors a user can cause into one line and exit status 1."""
    try:
        yield
    except UserError as error:
        raise fail(str(error)) from None
    except KeyboardInterrupt:
        err.print("interrupted: the previous index is unchanged", markup=False)
        raise typer.Exit(130) from None


@contextmanager
def progress_reporter() -> Iterator[Callable[[str, int, int], None]]:
    """A progress bar on a terminal; a few plain lines when piped."""
    if err.is_terminal:
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=err,
            transient=True,
        ) as bar:
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
