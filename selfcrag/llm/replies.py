"""The structured replies the workflow asks the chat model for.

Every field is required (no defaults), as OpenAI's strict structured outputs
demand; the prompts say what to put when there is nothing to say.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class RetrievalDecision(BaseModel):
    """Whether answering the message needs the knowledge base (Self-RAG's Retrieve)."""

    retrieve: bool = Field(
        description="false only for greetings, small talk, arithmetic and questions about "
        "this conversation; true otherwise"
    )


class PassageGrade(BaseModel):
    """How well one passage answers the question."""

    passage: int = Field(description="the passage number, from 1")
    relevance: Literal["relevant", "partial", "irrelevant"]


class PassageGrades(BaseModel):
    """One grade per passage (CRAG's retrieval evaluator, all passages in one call)."""

    grades: list[PassageGrade]


class RewrittenQuery(BaseModel):
    """A search query for another retrieval."""

    query: str


class SupportJudgement(BaseModel):
    """Whether the answer is supported by its passages (Self-RAG's ISSUP)."""

    verdict: Literal["fully", "partially", "unsupported"]
    unsupported_sentences: list[int] = Field(
        description="numbers of the answer sentences the passages do not support; [] when all are supported"
    )
    missing: str = Field(description='what the question asks that the passages do not say; "" when nothing')
