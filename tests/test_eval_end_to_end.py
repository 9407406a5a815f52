"""``selfcrag eval`` end to end on the tiny set the project ships: retrieval ablations and answers, one run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from scripted_chat import ScriptedChat
from typer.testing import CliRunner

from selfcrag.cli import app
from selfcrag.eval.answer_eval import run_answer_eval
from selfcrag.eval.retrieval_eval import ingest_set
from selfcrag.eval.sets import load_set
from selfcrag.graph.context import Context

TINY_SET = Path(__file__).resolve().parent / "data" / "tiny-set"
RETRIEVAL = ["dense", "bm25", "hybrid", "hybrid-nowindow", "chunk512", "hybrid@window=2"]
ANSWER = ["selfcrag", "plain"]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One CLI run of both modes on the tiny set, with a results folder."""
    data_dir = tmp_path_factory.mktemp("tiny_eval")
    out_dir = data_dir / "results"
    result = CliRunner().invoke(
        app,
        [
            "eval",
            str(TINY_SET),
            "--data-dir",
            str(data_dir),
            "--mode",
            "retrieval,answer",
            "--configs",
            "dense,bm25,hybrid,hybrid-nowindow,chunk512,selfcrag,plain",
            "--windows",
            "2",
            "--json",
            "--out",
            str(out_dir),
        ],
    )
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    return {"rows": rows, "out": out_dir, "data_dir": data_dir}


def rows_of(run: dict[str, Any], mode: str) -> dict[str, dict[str, Any]]:
    return {row["config"]: row for row in run["rows"] if row["mode"] == mode}


def test_one_json_line_per_set_and_configuration(run: dict[str, Any]) -> None:
    assert list(rows_of(run, "retrieval")) == RETRIEVAL
    assert list(rows_of(run, "answer")) == ANSWER
    assert all(row["set"] == "tiny-set" for row in run["rows"])
    assert "ingest" in run["rows"][0]


def test_retrieval_finds_every_answerable_question(run: dict[str, Any]) -> None:
    retrieval = rows_of(run, "retrieval")
    assert retrieval["hybrid"]["n"] == 8
    assert retrieval["hybrid"]["hit@5"] == 1.0
    assert retrieval["chunk512"]["settings"]["chunk_chars"] == 512
    # Windows and whole chunks cost context characters; hit sentences alone cost least.
    assert retrieval["hybrid-nowindow"]["ctx_chars@5"] < retrieval["hybrid"]["ctx_chars@5"]


def test_answer_metrics_have_every_key_of_the_issue(run: dict[str, Any]) -> None:
    row = rows_of(run, "answer")["selfcrag"]
    for key in (
        "answered_right",
        "evidence_recall",
        "evidence@1",
        "answer_acc",
        "abstain_ok",
        "false_abstain",
        "cited_ok",
        "llm_calls_per_q",
        "tokens_per_q",
        "p50_ms",
        "p95_ms",
        "correct",
        "ambiguous",
        "incorrect",
        "rewrote",
        "regenerated",
    ):
        assert key in row
    assert (row["n"], row["answerable"], row["unanswerable"]) == (12, 8, 4)
    # What is read first holds the evidence no more often than all that is shown.
    assert 0.0 < row["evidence@1"] <= row["evidence_recall"]
    assert row["answerer"] == "offline"
    assert row["llm_calls_per_q"] == 0 and row["tokens_per_q"] == 0
    assert row["p50_ms"] <= row["p95_ms"]
    assert row["correct"] + row["ambiguous"] + row["incorrect"] == pytest.approx(1.0)


def test_the_workflow_abstains_where_the_plain_pipeline_answers(run: dict[str, Any]) -> None:
    answer = rows_of(run, "answer")
    selfcrag, plain = answer["selfcrag"], answer["plain"]
    # What it answers is right, it answers no unanswerable question, and every answerable question shows the
    # reader its evidence, as an answer or as the closest evidence (issue 19's metrics).
    assert selfcrag["answered_right"] == 1.0 and selfcrag["misled"] == 0.0 and selfcrag["abstain_ok"] == 1.0
    assert selfcrag["evidence_recall"] == 1.0 and selfcrag["answered"] > 0
    # The plain pipeline answers everything, the unanswerable questions with the rest.
    assert plain["answered"] == 1.0 and plain["misled"] == 1.0 and plain["answered_right"] < 1.0


def test_results_folder_holds_json_markdown_chart_and_answers(run: dict[str, Any]) -> None:
    out: Path = run["out"]
    lines = (out / "results.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["config"] for line in lines] == RETRIEVAL + ANSWER
    markdown = (out / "results.md").read_text(encoding="utf-8")
    assert "| tiny-set | chunk512 |" in markdown and "| tiny-set | selfcrag |" in markdown
    assert "Measured on:" in markdown
    assert (out / "chart.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    answers = [json.loads(line) for line in (out / "questions" / "tiny-set-selfcrag.jsonl").open(encoding="utf-8")]
    assert len(answers) == 12 and {"id", "abstained", "correct", "route", "answer"} <= set(answers[0])


def test_limit_and_seed_draw_a_sample_with_unanswerable_questions(run: dict[str, Any]) -> None:
    result = CliRunner().invoke(
        app,
        [
            "eval",
            str(TINY_SET),
            "--data-dir",
            str(run["data_dir"]),
            "--mode",
            "answer",
            "--limit",
            "4",
            "--seed",
            "1",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    row = json.loads(result.stdout.splitlines()[-1])
    assert (row["n"], row["unanswerable"]) == (4, 1)


def test_unknown_configuration_is_one_line_error(run: dict[str, Any]) -> None:
    result = CliRunner().invoke(app, ["eval", str(TINY_SET), "--data-dir", str(run["data_dir"]), "--configs", "hybird"])
    assert result.exit_code == 1
    assert "unknown configuration 'hybird'" in result.output


def test_with_a_chat_model_the_calls_are_counted(run: dict[str, Any]) -> None:
    evalset = load_set(TINY_SET)
    set_context, _ = ingest_set(evalset, Context(data_dir=str(run["data_dir"])))
    model = ScriptedChat(
        script={
            "RetrievalDecision": [{"retrieve": True}],
            "PassageGrades": [{"grades": [{"passage": 1, "relevance": "relevant"}]}],
            "text": ["The answer is in the first passage. [1]"],
            "SupportJudgement": [{"verdict": "fully", "unsupported_sentences": [], "missing": ""}],
        }
    )
    row = next(run_answer_eval(evalset, set_context, ["selfcrag"], limit=2, seed=0, chat_model=model))
    assert row["answerer"] == "chat"
    # Every call the model saw is counted (at least decide, grade, generate and check support a question).
    assert row["llm_calls_per_q"] == len(model.calls) / 2
    assert row["llm_calls_per_q"] >= 4
