"""jieba's dictionary cache lives in the user's own cache folder: a file planted in the shared temporary folder is
never read.

jieba reads ``jieba.cache`` from the temporary folder with ``marshal``; any local user can write there. Each case runs
the real tokenizer in a fresh process whose home, cache folder and temporary folder are the test's, with a planted
cache whose dictionary holds a marker word: had it been read, the marker would be in jieba's dictionary.
"""

from __future__ import annotations

import json
import marshal
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

MARKER = "植入标记词"
# Tokenise Chinese as selfcrag does; say whether the dictionary is the planted one, and how many words it holds.
TOKENIZE = f"""
import json, jieba
from selfcrag.index.tokenize import tokenize
terms = tokenize("中华人民共和国的退款多久能退回")
print(json.dumps({{"planted": {MARKER!r} in jieba.dt.FREQ, "words": len(jieba.dt.FREQ), "terms": terms}}))
"""


def plant(folder: Path) -> bytes:
    """Write a jieba cache holding the marker into a folder; return its bytes."""
    folder.mkdir(parents=True, exist_ok=True)
    blob = marshal.dumps(({MARKER: 1000}, 1000))
    (folder / "jieba.cache").write_bytes(blob)
    return blob


def tokenize_chinese(home: Path, shared_tmp: Path, cache_home: Path | None) -> dict[str, object]:
    """Run the tokenizer in a fresh process with these home, cache and temporary folders; return what it says."""
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_CACHE_HOME", "TMPDIR", "TEMP", "TMP")}
    env.update(HOME=str(home), TMPDIR=str(shared_tmp))
    if cache_home is not None:
        env["XDG_CACHE_HOME"] = str(cache_home)
    run = subprocess.run([sys.executable, "-c", TOKENIZE], capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr
    said: dict[str, object] = json.loads(run.stdout)
    return said


def test_a_jieba_cache_planted_in_the_shared_temporary_folder_is_not_read(tmp_path: Path) -> None:
    shared = tmp_path / "shared-tmp"
    planted = plant(shared)
    said = tokenize_chinese(tmp_path / "home", shared, tmp_path / "cache")
    assert said["planted"] is False
    assert isinstance(said["words"], int) and said["words"] > 100_000  # jieba's own dictionary
    terms = said["terms"]
    assert isinstance(terms, list) and "退款" in terms
    assert os.listdir(shared) == ["jieba.cache"] and (shared / "jieba.cache").read_bytes() == planted


@pytest.mark.parametrize("cache_home_set", [True, False], ids=["XDG_CACHE_HOME", "HOME"])
def test_the_jieba_cache_is_written_in_the_users_cache_folder_for_them_alone(
    tmp_path: Path, cache_home_set: bool
) -> None:
    home, cache_home = tmp_path / "home", tmp_path / "cache"
    home.mkdir()
    (tmp_path / "shared-tmp").mkdir()
    tokenize_chinese(home, tmp_path / "shared-tmp", cache_home if cache_home_set else None)
    folder = (cache_home if cache_home_set else home / ".cache") / "selfcrag"
    cache = folder / "jieba.cache"
    assert stat.S_IMODE(os.lstat(folder).st_mode) == 0o700
    assert stat.S_ISREG(os.lstat(cache).st_mode) and stat.S_IMODE(os.lstat(cache).st_mode) == 0o600
    freq, total = marshal.loads(cache.read_bytes())
    assert len(freq) > 100_000 and total > 0
    assert os.listdir(folder) == ["jieba.cache"] and os.listdir(tmp_path / "shared-tmp") == []


def test_the_users_own_jieba_cache_is_what_is_read(tmp_path: Path) -> None:
    # A cache in the user's folder is theirs: the marker in it shows it was read rather than rebuilt.
    folder = tmp_path / "cache" / "selfcrag"
    plant(folder)
    folder.chmod(0o700)
    (tmp_path / "shared-tmp").mkdir()
    said = tokenize_chinese(tmp_path / "home", tmp_path / "shared-tmp", tmp_path / "cache")
    assert said["planted"] is True


def test_a_cache_folder_that_is_a_link_is_not_used(tmp_path: Path) -> None:
    # The link leads to the shared temporary folder, where a cache is planted.
    shared = tmp_path / "shared-tmp"
    planted = plant(shared)
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "selfcrag").symlink_to(shared, target_is_directory=True)
    said = tokenize_chinese(tmp_path / "home", shared, tmp_path / "cache")
    assert said["planted"] is False and isinstance(said["words"], int) and said["words"] > 100_000
    assert os.listdir(shared) == ["jieba.cache"] and (shared / "jieba.cache").read_bytes() == planted


def test_a_cache_folder_others_may_write_to_is_not_used(tmp_path: Path) -> None:
    # The user's cache folder is writable by everyone, as the shared temporary folder is (and is that folder here).
    folder = tmp_path / "cache" / "selfcrag"
    planted = plant(folder)
    folder.chmod(0o777)
    said = tokenize_chinese(tmp_path / "home", folder, tmp_path / "cache")
    assert said["planted"] is False and isinstance(said["words"], int) and said["words"] > 100_000
    assert os.listdir(folder) == ["jieba.cache"] and (folder / "jieba.cache").read_bytes() == planted


def test_a_fifo_planted_as_the_jieba_cache_is_refused_not_waited_on(tmp_path: Path) -> None:
    folder = tmp_path / "cache" / "selfcrag"
    folder.mkdir(parents=True, mode=0o700)
    os.mkfifo(folder / "jieba.cache", 0o600)
    (tmp_path / "shared-tmp").mkdir()
    try:  # opened for reading, a FIFO with no writer never returns: far longer than building the dictionary takes
        said = tokenize_chinese(tmp_path / "home", tmp_path / "shared-tmp", tmp_path / "cache")
    except subprocess.TimeoutExpired:
        pytest.fail("reading the jieba cache waited on a FIFO planted at its name")
    assert said["planted"] is False and isinstance(said["words"], int) and said["words"] > 100_000
    assert stat.S_ISREG(os.lstat(folder / "jieba.cache").st_mode)  # the dictionary built was kept in its place
