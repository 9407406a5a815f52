"""``selfcrag eval``: measure retrieval and answers on sets in the shared/eval format."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import IO, Annotated

import typer
from rich.table import Table

from selfcrag.cli.app import DataDir, app, context_for, err, fail, out, progress_reporter, user_errors
from selfcrag.cli.terminal import json_text

MODES = ("retrieval", "answer")
DEFAULT_CONFIGS = {"retrieval": "hybrid", "answer": "selfcrag"}
# The retrieval columns are eval.report's, added when the command runs: every other command (and --help)
# leaves the eval package unimported.
SHOWN = {
    "answer": (
        "set",
        "config",
        "n",
        "answered_right",
        "evidence_recall",
        "evidence@1",
        "answer_acc",
        "abstain_ok",
        "false_abstain",
        "cited_ok",
        "llm_calls_per_q",
        "p50_ms",
        "p95_ms",
        "correct",
        "ambiguous",
        "incorrect",
        "rewrote",
        "regenerated",
    ),
}
# Short column headers, so the answer table fits a terminal (the files keep the full keys).
HEADERS = {
    "answered_right": "right",
    "evidence_recall": "ev recall",
    "evidence@1": "ev@1",
    "answer_acc": "acc",
    "abstain_ok": "abst ok",
    "false_abstain": "false abst",
    "cited_ok": "cited",
    "llm_calls_per_q": "llm/q",
    "correct": "C",
    "ambiguous": "A",
    "incorrect": "I",
    "rewrote": "rewr",
    "regenerated": "regen",
    "ctx_chars@5": "chars@5",
}


def split_configs(modes: list[str], configs: str | None, windows: str | None) -> dict[str, list[str]]:
    """Hand each configuration to the mode that knows it; a mode given none gets its default.

    Args:
        modes: The modes to run.
        configs: Comma-separated specs of either mode (their names do not overlap).
        windows: Comma-separated window sizes, added as hybrid retrieval configurations.

    Returns:
        The specs per mode.

    Raises:
        UserError: A spec that no requested mode knows.
    """
    from selfcrag.errors import UserError
    from selfcrag.eval.answer_eval import ANSWER_CONFIGS
    from selfcrag.eval.chunking import chunk_size_of
    from selfcrag.eval.retrieval_eval import NAMED_CONFIGS, window_configs

    chosen: dict[str, list[str]] = {mode: [] for mode in modes}
    for spec in [c.strip() for c in (configs or "").split(",") if c.strip()]:
        name = spec.split("@")[0]
        mode = (
            "answer"
            if name in ANSWER_CONFIGS
            else ("retrieval" if name in NAMED_CONFIGS or chunk_size_of(name) else None)
        )
        if mode is None:
            raise UserError(
                f"unknown configuration {name!r}; retrieval: {', '.join(NAMED_CONFIGS)}, chunk<size>; "
                f"answer: {', '.join(ANSWER_CONFIGS)}"
            )
        if mode not in chosen:
            raise UserError(f"{spec!r} is a configuration of --mode {mode}; add that mode or drop it")
        chosen[mode].append(spec)
    if windows:
        if "retrieval" not in chosen:
            raise UserError("--windows compares retrieval configurations: use it with --mode retrieval")
        chosen["retrieval"].extend(window_configs(windows))
    return {mode: specs or [DEFAULT_CONFIGS[mode]] for mode, specs in chosen.items()}


@app.command(name="eval")
def evaluate(
    set_dirs: Annotated[list[Path], typer.Argument(help="Set folders, each with docs/ and questions.jsonl.")],
    mode: Annotated[str, typer.Option(help="What to measure: retrieval, answer, or retrieval,answer.")] = "retrieval",
    configs: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated configurations. Retrieval: hybrid (default), dense, bm25, hybrid-nowindow, "
            "plain-rrf, weighted, chunk512; the ways of cutting documents: chunk512, sentence-windows, "
            "semantic-windows, semantic-chunks, propositions (needs a chat model); answer: selfcrag (default), "
            "no-rewrite, plain. Override settings with @, e.g. hybrid@window=2 or selfcrag@upper_threshold=0.7."
        ),
    ] = None,
    windows: Annotated[
        str | None, typer.Option(help="Window sizes to compare, e.g. 0,1,2,3 (hybrid retrieval).")
    ] = None,
    limit: Annotated[int | None, typer.Option(min=1, help="Only a sample of N questions per set.")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the --limit sample.")] = 0,
    part: Annotated[
        str,
        typer.Option(
            help="Questions to use: all, calibration or held-out (halves fixed by a hash of the question id: "
            "choose thresholds on one, report the other)."
        ),
    ] = "all",
    answerer: Annotated[
        str, typer.Option(help="Answer mode: auto (chat model when configured), chat, offline.")
    ] = "auto",
    out_dir: Annotated[
        Path | None,
        typer.Option(
            "--out", help="Write results.jsonl, results.md, chart.png and per-question answers into this folder."
        ),
    ] = None,
    curve: Annotated[
        bool,
        typer.Option(
            "--curve",
            help="Also run the answers with the offline answer gates open (ungated) and show the risk-coverage "
            "curve: per answered_right floor, the answer_similarity/coverage/margin that answer the most.",
        ),
    ] = False,
    off_topic: Annotated[
        str | None,
        typer.Option(
            "--off-topic",
            help="Also ask one set's questions of another set's index, where nothing is about them, and report the "
            "share that ends not_found: QUESTIONS:INDEX pairs of the sets given, by folder name (e.g. "
            "en-dev:paraphrase-set,zh-dev:paraphrase-set), or all for every pair. With --mode answer.",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object a line.")] = False,
    data_dir: DataDir = None,
) -> None:
    """Measure retrieval (ablations) and answers (the whole workflow) on sets in the shared/eval format.

    Each set gets its own index under the data directory, kept between runs. With --off-topic, the questions
    of one set are also asked of another's index (off topic there): the share that ends not_found is reported.
    """
    modes = [m.strip() for m in mode.split(",") if m.strip()]
    if not modes or any(m not in MODES for m in modes):
        raise fail(f"--mode {mode!r}: choose retrieval, answer, or retrieval,answer")
    if answerer not in ("auto", "chat", "offline"):
        raise fail(f"--answerer {answerer!r}: choose auto, chat or offline")
    if curve and ("answer" not in modes or answerer == "chat"):
        raise fail("--curve measures the offline answer gates: use it with --mode answer --answerer offline")
    if off_topic is not None and "answer" not in modes:
        raise fail("--off-topic asks questions through the whole workflow: use it with --mode answer")
    from selfcrag.eval.report import RETRIEVAL_COLUMNS
    from selfcrag.eval.sets import PARTS

    if part not in PARTS:
        raise fail(f"--part {part!r}: choose {', '.join(PARTS)}")
    shown = {"retrieval": RETRIEVAL_COLUMNS, **SHOWN}
    rows: list[dict[str, object]] = []
    if off_topic is not None:
        from selfcrag.eval.off_topic import OFF_TOPIC_COLUMNS

        shown["off-topic"] = OFF_TOPIC_COLUMNS
    tabled = [*modes, "off-topic"] if off_topic is not None else modes
    tables = {m: Table(*(HEADERS.get(k, k) for k in shown[m]), title=m) for m in tabled}
    question_files: dict[str, IO[str]] = {}
    # Per set, the questions of the ungated run: the curve is computed from them.
    ungated: dict[str, list[dict[str, object]]] = {}
    from selfcrag.graph.resources import Resources

    resources = Resources()

    def keep_question(set_name: str, config: str, record: dict[str, object]) -> None:
        if curve and config == "ungated":
            ungated.setdefault(set_name, []).append(record)
        if out_dir is None:
            return
        name = f"{set_name}-{config}".replace("/", "_")
        if name not in question_files:
            (out_dir / "questions").mkdir(parents=True, exist_ok=True)
            question_files[name] = (out_dir / "questions" / f"{name}.jsonl").open("w", encoding="utf-8")
        question_files[name].write(json_text(record) + "\n")

    try:
        with user_errors(), progress_reporter() as progress:
            from selfcrag.eval.retrieval_eval import ingest_report, ingest_set
            from selfcrag.eval.sets import load_set, set_part

            per_mode = split_configs(modes, configs, windows)
            if curve and "ungated" not in per_mode["answer"]:
                per_mode["answer"].append("ungated")
            evalsets = [set_part(load_set(path), part) for path in set_dirs]
            # Checked before any set is ingested: a misspelt pair fails at once.
            from selfcrag.eval.off_topic import parse_pairs

            pairs = parse_pairs(off_topic, [e.name for e in evalsets]) if off_topic is not None else []
            set_contexts = {}
            for evalset in evalsets:
                if evalset.blank:
                    err.print(
                        f"{evalset.name}: {len(evalset.blank)} question(s) with no text left out: "
                        f"{', '.join(evalset.blank)}",
                        markup=False,
                    )
                set_context, summary = ingest_set(evalset, context_for(data_dir), progress)
                set_contexts[evalset.name] = set_context
                err.print(f"{evalset.name}: ingest {ingest_report(summary)}", markup=False)
                results: list[Iterator[dict[str, object]]] = []
                if "retrieval" in modes:
                    from selfcrag.eval.retrieval_eval import run_retrieval_eval

                    results.append(
                        run_retrieval_eval(
                            evalset,
                            resources.retriever(set_context),
                            per_mode["retrieval"],
                            limit=limit,
                            seed=seed,
                            progress=progress,
                        )
                    )
                if "answer" in modes:
                    from selfcrag.eval.answer_eval import run_answer_eval

                    results.append(
                        run_answer_eval(
                            evalset,
                            set_context,
                            per_mode["answer"],
                            limit=limit,
                            seed=seed,
                            answerer=answerer,
                            progress=progress,
                            on_question=partial(keep_question, evalset.name),
                        )
                    )
                first = True
                for result in results:
                    for row in result:
                        if first:
                            row["ingest"] = ingest_report(summary)
                            first = False
                        rows.append(row)
                        if as_json:
                            print(json_text(row), flush=True)
                        else:
                            tables[str(row["mode"])].add_row(*(_cell(row.get(k)) for k in shown[str(row["mode"])]))
            if pairs:
                from selfcrag.eval.off_topic import run_off_topic_eval

                by_name = {e.name: e for e in evalsets}
                # The shipped configurations only: an ablation with its gates open is not asked to say "not found".
                off_topic_configs = [c for c in per_mode["answer"] if c.split("@")[0] != "ungated"]
                for asked, index in pairs:
                    for row in run_off_topic_eval(
                        by_name[asked],
                        index,
                        set_contexts[index],
                        off_topic_configs,
                        limit=limit,
                        seed=seed,
                        answerer=answerer,
                        progress=progress,
                    ):
                        rows.append(row)
                        if as_json:
                            print(json_text(row), flush=True)
                        else:
                            tables["off-topic"].add_row(*(_cell(row.get(k)) for k in shown["off-topic"]))
            if "retrieval" in modes:
                from selfcrag.eval.language_gap import GAP_COLUMNS, gap_rows, twins

                # A cross-language set beside its one-language twin: what crossing costs, in one table.
                gaps = gap_rows(rows, twins(evalsets))
                rows.extend(gaps)
                if gaps and as_json:
                    for row in gaps:
                        print(json_text(row), flush=True)
                elif gaps:
                    tables["language-gap"] = Table(*GAP_COLUMNS, title="across languages")
                    shown["language-gap"] = GAP_COLUMNS
                    for row in gaps:
                        tables["language-gap"].add_row(*(_cell(row.get(k)) for k in GAP_COLUMNS))
    finally:
        for handle in question_files.values():
            handle.close()
        resources.close()
    if curve and ungated:
        from selfcrag.eval.risk_coverage import risk_coverage

        points = risk_coverage(ungated)
        rows.extend(points)
        if as_json:
            for point in points:
                print(json_text(point), flush=True)
    if not as_json and out.is_terminal:
        for table in tables.values():
            out.print(table)
    elif not as_json:
        # Piped or redirected: Markdown tables, which no terminal width truncates.
        from selfcrag.eval.report import ANSWER_COLUMNS, RETRIEVAL_COLUMNS, markdown_table

        for mode, columns in (("retrieval", RETRIEVAL_COLUMNS), ("answer", ANSWER_COLUMNS)):
            if mode in modes:
                print(markdown_table([r for r in rows if r["mode"] == mode], columns) + "\n")
        if off_topic is not None:
            print(markdown_table([r for r in rows if r["mode"] == "off-topic"], shown["off-topic"]) + "\n")
        if "language-gap" in shown:
            print(markdown_table([r for r in rows if r["mode"] == "language-gap"], shown["language-gap"]) + "\n")
    if curve and not as_json:
        from selfcrag.eval.report import curve_report

        print(curve_report([r for r in rows if r["mode"] == "curve"]))
    if out_dir is not None and rows:
        from selfcrag.eval.report import command_line, write_results

        written = write_results(rows, out_dir, command_line())
        err.print(f"results: {', '.join(str(p) for p in written)}", markup=False)


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 10 else f"{value:.1f}"
    return "" if value is None else str(value)
