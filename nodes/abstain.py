"""abstain: give no answer, and show what was found: the closest evidence, or that nothing relevant was found.

Two outcomes, told apart by what grading found:

* some passage was graded at least ``evidence_threshold``: the answer could not be confirmed, so the reader gets
  the closest evidence itself, the best sentences with their neighbours, quoted and cited under a plain "Not
  confirmed" header (``closest_evidence``). Offline they are the best of every passage retrieved: the evaluator's
  passage grade misses paraphrased answers that its sentence ranking finds. With a chat model, they come from
  the passages it graded relevant or partly relevant;
* nothing was, or (offline) nothing retrieved is about the question: no passage's surroundings come near its
  meaning and no sentence does (:meth:`~selfcrag.heuristics.evaluator.OfflineEvaluator.topic`, thresholds
  ``topic_closeness``, ``topic_similarity`` and ``topic_distinct``). The knowledge base does not hold the answer,
  and the nearest passages are named for the reader to check (``not_found``). An offline grade cannot tell this
  apart: the best passage of any search stands first among what it found, and a paraphrased answer is often graded
  incorrect.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage
from langgraph.runtime import Runtime

from selfcrag.cite.markers import CitedSentence, defuse_markers, join_cited, locate
from selfcrag.graph.context import Context
from selfcrag.graph.resources import current_resources
from selfcrag.graph.state import State
from selfcrag.graph.trace import record
from selfcrag.heuristics.answerer import table_excerpt
from selfcrag.heuristics.evaluator import StripSignals, Topic, scored_strip
from selfcrag.heuristics.evidence import closest_evidence
from selfcrag.heuristics.excerpts import Excerpt, quotes
from selfcrag.heuristics.strips import faq_answer_after, passage_strips
from selfcrag.index.points import join_sentences
from selfcrag.index.tokenize import detect_language
from selfcrag.nodes.grade_documents import corrective_action
from selfcrag.prompts import replies
from selfcrag.spans import Citation, KnowledgeItem, Passage, located

CLOSEST_SHOWN = 3


def abstain(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Decline to answer: show the closest evidence when relevant passages were found, else the nearest sources.

    Args:
        state: The question, passages, grades and the knowledge kept.
        runtime: Its context.

    Returns:
        The answer text, its status, ``abstained`` set, and the evidence's citations (or the nearest sources).
    """
    context = runtime.context
    language = detect_language(state.question)
    reason = (
        "unconfirmed"
        if state.support == "unconfirmed"
        else "unsupported"
        if state.support == "unsupported"
        else "no knowledge kept"
        if state.action != "incorrect"
        else "incorrect"
    )
    relevant = [p for p in state.passages if state.grades.get(p["id"], 0.0) >= context.evidence_threshold]
    evidence: list[Excerpt] = []
    topic: Topic | None = None
    if relevant:
        resources = current_resources()
        profile = resources.evaluator(context).profile(state.question)
        evaluator = resources.evaluator(context)
        offline = resources.chat_model(context) is None
        if offline:
            # An offline grade ranks a passage among what its search found, and a search always finds something:
            # whether any of it is about the question is measured apart, on everything retrieved.
            topic = evaluator.topic(profile, state.passages, state.grades)
        if topic is not None and not _on_topic(topic, context):
            reason = "off topic"
        else:
            weighed, rewritten = _evidence_passages(state, state.passages if offline else relevant, runtime, offline)
            items = _scored_items(state, weighed, runtime)
            evidence = closest_evidence(
                items,
                profile,
                max_sentences=context.evidence_sentences,
                max_chars=context.evidence_chars,
                first=_table_quoted_by_the_draft(state),
                later={item["n"] for item, passage in zip(items, weighed, strict=True) if passage["id"] in rewritten},
                score_parts=lambda parts: evaluator.score_texts(profile, parts),
            )
    details: dict[str, Any] = {"requery": state.requery_count, "regenerate": state.regenerate_count}
    if topic is not None:
        details["topic"] = {
            "document": round(topic.document, 4),
            "sentence": round(topic.sentence, 4),
            "distinct": round(topic.distinct, 4),
        }
    if evidence:
        # A table is shown as its header and the rows that match the question, one row a line, cited by those rows.
        evidence = [
            Excerpt(e.item, e.strips, cut=table_excerpt(e.strips[0], profile)) if e.strips[0]["kind"] == "table" else e
            for e in evidence
        ]
        citations = [_cited(i, e) for i, e in enumerate(evidence, 1)]
        # One excerpt a line: they are separate findings, not one answer.
        shown = join_cited([CitedSentence(e.text, (i,)) for i, e in enumerate(evidence, 1)], "\n")
        answer = f"{replies.NOT_CONFIRMED[language]}\n{shown}"
        return {
            "answer": answer,
            "status": "closest_evidence",
            "abstained": True,
            "citations": citations,
            "closest_sources": [],
            "messages": [AIMessage(answer)],
            "trace": record(
                runtime,
                "abstain",
                reason,
                status="closest_evidence",
                evidence=[
                    {"source": c["source"], "sentences": [c["first"], c["last"]], "grade": e.item["score"]}
                    for c, e in zip(citations, evidence, strict=True)
                ],
                # The grade of what is shown, for the route: the best passage graded may not be among it.
                graded=corrective_action(
                    (e.item["score"] for e in evidence), context.upper_threshold, context.lower_threshold
                ),
                **details,
            ),
        }
    closest = _nearest_sources(state)
    lines = [replies.ABSTAIN[language]]
    if closest:
        lines.append(replies.CLOSEST_SOURCES[language])
        # Two passages of one section at one anchor (an HTML page's "#summary") read alike: named once.
        lines.extend(
            dict.fromkeys(
                "- "
                + locate(
                    c["path"], c["section"], c["first"], c["last"], title=c["title"], where=c["where"], also=c["also"]
                )
                for c in closest
            )
        )
    else:
        lines.append(replies.NO_SOURCES[language])
    answer = "\n".join(lines)
    return {
        "answer": answer,
        "status": "not_found",
        "abstained": True,
        "citations": [],
        "closest_sources": closest,
        "messages": [AIMessage(answer)],
        "trace": record(
            runtime, "abstain", reason, status="not_found", closest=[c["source"] for c in closest], **details
        ),
    }


