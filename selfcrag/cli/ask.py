"""``selfcrag ask``: one question, one answer, for people (streamed) or for scripts (``--json``).

Exit status: 0 answered (or a direct reply that needed no documents), 4 closest
evidence (the answer was not confirmed; the best sentences found are shown), 3
not found (nothing relevant in the knowledge base), 1 error (nothing indexed,
the index in use, an empty question).
"""

from __future__ import annotations

import dataclasses
import time
from contextlib import nullcontext
from typing import TYPE_CHECKING, Annotated, Any

import typer

from selfcrag.cli.app import DataDir, app, context_for, err, fail, out, user_errors
from selfcrag.cli.render import in_background, leave_cancelled_work, print_answer, print_footer, stream_answer
from selfcrag.cli.terminal import json_text

if TYPE_CHECKING:
    from selfcrag.graph.api import Answer

EXIT_NOT_FOUND = 3
EXIT_CLOSEST_EVIDENCE = 4
EXIT_STATUS = {"answered": 0, "direct": 0, "closest_evidence": EXIT_CLOSEST_EVIDENCE, "not_found": EXIT_NOT_FOUND}


def answer_json(question: str, answer: Answer) -> dict[str, Any]:
    """The answer as JSON for scripts; sentence positions count from 0, as in the index.

    Args:
        question: The question as asked.
        answer: The answer.

    Returns:
        ``question``, ``status``, ``answer``, ``citations``, ``trace``, ``abstained``, ``closest_sources``, and
        ``notes`` / ``degraded`` (a cut question, or steps that fell back to the offline path). Each citation
        says where to look: ``path`` (relative to the folder ingested), ``place`` (its pages, slide, rows or
        lines), ``where`` (``p. 6 (printed 3)``) and ``link`` (``docs/guide.pdf#page=6``, ``docs/a.md:12``).
    """
    return {
        "question": question,
        "status": answer.status,
        "answer": answer.answer,
        "citations": [dataclasses.asdict(c) for c in answer.citations],
        "trace": answer.trace,
        "abstained": answer.abstained,
        "closest_sources": [dataclasses.asdict(c) for c in answer.closest_sources],
        "notes": answer.notes,
        "degraded": answer.degraded,
    }


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="The question, Chinese or English.")],
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the status, answer, citations and trace as one JSON object.")
    ] = False,
    no_stream: Annotated[bool, typer.Option("--no-stream", help="Print the answer when it is complete.")] = False,
    data_dir: DataDir = None,
) -> None:
    """Answer one question from the knowledge base, with its sources and route.

    Exit status: 0 answered, 4 closest evidence only (not confirmed), 3 nothing relevant found, 1 error.
    """
    if not question.strip():
        raise fail("the question is empty")
    from selfcrag.graph.api import Session

    started = time.perf_counter()
    result: Answer | None = None
    with user_errors(), Session(context_for(data_dir)) as session:
        try:
            events = session.stream_ask(question)
            if as_json or no_stream:
                with err.status("answering…") if err.is_interactive and not as_json else nullcontext():
                    result = next(payload for kind, payload in in_background(events) if kind == "answer")
            else:
                result = stream_answer(out, events)
        except KeyboardInterrupt:
            err.print("interrupted", markup=False)
            session.close()
            leave_cancelled_work(130)
            raise typer.Exit(130) from None
    assert result is not None  # the stream always ends with the answer
    if as_json:
        print(json_text(answer_json(question, result)))
    elif no_stream:
        print_answer(out, result)
    else:
        print_footer(out, result, time.perf_counter() - started)
    raise typer.Exit(EXIT_STATUS[result.status])
