"""Reading an evaluation set: ``docs/<doc_id>.txt`` and ``questions.jsonl``."""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass, field
from pathlib import Path

from selfcrag.errors import UserError
from selfcrag.graph.question import clean_question


@dataclass(frozen=True)
class Evidence:
    """A passage that supports a question: its document and strings it contains."""

    doc_id: str
    contains: tuple[str, ...]


@dataclass(frozen=True)
class Question:
    """One question of a set.

    Attributes:
        id: Question id.
        question: The text asked.
        lang: ``zh`` or ``en``.
        answerable: False when the knowledge base does not hold the answer.
        answers: Groups of acceptable strings; every group must be matched.
        evidence: Supporting passages.
        answer_style: ``long`` for human-written answers (scored by evidence).
        source: Benchmark the question comes from.
    """

    id: str
    question: str
    lang: str
    answerable: bool
    answers: tuple[tuple[str, ...], ...] = ()
    evidence: tuple[Evidence, ...] = ()
    answer_style: str = "short"
    source: str = ""


@dataclass
class EvalSet:
    """A set: its name, documents folder and questions.

    Attributes:
        name: The folder's name.
        root: The folder.
        questions: The questions that can be asked.
        blank: Ids of questions whose text is empty: they cannot be asked, so
            they are left out of every metric (zh-dev has two).
    """

    name: str
    root: Path
    questions: list[Question] = field(default_factory=list)
    blank: list[str] = field(default_factory=list)

    @property
    def docs_dir(self) -> Path:
        """The folder of documents to ingest."""
        return self.root / "docs"


def load_set(root: Path) -> EvalSet:
    """Load a set in the shared/eval format.

    Args:
        root: Folder holding ``docs/`` and ``questions.jsonl``.

    Returns:
        The set.

    Raises:
        UserError: The folder is not such a set.
    """
    questions_file = root / "questions.jsonl"
    if not (root / "docs").is_dir() or not questions_file.is_file():
        raise UserError(f"{root} is not an evaluation set: it needs docs/ and questions.jsonl")
    questions = []
    with questions_file.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                raw = json.loads(line)
                questions.append(
                    Question(
                        id=str(raw["id"]),
                        # Cleaned as ask cleans a question: JSON may spell a lone surrogate ("\udcff"), which the
                        # embedder cannot encode.
                        question=clean_question(raw["question"]).text,
                        lang=raw.get("lang", "en"),
                        answerable=bool(raw.get("answerable", True)),
                        answers=tuple(tuple(group) for group in raw.get("answers", [])),
                        evidence=tuple(
                            Evidence(e["doc_id"], tuple(e.get("contains", []))) for e in raw.get("evidence", [])
                        ),
                        answer_style=raw.get("answer_style", "short"),
                        source=raw.get("source", ""),
                    )
                )
            except (KeyError, TypeError, json.JSONDecodeError) as error:
                raise UserError(f"{questions_file}:{number}: not a question line ({error})") from None
    blank = [q.id for q in questions if not q.question.strip()]
    return EvalSet(root.resolve().name, root.resolve(), [q for q in questions if q.question.strip()], blank)


def sample_questions(questions: list[Question], limit: int | None, seed: int = 0) -> list[Question]:
    """Draw a reproducible sample that keeps the set's share of unanswerable questions.

    Answerable and unanswerable questions are sampled separately, each in
    proportion to its share of the set, so a small ``--limit`` still measures
    abstention. The sample keeps the set's order.

    Args:
        questions: The questions to draw from.
        limit: How many to draw; None or at least ``len(questions)`` keeps them all.
        seed: Seed of the draw: the same seed draws the same questions.

    Returns:
        The sample, in the set's order.
    """
    if limit is None or limit >= len(questions):
        return list(questions)
    rng = random.Random(seed)
    unanswerable = [i for i, q in enumerate(questions) if not q.answerable]
    answerable = [i for i, q in enumerate(questions) if q.answerable]
    wanted_unanswerable = min(len(unanswerable), round(limit * len(unanswerable) / len(questions)))
    if unanswerable and answerable and limit >= 2:
        # Both kinds are measured whenever the set has both.
        wanted_unanswerable = min(max(wanted_unanswerable, 1), limit - 1)
    wanted_answerable = min(len(answerable), limit - wanted_unanswerable)
    wanted_unanswerable = limit - wanted_answerable
    chosen = rng.sample(unanswerable, wanted_unanswerable) + rng.sample(answerable, wanted_answerable)
    return [questions[i] for i in sorted(chosen)]


PARTS = ("all", "calibration", "held-out")


def set_part(evalset: EvalSet, part: str) -> EvalSet:
    """Keep one half of a set's questions: thresholds are chosen on one half and reported on the other.

    A question's half is fixed by a hash of its id (even: calibration, odd:
    held-out), so it never depends on the order or the size of the set.

    Args:
        evalset: The set.
        part: ``all``, ``calibration`` or ``held-out``.

    Returns:
        The set with only that half's questions.
    """
    if part == "all":
        return evalset
    wanted = 0 if part == "calibration" else 1
    kept = [q for q in evalset.questions if hashlib.sha256(q.id.encode("utf-8")).digest()[0] % 2 == wanted]
    return EvalSet(evalset.name, evalset.root, kept, evalset.blank)
