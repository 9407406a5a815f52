"""Tests for the structure-aware sentence splitter."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from selfcrag.split import SentenceSpan, document_title, split_sentences


def texts(text: str, max_chars: int = 400) -> list[str]:
    """Return the span texts, the easiest thing to assert on."""
    return [text[s.start : s.end] for s in split_sentences(text, max_chars)]


def check_invariants(text: str, spans: list[SentenceSpan], max_chars: int) -> None:
    """Assert the structural contract every result must satisfy."""
    covered = [0] * len(text)
    prev_end = 0
    for s in spans:
        assert 0 <= prev_end <= s.start < s.end <= len(text), "ordered, non-overlapping, non-empty"
        piece = text[s.start : s.end]
        assert piece == piece.strip(), "no surrounding whitespace"
        assert len(piece) <= max_chars
        assert s.kind in {"heading", "text", "list", "clause", "code", "table"}
        for i in range(s.start, s.end):
            covered[i] += 1
        prev_end = s.end
    for i, ch in enumerate(text):
        if not ch.isspace():
            assert covered[i] == 1, f"char {i} {ch!r} covered {covered[i]} times"


# --- sentences ---------------------------------------------------------------


def test_chinese_sentence_ends_split() -> None:
    text = "今天天气很好。我们去公园吧！你去吗？他说不去；我也不去……好吧。"
    assert texts(text) == ["今天天气很好。", "我们去公园吧！", "你去吗？", "他说不去；", "我也不去……", "好吧。"]


def test_chinese_closing_quote_stays_with_sentence() -> None:
    text = "他说：“我明天来。”然后他走了。她问（你确定吗？）没人回答。"
    assert texts(text) == ["他说：“我明天来。”", "然后他走了。", "她问（你确定吗？）", "没人回答。"]


def test_chinese_newline_inside_paragraph_is_not_a_break() -> None:
    text = "这是一个被硬换行\n截断的句子。第二句。"
    assert texts(text) == ["这是一个被硬换行\n截断的句子。", "第二句。"]


def test_chinese_halfwidth_question_mark_before_cjk_breaks() -> None:
    assert texts("真的吗?是的!好") == ["真的吗?", "是的!", "好"]


def test_english_sentences_split() -> None:
    text = 'It rained. Did it stop? Yes! She said "Go home." Then she left.'
    assert texts(text) == ["It rained.", "Did it stop?", "Yes!", 'She said "Go home."', "Then she left."]


def test_english_newline_inside_paragraph_is_not_a_break() -> None:
    text = "This sentence is wrapped\nover two lines. Next one."
    assert texts(text) == ["This sentence is wrapped\nover two lines.", "Next one."]


def test_tokenised_english_standalone_period_breaks() -> None:
    text = "Kenya 's economy grew . The coat is known as a `` double coat '' , with silver tips ."
    assert texts(text) == ["Kenya 's economy grew .", "The coat is known as a `` double coat '' , with silver tips ."]


def test_tokenised_english_closing_quote_stays_with_sentence() -> None:
    text = "She told him , `` Do n't come back . '' He left ."
    assert texts(text) == ["She told him , `` Do n't come back . ''", "He left ."]


def test_mixed_chinese_and_english() -> None:
    text = "我们使用 Python 3.11 开发。It is fast. 你觉得呢？OK."
    assert texts(text) == ["我们使用 Python 3.11 开发。", "It is fast.", "你觉得呢？", "OK."]


def test_paragraph_break_ends_sentence_without_punctuation() -> None:
    assert texts("第一段没有句号\n\n第二段 also none") == ["第一段没有句号", "第二段 also none"]


# --- not a sentence end --------------------------------------------------------


@pytest.mark.parametrize(
    "sentence",
    [
        "Mr. Smith met Dr. Jones and Prof. Lee at St. Mary's.",
        "Mrs. Brown works for Acme Inc. and Foo Ltd. in the U.S. today.",
        "Bring fruit, e.g. apples, i.e. red ones, etc. and more.",
        "J. K. Rowling wrote it, said Robert E. Lee Jr. at 9 a.m. sharp.",
        "See Fig. 3 and No. 7 versus vs. other results.",
    ],
)
def test_abbreviations_do_not_split(sentence: str) -> None:
    assert texts(sentence + " Next sentence.") == [sentence, "Next sentence."]


def test_ordinary_words_ending_like_abbreviations_split() -> None:
    text = "The answer was no. He came 1st. Then he left."
    assert texts(text) == ["The answer was no.", "He came 1st.", "Then he left."]


def test_decimals_and_versions_do_not_split() -> None:
    text = "Pi is 3.14 and the release is v1.2.3 or 2.0.1 now. Done."
    assert texts(text) == ["Pi is 3.14 and the release is v1.2.3 or 2.0.1 now.", "Done."]


def test_urls_and_emails_do_not_split() -> None:
    text = "Visit https://example.com/a.b?c=d!e or mail me@mail.example.org today. Thanks."
    assert texts(text) == ["Visit https://example.com/a.b?c=d!e or mail me@mail.example.org today.", "Thanks."]


def test_url_at_sentence_end_splits_after_it() -> None:
    assert texts("Go to www.example.com. Then log in.") == ["Go to www.example.com.", "Then log in."]


def test_ellipsis_before_lowercase_does_not_split() -> None:
    assert texts("Wait... what was that? Well... it is fine.") == ["Wait... what was that?", "Well... it is fine."]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "目前负责为杰尼斯旗下组合（包括TOKIO、岚及Hey! Say! JUMP）出版影音产品。2006年成立新品牌。",
            ["目前负责为杰尼斯旗下组合（包括TOKIO、岚及Hey! Say! JUMP）出版影音产品。", "2006年成立新品牌。"],
        ),
        (
            "The band (formerly Hey! Say! JUMP) released an album. It sold well.",
            ["The band (formerly Hey! Say! JUMP) released an album.", "It sold well."],
        ),
        (
            "plus the National Amnesty Commission ( Pres . Proclamation No . 347 ) . Next one .",
            ["plus the National Amnesty Commission ( Pres . Proclamation No . 347 ) .", "Next one ."],
        ),
    ],
)
def test_a_stop_inside_brackets_closed_on_its_line_ends_no_sentence(text: str, expected: list[str]) -> None:
    # A name or a reference in brackets was cut at its "!" or ".": "…Hey! Say!" / "JUMP）出版…".
    assert texts(text) == expected


def test_brackets_left_open_or_closed_on_another_line_hold_nothing_together() -> None:
    assert texts("Smile :-( That was bad. Next one.") == ["Smile :-( That was bad.", "Next one."]
    assert texts("Options (see below. They vary.\nMore here.) End.")[0] == "Options (see below."


def test_inline_enumerator_does_not_split() -> None:
    assert texts("Steps: 1. Open it. 2. Close it.") == ["Steps: 1. Open it.", "2. Close it."]


# --- structure -----------------------------------------------------------------


def test_heading_is_its_own_span() -> None:
    spans = split_sentences("# 标题\n正文第一句。正文第二句。")
    assert [(s.kind, s.section) for s in spans] == [
        ("heading", ("标题",)),
        ("text", ("标题",)),
        ("text", ("标题",)),
    ]


def test_a_plain_text_line_of_capitals_alone_is_a_heading() -> None:
    text = (
        "HARBORVIEW OFFICE HANDBOOK\n\nWelcome to the office.\n\nOPENING HOURS\n\nThe building opens at 07:00.\n\n"
        "ACCESS BADGES\n\nWear your badge."
    )
    spans = [(s.kind, s.section, text[s.start : s.end]) for s in split_sentences(text)]
    title, hours, badges = ("HARBORVIEW OFFICE HANDBOOK",), "OPENING HOURS", "ACCESS BADGES"
    assert spans == [
        ("heading", title, "HARBORVIEW OFFICE HANDBOOK"),
        ("text", title, "Welcome to the office."),
        ("heading", (*title, hours), hours),
        ("text", (*title, hours), "The building opens at 07:00."),
        ("heading", (*title, badges), badges),
        ("text", (*title, badges), "Wear your badge."),
    ]


def test_a_numbered_line_alone_is_a_plain_text_heading() -> None:
    text = "星火音箱手册\n\n1. 产品简介\n\n一款智能音箱。\n\n6. 常见问题\n\n6.1 无法联网怎么办？\n请确认网络。"
    spans = [(s.kind, s.section, text[s.start : s.end]) for s in split_sentences(text)]
    assert ("heading", ("1. 产品简介",), "1. 产品简介") in spans
    assert ("text", ("1. 产品简介",), "一款智能音箱。") in spans
    assert ("heading", ("6. 常见问题",), "6. 常见问题") in spans
    assert all(
        section == ("6. 常见问题",)
        for kind, section, _ in spans[spans.index(("heading", ("6. 常见问题",), "6. 常见问题")) :]
    )


def test_a_numbered_title_directly_over_its_text_is_a_heading() -> None:
    text = (
        "2. 开箱与联网\n\n2.1 包装清单\n音箱主机一台、充电线一根。\n\n2.2 首次联网\n① 下载星火 App。\n② 长按 Wi-Fi 键。"
    )
    spans = [(s.kind, s.section, text[s.start : s.end]) for s in split_sentences(text)]
    box, first_use = ("2. 开箱与联网", "2.1 包装清单"), ("2. 开箱与联网", "2.2 首次联网")
    assert spans[1:] == [
        ("heading", box, "2.1 包装清单"),
        ("text", box, "音箱主机一台、充电线一根。"),
        ("heading", first_use, "2.2 首次联网"),
        ("clause", first_use, "① 下载星火 App。"),
        ("clause", first_use, "② 长按 Wi-Fi 键。"),
    ]


@pytest.mark.parametrize(
    "text",
    [
        "Intro.\n\n1. The kettle must stand on a\nflat surface.",  # a hard-wrapped sentence, lower case next
        "Intro.\n\n1. Place the kettle on its base\n   before you switch it on.",  # an indented continuation
        "Intro.\n\n1. Install the package\n2. Run the command",  # a tight list
        "前言。\n\n4.1 音箱内置锂电池，满电播放约 12 小时\n待机约 15 天。",  # a sentence, not a title
        "Intro.\n\n1. Place the kettle on its base and make sure that\nThe Cord Is Dry.",  # longer than a title
    ],
)
def test_numbered_lines_over_text_that_head_nothing_stay_text(text: str) -> None:
    assert all(s.kind != "heading" for s in split_sentences(text))


@pytest.mark.parametrize(
    "text",
    [
        "Intro.\n\nNOTE: DO NOT IMMERSE THE KETTLE.\n\nMore.",  # a sentence in capitals
        "Intro.\n\nWARNING LABELS\nare printed on the base.",  # the first line of a paragraph
        "Intro.\n\n    MAKEFILE TARGETS\n\nMore.",  # indented code
        "前言。\n\n退款政策\n\n七天内。",  # no letter case
        "Steps\n\n1. Install the package\n\n2. Run the command\n\n3. Done\n\nThen it works.",  # a loose list
        "退出值\n\n0 成功\n\n1 无法更新密码文件\n\n2 无效的命令语法",  # a man page's exit values
        "Intro.\n\n1. Open the lid.\n\nMore.",  # a numbered sentence
        "Intro.\n\n① 打开盖子\n\nMore.",  # a list marker
    ],
)
def test_lines_alone_that_head_nothing_stay_text(text: str) -> None:
    assert all(s.kind != "heading" for s in split_sentences(text))


def test_section_path_follows_heading_levels() -> None:
    text = "前言。\n# 退款政策\n## 7.1 时限 ##\n七天内。\n### 细则\n细节。\n## 7.2 方式\n原路返回。\n# 其他\n无。"
    got = [(text[s.start : s.end], s.section) for s in split_sentences(text)]
    assert got == [
        ("前言。", ()),
        ("# 退款政策", ("退款政策",)),
        ("## 7.1 时限 ##", ("退款政策", "7.1 时限")),
        ("七天内。", ("退款政策", "7.1 时限")),
        ("### 细则", ("退款政策", "7.1 时限", "细则")),
        ("细节。", ("退款政策", "7.1 时限", "细则")),
        ("## 7.2 方式", ("退款政策", "7.2 方式")),
        ("原路返回。", ("退款政策", "7.2 方式")),
        ("# 其他", ("其他",)),
        ("无。", ("其他",)),
    ]


def test_section_index_increments_at_each_heading() -> None:
    text = "intro.\n\n# A\nx.\n## B\ny.\n# C\nz."
    assert [s.section_index for s in split_sentences(text)] == [0, 1, 1, 2, 2, 3, 3]


def test_hashtag_without_space_is_not_a_heading() -> None:
    spans = split_sentences("#hashtag is text.")
    assert [(s.kind, s.section_index) for s in spans] == [("text", 0)]


@pytest.mark.parametrize(
    "marker", ["7.1", "7.2.3", "1.", "1)", "(1)", "a)", "(a)", "①", "⑳", "第三条", "一、", "（一）"]
)
def test_numbered_clause_starts_new_unit(marker: str) -> None:
    text = f"前文没有句号\n{marker} 条款内容"
    spans = split_sentences(text)
    assert [(text[s.start : s.end], s.kind) for s in spans] == [
        ("前文没有句号", "text"),
        (f"{marker} 条款内容", "clause"),
    ]


def test_clause_sequence_and_multi_sentence_clause() -> None:
    text = "7.1 用户应在7天内申请。逾期不受理。\n7.2 退款原路返回\n7.2.3 特殊情况\na) 商品损坏\n① 第一项"
    assert texts(text) == [
        "7.1 用户应在7天内申请。",
        "逾期不受理。",
        "7.2 退款原路返回",
        "7.2.3 特殊情况",
        "a) 商品损坏",
        "① 第一项",
    ]
    assert {s.kind for s in split_sentences(text)} == {"clause"}


def test_list_items_start_new_units() -> None:
    text = "Shopping list\n- milk\n* eggs. Fresh ones.\n+ bread"
    spans = split_sentences(text)
    assert [(text[s.start : s.end], s.kind) for s in spans] == [
        ("Shopping list", "text"),
        ("- milk", "list"),
        ("* eggs.", "list"),
        ("Fresh ones.", "list"),
        ("+ bread", "list"),
    ]


def test_code_fence_kept_whole() -> None:
    code = "```python\nx = 1. \n# not a heading\n\nprint('a. B? c!')\n```"
    text = f"Before.\n{code}\nAfter."
    spans = split_sentences(text)
    assert [(text[s.start : s.end], s.kind) for s in spans] == [
        ("Before.", "text"),
        (code, "code"),
        ("After.", "text"),
    ]
    assert spans[1].section_index == 0


def test_unclosed_code_fence_runs_to_end() -> None:
    text = "~~~\na. B.\n\nC."
    assert [(t, s.kind) for t, s in zip(texts(text), split_sentences(text), strict=True)] == [(text, "code")]


def test_long_code_block_cut_at_line_boundaries() -> None:
    lines = [f"line_{i} = {i}" for i in range(40)]
    text = "```\n" + "\n".join(lines) + "\n```"
    spans = split_sentences(text, max_chars=100)
    assert len(spans) > 1
    assert all(s.kind == "code" and s.end - s.start <= 100 for s in spans)
    for s in spans:  # every piece is made of whole lines
        assert s.start == 0 or text[s.start - 1] == "\n"
        assert s.end == len(text) or text[s.end] == "\n"


def test_table_kept_whole() -> None:
    table = "| 项目 | 金额 |\n|---|---|\n| 退款。 | 100. 元 |"
    text = f"说明。\n{table}\n结束。"
    spans = split_sentences(text)
    assert [(text[s.start : s.end], s.kind) for s in spans] == [
        ("说明。", "text"),
        (table, "table"),
        ("结束。", "text"),
    ]


def test_long_table_cut_at_row_boundaries() -> None:
    rows = [f"| row {i} | value {i} |" for i in range(30)]
    text = "\n".join(rows)
    spans = split_sentences(text, max_chars=80)
    assert len(spans) > 1
    assert all(s.kind == "table" and s.end - s.start <= 80 for s in spans)
    assert all(text[s.start : s.end].endswith("|") for s in spans)


# --- over-long sentences -----------------------------------------------------


def test_overlong_sentence_cut_at_last_comma() -> None:
    text = "甲" * 30 + "，" + "乙" * 30 + "，" + "丙" * 30 + "。"
    assert texts(text, max_chars=70) == ["甲" * 30 + "，" + "乙" * 30 + "，", "丙" * 30 + "。"]


@pytest.mark.parametrize("number", ["$4,287.50", "1,000,000", "99,999", "10:30"])
@pytest.mark.parametrize("max_chars", range(30, 46))
def test_overlong_sentence_is_never_cut_inside_a_number(number: str, max_chars: int) -> None:
    # The window's end sweeps across the number, including just past its comma.
    text = f"Gross receipts for the year {number} were booked, and the rest came later in the year."
    pieces = texts(text, max_chars=max_chars)
    assert any(number in p for p in pieces), pieces
    check_invariants(text, split_sentences(text, max_chars), max_chars)


def test_overlong_sentence_cut_at_a_comma_after_a_number() -> None:
    text = "Receipts rose sharply in 1999, and the rest of the decade went on in the same way."
    assert texts(text, max_chars=60)[0] == "Receipts rose sharply in 1999,"


def test_overlong_english_sentence_cut_at_whitespace() -> None:
    text = " ".join(["word"] * 30) + "."
    pieces = texts(text, max_chars=50)
    assert all(len(p) <= 50 for p in pieces)
    assert all(p.startswith("word") for p in pieces)  # never inside a word
    assert " ".join(pieces) == text


def test_overlong_text_without_breaks_is_hard_cut() -> None:
    assert texts("字" * 25, max_chars=10) == ["字" * 10, "字" * 10, "字" * 5]


def test_overlong_heading_is_cut() -> None:
    spans = split_sentences("# " + "长" * 50, max_chars=20)
    assert all(s.kind == "heading" and s.end - s.start <= 20 for s in spans)
    assert spans[0].section == ("长" * 50,)


# --- edge cases --------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "   ", "\n\n\t\u3000\n"])
def test_empty_or_blank_text_gives_no_spans(text: str) -> None:
    assert split_sentences(text) == []


def test_invalid_max_chars_rejected() -> None:
    with pytest.raises(ValueError):
        split_sentences("abc", max_chars=0)


def test_offsets_index_original_text() -> None:
    text = "  \n# T\n\n  Hello there.   World!  \n"
    for s in split_sentences(text):
        assert text[s.start : s.end] in {"# T", "Hello there.", "World!"}


def test_large_chinese_text_splits_every_sentence() -> None:
    # Speed is measured by `selfcrag bench`, not asserted here (shared machines are noisy).
    para = "据报道，该市今年第一季度的生产总值同比增长了6.5%，高于预期；专家认为这一趋势将持续。"
    text = "\n\n".join(["# 标题"] + [para * 3] * 6000)  # ~1.6 million characters
    spans = split_sentences(text)
    assert len(spans) == 1 + 6000 * 6


# --- document_title ----------------------------------------------------------


def test_document_title_uses_first_h1() -> None:
    assert document_title("intro line\n## Sub\n# 退款政策 #\ntext", "fb") == "退款政策"


def test_document_title_ignores_h1_inside_code() -> None:
    assert document_title("```\n# comment\n```\n# Real", "fb") == "Real"


def test_document_title_falls_back_to_a_short_first_line_standing_alone() -> None:
    assert document_title("\n\n  Short first line  \n\nbody", "fb") == "Short first line"


def test_a_first_sentence_is_no_title() -> None:
    assert document_title("\n\n  Short first line  \nbody", "fb") == "fb"  # the first line of a paragraph
    assert document_title("The backup job runs every night at 02:00.\n\nIt copies the database.", "fb") == "fb"


def test_a_comment_in_indented_code_is_no_title() -> None:
    assert document_title("    # install the tools\n    make install\n\nRun it.", "fb") == "fb"


def test_an_underlined_title_is_a_title_and_links_are_left_out() -> None:
    assert document_title("Debian Reference\n================\n\nText.", "fb") == "Debian Reference"
    assert document_title("## [Install](https://example.org/install)\n\nText.", "fb") == "Install"


def test_an_underlined_line_is_a_heading_with_its_section() -> None:
    text = "Files\n-----\n\nDeleted files stay for 30 days.\n"
    heading, sentence = split_sentences(text)
    assert (heading.kind, heading.section) == ("heading", ("Files",))
    assert (sentence.kind, sentence.section) == ("text", ("Files",))


def test_a_link_in_a_heading_is_not_in_the_section_path() -> None:
    [_, sentence] = split_sentences("## [Install](http://example.org/install)\n\nRun pipx install x.")
    assert sentence.section == ("Install",)


def test_document_title_falls_back_when_first_line_long() -> None:
    assert document_title("x" * 81 + "\nbody", "fb") == "fb"
    assert document_title("", "fb") == "fb"


# --- property: coverage ------------------------------------------------------

_ALPHABET = st.sampled_from(
    list("abcXYZ019 .!?;:,，。！？；：、…\"'”“’‘」『）)(（[]|#`~-*+\n\t\r\u3000\xa0中文第条一①")
    + ["```", "~~~", "# ", "## ", "\n\n", "| a |", "7.1 ", "e.g. ", "Mr. ", "3.14", "http://x.y/z. ", " . ", " '' "]
)


@settings(max_examples=400, deadline=None)
@given(
    text=st.one_of(st.lists(_ALPHABET, max_size=80).map("".join), st.text(max_size=200)),
    max_chars=st.integers(min_value=1, max_value=60),
)
def test_spans_cover_every_non_whitespace_char_exactly_once(text: str, max_chars: int) -> None:
    check_invariants(text, split_sentences(text, max_chars), max_chars)


@settings(max_examples=100, deadline=None)
@given(text=st.text(max_size=300))
def test_document_title_never_raises(text: str) -> None:
    assert isinstance(document_title(text, "fb"), str)
