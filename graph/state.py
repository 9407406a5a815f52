"""The state of one run: what the workflow found, decided and answered.

Everything in the state is plain JSON-ready data (dicts, lists, strings,
numbers), so a checkpointer can store it and LangGraph Studio can show it.
Per-question fields are reset by ``decide_retrieval`` at the start of each
turn, so a thread with memory keeps only its ``messages`` across questions.
"""

from __future__ import annotations

import hashlib
import operator
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, TypedDict

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages

CorrectiveAction = Literal["correct", "ambiguous", "incorrect"]
SupportVerdict = Literal["fully", "partially", "unsupported"]

# One step of the route: {"step": node name, "decision": ..., plus scores and counters}.
TraceStep = dict[str, Any]


class Passage(TypedDict):
    """A retrieved context as the graph keeps it.

    ``id`` is a hash of the text, so the same passage found by two searches is
    kept once. ``first``/``last`` are sentence positions in the document (from
    0, inclusive); ``hit_positions`` are the sentences the search matched.
    """

    id: str
    doc_id: str
    source: str
    title: str
    section: list[str]
    first: int
    last: int
    text: str
    score: float
    dense_score: float | None
    bm25_score: float | None
    dense_rank: int | None
    bm25_rank: int | None
    hit_positions: list[int]
    query: str


class Strip(TypedDict):
    """One knowledge strip (a sentence) of a kept passage, with its relevance score.

    ``leans_on`` lists the positions of the sentences it needs to be
    understood (a list item's lead-in, a clause's continuation).
    """

    position: int
    kind: str
    text: str
    score: float
    leans_on: list[int]


class KnowledgeItem(TypedDict):
    """Kept strips of one passage, recomposed in document order: what [n] cites."""

    n: int
    doc_id: str
    source: str
    title: str
    section: list[str]
    first: int
    last: int
    text: str
    score: float
    strips: list[Strip]


class Citation(TypedDict):
    """A source of the answer: where it stands and the quoted text."""

    n: int
    source: str
    title: str
    section: list[str]
    first: int
    last: int
    quote: str


def passage_id(text: str) -> str:
    """Hash a passage's text: equal text, equal id.

    Args:
        text: The passage text.

    Returns:
        16 hex digits of its SHA-256.
    """
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


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
    contexts: Annotated[list[Passage], merge_passages] = field(default_factory=list)
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
    """When abstaining: the nearest passages found, for the reader to check."""
    abstained: bool = False
    trace: Annotated[list[TraceStep], operator.add] = field(default_factory=list)
