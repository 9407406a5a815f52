"""How an answer is shown: its text (streamed, Markdown when it is Markdown), sources, route and trace.

On an interactive terminal the answer streams into a live region with a
spinner naming the step under way, and is replaced by the checked answer when
the run ends; sources are a table. Anywhere else (a pipe, a file, a dumb
terminal) there are no colours, spinners or redraws: tokens are written as
they come and sources are plain lines. Sentence ranges shown to people count
from 1.
"""

from __future__ import annotations

import queue
import re
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar, cast

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.spinner import Spinner
from rich.table import Table
from rich.text import Text

from selfcrag.cli.app import end_process
from selfcrag.cli.terminal import one_line, visible
from selfcrag.spans import named_paths

if TYPE_CHECKING:
    from selfcrag.graph.api import Answer, Citation

Event = TypeVar("Event")

# Workers of answers that were cancelled while a step was running (see in_background).
_abandoned: list[threading.Thread] = []

_MARKDOWN = re.compile(r"^\s{0,3}(?:#{1,6}\s|[-*+]\s|\d+[.)]\s|>|\|.*\||```)|\*\*[^*\n]+\*\*|`[^`\n]+`", re.MULTILINE)
_BLOCK_START = re.compile(r"^\s{0,3}(?:#{1,6}\s|[-*+]\s|\d+[.)]\s|>|\||```)")
_ROW_MARKERS = re.compile(r"\|\s*((?:\[\d+\]\s*)+)$")

# What the workflow does next, after each step (shown beside the spinner).
_NEXT_STEP = {
    "decide_retrieval": "searching the knowledge base",
    "condense_question": "searching the knowledge base",
    "retrieve": "grading the passages found",
    "rewrite_query": "searching again with a rewritten query",
    "refine_knowledge": "writing the answer",
    "generate": "checking the answer against its sources",
}


def is_markdown(text: str) -> bool:
    """Tell whether a text uses Markdown (headings, lists, tables, emphasis, code).

    Args:
        text: An answer.

    Returns:
        True when it should be rendered as Markdown rather than as plain text.
    """
    return bool(_MARKDOWN.search(text))


def answer_text(text: str) -> RenderableType:
    """Render an answer: as Markdown when it is Markdown, else as it is written.

    Args:
        text: The answer.

    Returns:
        A rich renderable (control characters shown as symbols, see :mod:`cli.terminal`).
    """
    text = visible(text)
    if not is_markdown(text):
        return Text(text)
    # Imported for a Markdown answer only: rich's Markdown (markdown-it, pygments) is the heaviest part of rich.
    from rich.markdown import Markdown

    return Markdown(markdown_source(text))


def markdown_source(text: str) -> str:
    """Prepare an answer for the Markdown renderer without losing what the answer says.

    A line break inside a paragraph stays a line break, and the ``[n]``
    markers written after a table row (which the renderer would drop as a cell
    beyond the header) are moved under the table.

    Args:
        text: The answer.

    Returns:
        Markdown source.
    """
    lines: list[str] = []
    markers: list[str] = []
    fenced = False
    paragraph = False  # the previous line is a line of a plain paragraph
    for line in text.split("\n"):
        code = fenced or line.lstrip().startswith("```")
        if line.lstrip().startswith("```"):
            fenced = not fenced
        row = not code and line.lstrip().startswith("|")
        if row and (found := _ROW_MARKERS.search(line)):
            line = line[: found.start()] + "|"
            markers.extend(m for m in re.findall(r"\[\d+\]", found.group(1)) if m not in markers)
        if not row and markers:
            lines.extend(["", "".join(markers), ""])
            markers, paragraph = [], False
        plain = bool(line.strip()) and not code and not row
        if paragraph and plain and not _BLOCK_START.match(line):
            lines[-1] += "\\"
        paragraph = plain
        lines.append(line)
    if markers:
        lines.extend(["", "".join(markers)])
    return "\n".join(lines)


def sentence_span(first: int, last: int) -> str:
    """Show a sentence range counted from 1: ``20–21``, or ``20`` for one sentence.

    Args:
        first: First sentence position, from 0.
        last: Last sentence position (inclusive).

    Returns:
        The range for people.
    """
    return f"{first + 1}" if first == last else f"{first + 1}–{last + 1}"


def sentence_label(first: int, last: int) -> str:
    """Name a sentence range for people: ``sentence 13`` or ``sentences 20–21``.

    Args:
        first: First sentence position, from 0.
        last: Last sentence position (inclusive).

    Returns:
        The label.
    """
    return f"sentence{'s' if first != last else ''} {sentence_span(first, last)}"


