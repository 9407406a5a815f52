"""The offline query rewrite: the question's keywords plus pseudo-relevance feedback.

Keywords are the question's content words as written (jieba's precise cut for
Chinese, words for the rest), most specific (highest IDF) first. Feedback
terms are the most distinctive words of the best-scoring sentences found so
far, the sentences that share most with the question, which the question did
not use. Each rewrite takes feedback terms not used before, so the rewrites
differ from each other and from the question.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from selfcrag.heuristics.signals import TermStatistics, surface_words
from selfcrag.index.tokenize import tokenize

FEEDBACK_TERMS = 3


def _weight(word: str, statistics: TermStatistics) -> float:
    return max((statistics.weight(t) for t in tokenize(word)), default=0.0)


def rewrite_query(question: str, evidence: Sequence[str], previous: Sequence[str], statistics: TermStatistics) -> str:
    """Write a new search query for a question whose retrieval found too little.

    Args:
        question: The user's question.
        evidence: Sentences found so far, best first (feedback comes from these).
        previous: Queries already searched (their words are not fed back again).
        statistics: IDFs of the index.

    Returns:
        The keywords, most specific first, followed by new feedback terms.
    """
    keywords = sorted(surface_words(question), key=lambda w: -_weight(w, statistics))
    used = {t for q in [question, *previous] for t in tokenize(q)}
    counts: Counter[str] = Counter()
    surface: dict[str, str] = {}
    for sentence in evidence:
        for word in surface_words(sentence):
            terms = tokenize(word)
            if not terms or any(t in used for t in terms) or word.isdigit():
                continue
            key = word.lower()
            surface.setdefault(key, word)
            counts[key] += 1
    feedback = sorted(counts, key=lambda w: (-counts[w] * _weight(surface[w], statistics), w))
    query = " ".join([*keywords, *(surface[w] for w in feedback[:FEEDBACK_TERMS])])
    if query.strip() and query not in previous:
        return query
    return " ".join(keywords[::-1]) or question
