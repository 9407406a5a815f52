"""Eight questions at once from threads of one process, sharing one retriever (offline path).

The embedder's C engine, Qdrant's local client, the BM25 index, the offline
evaluator's caches and the graph's memory are shared by every thread; each
answer must be the one the question gets when asked alone.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import TypeVar

import pytest

from selfcrag.graph.api import Answer, Session, ask
from selfcrag.graph.context import Context
from selfcrag.ingest.run import ingest

# (question, evidence the answer must quote): four Chinese, four English, from tests/sample_questions.md.
QUESTIONS = [
    ("青禾优选的无理由退货期限是多久？", "自签收次日起 7 天内，商品完好"),
    ("退货审核通过后，退款多久能退回？", "退款在审核通过后 3 个工作日内原路退回"),
    ("星火智能音箱怎么恢复出厂设置？", "同时按住静音键和音量减键 10 秒"),
    ("出差回来后，差旅费最晚要在多少天内提交报销？", "员工应在出差结束后 30 日内提交报销申请"),
    ("How long are application logs kept?", "Application logs are kept for 90 days"),
    ("For how many days are daily database backups retained?", "Daily database backups are retained for 35 days."),
    ("How long is an Aurora access token valid?", "Access tokens expire after 3600 seconds (one hour)."),
    ("What are the core hours at the Harborview office?", "Our core hours are 10:00 to 16:00."),
]

Result = TypeVar("Result")


def all_at_once(calls: list[Callable[[], Result]]) -> list[Result]:
    """Run calls in as many threads, released together by a barrier."""
    barrier = threading.Barrier(len(calls))

    def run(call: Callable[[], Result]) -> Result:
        barrier.wait()
        return call()

    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        return list(pool.map(run, calls))


def same(a: Answer, b: Answer) -> bool:
    return (a.answer, a.citations, a.route, a.abstained) == (b.answer, b.citations, b.route, b.abstained)


def test_eight_concurrent_questions_get_the_answers_they_get_alone(kb_dir: Path) -> None:
    with Session(data_dir=kb_dir) as session:
        alone = [session.ask(question) for question, _ in QUESTIONS]
        assert all(evidence in a.answer for a, (_, evidence) in zip(alone, QUESTIONS, strict=True))
        for _ in range(2):
            together = all_at_once([partial(session.ask, q) for q, _ in QUESTIONS])
            assert all(same(a, b) for a, b in zip(together, alone, strict=True))


def test_eight_concurrent_conversations_keep_their_own_memory(kb_dir: Path) -> None:
    threads = [f"concurrent-{i}" for i in range(len(QUESTIONS))]
    with Session(data_dir=kb_dir) as session:
        all_at_once([partial(session.ask, q, thread_id=t) for (q, _), t in zip(QUESTIONS, threads, strict=True)])
        recalled = all_at_once([partial(session.ask, "What did I just ask?", thread_id=t) for t in threads])
    for result, (question, _) in zip(recalled, QUESTIONS, strict=True):
        assert question in result.answer


@pytest.fixture
def fresh_index(tmp_path: Path) -> Iterator[Path]:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "pump.md").write_text(
        "# Pump\n\nThe coolant pump is serviced every 30 days.\n\n"
        "## Filters\n\nEach service replaces the pump filter.\n",
        encoding="utf-8",
    )
    data_dir = tmp_path / "index"
    ingest([kb], Context(data_dir=str(data_dir)).settings())
    yield data_dir


def test_eight_first_questions_at_once_open_one_retriever(fresh_index: Path) -> None:
    answers = all_at_once([partial(ask, "How often is the coolant pump serviced?", data_dir=fresh_index)] * 8)
    assert all("every 30 days" in a.answer for a in answers)
    assert all(same(a, answers[0]) for a in answers)
