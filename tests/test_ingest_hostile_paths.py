"""``selfcrag ingest`` never aborts on one bad path, and reads each text in the encoding it is written in.

One run over a folder nested 1,100 deep, a file name with undecodable bytes, an unreadable file named on the
command line, and Latin-1, GB18030 and BOM-less UTF-16 text: each bad path is one ``skipped`` line with its
reason, each text not in UTF-8 one ``read PATH as ENCODING`` line, and the rest is indexed and found.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_runner import selfcrag

DEPTH = 1100
FRENCH = "Les journaux d'application sont conservés pendant quatre-vingt-dix jours, puis supprimés.\n"
CHINESE = "审计日志保存七年，到期后归档到冷存储。\n"
UTF16 = "Backups of the billing database are kept for fourteen months.\n"


def unreadable_prefix() -> list[str]:
    """Run the command so that a mode-000 file is unreadable to it, even as root (without the DAC capabilities)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: no way to make a file unreadable")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search"]


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Any]]:
    root = tmp_path_factory.mktemp("hostile_paths")
    docs = root / "docs"
    docs.mkdir()
    folder = str(docs)
    for _ in range(DEPTH):  # one level at a time: makedirs and Path.mkdir(parents=True) recurse too
        folder += "/d"
        os.mkdir(folder)
    (Path(folder) / "deep.md").write_text("The deepest archive holds the tape inventory.\n", encoding="utf-8")
    (docs / "good.md").write_text("Application logs are kept for 90 days.\n", encoding="utf-8")
    (docs / "latin1.txt").write_bytes(FRENCH.encode("latin-1"))
    (docs / "gb.txt").write_bytes(CHINESE.encode("gb18030"))
    (docs / "utf16.txt").write_bytes(UTF16.encode("utf-16-le"))  # no BOM
    with open(os.fsencode(docs) + b"/bad\xff\xfe.md", "wb") as bad:
        bad.write(b"A file whose name is not UTF-8.\n")
    unreadable = root / "unreadable.md"
    unreadable.write_text("Nobody may read this.\n", encoding="utf-8")
    unreadable.chmod(0)
    run = selfcrag("ingest", docs, unreadable, "--data-dir", root / "index", cwd=root, prefix=unreadable_prefix())
    yield root, run
    remove_deep(docs / "d")


def remove_deep(top: Path) -> None:
    """Remove the deep folder bottom up: shutil.rmtree (and so pytest's own clean-up) recurses past the limit."""
    deepest = str(top)
    while os.path.isdir(deepest + "/d"):
        deepest += "/d"
    while len(deepest) >= len(str(top)):
        for name in os.listdir(deepest):
            os.remove(os.path.join(deepest, name))
        os.rmdir(deepest)
        deepest = deepest[:-2]


def test_each_bad_path_is_one_skipped_line_and_the_rest_is_indexed(ingested: tuple[Path, Any]) -> None:
    root, run = ingested
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr
    assert run.stdout.startswith("5 documents")  # good, deep, latin1, gb, utf16
    skipped = sorted(line for line in run.stderr.splitlines() if line.startswith("skipped "))
    assert skipped == [
        f"skipped {root}/docs/bad\\xff\\xfe.md: file name is not valid UTF-8 (rename it)",
        f"skipped {root}/unreadable.md: permission denied",
    ]


def test_the_encoding_of_each_text_not_in_utf8_is_detected_and_reported(ingested: tuple[Path, Any]) -> None:
    root, run = ingested
    read_as = sorted(line for line in run.stderr.splitlines() if line.startswith("read "))
    assert read_as == [
        f"read {root}/docs/gb.txt as gb18030",
        f"read {root}/docs/latin1.txt as cp1252",
        f"read {root}/docs/utf16.txt as utf_16_le",
    ]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("journaux d'application conservés", "conservés pendant quatre-vingt-dix jours"),
        ("审计日志保存多久", "审计日志保存七年"),
        ("billing database backups", "kept for fourteen months"),
        ("tape inventory archive", "The deepest archive holds the tape inventory."),
    ],
)
def test_every_readable_text_is_found_as_written(ingested: tuple[Path, Any], query: str, expected: str) -> None:
    root, _ = ingested
    run = selfcrag("search", query, "-k", "1", "--data-dir", root / "index", cwd=root)
    assert run.returncode == 0, run.stderr
    assert expected in run.stdout
