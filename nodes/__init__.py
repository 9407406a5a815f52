"""The workflow's nodes, one module each: ``(state, runtime) -> update``."""

from selfcrag.nodes.abstain import abstain
from selfcrag.nodes.answer_directly import answer_directly
from selfcrag.nodes.check_support import check_support
from selfcrag.nodes.decide_retrieval import decide_retrieval
from selfcrag.nodes.generate import generate
from selfcrag.nodes.grade_documents import grade_documents
from selfcrag.nodes.refine_knowledge import refine_knowledge
from selfcrag.nodes.retrieve import retrieve
from selfcrag.nodes.rewrite_query import rewrite_query

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
