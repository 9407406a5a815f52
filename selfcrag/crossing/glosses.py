"""A question's words carried into the other language, weighted, for BM25 over that language's sentences.

Across languages BM25 finds almost nothing (on XQuAD, a Chinese question over English paragraphs: hit@5 0.18,
against 0.98 in one language) and the dense ranking alone finds what is found. A question's words glossed by
the dictionary (:mod:`selfcrag.crossing.dictionary`) give BM25 back its hold on names of things and rare words:

* **Chinese into English**: the question is cut into words, preferring the longest dictionary entry over
  jieba's cut (``超级碗``, not ``超级`` + ``碗``); each word's first :data:`SENSES` senses give English terms,
  the first sense weighing most; a word missing from the dictionary is looked up by the shorter words inside it.
* **English into Chinese**: the question's words are looked up as phrases of up to three words first
  (``Super Bowl`` -> ``超级碗``), stemmed as the index stems them; of the Chinese words having it as a
  sense, the :data:`CANDIDATES` best (an earlier sense, a commoner word by jieba's counts) give terms.

Numbers and words in Latin letters of a Chinese question, and names (capitalised words) of an English question
that the dictionary does not translate, pass through unchanged: a document in the other language often writes
them so. Each word of the question enters the query with the same total weight, shared among its candidates, so
a word with many senses cannot outweigh one with a single sure translation.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache

from selfcrag.crossing.dictionary import Dictionary, dictionary, english_key
from selfcrag.index.tokenize import EN_STOPWORDS, ZH_STOPWORDS, cut_chinese, load_dictionary, tokenize

# The languages a question crosses between.
CROSSED_LANGUAGES = frozenset({"en", "zh"})
# Senses of a Chinese word turned into English terms: the first few hold its usual meanings.
SENSES = 3
# Chinese words an English word or phrase turns into.
CANDIDATES = 4
# Longest run of jieba's words joined into one dictionary entry (``超级`` + ``碗``).
JOIN_WORDS = 4

_HAN_RUN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]+")
_ENGLISH_WORD = re.compile(r"[A-Za-z0-9]+(?:['’\-][A-Za-z0-9]+)*")
# Chinese words that carry no topic when crossed: ordinals and measure words of a question ("第 50 届"), and
# question and relation words whose English senses ("session", "arrive", "period") would match anything.
_NOT_CROSSED = ZH_STOPWORDS | frozenset(
    """第 届 年 月 日 次 种 位 名 些 将 已 曾 其 后 前 时 当 最 更 很 多 少 大 小
    是什么 为何 何时 何地 何人 哪一 哪种 哪位 什么样 多久 多长 多大 多远 之后 之前 期间 时候
    称为 叫做 叫 称 指 属于 位于 有关 关于 通过 使用 进行""".split()
)


@dataclass(frozen=True)
class Crossing:
    """A question's words in another language.

    Attributes:
        language: The language crossed into (``en`` or ``zh``).
        words: For each word of the question that crossed (or passed through), its terms in that language with
            their weights, the best 1.
    """

    language: str
    words: tuple[tuple[str, tuple[tuple[str, float], ...]], ...]

    def weights(self) -> dict[str, float]:
        """Each term's weight in the query: a word's weight (1) shared among its terms by their weights.

        Returns:
            Term to weight.
        """
        total: dict[str, float] = {}
        for _, terms in self.words:
            share = sum(weight for _, weight in terms)
            for term, weight in terms:
                total[term] = total.get(term, 0.0) + weight / share
        return total

    def matched(self, terms: set[str] | frozenset[str]) -> float:
        """The share of the question's crossed words that a set of index terms holds (any of a word's terms).

        Args:
            terms: A sentence's terms.

        Returns:
            A share in [0, 1]; 0 when nothing crossed.
        """
        if not self.words:
            return 0.0
        return sum(any(term in terms for term, _ in word) for _, word in self.words) / len(self.words)


@lru_cache(maxsize=256)
def cross_question(question: str, into: str) -> Crossing:
    """Carry a question's words into another language.

    Args:
        question: The question.
        into: ``en`` (for a Chinese question) or ``zh`` (for an English one).

    Returns:
        The crossing (with no words when nothing crossed).
    """
    table = dictionary()
    found = _into_english(question, table) if into == "en" else _into_chinese(question, table)
    return Crossing(into, tuple((source, tuple(terms.items())) for source, terms in found if terms))


def _into_english(question: str, table: Dictionary) -> list[tuple[str, dict[str, float]]]:
    """A Chinese question's words as weighted English terms; its Latin words and numbers as they are."""
    words: list[tuple[str, dict[str, float]]] = []
    position = 0
    for run in _HAN_RUN.finditer(question):
        words.extend((term, {term: 1.0}) for term in tokenize(question[position : run.start()]))
        position = run.end()
        for word in _dictionary_words(run.group(0), table):
            if word in _NOT_CROSSED:
                continue
            parts = [word] if word in table.senses else _inner_words(word, table)
            words.extend((part, _sense_terms(table.senses[part])) for part in parts)
    words.extend((term, {term: 1.0}) for term in tokenize(question[position:]))
    return words


