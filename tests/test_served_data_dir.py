"""A served run reads the operator's index only, however its data_dir is spelt (issue 44, item 3).

The operator's data dir is ``srv/.selfcrag``, and ``srv/link`` is a link to ``other/sub``. A run naming
``srv/link/../.selfcrag`` was compared as text (``link/..`` dropped: the operator's) but opened through the
link: ``other/.selfcrag``, another index, answered. Here the other folder holds a real index (a copy of the
sample's), and the run goes through the graph as the LangGraph API server runs it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from index_files import copy_index

from selfcrag.errors import NoIndexError, UserError
from selfcrag.graph.builder import graph

LOGS = "How long are application logs kept?"
REFUSED = (
    "this served graph does not let a run's context set data_dir: its operator can allow it with "
    "SELFCRAG_RUN_CONTEXT_ALLOWS=data_dir"
)


@pytest.fixture
def layout(kb_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A served graph whose operator's data dir ``srv/.selfcrag`` is empty; ``other/.selfcrag`` holds an index
    that answers LOGS, and ``srv/link`` leads to ``other/sub``. Returns the folder holding both."""
    (tmp_path / "srv" / ".selfcrag").mkdir(parents=True)
    (tmp_path / "other" / "sub").mkdir(parents=True)
    copy_index(kb_dir, tmp_path / "other" / ".selfcrag")
    (tmp_path / "srv" / "link").symlink_to(tmp_path / "other" / "sub")
    monkeypatch.setenv("SELFCRAG_SERVED", "1")
    monkeypatch.setenv("SELFCRAG_DATA_DIR", str(tmp_path / "srv" / ".selfcrag"))
    return tmp_path


def test_a_served_run_may_not_reach_another_index_through_link_dot_dot(layout: Path) -> None:
    with pytest.raises(UserError) as refused:
        graph.invoke({"question": LOGS}, context={"data_dir": f"{layout}/srv/link/../.selfcrag"})
    assert str(refused.value) == REFUSED


def test_the_path_through_the_link_is_the_other_index_which_answers_when_the_operator_allows_a_run_to_choose(
    layout: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SELFCRAG_RUN_CONTEXT_ALLOWS", "data_dir")
    state = graph.invoke({"question": LOGS}, context={"data_dir": f"{layout}/srv/link/../.selfcrag"})
    assert "90 days" in state["answer"]


def test_the_operators_own_data_dir_spelt_through_a_real_folder_is_still_the_operators(layout: Path) -> None:
    (layout / "srv" / "real").mkdir()
    for spelling in (f"{layout}/srv/real/../.selfcrag", f"{layout}/srv/./.selfcrag/"):
        with pytest.raises(NoIndexError) as empty:  # not refused: the operator's folder, which is empty
            graph.invoke({"question": LOGS}, context={"data_dir": spelling})
        assert str(layout / "srv" / ".selfcrag") in str(empty.value)
