"""``selfcrag demo``: the main job on the bundled sample knowledge base."""

from __future__ import annotations

from pathlib import Path

from selfcrag.cli.app import SAMPLE_KB, DataDir, app, context_for, out, progress_reporter, user_errors
from selfcrag.cli.render import print_answer

DEMO_QUESTIONS = (
    "退货审核通过后，退款多久能退回？",
    "How long is an Aurora access token valid?",
    "What uptime SLA does the Aurora API guarantee?",
)


@app.command()
def demo(data_dir: DataDir = None) -> None:
    """Index the bundled sample knowledge base, then answer sample questions with the whole workflow."""
    from selfcrag.graph.api import Session
    from selfcrag.index.ingest import ingest as run_ingest

    with user_errors():
        context = context_for(data_dir or Path(".selfcrag") / "demo")
        settings = context.settings()
        with progress_reporter() as progress:
            summary = run_ingest([SAMPLE_KB], settings, progress=progress)
        out.print(f"indexed {summary.documents} sample documents ({summary.sentences} sentences) "
                  f"into {settings.data_dir}", markup=False)
        with Session(context) as session:
            for question in DEMO_QUESTIONS:
                out.print()
                print_answer(out, session.ask(question), heading=f"Q: {question}")

