"""Exact dense search ranks as brute force over the stored vectors, so quality figures need not depend on HNSW."""

from __future__ import annotations

import numpy as np
import pytest

from selfcrag.graph.context import Context
from selfcrag.index.points import sentence_point_id
from selfcrag.index.store import EXACT
from selfcrag.search.retriever import Retriever

QUESTIONS = ("How long are access tokens valid?", "退款多久能到账？", "What does the kettle's warranty cover?")


def brute_force(retriever: Retriever, question: str, k: int) -> list[tuple[str, float]]:
    """The k stored sentences whose vectors are nearest the question's, by a scan of every stored vector."""
    index = retriever.index
    keys = [(s.doc_id, s.position) for s in index.iter_sentences()]
    stored = index.dense_vectors(keys)
    ids = [sentence_point_id(*key) for key in keys]
    matrix = np.stack([stored[key] for key in keys])
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    scores = matrix @ retriever.embedder.embed_question(question)
    order = np.argsort(-scores, kind="stable")[:k]
    return [(ids[i], float(scores[i])) for i in order]


@pytest.mark.parametrize("question", QUESTIONS)
def test_exact_search_finds_the_brute_force_top_50(retriever: Retriever, question: str) -> None:
    expected = brute_force(retriever, question, 50)
    lists = retriever.index.search(retriever.embedder.embed_question(question), None, candidates=50, dense_search=EXACT)
    assert [score for _, score in lists.dense] == pytest.approx([score for _, score in expected], abs=1e-4)
    # The same sentences, up to the order of equal scores.
    by_id = dict(expected)
    floor = expected[-1][1] - 1e-4
    assert all(by_id.get(pid, floor) >= floor - 1e-4 for pid, _ in lists.dense)


def test_the_dense_search_knob_makes_the_retriever_search_exactly(
    retriever: Retriever, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SELFCRAG_DENSE_SEARCH", "exact")
    config = Context().search_config(mode="dense")
    assert config.dense_search == "exact"
    asked = []
    search = retriever.index.search

    def recording(*args: object, **kwargs: object) -> object:
        asked.append(kwargs.get("dense_search"))
        return search(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(retriever.index, "search", recording)
    found = retriever.search(QUESTIONS[0], config)
    assert asked == [EXACT]
    best = brute_force(retriever, QUESTIONS[0], 1)[0][0]
    top = found.passages[0]
    assert sentence_point_id(top["doc_id"], top["first"]) == best or any(
        sentence_point_id(top["doc_id"], p) == best for p in range(top["first"], top["last"] + 1)
    )