def section_of(citation: Citation) -> str:
    """Name a citation's section: its heading path under the document title, or the title.

    Args:
        citation: A cited or closest source.

    Returns:
        E.g. ``4 Retention periods › 4.1 Logs and metrics``.
    """
    from selfcrag.cite.markers import section_path

    return one_line(" › ".join(section_path(citation.section, citation.title)) or citation.title or "-")


def source_fields(
    path: str, section: str, where: str, link: str, first: int, last: int, also: Sequence[str] = ()
) -> list[str]:
    """The columns that say where a source is, for a line of text.

    Args:
        path: The file, as ingested (relative to the folder named).
        section: Its section, as shown.
        where: Its place (``p. 6 (printed 3)``, ``lines 12–14``); empty without one.
        link: A form to open it at its place.
        first: First sentence position, from 0 (said when there is no place).
        last: Last sentence position (inclusive).
        also: The other files of the same text (identical copies), named after the file.

    Returns:
        File, section, place (or sentences), and the form to open when it says more than the file's path:
        ``docs/guide.pdf``, ``2 Install``, ``p. 6 (printed 3)``, ``docs/guide.pdf#page=6``; the file reads
        ``docs/README.md (also: copy/README.md)`` when it has copies.
    """
    fields = [one_line(named_paths(path, also)), section, one_line(where or sentence_label(first, last))]
    return [*fields, one_line(link)] if link and link != path else fields


def print_sources_table(console: Console, citations: Sequence[Citation]) -> None:
    """Print numbered sources matching the answer's ``[n]`` markers: file, section, where in it, a form to open.

    Args:
        console: Where to print.
        citations: The cited sources.
    """
    if not citations:
        return
    if not console.is_terminal:
        console.print("sources:", markup=False)
        for c in citations:
            fields = source_fields(c.path, section_of(c), c.where, c.link, c.first, c.last, c.also)
            console.print(f"  [{c.n}] " + " | ".join(fields), markup=False, soft_wrap=True)
        return
    linked = any(c.link != c.path for c in citations)
    table = Table(
        "#",
        "file",
        "section",
        "where",
        *(["open"] if linked else []),
        title="sources",
        title_justify="left",
        title_style="dim",
        box=None,
        header_style="dim",
        pad_edge=False,
    )
    for c in citations:
        where = one_line(c.where) if c.where else sentence_label(c.first, c.last)
        opened = [one_line(c.link) if c.link != c.path else ""] if linked else []
        # Text, not str: a cell holding "[/]" or "[bold]" (a folder's or a heading's name) is not Rich markup.
        cells = [f"[{c.n}]", one_line(named_paths(c.path, c.also)), section_of(c), where, *opened]
        table.add_row(*(Text(cell) for cell in cells))
    console.print(table)


def route_summary(trace: Sequence[dict[str, Any]]) -> str:
    """Sum up the route in one line: retrieved or not, the grade, rewrites, the support verdict.

    Args:
        trace: The answer's trace steps.

    Returns:
        E.g. ``retrieved 5 · graded correct · rewrites 0 · fully supported`` (or ``quoted from [1]`` offline).
    """
    steps = {step["step"]: step for step in trace}  # the last of each kind
    parts: list[str] = []
    decided = steps.get("decide_retrieval", {}).get("decision")
    # A direct answer that failed went on to retrieval: the route is then the retrieval's.
    if decided and decided != "retrieve" and "retrieve" not in steps:
        return f"answered directly ({decided}), not from your documents"
    condensed = steps.get("condense_question")
    if condensed and condensed["decision"] == "condensed":
        parts.append(f"follow-up → “{condensed['question']}”")
    found = {(f["source"], tuple(f["sentences"])) for s in trace if s["step"] == "retrieve" for f in s.get("found", [])}
    searches = sum(s["step"] == "retrieve" for s in trace)
    parts.append(f"retrieved {len(found)}" + (f" in {searches} searches" if searches > 1 else ""))
    if "grade_documents" in steps:
        graded = steps["grade_documents"]["decision"]
        shown = steps.get("abstain", {}).get("graded", graded)
        # The route speaks of what is shown: closest evidence from passages graded lower than the best is not
        # "graded correct" (the demo's uptime-SLA question showed an unrelated sentence under that word).
        parts.append(f"graded {graded}" if shown == graded else f"evidence graded {shown} (the best passage {graded})")
    parts.append(f"rewrites {sum(s['step'] == 'rewrite_query' for s in trace)}")
    regenerated = sum(s["step"] == "generate" and s["decision"] == "regenerated" for s in trace)
    if regenerated:
        parts.append(f"regenerated {regenerated}")
    if "check_support" in steps:
        parts.append(support_label(steps["check_support"]))
    if "abstain" in steps:
        abstained = steps["abstain"]
        if abstained.get("status") == "closest_evidence":
            parts.append("closest evidence shown")
        else:
            parts.append(f"not found ({abstained['decision']})")
    return " · ".join(parts)


