"""The state of one run: what the workflow found, decided and answered.

Everything in the state is plain JSON-ready data (dicts, lists, strings,
numbers), so a checkpointer can store it and LangGraph Studio can show it.
Per-question fields are reset by ``decide_retrieval`` at the start of each
turn (:func:`fresh_turn`), so a thread with memory keeps only its ``messages`` across questions.
"""

from __future__ import annotations

import operator
import typing
from dataclasses import MISSING, dataclass, field, fields
from typing import Annotated, Any, Literal

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from langgraph.types import Overwrite

from selfcrag.spans import Citation, KnowledgeItem, Passage

CorrectiveAction = Literal["correct", "ambiguous", "incorrect"]
SupportVerdict = Literal["fully", "partially", "unsupported", "unconfirmed"]
"""Self-RAG's ISSUP verdict; ``unconfirmed``: the offline check found the answer quoted, but its evidence weak."""
Status = Literal["answered", "closest_evidence", "not_found", "direct"]
"""How a question ended, as the reader is told:

* ``answered``: an answer from the documents, checked (a chat model's passed the support check; offline, a quote
  whose evidence is strong);
* ``closest_evidence``: not confirmed, but relevant passages were found: their best sentences are shown, cited;
* ``not_found``: nothing relevant was found;
* ``direct``: a reply that needed no documents (a greeting, arithmetic, the conversation itself), not from them.
"""

# One step of the route: {"step": node name, "decision": ..., plus scores and counters}.
TraceStep = dict[str, Any]


def merge_passages(existing: list[Passage], new: list[Passage]) -> list[Passage]:
    """Append new passages, skipping any whose content hash is already present.

    Args:
        existing: Passages in the state.
        new: Passages a node returned.

    Returns:
        The union, in order of first appearance.
    """
    seen = {p["id"] for p in existing}
    merged = list(existing)
    for passage in new:
        if passage["id"] not in seen:
            seen.add(passage["id"])
            merged.append(passage)
    return merged


@dataclass(kw_only=True)
class InputState:
    """What a caller passes in: a question, or a conversation ending with one."""

    question: str = ""
    messages: Annotated[list[AnyMessage], add_messages] = field(default_factory=list)


@dataclass(kw_only=True)
class State(InputState):
    """The whole state of a run."""

    route: str = ""
    """``retrieve``, or why the question was answered directly (greeting, arithmetic, conversation)."""
    query: str = ""
    """The search query of the latest retrieval."""
    queries: list[str] = field(default_factory=list)
    """Every query searched this turn, in order."""
    passages: Annotated[list[Passage], merge_passages] = field(default_factory=list)
    """Every passage retrieved this turn, de-duplicated by content hash."""
    grades: dict[str, float] = field(default_factory=dict)
    """Evaluator score of each passage id, in [0, 1]."""
    action: CorrectiveAction | None = None
    """CRAG's action after the latest grading."""
    knowledge: list[KnowledgeItem] = field(default_factory=list)
    """Refined knowledge the answer may cite, numbered from 1."""
    draft: str = ""
    """The latest generated answer, before the support check."""
    support: SupportVerdict | None = None
    """Self-RAG's ISSUP verdict on the draft."""
    requery_count: int = 0
    regenerate_count: int = 0
    answer: str = ""
    citations: list[Citation] = field(default_factory=list)
    closest_sources: list[Citation] = field(default_factory=list)
    """When nothing relevant was found: the nearest passages, for the reader to check."""
    status: Status | None = None
    """How the question ended (see :data:`Status`)."""
    abstained: bool = False
    """No answer was given (``closest_evidence`` or ``not_found``)."""
    chat_deadline: float = 0.0
    """When this question's chat budget ends (``time.time()``); 0 until its first step sets it."""
    chat_calls: int = 0
    """Chat requests made in this question."""
    chat_failures: int = 0
    """Chat requests that failed in this question (the circuit breaker counts these)."""
    trace: Annotated[list[TraceStep], operator.add] = field(default_factory=list)


# What outlives a turn in a thread with memory; every other field starts each turn at its default.
KEPT_ACROSS_TURNS = frozenset({"question", "messages"})


def fresh_turn() -> dict[str, Any]:
    """The update that starts a turn: every per-question field of :class:`State` back at its default.

    Fields with a reducer (``passages``, ``trace``) are overwritten rather than reduced.

    Returns:
        A partial state update.
    """
    hints = typing.get_type_hints(State, include_extras=True)
    update: dict[str, Any] = {}
    for f in fields(State):
        if f.name in KEPT_ACROSS_TURNS:
            continue
        value = f.default_factory() if f.default_factory is not MISSING else f.default
        reduced = typing.get_origin(hints[f.name]) is Annotated
        update[f.name] = Overwrite(value) if reduced else value
    return update
