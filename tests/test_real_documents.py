"""Documents in the shape of real ones, through the real CLI: their titles, sections and what an answer quotes.

Issue 19, item 2. On 43 files nobody here wrote, the offline answer quoted a FAQ's question as its own
answer, a page's "Next: … Previous: … Up: …" line, a README's opening sentence instead of the one that
answers, and an inline ``<abbr>`` tag; titles came from ``#`` comments in a PDF's code, from a text file's
first sentence and from a man page's header line; a section path held a raw Markdown link.
tests/data/real-docs holds a document of each kind (the PDFs are written here); every test below failed
before the change, but for the titles from a ``# `` heading, an ``<h1>``, a reST title and a ``<title>``
and the Corvid page's breadcrumb, which held already and are kept here.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from cli_runner import selfcrag
from pdf_files import page_content, text_pdf

REAL_DOCS = Path(__file__).resolve().parent / "data" / "real-docs"
# A deployment guide whose code example holds "#" comments, with its title in the PDF's metadata.
LEDGER_PDF_LINES = [
    "Deploying the Ledger Service",
    "The ledger service runs as a container behind the company proxy.",
    "Build the image and start it with these commands:",
    "# build the image",
    "docker build -t ledger .",
    "# start it on port 8080",
    "docker run -p 8080:8080 ledger",
    "The health check answers on /healthz within five seconds of the start.",
]
# A runbook without metadata: its first line is its title.
RUNBOOK_PDF_LINES = [
    "Nightly Report Runbook",
    "The report job is started by cron with the lines below:",
    "# every night at 01:30",
    "30 1 * * * /opt/reports/run.sh",
    "If the report is missing at 07:00, rerun run.sh by hand and tell the finance team.",
]
# A script's listing printed to PDF: its first line is a comment, so it has no title but its file name.
CLEANUP_PDF_LINES = [
    "# remove build folders older than a week",
    "find /srv/builds -maxdepth 1 -mtime +7 -exec rm -rf {} +",
    "The cleanup script frees the build disk every Saturday night.",
]


@pytest.fixture(scope="module")
def real_kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/data/real-docs and the two PDFs, ingested by the CLI; the folder it ran in."""
    root = tmp_path_factory.mktemp("real-docs")
    docs = root / "docs"
    shutil.copytree(REAL_DOCS, docs)
    (docs / "ledger-deploy.pdf").write_bytes(
        text_pdf([page_content(LEDGER_PDF_LINES)], title="Deploying the Ledger Service")
    )
    (docs / "nightly-report.pdf").write_bytes(text_pdf([page_content(RUNBOOK_PDF_LINES)]))
    (docs / "cleanup-builds.pdf").write_bytes(text_pdf([page_content(CLEANUP_PDF_LINES)]))
    run = selfcrag("ingest", "docs", "--data-dir", "index", cwd=root)
    assert run.returncode == 0, run.stderr
    return root


def search(root: Path, query: str, source: str) -> list[dict]:
    """The passages ``selfcrag search --json`` finds in the file named ``source``."""
    run = selfcrag("search", query, "--json", "-k", "10", "--data-dir", "index", cwd=root)
    assert run.returncode == 0, run.stderr
    return [p for p in json.loads(run.stdout)["passages"] if Path(p["source"]).name == source]


def ask(root: Path, question: str) -> dict:
    """``selfcrag ask --json``; its exit status is not checked (how an answer is labelled is another matter)."""
    run = selfcrag("ask", question, "--json", "--data-dir", "index", cwd=root)
    assert run.returncode in (0, 3, 4), run.stderr
    return json.loads(run.stdout)


def quoted(answer: dict) -> str:
    """Everything the answer shows from the documents: its text and each citation's or closest source's quote."""
    sources = [*answer["citations"], *answer.get("closest_sources", [])]
    return "\n".join([answer["answer"], *(s.get("quote") or "" for s in sources)])


def answer_text(answer: dict) -> str:
    """The answer without its [n] markers."""
    return re.sub(r"\s*\[\d+\]", "", answer["answer"]).strip()


# --- titles and sections (selfcrag search --json) -----------------------------------------------------------


def test_a_man_page_is_titled_by_its_name_section_and_sectioned_by_its_headings(real_kb: Path) -> None:
    [passage, *_] = search(real_kb, "userdel --remove 用户主目录", "userdel.8.txt")
    assert passage["title"] == "userdel - 删除用户帐户和相关文件"
    assert passage["section"][-1] == "选项"


def test_a_plain_text_file_without_a_title_line_is_titled_by_its_file_name(real_kb: Path) -> None:
    [passage, *_] = search(real_kb, "backup job nightly copies", "backup-notes.txt")
    assert passage["title"] == "backup-notes"


def test_a_pdf_is_titled_by_its_metadata_and_its_code_comments_are_no_headings(real_kb: Path) -> None:
    passages = search(real_kb, "docker build the image health check", "ledger-deploy.pdf")
    assert passages and {p["title"] for p in passages} == {"Deploying the Ledger Service"}
    assert all(p["section"] == ["Deploying the Ledger Service"] for p in passages), passages


def test_a_pdf_without_metadata_is_titled_by_its_first_line_not_by_a_comment(real_kb: Path) -> None:
    passages = search(real_kb, "report job cron every night", "nightly-report.pdf")
    assert passages and {p["title"] for p in passages} == {"Nightly Report Runbook"}
    assert not any("every night at 01:30" in " ".join(p["section"]) for p in passages)


