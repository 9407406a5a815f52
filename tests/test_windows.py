from pathlib import Path

from selfcrag.files.loaders import LoadedFile
from selfcrag.index.ingest import index_document
from selfcrag.index.reader import MemoryIndex
from selfcrag.search.contexts import SentenceHit
from selfcrag.search.windows import expand_windows

DOC = """# 手册

## 1 安装

第一句。第二句。第三句。第四句。第五句。第六句。第七句。

## 2 使用

使用一。使用二。
"""


def index_of(*texts: str) -> MemoryIndex:
    docs = [index_document(LoadedFile(Path(f"/kb/doc{i}.md"), text), max_chars=400) for i, text in enumerate(texts)]
    return MemoryIndex(docs)


def hit(index: MemoryIndex, text: str, score: float) -> SentenceHit:
    doc_id, position = next(key for key, sentence in index.by_key.items() if sentence.text == text)
    return SentenceHit(doc_id, position, score)


def test_window_takes_neighbours_on_each_side():
    index = index_of(DOC)
    [ctx] = expand_windows(index, [hit(index, "第四句。", 1.0)], window=1, max_chars=500, top_k=5, section_ratio=2)
    assert ctx.text == "第三句。第四句。第五句。"


def test_window_never_crosses_a_section_boundary():
    index = index_of(DOC)
    [ctx] = expand_windows(index, [hit(index, "使用一。", 1.0)], window=3, max_chars=500, top_k=5, section_ratio=2)
    assert "第七句" not in ctx.text
    assert ctx.section == ("手册", "2 使用")


def test_window_never_crosses_a_document_boundary():
    index = index_of("甲一。甲二。", "乙一。乙二。")
    [ctx] = expand_windows(index, [hit(index, "乙一。", 1.0)], window=5, max_chars=500, top_k=5, section_ratio=2)
    assert ctx.text == "乙一。乙二。"


def test_overlapping_windows_merge_and_keep_the_best_score():
    index = index_of(DOC)
    hits = [hit(index, "第三句。", 0.9), hit(index, "第四句。", 0.5)]
    [ctx] = expand_windows(index, hits, window=1, max_chars=500, top_k=5, section_ratio=2)
    assert ctx.text == "第二句。第三句。第四句。第五句。"
    assert ctx.score == 0.9
    assert len(ctx.hits) == 2


def test_adjacent_windows_merge():
    index = index_of(DOC)
    hits = [hit(index, "第二句。", 0.9), hit(index, "第五句。", 0.8)]
    [ctx] = expand_windows(index, hits, window=1, max_chars=500, top_k=5, section_ratio=2)
    assert ctx.text == "第一句。第二句。第三句。第四句。第五句。第六句。"


def test_merged_context_respects_the_cap_without_overlap():
    index = index_of(DOC)
    hits = [hit(index, "第二句。", 0.9), hit(index, "第五句。", 0.8)]
    contexts = expand_windows(index, hits, window=1, max_chars=16, top_k=5, section_ratio=2)
    assert all(len(c.text) <= 16 for c in contexts)
    assert len(contexts) == 2
    assert contexts[0].last < contexts[1].first


def test_short_section_mostly_covered_is_returned_whole():
    index = index_of(DOC)
    [ctx] = expand_windows(index, [hit(index, "使用一。", 1.0)], window=1, max_chars=500, top_k=5, section_ratio=0.6)
    assert ctx.text == "## 2 使用\n\n使用一。使用二。"


def test_context_text_is_the_exact_document_slice():
    index = index_of(DOC)
    [ctx] = expand_windows(index, [hit(index, "第四句。", 1.0)], window=2, max_chars=500, top_k=5, section_ratio=2)
    assert DOC[ctx.start : ctx.end] == ctx.text


def test_stops_at_top_k_contexts_best_first():
    index = index_of(DOC, "甲一。甲二。", "乙一。乙二。")
    hits = [hit(index, "乙一。", 0.9), hit(index, "甲一。", 0.8), hit(index, "第四句。", 0.7)]
    contexts = expand_windows(index, hits, window=0, max_chars=500, top_k=2, section_ratio=2)
    assert [c.text for c in contexts] == ["乙一。", "甲一。"]
