"""The results folder of an evaluation: JSON lines, Markdown tables and a chart.

``results.jsonl`` holds one result a line, as ``selfcrag eval --json`` prints
them; ``results.md`` the same as Markdown tables, one per mode, with the
machine they were measured on; ``chart.png`` compares the configurations
(matplotlib, drawn without a display).
"""

from __future__ import annotations

import json
import os
import platform
import sys
from collections.abc import Sequence
from pathlib import Path

RETRIEVAL_COLUMNS = ("set", "config", "n", "hit@1", "hit@5", "mrr@5", "ctx_chars@5", "p50_ms", "p95_ms")
ANSWER_COLUMNS = (
    "set",
    "config",
    "n",
    "answered_right",
    "answered",
    "evidence_recall",
    "evidence@1",
    "shown_chars",
    "misled",
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
)
# What each chart compares, per mode.
CHART_METRICS = {
    "retrieval": ("hit@1", "hit@5", "mrr@5"),
    "answer": ("answered_right", "answered", "evidence_recall", "misled", "answer_acc", "false_abstain"),
}

Row = dict[str, object]


def machine() -> str:
    """Describe the machine: processor, cores, memory, Python.

    Returns:
        One line, e.g. ``Intel(R) Xeon(R) Processor, 2 cores, 23 GiB RAM, Linux, Python 3.11.9``.
    """
    processor = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            names = [line.split(":", 1)[1].strip() for line in handle if line.startswith("model name")]
        processor = names[0] if names else processor
    except OSError:
        pass
    memory = ""
    try:
        pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
        memory = f", {pages * size / 2**30:.0f} GiB RAM"
    except (ValueError, OSError, AttributeError):
        pass
    return f"{processor}, {os.cpu_count()} cores{memory}, {platform.system()}, Python {platform.python_version()}"


def markdown_table(rows: Sequence[Row], columns: Sequence[str]) -> str:
    """Render rows as a Markdown table of the given columns.

    Args:
        rows: Results.
        columns: Keys to show, in order (missing ones are left empty).

    Returns:
        The table, header first.
    """
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(_cell(row.get(c)) for c in columns) + " |")
    return "\n".join(lines)


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 10 else f"{value:.0f}"
    return str(value)


def markdown_report(rows: Sequence[Row], command: str | None = None) -> str:
    """Write the results as Markdown: a table per mode, the machine, the command.

    Args:
        rows: Results of ``--mode retrieval`` and/or ``--mode answer``.
        command: The command that produced them.

    Returns:
        The Markdown text.
    """
    parts = ["# selfcrag evaluation", ""]
    retrieval = [r for r in rows if r.get("mode") == "retrieval"]
    answer = [r for r in rows if r.get("mode") == "answer"]
    if retrieval:
        parts += [
            "## Retrieval",
            "",
            "Top 5 contexts per answerable question, after window expansion and merging.",
            "",
            markdown_table(retrieval, RETRIEVAL_COLUMNS),
            "",
        ]
    if answer:
        answerers = sorted({str(r.get("answerer")) for r in answer})
        parts += [
            "## Answers",
            "",
            f"The whole workflow per question (answerer: {', '.join(answerers)}). "
            "correct/ambiguous/incorrect: CRAG's action after the first retrieval; rewrote, regenerated: "
            "share of questions.",
            "",
            markdown_table(answer, ANSWER_COLUMNS),
            "",
        ]
    off_topic = [r for r in rows if r.get("mode") == "off-topic"]
    if off_topic:
        from selfcrag.eval.off_topic import OFF_TOPIC_COLUMNS

        parts += [
            "## Off-topic questions",
            "",
            "One set's questions asked of another set's index, where nothing is about them: not_found is the share "
            "that ended saying so.",
            "",
            markdown_table(off_topic, OFF_TOPIC_COLUMNS),
            "",
        ]
    gaps = [r for r in rows if r.get("mode") == "language-gap"]
    if gaps:
        from selfcrag.eval.language_gap import GAP_COLUMNS

        parts += [
            "## Across languages",
            "",
            "Each set whose questions are in another language than its documents, beside the set asking the same "
            "questions of the same documents in their own language.",
            "",
            markdown_table(gaps, GAP_COLUMNS),
            "",
        ]
    curve = [r for r in rows if r.get("mode") == "curve"]
    if curve:
        parts += [curve_report(curve)]
    parts += [f"Measured on: {machine()}."]
    if command:
        parts += ["", "Reproduce with:", "", "```", command, "```"]
    return "\n".join(parts) + "\n"


