"""What the closest evidence shows a person, through the real CLI (issue 36, item 3; issue 34's long sentence).

When an answer cannot be confirmed, the evidence shown is what a person has to go on: a FAQ's question without
the lines answering it, a passage a rewritten query found shown before what the question itself found, a route
that says "graded correct" over evidence graded lower, or an option list dropped for being one long sentence,
each left the person with nothing; and a sentence cut to fit, or a table cut to the rows that match, must be cited
by the lines shown, not all of its own. Each test builds its own index with ``selfcrag ingest``; each failed on
31ad0ad (the cut's lines and the table's rows, on fb27486).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from cli_runner import selfcrag

DATA = Path(__file__).resolve().parent / "data"
# The end of httpx's README: a list the offline rewrite's feedback drew on ("autodetection").
HTTPX_DEPENDENCIES = """\
## Dependencies

The HTTPX project relies on these excellent libraries:

* `httpcore` - The underlying transport implementation for `httpx`.
  * `h11` - HTTP/1.1 support.
* `certifi` - SSL certificates.
* `idna` - Internationalized domain name support.
* `sniffio` - Async library autodetection.

As well as these optional installs:

* `h2` - HTTP/2 support. *(Optional, with `httpx[http2]`)*
* `socksio` - SOCKS proxy support. *(Optional, with `httpx[socks]`)*
"""
# libtasn1's manual as its PDF reads: asn1Parser's options, without blank lines, split as one 346-character sentence.
ASN1_UTILITIES = """\
3 Utilities

3.1 Invoking asn1Parser

asn1Parser reads a single file with ASN.1 definitions and generates a file with an array to
use with libtasn1 functions.
Usage: asn1Parser [OPTION] FILE
Read FILE with ASN.1 definitions and generate
a C array that is used with libtasn1 functions.
Mandatory arguments to long options are mandatory for short options too.
-c, --check checks the syntax only
-o, --output=FILE output file
-n, --name=NAME array name
-h, --help display this help and exit
-v, --version output version information and exit
Report bugs to: help-libtasn1@gnu.org
GNU Libtasn1 home page: <https://www.gnu.org/software/libtasn1/>
General help using GNU software: <https://www.gnu.org/gethelp/>

3.2 Invoking asn1Coding

asn1Coding generates a DER encoding from a file with ASN.1 definitions and another one
with assignments.
The file with assignments must have this syntax:
InstanceName Asn1Definition
nameString value
nameString value
...
The output file is a binary file with the DER encoding.
Usage: asn1Coding [OPTION] DEFINITIONS ASSIGNMENTS
Generates a DER encoding of ASN.1 DEFINITIONS file
and ASSIGNMENTS file with value assignments.
"""
# Debian's README for bash (/usr/share/doc/bash/README.Debian), its FAQ: the answer to the beeps lies under item 3.
FAQ = """\
A kind of FAQ for bash on Debian GNU/{Linux,Hurd}
-------------------------------------------------

1. symlinked directory completion behavior

   Starting with readline-4.2a, completion on symlinks that point
   to directories does not append the slash. To restore the behaviour
   found in readline-4.2, add to /etc/inputrc or ~/.inputrc:

       set mark-symlinked-directories on

2. How can I make bash 8-bit clean so I can type hi-bit characters
   directly?

   Remove the comments from the indicated lines in /etc/inputrc.
   It doesn't ship this way because otherwise the Meta bindings will not work.

3. How to get rid off annoying beeps for ambiguous completions?

   Put in /etc/inputrc (or in your ~/.inputrc):

        set show-all-if-ambiguous on

   Other people prefer:

        set bell-style none

4. bash doesn't display prompts correctly.

   When using colors in prompts (or escape characters), then make sure
   those characters are surrounded by \\[ and \\]. For more information
   look at the man page bash(1) and search for PROMPTING.
"""
# A release table: row 1.2 on line 9; Python 3.10 on lines 8 and 10, a row between them.
RELEASES = """\
# Release history

The project ships a release every quarter. Each release is supported for a year.

| Version | Date | Codename | Python |
|---------|------|----------|--------|
| 1.0 | 2023-01-15 | Aurora | 3.9 |
| 1.1 | 2023-04-20 | Borealis | 3.10 |
| 1.2 | 2023-07-18 | Cascade | 3.11 |
| 1.3 | 2023-10-12 | Dolomite | 3.10 |
| 2.0 | 2024-01-30 | Everest | 3.12 |

