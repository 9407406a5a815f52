"""A data folder is untrusted input: a planted conversation store is refused, never run."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import ormsgpack
import pytest
from cli_runner import selfcrag
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.sqlite import SqliteSaver

from selfcrag.cli.chat import CONVERSATIONS_FILE
from selfcrag.graph.checkpoints import CheckpointSerializer, UnreadableConversationError

# LangGraph's msgpack extension for "call module.name(*args)".
CALL_WITH_ARGS = 1


@pytest.fixture
def data_dir(index_copy: Path, tmp_path: Path) -> Path:
    data = tmp_path / "data"
    shutil.copytree(index_copy, data)
    return data


def write_conversation(path: Path, thread: str) -> None:
    """Save one ended turn, as `selfcrag chat` does."""
    with sqlite3.connect(str(path), check_same_thread=False) as connection:
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"messages": [HumanMessage("How long are logs kept?"), AIMessage("90 days.")]}
        config = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
        SqliteSaver(connection).put(config, checkpoint, {"source": "loop", "step": 1}, {})  # type: ignore[arg-type]


def plant(path: Path, extension: ormsgpack.Ext) -> None:
    """Add an extension value to every stored conversation, as an attacker editing the file would."""
    with sqlite3.connect(str(path)) as connection:
        rows = connection.execute("SELECT rowid, checkpoint FROM checkpoints").fetchall()
        for rowid, blob in rows:
            raw = ormsgpack.unpackb(blob, ext_hook=ormsgpack.Ext, option=ormsgpack.OPT_NON_STR_KEYS)
            raw["channel_values"]["messages"].append(extension)
            connection.execute("UPDATE checkpoints SET checkpoint = ? WHERE rowid = ?", (ormsgpack.packb(raw), rowid))


def command_call(marker: Path) -> ormsgpack.Ext:
    return ormsgpack.Ext(CALL_WITH_ARGS, ormsgpack.packb(["os", "system", [f"touch {marker}"]]))


@pytest.mark.parametrize("how", [["--thread", "planted"], []], ids=["resume", "threads"])
def test_a_planted_conversation_runs_nothing_and_is_reported_in_one_line(
    data_dir: Path, tmp_path: Path, how: list[str]
) -> None:
    store = data_dir / CONVERSATIONS_FILE
    write_conversation(store, "planted")
    marker = tmp_path / "ran"
    plant(store, command_call(marker))
    run = selfcrag("chat", "--data-dir", data_dir, *how, cwd=tmp_path, stdin="/threads\n")
    assert not marker.exists()
    assert "Traceback" not in run.stderr + run.stdout
    errors = [line for line in run.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "os.system" in errors[0] and "conversations.sqlite" in errors[0], run.stderr


def test_a_conversation_selfcrag_wrote_is_read_back(tmp_path: Path) -> None:
    store = tmp_path / CONVERSATIONS_FILE
    write_conversation(store, "mine")
    with sqlite3.connect(str(store), check_same_thread=False) as connection:
        saved = SqliteSaver(connection, serde=CheckpointSerializer()).get_tuple({"configurable": {"thread_id": "mine"}})
    assert saved is not None
    messages = saved.checkpoint["channel_values"]["messages"]
    assert [type(m) for m in messages] == [HumanMessage, AIMessage] and messages[1].text == "90 days."


@pytest.mark.parametrize(
    "stored",
    [
        ("msgpack", ormsgpack.packb([ormsgpack.Ext(5, ormsgpack.packb(["subprocess", "Popen", {"args": "x"}, None]))])),
        ("msgpack", ormsgpack.packb([ormsgpack.Ext(6, b"")])),
        ("pickle", b"cos\nsystem\n(S'id'\ntR."),
        ("json", b'{"lc": 2, "type": "constructor", "id": ["os", "system"], "args": ["id"]}'),
        ("msgpack", b"\xc1\xff damaged"),
    ],
    ids=["unknown-model", "numpy-array", "pickle", "json-revival", "damaged"],
)
def test_only_the_types_selfcrag_writes_are_read(stored: tuple[str, bytes]) -> None:
    with pytest.raises(UnreadableConversationError, match="nothing of it was loaded"):
        CheckpointSerializer().loads_typed(stored)