def curve_report(curve: Sequence[Row]) -> str:
    """Write the risk-coverage curve as Markdown: its table and the operating point.

    Args:
        curve: The points of :func:`selfcrag.eval.risk_coverage.risk_coverage`.

    Returns:
        A section: a heading, a line saying how to read it, the table and the operating point.
    """
    from selfcrag.eval.risk_coverage import OPERATING_FLOOR, curve_columns, operating_point

    point = operating_point(curve)
    chosen = (
        "Operating point (answered_right >= "
        f"{OPERATING_FLOOR} on every set): answer_similarity {point['answer_similarity']}, "
        f"answer_coverage {point['answer_coverage']}, answer_margin {point['answer_margin']}."
        if point
        else f"No setting keeps answered_right >= {OPERATING_FLOOR} on every set."
    )
    return "\n".join(
        [
            "## Risk-coverage (offline answer gates)",
            "",
            "Per floor of answered_right, the gates that answer the most (mean over the sets) while every set "
            "stays at or above it, measured on one run with the gates open (ungated).",
            "",
            markdown_table(curve, curve_columns(curve)),
            "",
            chosen,
            "",
        ]
    )


def draw_chart(rows: Sequence[Row], path: Path) -> bool:
    """Draw grouped bars comparing the configurations: a row of panels per mode, a column per set.

    Args:
        rows: Results.
        path: The PNG to write.

    Returns:
        False when there was nothing to draw.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    modes = [m for m in CHART_METRICS if any(r.get("mode") == m for r in rows)]
    sets = list(dict.fromkeys(str(r["set"]) for r in rows if r.get("mode") in modes))
    if not modes:
        return False
    figure, axes = plt.subplots(len(modes), len(sets), figsize=(7.0 * len(sets), 3.6 * len(modes)), squeeze=False)
    for axis_row, mode in zip(axes, modes, strict=True):
        for axis, name in zip(axis_row, sets, strict=True):
            selected = [r for r in rows if r.get("mode") == mode and r.get("set") == name]
            if not selected:
                axis.set_visible(False)
                continue
            metrics = CHART_METRICS[mode]
            width = 0.8 / len(selected)
            for i, row in enumerate(selected):
                values = [float(row.get(m) or 0.0) for m in metrics]  # type: ignore[arg-type]
                positions = [j + (i - (len(selected) - 1) / 2) * width for j in range(len(metrics))]
                axis.bar(positions, values, width, label=str(row["config"]))
            axis.set_xticks(range(len(metrics)), metrics, fontsize="small")
            axis.set_ylim(0, 1.05)
            axis.set_title(f"{name}: {mode}")
            axis.grid(axis="y", alpha=0.3)
            axis.legend(fontsize="x-small", loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False)
    figure.tight_layout()
    figure.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(figure)
    return True


def write_results(rows: Sequence[Row], out_dir: Path, command: str | None = None) -> list[Path]:
    """Write the results folder: ``results.jsonl``, ``results.md`` and ``chart.png``.

    Args:
        rows: Results, as ``selfcrag eval --json`` prints them.
        out_dir: The folder (created if needed).
        command: The command that produced them, recorded in the Markdown.

    Returns:
        The files written.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    written = [out_dir / "results.jsonl", out_dir / "results.md"]
    written[0].write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    written[1].write_text(markdown_report(rows, command), encoding="utf-8")
    if draw_chart(rows, out_dir / "chart.png"):
        written.append(out_dir / "chart.png")
    return written


def command_line() -> str:
    """The command this process was started with, as a user would type it."""
    name = Path(sys.argv[0]).name if sys.argv else "selfcrag"
    return " ".join(["selfcrag" if name in ("selfcrag", "__main__.py") else name, *sys.argv[1:]])
