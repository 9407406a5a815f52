"""``selfcrag chat``: a conversation with the knowledge base in the terminal.

Each conversation is a LangGraph thread kept by a SQLite checkpointer in
``<data_dir>/conversations.sqlite``, so it survives the session: ``--thread
NAME`` resumes one, ``/threads`` lists them. A turn is saved when it ends; a
turn cancelled with Ctrl-C is left out of the conversation (the next turn
continues from the last one that ended).
"""

from __future__ import annotations

import sqlite3
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer
from rich.console import Console
from rich.text import Text

from selfcrag.cli.app import DataDir, app, context_for, err, out
from selfcrag.cli.render import leave_cancelled_work, print_footer, print_passages, print_trace, stream_answer
from selfcrag.cli.terminal import one_line, visible
from selfcrag.errors import UserError
from selfcrag.graph.question import MAX_QUESTION_CHARS

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig
    from langgraph.graph.state import CompiledStateGraph
    from langgraph.types import StateSnapshot

    from selfcrag.graph.api import Answer
    from selfcrag.graph.context import Context

CONVERSATIONS_FILE = "conversations.sqlite"
_QUESTIONS_TABLE = "selfcrag_thread_questions"
HISTORY_FILE = "chat_history"
PROMPT = "› "

HELP = """\
Ask a question, or a follow-up ("and the refresh tokens?"): each answer cites its sources as [n].
  /sources   the cited passages in full
  /trace     the full route of the last answer, with scores
  /new       start a new conversation
  /threads   list the saved conversations (resume one with `selfcrag chat --thread NAME`)
  /help      this help
  /quit      leave (or Ctrl-D); Ctrl-C cancels an answer being produced"""


@dataclass(frozen=True)
class ThreadSummary:
    """A saved conversation.

    Attributes:
        name: The thread id (``--thread NAME``).
        questions: Questions asked in it.
        last_question: The latest of them.
        updated: When its latest turn ended (ISO time).
    """

    name: str
    questions: int
    last_question: str
    updated: str


