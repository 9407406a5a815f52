"""A 500-turn ``selfcrag chat`` conversation keeps the same size: what the workflow sees and what it stores.

The real command reads the questions from a pipe and keeps the thread in ``conversations.sqlite``; the turns
alternate a question and a follow-up that leans on it. Time is not asserted: the size of the latest checkpoint,
which each turn loads and writes, is (the bench in ``tests/bench_long_chat.py`` times the turns).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from cli_runner import selfcrag
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

TURNS = ["How long are application logs kept?", "And audit logs?"]
DEFAULT_HISTORY_TURNS = 10


def chat(index: Path, turns: int, *options: str) -> str:
    questions = "".join(f"{TURNS[i % 2]}\n" for i in range(turns))
    run = selfcrag("chat", "--thread", "long", *options, "--data-dir", index, cwd=index.parent, stdin=questions)
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr
    return run.stdout


def stored(index: Path) -> tuple[int, int, list[str]]:
    """The checkpoints kept, the size of the latest, and the questions in its conversation."""
    with sqlite3.connect(index / "conversations.sqlite") as db:
        rows = db.execute(
            "SELECT type, checkpoint FROM checkpoints WHERE thread_id = 'long' ORDER BY checkpoint_id"
        ).fetchall()
    kind, blob = rows[-1]
    messages = JsonPlusSerializer().loads_typed((kind, blob))["channel_values"]["messages"]
    return len(rows), len(blob), [m.text for m in messages if m.type == "human"]


def forget_conversations(index: Path) -> None:
    for path in index.glob("conversations.sqlite*"):  # with its -wal and -shm files
        path.unlink()


def test_a_500_turn_conversation_stores_and_shows_the_workflow_a_bounded_history(index_copy: Path) -> None:
    forget_conversations(index_copy)
    chat(index_copy, 50)
    kept_at_50, size_at_50, asked_at_50 = stored(index_copy)
    transcript = chat(index_copy, 450)  # the same thread, resumed
    kept_at_500, size_at_500, asked_at_500 = stored(index_copy)

    assert kept_at_50 == kept_at_500 == 1  # earlier checkpoints are not kept
    assert size_at_500 <= size_at_50 * 1.05, (size_at_50, size_at_500)  # not one message more than at turn 50
    assert len(asked_at_50) == len(asked_at_500) == DEFAULT_HISTORY_TURNS + 1
    assert transcript.count("90 days") >= 225  # every logs question still answered; follow-ups still resolved
    routes = [line for line in transcript.splitlines() if line.startswith("route: ")]
    assert len(routes) == 450 and "follow-up → “" in routes[-1]

    listing = selfcrag("chat", "--thread", "long", "--data-dir", index_copy, cwd=index_copy.parent, stdin="")
    assert "resuming conversation long (500 questions so far" in listing.stdout


def test_the_window_is_configurable(index_copy: Path) -> None:
    forget_conversations(index_copy)
    chat(index_copy, 12, "--history-turns", "2")
    assert len(stored(index_copy)[2]) == 3  # two earlier questions and the latest