def support_label(step: dict[str, Any]) -> str:
    """Say what the support check established: a chat model's verdict, or offline, that the answer is quoted.

    Args:
        step: The ``check_support`` trace step.

    Returns:
        E.g. ``fully supported`` (a chat model read the sources), ``quoted from [1]`` (offline: found verbatim, on
        strong evidence), ``not confirmed`` or ``not supported``.
    """
    verdict = step["decision"]
    if verdict == "unsupported":
        return "not supported"
    if verdict == "unconfirmed":
        return "not confirmed"
    if step.get("method") != "chat" and step.get("quoted"):
        quoted = "".join(f"[{n}]" for n in step["quoted"])
        return f"quoted from {quoted}" + (" in part" if verdict == "partially" else "")
    return f"{verdict} supported"


def print_route(console: Console, answer: Answer, seconds: float | None = None) -> None:
    """Print the compact route line, and the answer's notes (a cut question, a step that fell back offline).

    Args:
        console: Where to print.
        answer: The answer.
        seconds: How long it took, if known.
    """
    took = f" · {seconds:.1f} s" if seconds is not None else ""
    console.print(
        Text(f"route: {one_line(route_summary(answer.trace))}{took}", style="dim"), soft_wrap=not console.is_terminal
    )
    for note in answer_notes(answer):
        console.print(Text(f"note: {one_line(note)}", style="yellow"), soft_wrap=not console.is_terminal)


def answer_notes(answer: Answer) -> list[str]:
    """The answer's notes, with the fallbacks of an unreachable chat model said once rather than once a step.

    Args:
        answer: The answer.

    Returns:
        The lines to show.
    """
    fell_back = [step for step in answer.trace if "fallback" in step]
    # Steps skipped because the question's budget was spent fell back for the same fault as those before.
    reasons = {str(step["fallback"]) for step in fell_back if not step.get("budget_spent")}
    if len(fell_back) < 2 or len(reasons) != 1 or len(answer.notes) != len(fell_back):
        return answer.notes
    steps = [step["step"] for step in fell_back]
    return [
        f"the chat model failed ({reasons.pop()}): {', '.join(steps[:-1])} and {steps[-1]} used their offline methods"
    ]


def print_answer(console: Console, answer: Answer, *, heading: str | None = None) -> None:
    """Print a whole answer: heading, text, route and sources.

    Args:
        console: Where to print.
        answer: The answer.
        heading: A line shown above it (e.g. the question).
    """
    if heading:
        console.print(Text(one_line(heading), style="bold"), soft_wrap=not console.is_terminal)
    if console.is_terminal:
        console.print(answer_text(answer.answer))
    else:
        console.print(visible(answer.answer), markup=False, soft_wrap=True)
    print_footer(console, answer)


def print_footer(console: Console, answer: Answer, seconds: float | None = None) -> None:
    """Print what goes under an answer: the route line and the sources table.

    An abstention lists its closest sources in its own text; ``/sources``
    shows them in full.

    Args:
        console: Where to print.
        answer: The answer.
        seconds: How long it took, if known.
    """
    print_route(console, answer, seconds)
    print_sources_table(console, answer.citations)


def print_passages(console: Console, answer: Answer) -> None:
    """Print the cited passages in full (the nearest sources when nothing was found).

    Args:
        console: Where to print.
        answer: The answer.
    """
    from selfcrag.cite.markers import locate

    passages = answer.closest_sources if answer.status == "not_found" else answer.citations
    if not passages:
        console.print("this answer cites no sources", style="dim", markup=False)
        return
    wrap = console.is_terminal
    for c in passages:
        where = locate(c.path, c.section, c.first, c.last, title=c.title, where=c.where, also=c.also)
        console.print(Text(f"[{c.n}] {one_line(where)}", style="bold"), soft_wrap=not wrap)
        console.print(Text(visible(c.quote.strip())), soft_wrap=not wrap)
        console.print()


