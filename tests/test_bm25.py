import numpy as np

from selfcrag.index.bm25 import LuceneBM25, SentenceBM25
from selfcrag.index.tokenize import tokenize

CORPUS = [
    "退款在审核通过后 3 个工作日内原路退回。",
    "仓库收到退货后 2 个工作日内完成验货。",
    "生鲜食品不支持七天无理由退货。",
    "Application logs are kept for 90 days.",
    "Daily database backups are retained for 35 days.",
]


def test_scores_equal_rank_bm25_with_lucene_idf():
    tokens = [tokenize(s) for s in CORPUS]
    index = SentenceBM25(tokens)
    reference = LuceneBM25(tokens, k1=1.2, b=0.75)
    for query in ("退款多久退回", "how long are logs kept", "工作日 days"):
        q = tokenize(query)
        np.testing.assert_allclose(index.scores(q), reference.get_scores(q), rtol=1e-5)


def test_term_in_most_sentences_still_scores_positive():
    # BM25Okapi gives such a term zero IDF; in a tiny corpus every score would be 0.
    tokens = [tokenize(s) for s in ("猫在睡觉", "猫在吃饭", "猫在玩耍")]
    scores = SentenceBM25(tokens).scores(tokenize("猫"))
    assert (scores > 0).all()


def test_top_returns_best_first_and_skips_non_matching():
    index = SentenceBM25([tokenize(s) for s in CORPUS])
    top = index.top(tokenize("database backups retained"), 10)
    assert top[0][0] == 4
    assert all(score > 0 for _, score in top)
    assert 0 not in [row for row, _ in top]


def test_top_limits_to_n():
    index = SentenceBM25([tokenize(s) for s in CORPUS])
    assert len(index.top(tokenize("工作日 days"), 2)) == 2


def test_unknown_terms_and_empty_corpus_give_no_hits():
    assert SentenceBM25([tokenize(s) for s in CORPUS]).top(["zzzz"], 5) == []
    assert SentenceBM25([]).top(tokenize("anything"), 5) == []
