"""Shared pieces of the command line: the Typer app, consoles, settings, error and progress handling."""

from __future__ import annotations

import atexit
import gc
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, Task, TaskID, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.text import Text
from typer.core import TyperGroup

from selfcrag.cli.terminal import visible
from selfcrag.env_file import load_env_file
from selfcrag.errors import UserError
from selfcrag.files.sample import sample_kb

if TYPE_CHECKING:
    from selfcrag.graph.context import Context
    from selfcrag.index.writer import ProgressCallback

__all__ = [
    "SAMPLE_KB",
    "DataDir",
    "app",
    "context_for",
    "end_process",
    "err",
    "fail",
    "out",
    "progress_reporter",
    "run",
    "user_errors",
]


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


# Commands that end when their one search or answer is done: their index is left to the process's exit,
# and the program ends without tearing the interpreter down (see :func:`run`).
ONE_SHOT_COMMANDS = ("search", "ask")
_one_shot_ran = False


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
        global _one_shot_ran
        _one_shot_ran = True
        # Closing the engine syncs its files and drops them from the page cache: the exit does neither.
        # Only for the command's run (the app may be run in a process that goes on: tests, scripts).
        from selfcrag.index.store import leave_readers_to_exit

        leave_readers_to_exit()
        ctx.call_on_close(lambda: leave_readers_to_exit(False))
        # No cycle collection while the command imports LangChain and answers: the collector walked every
        # object the imports made, again and again, for garbage a single question cannot make much of.
        gc.disable()
        ctx.call_on_close(gc.enable)


def run() -> None:
    """The ``selfcrag`` program: the app, ended at once after a one-shot command.

    Tearing the interpreter down after ``search`` or ``ask`` (freeing the LangChain, pydantic and
    numpy objects of some 1,300 modules) cost 0.3-0.4 s of CPU, a quarter of an ``ask``. Nothing
    of theirs needs it: what they write is closed when the command returns, and the exit handlers
    still run. A thread still running is waited for, as Python's exit does, by the usual exit. The
    app run in a process that goes on (tests, scripts) ends as usual.
    """
    try:
        app()
    except SystemExit as done:
        if _one_shot_ran and not _threads_to_wait_for():
            end_process(exit_status(done.code))
        raise


def _threads_to_wait_for() -> bool:
    """Whether a thread other than the main one is still running that Python's exit would wait for."""
    main = threading.main_thread()
    return any(thread is not main and thread.is_alive() and not thread.daemon for thread in threading.enumerate())


def exit_status(code: object) -> int:
    """The status ``SystemExit(code)`` ends a process with (a message is printed, as Python does)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def end_process(status: int) -> NoReturn:
    """End the process now: run the exit handlers, flush the output, skip the interpreter's teardown.

    Args:
        status: The exit status.
    """
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass  # a closed pipe (``| head``) or stream: nothing more can be written to it
    os._exit(status)


def fail(message: str) -> typer.Exit:
    """Print ``error: message`` as one line on stderr and return the exit to raise."""
    err.print(f"error: {visible(message)}", markup=False, soft_wrap=True)
    return typer.Exit(1)


INTERRUPTED = "interrupted: the previous index is unchanged"


@contextmanager
def user_errors(interrupted: str = INTERRUPTED) -> Iterator[None]:
    """Turn the errors a user can cause into one line and exit status 1.

    Args:
        interrupted: The line printed on Ctrl-C (exit status 130).
    """
    try:
        yield
    except UserError as error:
        raise fail(str(error)) from None
    except KeyboardInterrupt:
        err.print(interrupted, markup=False)
        raise typer.Exit(130) from None


class _TimeLeftColumn(TimeRemainingColumn):
    """rich's time left, from the pace of the bar, for a phase without a detail; one with a detail says its own."""

    def render(self, task: Task) -> Text:  # noqa: D102
        return Text("") if task.fields.get("detailed") else super().render(task)


@contextmanager
def progress_reporter() -> Iterator[ProgressCallback]:
    """A progress bar on a terminal, with the time left; a few plain lines when piped.

    Each phase is a bar of its own; a phase reported with a detail shows it in place of ``done/total``
    (an ingest's bytes, documents read and sentences embedded, and the time left at the recent embedding rate:
    the bar's own pace counts bytes skipped or read unchanged as quickly as those embedded).
    """
    if err.is_terminal:
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.fields[detail]}"),
            TimeElapsedColumn(),
            _TimeLeftColumn(),
            console=err,
            transient=True,
        ) as bar:
            tasks: dict[str, TaskID] = {}

            def update(phase: str, done: int, total: int, detail: str = "", /) -> None:
                shown = visible(detail) if detail else f"{done}/{total}"
                if phase not in tasks:
                    tasks[phase] = bar.add_task(phase, total=total, detail=shown, detailed=bool(detail))
                bar.update(tasks[phase], completed=done, total=total, detail=shown, detailed=bool(detail))

            yield update
        return
    last: dict[str, int] = {}

    def report(phase: str, done: int, total: int, detail: str = "", /) -> None:
        step = max(total // 10, 1)
        if done == total or done - last.get(phase, -step) >= step:
            last[phase] = done
            shown = f"{100 * done // total}%, {visible(detail)}" if detail and total else detail or f"{done}/{total}"
            print(f"{phase}: {shown}", file=sys.stderr, flush=True)

    yield report
