"""The Python API: ``ask`` a question, or ``stream_ask`` it, and get a typed answer.

>>> from selfcrag import ask
>>> result = ask("How long are application logs kept?", data_dir=".selfcrag/demo")
>>> result.answer, result.citations[0].source, result.abstained

``graph.invoke`` / ``graph.stream`` (``from selfcrag.graph.builder import graph``)
work as with any LangGraph graph; these functions add a typed result and token
streaming in both modes (chat model or offline). A :class:`Session` keeps the
index open across questions and, given a ``thread_id``, remembers earlier turns.

The question is cleaned before the run (:mod:`graph.question`): control
characters removed, a very long question cut with a note in the answer. A
step whose chat model failed falls back to its offline method; the answer
says so in its ``notes`` and ``degraded`` is set.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.state import CompiledStateGraph

from selfcrag.graph.builder import builder, graph
from selfcrag.graph.checkpoints import CheckpointSerializer
from selfcrag.graph.context import Context, context_from_options
from selfcrag.graph.question import CleanQuestion, prepare_question
from selfcrag.graph.resources import Resources
from selfcrag.graph.state import Status, TraceStep
from selfcrag.index.tokenize import detect_language
from selfcrag.prompts import replies
from selfcrag.spans import Citation as CitationDict
from selfcrag.spans import PlaceRange

# LangChain's chat model classes (with the tracers they pull in) are imported where a chat model is built.
if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

StreamKind = Literal["token", "retract", "trace", "answer"]


@dataclass(frozen=True)
class Citation:
    """A source the answer cites: a read-only view of a :class:`selfcrag.spans.Citation` of the state.

    The state keeps citations as JSON-ready dicts (for checkpointers and
    LangGraph Studio); an :class:`Answer` hands them to Python code as these
    frozen objects, with the same fields and ``section`` as a tuple.
    ``tests/test_architecture.py`` keeps the two field sets equal.

    Attributes:
        n: The marker number in the answer (``[n]``).
        source: Path of the source file (absolute: the document's id).
        path: The file as people find it: relative to the folder ingested (``docs/a/README.md``).
        also: The other files of the same text, named the same way: identical copies, indexed once under ``path``.
        place: The pages, slides, sheet rows or lines it stands on (see :class:`selfcrag.spans.PlaceRange`);
            None for a format without them (HTML), or from an index written before they were kept.
        where: The place said for people: ``p. 6 (printed 3)``, ``slide 4``, ``sheet Releases, row 12``,
            ``lines 12–14``; empty without a place.
        link: A form to open: ``docs/guide.pdf#page=6``, ``docs/guide.md:12``, or the path alone.
        title: Document title.
        section: Heading path.
        first: First sentence of the quoted range (position in the document, from 0).
        last: Last sentence of the range (inclusive).
        quote: The quoted text.
    """

    n: int
    source: str
    path: str
    also: tuple[str, ...]
    place: PlaceRange | None = field(hash=False)  # a dict: the citation stays hashable by its other fields
    where: str
    link: str
    title: str
    section: tuple[str, ...]
    first: int
    last: int
    quote: str

    @classmethod
    def from_state(cls, data: CitationDict) -> Citation:
        """Build from the state's JSON-ready form (a state kept from before places were: none shown)."""
        return cls(
            n=data["n"],
            source=data["source"],
            path=data.get("path") or Path(data["source"]).name,
            also=tuple(data.get("also", ())),
            place=data.get("place"),
            where=data.get("where", ""),
            link=data.get("link") or data.get("path") or Path(data["source"]).name,
            title=data["title"],
            section=tuple(data["section"]),
            first=data["first"],
            last=data["last"],
            quote=data["quote"],
        )


@dataclass(frozen=True)
class Answer:
    """The outcome of a question.

    Attributes:
        question: The question asked.
        answer: The answer text, with ``[n]`` markers; or the abstention.
        citations: The sources the answer cites.
        trace: The route taken: one dict per step (``step``, ``decision``, scores, counters).
        abstained: True when no answer was given: the answer was not confirmed (closest evidence) or nothing
            relevant was found.
        status: How the question ended: ``answered`` (from the documents, checked), ``closest_evidence`` (not
            confirmed: the best sentences found are shown, cited), ``not_found`` (nothing relevant), or
            ``direct`` (a reply that needed no documents: a greeting, arithmetic, the conversation itself).
        closest_sources: When nothing relevant was found, the nearest passages anyway.
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
    status: Status = "answered"

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
            status=values.get("status") or ("not_found" if values.get("abstained") else "answered"),
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
    notes += [
        replies.FELL_BACK[language].format(step=s["step"], reason=s["fallback"]) for s in trace if "fallback" in s
    ]
    # What a step learnt about the endpoint (a structured-output mode it refuses), said once.
    notes += [str(s["note"]) for s in trace if "note" in s]
    return notes


def recursion_limit(context: Context) -> int:
    """Steps the longest possible run takes, plus slack: the bound is the counters, not this."""
    return 8 + 3 * (context.max_requery + 1) + 2 * (context.max_regenerate + 1)


class Session:
    """Questions to one knowledge base, with the index, models and conversation memory they share.

    A session opens the index on its first question and closes it when the
    session closes; conversations (``thread_id``) live as long as the session.

    >>> with Session(data_dir=".selfcrag/demo") as session:
    ...     first = session.ask("How long are application logs kept?", thread_id="t1")
    ...     follow_up = session.ask("And audit logs?", thread_id="t1")

    Args:
        context: The run settings to start from (default: the environment and the defaults).
        data_dir: The index folder (default: ``$SELFCRAG_DATA_DIR`` or ``.selfcrag``).
        chat_model: A chat model to use instead of one built from ``OPENAI_*``
            (tests; applications that build their own).
        checkpointer: Where conversations are kept (default: in this session's memory).
        **context_options: Knobs of :class:`~selfcrag.graph.context.Context`, e.g.
            ``top_k=3``, ``answerer="offline"``; a knob given here beats the environment.

    Raises:
        UserError: An unknown option.
    """

    def __init__(
        self,
        context: Context | None = None,
        *,
        data_dir: str | PathLike[str] | None = None,
        chat_model: BaseChatModel | None = None,
        checkpointer: BaseCheckpointSaver[Any] | None = None,
        **context_options: Any,
    ) -> None:
        self.context = context_from_options(context, data_dir=data_dir, **context_options)
        self.resources = Resources(chat_model=chat_model)
        self.checkpointer = checkpointer if checkpointer is not None else InMemorySaver(serde=CheckpointSerializer())
        # The module-level graph stays checkpointer-free for `langgraph dev`; this one remembers.
        self.app = builder.compile(checkpointer=self.checkpointer, name="selfcrag")

    def _run(
        self, question: str, thread_id: str | None, overrides: dict[str, Any]
    ) -> tuple[CompiledStateGraph[Any, Any, Any, Any], RunnableConfig, Context, CleanQuestion]:
        cleaned = prepare_question(question)
        context = context_from_options(self.context, **overrides) if overrides else self.context
        config: RunnableConfig = {"recursion_limit": recursion_limit(context)}
        if thread_id is None:
            return graph, config, context, cleaned
        config["configurable"] = {"thread_id": thread_id}
        return self.app, config, context, cleaned

    def ask(self, question: str, *, thread_id: str | None = None, **context_overrides: Any) -> Answer:
        """Answer a question, checking the answer against its sources.

        Args:
            question: The question, Chinese or English.
            thread_id: Remember the conversation under this id, so later
                questions can refer to it.
            **context_overrides: Knobs of :class:`~selfcrag.graph.context.Context` for this question.

        Returns:
            The answer, its citations, the route taken and whether it abstained.

        Raises:
            UserError: An empty question, an unknown option, or no index in the data directory.
        """
        app, config, context, cleaned = self._run(question, thread_id, context_overrides)
        with self.resources.active():
            values = app.invoke({"question": cleaned.text}, config, context=context)
        return Answer.from_state(values, cleaned)

    def stream_ask(
        self, question: str, *, thread_id: str | None = None, **context_overrides: Any
    ) -> Iterator[tuple[StreamKind, Any]]:
        """Answer a question, yielding tokens and the route as they happen (see :func:`stream_ask`).

        Args:
            question: The question.
            thread_id: Conversation memory id, as for :meth:`ask`.
            **context_overrides: Knobs of :class:`~selfcrag.graph.context.Context` for this question.

        Yields:
            ``(kind, payload)`` pairs, ending with ``("answer", Answer)``.
        """
        app, config, context, cleaned = self._run(question, thread_id, context_overrides)
        yield from self.stream_run(app, cleaned, config, context)

    def stream_run(
        self,
        app: CompiledStateGraph[Any, Any, Any, Any],
        question: CleanQuestion,
        config: RunnableConfig,
        context: Context,
        **stream_options: Any,
    ) -> Iterator[tuple[StreamKind, Any]]:
        """Run a compiled workflow with this session's resources (see :func:`stream_run`).

        Args:
            app: The compiled graph.
            question: From :func:`prepare_question`.
            config: The run's configuration.
            context: The run's context.
            **stream_options: More options of ``app.stream``.

        Yields:
            ``(kind, payload)`` pairs, ending with ``("answer", Answer)``.
        """
        events = stream_run(app, question, config, context, **stream_options)
        while True:
            # The resources are active while the graph runs, i.e. inside each step of the generator.
            with self.resources.active():
                event = next(events, None)
            if event is None:
                return
            yield event

    def forget(self, thread_id: str) -> None:
        """Drop a conversation from the session's memory.

        Args:
            thread_id: The conversation.
        """
        self.checkpointer.delete_thread(thread_id)

    def close(self) -> None:
        """Close the index and everything else the session opened."""
        self.resources.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def ask(
    question: str,
    *,
    data_dir: str | PathLike[str] | None = None,
    chat_model: BaseChatModel | None = None,
    **context_options: Any,
) -> Answer:
    """Answer one question from the knowledge base, checking the answer against its sources.

    Opens the index, answers, and closes it again: for several questions, or a
    conversation, use a :class:`Session`.

    Args:
        question: The question, Chinese or English.
        data_dir: The index folder (default: ``$SELFCRAG_DATA_DIR`` or ``.selfcrag``).
        chat_model: A chat model to use instead of one built from ``OPENAI_*``.
        **context_options: Knobs of :class:`~selfcrag.graph.context.Context`, e.g.
            ``top_k=3``, ``answerer="offline"``, ``max_requery=1``.

    Returns:
        The answer, its citations, the route taken and whether it abstained.

    Raises:
        UserError: An empty question, an unknown option, or no index in ``data_dir``.
    """
    with Session(data_dir=data_dir, chat_model=chat_model, **context_options) as session:
        return session.ask(question)


def stream_ask(
    question: str,
    *,
    data_dir: str | PathLike[str] | None = None,
    chat_model: BaseChatModel | None = None,
    **context_options: Any,
) -> Iterator[tuple[StreamKind, Any]]:
    """Answer one question, yielding the answer's tokens and the route as they happen.

    Yields ``("token", text)`` for pieces of each answer attempt (the chat
    model's tokens with ``<think>`` blocks removed, or the offline answer's
    sentences), ``("trace", step)`` after each step, and finally
    ``("answer", Answer)``. Tokens are a draft: the support check reads the
    draft after it has streamed. ``("retract", {"step", "reason"})``
    withdraws the tokens of the current attempt: its reply failed (a dropped
    stream, an empty reply, the wrong language) and another attempt or the
    offline answer follows, or the support check rejected the draft (step
    ``check_support``) and a regeneration or the closest evidence follows,
    or cut it to its supported sentences. Tokens no ``retract`` follows are
    the final answer as written. The final ``("answer", Answer)`` is
    authoritative: its ``status`` says whether it is an answer
    (``answered``, ``direct``) or not (``closest_evidence``,
    ``not_found``), and its ``answer`` is the text to show, which a partly
    supported draft was cut to.

    Args:
        question: The question.
        data_dir: The index folder.
        chat_model: A chat model to use instead of one built from ``OPENAI_*``.
        **context_options: Knobs of :class:`~selfcrag.graph.context.Context`.

    Yields:
        ``(kind, payload)`` pairs.
    """
    with Session(data_dir=data_dir, chat_model=chat_model, **context_options) as session:
        yield from session.stream_ask(question)


def stream_run(
    app: CompiledStateGraph[Any, Any, Any, Any],
    question: CleanQuestion,
    config: RunnableConfig,
    context: Context,
    **stream_options: Any,
) -> Iterator[tuple[StreamKind, Any]]:
    """Run a compiled workflow on a cleaned question, yielding what :func:`stream_ask` yields.

    The caller makes its :class:`~selfcrag.graph.resources.Resources` active
    (:meth:`Session.stream_run` does).

    Args:
        app: The compiled graph.
        question: From :func:`prepare_question`.
        config: The run's configuration (``thread_id``, ``recursion_limit``).
        context: The run's context.
        **stream_options: More options of ``app.stream`` (e.g. ``durability="exit"``).

    Yields:
        ``(kind, payload)`` pairs, ending with ``("answer", Answer)``.
    """
    final: dict[str, Any] = {}
    # With a list of stream modes, LangGraph yields (mode, data) pairs. Answer tokens come as custom events, after
    # the answer's checks (graph.chat_step.text_step); the chat model's raw tokens are never streamed.
    events = cast(
        Iterator[tuple[str, Any]],
        app.stream(
            {"question": question.text},
            config,
            context=context,
            stream_mode=["custom", "values"],
            **stream_options,
        ),
    )
    for mode, data in events:
        if mode == "custom" and isinstance(data, dict):
            if data.get("type") == "token":
                yield "token", data["text"]
            elif data.get("type") in ("trace", "retract"):
                yield data["type"], {k: v for k, v in data.items() if k != "type"}
        elif mode == "values":
            final = data
    yield "answer", Answer.from_state(final, question)
