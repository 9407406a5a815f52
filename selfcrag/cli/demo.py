"""``selfcrag demo``: the main job on the bundled sample knowledge base."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from selfcrag.cli.app import SAMPLE_KB, DataDir, app, context_for, out, progress_reporter, user_errors
from selfcrag.cli.render import print_answer

# One of each outcome, offline: answered (a quote on strong evidence), the closest evidence (relevant passages, an
# answer not confirmed), and not found.
DEMO_QUESTIONS = (
    "How long are application logs kept?",
    "退货审核通过后，退款多久能退回？",
    "Who won the 1998 FIFA World Cup?",
)
# Where the demo indexes when neither --data-dir nor SELFCRAG_DATA_DIR says: apart from the user's own index.
DEMO_DATA_DIR = Path(".selfcrag") / "demo"
NEXT_QUESTION = "What uptime SLA does the Aurora API guarantee?"


@app.command()
def demo(data_dir: DataDir = None) -> None:
    """Index the bundled sample knowledge base, then answer sample questions with the whole workflow.

    The index goes to --data-dir, else $SELFCRAG_DATA_DIR, else .selfcrag/demo; the last line is the command
    that asks it a question of your own.
    """
    from selfcrag.embed.embedders import settings_embedder
    from selfcrag.embed.remembered import with_sample_vectors
    from selfcrag.graph.api import Session
    from selfcrag.ingest.run import ingest as run_ingest

    with user_errors():
        chosen = data_dir or (None if os.environ.get("SELFCRAG_DATA_DIR") else DEMO_DATA_DIR)
        context = context_for(chosen)
        settings = context.settings()
        # The sample's sentences embed the same in every process: the default model's vectors ship with selfcrag.
        embedder = settings_embedder(settings)
        with progress_reporter() as progress:
            summary = run_ingest([SAMPLE_KB], settings, progress=progress, embedder=with_sample_vectors(embedder))
        out.print(
            f"indexed {summary.documents} sample documents ({summary.sentences} sentences) into {settings.data_dir}",
            markup=False,
        )
        with Session(context) as session:
            for question in DEMO_QUESTIONS:
                out.print()
                print_answer(out, session.ask(question), heading=f"Q: {question}")
    where = shlex.quote(str(settings.data_dir))
    out.print()
    out.print(f"Ask your own: selfcrag ask {shlex.quote(NEXT_QUESTION)} --data-dir {where}", markup=False)
    out.print(f"or talk with it: selfcrag chat --data-dir {where}", markup=False)
