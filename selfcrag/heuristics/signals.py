"""What the offline steps know about a question: its terms, their weights, its vector, its answer type.

Pure functions over the index's statistics, apart from :func:`profile_question`,
which embeds the question.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from selfcrag.crossing.glosses import Crossing
from selfcrag.embed.embedders import Embedder
from selfcrag.index.reader import IndexReader
from selfcrag.index.tokenize import EN_STOPWORDS, ZH_STOPWORDS, cut_chinese, detect_language, tokenize

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_WORD = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}]+(?:['’.\-][^\W_{_CJK}]+)*")
_CJK_RUN = re.compile(rf"[{_CJK}]+")

# Question words that survive the stop lists but never appear in an answer
# ("how long", "多久"): matching them says nothing about relevance.
QUESTION_TERMS = frozenset(
    "long mani much soon often far old get".split()
    + "最 多久 多长 多长时间 多大 多远 最晚 最早 最多 最少 能否 有没有 是不是".split()
)

_NUMBER = r"(?<![A-Za-z\d])\d[\d,.]*"
_UNIT_TIME_EN = r"(?:seconds?|secs?|minutes?|mins?|hours?|hrs?|days?|weeks?|months?|years?)"
_UNIT_TIME_ZH = r"(?:秒|分钟|小时|个?工作日|天|日|周|个?星期|个月|年)"
_WORD_NUMBER_EN = r"(?:one|two|three|four|five|six|seven|eight|nine|ten|twelve|fifteen|twenty|thirty|an?)"

# A count written in words: "two states", "a dozen", "两颗卫星", "十二名陪审员".
_COUNT_WORDS = (
    r"\b(?:two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|"
    r"sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundreds?|"
    r"thousands?|millions?|billions?|dozens?|twice|thrice)\b"
    r"|[零一二两三四五六七八九十百千万亿]+\s*(?:个|名|位|种|项|次|条|家|人|岁|颗|只|头|本|部|座|所|张|件|台|辆|"
    r"架|艘|层|章|节|篇|首|门|份|届|场|册|卷|米|公里|千米|厘米|毫米|克|千克|公斤|吨|升|毫升|元|块|倍|秒|分钟|小时|天|"
    r"周|个月|年)"
)

# Expected answer types: (question pattern, answer pattern), tried in this order.
ANSWER_TYPES: dict[str, tuple[re.Pattern[str], re.Pattern[str]]] = {
    "duration": (
        re.compile(
            r"\bhow (?:long|soon|often|frequently)\b|\bhow many (?:business |working )?" + _UNIT_TIME_EN + r"\b"
            r"|\bwithin how many\b|多久|多长时间|多少天|几天|多少个?工作日|多少小时|几个?小时|多少年|几年|"
            r"多少个月|几个月|期限|时效|时长|有效期",
            re.IGNORECASE,
        ),
        re.compile(
            _NUMBER
            + r"\s*-?\s*(?:(?:business|working|calendar|full)\s+)?"
            + _UNIT_TIME_EN
            + r"\b|\b"
            + _WORD_NUMBER_EN
            + r"\s+"
            + _UNIT_TIME_EN
            + r"\b|\d+\s*"
            + _UNIT_TIME_ZH
            + r"|[一二三四五六七八九十两半]+\s*"
            + _UNIT_TIME_ZH,
            re.IGNORECASE,
        ),
    ),
    "money": (
        re.compile(
            r"\b(?:price|prices|cost|costs|fee|fees|charge|charges|salary)\b|售价|价格|价钱|多少钱|费用|收费|"
            r"运费|手续费|多少元",
            re.IGNORECASE,
        ),
        re.compile(
            r"[$€£¥￥]\s?\d|" + _NUMBER + r"\s*(?:dollars?|euros?|usd|eur|gbp|cents?)\b|\d+(?:\.\d+)?\s*"
            r"(?:元|块|美元|欧元)",
            re.IGNORECASE,
        ),
    ),
    "time": (
        re.compile(
            r"\bwhat time\b|\b(?:opening|office|core|business|working) hours\b|几点|营业时间|开放时间|"
            r"服务时间|工作时间|上班时间",
            re.IGNORECASE,
        ),
        re.compile(r"\b\d{1,2}[:：]\d{2}\b|\d{1,2}\s*点|\b\d{1,2}\s*(?:am|pm)\b", re.IGNORECASE),
    ),
    "date": (
        re.compile(
            r"\bwhen (?:was|were|did|will)\b|\bwhat date\b|\bwhich (?:year|day|month)\b|\bin what year\b|"
            r"哪一?年|哪一?天|什么时候|何时|日期|哪个月",
            re.IGNORECASE,
        ),
        re.compile(
            r"\b(?:1[6-9]|20)\d{2}\b|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b|"
            r"\d+\s*年|\d+\s*月\s*\d+\s*日",
            re.IGNORECASE,
        ),
    ),
    "url": (
        re.compile(r"\b(?:url|urls|endpoint|address|link|website|domain)\b|网址|链接|地址|域名", re.IGNORECASE),
        re.compile(r"https?://|www\.|`/[\w/.-]+`|\b[\w-]+\.(?:com|org|net|io|cn|example)\b", re.IGNORECASE),
    ),
    "percent": (
        re.compile(r"\bpercent(?:age)?\b|\bproportion\b|百分之|百分比|比例|几成", re.IGNORECASE),
        re.compile(r"\d+(?:\.\d+)?\s*%|\bpercent\b|百分之", re.IGNORECASE),
    ),
    "number": (
        re.compile(
            r"\bhow (?:many|much)\b|\bnumber of\b|\blimits?\b|\bmaximum\b|\bminimum\b|多少|上限|"
            r"几(?:个|颗|名|位|种|项|次|条|家|只|本|部|座|所|张|件|台|辆|层|章|届|场|倍)|"
            r"下限|最多|最少",
            re.IGNORECASE,
        ),
        re.compile(_NUMBER + "|" + _COUNT_WORDS, re.IGNORECASE),
    ),
}
_ANY_NUMBER = re.compile(_NUMBER + r"|[一二三四五六七八九十两]+\s*" + _UNIT_TIME_ZH)


def expected_answer_type(question: str) -> str | None:
    """Guess what kind of value answers a question.

    Args:
        question: The question.

    Returns:
        ``duration``, ``money``, ``time``, ``date``, ``url``, ``percent``,
        ``number``, or None when the question does not ask for a value.
    """
    for kind, (asks, _) in ANSWER_TYPES.items():
        if asks.search(question):
            return kind
    return None


def answer_type_match(text: str, kind: str | None) -> float | None:
    """Tell whether a text holds a value of the expected kind.

    Args:
        text: A sentence.
        kind: From :func:`expected_answer_type`.

    Returns:
        1.0 when it does, 0.5 when it has a number of some other kind, 0.0
        when it has none; None when no kind is expected.
    """
    if kind is None:
        return None
    if ANSWER_TYPES[kind][1].search(text):
        return 1.0
    return 0.5 if _ANY_NUMBER.search(text) else 0.0


class TermStatistics:
    """Inverse document frequencies of index terms (Lucene's formula), looked up once per term.

    Args:
        lookup: Gives the IDF of terms (an index's :meth:`~selfcrag.index.reader.IndexReader.idf`:
            the manifest's sentence counts per term; a term absent from the index counts as the
            rarest indexed term).
    """

    def __init__(self, lookup: Callable[[Iterable[str]], dict[str, float]]) -> None:
        self._lookup = lookup
        self._known: dict[str, float] = {}

    def weight(self, term: str) -> float:
        """Return a term's IDF."""
        if term not in self._known:
            if len(self._known) > 50_000:
                self._known.clear()
            self._known.update(self._lookup([term]))
        return self._known[term]


def term_statistics(index: IndexReader) -> TermStatistics:
    """The term statistics of an open index.

    Args:
        index: The open index.

    Returns:
        The statistics.
    """
    return TermStatistics(index.idf)


def question_words(text: str) -> list[tuple[str, ...]]:
    """Split a question into its content words, each as the index terms it yields.

    A Chinese word is cut by jieba's precise mode, then tokenised like the
    index (search mode), so ``差旅费`` becomes ``(差旅, 旅费, 差旅费)``: one word
    whose sub-terms can match partly, rather than three words.

    Args:
        text: The question.

    Returns:
        One tuple of terms per content word, in order, repeats dropped.
    """
    words: list[tuple[str, ...]] = []
    for match in _WORD.finditer(text.lower()):
        pieces = cut_chinese(match.group(0)) if _CJK_RUN.fullmatch(match.group(0)) else [match.group(0)]
        for piece in pieces:
            terms = tuple(t for t in dict.fromkeys(tokenize(piece)) if t not in QUESTION_TERMS)
            if terms and terms not in words:
                words.append(terms)
    return words


def surface_words(text: str) -> list[str]:
    """Split a text into content words as written (not stemmed), repeats dropped.

    Args:
        text: Chinese, English or mixed text.

    Returns:
        Words that are not stop words or question words, in order.
    """
    words: list[str] = []
    for match in _WORD.finditer(text):
        run = match.group(0)
        pieces = cut_chinese(run) if _CJK_RUN.fullmatch(run) else [run]
        for piece in pieces:
            lower = piece.lower()
            if lower in EN_STOPWORDS or lower in ZH_STOPWORDS or not tokenize(piece):
                continue
            if all(t in QUESTION_TERMS for t in tokenize(piece)) or (len(piece) == 1 and not piece.isdigit()):
                continue
            if lower not in (w.lower() for w in words):
                words.append(piece)
    return words


def _found_inside(term: str, terms: set[str], text: str) -> bool:
    """Whether a Chinese term of a crossed word stands in a text within a longer word (see ``crossed_coverage``)."""
    if not _CJK_RUN.fullmatch(term):
        return False
    if len(term) > 1:
        return term in text
    return any(len(word) > 1 and word.endswith(term) for word in terms)


@dataclass(frozen=True)
class QuestionProfile:
    """A question, prepared once for scoring many passages and strips.

    Attributes:
        text: The question.
        language: ``zh`` or ``en``.
        words: Content words as index terms (question words dropped), in order.
        weights: Weight (highest IDF of its terms) of each word.
        pairs: Adjacent word pairs of the question, for phrase matches.
        vector: The question embedded as a query.
        scale: The embedder's cosine scale in the question's language (see :class:`DenseScale`).
        answer_type: Expected kind of value, if any.
        crossed: The question's words carried into the other language of the index (:mod:`selfcrag.crossing`),
            each as the terms it crossed into; empty when the index holds only the question's language.
        crossed_weights: Weight (highest IDF of its terms) of each crossed word.
        scales: The cosine scale of a question in its language against a passage in another language (see
            :func:`dense_scale`: the background sentences' translations), measured when first asked for.
    """

    text: str
    language: str
    words: tuple[tuple[str, ...], ...]
    weights: tuple[float, ...]
    pairs: frozenset[tuple[str, str]]
    vector: np.ndarray
    scale: DenseScale
    answer_type: str | None
    crossed: tuple[tuple[str, ...], ...] = ()
    crossed_weights: tuple[float, ...] = ()
    scales: Callable[[str], DenseScale] | None = None

    @cached_property
    def terms(self) -> frozenset[str]:
        """Every index term of the question's content words."""
        return frozenset(t for word in self.words for t in word)

    def coverage(self, terms: set[str], text: str = "") -> float:
        """Weighted share of the question's words present in a set of index terms.

        A word counts fully when its own term is present, in part when some of
        its sub-terms are. A text in the other language of the index holds the
        question's words as their translations: the share of the crossed words
        it holds counts instead when it is higher (see :meth:`crossed_coverage`).
        """
        total = sum(self.weights)
        found = 0.0
        for word, weight in zip(self.words, self.weights, strict=True):
            if word[-1] in terms:
                found += weight
            else:
                found += weight * sum(t in terms for t in word) / (len(word) + 1)
        own = found / total if total else 0.0
        return max(own, self.crossed_coverage(terms, text))

    def crossed_coverage(self, terms: set[str], text: str = "") -> float:
        """Weighted share of the question's crossed words present in a text: any of a word's terms.

        A Chinese term counts where the text holds it within a longer word too: *water* crosses into ``水``,
        which the index's terms of ``停水`` and ``供水`` do not hold apart. A single character counts only at a
        word's end, where a compound's head stands: *put* crosses into ``放``, which ``放水`` (to let water run)
        begins with.

        Args:
            terms: The text's index terms.
            text: The text itself (Chinese terms are looked for in it).

        Returns:
            A share in [0, 1]; 0 when nothing crossed.
        """
        total = sum(self.crossed_weights)
        if not total:
            return 0.0
        found = sum(
            weight
            for word, weight in zip(self.crossed, self.crossed_weights, strict=True)
            if terms.intersection(word) or any(_found_inside(term, terms, text) for term in word)
        )
        return found / total

    def phrase_match(self, tokens: list[str]) -> float:
        """Share of the question's adjacent word pairs that stand adjacent in a token list."""
        if not self.pairs:
            return 0.0
        found = set(zip(tokens, tokens[1:], strict=False))
        return len(self.pairs & found) / len(self.pairs)

    def dense(self, cosine: float, language: str | None = None) -> float:
        """Place a cosine on the embedder's scale: an unrelated sentence's (0) to a restatement's (1).

        Args:
            cosine: The question's cosine with a text.
            language: The text's language (None: the question's); a text in another language is placed on the
                scale of questions in this one against texts in that one, lower and narrower.

        Returns:
            The closeness in [0, 1].
        """
        scale = self.scale_for(language)
        span = max(scale.ceiling - scale.floor, 1e-6)
        return float(min(max((cosine - scale.floor) / span, 0.0), 1.0))

    def comparable(self, cosine: float, language: str | None) -> float:
        """A cosine with a text in another language, as the same closeness would read in the question's own.

        Args:
            cosine: The question's cosine with a text (a document's mean vector).
            language: The text's language (None: the question's, returned as it is).

        Returns:
            The cosine mapped from that language pair's scale onto the question's language's.
        """
        scale = self.scale_for(language)
        if scale is self.scale:
            return cosine
        span = max(scale.ceiling - scale.floor, 1e-6)
        return self.scale.floor + (cosine - scale.floor) / span * (self.scale.ceiling - self.scale.floor)

    def scale_for(self, language: str | None) -> DenseScale:
        """The scale of the question against a text in ``language`` (its own when the same, or unknown)."""
        if not language or language == self.language or self.scales is None:
            return self.scale
        return self.scales(language)


@dataclass(frozen=True)
class DenseScale:
    """What an embedder's cosines mean in one language, measured on fixed sentences about nothing in particular.

    The same two numbers serve every question: a question's own wording (an
    everyday question sits closer to everyday sentences) and the user's
    documents (one file or thousands) do not move them.

    Attributes:
        floor: Mean cosine of a sentence asked as a question with the other
            sentences as passages: what an unrelated sentence scores.
        ceiling: Mean cosine of a sentence asked as a question with itself as
            a passage: what a sentence saying the same thing scores.
    """

    floor: float
    ceiling: float


def dense_scale(embedder: Embedder, sentences: Sequence[str], translations: Sequence[str] | None = None) -> DenseScale:
    """Measure an embedder's cosine scale on unrelated sentences.

    Args:
        embedder: The index's embedder.
        sentences: Sentences about unrelated topics (at least two), in one language, asked as questions.
        translations: The same sentences in another language, as passages: the scale of a question in one
            language against passages in the other (a restatement is its translation). None: ``sentences``.

    Returns:
        The scale.
    """
    passages = embedder.embed_passages(list(translations if translations is not None else sentences))
    questions = np.stack([embedder.embed_question(s) for s in sentences])
    cosines = questions @ passages.T
    n = len(sentences)
    ceiling = float(np.trace(cosines) / n)
    floor = float((cosines.sum() - np.trace(cosines)) / (n * n - n))
    return DenseScale(floor=floor, ceiling=max(ceiling, floor + 0.05))


def profile_question(
    question: str,
    embedder: Embedder,
    statistics: TermStatistics,
    scale: DenseScale,
    *,
    crossing: Crossing | None = None,
    scales: Callable[[str], DenseScale] | None = None,
) -> QuestionProfile:
    """Prepare a question for scoring.

    Args:
        question: The question.
        embedder: The index's embedder.
        statistics: IDFs of the index.
        scale: The embedder's scale in the question's language (:func:`dense_scale`).
        crossing: The question's words in the other language of the index, if it holds one.
        scales: The scale of the question against passages in another language, given the language.

    Returns:
        The profile.
    """
    crossed = tuple(tuple(term for term, _ in terms) for _, terms in crossing.words) if crossing else ()
    words = question_words(question)
    heads = [w[-1] for w in words]
    vector = embedder.embed_question(question)
    return QuestionProfile(
        text=question,
        language=detect_language(question),
        words=tuple(words),
        weights=tuple(max(statistics.weight(t) for t in w) for w in words),
        pairs=frozenset(zip(heads, heads[1:], strict=False)),
        vector=vector,
        scale=scale,
        answer_type=expected_answer_type(question),
        crossed=crossed,
        crossed_weights=tuple(max(statistics.weight(t) for t in word) for word in crossed),
        scales=scales,
    )
