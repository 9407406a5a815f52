"""The risk-coverage curve of the offline answer gates (issue 36.4): how much is answered at each level of right.

One run with the gates open records each quote's evidence; every setting of
the three gates is then judged on those records, and the operating point is
the setting answering the most while ``answered_right`` stays >= 0.95 on every
set. The CLI case runs ``selfcrag eval --curve`` on the tiny set the project ships.
"""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from selfcrag.cli import app
from selfcrag.eval.risk_coverage import Gates, operating_point, risk_coverage

TINY_SET = Path(__file__).resolve().parent / "data" / "tiny-set"


def quote(dense: float, coverage: float, margin: float, correct: bool) -> dict[str, object]:
    """A question of the ungated run whose quote was given on this evidence."""
    evidence = {"dense": dense, "coverage": coverage, "margin": margin}
    return {"status": "answered", "correct": correct, "evidence": evidence}


def test_a_quote_is_answered_only_when_it_clears_all_three_gates() -> None:
    gates = Gates(similarity=0.75, coverage=0.3, margin=0.2)
    assert gates.passes(quote(0.75, 0.3, 0.2, True))
    assert not gates.passes(quote(0.74, 0.9, 0.9, True))
    assert not gates.passes(quote(0.9, 0.29, 0.9, True))
    assert not gates.passes(quote(0.9, 0.9, 0.19, True))
    assert not gates.passes({"status": "closest_evidence", "correct": False, "evidence": None})


def test_the_operating_point_answers_the_most_while_right_on_every_set() -> None:
    records = {
        "one": [quote(0.9, 0.9, 0.30, True), quote(0.9, 0.9, 0.10, False)],
        "two": [quote(0.9, 0.9, 0.12, True)],
    }
    point = operating_point(risk_coverage(records))
    assert point is not None
    # The wrong quote (margin 0.10) is left out, the right one of the other set (0.12) kept; ties go to the strictest.
    assert (point["answer_similarity"], point["answer_coverage"], point["answer_margin"]) == (0.9, 0.9, 0.12)
    assert (point["one answered"], point["one answered_right"], point["two answered"]) == (0.5, 1.0, 1.0)


def test_eval_curve_reports_the_curve_and_its_operating_point(tmp_path: Path) -> None:
    out_dir = tmp_path / "results"
    arguments = ["eval", str(TINY_SET), "--mode", "answer", "--answerer", "offline", "--curve"]
    result = CliRunner().invoke(app, [*arguments, "--data-dir", str(tmp_path), "--out", str(out_dir)])
    assert result.exit_code == 0, result.output
    assert "## Risk-coverage (offline answer gates)" in result.stdout
    assert "Operating point" in result.stdout or "No setting keeps" in result.stdout
    rows = [json.loads(line) for line in (out_dir / "results.jsonl").open(encoding="utf-8")]
    assert {r["config"] for r in rows if r["mode"] == "answer"} == {"selfcrag", "ungated"}
    floors = [r["floor"] for r in rows if r["mode"] == "curve"]
    assert floors and floors == sorted(floors, reverse=True)
    assert "## Risk-coverage" in (out_dir / "results.md").read_text(encoding="utf-8")


def test_the_curve_needs_the_offline_answerer(tmp_path: Path) -> None:
    arguments = ["eval", str(TINY_SET), "--mode", "answer", "--answerer", "chat", "--curve"]
    result = CliRunner().invoke(app, [*arguments, "--data-dir", str(tmp_path)])
    assert result.exit_code == 1
    assert "--curve measures the offline answer gates" in result.output
    assert "Traceback" not in result.output
