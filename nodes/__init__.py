"""The workflow's nodes, one module each: ``(state, runtime) -> update``."""

from nodes.abstain import abstain
from nodes.answer_directly import answer_directly
from nodes.check_support import check_support
from nodes.decide_retrieval import decide_retrieval
from nodes.generate import generate
from nodes.grade_documents import grade_documents
from nodes.refine_knowledge import refine_knowledge
from nodes.retrieve import retrieve
from nodes.rewrite_query import rewrite_query

__all__ = [
    "abstain",
    "answer_directly",
    "check_support",
    "decide_retrieval",
    "generate",
    "grade_documents",
    "refine_knowledge",
    "retrieve",
    "rewrite_query",
]