class Conversations:
    """The conversations of a data directory: the workflow compiled with a SQLite checkpointer.

    Args:
        path: The SQLite file.
    """

    def __init__(self, path: Path, context: Context) -> None:
        from selfcrag.graph.api import Session
        from selfcrag.graph.checkpoints import ConversationSaver, check_tables
        from selfcrag.index.generations import check_data_dir

        check_data_dir(path.parent)  # a file where the data folder should be: the line ingest and search give
        connection: sqlite3.Connection | None = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(str(path), check_same_thread=False)
            # How many questions each thread has had: its checkpoint keeps only the latest turns (graph.memory).
            with connection:
                connection.execute(
                    f"CREATE TABLE IF NOT EXISTS {_QUESTIONS_TABLE} "
                    "(thread_id TEXT PRIMARY KEY, questions INTEGER NOT NULL)"
                )
            check_tables(connection, {_QUESTIONS_TABLE: {"thread_id": ("text",), "questions": ("integer",)}})
            self.saver = ConversationSaver(connection)
            self.saver.setup()
        except (OSError, sqlite3.Error, UserError) as error:
            if connection is not None:
                connection.close()
            if isinstance(error, UserError):  # a store of another shape: its own line
                raise
            # Not a database, a folder in its place, no right to write there.
            raise UserError(
                f"cannot keep conversations in {path}: {error}; move it out of the data directory, "
                "or set --data-dir or SELFCRAG_DATA_DIR to a folder you can write to"
            ) from None
        self._connection = connection
        self.session = Session(context, checkpointer=self.saver)
        self.app: CompiledStateGraph[Any, Any, Any, Any] = self.session.app

    def close(self) -> None:
        """Close the index and the database."""
        self.session.close()
        self._connection.close()

    def last_turn(self, thread: str) -> StateSnapshot | None:
        """Return the state after the thread's latest turn that ended, or None.

        Args:
            thread: The thread id.

        Returns:
            The snapshot, whose values hold the latest answer and the conversation.
        """
        from langchain_core.messages import AIMessage

        for snapshot in self.app.get_state_history({"configurable": {"thread_id": thread}}):
            messages = snapshot.values.get("messages", [])
            if not snapshot.next and messages and isinstance(messages[-1], AIMessage):
                return snapshot
        return None

    def last_answer(self, thread: str) -> Answer | None:
        """Return the answer of the thread's latest turn that ended.

        Args:
            thread: The thread id.

        Returns:
            The answer, or None for a new thread.
        """
        from selfcrag.graph.api import Answer

        snapshot = self.last_turn(thread)
        return Answer.from_state(snapshot.values) if snapshot is not None else None

    def _start_from(self, thread: str) -> RunnableConfig:
        """The checkpoint a new turn continues from: the latest turn that ended, never a cancelled one."""
        snapshot = self.last_turn(thread)
        if snapshot is not None:
            return snapshot.config
        self.saver.delete_thread(thread)  # nothing but cancelled turns: start afresh
        with self.saver.lock, self._connection:
            self._connection.execute(f"DELETE FROM {_QUESTIONS_TABLE} WHERE thread_id = ?", (thread,))
        return {"configurable": {"thread_id": thread}}

    def turn_ended(self, thread: str) -> None:
        """Keep only the checkpoint of the turn that just ended, and count its question.

        Called once the turn's answer has arrived (its checkpoint is saved by then), in the caller's thread:
        the stream's worker thread may be abandoned at any moment and must not be left writing.

        Earlier checkpoints are never read again (a turn starts from the latest
        that ended), and each holds a copy of the conversation: kept, they
        would make the store grow with the square of its length.
        """
        from langchain_core.messages import HumanMessage

        latest = self.saver.get_tuple({"configurable": {"thread_id": thread}})
        if latest is None:
            return
        newest = latest.config["configurable"]["checkpoint_id"]
        asked = sum(isinstance(m, HumanMessage) for m in latest.checkpoint["channel_values"].get("messages", []))
        with self.saver.lock, self._connection:
            for table in ("checkpoints", "writes"):
                self._connection.execute(
                    f"DELETE FROM {table} WHERE thread_id = ? AND checkpoint_id < ?", (thread, newest)
                )
            self._connection.execute(
                f"INSERT INTO {_QUESTIONS_TABLE} VALUES (?, ?) "
                "ON CONFLICT(thread_id) DO UPDATE SET questions = questions + 1",
                (thread, asked),
            )

    def _questions(self, thread: str) -> int | None:
        """The number of questions asked in a thread, if counted."""
        with self.saver.lock:
            row = self._connection.execute(
                f"SELECT questions FROM {_QUESTIONS_TABLE} WHERE thread_id = ?", (thread,)
            ).fetchone()
        return int(row[0]) if row else None

    def stream(self, question: str, thread: str, context: Context) -> Iterator[tuple[str, Any]]:
        """Answer a question in a thread, yielding the events of ``graph.stream_ask``.

        Args:
            question: The question as typed.
            thread: The thread id.
            context: The run's context.

        Yields:
            ``("token", text)``, ``("retract", ...)``, ``("trace", step)``, then ``("answer", Answer)``.

        Raises:
            UserError: The question is empty once cleaned.
        """
        from selfcrag.graph.api import recursion_limit
        from selfcrag.graph.question import prepare_question

        cleaned = prepare_question(question)
        config = cast("RunnableConfig", {**self._start_from(thread), "recursion_limit": recursion_limit(context)})
        # Saved once, when the turn ends: a cancelled turn leaves at most one checkpoint, which is skipped.
        yield from self.session.stream_run(self.app, cleaned, config, context, durability="exit")

    def summary(self, thread: str) -> ThreadSummary | None:
        """Sum up a saved conversation.

        Args:
            thread: The thread id.

        Returns:
            The summary, or None when no turn of it has ended.
        """
        from langchain_core.messages import HumanMessage

        snapshot = self.last_turn(thread)
        if snapshot is None:
            return None
        asked = [m.text for m in snapshot.values.get("messages", []) if isinstance(m, HumanMessage)]
        return ThreadSummary(
            thread, self._questions(thread) or len(asked), asked[-1] if asked else "", snapshot.created_at or ""
        )

    def threads(self) -> list[ThreadSummary]:
        """List the saved conversations, the most recent first.

        Returns:
            One summary per thread with at least one turn that ended.
        """
        names = dict.fromkeys(item.config["configurable"]["thread_id"] for item in self.saver.list(None))
        summaries = [summary for name in names if (summary := self.summary(name)) is not None]
        return sorted(summaries, key=lambda s: s.updated, reverse=True)


