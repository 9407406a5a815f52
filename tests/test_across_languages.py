"""A question in one language finds its answer in documents of the other (issue 45).

A Chinese reader's folder holds English manuals; an English reader keeps Chinese notices. The folder here holds
one of each: an English kettle manual and a Chinese notice of a water outage, asked about in both languages
through the real CLI, over an index that ``selfcrag ingest`` built with the offline embedder and Qdrant Edge.
On 83f2733 each of these questions showed the other document's sentences first, or ended not found.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from cli_runner import selfcrag

from selfcrag.cli.ask import EXIT_STATUS
from selfcrag.crossing.glosses import cross_question
from selfcrag.search.fusion import crossed_weight

MIXED = Path(__file__).parent / "data" / "mixed-languages"
MANUAL, NOTICE = "kettle-manual.md", "停水通知.md"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The two documents, and their index in ``index/`` beside them."""
    root = tmp_path_factory.mktemp("mixed")
    shutil.copytree(MIXED, root / "docs")
    run = selfcrag("ingest", root / "docs", "--data-dir", root / "index", cwd=root)
    assert run.returncode == 0, run.stderr
    return root


def ask(folder: Path, question: str) -> tuple[dict, int]:
    run = selfcrag("ask", question, "--json", "--data-dir", folder / "index", cwd=folder)
    return json.loads(run.stdout), run.returncode


@pytest.mark.parametrize(
    ("question", "answer", "source"),
    [
        ("热水壶多久需要除垢一次？", "every four weeks", MANUAL),
        ("水壶的保修期是多长时间？", "two-year limited warranty", MANUAL),
        ("Is there any extra charge for the water outage?", "不收取任何额外费用", NOTICE),
        ("Why will the water be stopped?", "市政供水管道维修", NOTICE),
    ],
)
def test_a_question_shows_the_answer_from_the_document_in_the_other_language_first(
    folder: Path, question: str, answer: str, source: str
) -> None:
    result, status = ask(folder, question)
    # Offline a sentence in the other language is shown, never given as the answer: nothing reads whether it is.
    assert (result["status"], status) == ("closest_evidence", EXIT_STATUS["closest_evidence"]), result["answer"]
    first = result["citations"][0]
    assert first["path"] == source and answer in first["quote"], result["answer"]


@pytest.mark.parametrize("question", ["What's a good recipe for banana bread?", "香蕉面包怎么做？"])
def test_a_question_neither_document_is_about_still_ends_not_found(folder: Path, question: str) -> None:
    result, status = ask(folder, question)
    assert (result["status"], status) == ("not_found", EXIT_STATUS["not_found"]), result["answer"]


def test_bm25_ranks_the_english_answer_first_for_a_chinese_question_by_its_crossed_words(folder: Path) -> None:
    run = selfcrag("search", "热水壶多久需要除垢一次？", "--json", "--data-dir", folder / "index", cwd=folder)
    passages = json.loads(run.stdout)["passages"]
    answer = next(p for p in passages[:3] if "every four weeks" in p["text"])
    # The question shares no word with the manual; its words carried into English find the answer first.
    assert answer["path"] == MANUAL and answer["bm25_rank"] == 1


def test_list_shows_each_documents_language(folder: Path) -> None:
    listed = selfcrag("list", "--data-dir", folder / "index", cwd=folder)
    lines = {Path(line.split("|")[0].strip()).name: line for line in listed.stdout.splitlines() if "|" in line}
    assert "| English |" in lines[MANUAL] and "| Chinese |" in lines[NOTICE]
    files = json.loads(selfcrag("list", "--json", "--data-dir", folder / "index", cwd=folder).stdout)["files"]
    assert {file["path"]: file["language"] for file in files} == {MANUAL: ["en"], NOTICE: ["zh"]}


def test_an_index_made_before_languages_were_kept_is_labelled_without_embedding_again(tmp_path: Path) -> None:
    shutil.copytree(MIXED, tmp_path / "docs")
    assert selfcrag("ingest", tmp_path / "docs", "--data-dir", tmp_path / "index", cwd=tmp_path).returncode == 0
    # As an older version left it: no languages recorded, its documents split by the version before.
    generation = (tmp_path / "index" / "index" / "CURRENT").read_text().strip()
    with sqlite3.connect(tmp_path / "index" / "index" / generation / "manifest.sqlite") as manifest:
        manifest.execute("DROP TABLE languages")
        manifest.execute("UPDATE indexed_with SET version = 9")
    unknown = json.loads(selfcrag("list", "--json", "--data-dir", tmp_path / "index", cwd=tmp_path).stdout)
    assert {file["language"] for file in unknown["files"]} == {None}
    again = selfcrag("ingest", tmp_path / "docs", "--data-dir", tmp_path / "index", cwd=tmp_path)
    assert again.returncode == 0 and "0 sentences embedded" in again.stderr + again.stdout, again.stderr
    files = json.loads(selfcrag("list", "--json", "--data-dir", tmp_path / "index", cwd=tmp_path).stdout)["files"]
    assert {file["path"]: file["language"] for file in files} == {MANUAL: ["en"], NOTICE: ["zh"]}


def test_a_chinese_question_crosses_into_english_by_its_longest_dictionary_words() -> None:
    crossing = cross_question("哪个 NFL 球队在第 50 届超级碗中代表 AFC？", "en")
    words = dict(crossing.words)
    # 超级碗 is one entry (jieba cuts it in two); names in Latin letters and numbers pass through.
    assert dict(words["超级碗"]) == {"super": 1.0, "bowl": 1.0}
    assert {"nfl", "afc", "50"} <= set(crossing.weights())
    # An ordinal and a measure word ("第 50 届") carry no topic and do not cross.
    assert "届" not in words and "第" not in words
    # Each word weighs the same in all, however many senses it has.
    assert crossing.weights()["super"] == pytest.approx(0.5)


def test_an_english_question_crosses_into_chinese_phrase_first() -> None:
    crossing = cross_question("Which NFL team represented the AFC at Super Bowl 50?", "zh")
    words = dict(crossing.words)
    assert {"超级", "碗"} <= set(dict(words["Super Bowl"]))
    assert max(dict(words["represented"]).items(), key=lambda item: item[1])[0] == "代表"


def test_the_crossed_ranking_counts_where_the_question_is_about_the_other_language() -> None:
    # Nothing matched: nothing counts.
    assert crossed_weight(own=0.5, crossed=0.0, across=1.0) == 0.0
    # The question's own words found little, the nearest sentences are in the other language: it counts fully.
    assert crossed_weight(own=0.0, crossed=0.6, across=1.0) == 1.0
    # The nearest sentences are all in the question's own language: it does not count.
    assert crossed_weight(own=0.1, crossed=0.9, across=0.0) == 0.0
    # The own words matched better than their glosses: it counts less.
    assert crossed_weight(own=0.8, crossed=0.4, across=1.0) < 0.25
