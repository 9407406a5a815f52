"""A symbolic link planted in a data folder never leads a delete, a write or a read outside it.

selfcrag never makes a link in a data folder, so a link among its parts was planted: by an
unpacked archive or a cloned repository whose ``.selfcrag`` the default data folder picks up.
Each test plants one such link to a stand-in home folder and checks that the real command
refuses the data folder in one line and that nothing outside changed.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from cli_runner import selfcrag
from index_files import copy_index

from selfcrag.index import generations
from selfcrag.index.store import private_temporary_views

SAMPLE_DOC = "# Kettle\n\nThe kettle switches itself off when the water boils.\n"


def stand_in_home(parent: Path) -> Path:
    """A folder standing for the user's home: subfolders that no lock file matches, and a file."""
    home = parent / "home"
    for name in ("Documents", ".ssh", "projects"):
        (home / name).mkdir(parents=True)
        (home / name / "keep.txt").write_text(f"{name} must survive\n")
    (home / ".bashrc").write_text("export KEEP=1\n")
    return home


def snapshot(folder: Path) -> dict[str, str]:
    """Every path under ``folder`` with its content (folders as empty text)."""
    return {
        str(path.relative_to(folder)): "" if path.is_dir() else path.read_text() for path in sorted(folder.rglob("*"))
    }


@pytest.fixture
def data_dir(index_copy: Path, tmp_path: Path) -> Path:
    """A private copy of the sample index, to plant links in."""
    copy = tmp_path / "repo" / ".selfcrag"
    copy_index(index_copy, copy)
    return copy


def assert_refused(result: object, link: Path) -> None:
    assert result.returncode == 1, result.stderr  # type: ignore[attr-defined]
    lines = result.stderr.strip().splitlines()  # type: ignore[attr-defined]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr  # type: ignore[attr-defined]
    assert "symbolic link" in lines[0] and link.name in lines[0]


@pytest.mark.parametrize("command", ["search", "ingest"])
def test_a_views_folder_linked_to_home_deletes_nothing_there(data_dir: Path, tmp_path: Path, command: str) -> None:
    home = stand_in_home(tmp_path)
    before = snapshot(home)
    views = data_dir / "index" / ".views"
    views.mkdir(exist_ok=True)
    views.rmdir()
    views.symlink_to(home, target_is_directory=True)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "kettle.md").write_text(SAMPLE_DOC)
    args = ["search", "kettle"] if command == "search" else ["ingest", docs]
    result = selfcrag(*args, "--data-dir", data_dir, cwd=tmp_path)
    assert_refused(result, views)
    assert snapshot(home) == before


def test_an_index_folder_linked_to_home_is_refused_and_home_is_unchanged(tmp_path: Path) -> None:
    home = stand_in_home(tmp_path)
    before = snapshot(home)
    data_dir = tmp_path / "repo" / ".selfcrag"
    data_dir.mkdir(parents=True)
    (data_dir / "index").symlink_to(home, target_is_directory=True)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "kettle.md").write_text(SAMPLE_DOC)
    result = selfcrag("ingest", docs, "--data-dir", data_dir, cwd=tmp_path)
    assert_refused(result, data_dir / "index")
    assert snapshot(home) == before


def test_an_old_generation_linked_to_home_is_refused_before_the_sweep(data_dir: Path, tmp_path: Path) -> None:
    home = stand_in_home(tmp_path)
    before = snapshot(home)
    planted = data_dir / "index" / "gen-000000"
    planted.symlink_to(home / "Documents", target_is_directory=True)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "kettle.md").write_text(SAMPLE_DOC)
    result = selfcrag("ingest", docs, "--data-dir", data_dir, cwd=tmp_path)
    assert_refused(result, planted)
    assert snapshot(home) == before


@pytest.mark.parametrize("part", ["index/writer.lock", "chat_history", "conversations.sqlite"])
def test_a_file_of_the_data_folder_linked_outside_is_never_written(data_dir: Path, tmp_path: Path, part: str) -> None:
    outside = tmp_path / "outside.txt"
    planted = data_dir / part
    planted.unlink(missing_ok=True)
    planted.symlink_to(outside)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "kettle.md").write_text(SAMPLE_DOC)
    for args in (["ingest", docs], ["search", "kettle"]):
        result = selfcrag(*args, "--data-dir", data_dir, cwd=tmp_path)
        assert_refused(result, planted)
    assert not outside.exists()


def test_a_shard_file_linked_outside_is_not_read_into_a_view(data_dir: Path, tmp_path: Path) -> None:
    current = generations.current_path(data_dir / "index")
    assert current is not None
    shard_file = next(path for path in (current / "shard").rglob("*") if path.is_file())
    secret = tmp_path / "secret.bin"
    secret.write_bytes(shard_file.read_bytes())
    shard_file.unlink()
    shard_file.symlink_to(secret)
    result = selfcrag("search", "kettle", "--data-dir", data_dir, cwd=tmp_path)
    assert_refused(result, shard_file)


def test_the_clean_up_of_dead_views_never_follows_a_link(tmp_path: Path) -> None:
    home = stand_in_home(tmp_path)
    before = snapshot(home)
    root = tmp_path / "data" / "index"
    root.mkdir(parents=True)
    (root / ".views").symlink_to(home, target_is_directory=True)
    (root / ".gen-000002.tmp").symlink_to(home / "projects", target_is_directory=True)
    generations.remove_stale_views(root / ".views")
    generations.clean_leftovers(root)
    generations.sweep(root)
    assert snapshot(home) == before
    assert not (root / ".gen-000002.tmp").is_symlink()  # the planted link itself is removed, not its target


def test_the_views_folder_in_the_shared_temporary_folder_is_this_users_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    home = stand_in_home(tmp_path)
    planted = tmp_path / f"selfcrag-views-{os.getuid()}"
    planted.symlink_to(home, target_is_directory=True)
    with pytest.raises(OSError):
        private_temporary_views()
    planted.unlink()
    planted.mkdir(mode=0o777)
    planted.chmod(0o777)  # made by another, or open to every local user
    with pytest.raises(OSError):
        private_temporary_views()
    planted.rmdir()
    made = private_temporary_views()
    assert made == planted and made.stat().st_mode & 0o777 == 0o700


def test_every_part_selfcrag_keeps_in_a_data_folder_is_checked_for_links() -> None:
    from selfcrag.cli.chat import CONVERSATIONS_FILE, HISTORY_FILE
    from selfcrag.eval.retrieval_eval import PROPOSITIONS
    from selfcrag.heuristics.background import CACHE_DIR
    from selfcrag.ingest.run import LEGACY_FILES
    from selfcrag.llm.capabilities import FILE_NAME

    named = {CONVERSATIONS_FILE, HISTORY_FILE, PROPOSITIONS, CACHE_DIR, FILE_NAME, *LEGACY_FILES}
    assert named <= set(generations.DATA_DIR_PARTS)
