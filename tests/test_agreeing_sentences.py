"""Offline, a second sentence stating the same fact confirms an answer instead of blocking it (issue 36.1).

An offline answer is given only when the sentence it quotes stands well above
everything else retrieved. Measured against every other sentence, a manual
that states a fact twice ("The default compression level is -6", "the default
compression level (-6)") could never be answered: the repetition pulled the
margin under the bar. Each case runs the real CLI on a folder the test writes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cli_runner import selfcrag

GZIP_MANUAL = """GZIP(1)                     General Commands Manual                    GZIP(1)

NAME
       gzip, gunzip, zcat - compress or expand files

SYNOPSIS
       gzip [ -acdfhklLnNrtvV19 ] [-S suffix] [ name ...  ]

DESCRIPTION
       Gzip reduces the size of the named files using Lempel-Ziv coding
       (LZ77).  Whenever possible, each file is replaced by one with the
       extension .gz, while keeping the same ownership modes, access and
       modification times.

OPTIONS
       -c --stdout --to-stdout
              Write output on standard output; keep original files unchanged.

       -d --decompress --uncompress
              Decompress.

       -# --fast --best
              Regulate the speed of compression using the specified digit #,
              where -1 or --fast indicates the fastest compression method
              (less compression) and -9 or --best indicates the slowest
              compression method (best compression).  The default compression
              level is -6 (that is, biased towards high compression at expense
              of speed).

ENVIRONMENT
       The obsolescent environment variable GZIP can hold a set of default
       options for gzip.  These options are interpreted first and can be
       overwritten by explicit command line parameters.

BUGS
       In some rare cases, the --best option gives worse compression than the
       default compression level (-6).  On some highly redundant files,
       compress compresses better than gzip.
"""

# Three sentences saying one thing: the two that hold the question's words score within 0.06 of each other.
KETTLE_MANUAL = (
    "首次使用前，请将水壶装满清水并煮沸，然后倒掉，重复两到三次。\n"
    "电热水壶第一次使用前要做的，是先将水壶装满清水煮沸，再把水倒掉。\n"
    "电热水壶第一次使用前要做的清洗，就是煮沸一壶清水后倒掉。\n"
)


def ask_folder(tmp_path: Path, name: str, text: str, question: str) -> tuple[int, dict[str, Any]]:
    """Ingest one document through the CLI, ask about it offline, and return the exit status and ``ask --json``."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / name).write_text(text, encoding="utf-8")
    ingest = selfcrag("ingest", "docs", "--data-dir", "index", cwd=tmp_path)
    assert ingest.returncode == 0, ingest.stderr
    run = selfcrag("ask", question, "--json", "--data-dir", "index", cwd=tmp_path)
    assert run.returncode in (0, 4), run.stderr
    return run.returncode, json.loads(run.stdout)


def test_a_manual_repeating_the_default_level_answers_it(tmp_path: Path) -> None:
    code, result = ask_folder(tmp_path, "gzip.txt", GZIP_MANUAL, "What is the default compression level of gzip?")
    assert (code, result["status"]) == (0, "answered"), result["trace"]
    assert "-6" in result["answer"]


def test_a_chinese_manual_saying_it_twice_answers_it(tmp_path: Path) -> None:
    code, result = ask_folder(tmp_path, "kettle.txt", KETTLE_MANUAL, "电热水壶第一次使用前要做什么？")
    assert (code, result["status"]) == (0, "answered"), result["trace"]
    assert "煮沸" in result["answer"] and "倒掉" in result["answer"]


def test_a_sentence_giving_another_value_still_holds_the_answer_back(tmp_path: Path) -> None:
    # Two tools, two defaults: the question names neither, so neither sentence is the answer until one is read.
    manual = (
        "Compression levels\n\n"
        "The default compression level of gzip is 6.\n\n"
        "The default compression level of zstd is 3.\n\n"
        "Both tools keep the original file unless told to remove it.\n"
    )
    code, result = ask_folder(tmp_path, "levels.txt", manual, "What is the default compression level?")
    assert (code, result["status"]) == (4, "closest_evidence"), result["trace"]
