"""Offline, the status tells "nothing here is about it" (not_found, exit 3) from "on the topic, not confirmed" (4).

Issue 36: "What is the capital of Australia?" on a folder of package docs was graded incorrect in every search,
yet ended ``closest_evidence``, showing e-mail addresses. Run as scripts run ``selfcrag ask``: a subprocess
over an index that ``selfcrag ingest`` built, read by its exit status.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_runner import selfcrag

from selfcrag.cli.ask import EXIT_STATUS

MANUALS = Path(__file__).parent / "data" / "paraphrase-set" / "docs"
TINY_SET = Path(__file__).parent / "data" / "tiny-set"
PARAPHRASE_SET = Path(__file__).parent / "data" / "paraphrase-set"


@pytest.fixture(scope="module")
def manuals(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An index of the paraphrase set's English manuals (a kettle, a library's rules, a thermostat)."""
    folder = tmp_path_factory.mktemp("manuals")
    for name in ("en-kettle.txt", "en-library.txt", "en-thermostat.txt"):
        (folder / name).write_text((MANUALS / name).read_text(encoding="utf-8"), encoding="utf-8")
    data_dir = folder / "index"
    run = selfcrag("ingest", folder, "--data-dir", data_dir, cwd=folder)
    assert run.returncode == 0, run.stderr
    return data_dir


def test_a_question_nothing_indexed_is_about_ends_not_found_naming_the_nearest_documents(manuals: Path) -> None:
    run = selfcrag("ask", "What is the capital of Australia?", "--json", "--data-dir", manuals, cwd=manuals.parent)
    result = json.loads(run.stdout)
    assert (result["status"], run.returncode) == ("not_found", EXIT_STATUS["not_found"]), result["answer"]
    assert result["citations"] == [] and result["closest_sources"]
    # The nearest documents are named for the reader to check, one a line.
    named = [line for line in result["answer"].splitlines() if line.startswith("- ")]
    assert named and all(".txt" in line for line in named)
    # Off topic, or graded incorrect in every search (rewrites take no word from passages graded incorrect).
    assert [s["decision"] for s in result["trace"] if s["step"] == "abstain"] in (["off topic"], ["incorrect"])


def test_an_unanswerable_question_on_the_documents_topic_still_shows_the_closest_evidence(manuals: Path) -> None:
    # The kettle's manual gives no cord length: not answered, but the kettle's sentences are the closest evidence.
    run = selfcrag("ask", "How long is the kettle's power cord?", "--json", "--data-dir", manuals, cwd=manuals.parent)
    result = json.loads(run.stdout)
    assert (result["status"], run.returncode) == ("closest_evidence", EXIT_STATUS["closest_evidence"])
    assert any(c["source"].endswith("en-kettle.txt") for c in result["citations"])


def test_eval_reports_the_share_of_off_topic_questions_that_end_not_found(tmp_path: Path) -> None:
    run = selfcrag(
        "eval",
        TINY_SET,
        PARAPHRASE_SET,
        "--mode",
        "answer",
        "--answerer",
        "offline",
        "--limit",
        "3",
        "--off-topic",
        "tiny-set:paraphrase-set",
        "--json",
        "--data-dir",
        tmp_path / "data",
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    rows = [json.loads(line) for line in run.stdout.splitlines()]
    (row,) = [r for r in rows if r["mode"] == "off-topic"]
    assert (row["questions"], row["index"], row["config"], row["n"]) == ("tiny-set", "paraphrase-set", "selfcrag", 3)
    assert row["not_found"] + row["closest_evidence"] + row["answered"] == pytest.approx(1.0)
    # Sourdough, a lighthouse, a cycling club and a canal: nothing in the appliance manuals is about them.
    assert row["not_found"] == 1.0


def test_eval_names_an_off_topic_pair_of_sets_not_given_in_one_line(tmp_path: Path) -> None:
    run = selfcrag(
        "eval", TINY_SET, "--mode", "answer", "--off-topic", "tiny-set:en-dev", "--data-dir", tmp_path, cwd=tmp_path
    )
    assert run.returncode == 1 and "'en-dev' is not one of the sets given (tiny-set)" in run.stderr
    assert "Traceback" not in run.stderr
