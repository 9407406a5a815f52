"""A sentence's language is read from its ordinary words: names belong to no language (issue 46).

A Chinese sentence listing programming languages (``目前支援的语言有Python、Vala、C♯、Java…C与C++。``) has more
Latin letters than Chinese characters. Read as English, a Chinese question's cosine with it was placed on the
scale of a passage in the other language, which stands lower, so it scored as the closest sentence in the
document, and the answer two sentences before it was withheld for want of a margin (zh-dev's TRIAL_270_QUERY_0;
TRIAL_270_QUERY_2 and TRIAL_606_QUERY_0 showed such a sentence first). The CLI test failed on 35897e6.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_runner import selfcrag

from selfcrag.cli.ask import EXIT_STATUS
from selfcrag.index.tokenize import detect_language, text_language

# An IDE's page written as zh-dev's MonoDevelop article is: one paragraph, a list of languages in the middle.
IDE_PAGE = (
    "# 星河编辑器\n\n"
    "星河编辑器是个适用于Linux、macOS和Windows的开放原始码整合开发环境，主要用来开发嵌入式设备上的固件。"
    "星河编辑器整合了很多Eclipse与Visual Studio的特性，像是自动补全、版本控制还有界面设计工具。"
    "另外还整合了一个串口调试工具（叫做Probe）。"
    "目前支援的语言有Python、Rust、Go、Java、Kotlin、Lua、Zig、Visual Basic、C与C++。"
    "在2015年后期，杭州的几个开发者开始把一个旧的编辑器移植到Linux上，将原本以Qt为基础的代码改为使用GTK。"
    "由于是从旧编辑器分支出来，所以星河编辑器大致上的架构与它相同，不过时至今日，其实已经完全脱钩了。"
    "星河编辑器目前由一个开源基金会与社区维护。"
    "星河编辑器也可以在树莓派上执行，但并不是一开始就可以的，而是到2.2版之后才正式可以。"
    "星河编辑器的macOS版本里包含了编译器的安装程序，但因为签名问题没有包含串口调试工具。"
    "在FreeBSD上，同样是由社区提供支援。\n"
)


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("目前支援的语言有Python、Vala、C♯、Java、BOO、Nemerle、Visual Basic .NET、CIL、C与C++。", "zh"),
        ("“C”是“COMAC”的首字母，代表中国商飞。", "zh"),
        ("MonoDevelop主要是用来开发什么的？", "zh"),
        ("iPhone 12什么时候发布", "zh"),
        ("The kettle is descaled every four weeks.", "en"),
        # A few Chinese words in an English sentence do not make it Chinese.
        ("The notice says 停水 from nine to five on Monday and Tuesday.", "en"),
        # Names alone: English, as before; figures alone: no language.
        ("Python, Rust, Go", "en"),
        ("COMAC C919", "en"),
        ("12.5 | 30 | 2024-01-01", None),
    ],
)
def test_a_sentence_is_of_the_language_of_its_ordinary_words(text: str, language: str | None) -> None:
    assert text_language(text) == language
    assert detect_language(text) == (language or "en")


def test_a_chinese_sentence_full_of_names_does_not_withhold_the_answer_beside_it(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "星河编辑器.md").write_text(IDE_PAGE, encoding="utf-8")
    ingested = selfcrag("ingest", "docs", "--data-dir", "index", cwd=tmp_path)
    assert ingested.returncode == 0, ingested.stderr
    run = selfcrag("ask", "星河编辑器主要是用来开发什么的？", "--json", "--data-dir", "index", cwd=tmp_path)
    result = json.loads(run.stdout)
    # On 35897e6: not confirmed, the list of languages scored as the closest sentence and the answer withheld.
    assert (result["status"], run.returncode) == ("answered", EXIT_STATUS["answered"]), result["answer"]
    assert "主要用来开发嵌入式设备上的固件" in result["citations"][0]["quote"], result["answer"]