def _on_topic(topic: Topic, context: Context) -> bool:
    """Tell whether what was retrieved is about the question: a passage whose surroundings are, or a sentence.

    Both, not either alone: a paraphrased question shares few words and little sentence-level meaning with its
    answer, but its document is about it; an unrelated question's nearest sentence can come as close as that.
    A sentence counts only when it comes near the question also once what it has in common with every question is
    taken off (``topic_distinct``): a licence clause or a copyright line comes near anything.
    """
    near = topic.sentence >= context.topic_similarity and topic.distinct >= context.topic_distinct
    return topic.document >= context.topic_closeness or near


def _evidence_passages(
    state: State, candidates: list[Passage], runtime: Runtime[Context], offline: bool
) -> tuple[list[Passage], set[str]]:
    """The passages the evidence is drawn from, the best graded first, and the ids of those only a rewrite found.

    The person asked the question, not its rewrites: a passage only a rewritten query found is kept when it
    passes the evidence threshold on the question itself. Offline it is graded again as if the question's own
    search had found it after its own passages, without its rewrite's standing or its retrievers' agreement
    ("`sniffio` - Async library autodetection." passed on the standing a rewrite gave it). A chat model graded
    every passage against the question already.
    """
    asked = state.queries[0] if state.queries else state.question
    own = [p for p in candidates if p["query"] == asked]
    rewritten = [p for p in candidates if p["query"] != asked]
    if offline and rewritten:
        evaluator = current_resources().evaluator(runtime.context)
        profile = evaluator.profile(state.question)
        after_own = sum(p["query"] == asked for p in state.passages) + 1
        rewritten = [
            p
            for p in rewritten
            if evaluator.score_passage(profile, _unranked(p), after_own) >= runtime.context.evidence_threshold
        ]
    kept = sorted([*own, *rewritten], key=lambda p: -state.grades.get(p["id"], 0.0))
    return kept, {p["id"] for p in rewritten}