def questions(count: int) -> str:
    """Count questions in words: ``1 question``, ``3 questions``."""
    return f"{count} question{'' if count == 1 else 's'}"


def new_thread_name(taken: Callable[[str], bool]) -> str:
    """Name a new conversation by the time it starts.

    Args:
        taken: Tells whether a name is already used.

    Returns:
        E.g. ``2025-06-01-143210`` (``-2``, ``-3``, ... appended when taken).
    """
    name = base = datetime.now().strftime("%Y-%m-%d-%H%M%S")
    number = 1
    while taken(name):
        number += 1
        name = f"{base}-{number}"
    return name


def line_reader(history: Path) -> Callable[[], str]:
    """Read the user's lines: with line editing and history on a terminal, plainly from a pipe.

    Args:
        history: The file of earlier inputs (for the up arrow).

    Returns:
        A function returning the next line; it raises EOFError at the end
        (Ctrl-D) and KeyboardInterrupt on Ctrl-C.
    """
    if sys.stdin.isatty() and out.is_terminal:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.history import FileHistory
        from prompt_toolkit.styles import Style

        session: PromptSession[str] = PromptSession(
            history=FileHistory(str(history)), style=Style.from_dict({"prompt": "ansicyan bold"})
        )
        return lambda: session.prompt([("class:prompt", PROMPT)])

    def read() -> str:
        line = sys.stdin.readline()
        if not line:
            raise EOFError
        line = line.rstrip("\r\n")
        # A transcript shows what was asked; a pasted megabyte is shown as far as the question is used.
        shown = line if len(line) <= MAX_QUESTION_CHARS else f"{line[:MAX_QUESTION_CHARS]}… ({len(line):,} characters)"
        out.print(f"{PROMPT}{one_line(shown)}", markup=False, highlight=False)
        return line

    return read


