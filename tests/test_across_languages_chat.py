"""With a chat model, a question crosses languages too: the rewrite writes it in both, the answer quotes the source.

The chat model is scripted (what a model would answer), behind a real loopback server reached by the real
ChatOpenAI; the index is the mixed folder of ``test_across_languages`` (an English manual, a Chinese notice),
built by the real ingest.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from scripted_openai import Reply, Serve, WorkflowScript, step_of

from selfcrag.graph.api import ask
from selfcrag.graph.context import Context
from selfcrag.ingest.run import ingest

MIXED = Path(__file__).parent / "data" / "mixed-languages"
NOTHING_RELEVANT = Reply(json.dumps({"grades": [{"passage": n, "relevance": "irrelevant"} for n in range(1, 9)]}))


def index_of(folder: Path, names: list[str]) -> Path:
    """An index of some of the mixed folder's documents."""
    (folder / "docs").mkdir()
    for name in names:
        shutil.copy(MIXED / name, folder / "docs" / name)
    data_dir = folder / "index"
    ingest([folder / "docs"], Context(data_dir=str(data_dir)).settings())
    return data_dir


def rewrite_prompts(requests: list[dict]) -> list[str]:
    """The system prompts of the rewrite requests a server received."""
    return [body["messages"][0]["content"] for body in requests if step_of(body) == "RewrittenQuery"]


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return index_of(tmp_path_factory.mktemp("mixed"), ["kettle-manual.md", "停水通知.md"])


def test_the_rewrite_writes_the_query_in_both_languages_the_index_holds(
    serve: Serve, endpoint: Callable[[str], None], mixed: Path
) -> None:
    # Nothing graded relevant the first time: the question is rewritten, once.
    script = WorkflowScript("水壶每四周除垢一次。[1]", PassageGrades=[NOTHING_RELEVANT, *[Reply(status=400)]])
    server = serve(script)
    endpoint(server.url)
    ask("热水壶多久需要除垢一次？", data_dir=mixed, max_requery=1)
    prompts = rewrite_prompts(server.requests)
    assert prompts and "请用两种语言书写查询" in prompts[0]


def test_over_one_language_the_rewrite_keeps_the_questions(
    serve: Serve, endpoint: Callable[[str], None], tmp_path: Path
) -> None:
    chinese_only = index_of(tmp_path, ["停水通知.md"])
    server = serve(WorkflowScript("3 月 18 日停水。[1]", PassageGrades=[NOTHING_RELEVANT, Reply(status=400)]))
    endpoint(server.url)
    ask("什么时候停水？", data_dir=chinese_only, max_requery=1)
    prompts = rewrite_prompts(server.requests)
    assert prompts and "用中文书写" in prompts[0] and "两种语言" not in prompts[0]


def test_an_english_answer_quoting_the_chinese_notice_is_the_answer(
    serve: Serve, endpoint: Callable[[str], None], mixed: Path
) -> None:
    # Most of its letters are the quote's Chinese: an answer in the question's language, quoting its source.
    quoted = "The notice says: “因市政供水管道维修，本小区将于 3 月 18 日上午 8 点至下午 6 点临时停水。” [1]"
    server = serve(WorkflowScript(quoted))
    endpoint(server.url)
    result = ask("When will the water be cut off?", data_dir=mixed)
    generate = next(step for step in result.trace if step["step"] == "generate")
    assert generate["method"] == "chat" and "fallback" not in generate, generate
    assert result.status == "answered" and "上午 8 点至下午 6 点" in result.answer
