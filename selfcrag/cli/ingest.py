"""``selfcrag ingest``: index files and folders."""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from selfcrag.cli.app import (
    INTERRUPTED,
    DataDir,
    app,
    context_for,
    end_process,
    err,
    exit_status,
    fail,
    out,
    progress_reporter,
    user_errors,
)
from selfcrag.cli.terminal import one_line
from selfcrag.settings import Settings

if TYPE_CHECKING:
    from selfcrag.graph.context import Context
    from selfcrag.ingest.propositions import PropositionReport

# prctl(2): the signal a child gets when its parent dies.
PR_SET_PDEATHSIG = 1
# What a stopped ingest leaves: the vectors it computed (selfcrag.embed.kept_vectors), so the next run resumes.
GOES_ON = "run the ingest again: it goes on from where this one stopped"


@app.command()
def ingest(
    # readable=False: click would turn one unreadable path into a usage error for the whole command; the
    # loader reports it as a skipped line instead, and ingests the rest.
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="Files and folders, folders recursively: text, Markdown, PDF, HTML, reST, Word, OpenDocument, "
            "PowerPoint, Excel, CSV, EPUB, notebooks, e-mail, RTF, gzip (README lists them).",
            readable=False,
        ),
    ],
    prune: Annotated[bool, typer.Option(help="Remove indexed documents whose files are gone.")] = False,
    propositions: Annotated[
        bool,
        typer.Option(
            help="Also have the chat model decompose each passage into propositions, indexed beside the sentences "
            "(needs OPENAI_BASE_URL or OPENAI_API_KEY; one model call per passage of about 600 characters)."
        ),
    ] = False,
    max_calls: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="With --propositions: model calls this ingest may make at most (default: "
            "$SELFCRAG_MAX_PROPOSITION_CALLS or 500); documents past it are decomposed by the next run.",
        ),
    ] = None,
    follow_links: Annotated[
        bool,
        typer.Option(
            "--follow-links",
            help="Also follow links inside the folders given that lead out of them (skipped by default: a downloaded "
            "folder's link may point at your private files).",
        ),
    ] = False,
    data_dir: DataDir = None,
) -> None:
    """Index documents: sentence by sentence, dense vectors and BM25; with --propositions, propositions too."""
    with user_errors():
        context = context_for(data_dir, max_proposition_calls=max_calls)
        settings = context.settings()
    in_child_process(
        lambda: _ingest(paths, prune, context if propositions else None, settings, follow_links), settings.data_dir
    )


def _ingest(
    paths: list[Path], prune: bool, propositions_from: Context | None, settings: Settings, follow_links: bool = False
) -> None:
    """The command's body, in the child process: ``propositions_from`` is the context whose chat model draws them."""
    from selfcrag.files.loaders import LINK_OUTSIDE
    from selfcrag.ingest.run import ingest as run_ingest

    with user_errors(f"{INTERRUPTED}; {GOES_ON}"), progress_reporter() as progress:
        propositions = None
        if propositions_from is not None:
            from selfcrag.graph.propositions import chat_propositions

            propositions = chat_propositions(propositions_from)
        summary = run_ingest(
            paths,
            settings,
            prune=prune,
            progress=progress,
            on_wait=lambda message: err.print(message, markup=False, soft_wrap=True),
            propositions=propositions,
            follow_links=follow_links,
        )
    for note in summary.notes:
        err.print(note, markup=False, soft_wrap=True)
    rate = f", {summary.embedded / summary.embed_seconds:.0f} sentences/s embedded" if summary.embedded else ""
    held = f", {summary.propositions} propositions" if summary.propositions else ""
    out.print(
        f"{summary.documents} documents, {summary.sentences} sentences{held} in {one_line(settings.data_dir)} "
        f"({summary.added} added, {summary.updated} updated, {summary.unchanged} unchanged, "
        f"{summary.removed} removed{f', {summary.repaired} repaired' if summary.repaired else ''}"
        f"{f', {summary.identical} identical to another (indexed once)' if summary.identical else ''}; "
        f"{summary.embedded} sentences embedded"
        f"{f', {summary.recalled} kept from an interrupted ingest' if summary.recalled else ''}) "
        f"in {summary.seconds:.1f} s{rate}",
        markup=False,
    )
    for path, encoding in summary.encodings:
        err.print(f"read {one_line(path)} as {encoding}", markup=False, soft_wrap=True)
    for skipped in summary.skipped:
        err.print(f"skipped {one_line(skipped.path)}: {one_line(skipped.reason)}", markup=False, soft_wrap=True)
    if summary.skipped:
        err.print(f"{len(summary.skipped)} file(s) skipped", markup=False)
    if any(skipped.reason == LINK_OUTSIDE for skipped in summary.skipped):
        err.print("links to outside the folder are not followed: --follow-links follows them", markup=False)
    if summary.proposition_report is not None:
        _print_proposition_cost(summary.proposition_report)


