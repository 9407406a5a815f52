"""Propositions: short self-contained statements a chat model draws from passages, indexed beside the sentences.

Dense X Retrieval (Chen et al., 2023) retrieves *propositions*, atomic
statements that need no context ("The Aurora API guarantees 99.9% uptime"
where the document says "It guarantees 99.9% uptime"). ``selfcrag ingest
--propositions`` asks the chat model once per passage (consecutive sentences
of one section, up to :data:`PASSAGE_CHARS`); each statement it returns becomes
a point of the same schema, of kind ``proposition``, in a document derived
from the sentences' (:func:`~selfcrag.index.points.propositions_id`), and
names the sentences of its passage it shares the most terms with. A search
that finds it shows those sentences' window, so answers cite the document.

A statement is indexed only when it restates its passage: at least
:data:`MIN_GROUNDED` of its terms are the passage's own, and it holds no URL,
e-mail address or Markdown link. Else a model (or a document that instructs
it) could make a passage the first hit for words it never says.

The model call itself is the caller's (:data:`Propose`; the chat model's is
:func:`selfcrag.graph.propositions.chat_propositions`): this module plans the
passages, links and prepares the statements, and counts the cost. A call
that fails or a reply that does not parse skips its passage with a note: the
sentences are indexed all the same, and the next ``--propositions`` run
decomposes that document again.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction

from selfcrag.index.manifest import DocumentEntry
from selfcrag.index.points import PROPOSITION, StoredSentence, join_sentences, propositions_id
from selfcrag.index.tokenize import document_languages, text_language, tokenize
from selfcrag.index.writer import ProgressCallback
from selfcrag.ingest.sentences import PreparedDocument

# Characters of document text per model call: about the 100 words of Dense X's passages.
PASSAGE_CHARS = 600
# Statements kept per passage: a reply listing more is not a decomposition of 600 characters.
MAX_STATEMENTS = 40
# Share of a statement's distinct terms its passage (sentences, title, section) must hold: a proposition restates
# its passage; a statement partly of other words is the model's own, and indexing it would make the passage the hit
# for them. Measured on 64 honest statements (the prompt's Dense X example in English and Chinese, the tests' scripted
# ones, paraphrases written for the sample knowledge base): 59 hold 2/3 or more, all 26 of Dense X's among them; the 5
# under it (0.44-0.57) are loose rewordings. Of 8 hostile ones, about half the passage's words and half invented, 7
# hold less (0.11-0.60); the one kept is a word list, 9 of its 13 terms the passage's. At 1/2, 6 of the 8 were kept.
MIN_GROUNDED = Fraction(2, 3)
# What makes a statement a link: an address with a scheme, www., mailto:, an e-mail address, a host with a path,
# Markdown link or image syntax, an HTML anchor. The passage's sentences are indexed as they are; a statement is the
# model's text, and a link in it would be an address the model chose.
_LINK = re.compile(
    r"[a-z][a-z0-9+.\-]*://|\b(?:www\.|mailto:)|[\w.+\-]+@[\w\-]+(?:\.[\w\-]+)+"
    r"|\b[a-z0-9\-]+(?:\.[a-z0-9\-]+)*\.[a-z]{2,}/|\]\(|\]\[|<\s*a\b",
    re.IGNORECASE,
)
# What a document whose propositions are incomplete records instead of its content hash, so the next run
# with --propositions decomposes it again.
_INCOMPLETE = "incomplete:"
# Sentences that carry no statement of their own.
_NOT_DECOMPOSED = ("heading", "code")


@dataclass(frozen=True)
class PropositionPassage:
    """What one model call decomposes: consecutive sentences of one section.

    Attributes:
        source: The document's path.
        title: The document's title.
        sentences: The sentences, in order.
    """

    source: str
    title: str
    sentences: tuple[StoredSentence, ...]

    @property
    def text(self) -> str:
        """The passage as the document has it."""
        return join_sentences(self.sentences)

    @property
    def section(self) -> tuple[str, ...]:
        """The heading path of its section."""
        return self.sentences[0].section

    @property
    def where(self) -> str:
        """Its sentences, for people (``sentences 4-6``, counted from 0 as in the index)."""
        return f"sentences {self.first}-{self.last}" if self.last > self.first else f"sentence {self.first}"

    @property
    def first(self) -> int:
        """Position of its first sentence."""
        return self.sentences[0].position

    @property
    def last(self) -> int:
        """Position of its last sentence."""
        return self.sentences[-1].position


@dataclass(frozen=True)
class PropositionReply:
    """What the model made of one passage.

    Attributes:
        statements: The propositions, or None when the call failed or its reply did not parse.
        note: Why there are none, in one line.
        tokens: Tokens the call read and wrote, as the endpoint reported them (0 when it did not).
    """

    statements: list[str] | None
    note: str = ""
    tokens: int = 0


Propose = Callable[[PropositionPassage], PropositionReply]
"""Decompose one passage (the chat model's call, or a scripted one)."""


@dataclass(frozen=True)
class Propositions:
    """How an ingest draws propositions.

    Attributes:
        propose: The model call.
        max_calls: Calls one ingest may make at most; documents past the bound wait for the next run.
    """

    propose: Propose
    max_calls: int


@dataclass
class PropositionReport:
    """What drawing propositions cost and gave.

    Attributes:
        documents: Documents decomposed by this run.
        passages: Passages planned.
        calls: Model calls made.
        tokens: Tokens the endpoint reported, prompts and replies.
        seconds: Time spent waiting for the model.
        made: Propositions indexed.
        ungrounded: Statements dropped: too few of their terms are in the passage they were drawn from.
        linked: Statements dropped: they carry a link.
        skipped: One line per passage skipped (a failed call, a reply that did not parse).
        deferred: Documents left for a later run by the bound on calls.
    """

    documents: int = 0
    passages: int = 0
    calls: int = 0
    tokens: int = 0
    seconds: float = 0.0
    made: int = 0
    ungrounded: int = 0
    linked: int = 0
    skipped: list[str] = field(default_factory=list)
    deferred: int = 0


@dataclass
class PropositionPlan:
    """The passages one ingest decomposes, within its bound on model calls.

    Args:
        max_calls: Model calls the ingest may make.

    Attributes:
        planned: Each document kept, its passages, and whether they are all of its passages.
        passages: Passages planned (one call each).
        deferred: Documents left wholly or partly for a later run by the bound.
    """

    max_calls: int
    planned: list[tuple[PreparedDocument, list[PropositionPassage], bool]] = field(default_factory=list)
    passages: int = 0
    deferred: int = 0

    def offer(self, document: PreparedDocument) -> None:
        """Plan a document's passages, as many as the calls left allow (only those documents are kept)."""
        passages = passages_of(document)
        left = self.max_calls - self.passages
        if passages and left <= 0:
            self.deferred += 1
            return
        taken = passages[:left]
        self.planned.append((document, taken, len(taken) == len(passages)))
        self.passages += len(taken)
        self.deferred += len(taken) < len(passages)


def has_propositions(entry: DocumentEntry | None, document: DocumentEntry) -> bool:
    """Whether a document's indexed propositions are complete and drawn from its current text.

    Args:
        entry: The manifest entry of its propositions (:func:`~selfcrag.index.points.propositions_id`), if any.
        document: The document's own entry.
    """
    return entry is not None and entry.content_hash == document.content_hash


def passages_of(document: PreparedDocument, max_chars: int = PASSAGE_CHARS) -> list[PropositionPassage]:
    """Cut a document into the passages the model decomposes: runs of one section's sentences within ``max_chars``.

    Headings and code are left out (they state nothing on their own); a sentence longer than
    ``max_chars`` is a passage by itself.

    Args:
        document: The document, split.
        max_chars: Characters of document text per passage.

    Returns:
        The passages, in document order.
    """
    passages: list[PropositionPassage] = []
    run: list[StoredSentence] = []

    def close() -> None:
        if run:
            passages.append(PropositionPassage(document.entry.source, document.entry.title, tuple(run)))
            run.clear()

    for sentence in document.sentences:
        if sentence.kind in _NOT_DECOMPOSED:
            close()
            continue
        if run and (
            sentence.section_index != run[0].section_index
            or sentence.position != run[-1].position + 1
            or sentence.end - run[0].start > max_chars
        ):
            close()
        run.append(sentence)
    close()
    return passages


def link_sources(statement: str, passage: PropositionPassage) -> tuple[int, int] | None:
    """The sentences of a passage a statement was drawn from: those sharing at least half as many terms as the best.

    Args:
        statement: One proposition.
        passage: The passage it was drawn from.

    Returns:
        Positions of the first and last of those sentences; None when under ``MIN_GROUNDED`` of the statement's
        terms are in the passage (its sentences, title and section): the model wrote it, it did not draw it.
    """
    terms = set(tokenize(statement))
    sentence_terms = [set(tokenize(sentence.text)) for sentence in passage.sentences]
    shared = [len(terms & these) for these in sentence_terms]
    around = set(tokenize(" ".join([passage.title, *passage.section]))).union(*sentence_terms)
    if not terms or len(terms & around) < MIN_GROUNDED * len(terms) or max(shared) == 0:
        return None
    best = max(shared)
    linked = [sentence.position for sentence, count in zip(passage.sentences, shared, strict=True) if 2 * count >= best]
    return linked[0], linked[-1]


def carries_link(statement: str) -> bool:
    """Whether a statement holds a link: a URL, an e-mail address, Markdown link syntax or an HTML anchor.

    Args:
        statement: One proposition.
    """
    return _LINK.search(statement) is not None


def proposition_document(
    document: PreparedDocument,
    drawn: Sequence[tuple[PropositionPassage, Sequence[str]]],
    *,
    complete: bool,
    max_chars: int,
) -> tuple[PreparedDocument, int, int]:
    """The propositions of a document, as the document of points they are indexed as.

    Args:
        document: The document they were drawn from.
        drawn: Each decomposed passage with its statements.
        complete: Every passage was decomposed (else the next ``--propositions`` run decomposes it again).
        max_chars: Longest statement the embedder takes (longer ones are cut).

    Returns:
        The propositions' document (one point per distinct statement drawn from its passage, numbered from 0),
        how many statements were dropped as not drawn from their passage (:func:`link_sources`), and how many
        as carrying a link (:func:`carries_link`).
    """
    doc_id = propositions_id(document.entry.doc_id)
    by_position = {s.position: s for s in document.sentences}
    content_hash = document.entry.content_hash if complete else _INCOMPLETE + document.entry.content_hash
    sentences: list[StoredSentence] = []
    tokens: list[list[str]] = []
    ungrounded = linked = 0
    for passage, statements in drawn:
        seen: set[str] = set()
        for raw in statements[:MAX_STATEMENTS]:
            statement = " ".join(raw.split())[:max_chars]
            if not statement or statement in seen:
                continue
            seen.add(statement)
            if carries_link(statement):
                linked += 1
                continue
            sources = link_sources(statement, passage)
            if sources is None:
                ungrounded += 1
                continue
            first, last = sources
            start, end = by_position[first].start, by_position[last].end
            proposition = StoredSentence(
                doc_id=doc_id,
                position=len(sentences),
                start=start,
                end=end,
                text=statement,
                tail="",
                section=passage.section,
                section_index=by_position[first].section_index,
                section_first=len(sentences),
                section_last=len(sentences),
                section_start=start,
                section_end=end,
                kind=PROPOSITION,
                source=document.entry.source,
                content_hash=content_hash,
                terms=0,
                source_first=first,
                source_last=last,
                language=text_language(statement),
            )
            terms = tokenize(proposition.searchable())
            sentences.append(replace(proposition, terms=len(terms)))
            tokens.append(terms)
    entry = DocumentEntry(
        doc_id,
        document.entry.source,
        document.entry.title,
        content_hash,
        len(sentences),
        sum(map(len, tokens)),
        language=document_languages(s.text for s in sentences),
    )
    return PreparedDocument(entry, sentences, tokens), ungrounded, linked


def drawn_documents(
    plan: PropositionPlan,
    propose: Propose,
    max_chars: int,
    report: PropositionReport,
    progress: ProgressCallback | None = None,
) -> Iterator[PreparedDocument]:
    """Documents -> their propositions: the model asked for the planned passages, one call each.

    Args:
        plan: The passages to decompose.
        propose: The model call.
        max_chars: Longest statement the embedder takes.
        report: Counts the calls, their cost and what they gave, as they are made.
        progress: Told ``progress("drawing propositions", calls made, calls planned)``.

    Yields:
        Each planned document's propositions, as a document to index like any other (none when a document gave
        none and is to be decomposed again).
    """
    for document, passages, whole in plan.planned:
        drawn: list[tuple[PropositionPassage, list[str]]] = []
        complete = whole
        for passage in passages:
            began = time.perf_counter()
            reply = propose(passage)
            report.seconds += time.perf_counter() - began
            report.calls += 1
            report.tokens += reply.tokens
            if progress:
                progress("drawing propositions", report.calls, report.passages)
            if reply.statements is None:
                complete = False
                report.skipped.append(f"{document.entry.source} ({passage.where}): {reply.note}")
                continue
            drawn.append((passage, reply.statements))
        made, ungrounded, linked = proposition_document(document, drawn, complete=complete, max_chars=max_chars)
        report.ungrounded += ungrounded
        report.linked += linked
        report.documents += 1
        if made.sentences or complete:
            report.made += len(made.sentences)
            yield made
