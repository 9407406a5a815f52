"""The offline support check (Self-RAG's ISSUP): is each answer sentence stated by the items it cites?

A sentence quoted verbatim from a cited item (every line of it, for a table
excerpt) is supported, and that is checked literally, not assumed, provided
it is about the question: a quoted strip the evaluator scored below the bar
of a kept strip supports nothing. Any other sentence (a chat model's
paraphrase) is supported when every number in it appears in the cited items
and either most of its terms do or its embedding is close to one of their
sentences.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from selfcrag.cite.markers import CitedSentence
from selfcrag.heuristics.excerpts import quotes
from selfcrag.heuristics.strips import strip_at, strip_vectors
from selfcrag.index.tokenize import tokenize
from selfcrag.search.retriever import Retriever
from selfcrag.spans import KnowledgeItem, Strip
from selfcrag.split.sentences import join_wrapped_lines

TERM_OVERLAP = 0.6
COSINE = 0.9
# Two sentences state the same fact when most answer words (not the question's) of the shorter are the other's;
# chosen on the calibration halves with the answer thresholds (docs/results.md). Fewer words than this tell nothing.
SAME_FACT_OVERLAP = 0.6
SAME_FACT_MIN_TERMS = 2
_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class SentenceSupport:
    """Whether one answer sentence is supported, and how that was found.

    Attributes:
        supported: The verdict.
        how: ``verbatim``, ``aligned``, ``numbers`` (a number of the sentence
            is not in its sources), ``weak`` (too few terms or too far),
            ``irrelevant`` (quoted, but about something else) or ``uncited``.
        overlap: Share of its terms found in the cited items.
        cosine: Highest embedding cosine with a cited sentence (0 when not computed).
    """

    supported: bool
    how: str
    overlap: float = 1.0
    cosine: float = 0.0


def _normal(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def check_sentences(
    sentences: Sequence[CitedSentence],
    knowledge: Sequence[KnowledgeItem],
    retriever: Retriever,
    relevant: float = 0.0,
) -> list[SentenceSupport]:
    """Check every sentence of an answer against the knowledge items it cites.

    A sentence quoted verbatim is supported only when it is also about the
    question: the strips it quotes must score at least ``relevant`` (a true
    sentence that answers something else is not support for an answer).

    Args:
        sentences: The answer, split into cited sentences.
        knowledge: The numbered knowledge items.
        retriever: The open retriever (sentence vectors, embedder).
        relevant: Score (the evaluator's, on the items' strips) a quoted strip needs.

    Returns:
        One verdict per sentence.
    """
    items = {k["n"]: k for k in knowledge}
    # An excerpt is judged as a whole: its best sentence makes the ones around it, quoted for context, relevant.
    answer = " ".join(s.text for s in sentences)
    verdicts = []
    for sentence in sentences:
        cited = [items[n] for n in sentence.cites if n in items]
        if not cited:
            verdicts.append(SentenceSupport(False, "uncited", 0.0))
            continue
        source_text = " ".join(k["text"] for k in cited)
        lines = [_normal(line) for line in sentence.text.splitlines() if line.strip()]
        # The answer quotes a hard-wrapped source joined into one line (see join_wrapped_lines).
        quoted = _normal(join_wrapped_lines(source_text))
        if all(line in quoted for line in lines):
            verdicts.append(_relevance(answer, cited, relevant))
            continue
        verdicts.append(_align(sentence.text, cited, source_text, retriever))
    return verdicts


def _align(text: str, cited: Sequence[KnowledgeItem], source_text: str, retriever: Retriever) -> SentenceSupport:
    if not set(_NUMBER.findall(text)) <= set(_NUMBER.findall(source_text)):
        return SentenceSupport(False, "numbers", 0.0)
    terms = set(tokenize(text))
    overlap = len(terms & set(tokenize(source_text))) / len(terms) if terms else 1.0
    if overlap >= TERM_OVERLAP:
        return SentenceSupport(True, "aligned", overlap)
    strips = [
        s
        for k in cited
        for st in k["strips"]
        if (s := strip_at(retriever.index, k["doc_id"], st["position"])) is not None
    ]
    if not strips:
        return SentenceSupport(False, "weak", overlap)
    cosine = float(np.max(strip_vectors(retriever, strips) @ retriever.embedder.embed_passages([text])[0]))
    return SentenceSupport(cosine >= COSINE, "aligned" if cosine >= COSINE else "weak", overlap, cosine)


def _relevance(text: str, cited: Sequence[KnowledgeItem], relevant: float) -> SentenceSupport:
    """The verdict on a verbatim sentence: supported when the best strip the answer quotes of its items is relevant."""
    said = _normal(join_wrapped_lines(text))
    scores = [
        s["score"]
        for k in cited
        for s in k["strips"]
        if s["kind"] not in ("heading", "table") and _normal(join_wrapped_lines(s["text"])) in said
    ]
    if scores and max(scores) < relevant:
        return SentenceSupport(False, "irrelevant", 1.0)
    return SentenceSupport(True, "verbatim")


@dataclass(frozen=True)
class QuotedEvidence:
    """How strongly what an answer quotes answers the question, by its best strip.

    Attributes:
        score: The evaluator's score of the best strip quoted.
        dense: That strip's meaning's closeness to the question (0 unrelated, 1 a restatement).
        coverage: The share of the question's words it holds (IDF-weighted, with its title and headings).
        margin: How far its score stands above the best strip of the knowledge that says something else.
    """

    score: float
    dense: float
    coverage: float
    margin: float


def quoted_evidence(
    sentences: Sequence[CitedSentence], knowledge: Sequence[KnowledgeItem], question: str
) -> QuotedEvidence:
    """Measure the evidence of an answer by the best strip it quotes, against the strips that say something else.

    A verbatim quote shows only that the text is in the documents; whether it
    answers the question is read, offline, from the strip quoted: close in
    meaning to the question, holding its words, and clearly better than
    anything else retrieved. A strip that states the same fact (see
    :func:`states_the_same`), or that the answer quotes too without giving
    other values, confirms the answer: it is no rival for the margin.

    Args:
        sentences: The answer sentences kept.
        knowledge: The numbered knowledge items, their strips scored.
        question: The question, whose own words and numbers say nothing about which fact a strip states.

    Returns:
        The evidence (all 0 when no strip is quoted).
    """
    said = _normal(join_wrapped_lines(" ".join(s.text for s in sentences)))
    cited = {n for s in sentences for n in s.cites}
    strips = [s for k in knowledge for s in k["strips"] if s["kind"] not in ("heading", "code")]
    quoted = [
        s
        for k in knowledge
        if k["n"] in cited
        for s in k["strips"]
        if s["kind"] not in ("heading", "code") and quotes(said, s)
    ]
    if not quoted:
        return QuotedEvidence(0.0, 0.0, 0.0, 0.0)
    best = max(quoted, key=lambda s: s["score"])
    said_too = {s["text"] for s in quoted}

    def says_something_else(strip: Strip) -> bool:
        if strip["text"] in said_too:
            # Quoted around the answer, a sentence is part of it, unless it gives other values: two answers.
            return _other_values(best["text"], strip["text"], question)
        return not states_the_same(best["text"], strip["text"], question)

    rival = max((s["score"] for s in strips if says_something_else(s)), default=0.0)
    return QuotedEvidence(best["score"], best["dense"], best["coverage"], round(best["score"] - rival, 4))


def states_the_same(first: str, second: str, question: str) -> bool:
    """Tell, without reading them, whether two sentences state the same fact in answer to a question.

    They do when one holds the other; when both give values (numbers the
    question does not hold), when the values are the same ("the default
    compression level is -6", "the default compression level (-6)");
    otherwise when most of the shorter one's answer words (those the question
    does not hold) are the other's too. Sentence vectors cannot tell: the
    offline embedder puts any two Chinese sentences of one manual at a
    cosine of about 0.95, related or not.

    Args:
        first: A sentence.
        second: Another sentence.
        question: The question both were retrieved for.

    Returns:
        True when they agree.
    """
    one, other = _normal(first), _normal(second)
    if one in other or other in one:
        return True
    values = _values(one, question), _values(other, question)
    if values[0] and values[1]:
        return values[0] == values[1]
    asked_terms = set(tokenize(question))
    answers = set(tokenize(one)) - asked_terms, set(tokenize(other)) - asked_terms
    shorter = min(len(answers[0]), len(answers[1]))
    return shorter >= SAME_FACT_MIN_TERMS and len(answers[0] & answers[1]) / shorter >= SAME_FACT_OVERLAP


def _values(text: str, question: str) -> set[str]:
    """The numbers a sentence gives that the question does not hold: its answer, when a value is asked for."""
    return set(_NUMBER.findall(text)) - set(_NUMBER.findall(question))


def _other_values(first: str, second: str, question: str) -> bool:
    """Tell whether two sentences both give values, and not the same ones."""
    values = _values(first, question), _values(second, question)
    return bool(values[0] and values[1]) and values[0] != values[1]
