"""refine_knowledge: decompose kept passages into strips, keep the relevant ones, recompose (CRAG)."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from selfcrag.cite.markers import defuse_markers
from selfcrag.graph.context import Context
from selfcrag.graph.resources import current_resources
from selfcrag.graph.state import State
from selfcrag.graph.trace import record
from selfcrag.heuristics.answerer import asks_for_list
from selfcrag.heuristics.evaluator import StripSignals, score_strip, scored_strip
from selfcrag.heuristics.strips import companions, passage_strips, recompose
from selfcrag.index.points import StoredSentence
from selfcrag.spans import KnowledgeItem, join_places, located

# Strips handed to the answer step at most, so a long passage cannot crowd out the rest.
MAX_STRIPS = 12


def refine_knowledge(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Keep the relevant sentences of the passages that passed grading.

    A passage graded Correct (at least ``upper_threshold``) is used whole:
    CRAG refines what is only Ambiguous, and a sentence window is retrieved
    so that the answer sees its neighbours. Of the other passages, strips
    scoring at least ``strip_threshold`` are kept, with the sentences they
    lean on; when the grade was Correct but no strip passes, the best strip
    is kept anyway. Kept strips are recomposed per passage, in document
    order, into numbered knowledge items. A document's own ``[n]`` becomes
    ``［n］``: only the answer's markers cite.

    Args:
        state: The question, passages and grades.
        runtime: Its context (thresholds).

    Returns:
        The knowledge items.
    """
    context = runtime.context
    retriever = current_resources().retriever(context)
    index = retriever.index
    evaluator = current_resources().evaluator(context)
    profile = evaluator.profile(state.question)
    passages = sorted(
        (p for p in state.passages if state.grades.get(p["id"], 0.0) >= context.lower_threshold),
        key=lambda p: -state.grades[p["id"]],
    )
    scored: list[tuple[float, int, StoredSentence]] = []
    signals_of: dict[tuple[str, int], StripSignals] = {}
    leans: dict[tuple[str, int], list[StoredSentence]] = {}
    strips_of: list[list[StoredSentence]] = []
    for rank, passage in enumerate(passages):
        strips = passage_strips(index, passage["doc_id"], passage["first"], passage["last"])
        strips_of.append(strips)
        for strip in strips:
            leans[(strip.doc_id, strip.position)] = companions(index, strip)
        extra = {(c.doc_id, c.position): c for s in strips for c in leans[(s.doc_id, s.position)]}
        everything = [*strips, *(c for k, c in extra.items() if k not in {(s.doc_id, s.position) for s in strips})]
        signals = evaluator.measure_strips(profile, everything)
        for strip, measured in zip(everything, signals, strict=True):
            scored.append((score_strip(measured, strip.kind), rank, strip))
            signals_of[(strip.doc_id, strip.position)] = measured
    score_of = {(s.doc_id, s.position): sc for sc, _, s in scored}
    whole = {rank for rank, p in enumerate(passages) if state.grades[p["id"]] >= context.upper_threshold}
    ranked = sorted(((sc, r, s) for sc, r, s in scored if s.kind != "heading"), key=lambda x: (-x[0], x[1]))
    primary = [x for x in ranked if x[1] not in whole and x[0] >= context.strip_threshold][:MAX_STRIPS]
    kept_count = len(primary)
    if not primary and not whole and ranked and state.action == "correct":
        primary = ranked[:1]
    chosen: dict[tuple[str, int], tuple[int, StoredSentence]] = {
        (s.doc_id, s.position): (rank, s) for rank in sorted(whole, reverse=True) for s in strips_of[rank]
    }
    listing = asks_for_list(state.question)
    for _, rank, strip in primary:
        needs = leans.get((strip.doc_id, strip.position), [])
        if listing:
            # A list question wants the whole list: an item's lead-in brings along every item.
            needs = [*needs, *(item for lead_in in needs for item in companions(index, lead_in))]
        for s in [strip, *needs]:
            current = chosen.get((s.doc_id, s.position))
            if current is None or rank < current[0]:
                chosen[(s.doc_id, s.position)] = (rank, s)
    knowledge: list[KnowledgeItem] = []
    for rank in sorted({r for r, _ in chosen.values()}):
        strips = sorted((s for r, s in chosen.values() if r == rank), key=lambda s: s.position)
        passage = passages[rank]
        knowledge.append(
            KnowledgeItem(
                n=len(knowledge) + 1,
                doc_id=passage["doc_id"],
                source=passage["source"],
                **located(passage["path"], join_places([s.place for s in strips]), passage["also"]),
                title=passage["title"],
                section=list(strips[0].section),
                first=strips[0].position,
                last=strips[-1].position,
                text=defuse_markers(recompose(strips)),
                score=round(max(score_of[(s.doc_id, s.position)] for s in strips), 4),
                strips=[
                    scored_strip(
                        s,
                        signals_of[(s.doc_id, s.position)],
                        [c.position for c in leans.get((s.doc_id, s.position), [])],
                    )
                    for s in strips
                ],
            )
        )
    shown = [
        {"n": k["n"], "source": k["source"], "sentences": [k["first"], k["last"]], "score": k["score"]}
        for k in knowledge
    ]
    return {
        "knowledge": knowledge,
        "trace": record(
            runtime,
            "refine_knowledge",
            f"kept {len(whole)} passages whole, {kept_count} strips of the others",
            action=state.action,
            passages=len(passages),
            items=shown,
        ),
    }
