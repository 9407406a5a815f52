"""The Python API: ``ask`` a question, or ``stream_ask`` it, and get a typed answer.

>>> from selfcrag import ask
>>> result = ask("How long are application logs kept?", data_dir=".selfcrag/demo")
>>> result.answer, result.citations[0].source, result.abstained

``graph.invoke`` / ``graph.stream`` (``from selfcrag.graph.builder import graph``)
work as with any LangGraph graph; these functions add a typed result, token
streaming in both modes (chat model or offline) and, given a ``thread_id``,
memory of earlier turns.

The question is cleaned before the run (:mod:`graph.question`): control
characters removed, a very long question cut with a note in the answer. A
step whose chat model failed falls back to its offline method; the answer
says so in its ``notes`` and ``degraded`` is set.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from os import PathLike
from typing import Any, Literal, cast

from langchain_core.messages import AIMessageChunk
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.state import CompiledStateGraph

from selfcrag.errors import UserError
from selfcrag.graph.builder import builder, graph
from selfcrag.graph.context import Context
from selfcrag.graph.question import CleanQuestion, clean_question
from selfcrag.graph.state import Citation as CitationDict
from selfcrag.graph.state import TraceStep
from selfcrag.index.tokenize import detect_language
from selfcrag.llm.think import ThinkFilter
from selfcrag.prompts import replies

StreamKind = Literal["token", "retract", "trace", "answer"]
_ANSWER_NODES = ("generate", "answer_directly")


@dataclass(frozen=True)
class Citation:
    """A source the answer cites.

    Attributes:
        n: The marker number in the answer (``[n]``).
        source: Path of the source file.
        title: Document title.
        section: Heading path.
        first: First sentence of the quoted range (position in the document, from 0).
        last: Last sentence of the range (inclusive).
        quote: The quoted text.
    """

    n: int
    source: str
    title: str
    section: tuple[str, ...]
    first: int
    last: int
    quote: str

    @classmethod
    def from_state(cls, data: CitationDict) -> Citation:
        """Build from the state's JSON-ready form."""
        return cls(n=data["n"], source=data["source"], title=data["title"], section=tuple(data["section"]),
                   first=data["first"], last=data["last"], quote=data["quote"])


@dataclass(frozen=True)
class Answer:
    """The outcome of a question.

    Attributes:
        question: The question asked.
        answer: The answer text, with ``[n]`` markers; or the abstention.
        citations: The sources the answer cites.
        trace: The route taken: one dict per step (``step``, ``decision``, scores, counters).
        abstained: True when the knowledge base did not hold the answer.
        closest_sources: When abstaining, the nearest passages found.
        notes: What the reader should know about how the answer was made: the
            question was cut, or a step fell back to its offline method because
            the chat model failed. In the question's language.
    """

    question: str
    answer: str
    citations: list[Citation] = field(default_factory=list)
    trace: list[dict[str, Any]] = field(default_factory=list)
    abstained: bool = False
    closest_sources: list[Citation] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def route(self) -> list[str]:
        """The names of the steps taken, in order."""
        return [step["step"] for step in self.trace]

    @property
    def degraded(self) -> bool:
        """True when some step fell back to its offline method because the chat model failed."""
        return any("fallback" in step for step in self.trace)

    @classmethod
    def from_state(cls, values: dict[str, Any], cleaned: CleanQuestion | None = None) -> Answer:
        """Build from a final state (``graph.invoke``'s result).

        Args:
            values: The state.
            cleaned: The question as the API cleaned it before the run, for its note.

        Returns:
            The answer.
        """
        question = values.get("question", "")
        trace = list(values.get("trace", []))
        return cls(
            question=question,
            answer=values.get("answer", ""),
            citations=[Citation.from_state(c) for c in values.get("citations", [])],
            trace=trace,
            abstained=bool(values.get("abstained", False)),
            closest_sources=[Citation.from_state(c) for c in values.get("closest_sources", [])],
            notes=answer_notes(question, trace, cleaned),
        )


def answer_notes(question: str, trace: list[TraceStep], cleaned: CleanQuestion | None = None) -> list[str]:
    """Write the notes of an answer from its trace: a cut question, each step that fell back offline.

    Args:
        question: The question (its language is the notes').
        trace: The route taken.
        cleaned: The question as cleaned before the run, if it was.

    Returns:
        One line per note.
    """
    language = detect_language(question)
    cuts = [(cleaned.original_chars, len(cleaned.text))] if cleaned is not None and cleaned.cut else []
    cuts += [(s["question_cut"]["from"], s["question_cut"]["to"]) for s in trace if "question_cut" in s]
    notes = [replies.QUESTION_CUT[language].format(total=total, kept=kept) for total, kept in cuts]
    notes += [replies.FELL_BACK[language].format(step=s["step"], reason=s["fallback"])
              for s in trace if "fallback" in s]
    return notes


def make_context(data_dir: str | PathLike[str] | None = None, **overrides: Any) -> Context:
    """Build a run's context from keyword options.

    Args:
        data_dir: The index folder, if not the default.
        **overrides: Any :class:`~graph.context.Context` field, e.g. ``top_k=3``.

    Returns:
        The context.

    Raises:
        UserError: An option is not a Context field.
    """
    names = {f.name for f in dataclasses.fields(Context)}
    unknown = sorted(set(overrides) - names)
    if unknown:
        raise UserError(f"unknown option(s) {', '.join(unknown)}; options are: {', '.join(sorted(names))}")
    return Context(data_dir=str(data_dir) if data_dir else "", **overrides)


def recursion_limit(context: Context) -> int:
    """Steps the longest possible run takes, plus slack: the bound is the counters, not this."""
    return 8 + 3 * (context.max_requery + 1) + 2 * (context.max_regenerate + 1)


