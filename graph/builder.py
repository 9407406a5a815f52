"""The workflow's wiring: nodes, routers and edges.

decide_retrieval ─┬─ answer_directly ─ END (or, when only the model chose it and failed, on to retrieve)
                  └─ retrieve ─ grade_documents ─┬─ refine_knowledge ─┬─ generate ─ check_support ─┬─ END
                        ▲                        │                    │      ▲                     │
                        └──── rewrite_query ◄────┴────────────────────┘      └─ (unsupported) ─────┤
                                                 └── abstain ◄──────────────── (unconfirmed) ──────┘
                                                     (closest evidence, or not found)

In a thread with earlier questions, decide_retrieval ─ condense_question ─ retrieve: the question is made
standalone ("what about the second one?" becomes what it refers to) before it is searched.

Every loop is bounded by a counter in the state (``requery_count``,
``regenerate_count``) against a knob of the context (``max_requery``,
``max_regenerate``), so no answer of any model can run the graph into
LangGraph's recursion limit. With the default knobs a run takes at most 16
steps (17 with condense_question): a failed direct answer adds one.

This file is loaded by path by ``langgraph dev`` (see langgraph.json), so its
imports are absolute.
"""

from __future__ import annotations

from typing import Literal

from langchain_core.messages import HumanMessage
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from selfcrag.graph.context import Context
from selfcrag.graph.state import InputState, State
from selfcrag.nodes import (
    abstain,
    answer_directly,
    check_support,
    decide_retrieval,
    generate,
    grade_documents,
    refine_knowledge,
    retrieve,
    rewrite_query,
)
from selfcrag.nodes.condense_question import condense_question


def route_question(state: State) -> Literal["condense_question", "retrieve", "answer_directly"]:
    """Retrieve unless the message needs no knowledge base; first make it standalone if the thread has history."""
    if state.route != "retrieve":
        return "answer_directly"
    earlier = any(isinstance(m, HumanMessage) for m in state.messages[:-1])
    return "condense_question" if earlier else "retrieve"


def route_grade(state: State, runtime: Runtime[Context]) -> Literal["refine_knowledge", "rewrite_query", "abstain"]:
    """CRAG's action: refine what is usable; rewrite the query when nothing is; give up when out of rewrites."""
    if state.action != "incorrect":
        return "refine_knowledge"
    return "rewrite_query" if state.requery_count < runtime.context.max_requery else "abstain"


def route_knowledge(state: State, runtime: Runtime[Context]) -> Literal["generate", "rewrite_query", "abstain"]:
    """Answer from the kept knowledge, unless an Ambiguous grade kept too little to answer from."""
    context = runtime.context
    kept = sum(s["score"] >= context.strip_threshold for k in state.knowledge for s in k["strips"])
    can_requery = state.requery_count < context.max_requery
    if state.action == "ambiguous" and kept < context.min_kept_strips and can_requery:
        return "rewrite_query"
    if not state.knowledge:
        return "rewrite_query" if can_requery else "abstain"
    return "generate"


def route_support(state: State, runtime: Runtime[Context]) -> Literal["generate", "abstain", "__end__"]:
    """Accept a (partly) supported answer; regenerate an unsupported one while allowed, then abstain.

    An unconfirmed one (offline: quoted, but on weak evidence) is shown as the closest evidence at once: a
    regeneration would quote the same best sentence.
    """
    if state.support == "unconfirmed":
        return "abstain"
    if state.support != "unsupported":
        return "__end__"
    return "generate" if state.regenerate_count < runtime.context.max_regenerate else "abstain"


builder = StateGraph(State, input_schema=InputState, context_schema=Context)

# Self-RAG's first decision: does this message need the knowledge base at all?
builder.add_node(decide_retrieval)
builder.add_node(answer_directly)
builder.add_edge(START, "decide_retrieval")
builder.add_conditional_edges("decide_retrieval", route_question)
builder.add_edge("answer_directly", END)

# A follow-up ("what about the second one?") is searched as the standalone question it stands for.
builder.add_node(condense_question)
builder.add_edge("condense_question", "retrieve")

# CRAG: retrieve, evaluate, then refine or rewrite and retrieve again.
builder.add_node(retrieve)
builder.add_node(grade_documents)
builder.add_node(refine_knowledge)
builder.add_node(rewrite_query)
builder.add_edge("retrieve", "grade_documents")
builder.add_conditional_edges("grade_documents", route_grade)
builder.add_conditional_edges("refine_knowledge", route_knowledge)
builder.add_edge("rewrite_query", "retrieve")

# Self-RAG's critique: answer, check the answer against its sources, regenerate or abstain.
builder.add_node(generate)
builder.add_node(check_support)
builder.add_node(abstain)
builder.add_edge("generate", "check_support")
builder.add_conditional_edges("check_support", route_support)
builder.add_edge("abstain", END)

graph = builder.compile(name="selfcrag")
