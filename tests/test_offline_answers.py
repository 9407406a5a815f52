"""Offline answers are chosen for the question: the list, the table row, the sentence that answers.

Each case is a failure a user met (issue 13): a list question answered with an
install line, a table row's key answered with the table's lead-in, "how soon"
answered with the escalation deadline, a table-of-contents line quoted as an
answer. The real CLI runs on a knowledge base this module writes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cli_runner import selfcrag

DOCUMENTS = {
    'rank_bm25.md': '# Rank-BM25: a two line search engine\n\nA collection of algorithms for querying a set of documents and returning the ones most relevant to the query.\n\n## Installation\n\nThe easiest way to install this package is through pip:\n\npip install rank_bm25\n\n## Algorithms\n\nSo far the following algorithms have been implemented:\n\n- Okapi BM25\n- BM25L\n- BM25+\n- BM25-Adpt\n- BM25T\n\nThese algorithms were taken from the paper by Trotman et al.\n\n## Usage\n\nInitialize the class with the tokenized corpus, then score a tokenized query with get_scores.\n',
    'man-sections.md': '# man 手册页\n\nman 是查看系统手册页的命令，手册按章节组织。\n\n## 章节\n\n下表列出手册的各个章节及其内容：\n\n| 章节 | 内容 |\n|---|---|\n| 1 | 可执行程序或 shell 命令 |\n| 2 | 系统调用（内核提供的函数） |\n| 3 | 库调用（程序库中的函数） |\n| 5 | 文件格式和规范，如 /etc/passwd |\n| 7 | 杂项，包括宏包和规范，如 man(7) |\n| 8 | 系统管理命令（通常只针对 root 用户） |\n\n## 用法\n\n输入 man 加上章节号和名称即可查看指定章节的手册页，例如 man 8 mount。\n',
    'security.md': "# Security policy\n\n## Reporting a vulnerability\n\nPlease report security vulnerabilities by email to security@example.org rather than opening a public issue.\n\nWe will acknowledge receipt of your vulnerability report within 3 business days.\n\nIf you do not receive a reply within 14 days, escalate the report to the project's steering committee.\n\n## Supported versions\n\nOnly the latest minor release receives security fixes.\n",
    'libtasn1.txt': 'Libtasn1 Reference Manual\n\nTable of Contents\n\n1 Introduction . . . . . . . . . . . . . . . . . . . . . 1\n2 ASN.1 structure handling . . . . . . . . . . . . . . . 3\n3 Library Functions . . . . . . . . . . . . . . . . . . 22\nasn1_write_value . . . . . . . . . . . . . . . . . . . 22\nasn1_read_value . . . . . . . . . . . . . . . . . . . . 24\n\n1 Introduction\n\nLibtasn1 is a library for Abstract Syntax Notation One (ASN.1) and Distinguished Encoding Rules (DER) manipulation.\n\n3 Library Functions\n\nasn1_write_value sets the value of one element inside a structure; to delete an element, pass a NULL value.\n\nasn1_read_value returns the value of one element inside a structure.\n',
}


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The four documents, ingested through the CLI."""
    root = tmp_path_factory.mktemp("answers")
    (root / "kb").mkdir()
    for name, text in DOCUMENTS.items():
        (root / "kb" / name).write_text(text, encoding="utf-8")
    run = selfcrag("ingest", root / "kb", "--data-dir", root / "index", cwd=root)
    assert run.returncode == 0, run.stderr
    return root / "index"


def answer(question: str, data_dir: Path) -> str:
    """The answer lines of ``selfcrag ask`` (before the route line)."""
    run = selfcrag("ask", question, "--data-dir", data_dir, cwd=data_dir.parent)
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    return "\n".join(lines[: next(i for i, line in enumerate(lines) if line.startswith("route: "))])


def test_a_list_question_is_answered_with_the_whole_list(data_dir: Path) -> None:
    text = answer("Which BM25 variants does rank_bm25 implement?", data_dir)
    assert all(name in text for name in ("Okapi BM25", "BM25L", "BM25+", "BM25-Adpt", "BM25T")), text
    assert "pip install" not in text


def test_a_table_row_answers_the_key_the_question_names(data_dir: Path) -> None:
    text = answer("man 手册的第 8 章节包含什么内容？", data_dir)
    assert "系统管理命令" in text, text
    assert "杂项" not in text and "下表列出" not in text


def test_how_soon_is_answered_by_the_sentence_about_the_asked_action(data_dir: Path) -> None:
    text = answer("How soon will you acknowledge my report?", data_dir)
    assert "within 3 business days" in text, text
    assert "14 days" not in text


def test_a_table_of_contents_line_is_never_an_answer(data_dir: Path) -> None:
    text = answer("What does asn1_write_value do?", data_dir)
    assert "sets the value of one element" in text, text
    assert ". . ." not in text
