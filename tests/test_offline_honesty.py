"""Offline, what is shown is about the question (issue 46), through the real CLI over indexes ``selfcrag ingest`` built.

A rewrite drew words from passages graded Incorrect ("recipe banana bread good gpg.keyedit.delsig.invalid 无效 设成"),
a NEWS line's ``<tgc@jupiterrise.com>`` put "How many moons does Jupiter have?" on the documents' topic, and a
dedication two sentences after an epigraph was answered by the epigraph. Each test failed on f5f04be.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from cli_runner import selfcrag

from selfcrag.cli.ask import EXIT_STATUS
from selfcrag.index.tokenize import detect_language, tokenize

# Prompt lines of GnuPG's Chinese translation: short, and nothing like an English question.
GNUPG_PROMPTS = """\
请回答“yes”或“no”
无效的选择。
你真的想要删除这个签名吗？(y/N)
无效的签名已被删除。
请设成一个合适的值。
密钥已被吊销。
"""
KEYRING_README = """\
# Keyring tool

The keyring tool signs and verifies files with OpenPGP keys.

## Editing keys

Run `keyring edit KEYID` to open the key editor. The delsig command deletes an invalid signature from a user ID.

## Configuration

The configuration file lives in ~/.keyring/keyring.conf and sets the default key server and the trust model.
"""
# A NEWS file whose lines thank a person by e-mail address and name a URL and a path: words of no topic.
KEYRING_NEWS = """\
Noteworthy changes in release 2.4.1

 * Reported by Tom Gray <tgc@jupiterrise.com>
 * Fixed a crash when listing keys with an empty user ID.
 * Patches for AIX by <tgc@jupiterrise.com>, see https://jupiterrise.com/aix/notes
 * Manual pages are installed in /usr/share/man/man1/keyring.1 on Unix.
 * New option --export-filter to drop signatures on export.
 * Support for smartcards with 4096-bit RSA keys.
"""


def _ingested(folder: Path, files: dict[str, str | bytes]) -> Path:
    """Write ``files`` into ``folder``, index them with ``selfcrag ingest``, and return the data folder."""
    for name, content in files.items():
        if isinstance(content, bytes):
            (folder / name).write_bytes(content)
        else:
            (folder / name).write_text(content, encoding="utf-8")
    data_dir = folder / "index"
    run = selfcrag("ingest", folder, "--data-dir", data_dir, cwd=folder)
    assert run.returncode == 0, run.stderr
    return data_dir


def _ask(data_dir: Path, question: str) -> tuple[dict[str, Any], int]:
    run = selfcrag("ask", question, "--json", "--data-dir", data_dir, cwd=data_dir.parent)
    assert run.returncode in EXIT_STATUS.values(), run.stderr
    return json.loads(run.stdout), run.returncode


@pytest.fixture(scope="module")
def keyring(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An index of a keyring tool's English README and its Chinese prompt lines."""
    return _ingested(tmp_path_factory.mktemp("keyring"), {"gnupg-zh.txt": GNUPG_PROMPTS, "README.md": KEYRING_README})


def test_a_rewrite_of_an_off_topic_question_takes_no_word_from_passages_graded_incorrect(keyring: Path) -> None:
    result, status = _ask(keyring, "What's a good recipe for banana bread?")
    rewrites = [s["query"] for s in result["trace"] if s["step"] == "rewrite_query"]
    assert rewrites, "every passage is graded incorrect: the question is rewritten"
    documents = set(tokenize(GNUPG_PROMPTS + KEYRING_README))
    asked = set(tokenize("What's a good recipe for banana bread?"))
    imported = {t for query in rewrites for t in tokenize(query)} & documents - asked
    assert not imported, rewrites
    assert (result["status"], status) == ("not_found", EXIT_STATUS["not_found"]), result["answer"]


def test_a_question_near_only_an_e_mail_address_ends_not_found(tmp_path: Path) -> None:
    # "jupiterrise.com" is no sentence about Jupiter: with the addresses masked, nothing here is about its moons.
    data_dir = _ingested(tmp_path, {"NEWS": KEYRING_NEWS})
    result, status = _ask(data_dir, "How many moons does Jupiter have?")
    assert (result["status"], status) == ("not_found", EXIT_STATUS["not_found"]), result["answer"]
    assert result["citations"] == []


