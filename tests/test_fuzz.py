"""Property tests: the text pipeline never raises and keeps its invariants on any input."""

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from selfcrag.files.loaders import LoadedFile
from selfcrag.index.reader import MemoryIndex
from selfcrag.index.tokenize import tokenize
from selfcrag.ingest.sentences import index_document
from selfcrag.search.fusion import reciprocal_rank_fusion, weighted_score_fusion
from selfcrag.search.windows import expand_windows
from selfcrag.spans import SentenceHit
from selfcrag.split import split_sentences

PIECES = [
    "# 标题",
    "## Section",
    "第一句。",
    "第二句！",
    "Hello there.",
    "Dr. Who v2.1 costs 3.5 USD.",
    "- item",
    "7.1 条款",
    "| a | b |",
    "```\ncode\n```",
    "\n",
    "\n\n",
    " ",
    "，",
    "…",
    "https://x.example/a.b",
    "①",
]
texts = st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=30)), max_size=40).map("".join)


@settings(deadline=None)
@given(texts)
def test_tokenize_never_raises_and_gives_clean_terms(text):
    terms = tokenize(text)
    assert all(term and not term.isspace() and " " not in term for term in terms)


@settings(deadline=None)
@given(texts, st.integers(min_value=8, max_value=400))
def test_every_character_lands_in_exactly_one_sentence_record(text, max_chars):
    doc = index_document(LoadedFile(Path("/kb/x.md"), text), max_chars=max_chars)
    covered = [0] * len(text)
    for sentence in doc.sentences:
        assert 0 < sentence.end - sentence.start <= max_chars
        for i in range(sentence.start, sentence.end):
            covered[i] += 1
    assert all(count == 1 for i, count in enumerate(covered) if not text[i].isspace())
    assert all(count <= 1 for count in covered)
    assert len(doc.tokens) == len(doc.sentences) == len(split_sentences(text, max_chars))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(texts, min_size=1, max_size=3),
    st.data(),
    st.integers(min_value=0, max_value=3),
    st.integers(min_value=20, max_value=300),
    st.integers(min_value=1, max_value=6),
)
def test_windows_never_cross_documents_or_sections_and_never_overlap(docs, data, window, max_chars, top_k):
    indexed = [index_document(LoadedFile(Path(f"/kb/{i}.md"), t), max_chars=400) for i, t in enumerate(docs)]
    index = MemoryIndex(indexed)
    texts_by_id = {d.entry.doc_id: t for d, t in zip(indexed, docs, strict=True)}
    keys = sorted(index.by_key)
    if not keys:
        return
    rows = data.draw(st.lists(st.integers(0, len(keys) - 1), max_size=20))
    hits = [
        SentenceHit(
            doc_id=keys[row][0],
            position=keys[row][1],
            score=1.0 / (i + 1),
            dense_rank=None,
            bm25_rank=None,
            dense_score=None,
            bm25_score=None,
        )
        for i, row in enumerate(rows)
    ]
    passages = expand_windows(index, hits, window=window, max_chars=max_chars, top_k=top_k)
    assert len(passages) <= top_k
    for passage in passages:
        doc_id, first, last = passage["doc_id"], passage["first"], passage["last"]
        sections = {index.by_key[(doc_id, p)].section_index for p in range(first, last + 1)}
        assert len(sections) == 1
        assert passage["text"] == texts_by_id[doc_id][passage["start"] : passage["end"]]
        assert len(passage["text"]) <= max_chars or first == last
    spans = sorted((p["doc_id"], p["first"], p["last"]) for p in passages)
    for (d1, _, last1), (d2, first2, _) in zip(spans, spans[1:], strict=False):
        assert d1 != d2 or last1 < first2


@settings(deadline=None)
@given(st.lists(st.lists(st.integers(0, 30), max_size=15, unique=True), min_size=1, max_size=3))
def test_rrf_keeps_every_id_once_best_first(rankings):
    fused = reciprocal_rank_fusion(rankings, k=60)
    assert sorted(key for key, _ in fused) == sorted({k for r in rankings for k in r})
    scores = [score for _, score in fused]
    assert scores == sorted(scores, reverse=True) and all(s > 0 for s in scores)


@settings(deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(0, 30), st.floats(-100, 100)), max_size=10), min_size=1, max_size=3))
def test_weighted_fusion_scores_stay_within_the_weights(lists):
    weights = [1.0 / len(lists)] * len(lists)
    deduped = [list(dict(items).items()) for items in lists]
    for _, score in weighted_score_fusion(deduped, weights):
        assert -1e-9 <= score <= 1 + 1e-9
