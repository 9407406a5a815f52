"""Links in an ingested folder that lead out of it are not followed unless asked (issue 33, item 3).

A downloaded ``docs/`` may hold ``appendix.md -> ../private/secret.md`` and ``extra -> ../private``: ingesting it
must not index the user's private files, and must say which links it left alone. Links that stay inside the folder
keep working, a link the user names on the command line is followed, and ``--follow-links`` follows them all.
Each run is the real ``selfcrag`` command in a subprocess, into a data dir of its own.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest
from cli_runner import selfcrag

from selfcrag.files import loaders
from selfcrag.files.loaders import SkippedFile, discover, read_document
from selfcrag.graph.context import Context
from selfcrag.ingest import finding
from selfcrag.ingest.run import ingest

SECRET = "My bank PIN is 4242 and the safe code is 9917.\n"
DIARY = "The diary says the spare house key hides under the blue flowerpot.\n"
GUIDE = "# Pump guide\n\nThe coolant pump is serviced every 30 days.\n"
PLAN = "The migration plan moves the archive to cold storage in March.\n"
LINK_OUTSIDE = "a link to outside the folder"
LINK_IN_PATH = "its path now goes through a link (not followed)"


def plant(root: Path) -> Path:
    """A downloaded ``docs/`` with two links out of it and one that stays inside; returns ``docs``.

    ``private/`` beside it holds the secret and a diary. Inside ``docs``, ``plan.md`` links to a file in a hidden
    folder, which the walk never enters: the plan is found only if that link is followed.
    """
    private, docs = root / "private", root / "docs"
    (docs / ".drafts").mkdir(parents=True)
    private.mkdir()
    (private / "secret.md").write_text(SECRET, encoding="utf-8")
    (private / "diary.md").write_text(DIARY, encoding="utf-8")
    (docs / "guide.md").write_text(GUIDE, encoding="utf-8")
    (docs / ".drafts" / "plan.md").write_text(PLAN, encoding="utf-8")
    (docs / "appendix.md").symlink_to("../private/secret.md")
    (docs / "extra").symlink_to("../private", target_is_directory=True)
    (docs / "plan.md").symlink_to(".drafts/plan.md")
    return docs


def skipped_lines(run: subprocess.CompletedProcess[str]) -> list[str]:
    """The ``skipped PATH: REASON`` lines an ingest printed."""
    return [line for line in run.stderr.splitlines() if line.startswith("skipped ")]


def ingested(root: Path, *args: str | Path) -> tuple[subprocess.CompletedProcess[str], Path]:
    """Run ``selfcrag ingest ARGS`` into ``root/index``; returns the run and the data dir."""
    run = selfcrag("ingest", *args, "--data-dir", root / "index", cwd=root)
    assert run.returncode == 0, run.stderr
    return run, root / "index"


def searched(data_dir: Path, question: str) -> str:
    """What ``selfcrag search`` prints for a question."""
    run = selfcrag("search", question, "--data-dir", data_dir, cwd=data_dir.parent)
    assert run.returncode == 0, run.stderr
    return run.stdout


@pytest.fixture(scope="module")
def default_ingest(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path, Path]:
    """``selfcrag ingest docs`` over the planted folder: the run, the data dir and ``docs``."""
    root = tmp_path_factory.mktemp("links")
    docs = plant(root)
    run, data_dir = ingested(root, "docs")
    return run, data_dir, docs


def test_a_link_to_a_file_outside_the_folder_is_skipped_with_its_reason(default_ingest) -> None:
    run, _, docs = default_ingest
    assert f"skipped {docs / 'appendix.md'}: {LINK_OUTSIDE}" in skipped_lines(run)


def test_a_link_to_a_folder_outside_the_folder_is_skipped_with_its_reason(default_ingest) -> None:
    run, _, docs = default_ingest
    assert f"skipped {docs / 'extra'}: {LINK_OUTSIDE}" in skipped_lines(run)


def test_the_summary_says_how_to_follow_the_links_skipped(default_ingest) -> None:
    run, _, _ = default_ingest
    assert "links to outside the folder are not followed: --follow-links follows them" in run.stderr.splitlines()


def test_search_finds_nothing_of_what_the_links_out_of_the_folder_lead_to(default_ingest) -> None:
    _, data_dir, _ = default_ingest
    assert "4242" not in searched(data_dir, "bank PIN safe code")
    assert "flowerpot" not in searched(data_dir, "where is the spare house key")


def test_a_link_that_stays_inside_the_folder_is_followed(default_ingest) -> None:
    run, data_dir, _ = default_ingest
    assert run.stdout.startswith("2 documents, ")  # the guide, and the plan reached only through plan.md
    assert "cold storage in March" in searched(data_dir, "when does the archive move to cold storage")


def test_follow_links_indexes_what_links_out_of_the_folder_lead_to(tmp_path: Path) -> None:
    plant(tmp_path)
    run, data_dir = ingested(tmp_path, "docs", "--follow-links")
    assert skipped_lines(run) == []
    assert "4242" in searched(data_dir, "bank PIN safe code")
    assert "flowerpot" in searched(data_dir, "where is the spare house key")


def test_a_link_named_on_the_command_line_is_followed(tmp_path: Path) -> None:
    docs = plant(tmp_path)
    run, data_dir = ingested(tmp_path, docs / "appendix.md", docs / "extra")
    assert skipped_lines(run) == []
    assert "4242" in searched(data_dir, "bank PIN safe code")


def test_links_in_a_named_link_are_judged_against_the_folder_it_leads_to(tmp_path: Path) -> None:
    docs = plant(tmp_path)
    private = tmp_path / "private"
    (private / "copy.md").symlink_to("secret.md")  # inside private, though not inside docs/extra as written
    (private / "manual.md").symlink_to("../docs/plan.md")  # out of private
    run, data_dir = ingested(tmp_path, docs / "extra")
    assert skipped_lines(run) == [f"skipped {docs / 'extra' / 'manual.md'}: {LINK_OUTSIDE}"]
    assert run.stdout.startswith("2 documents, ")  # the diary and the secret (also reached as copy.md)
    assert "cold storage" not in searched(data_dir, "when does the archive move to cold storage")


def test_a_folder_swapped_for_a_link_after_it_was_walked_is_not_read(tmp_path: Path, monkeypatch) -> None:
    """A file found in ``docs/notes`` is read after ``docs/notes`` has become a link to the private folder."""
    docs = plant(tmp_path)
    (docs / "notes").mkdir()
    (docs / "notes" / "secret.md").write_text("Meeting notes: the pump is serviced monthly.\n", encoding="utf-8")

    def discover_then_swap(paths: Sequence[str | Path], **options: bool) -> tuple[list[Path], list[SkippedFile]]:
        found = loaders.discover(paths, **options)
        (docs / "notes").rename(tmp_path / "notes-moved")
        (docs / "notes").symlink_to("../private", target_is_directory=True)
        return found

    monkeypatch.setattr(finding, "discover", discover_then_swap)
    summary = ingest([docs], Context(data_dir=str(tmp_path / "index")).settings())
    assert summary.skipped[-1] == SkippedFile(docs / "notes" / "secret.md", LINK_IN_PATH)
    assert "4242" not in searched(tmp_path / "index", "bank PIN safe code")


def test_a_file_whose_path_became_a_link_is_not_read_when_links_are_not_followed(tmp_path: Path) -> None:
    docs = plant(tmp_path)
    (docs / "notes").mkdir()
    (docs / "notes" / "diary.md").write_text("Notes of the pump team.\n", encoding="utf-8")
    [found] = [path for path in discover([docs])[0] if path.parent.name == "notes"]
    (docs / "notes").rename(tmp_path / "notes-moved")
    (docs / "notes").symlink_to("../private", target_is_directory=True)
    assert read_document(found, follow_links=False) == SkippedFile(found, LINK_IN_PATH)


def test_prune_keeps_documents_reached_through_links_that_are_now_skipped(tmp_path: Path) -> None:
    """Skipping a link is no reason to remove its documents: prune removes only documents whose files are gone."""
    plant(tmp_path)
    ingested(tmp_path, "docs", "--follow-links")
    run, _ = ingested(tmp_path, "docs", "--prune")
    assert ", 0 removed" in run.stdout and run.stdout.startswith("4 documents, ")
