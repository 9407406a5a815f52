"""Time a long ``selfcrag chat`` conversation, batch by batch (a bench, not a test: nothing is asserted).

    python tests/bench_long_chat.py DATA_DIR [TURNS] [BATCH]

Runs TURNS turns (default 500) in one thread of a fresh ``conversations.sqlite`` in DATA_DIR (an ingested
sample index), alternating a question and a follow-up, offline unless a chat endpoint is configured, and prints
per batch the mean seconds per turn, the size of the latest checkpoint and of the SQLite file.
"""

from __future__ import annotations

import io
import sqlite3
import sys
import time
from pathlib import Path

from rich.console import Console

from selfcrag.cli.chat import CONVERSATIONS_FILE, ChatSession
from selfcrag.graph.context import context_from_options

TURNS = ["How long are application logs kept?", "And audit logs?"]


def main() -> None:
    """Run the bench and print one line per batch."""
    data_dir = Path(sys.argv[1])
    total = int(sys.argv[2]) if len(sys.argv) > 2 else 500
    batch = int(sys.argv[3]) if len(sys.argv) > 3 else 100
    for path in data_dir.glob(CONVERSATIONS_FILE + "*"):
        path.unlink()
    session = ChatSession(context_from_options(data_dir=data_dir), "bench", Console(file=io.StringIO()))
    database = data_dir / CONVERSATIONS_FILE
    print("turns      s/turn   last checkpoint   sqlite file")
    try:
        for start in range(0, total, batch):
            began = time.perf_counter()
            for turn in range(start, min(start + batch, total)):
                session.answer(TURNS[turn % 2])
            seconds = (time.perf_counter() - began) / (min(start + batch, total) - start)
            with sqlite3.connect(database) as db:
                size = db.execute(
                    "SELECT length(checkpoint) FROM checkpoints ORDER BY checkpoint_id DESC LIMIT 1"
                ).fetchone()[0]
            print(
                f"{start + 1:>4}-{min(start + batch, total):<5} {seconds:7.3f}   {size / 1024:10.1f} KB   "
                f"{database.stat().st_size / 1024:8.0f} KB",
                flush=True,
            )
    finally:
        session.close()


if __name__ == "__main__":
    main()