def _epub(chapter: str) -> bytes:
    """A one-chapter EPUB: its mimetype, container, package (with a spine) and chapter."""
    container = (
        '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
        '<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
        "</rootfiles></container>"
    )
    package = (
        '<?xml version="1.0" encoding="utf-8"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0" '
        'unique-identifier="id"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/">'
        '<dc:identifier id="id">waste-land</dc:identifier><dc:title>The Waste Land</dc:title>'
        "<dc:creator>T.S. Eliot</dc:creator><dc:language>en</dc:language></metadata>"
        '<manifest><item id="c1" href="chapter1.xhtml" media-type="application/xhtml+xml"/></manifest>'
        '<spine><itemref idref="c1"/></spine></package>'
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as epub:
        epub.writestr(zipfile.ZipInfo("mimetype"), "application/epub+zip")
        epub.writestr("META-INF/container.xml", container, zipfile.ZIP_DEFLATED)
        epub.writestr("OEBPS/content.opf", package, zipfile.ZIP_DEFLATED)
        epub.writestr("OEBPS/chapter1.xhtml", chapter, zipfile.ZIP_DEFLATED)
    return buffer.getvalue()


THE_WASTE_LAND = """\
<?xml version="1.0" encoding="utf-8"?>
<html xmlns="http://www.w3.org/1999/xhtml"><head><title>The Waste Land</title></head><body>
<h1>The Waste Land</h1>
<p>T.S. Eliot</p>
<p>"Nam Sibyllam quidem Cumis ego ipse oculis meis vidi in ampulla pendere..."</p>
<p>For Ezra Pound: il miglior fabbro</p>
<h2>I. The Burial of the Dead</h2>
<p>April is the cruellest month, breeding Lilacs out of the dead land, mixing Memory and desire, stirring Dull
roots with spring rain.</p>
<p>Winter kept us warm, covering Earth in forgetful snow, feeding A little life with dried tubers.</p>
<p>Summer surprised us, coming over the Starnbergersee With a shower of rain; we stopped in the colonnade, And went
on in sunlight, into the Hofgarten, And drank coffee, and talked for an hour.</p>
</body></html>
"""
# Other files of the folder use "dedicated" (a server, a reading room): the question's "dedicate" names nothing rare.
HOSTING = (
    "# Hosting\n\nRun the game on a dedicated server.\n\nA dedicated server needs a fixed address and an open port.\n"
)
READING_ROOM = "# The reading room\n\nThe reading room was dedicated in 1921 to the memory of the founder.\n"


def test_a_dedication_beside_an_epigraph_is_shown_first_not_the_epigraph_answered(tmp_path: Path) -> None:
    data_dir = _ingested(
        tmp_path,
        {"the-waste-land.epub": _epub(THE_WASTE_LAND), "hosting.md": HOSTING, "reading-room.md": READING_ROOM},
    )
    # The newcomer's EPUB put its byline nearer the question (past answer_similarity) than this small one does: the
    # gate is set where that one stood, so that the byline's closeness would let the quote through.
    run = selfcrag(
        "ask",
        "To whom did Eliot dedicate The Waste Land?",
        "--json",
        "--data-dir",
        data_dir,
        cwd=tmp_path,
        SELFCRAG_ANSWER_SIMILARITY="0.7",
    )
    result = json.loads(run.stdout)
    # The byline ("T.S. Eliot") restates the question; the epigraph beside it is no answer: nothing offline tells
    # which neighbour answers, so the evidence is shown, the dedication in what is read first.
    assert (result["status"], run.returncode) == ("closest_evidence", EXIT_STATUS["closest_evidence"]), result["answer"]
    assert "For Ezra Pound" in result["citations"][0]["quote"]


PARAPHRASE_DOCS = Path(__file__).resolve().parent / "data" / "paraphrase-set" / "docs"


def test_a_crossed_character_at_the_start_of_a_chinese_word_brings_no_line_before_the_english_evidence(
    tmp_path: Path,
) -> None:
    # A kettle's, a thermostat's and a water purifier's manuals. *Putting* crosses into 放, which the purifier's
    # "如果连续7天以上没有用水，再次使用前请先放水5分钟。" holds in 放水 (to let water run): counted as one of the
    # question's words, that line came first and the thermostat's "away from radiators and windows" fell out.
    names = ("en-kettle.txt", "en-thermostat.txt", "zh-purifier.txt")
    data_dir = _ingested(tmp_path, {name: (PARAPHRASE_DOCS / name).read_text(encoding="utf-8") for name in names})
    result, status = _ask(data_dir, "Near which things should I avoid putting it?")
    assert (result["status"], status) == ("closest_evidence", EXIT_STATUS["closest_evidence"]), result["answer"]
    quotes = [citation["quote"] for citation in result["citations"]]
    assert detect_language(quotes[0]) == "en", quotes
    assert any("radiators" in quote for quote in quotes), quotes


SCHOOLS = """\
# Elementary schools in San Diego

In most California school districts, school begins in August and late July. For example, in San Diego Unified \
School District, classes start in the last week of July.
Students attend the elementary school of their neighbourhood from kindergarten through fifth grade.
Many pupils attended Jefferson Elementary School before moving on to Roosevelt Middle School.
Parents can ask for a transfer so that a child attends another elementary school in the district.
The district runs 117 elementary schools, 24 middle schools and 16 high schools.
Each elementary school publishes the names of the schools its pupils go on to attend.
"""


def test_a_chinese_question_no_english_sentence_comes_near_ends_not_found(tmp_path: Path) -> None:
    # "Which school did he graduate from?": the English page is about schools (its mean meaning comes near on the
    # language pair's scale, 0.88), and "school" crosses, but no sentence of it is about anyone's school.
    data_dir = _ingested(tmp_path, {"schools.md": SCHOOLS})
    result, status = _ask(data_dir, "他毕业于哪所学校？")
    assert (result["status"], status) == ("not_found", EXIT_STATUS["not_found"]), result["answer"]


ALMANAC = Path(__file__).parent / "data" / "almanac.md"
# Clauses of the GNU FDL 1.3, section 4 (verbatim copies of the licence may be distributed), and a tool's README
# whose copyright lines name the Free Software Foundation: text that comes near any question.
LICENCE = """\
E. Add an appropriate copyright notice for your modifications adjacent to the other copyright notices.
F. Include, immediately after the copyright notices, a license notice giving the public permission to use the
   Modified Version under the terms of this License, in the form shown in the Addendum below.
I. Preserve the section Entitled "History", Preserve its Title, and add to it an item stating at least the title,
   year, new authors, and publisher of the Modified Version as given on the Title Page.
M. Delete any section Entitled "Endorsements".  Such a section may not be included in the Modified Version.
N. Do not retitle any existing section to be Entitled "Endorsements" or to conflict in title with any Invariant
   Section.
O. Preserve any Warranty Disclaimers.
"""
TIDEWATCH_README = """\
# tidewatch

tidewatch prints the times of high and low water for a harbour from its tide tables.

Copyright © 2001, 2002 Joey Hess
Copyright © 2022 Free Software Foundation, Inc.

## Usage

Run `tidewatch HARBOUR` to print the next four tides. The `--days N` option prints the tides of the next N days.
"""


@pytest.fixture(scope="module")
def almanac(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An index of a household almanac: a sentence or three on each of many everyday things."""
    return _ingested(tmp_path_factory.mktemp("almanac"), {"almanac.md": ALMANAC.read_text(encoding="utf-8")})


@pytest.fixture(scope="module")
def licensed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An index of a tool's README, with its copyright lines, and clauses of its documentation's licence."""
    return _ingested(tmp_path_factory.mktemp("licensed"), {"README.md": TIDEWATCH_README, "fdl.txt": LICENCE})


def _ends_not_found_on_a_sentence_near_every_question(data_dir: Path, question: str) -> None:
    result, status = _ask(data_dir, question)
    assert (result["status"], status) == ("not_found", EXIT_STATUS["not_found"]), result["answer"]
    (topic,) = [step["topic"] for step in result["trace"] if step["step"] == "abstain"]
    # Near enough on its own (topic_similarity, 0.42), but not once its commonness is taken off.
    assert topic["sentence"] >= 0.42 > 0.28 > topic["distinct"], topic


def test_a_question_near_only_sentences_about_everything_in_an_almanac_ends_not_found(almanac: Path) -> None:
    # An almanac says a little about everything: "Will it work with my 5 GHz wireless router?" finds a sentence
    # at 0.45 (phones updating their software overnight), which comes as near everyday questions about anything.
    _ends_not_found_on_a_sentence_near_every_question(almanac, "Will it work with my 5 GHz wireless router?")


def test_a_question_near_only_a_licence_and_copyright_lines_ends_not_found(licensed: Path) -> None:
    # The newcomer's question again, over a README's copyright lines and a licence's clauses (0.47 before).
    _ends_not_found_on_a_sentence_near_every_question(licensed, "What's a good recipe for banana bread?")


@pytest.mark.parametrize(
    ("question", "evidence"),
    [
        ("When does the museum not open?", "The museum is closed on Mondays."),
        ("How do I see the tides for the coming week?", "The `--days N` option prints the tides of the next N days."),
    ],
)
def test_a_paraphrased_question_about_a_sentence_of_one_thing_still_shows_its_evidence(
    almanac: Path, licensed: Path, question: str, evidence: str
) -> None:
    result, status = _ask(almanac if "museum" in question else licensed, question)
    assert (result["status"], status) == ("closest_evidence", EXIT_STATUS["closest_evidence"]), result["answer"]
    assert evidence in result["answer"], result["answer"]