def _dictionary_words(run: str, table: Dictionary) -> list[str]:
    """Cut a Chinese run into words: jieba's, joined where the joined words are one dictionary entry."""
    pieces = cut_chinese(run)
    words: list[str] = []
    start = 0
    while start < len(pieces):
        for count in range(min(JOIN_WORDS, len(pieces) - start), 0, -1):
            joined = "".join(pieces[start : start + count])
            if count == 1 or joined in table.senses:
                words.append(joined)
                start += count
                break
    return words


def _inner_words(word: str, table: Dictionary) -> list[str]:
    """The dictionary's words inside a word it lacks, as jieba's search mode finds them."""
    if not _HAN_RUN.fullmatch(word):
        return []
    load_dictionary()
    import jieba  # noqa: PLC0415 -- loaded with the dictionary above

    return [w for w in jieba.lcut_for_search(word) if w != word and w in table.senses and w not in _NOT_CROSSED]


def _sense_terms(senses: list[str]) -> dict[str, float]:
    """English terms of a word's first senses, each weighing as its best sense: 1 for the first, 1/2, 1/3 after."""
    terms: dict[str, float] = {}
    for place, sense in enumerate(senses[:SENSES]):
        for term in tokenize(sense):
            terms[term] = max(terms.get(term, 0.0), 1.0 / (place + 1))
    return terms


def _into_chinese(question: str, table: Dictionary) -> list[tuple[str, dict[str, float]]]:
    """An English question's words and phrases as weighted Chinese terms; its names and numbers as they are."""
    load_dictionary()
    import jieba  # noqa: PLC0415 -- its word counts rank a phrase's Chinese words

    counts = jieba.dt.FREQ
    written = _ENGLISH_WORD.findall(question)
    lower = [w.lower() for w in written]
    words: list[tuple[str, dict[str, float]]] = []
    start = 0
    while start < len(lower):
        word = lower[start]
        if word in EN_STOPWORDS:
            start += 1
            continue
        if not word.isalpha():  # a number, a version, a code: the same in both languages
            words.extend((term, {term: 1.0}) for term in tokenize(word))
            start += 1
            continue
        for count in range(min(3, len(lower) - start), 0, -1):
            if count > 1 and lower[start + count - 1] in EN_STOPWORDS:
                continue
            candidates = table.words.get(english_key(lower[start : start + count]))
            if candidates:
                words.append((" ".join(written[start : start + count]), _chinese_terms(candidates, counts)))
                if count == 1 and written[start][:1].isupper():  # a name: also as written
                    words[-1][1].update({term: 1.0 for term in tokenize(word)})
                start += count
                break
        else:
            if written[start][:1].isupper():  # a name the dictionary lacks: as written
                words.extend((term, {term: 1.0}) for term in tokenize(word))
            start += 1
    return words


def _chinese_terms(candidates: list[tuple[str, int]], counts: dict[str, int]) -> dict[str, float]:
    """The index terms of a phrase's best Chinese words, weighted by their rank: an earlier sense, a commoner word."""
    rank: dict[str, float] = {}
    for word, place in candidates:
        rank[word] = max(rank.get(word, 0.0), math.log(2 + counts.get(word, 0)) / (place + 1))
    best = sorted(rank.items(), key=lambda item: (-item[1], item[0]))[:CANDIDATES]
    top = best[0][1]
    terms: dict[str, float] = {}
    for word, score in best:
        for term in tokenize(word):
            terms[term] = max(terms.get(term, 0.0), score / top)
    return terms
