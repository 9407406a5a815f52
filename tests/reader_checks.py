"""Helpers for tests of the readers through the real CLI: what a search finds in one file, and what was skipped."""

from __future__ import annotations

import json
from pathlib import Path

from cli_runner import selfcrag

from selfcrag.files.loaders import LoadedFile, read_document


def search(root: Path, query: str, source: str) -> dict:
    """The best passage ``selfcrag search --json`` finds in the file named ``source`` (among the top 5)."""
    run = selfcrag("search", query, "--json", "--data-dir", "index", cwd=root)
    assert run.returncode == 0, run.stderr
    passages = json.loads(run.stdout)["passages"]
    found = [p for p in passages if Path(p["source"]).name == source]
    assert found, [(p["source"], p["text"]) for p in passages]
    return found[0]


def skipped_reasons(root: Path) -> dict[str, str]:
    """What the ingest skipped, by file name: the ``skipped PATH: reason`` lines it wrote to ``ingest.err``."""
    reasons = {}
    for line in (root / "ingest.err").read_text(encoding="utf-8").splitlines():
        if line.startswith("skipped "):
            path, _, reason = line.removeprefix("skipped ").partition(": ")
            reasons[Path(path).name] = reason
    return reasons


def loaded(path: Path) -> LoadedFile:
    """The file as its reader reads it (failing the test when it is skipped)."""
    result = read_document(path)
    assert isinstance(result, LoadedFile), result
    return result