@pytest.mark.parametrize(
    ("query", "source", "title"),
    [
        ("reset password sign-in page", "faq.md", "Frequently asked questions"),  # its "# " heading
        ("Corvid 2.0 Python 3.10", "release-notes.html", "Corvid 2.0 release notes"),  # <h1>, not <title>
        ("Corvid PyPI virtual environment", "install.rst", "Installing Corvid"),  # not "# create the environment"
        ("wget tries retry", "wget-manual.html", "Download Options (GNU Wget 1.21.4 Manual)"),  # <title>: no <h1>
    ],
)
def test_a_document_is_titled_by_its_own_title(real_kb: Path, query: str, source: str, title: str) -> None:
    passages = search(real_kb, query, source)
    assert passages and {p["title"] for p in passages} == {title}


def test_a_pdf_opening_with_a_code_comment_is_titled_by_its_file_name(real_kb: Path) -> None:
    passages = search(real_kb, "cleanup script build disk Saturday", "cleanup-builds.pdf")
    assert passages and {p["title"] for p in passages} == {"cleanup-builds"}
    assert all(p["section"] == [] for p in passages), passages


def test_a_linked_heading_gives_its_words_as_the_section(real_kb: Path) -> None:
    [passage, *_] = search(real_kb, "tidyfeed needs Python pipx install", "README.md")
    assert passage["title"] == "tidyfeed"  # its <h1 align="center"> banner
    assert passage["section"] == ["tidyfeed", "Installation"]


def test_a_logo_over_an_underline_titles_the_document_by_its_alt_text(real_kb: Path) -> None:
    [passage, *_] = search(real_kb, "inkwell users mailing list questions answered", "inkwell-README.md")
    assert passage["title"] == "inkwell"  # "![inkwell](…/logo.png)" over "===": a heading of only a logo
    assert passage["section"] == ["inkwell", "Community"]


def test_a_link_reference_definition_is_not_read(real_kb: Path) -> None:
    passages = search(real_kb, "ci.inkwell.example.org continuous integration test suite", "inkwell-README.md")
    assert not any("]: https://" in p["text"] for p in passages), passages  # rendered, it shows nothing


def test_an_underlined_question_is_a_heading_of_its_section(real_kb: Path) -> None:
    [passage, *_] = search(real_kb, "deleted files trash 30 days", "faq.md")
    assert passage["section"][-1] == "How long are deleted files kept?"


def test_inline_html_in_markdown_is_read_as_its_words(real_kb: Path) -> None:
    [passage, *_] = search(real_kb, "deleted files trash 30 days", "faq.md")
    assert "stay in the Trash for 30 days" in passage["text"] and "<abbr" not in passage["text"]


# --- what an answer quotes (selfcrag ask --json) ------------------------------------------------------------


def test_a_table_of_contents_entry_is_not_quoted(real_kb: Path) -> None:
    answer = ask(real_kb, "How do I reset my password?")
    assert "Open the sign-in page" in answer_text(answer)
    assert "](#" not in quoted(answer)


@pytest.mark.parametrize(
    ("question", "question_line", "answering"),
    [
        ("Can two people share one account?", "**Can two people share one account?**", "each person needs a seat"),
        ("Which browsers are supported?", "Q: Which browsers are supported?", "two latest versions of Firefox"),
    ],
)
def test_a_faq_question_is_not_quoted_as_its_own_answer(
    real_kb: Path, question: str, question_line: str, answering: str
) -> None:
    answer = ask(real_kb, question)
    assert answer_text(answer) != question_line
    assert answering in answer_text(answer)


def test_inline_html_is_not_quoted(real_kb: Path) -> None:
    answer = ask(real_kb, "How long are deleted files kept?")
    assert "Deleted files stay in the Trash for 30 days" in answer_text(answer)
    assert "<abbr" not in quoted(answer)


@pytest.mark.parametrize(
    "question",
    [
        "Which options control logging and input files in wget?",
        "Where are the wget manuals?",
        "Where are the Corvid release notes?",
    ],
)
def test_a_navigation_or_breadcrumb_line_is_not_quoted(real_kb: Path, question: str) -> None:
    answer = ask(real_kb, question)
    assert "Previous:" not in quoted(answer)  # the page's navigation panel is no text of it
    assert "Home > Manuals" not in answer_text(answer)  # the breadcrumb is text, but never an answer
    assert "Docs » Corvid" not in quoted(answer)


def test_a_row_of_badges_is_not_quoted(real_kb: Path) -> None:
    answer = ask(real_kb, "What is the build status of inkwell's development branch?")
    assert "[![" not in quoted(answer)  # "[![Build Status][ciDevBadge]][ciDevLink]": pictures, not words


def test_the_sentence_that_answers_is_quoted_not_a_readmes_opening_line(real_kb: Path) -> None:
    answer = ask(real_kb, "How often does tidyfeed update my feeds?")
    assert "Feeds are refreshed every 15 minutes" in answer_text(answer)


def test_a_man_page_option_is_answered_from_its_description(real_kb: Path) -> None:
    answer = ask(real_kb, "userdel -r 选项有什么作用？")
    assert "用户主目录中的文件将随用户主目录和用户邮箱一起删除" in answer_text(answer)
