"""abstain: give no answer, and show what was found: the closest evidence, or that nothing relevant was found.

Two outcomes, told apart by what grading found:

* some passage was graded at least ``evidence_threshold``: the answer could not be confirmed, so the reader gets
  the closest evidence itself, the best sentences with their neighbours, quoted and cited under a plain "Not
  confirmed" header (``closest_evidence``). Offline they are the best of every passage retrieved: the evaluator's
  passage grade misses paraphrased answers that its sentence ranking finds. With a chat model, they come from
  the passages it graded relevant or partly relevant;
* nothing was: the knowledge base does not hold the answer, and the nearest passages are named for the reader to
  check (``not_found``).
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
from selfcrag.heuristics.evaluator import StripSignals, scored_strip
from selfcrag.heuristics.evidence import closest_evidence
from selfcrag.heuristics.excerpts import Excerpt, quotes
from selfcrag.heuristics.strips import passage_strips
from selfcrag.index.tokenize import detect_language
from selfcrag.prompts import replies
from selfcrag.spans import Citation, KnowledgeItem, Passage, join_places, located

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
    if relevant:
        resources = current_resources()
        profile = resources.evaluator(context).profile(state.question)
        weighed = state.passages if resources.chat_model(context) is None else relevant
        evidence = closest_evidence(
            _scored_items(state, weighed, runtime),
            profile,
            max_sentences=context.evidence_sentences,
            max_chars=context.evidence_chars,
            first=_table_quoted_by_the_draft(state),
        )
    details = {"requery": state.requery_count, "regenerate": state.regenerate_count}
    if evidence:
        # A table is shown as its header and the rows that match the question, one row a line.
        texts = [
            table_excerpt(e.strips[0]["text"], profile) if e.strips[0]["kind"] == "table" else e.text for e in evidence
        ]
        citations = [_cited(i, e, text) for i, (e, text) in enumerate(zip(evidence, texts, strict=True), 1)]
        # One excerpt a line: they are separate findings, not one answer.
        shown = join_cited([CitedSentence(text, (i,)) for i, text in enumerate(texts, 1)], "\n")
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
                evidence=[{"source": c["source"], "sentences": [c["first"], c["last"]]} for c in citations],
                **details,
            ),
        }
    closest = _nearest_sources(state)
    lines = [replies.ABSTAIN[language]]
    if closest:
        lines.append(replies.CLOSEST_SOURCES[language])
        lines.extend(
            f"- {locate(c['path'], c['section'], c['first'], c['last'], title=c['title'], where=c['where'])}"
            for c in closest
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


def _scored_items(state: State, passages: list[Passage], runtime: Runtime[Context]) -> list[KnowledgeItem]:
    """Passages as knowledge items, the best graded first, every sentence scored.

    All their sentences, not only what refinement kept: a paraphrased question's answer is often a sentence the
    evaluator scored low, and the reader, not the evaluator, is to judge the evidence.
    """
    resources = current_resources()
    index = resources.retriever(runtime.context).index
    evaluator = resources.evaluator(runtime.context)
    profile = evaluator.profile(state.question)
    items: list[KnowledgeItem] = []
    # Passages of several searches overlap: each sentence is measured once.
    measured: dict[tuple[str, int], StripSignals] = {}
    for passage in sorted(passages, key=lambda p: -state.grades.get(p["id"], 0.0)):
        strips = passage_strips(index, passage["doc_id"], passage["first"], passage["last"])
        new = [s for s in strips if (s.doc_id, s.position) not in measured]
        measured.update(zip(((s.doc_id, s.position) for s in new), evaluator.measure_strips(profile, new), strict=True))
        items.append(
            KnowledgeItem(
                n=len(items) + 1,
                doc_id=passage["doc_id"],
                source=passage["source"],
                **located(passage["path"], passage["place"]),
                title=passage["title"],
                section=list(passage["section"]),
                first=passage["first"],
                last=passage["last"],
                text=defuse_markers(passage["text"]),  # a document's own [n] must not pass for a citation
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


def _cited(n: int, excerpt: Excerpt, text: str) -> Citation:
    """The citation of one excerpt of evidence: the text shown, where it stands."""
    item = excerpt.item
    return Citation(
        n=n,
        source=item["source"],
        **located(item["path"], join_places([strip["place"] for strip in excerpt.strips])),
        title=item["title"],
        section=list(item["section"]),
        first=excerpt.first,
        last=excerpt.last,
        quote=text,
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
            **located(p["path"], p["place"]),
            title=p["title"],
            section=list(p["section"]),
            first=p["first"],
            last=p["last"],
            quote=p["text"],
        )
        for i, p in enumerate(nearest, 1)
    ]