Older releases are no longer supported.
"""
BASH_README = "Bash Configuration for Debian\n-----------------------------\n\n" + FAQ
BELL = "How do I silence the bell sound when autocomplete has several possible matches?"


def ingest(root: Path, files: dict[str, str]) -> None:
    """Write the files into root/docs and index them into root/index with the CLI."""
    docs = root / "docs"
    docs.mkdir()
    for name, text in files.items():
        (docs / name).write_text(text, encoding="utf-8")
    run = selfcrag("ingest", "docs", "--data-dir", "index", cwd=root)
    assert run.returncode == 0, run.stderr


def ask(root: Path, question: str, **env: str) -> dict[str, Any]:
    """``selfcrag ask --json``, offline; the run must end showing the closest evidence."""
    run = selfcrag("ask", question, "--json", "--data-dir", "index", cwd=root, **env)
    assert run.returncode == 4, run.stdout + run.stderr
    return json.loads(run.stdout)


def test_a_faq_question_hit_is_shown_with_the_lines_that_answer_it(tmp_path: Path) -> None:
    # Searched with two passages a query, the hit on item 3's question stopped at it, the window before it:
    # "It doesn't ship this way … 3. How to get rid off annoying beeps for ambiguous completions?" and no answer.
    ingest(tmp_path, {"README.Debian.txt": BASH_README, "httpx-README.md": HTTPX_DEPENDENCIES})
    answer = ask(tmp_path, BELL, SELFCRAG_TOP_K="2")
    quotes = [c["quote"] for c in answer["citations"] if "annoying beeps" in c["quote"]]
    assert quotes, answer["answer"]
    shown = quotes[0]
    assert shown.startswith("3. How to get rid off annoying beeps for ambiguous completions?")
    assert "set show-all-if-ambiguous on" in shown and "set bell-style none" in shown
    # Up to the next question: neither the previous item's answer nor the next item.
    assert "Meta bindings" not in shown and "4. bash" not in shown


# A FAQ whose questions are asked in other words: each entry's question line is its best hit.
TIDYFEED_FAQ = (DATA / "tidyfeed-faq.txt").read_text(encoding="utf-8")


def test_a_faq_question_restating_the_one_asked_is_shown_first_with_its_answer(tmp_path: Path) -> None:
    # Before: the restated question counted for nothing as evidence, so neither it nor its answer was shown, and
    # "Why is tidyfeed called tidyfeed? …" stood first.
    ingest(tmp_path, {"tidyfeed-faq.txt": TIDYFEED_FAQ})
    answer = ask(tmp_path, "Which operating systems does tidyfeed support?")
    first = answer["citations"][0]["quote"]
    assert first.startswith("Which systems does tidyfeed run on?"), answer["answer"]
    assert "Linux, macOS and FreeBSD are tested before every release" in first
    # A question is shown with its answer or not at all: alone it would only take room.
    assert not any(c["quote"].rstrip().endswith("?") for c in answer["citations"]), answer["answer"]


def test_what_only_a_rewrite_found_is_shown_after_what_the_question_found(tmp_path: Path) -> None:
    # One passage a search: the question's own search finds httpx's list, a rewrite the window before it. The
    # rewrite's passage, graded higher on its own search's standing, came first.
    ingest(tmp_path, {"README.Debian.txt": BASH_README, "httpx-README.md": HTTPX_DEPENDENCIES})
    answer = ask(tmp_path, BELL, SELFCRAG_TOP_K="1")
    searches = [step for step in answer["trace"] if step["step"] == "retrieve"]
    own = [(f["source"], f["sentences"]) for f in searches[0]["found"]]
    shown = next(step for step in answer["trace"] if step["step"] == "abstain")["evidence"]

    def found_by_the_question(evidence: dict[str, Any]) -> bool:
        first, last = evidence["sentences"]
        return any(source == evidence["source"] and a <= first and last <= b for source, (a, b) in own)

    order = [found_by_the_question(evidence) for evidence in shown]
    assert len(searches) > 1 and True in order, answer["answer"]
    assert order == sorted(order, reverse=True), answer["answer"]


def test_the_route_says_graded_correct_only_over_evidence_graded_correct(tmp_path: Path) -> None:
    # Typer's README: a passage graded Correct, but the sentences shown come from passages graded lower; the
    # route said "graded correct" over them.
    shutil.copytree(DATA / "typer-readme", tmp_path / "docs")
    assert selfcrag("ingest", "docs", "--data-dir", "index", cwd=tmp_path).returncode == 0
    run = selfcrag("ask", "How do I make a command line app with typer?", "--data-dir", "index", cwd=tmp_path)
    assert run.returncode == 4, run.stdout + run.stderr
    answer = ask(tmp_path, "How do I make a command line app with typer?")
    grades = {
        (g["source"], tuple(g["sentences"])): g["score"]
        for step in answer["trace"]
        if step["step"] == "grade_documents"
        for g in step["scores"]
    }
    shown = next(step for step in answer["trace"] if step["step"] == "abstain")["evidence"]
    best_shown = max(
        grade
        for evidence in shown
        for (source, (first, last)), grade in grades.items()
        if source == evidence["source"] and first <= evidence["sentences"][0] and evidence["sentences"][1] <= last
    )
    route = next(line for line in run.stdout.splitlines() if line.startswith("route:"))
    assert best_shown < 0.54  # the upper threshold: what is shown was not graded Correct
    assert "graded correct" not in route and "evidence graded" in route, route


def test_a_long_sentence_holding_the_answer_is_cut_around_it_rather_than_dropped(tmp_path: Path) -> None:
    # The nine lines of asn1Parser's options are one sentence of 346 characters, past the 300 characters of
    # evidence: two shorter sentences were shown instead, and "-c, --check" nowhere.
    ingest(tmp_path, {"libtasn1-utilities.txt": ASN1_UTILITIES})
    answer = ask(tmp_path, "How do I make asn1Parser only validate a definitions file?")
    assert "-c, --check checks the syntax only" in answer["answer"]
    assert sum(len(c["quote"]) for c in answer["citations"]) <= 400  # the two best sentences' budget, at most


@pytest.mark.parametrize(
    "question",
    [
        "How do I make asn1Parser only validate a definitions file?",  # the option list, cut after its sixth line
        "What is the home page of GNU Libtasn1?",  # the wrapped description, cut to its second line
    ],
)
def test_a_cut_sentence_is_cited_by_the_lines_it_shows(tmp_path: Path, question: str) -> None:
    # The option list's cut "-c, --check … help-libtasn1@gnu.org …" was cited "lines 11–18", the two lines after
    # it (the home pages) included: a person opening the file there looks for what the quote left out.
    ingest(tmp_path, {"libtasn1-utilities.txt": ASN1_UTILITIES})
    answer = ask(tmp_path, question)
    lines = ASN1_UTILITIES.splitlines()
    cut = [c for c in answer["citations"] if "…" in c["quote"]]
    assert cut, answer["answer"]  # the case to show: a sentence too long for the budget, cut
    for citation in answer["citations"]:
        place = citation["place"]
        named = " ".join(" ".join(lines[place["first"] - 1 : place["last"]]).split())
        assert named == citation["quote"].strip("… "), (citation["where"], citation["quote"])
        assert citation["where"] == (
            f"line {place['first']}" if place["first"] == place["last"] else f"lines {place['first']}–{place['last']}"
        )


@pytest.mark.parametrize(
    ("question", "cited"),
    [
        ("What codename did release 1.2 have?", "line 9"),  # one row shown
        ("Which versions use Python 3.10?", "lines 8–10"),  # two rows shown, the row between them not
    ],
)
def test_a_table_is_cited_by_the_rows_it_shows(tmp_path: Path, question: str, cited: str) -> None:
    # The table shown as its header and row 1.2 was cited "lines 5–11", the whole table: a person opening the
    # file there finds the header and five rows, not the row shown.
    ingest(tmp_path, {"releases.md": RELEASES})
    answer = ask(tmp_path, question)
    lines = RELEASES.splitlines()
    tables = [c for c in answer["citations"] if c["quote"].startswith("|")]
    assert tables, answer["answer"]  # the case to show: a table, shown as its header and the rows that match
    for citation in answer["citations"]:
        place = citation["place"]
        named = lines[place["first"] - 1 : place["last"]]
        # A table's header and separator are context; what it shows is its rows, one a line.
        shown = citation["quote"].splitlines()[2:] if citation in tables else [citation["quote"]]
        assert shown[0] in named[0] and shown[-1] in named[-1], (citation["where"], citation["quote"])
        assert all(any(part in line for line in named) for part in shown), (citation["where"], citation["quote"])
    assert tables[0]["where"] == cited