def _print_proposition_cost(report: PropositionReport) -> None:
    """What drawing propositions cost (calls, tokens, seconds) and what it skipped, each skipped passage on a line."""
    tokens = f"{report.tokens:,} tokens" if report.tokens else "tokens not reported by the endpoint"
    out.print(
        f"propositions: {report.made} drawn from {report.calls} passage(s) of {report.documents} document(s): "
        f"{report.calls} model call(s), {tokens}, {report.seconds:.1f} s",
        markup=False,
    )
    if report.ungrounded:
        err.print(
            f"{report.ungrounded} statement(s) dropped: under two thirds of their words are in the passage they came "
            "from",
            markup=False,
        )
    if report.linked:
        err.print(f"{report.linked} statement(s) dropped: they carry a link", markup=False)
    for note in report.skipped:
        err.print(f"skipped passage {one_line(note)}; its sentences are indexed", markup=False, soft_wrap=True)
    if report.skipped:
        err.print(
            f"{len(report.skipped)} passage(s) skipped: the next `selfcrag ingest --propositions` asks again",
            markup=False,
        )
    if report.deferred:
        err.print(
            f"{report.deferred} document(s) not (fully) decomposed: the bound of model calls was reached; run "
            "`selfcrag ingest --propositions` again to continue (--max-calls raises the bound)",
            markup=False,
            soft_wrap=True,
        )


def in_child_process(work: Callable[[], None], data_dir: Path) -> None:
    """Run an ingest in a forked child, so that a signal that kills it is one line, not a silent death.

    The engine writes its files through memory maps: when the disk fills up, the
    kernel stops the process with SIGBUS, which no Python code can catch. The
    parent waits, removes what the child left (its unfinished generation, its
    view of the current one) and says what happened. The child's output, errors
    and exit status pass through unchanged; it dies with the parent (kill -9 of
    ``selfcrag ingest`` stops the work too).

    Args:
        work: The command's body.
        data_dir: The data folder written.
    """
    if not hasattr(os, "fork"):
        work()
        return
    sys.stdout.flush()
    sys.stderr.flush()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        end_process(_child(work, parent))
    # Ctrl-C reaches both processes: the child answers it (the previous index is unchanged).
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        _, status = os.waitpid(pid, 0)
    finally:
        signal.signal(signal.SIGINT, previous)
    if os.WIFEXITED(status):
        if os.WEXITSTATUS(status):
            raise typer.Exit(os.WEXITSTATUS(status))
        return
    raise fail(_after_killed_child(os.WTERMSIG(status), data_dir))


def _child(work: Callable[[], None], parent: int) -> int:
    """The forked child: run the work and return its exit status, which ends it (it never returns into the stack)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass  # not Linux: the child outlives a killed parent
    status = 1
    try:
        if os.getppid() != parent:
            return 1  # the parent died before prctl took effect
        work()
        status = 0
    except typer.Exit as done:
        status = done.exit_code
    except SystemExit as done:
        status = exit_status(done.code)
    except BaseException:  # noqa: BLE001 - an error of ours: it keeps its traceback
        traceback.print_exc()
    return status


def _after_killed_child(number: int, data_dir: Path) -> str:
    """Remove a killed ingest's leftovers; return the line that says what happened and what to do."""
    from selfcrag.index import generations

    name = signal.Signals(number).name
    free = shutil.disk_usage(generations.nearest_existing(data_dir)).free / 2**20
    root = generations.index_root(data_dir)
    if root.is_dir():
        with generations.writer_lock(root, wait=False) as mine:
            if mine:  # else another ingest already took over, and removes them itself
                generations.clean_leftovers(root)
    if number == signal.SIGBUS and free < 64:
        return (
            f"the disk holding {one_line(data_dir)} is full ({free:.1f} MB free): free some space and run the "
            "ingest again; the previous index is unchanged"
        )
    return f"the ingest was stopped by {name}; the previous index is unchanged; {GOES_ON}"
