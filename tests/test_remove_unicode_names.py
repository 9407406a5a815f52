"""``selfcrag remove`` takes a name in either Unicode spelling of its accents (issue 44, item 4).

A file named with a combining accent (NFD, ``cafe`` and U+0301, as macOS writes names) looks in ``selfcrag
list`` like the name typed with one accented letter (NFC, ``café``), but ``remove`` with that spelling matched
nothing. Both commands run for real, on an index the real ``ingest`` built.
"""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

from cli_runner import selfcrag

DECOMPOSED = "cafe\u0301.md"  # NFD
COMPOSED = "caf\u00e9.md"  # NFC: what a keyboard types


def listed_paths(root: Path) -> list[str]:
    run = selfcrag("list", "--json", "--data-dir", "index", cwd=root)
    assert run.returncode == 0, run.stderr
    return sorted(file["path"] for file in json.loads(run.stdout)["files"])


def ingested(root: Path, files: dict[str, str]) -> Path:
    """Write the files into ``root/docs`` and index them into ``root/index`` with the real command."""
    (root / "docs").mkdir()
    for name, text in files.items():
        (root / "docs" / name).write_text(text, encoding="utf-8")
    run = selfcrag("ingest", "docs", "--data-dir", "index", cwd=root)
    assert run.returncode == 0, run.stderr
    return root


def test_a_file_indexed_under_its_decomposed_name_is_removed_by_its_composed_spelling(tmp_path: Path) -> None:
    assert unicodedata.normalize("NFC", DECOMPOSED) == COMPOSED != DECOMPOSED
    root = ingested(
        tmp_path,
        {DECOMPOSED: "# Café\n\nThe café opens at seven.\n", "tea.md": "# Tea\n\nThe tea room opens at nine.\n"},
    )
    assert listed_paths(root) == sorted([DECOMPOSED, "tea.md"])
    run = selfcrag("remove", f"docs/{COMPOSED}", "--data-dir", "index", cwd=root)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("removed 1 file(s); 1 documents"), run.stdout
    assert listed_paths(root) == ["tea.md"]


def test_of_two_files_spelt_both_ways_the_one_named_exactly_is_removed(tmp_path: Path) -> None:
    # Linux keeps both spellings as two files: the name as written wins over its other spelling.
    root = ingested(tmp_path, {DECOMPOSED: "The café opens at seven.\n", COMPOSED: "The other café closes at noon.\n"})
    run = selfcrag("remove", f"docs/{COMPOSED}", "--data-dir", "index", cwd=root)
    assert run.returncode == 0, run.stderr
    assert listed_paths(root) == [DECOMPOSED]
