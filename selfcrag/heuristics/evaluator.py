"""The offline retrieval evaluator: how well a passage, or one of its strips, answers a question.

Every score is a weighted mean of signals in [0, 1], all defined here:

* coverage: IDF-weighted share of the question's words the text contains,
  counting those of its document title, headings and lead-in as present;
* phrase: share of the question's adjacent term pairs found adjacent;
* dense: the embedding cosine on the embedder's own scale in the question's
  language: 0 is what an unrelated sentence scores, 1 what a restatement
  scores, both measured once on fixed everyday sentences (see
  :mod:`selfcrag.heuristics.background`), never on the user's documents or
  the question, so a score means the same for one file and for thousands,
  and for an everyday question as for a technical one;
* answer type: whether the text holds the kind of value asked for (a
  duration for "how long", an amount for "price"), when one is asked for; a
  text with no number at all then also loses a fifth of its score;
* agreement (passages only): whether both retrievers, dense and BM25, found it;
* standing (passages only): its place among the passages its query found,
  by fused score, and whether a retriever ranked one of its sentences first.

Apart from these scores, :meth:`OfflineEvaluator.topic` tells whether what was retrieved is about the question
at all: a passage's score ranks it among what one search found (its standing lifts the best passage found for
any question), so it cannot tell a question the documents are about from one they are not.

Meaning weighs more than shared words: a question worded with synonyms
shares few words with its answer. A heading counts for half: it names a topic but answers nothing. A passage
scores by its best strip, plus the coverage of all its sentences and headings
together, the agreement of the retrievers and its standing. The thresholds that turn scores
into CRAG's actions are knobs of :class:`graph.context.Context`.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np

from selfcrag.cite.markers import defuse_markers
from selfcrag.heuristics.addresses import mask_addresses
from selfcrag.heuristics.background import BACKGROUND_SENTENCES, CACHE_DIR, remembered_background
from selfcrag.heuristics.signals import (
    QUESTION_TERMS,
    DenseScale,
    QuestionProfile,
    answer_type_match,
    dense_scale,
    profile_question,
    term_statistics,
)
from selfcrag.heuristics.strips import companions, passage_strips, strip_vectors
from selfcrag.index.points import StoredSentence
from selfcrag.index.reader import IndexReader
from selfcrag.index.tokenize import detect_language, text_language, tokenize
from selfcrag.search.retriever import Retriever
from selfcrag.spans import Passage, Strip

# Meaning (dense) outweighs shared words (coverage): real users paraphrase ("很久不用" for "长期不用").
STRIP_WEIGHTS = {"coverage": 0.30, "phrase": 0.10, "dense": 0.45, "answer_type": 0.15}
# Chosen on the calibration halves of zh-dev and en-dev (``selfcrag eval --part calibration``).
PASSAGE_WEIGHTS = {"best_strip": 0.62, "coverage": 0.08, "agreement": 0.08, "standing": 0.15, "first": 0.07}
HEADING_FACTOR = 0.5
# A question asking for a value (a duration, an amount) is not answered by a sentence holding no number.
NO_VALUE_FACTOR = 0.8
# Grade a passage in another language than the question's needs before it counts as being on the question's topic:
# chosen on XQuAD's cross-language sets against other sets' questions (docs/results.md, "Across languages").
ACROSS_LANGUAGES_GRADE = 0.55
# A passage in another language counts for the topic only when one of its own sentences comes this near the question
# too (on that pair's scale, its commonness taken off: see OfflineEvaluator.commonness): across languages a whole
# document's mean meaning comes as near an unrelated question.
# Chosen on the calibration halves: zh-dev's questions over en-dev end not found 0.940 (0.907 without it), for one
# of XQuAD's first 80 Chinese questions over English paragraphs losing its evidence (0.42: 0.961 for four).
ACROSS_LANGUAGES_SENTENCE = 0.35
# Sentences either side of a passage whose mean meaning is what the passage is about: the whole of a short
# document, a section's worth of a long one (the calibration sets' documents are short).
TOPIC_REACH = 20


@dataclass(frozen=True)
class StripSignals:
    """The signals of one strip, each in [0, 1] (answer_type None when no value is asked for)."""

    coverage: float
    phrase: float
    dense: float
    answer_type: float | None


@dataclass(frozen=True)
class Topic:
    """How near what was retrieved comes to a question's topic.

    Attributes:
        document: The highest cosine of the question with the mean vector of the text around a passage (its
            document, up to ``TOPIC_REACH`` sentences either side): what the passage is about, which an unrelated
            question's nearest sentence does not share with it.
        sentence: The highest closeness in meaning of a passage's sentence to the question (0 unrelated, 1 a
            restatement: the evaluator's ``dense`` signal).
        distinct: The same, once what each sentence has in common with everything is taken off
            (:meth:`OfflineEvaluator.commonness`): a licence's "Do not retitle any existing section" comes as
            near "How long can I keep a borrowed DVD?" as a paraphrased answer does, and as near every other
            question.
    """

    document: float
    sentence: float
    distinct: float = 0.0


def strip_signals(
    profile: QuestionProfile, text: str, setting: str, cosine: float, language: str | None = None
) -> StripSignals:
    """Measure a sentence against a question.

    Args:
        profile: The question.
        text: The sentence.
        setting: What the sentence stands in: its heading path, the
            sentences it leans on (a list item's lead-in) and, for a piece of
            a long table, the table's header. The question's
            words found there count as covered: a sentence under "Rate limits"
            in the "Aurora API" guide need not repeat either.
        cosine: Cosine of the question vector with the sentence vector.
        language: The sentence's language (None: the question's): its cosine is placed on that pair's scale.

    Returns:
        The signals.
    """
    tokens = [t for t in tokenize(text) if t not in QUESTION_TERMS]
    written = f"{text} {setting}"
    terms = set(tokens) | set(tokenize(setting))
    # A sentence in the other language is read on that pair's scale (lower, narrower) only when it holds some of
    # the question's words carried into it: one holding none (an English copyright line among Chinese pages) is
    # measured as the question's own language measures a sentence.
    across = language if profile.crossed_coverage(terms, written) > 0 else None
    return StripSignals(
        coverage=profile.coverage(terms, written),
        phrase=profile.phrase_match(tokens),
        dense=profile.dense(cosine, across),
        answer_type=answer_type_match(text, profile.answer_type),
    )


def read_for_closeness(profile: QuestionProfile, text: str) -> str:
    """The text whether a question is on its topic is measured on (:meth:`OfflineEvaluator.topic`): no addresses.

    An e-mail address, URL or file path names a place, and its words (``jupiterrise.com``) would bring any
    question sharing them near. A question asking for an address is answered by one: then nothing is masked.
    Grades and answers read the sentence whole: an address is often the answer ("write to bugs@...").

    Args:
        profile: The question.
        text: A sentence, or the setting it stands in.

    Returns:
        The text without its addresses, or as it is.
    """
    return text if profile.answer_type == "url" else mask_addresses(text)


def score_strip(signals: StripSignals, kind: str) -> float:
    """Combine a strip's signals into its relevance score.

    Args:
        signals: From :func:`strip_signals`.
        kind: The sentence kind (headings count for half).

    Returns:
        A score in [0, 1].
    """
    values = {
        "coverage": signals.coverage,
        "phrase": signals.phrase,
        "dense": signals.dense,
        "answer_type": signals.answer_type,
    }
    used = [(STRIP_WEIGHTS[name], value) for name, value in values.items() if value is not None]
    score = sum(w * v for w, v in used) / sum(w for w, _ in used)
    if signals.answer_type == 0.0:
        score *= NO_VALUE_FACTOR
    return score * (HEADING_FACTOR if kind == "heading" else 1.0)


def scored_strip(sentence: StoredSentence, signals: StripSignals, leans_on: Sequence[int] = ()) -> Strip:
    """Write a measured sentence of the index as a knowledge strip of the state.

    Args:
        sentence: The sentence.
        signals: Its signals against the question (:meth:`OfflineEvaluator.measure_strips`).
        leans_on: Positions of the sentences it leans on.

    Returns:
        The strip, with its score and the signals the outcome is decided on; a document's own ``[n]`` written
        ``［n］`` so that it cannot pass for a citation.
    """
    strip = Strip(
        position=sentence.position,
        kind=sentence.kind,
        text=defuse_markers(sentence.text),
        score=round(score_strip(signals, sentence.kind), 4),
        dense=round(signals.dense, 4),
        coverage=round(signals.coverage, 4),
        leans_on=list(leans_on),
        place=sentence.place,
    )
    # Only where they say something: most sentences stand on one page, and are no piece of a long table.
    if sentence.place_starts:
        strip["place_starts"] = list(sentence.place_starts)
    if sentence.table_header is not None:
        strip["table_header"] = defuse_markers(sentence.table_header)
    return strip


def score_context(best_strip: float, coverage: float, agreement: float, standing: int, first: bool) -> float:
    """Combine a passage's signals into the evaluator's score.

    Args:
        best_strip: Score of its best strip.
        coverage: Question coverage of all its sentences and its section headings together.
        agreement: 1.0 when both retrievers found it, 0.0 when one did.
        standing: Its place (from 1) among the passages its query found, by fused score.
        first: Whether a retriever ranked one of its sentences first.

    Returns:
        A score in [0, 1].
    """
    return (
        PASSAGE_WEIGHTS["best_strip"] * best_strip
        + PASSAGE_WEIGHTS["coverage"] * coverage
        + PASSAGE_WEIGHTS["agreement"] * agreement
        + PASSAGE_WEIGHTS["standing"] / max(standing, 1)
        + PASSAGE_WEIGHTS["first"] * first
    )


class OfflineEvaluator:
    """Scores passages and strips of one retriever's index (vectors come from its store).

    Args:
        retriever: The open retriever.
    """

    def __init__(self, retriever: Retriever) -> None:
        self.retriever = retriever
        self._lock = threading.Lock()
        self._scales: dict[tuple[str, str], DenseScale] = {}
        self._profiles: dict[tuple[str, str], QuestionProfile] = {}
        self._everyday: dict[str, np.ndarray] = {}

    @property
    def index(self) -> IndexReader:
        """The retriever's open index."""
        return self.retriever.index

    def profile(self, question: str) -> QuestionProfile:
        """Prepare a question once per index generation (later calls are free).

        Args:
            question: The question.

        Returns:
            Its profile.
        """
        index = self.index
        key = (index.generation, question)
        with self._lock:
            known = self._profiles.get(key)
        if known is None:
            asked = detect_language(question)
            crossing = self.retriever.crossing(question)
            known = profile_question(
                question,
                self.retriever.embedder,
                term_statistics(index),
                self._scale(asked),
                crossing=crossing,
                scales=partial(self._scale, asked),
            )
            with self._lock:
                if len(self._profiles) > 256:
                    self._profiles.clear()
                self._profiles[key] = known
        return known

    def forget_questions(self) -> None:
        """Drop the prepared questions, so each is embedded again when next asked (fair timing between runs)."""
        with self._lock:
            self._profiles.clear()

    def _scale(self, asked: str, read: str | None = None) -> DenseScale:
        """The cosine scale of a question in language ``asked`` against passages in ``read`` (the same when None).

        Across languages a restatement is the background sentence's translation (the two sets are parallel).
        """
        read = read or asked
        with self._lock:
            if (asked, read) not in self._scales:
                questions = BACKGROUND_SENTENCES.get(asked, BACKGROUND_SENTENCES["en"])
                passages = BACKGROUND_SENTENCES.get(read, BACKGROUND_SENTENCES["en"])
                # Their vectors are kept in the data folder: the same in every process, costly to embed each time.
                cache = self.retriever.settings.data_dir / CACHE_DIR
                embedder = remembered_background(
                    remembered_background(self.retriever.embedder, questions, cache), passages, cache
                )
                self._scales[asked, read] = dense_scale(embedder, questions, passages)
            return self._scales[asked, read]

    def _closeness_vectors(
        self, profile: QuestionProfile, sentences: Sequence[StoredSentence], vectors: np.ndarray
    ) -> np.ndarray:
        """Vectors of sentences (stored, or just embedded), those holding an address read without it where nearer.

        Only a sentence holding an address costs an embedding: it is embedded as ingestion embeds it
        (:meth:`StoredSentence.searchable`), its addresses masked (:func:`read_for_closeness`). The masked vector
        replaces the stored one only when it is farther from the question: an address may bring a sentence near
        ("<tgc@jupiterrise.com>"), but what is left of a line without its URL ("GNU Libtasn1 home page:") is
        nearer to anything than the line was.
        """
        return self._masked_vectors(profile, [s.searchable() for s in sentences], vectors)

    def _masked_vectors(self, profile: QuestionProfile, texts: Sequence[str], vectors: np.ndarray) -> np.ndarray:
        """``vectors`` of ``texts``, each replaced by its masked text's where that is farther from the question."""
        masked = [read_for_closeness(profile, text) for text in texts]
        changed = [i for i, (text, read) in enumerate(zip(texts, masked, strict=True)) if read != text]
        if not changed:
            return vectors
        vectors = np.array(vectors, dtype=np.float32)
        fresh = np.asarray(self.retriever.embedder.embed_passages([masked[i] for i in changed]), dtype=np.float32)
        farther = fresh @ profile.vector < vectors[changed] @ profile.vector
        vectors[[i for i, far in zip(changed, farther, strict=True) if far]] = fresh[farther]
        return vectors

    def measure_strips(self, profile: QuestionProfile, strips: Sequence[StoredSentence]) -> list[StripSignals]:
        """Measure strips against a question: the signals their scores are made of.

        Args:
            profile: The question.
            strips: Strips of the retriever's index.

        Returns:
            One set of signals per strip.
        """
        if not strips:
            return []
        cosines = strip_vectors(self.retriever, strips) @ profile.vector
        measured = []
        for strip, cosine in zip(strips, cosines, strict=True):
            entry = self.index.document(strip.doc_id)
            title = entry.title if entry is not None else ""
            # A long table's later piece stands under its header: the columns' names are the rows' words too.
            header = [strip.table_header] if strip.table_header is not None else []
            setting = " ".join([title, *strip.section, *header, *(c.text for c in companions(self.index, strip))])
            language = strip.language or text_language(strip.text)
            measured.append(strip_signals(profile, strip.text, setting, float(cosine), language))
        return measured

    def score_strips(self, profile: QuestionProfile, strips: Sequence[StoredSentence]) -> list[float]:
        """Score strips against a question.

        Args:
            profile: The question.
            strips: Strips of the retriever's index.

        Returns:
            One score per strip.
        """
        return [
            score_strip(signals, strip.kind)
            for strip, signals in zip(strips, self.measure_strips(profile, strips), strict=True)
        ]

    def score_texts(self, profile: QuestionProfile, texts: Sequence[str]) -> list[float]:
        """Score texts that are not sentences of the index (the lines of a long sentence), embedded afresh.

        Args:
            profile: The question.
            texts: The texts.

        Returns:
            One score per text, on the scale of :meth:`score_strips`.
        """
        if not texts:
            return []
        cosines = self.retriever.embedder.embed_passages(list(texts)) @ profile.vector
        return [
            score_strip(strip_signals(profile, text, "", float(cosine), text_language(text)), "text")
            for text, cosine in zip(texts, cosines, strict=True)
        ]

    def commonness(self, asked: str, read: str, vectors: np.ndarray) -> np.ndarray:
        """How much nearer than unrelated sentences do to each other each text comes to everyday questions.

        Some sentences come near every question: a licence's clauses, a copyright line, boilerplate. Asked the
        background sentences (:mod:`selfcrag.heuristics.background`, about nothing in particular) as questions,
        such a sentence's mean cosine stands above the floor of the scale (what unrelated sentences score); a
        sentence about one thing stands at it or below. What stands above is what the sentence has in common
        with any question, and says nothing about this one's topic (the hubness correction of cross-lingual
        word retrieval, CSLS, with everyday questions as the neighbourhood).

        Args:
            asked: The question's language (the background questions are asked in it).
            read: The texts' language (the floor is that language pair's).
            vectors: The texts' vectors, one a row.

        Returns:
            Per text, the cosine above the floor (0 for none), to take off its cosine with a question.
        """
        with self._lock:
            questions = self._everyday.get(asked)
        if questions is None:
            sentences = BACKGROUND_SENTENCES.get(asked, BACKGROUND_SENTENCES["en"])
            cache = self.retriever.settings.data_dir / CACHE_DIR
            embedder = remembered_background(self.retriever.embedder, sentences, cache)
            questions = np.stack([embedder.embed_question(text) for text in sentences]).astype(np.float32)
            with self._lock:
                self._everyday[asked] = questions
        return np.maximum((vectors @ questions.T).mean(axis=1) - self._scale(asked, read).floor, 0.0)

    def topic(
        self, profile: QuestionProfile, passages: Sequence[Passage], grades: Mapping[str, float] | None = None
    ) -> Topic:
        """Measure how near retrieved passages come to a question's topic (see :class:`Topic`).

        A search always finds something: the nearest sentences of documents about something else score like
        a paraphrased answer's, one sentence at a time. The text around them does not: a question is near the
        mean meaning of a document about it, and far from one about something else.

        Across languages cosines tell less: an unrelated document in the other language comes as near a question
        (on that pair's scale) as one about it does. A passage in the other language is measured only when its
        grade reached :data:`ACROSS_LANGUAGES_GRADE` as well.

        Args:
            profile: The question.
            passages: Passages retrieved from the retriever's index.
            grades: Their grades, by id (None: every passage is measured).

        Returns:
            The closest any passage comes; 0 for both when none is indexed any more.
        """
        document = sentence = distinct = 0.0
        # A passage found by several queries is measured once, by its best grade.
        graded: dict[tuple[str, int, int], float] = {}
        for p in passages:
            key = (p["doc_id"], p["first"], p["last"])
            graded[key] = max(graded.get(key, 0.0), 1.0 if grades is None else grades.get(p["id"], 0.0))
        for (doc_id, first, last), grade in graded.items():
            entry = self.index.document(doc_id)
            if entry is None or entry.sentence_count == 0:
                continue
            language = entry.language if entry.language in ("en", "zh") else None
            if language not in (None, profile.language) and grade < ACROSS_LANGUAGES_GRADE:
                continue
            start, end = max(first - TOPIC_REACH, 0), min(last + TOPIC_REACH, entry.sentence_count - 1)
            keys = [(doc_id, p) for p in range(start, end + 1)]
            vectors = self.retriever.sentence_vectors(keys)
            # Addresses masked here too: a NEWS line's "<tgc@jupiterrise.com>" is no sentence about Jupiter.
            stored = self.index.sentences(keys)
            around = [i for i, key in enumerate(keys) if key in stored]
            vectors[around] = self._closeness_vectors(profile, [stored[keys[i]] for i in around], vectors[around])
            own = vectors[max(first - start, 0) : last - start + 1]
            cosines = own @ profile.vector
            closest = apart = 0.0
            if len(own):
                closest = profile.dense(float(cosines.max()), language)
                common = self.commonness(profile.language, language or profile.language, own)
                apart = profile.dense(float((cosines - common).max()), language)
            if language not in (None, profile.language) and apart < ACROSS_LANGUAGES_SENTENCE:
                continue
            mean = vectors.mean(axis=0)
            norm = float(np.linalg.norm(mean))
            # A document in the other language is measured on that language pair's scale, read as its own would be.
            if norm > 0:
                document = max(document, profile.comparable(float(mean @ profile.vector) / norm, language))
            sentence, distinct = max(sentence, closest), max(distinct, apart)
        return Topic(document=document, sentence=sentence, distinct=distinct)

    def score_passage(self, profile: QuestionProfile, passage: Passage, standing: int = 1) -> float:
        """Score a retrieved passage (CRAG's retrieval evaluator).

        Args:
            profile: The question.
            passage: A passage retrieved from the retriever's index.
            standing: Its place (from 1) among the passages its query found (see :func:`standings`).

        Returns:
            A score in [0, 1]; 0 for a passage whose document is no longer indexed.
        """
        strips = passage_strips(self.index, passage["doc_id"], passage["first"], passage["last"])
        if not strips:
            return 0.0
        best = max(self.score_strips(profile, strips))
        terms = set(tokenize(" ".join([passage["title"], *passage["section"], *(s.text for s in strips)])))
        agreement = 1.0 if passage["dense_rank"] is not None and passage["bm25_rank"] is not None else 0.0
        first = 1 in (passage["dense_rank"], passage["bm25_rank"])
        return score_context(best, profile.coverage(terms), agreement, standing, first)


def standings(passages: Sequence[Passage]) -> dict[str, int]:
    """Place each passage (from 1) among those its query found, by fused score: retrieval's own evidence.

    Args:
        passages: Retrieved passages, of one or more queries.

    Returns:
        The place of each passage, by id.
    """
    by_query: dict[str, list[Passage]] = {}
    for passage in passages:
        by_query.setdefault(passage["query"], []).append(passage)
    return {
        p["id"]: place
        for group in by_query.values()
        for place, p in enumerate(sorted(group, key=lambda p: -p["score"]), 1)
    }