class ChatSession:
    """One terminal session: reads questions and commands, shows answers as they stream.

    Args:
        context: The run settings (data directory, models).
        thread: The conversation to resume or start; None for a new one.
        console: Where answers go.
    """

    def __init__(self, context: Context, thread: str | None, console: Console) -> None:
        self.context = context
        self.settings = context.settings()
        self.console = console
        self.conversations = Conversations(self.settings.data_dir / CONVERSATIONS_FILE, context)
        self.thread = ""
        self.thread = thread or self.new_thread()
        self.last: Answer | None = self.conversations.last_answer(self.thread)

    def new_thread(self) -> str:
        """Name a new conversation, unlike any saved one or this one."""
        return new_thread_name(lambda name: name == self.thread or self.conversations.summary(name) is not None)

    def error(self, message: str) -> None:
        """Report an error the user can fix in one line; the session goes on."""
        err.print(Text(f"error: {visible(message)}", style="red"), soft_wrap=not err.is_terminal)

    def greet(self) -> None:
        """Say which conversation this is, where the index is, and how to get help."""
        summary = self.conversations.summary(self.thread)
        which = (
            f"resuming conversation {self.thread} ({questions(summary.questions)} so far, "
            f"last: “{summary.last_question}”)"
            if summary
            else f"new conversation {self.thread}"
        )
        self.console.print(
            f"{one_line(which)} · /help for commands, Ctrl-D to leave",
            markup=False,
            soft_wrap=not self.console.is_terminal,
        )
        try:
            resources = self.conversations.session.resources
            model = resources.chat_model(self.context)
            with self.status("opening the index"):
                retriever = resources.retriever(self.context)
        except UserError as error:
            self.error(str(error))
            return
        answers = f"answers by {self.context.chat_model}" if model is not None else "offline answers"
        self.console.print(
            Text(f"{retriever.index.document_count()} documents in {self.settings.data_dir} · {answers}", style="dim"),
            soft_wrap=not self.console.is_terminal,
        )

    def status(self, message: str) -> Any:
        """A spinner on an interactive terminal; nothing elsewhere."""
        from contextlib import nullcontext

        return self.console.status(f"{message}…") if self.console.is_interactive else nullcontext()

    def run(self, read: Callable[[], str]) -> None:
        """Read and handle lines until Ctrl-D or /quit.

        Args:
            read: Returns the next line (see :func:`line_reader`).
        """
        self.greet()
        while True:
            try:
                line = read().strip()
            except KeyboardInterrupt:
                continue  # Ctrl-C at the prompt clears the line, as in a shell
            except EOFError:
                break
            if not line:
                continue
            if line.startswith("/"):
                if not self.command(line):
                    break
                continue
            self.answer(line)

    def answer(self, question: str) -> None:
        """Answer a question, streaming it; Ctrl-C cancels it and the session goes on.

        Args:
            question: The question as typed.
        """
        started = time.perf_counter()
        try:
            result = stream_answer(self.console, self.conversations.stream(question, self.thread, self.context))
        except KeyboardInterrupt:
            return
        except UserError as error:
            self.error(str(error))
            return
        except Exception:  # a bug of ours: show where, and keep the conversation going
            self.console.print_exception()
            return
        self.conversations.turn_ended(self.thread)
        print_footer(self.console, result, time.perf_counter() - started)
        self.last = result

    def command(self, line: str) -> bool:
        """Run a slash command.

        Args:
            line: The line, starting with ``/``.

        Returns:
            False to leave the session.
        """
        name = line.split()[0].lower()
        if name in ("/quit", "/exit", "/q"):
            return False
        try:
            self.run_command(name)
        except UserError as error:  # e.g. a stored conversation that cannot be read
            self.error(str(error))
        return True

    def run_command(self, name: str) -> None:
        """Run a slash command other than /quit.

        Args:
            name: The command, lower case.
        """
        if name == "/help":
            self.console.print(HELP, markup=False)
        elif name in ("/sources", "/trace"):
            if self.last is None:
                self.console.print("no answer yet: ask a question first", markup=False)
            elif name == "/sources":
                print_passages(self.console, self.last)
            else:
                print_trace(self.console, self.last.trace)
        elif name == "/new":
            self.thread, self.last = self.new_thread(), None
            self.console.print(f"new conversation {one_line(self.thread)}", markup=False)
        elif name == "/threads":
            self.list_threads()
        else:
            self.console.print(f"unknown command {one_line(name)}; /help lists the commands", markup=False)

    def list_threads(self) -> None:
        """Print the saved conversations, marking this one."""
        threads = self.conversations.threads()
        if not threads:
            self.console.print("no saved conversations yet", markup=False)
        for t in threads:
            mark = "*" if t.name == self.thread else " "
            when = datetime.fromisoformat(t.updated).astimezone().strftime("%Y-%m-%d %H:%M") if t.updated else "?"
            self.console.print(
                f"{mark} {one_line(t.name)}  {questions(t.questions)}, {when}, last: “{one_line(t.last_question)}”",
                markup=False,
                soft_wrap=not self.console.is_terminal,
            )
        self.console.print(Text("resume one with: selfcrag chat --thread NAME", style="dim"))

    def close(self) -> None:
        """Release the index and the conversation store."""
        self.conversations.close()


@app.command()
def chat(
    thread: Annotated[
        str | None, typer.Option("--thread", help="Resume (or start) the conversation with this name; see /threads.")
    ] = None,
    history_turns: Annotated[
        int | None,
        typer.Option(
            "--history-turns",
            min=0,
            help="Earlier turns the conversation keeps (default: $SELFCRAG_HISTORY_TURNS "
            "or 10); older ones are forgotten.",
        ),
    ] = None,
    data_dir: DataDir = None,
) -> None:
    """Talk with the knowledge base: follow-up questions, cited sources and the route of each answer."""
    try:
        context = context_for(data_dir, history_turns=history_turns)
        session = ChatSession(context, thread, out)
    except UserError as error:  # e.g. a bad environment variable
        err.print(f"error: {visible(error)}", markup=False, soft_wrap=True)
        raise typer.Exit(1) from None
    try:
        session.run(line_reader(session.settings.data_dir / HISTORY_FILE))
    finally:
        session.close()
    leave_cancelled_work(0)