def _where(found: dict[str, Any]) -> str:
    """Where a passage of a trace step stands: file, section and sentences (from 1)."""
    from selfcrag.cite.markers import section_path

    where = str(found.get("path") or Path(str(found["source"])).name)
    if found.get("section"):
        where += " › " + " › ".join(section_path(found["section"], str(found.get("title", ""))) or found["section"])
    if "sentences" in found:
        where += f" ({sentence_label(*found['sentences'])})"
    if isinstance(found.get("score"), int | float):
        where += f"  score {found['score']:.3f}"
    return one_line(f"[{found['n']}] {where}" if "n" in found else where)


def print_trace(console: Console, trace: Sequence[dict[str, Any]]) -> None:
    """Print the full route: every step, its decision, and its scores, queries and counters.

    Args:
        console: Where to print.
        trace: The answer's trace steps.
    """
    for number, step in enumerate(trace, 1):
        details = {k: v for k, v in step.items() if k not in ("step", "decision")}
        passages = {
            k: v
            for k, v in details.items()
            if isinstance(v, list) and v and all(isinstance(p, dict) and "source" in p for p in v)
        }
        scalars = []
        for key, value in details.items():
            if key in passages:
                continue
            if isinstance(value, dict):
                value = ", ".join(f"{k} {v}" for k, v in value.items())
            elif isinstance(value, list):
                value = ", ".join(Path(v).name if isinstance(v, str) and "/" in v else str(v) for v in value)
            scalars.append(one_line(f"{key}: {value}"))
        line = Text.assemble(
            (f"{number}. {step['step']}", "bold"),
            " → ",
            (one_line(step["decision"]), "cyan"),
            ("  " + " · ".join(scalars), "dim") if scalars else "",
        )
        console.print(line, soft_wrap=not console.is_terminal)
        for key, found in passages.items():
            console.print(Text(f"   {key}:", style="dim"))
            for item in found:
                console.print(Text(f"     {_where(item)}", style="dim"), soft_wrap=not console.is_terminal)


