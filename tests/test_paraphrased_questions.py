"""Questions worded with synonyms are answered offline from a one-file knowledge base (issue 13).

Each knowledge base here is one manual of tests/data/paraphrase-set, ingested
and asked through the real CLI. With the dense signal placed on a scale
measured per question (an everyday question sat closer to the everyday
reference sentences, so its answers scored lower) and shared words
outweighing meaning, the kettle manual answered 2 of its 20 paraphrased
questions right; the English cases below were all declined. Chinese
paraphrases are answered less often (the fan manual answers 1 of 11:
multilingual-e5-small scores 扇叶脏了怎么办？ the same against its answer and
against an assembly step), but their evidence is shown: the closest evidence
weighs the sentences of every passage retrieved, not only of those the
evaluator graded relevant, so the cleaning step graded 0.18 is shown beside
the assembly step graded 0.33 (issue 19). A question the file does not answer
must still be declined.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from cli_runner import selfcrag

from selfcrag.graph.context import Context
from selfcrag.graph.resources import Resources

DOCS = Path(__file__).resolve().parent / "data" / "paraphrase-set" / "docs"


@pytest.fixture(scope="module", params=["zh-fan", "en-kettle"])
def one_file(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """A knowledge base of one manual, ingested through the CLI: (its name, the index folder)."""
    root = tmp_path_factory.mktemp(request.param)
    (root / "docs").mkdir()
    shutil.copy(DOCS / f"{request.param}.txt", root / "docs")
    run = selfcrag("ingest", root / "docs", "--data-dir", root / "index", cwd=root)
    assert run.returncode == 0, run.stderr
    return request.param, root / "index"


CASES = {
    "zh-fan": [
        ("电风扇的底座怎么装？", "立杆插入底座"),
        ("扇叶脏了怎么办？", "干布"),
    ],
    "en-kettle": [
        ("What should I do with a brand-new kettle before making my first cup?", "pour it away"),
        ("Do I have to turn it off myself once the water is ready?", "switches off automatically"),
        ("How long does the cleaning mixture need to soak?", "one hour"),
        ("How do I clean the small strainer up in the top?", "slides out"),
    ],
}
NOT_ANSWERED = {
    "zh-fan": "风扇的遥控器要用什么型号的电池？",
    "en-kettle": "How much does a Lumen T3 thermostat cost?",
}


def test_paraphrased_questions_show_their_answer_from_one_file(one_file: tuple[str, Path]) -> None:
    # Answered, or, offline, shown as the closest evidence (exit 4): either way the answer is there, cited.
    name, index = one_file
    for question, evidence in CASES[name]:
        run = selfcrag("ask", question, "--data-dir", index, cwd=index.parent)
        assert run.returncode in (0, 4), f"{question}: {run.stdout}{run.stderr}"
        shown = run.stdout.split("route: ")[0]
        assert evidence in shown and "[1]" in shown, f"{question}: {shown}"


def test_a_question_the_one_file_does_not_answer_is_never_answered(one_file: tuple[str, Path]) -> None:
    name, index = one_file
    run = selfcrag("ask", NOT_ANSWERED[name], "--data-dir", index, cwd=index.parent)
    assert run.returncode in (3, 4), run.stdout + run.stderr


def test_the_dense_scale_is_the_embedders_not_the_questions(one_file: tuple[str, Path]) -> None:
    # An everyday question sits closer to everyday sentences than a technical one; measuring the
    # unrelated floor per question scored its answers lower (the cause of the declined fan questions).
    _, index = one_file
    with Resources() as resources:
        evaluator = resources.evaluator(Context(data_dir=str(index)))
        everyday = evaluator.profile("风扇很久不用的话要怎么处理？")
        technical = evaluator.profile("反渗透膜滤芯的脱盐率是多少？")
        english = evaluator.profile("How long is the kettle's power cord?")
    assert everyday.scale == technical.scale
    assert 0.0 < everyday.scale.floor < everyday.scale.ceiling <= 1.0
    assert english.scale != everyday.scale  # each language its own scale
