"""check_support: is the answer supported by what it cites (Self-RAG's ISSUP)?"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from selfcrag.cite.markers import build_citations, drop_unknown_markers, join_cited, keep_known_markers, split_cited
from selfcrag.graph.chat_step import structured_step
from selfcrag.graph.context import Context
from selfcrag.graph.resources import current_resources
from selfcrag.graph.state import State, SupportVerdict
from selfcrag.graph.trace import record, retract
from selfcrag.heuristics.excerpts import quoted_part
from selfcrag.heuristics.support import check_sentences, quoted_evidence
from selfcrag.index.tokenize import detect_language, text_language
from selfcrag.llm.replies import SupportJudgement
from selfcrag.prompts import pick, quote_knowledge, replies
from selfcrag.prompts.support import SUPPORT_SYSTEM, SUPPORT_USER

# Why the support check withdraws a streamed draft (the ``retract`` event's reason).
WITHDRAWN = {
    "unsupported": "not supported by the sources",
    "unconfirmed": "not confirmed by the sources; the closest evidence follows",
    "partially": "only partly supported by the sources; the supported sentences follow",
}


def support_verdict(flags: list[bool]) -> SupportVerdict:
    """Summarise per-sentence support.

    Args:
        flags: Whether each answer sentence is supported.

    Returns:
        ``fully``, ``partially`` or ``unsupported`` (also for no sentences).
    """
    if flags and all(flags):
        return "fully"
    return "partially" if any(flags) else "unsupported"


def check_support(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Check the draft sentence by sentence; accept it whole, in part, or not at all.

    Fully supported: the draft is the answer. Partially: the supported
    sentences are, with a note of what is missing. Unsupported: nothing is
    accepted, and the router regenerates or abstains. Offline, where the check
    finds a quote in its source but cannot read whether it answers, an
    extractive answer (one the chat model did not write) whose best quoted strip is not close in meaning to the question
    (``answer_similarity``), does not hold most of its words
    (``answer_coverage``) or is not clearly above the strips retrieved that say something else
    (``answer_margin``; a strip stating the same fact confirms it) is ``unconfirmed``: it is shown as the closest
    evidence, not as an answer.

    Args:
        state: The question, the knowledge and the draft.
        runtime: Its context.

    Returns:
        The verdict and, when accepted, the answer and its citations.
    """
    context = runtime.context
    question = state.question
    sentences, unknown_markers = drop_unknown_markers(split_cited(state.draft), state.knowledge)
    flags: list[bool] = []
    missing = ""
    numbered = "\n".join(f"{i}. {join_cited([s])}" for i, s in enumerate(sentences, 1))
    judgement, details, spent = structured_step(
        runtime,
        state,
        "check_support",
        SupportJudgement,
        [
            SystemMessage(pick(SUPPORT_SYSTEM, question)),
            HumanMessage(
                pick(SUPPORT_USER, question).format(
                    question=question, passages=quote_knowledge(state.knowledge), sentences=numbered
                )
            ),
        ],
        wanted=bool(sentences),
    )
    if judgement is not None:
        unsupported = set(judgement.unsupported_sentences)
        flags = [
            judgement.verdict != "unsupported" and (judgement.verdict == "fully" or i not in unsupported)
            for i in range(1, len(sentences) + 1)
        ]
        missing = judgement.missing.strip()
    offline = bool(sentences) and not flags
    if offline:
        checks = check_sentences(
            sentences, state.knowledge, current_resources().retriever(context), context.strip_threshold
        )
        flags = [c.supported for c in checks]
        details["sentences"] = [c.how for c in checks]
    if unknown_markers:
        details["unknown_markers_removed"] = unknown_markers
    # A sentence that cites no source cannot be supported by what it cites, whatever a judge says.
    flags = [ok and bool(s.cites) for s, ok in zip(sentences, flags, strict=True)]
    verdict = support_verdict(flags)
    kept = [s for s, ok in zip(sentences, flags, strict=True) if ok]
    written_offline = next((s.get("method") for s in reversed(state.trace) if s["step"] == "generate"), None) != "chat"
    if offline and written_offline and verdict != "unsupported":
        # Offline, a quote is found in its source, not read: it is given as an answer only on strong evidence, a
        # sentence close in meaning to the question, holding its words, and clearly better than anything else found.
        evidence = quoted_evidence(kept, state.knowledge, question)
        details["evidence"] = {"dense": evidence.dense, "coverage": evidence.coverage, "margin": evidence.margin}
        details["quoted"] = sorted({n for sentence in kept for n in sentence.cites})
        # A quote in the other language is read by no one offline: whether it answers, the reader judges.
        asked = detect_language(question)
        across = sorted({language for s in kept if (language := text_language(s.text)) not in (None, asked)})
        if across:
            details["evidence"]["language"] = across
        across = across if context.answers_across_languages == "evidence" else []
        if (
            evidence.dense < context.answer_similarity
            or evidence.coverage < context.answer_coverage
            or evidence.margin < context.answer_margin
            or across
        ):
            verdict = "unconfirmed"
    update: dict[str, Any] = {
        **spent,
        "support": verdict,
        "trace": record(
            runtime,
            "check_support",
            verdict,
            supported=sum(flags),
            of=len(flags),
            regenerate=state.regenerate_count,
            **details,
        ),
    }
    if verdict in ("unsupported", "unconfirmed"):
        # The draft's tokens have streamed: a caller reading the stream learns they are not the answer.
        retract(runtime, "check_support", WITHDRAWN[verdict])
        return update
    # Fully supported, the draft stands as written (and as streamed), less any marker that points at no
    # source: rejoining its sentences would move markers and line breaks, and show people a second answer.
    answer = (
        keep_known_markers(state.draft, state.knowledge).strip()
        if verdict == "fully"
        else join_cited(kept, _separator(state.draft, question))
    )
    if verdict == "partially":
        # The whole draft has streamed, the sentences cut with it: the final answer event holds what is kept.
        retract(runtime, "check_support", WITHDRAWN[verdict])
        language = detect_language(question)
        note = replies.MISSING[language].format(missing=missing) if missing else replies.UNVERIFIED_REMOVED[language]
        answer = f"{answer}\n\n{note}"
    return {
        **update,
        "answer": answer,
        # An offline answer's quotes are cited where they stand, not by the whole passage kept around them.
        "citations": build_citations(
            kept, [quoted_part(k, [s.text for s in kept if k["n"] in s.cites]) for k in state.knowledge]
        ),
        "status": "answered",
        "abstained": False,
        "messages": [AIMessage(answer)],
    }


def _separator(draft: str, question: str) -> str:
    if "\n" in draft.strip():
        return "\n"
    return "" if detect_language(question) == "zh" else " "