class AnswerStream:
    """Show an answer while it is produced, from ``stream_ask``'s events.

    Use as a context manager; :meth:`feed` each ``("token", text)`` and
    ``("trace", step)`` event, then :meth:`finish` with the final answer,
    which replaces the streamed draft (the support check may have cut or
    replaced it). Leaving the block early (Ctrl-C) keeps what was shown and
    marks it cancelled. Only a terminal sees the draft: a pipe or a file gets
    the final, checked answer alone.

    Args:
        console: Where to show it.
    """

    def __init__(self, console: Console) -> None:
        self.console = console
        self.draft = ""
        self.withdrawn = False  # the draft shown was withdrawn: the next token starts another attempt
        self.status = "reading the question"
        self.finished = False
        self.live: Live | None = None
        # A terminal without live display (TERM=dumb) is written to as tokens arrive.
        self.echo = console.is_terminal and not console.is_interactive

    def __enter__(self) -> AnswerStream:
        if self.console.is_interactive:
            self.live = Live(
                self._view(),
                console=self.console,
                refresh_per_second=12,
                transient=False,
                vertical_overflow="visible",
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self.live.__enter__()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        # Ctrl-C cancels the answer; any other error is reported by the caller, under what was shown.
        cancelled = not self.finished and kind is not None and issubclass(kind, KeyboardInterrupt)
        note = Text("(cancelled)" if cancelled else "", style="dim")
        if self.live is not None:
            if not self.finished:
                self._show(Group(answer_text(self.draft), note) if self.draft and not self.withdrawn else note)
            self.live.__exit__(kind, error, traceback)
            return
        if self.echo and not self.finished and self.draft and not self.withdrawn:
            self._write("\n")
        if cancelled:
            self._write("(cancelled)\n")

    def _view(self) -> RenderableType:
        spinner = Spinner("dots", Text(f"{self.status}…", style="dim"), style="cyan")
        return Group(answer_text(self.draft), spinner) if self.draft and not self.withdrawn else spinner

    def _show(self, renderable: RenderableType) -> None:
        if self.live is not None:
            self.live.update(renderable, refresh=True)

    def _write(self, text: str) -> None:
        self.console.file.write(visible(text))
        self.console.file.flush()

    def _withdraw(self, why: str, then: str = "trying again") -> None:
        """Drop the attempt shown: its reply failed, or the support check rejected it."""
        if self.echo and self.draft and not self.withdrawn:
            self._write(f"\n({why})\n")  # a plain terminal cannot take text back: say so
        self.withdrawn = True
        self.status = f"{why}; {then}"

    def feed(self, kind: str, payload: Any) -> None:
        """Take one event: a token is shown at once, a trace step updates the status.

        Args:
            kind: ``token``, ``retract`` or ``trace`` (others are ignored).
            payload: The token's text, or the event's details.
        """
        if kind == "token":
            if self.withdrawn:
                self.withdrawn, self.draft = False, ""
            self.draft += payload
            if self.echo:
                self._write(payload)
        elif kind == "retract":
            # The support check's own trace step withdraws a draft it rejects, in its words (below); a draft it cut
            # is replaced by the final answer (finish).
            if payload.get("step") != "check_support":
                self._withdraw(f"withdrawn: {payload.get('reason', 'the reply failed')}")
        elif kind == "trace":
            step = payload["step"]
            if step == "grade_documents":
                self.status = "rewriting the query" if payload["decision"] == "incorrect" else "refining the knowledge"
            elif step == "check_support" and payload["decision"] == "unsupported":
                self._withdraw("not supported by the sources")
            elif step == "check_support" and payload["decision"] == "unconfirmed":
                self._withdraw("not confirmed", "showing the closest evidence")
            else:
                self.status = _NEXT_STEP.get(step, "answering")
        self._show(self._view())

    def finish(self, answer: Answer) -> None:
        """Replace the streamed draft with the final, checked answer.

        Args:
            answer: The final answer.
        """
        self.finished = True
        if self.live is not None:
            self._show(answer_text(answer.answer))
            return
        shown = "" if self.withdrawn or not self.echo else " ".join(self.draft.split())
        if shown and shown == " ".join(answer.answer.split()):
            self._write("\n")
        else:
            # Cut by the support check, replaced by an abstention, or nothing streamed: the final text.
            self._write(("\n(checked against the sources:)\n" if shown else "") + answer.answer + "\n")


def stream_answer(console: Console, events: Iterator[tuple[str, Any]]) -> Answer:
    """Show an answer as ``stream_ask``'s events arrive, and return it.

    The events are produced in the background (see :func:`in_background`), so
    Ctrl-C cancels at once: the KeyboardInterrupt propagates, after the
    display has marked the answer cancelled.

    Args:
        console: Where to show it.
        events: ``(kind, payload)`` pairs ending with ``("answer", Answer)``.

    Returns:
        The final answer.
    """
    with AnswerStream(console) as display:
        for kind, payload in in_background(events):
            if kind == "answer":
                display.finish(payload)
                return cast("Answer", payload)
            display.feed(kind, payload)
    raise RuntimeError("the answer's events ended without the answer")


def in_background(events: Iterator[Event]) -> Iterator[Event]:
    """Produce events in a worker thread, so Ctrl-C stops the waiting at once.

    A step of the workflow (a chat request, a search) cannot be interrupted
    from outside; the worker is told to stop and leaves at the next event,
    while the caller goes on at once. An exception raised while producing is
    raised here.

    Args:
        events: A generator (e.g. ``stream_ask(...)``); it is run and closed in the worker.

    Yields:
        Its events, in order.
    """
    channel: queue.Queue[tuple[str, Any]] = queue.Queue()
    stop = threading.Event()

    def produce() -> None:
        try:
            for event in events:
                if stop.is_set():
                    break
                channel.put(("event", event))
            channel.put(("done", None))
        except BaseException as error:  # handed to the caller, who decides what it means
            channel.put(("error", error))
        finally:
            close = getattr(events, "close", None)
            if close is not None:
                close()

    worker = threading.Thread(target=produce, name="selfcrag-answer", daemon=True)
    worker.start()
    try:
        while True:
            try:
                kind, value = channel.get(timeout=0.1)
            except queue.Empty:
                continue
            if kind == "error":
                raise value
            if kind == "done":
                return
            yield value
    finally:
        stop.set()
        if worker.is_alive():
            _abandoned.append(worker)


def leave_cancelled_work(code: int) -> None:
    """End the process at once if a cancelled answer is still running.

    A step in flight (a chat request) cannot be interrupted, and Python would
    wait for it at exit, up to the request's timeout. Call this last, after
    closing what needs closing.

    Args:
        code: The exit status.
    """
    if any(worker.is_alive() for worker in _abandoned):
        end_process(code)
