from pathlib import Path

from selfcrag.files.loaders import LoadedFile, Place
from selfcrag.index.reader import MemoryIndex
from selfcrag.ingest.sentences import index_document
from selfcrag.search.windows import expand_windows
from selfcrag.spans import SentenceHit

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
    return SentenceHit(
        doc_id=doc_id,
        position=position,
        score=score,
        dense_rank=None,
        bm25_rank=None,
        dense_score=None,
        bm25_score=None,
    )


def test_window_takes_neighbours_on_each_side():
    index = index_of(DOC)
    [passage] = expand_windows(index, [hit(index, "第四句。", 1.0)], window=1, max_chars=500, top_k=5, section_ratio=2)
    assert passage["text"] == "第三句。第四句。第五句。"


def test_window_never_crosses_a_section_boundary():
    index = index_of(DOC)
    [passage] = expand_windows(index, [hit(index, "使用一。", 1.0)], window=3, max_chars=500, top_k=5, section_ratio=2)
    assert "第七句" not in passage["text"]
    assert passage["section"] == ["手册", "2 使用"]


def test_window_never_crosses_a_document_boundary():
    index = index_of("甲一。甲二。", "乙一。乙二。")
    [passage] = expand_windows(index, [hit(index, "乙一。", 1.0)], window=5, max_chars=500, top_k=5, section_ratio=2)
    assert passage["text"] == "乙一。乙二。"


def test_overlapping_windows_merge_and_keep_the_best_score():
    index = index_of(DOC)
    hits = [hit(index, "第三句。", 0.9), hit(index, "第四句。", 0.5)]
    [passage] = expand_windows(index, hits, window=1, max_chars=500, top_k=5, section_ratio=2)
    assert passage["text"] == "第二句。第三句。第四句。第五句。"
    assert passage["score"] == 0.9
    assert len(passage["hits"]) == 2


def test_adjacent_windows_merge():
    index = index_of(DOC)
    hits = [hit(index, "第二句。", 0.9), hit(index, "第五句。", 0.8)]
    [passage] = expand_windows(index, hits, window=1, max_chars=500, top_k=5, section_ratio=2)
    assert passage["text"] == "第一句。第二句。第三句。第四句。第五句。第六句。"


def test_merged_passage_respects_the_cap_without_overlap():
    index = index_of(DOC)
    hits = [hit(index, "第二句。", 0.9), hit(index, "第五句。", 0.8)]
    passages = expand_windows(index, hits, window=1, max_chars=16, top_k=5, section_ratio=2)
    assert all(len(p["text"]) <= 16 for p in passages)
    assert len(passages) == 2
    assert passages[0]["last"] < passages[1]["first"]


def test_short_section_mostly_covered_is_returned_whole():
    index = index_of(DOC)
    [passage] = expand_windows(
        index, [hit(index, "使用一。", 1.0)], window=1, max_chars=500, top_k=5, section_ratio=0.6
    )
    assert passage["text"] == "## 2 使用\n\n使用一。使用二。"


def test_passage_text_is_the_exact_document_slice():
    index = index_of(DOC)
    [passage] = expand_windows(index, [hit(index, "第四句。", 1.0)], window=2, max_chars=500, top_k=5, section_ratio=2)
    assert DOC[passage["start"] : passage["end"]] == passage["text"]


def test_stops_at_top_k_passages_best_first():
    index = index_of(DOC, "甲一。甲二。", "乙一。乙二。")
    hits = [hit(index, "乙一。", 0.9), hit(index, "甲一。", 0.8), hit(index, "第四句。", 0.7)]
    passages = expand_windows(index, hits, window=0, max_chars=500, top_k=2, section_ratio=2)
    assert [p["text"] for p in passages] == ["乙一。", "甲一。"]


def test_a_merged_passage_keeps_the_best_rank_and_score_of_each_retriever():
    index = index_of(DOC)
    dense_only = hit(index, "第三句。", 0.9) | {"dense_rank": 4, "dense_score": 0.5}
    both = hit(index, "第四句。", 0.5) | {"dense_rank": 2, "dense_score": 0.7, "bm25_rank": 9, "bm25_score": 3.0}
    [passage] = expand_windows(index, [dense_only, both], window=1, max_chars=500, top_k=5, section_ratio=2, query="q")
    assert (passage["dense_rank"], passage["dense_score"]) == (2, 0.7)
    assert (passage["bm25_rank"], passage["bm25_score"]) == (9, 3.0)
    assert passage["hits"] == [dense_only, both] and passage["query"] == "q"


SHEET = """# releases

## Releases

version 10, codename Buster

version 11, codename Bullseye

version 12, codename Bookworm
"""


def test_rows_that_a_passage_grown_to_their_sheet_shows_are_not_shown_again():
    rows = [Place(SHEET.index(f"version {v},"), "row", v - 8, sheet="Releases") for v in (10, 11, 12)]
    loaded = LoadedFile(Path("/kb/releases.xlsx"), SHEET, "xlsx", tuple(rows))
    index = MemoryIndex([index_document(loaded, max_chars=400)])
    # Two rows found alone, then the sheet's name, whose window grows to the sheet: rows 2 to 4.
    hits = [hit(index, "version 11, codename Bullseye", 0.9), hit(index, "version 12, codename Bookworm", 0.8)]
    hits.append(hit(index, "## Releases", 0.7))
    passages = expand_windows(index, hits, window=2, max_chars=500, top_k=5, section_ratio=0.5)
    assert [(p["text"].split("\n")[0], p["where"]) for p in passages] == [("## Releases", "sheet Releases, rows 2–4")]
    assert len(passages[0]["hits"]) == 3
