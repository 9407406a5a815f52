"""``selfcrag eval --off-topic``: one set's questions asked of another set's index, where nothing is about them.

A set's own unanswerable questions are on its documents' topic (ClapNQ's and RGB's keep the passages about them),
and rightly end with the closest evidence. Whether the workflow can tell "found something on the topic" from
"nothing here is about it" is measured with questions from elsewhere: en-dev's asked of the paraphrase set's
manuals, the paraphrase set's of en-dev's Wikipedia passages, zh-dev's of the manuals. Each should end
``not_found``; ``not_found`` is the share that did.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from selfcrag.errors import UserError
from selfcrag.eval.answer_eval import parse_answer_config
from selfcrag.eval.metrics import ANSWERED, percentile
from selfcrag.eval.sets import EvalSet, sample_questions
from selfcrag.graph.api import Session
from selfcrag.graph.context import Context, context_from_options

OFF_TOPIC_COLUMNS = ("questions", "index", "config", "n", "not_found", "closest_evidence", "answered", "p50_ms")


def parse_pairs(spec: str, names: Sequence[str]) -> list[tuple[str, str]]:
    """Read ``--off-topic``: which set's questions are asked of which set's index.

    Args:
        spec: Comma-separated ``QUESTIONS:INDEX`` pairs of set names (their folders' names), or ``all`` for every
            ordered pair of the sets given.
        names: The names of the sets given.

    Returns:
        The pairs, (questions' set, index's set), in the order given.

    Raises:
        UserError: A pair that is not two different sets among those given.
    """
    if spec.strip() == "all":
        return [(a, b) for a in names for b in names if a != b]
    pairs = []
    for pair in [p.strip() for p in spec.split(",") if p.strip()]:
        asked, _, index = pair.partition(":")
        if not index:
            raise UserError(f"--off-topic {pair!r}: write QUESTIONS:INDEX, e.g. en-dev:paraphrase-set, or all")
        for name in (asked, index):
            if name not in names:
                raise UserError(
                    f"--off-topic {pair!r}: {name!r} is not one of the sets given ({', '.join(names)}); "
                    "name each set by its folder's name"
                )
        if asked == index:
            raise UserError(f"--off-topic {pair!r}: a set's questions are on its own topic; pair two sets")
        pairs.append((asked, index))
    if not pairs:
        raise UserError("--off-topic: give QUESTIONS:INDEX pairs, e.g. en-dev:paraphrase-set, or all")
    return pairs


def run_off_topic_eval(
    asked: EvalSet,
    index_name: str,
    index_context: Context,
    configs: list[str],
    *,
    limit: int | None = None,
    seed: int = 0,
    answerer: str = "auto",
    progress: Callable[[str, int, int], None] | None = None,
) -> Iterator[dict[str, object]]:
    """Ask one set's questions, answerable and unanswerable alike, of another set's index, per configuration.

    Args:
        asked: The set whose questions are asked.
        index_name: The name of the set whose index answers.
        index_context: Run settings of that index (see :func:`~selfcrag.eval.retrieval_eval.ingest_set`).
        configs: Answer configuration specs (see :func:`~selfcrag.eval.answer_eval.parse_answer_config`).
        limit: Only a sample of this many questions.
        seed: Seed of that sample.
        answerer: ``auto``, ``chat`` or ``offline``.
        progress: Called as ``progress(phase, done, total)``.

    Yields:
        One result per configuration: the shares of the questions that ended ``not_found``, with the closest
        evidence, and answered (from nowhere: a wrong answer), and the latencies.
    """
    questions = sample_questions(asked.questions, limit, seed)
    with Session(index_context) as session:
        for spec in configs:
            options: dict[str, Any] = {"answerer": answerer, **parse_answer_config(spec)}
            context = context_from_options(session.context, **options)
            statuses: list[str] = []
            latencies: list[float] = []
            for number, question in enumerate(questions, 1):
                began = time.perf_counter()
                answer = session.ask(question.question, **options)
                latencies.append((time.perf_counter() - began) * 1000)
                statuses.append(answer.status)
                if progress:
                    progress(f"{asked.name} asked of {index_name}: ({spec})", number, len(questions))
            n = len(statuses)

            def share(count: int, whole: int = n) -> float:
                return round(count / whole, 4) if whole else 0.0

            yield {
                "mode": "off-topic",
                "set": f"{asked.name}:{index_name}",
                "questions": asked.name,
                "index": index_name,
                "config": spec,
                "n": n,
                "not_found": share(statuses.count("not_found")),
                "closest_evidence": share(statuses.count("closest_evidence")),
                "answered": share(sum(s in ANSWERED for s in statuses)),
                "answerer": "offline" if session.resources.chat_model(context) is None else "chat",
                "p50_ms": round(statistics.median(latencies), 1) if latencies else 0.0,
                "p95_ms": round(percentile(latencies, 95), 1) if latencies else 0.0,
            }