def _unranked(passage: Passage) -> Passage:
    """A passage as if no retriever of the question's own search had ranked it."""
    return {**passage, "dense_rank": None, "bm25_rank": None}


def _scored_items(state: State, passages: list[Passage], runtime: Runtime[Context]) -> list[KnowledgeItem]:
    """Passages as knowledge items, in their order, every sentence scored.

    All their sentences, not only what refinement kept: a paraphrased question's answer is often a sentence the
    evaluator scored low, and the reader, not the evaluator, is to judge the evidence. A passage holding a FAQ's
    question is read on to its answer: the lines after the question, up to the next one, within the budget.
    """
    resources = current_resources()
    index = resources.retriever(runtime.context).index
    evaluator = resources.evaluator(runtime.context)
    profile = evaluator.profile(state.question)
    items: list[KnowledgeItem] = []
    # Passages of several searches overlap: each sentence is measured once.
    measured: dict[tuple[str, int], StripSignals] = {}
    for passage in passages:
        strips = passage_strips(index, passage["doc_id"], passage["first"], passage["last"])
        answer = faq_answer_after(index, strips, runtime.context.evidence_chars)
        text = passage["text"] + (strips[-1].tail + join_sentences(answer) if answer else "")
        strips = [*strips, *answer]
        new = [s for s in strips if (s.doc_id, s.position) not in measured]
        measured.update(zip(((s.doc_id, s.position) for s in new), evaluator.measure_strips(profile, new), strict=True))
        items.append(
            KnowledgeItem(
                n=len(items) + 1,
                doc_id=passage["doc_id"],
                source=passage["source"],
                **located(passage["path"], passage["place"], passage["also"]),
                title=passage["title"],
                section=list(passage["section"]),
                first=passage["first"],
                last=strips[-1].position if strips else passage["last"],
                text=defuse_markers(text),  # a document's own [n] must not pass for a citation
                score=state.grades.get(passage["id"], 0.0),
                strips=[scored_strip(s, measured[(s.doc_id, s.position)]) for s in strips],
            )
        )
    return items


def _table_quoted_by_the_draft(state: State) -> set[tuple[str, int]]:
    """The table (document id, position) an unconfirmed offline answer quoted a row of: the evidence shows it first.

    Only a table: the answerer picks its row by the key the question names. Its other sentences are not put
    first: on the calibration halves they cost the evidence's recall (zh-dev 0.966 to 0.953).
    """
    if state.support != "unconfirmed":
        return set()
    quoted = " ".join(state.draft.split())
    return {
        (item["doc_id"], strip["position"])
        for item in state.knowledge
        for strip in item["strips"]
        if strip["kind"] == "table" and quotes(quoted, strip)
    }


def _cited(n: int, excerpt: Excerpt) -> Citation:
    """The citation of one excerpt of evidence: the text shown, where it stands."""
    item = excerpt.item
    return Citation(
        n=n,
        source=item["source"],
        **located(item["path"], excerpt.place, item["also"]),
        title=item["title"],
        section=list(item["section"]),
        first=excerpt.first,
        last=excerpt.last,
        quote=excerpt.text,
    )


def _nearest_sources(state: State) -> list[Citation]:
    """The nearest passages, each stretch of a document once (rewritten queries find overlapping windows)."""
    nearest: list[Passage] = []
    for passage in sorted(state.passages, key=lambda p: -state.grades.get(p["id"], 0.0)):
        if len(nearest) < CLOSEST_SHOWN and not any(
            p["doc_id"] == passage["doc_id"] and p["first"] <= passage["last"] and passage["first"] <= p["last"]
            for p in nearest
        ):
            nearest.append(passage)
    return [
        Citation(
            n=i,
            source=p["source"],
            **located(p["path"], p["place"], p["also"]),
            title=p["title"],
            section=list(p["section"]),
            first=p["first"],
            last=p["last"],
            quote=p["text"],
        )
        for i, p in enumerate(nearest, 1)
    ]