_memory_lock = threading.Lock()
_memory_graph: CompiledStateGraph[Any, Any, Any, Any] | None = None


def _graph_with_memory() -> CompiledStateGraph[Any, Any, Any, Any]:
    # One in-process memory for every thread_id; the module-level graph stays checkpointer-free
    # for `langgraph dev`, which brings its own. Built under a lock: two threads asking their first
    # questions at once must not each get a memory of their own (lru_cache does not prevent that).
    global _memory_graph
    with _memory_lock:
        if _memory_graph is None:
            _memory_graph = builder.compile(checkpointer=InMemorySaver(), name="selfcrag")
        return _memory_graph


def prepare_question(question: object) -> CleanQuestion:
    """Clean a question for a run, refusing one with nothing left to ask.

    Args:
        question: The question as given.

    Returns:
        The cleaned question (control characters removed, cut to ``MAX_QUESTION_CHARS``).

    Raises:
        UserError: The question is empty, blank, or only control characters.
    """
    cleaned = clean_question(question)
    if not cleaned.text:
        raise UserError("the question is empty" + (" once control characters are removed" if cleaned.removed else ""))
    return cleaned


def _prepare(question: str, data_dir: str | PathLike[str] | None, thread_id: str | None, overrides: dict[str, Any]
             ) -> tuple[CompiledStateGraph[Any, Any, Any, Any], RunnableConfig, Context, CleanQuestion]:
    cleaned = prepare_question(question)
    context = make_context(data_dir, **overrides)
    config: RunnableConfig = {"recursion_limit": recursion_limit(context)}
    if thread_id is None:
        return graph, config, context, cleaned
    config["configurable"] = {"thread_id": thread_id}
    return _graph_with_memory(), config, context, cleaned


def ask(question: str, *, data_dir: str | PathLike[str] | None = None, thread_id: str | None = None,
        **context_overrides: Any) -> Answer:
    """Answer a question from the knowledge base, checking the answer against its sources.

    Args:
        question: The question, Chinese or English.
        data_dir: The index folder (default: ``$SELFCRAG_DATA_DIR`` or ``.selfcrag``).
        thread_id: Remember the conversation under this id (in this process),
            so later questions can refer to it.
        **context_overrides: Knobs of :class:`~graph.context.Context`, e.g.
            ``top_k=3``, ``answerer="offline"``, ``max_requery=1``.

    Returns:
        The answer, its citations, the route taken and whether it abstained.

    Raises:
        UserError: An empty question, an unknown option, or no index in ``data_dir``.
    """
    app, config, context, cleaned = _prepare(question, data_dir, thread_id, context_overrides)
    values = app.invoke({"question": cleaned.text}, config, context=context)
    return Answer.from_state(values, cleaned)


def stream_ask(question: str, *, data_dir: str | PathLike[str] | None = None, thread_id: str | None = None,
               **context_overrides: Any) -> Iterator[tuple[StreamKind, Any]]:
    """Answer a question, yielding the answer's tokens and the route as they happen.

    Yields ``("token", text)`` for pieces of each answer attempt (the chat
    model's tokens with ``<think>`` blocks removed, or the offline answer's
    sentences), ``("trace", step)`` after each step, and finally
    ``("answer", Answer)``. ``("retract", {"step", "reason"})`` withdraws the
    tokens of the current attempt: its reply failed (a dropped stream, an
    empty reply, the wrong language) and another attempt or the offline
    answer follows. A regeneration or abstention after some tokens is
    announced by its trace step; the final ``Answer`` is authoritative.

    Args:
        question: The question.
        data_dir: The index folder.
        thread_id: Conversation memory id, as for :func:`ask`.
        **context_overrides: Knobs of :class:`~graph.context.Context`.

    Yields:
        ``(kind, payload)`` pairs.
    """
    app, config, context, cleaned = _prepare(question, data_dir, thread_id, context_overrides)
    yield from stream_run(app, cleaned, config, context)


def stream_run(app: CompiledStateGraph[Any, Any, Any, Any], question: CleanQuestion, config: RunnableConfig,
               context: Context, **stream_options: Any) -> Iterator[tuple[StreamKind, Any]]:
    """Run a compiled workflow on a cleaned question, yielding what :func:`stream_ask` yields.

    For callers that compile ``builder`` with their own checkpointer (the
    ``selfcrag chat`` command keeps conversations in SQLite).

    Args:
        app: The compiled graph.
        question: From :func:`prepare_question`.
        config: The run's configuration (``thread_id``, ``recursion_limit``).
        context: The run's context.
        **stream_options: More options of ``app.stream`` (e.g. ``durability="exit"``).

    Yields:
        ``(kind, payload)`` pairs, ending with ``("answer", Answer)``.
    """
    filters: dict[str, ThinkFilter] = {}
    final: dict[str, Any] = {}
    # With a list of stream modes, LangGraph yields (mode, data) pairs.
    events = cast(Iterator[tuple[str, Any]], app.stream({"question": question.text}, config, context=context,
                                                        stream_mode=["messages", "custom", "values"],
                                                        **stream_options))
    for mode, data in events:
        if mode == "messages":
            chunk, metadata = data
            if isinstance(chunk, AIMessageChunk) and metadata.get("langgraph_node") in _ANSWER_NODES:
                think = filters.setdefault(chunk.id or "", ThinkFilter())
                if text := think.feed(chunk.text):
                    yield "token", text
        elif mode == "custom" and isinstance(data, dict):
            if data.get("type") == "token":
                yield "token", data["text"]
            elif data.get("type") in ("trace", "retract"):
                yield data["type"], {k: v for k, v in data.items() if k != "type"}
        elif mode == "values":
            final = data
    yield "answer", Answer.from_state(final, question)
