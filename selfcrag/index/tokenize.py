"""Tokenisation for BM25: jieba for Chinese runs, stemmed word tokens for the rest.

Both the index and the queries go through :func:`tokenize`, so a term matches
only when both sides produce it. Chinese runs use jieba's search mode, which
also emits the shorter words inside long ones (``中华人民共和国`` gives
``中华``, ``华人``, ``人民``, ``共和``, ``共和国`` ...), so a question that
names part of a compound still matches it.
"""

from __future__ import annotations

import logging
import marshal
import os
import re
import stat
import tempfile
import threading
from functools import lru_cache
from pathlib import Path

import jieba
import snowballstemmer

from selfcrag.embed.model_cache import cache_folder

# jieba prints its dictionary loading to stderr through logging; keep it quiet.
jieba.setLogLevel(logging.WARNING)

# Bump when tokenize() or what it is given changes: saved indexes re-tokenise
# (3: an English possessive is its word, "kettle's" -> "kettl").
TOKENIZER_VERSION = 3

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_POSSESSIVE = re.compile(r"(?<=[^\W\d_])['’]s$")
_TOKEN_RE = re.compile(rf"([{_CJK}]+)|([^\W_{_CJK}]+(?:['’.\-][^\W_{_CJK}]+)*)")
_CJK_RE = re.compile(f"[{_CJK}]")
_LETTER_RE = re.compile(r"[^\W\d_]")

# Function words and question words: they carry no topic, and in questions they
# would otherwise match every sentence that happens to contain them.
ZH_STOPWORDS = frozenset(
    """的 了 是 在 和 与 及 或 也 都 而 被 把 对 于 之 其 这 那 这个 那个 有 为 以 中 等 吗 呢 吧 啊
    什么 哪些 哪个 哪里 哪 多少 怎么 怎样 如何 为什么 谁 几 是否 可以 能 会 要 请问 请 一个 我 你 他 她 它
    我们 你们 他们 就 还 又 但 并 从 到 向 由 给 让 所 着 过 该 则 即 如果 因为 所以 上 下 个 么""".split()
)
EN_STOPWORDS = frozenset(
    """a an the and or but if of to in on at by for with from as is are was were be been being am
    do does did doing have has had having it its this that these those there here what which who whom
    whose when where why how i me my we our you your he him his she her they them their not no so than
    too very can could will would shall should may might must about into over under between through
    during before after above below up down out off again further then once all any both each few more
    most other some such only own same just also s t don't doesn't isn't""".split()
)

# A Snowball stemmer keeps the word it is working on in itself, so one shared by threads mixes their words
# (an IndexError inside snowballstemmer, or a wrong stem): the ingest reads ahead on a thread of its own while
# the main thread tokenises, and a server answers on several. One stemmer a thread.
_stemmers = threading.local()


def detect_language(text: str) -> str:
    """Guess whether a text is Chinese or English.

    Args:
        text: Any text.

    Returns:
        ``"zh"`` when Chinese characters make up at least a fifth of the letters,
        else ``"en"``.
    """
    cjk, letters = letter_counts(text)
    if cjk == 0:
        return "en"
    return "zh" if cjk * 5 >= letters else "en"


def letter_counts(text: str) -> tuple[int, int]:
    """Count a text's Chinese characters and its letters of any script.

    Args:
        text: Any text.

    Returns:
        ``(chinese, letters)``; the letters include the Chinese characters.
    """
    return len(_CJK_RE.findall(text)), len(_LETTER_RE.findall(text))


def load_dictionary() -> None:
    """Load jieba's prefix dictionary (once per process), from a cache file in the user's own cache folder.

    jieba keeps its cache as ``jieba.cache`` in the shared temporary folder and reads it with ``marshal``:
    another local user could plant that file and choose the dictionary, or a blob that ``marshal`` chokes on. The
    cache is kept in :func:`user_cache_folder` instead (or the folder set as jieba's ``tmp_dir``), and read only when
    that folder and the file are this user's and no one else can write them; else the dictionary is built from
    jieba's own word list (1-4 s) and no cache is read or written.

    The cache is read in one piece: jieba's ``marshal.load`` on the open file reads its 9 MB in hundreds of
    thousands of small pieces, 1.0 s of a fresh search process where ``marshal.loads`` of the whole file takes 0.5 s.
    """
    dictionary = jieba.dt
    with dictionary.lock:
        if dictionary.initialized:
            return
        if dictionary.dictionary is not jieba.DEFAULT_DICT or dictionary.cache_file:
            jieba.initialize()  # a dictionary or cache file its caller chose, loaded as they set it up
            return
        folder = Path(dictionary.tmp_dir) if dictionary.tmp_dir else user_cache_folder()
        if folder is not None and not _own_folder(folder):
            folder = None
        cache = folder / "jieba.cache" if folder is not None else None
        loaded = _read_cache(cache) if cache is not None else None
        if loaded is None:
            loaded = dictionary.gen_pfdict(dictionary.get_dict_file())
            if cache is not None:
                _write_cache(cache, loaded)
        dictionary.FREQ, dictionary.total = loaded
        dictionary.initialized = True


def user_cache_folder() -> Path | None:
    """The folder of selfcrag's caches (:func:`~selfcrag.embed.model_cache.cache_folder`), when it is the user's own.

    Made with mode 0700 when missing.

    Returns:
        The folder; None when it cannot be made or is not this user's own folder (a link, another user's, one
        others may write to): nothing read from there could be trusted.
    """
    try:
        folder = cache_folder()
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    except (OSError, RuntimeError):  # RuntimeError: no home folder to be found
        return None
    return folder if _own_folder(folder) else None


def _own_folder(folder: Path) -> bool:
    """Whether a path is a folder itself (not a link to one), this user's, and no one else may write in it."""
    try:
        info = os.lstat(folder)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and _ours_alone(info)


def _ours_alone(info: os.stat_result) -> bool:
    """Whether a file or folder is this user's and no one else may write to it."""
    return info.st_uid == os.geteuid() and not info.st_mode & 0o022


def _read_cache(cache: Path) -> tuple[dict[str, int], int] | None:
    """The dictionary a cache file of this user's holds; None when it is missing, a link, someone else's or damaged."""
    try:
        # O_NONBLOCK: a FIFO at the name opens at once (and is refused below) instead of waiting for a writer.
        descriptor = os.open(cache, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with open(descriptor, "rb") as file:
        info = os.fstat(file.fileno())
        if not (stat.S_ISREG(info.st_mode) and _ours_alone(info)):
            return None
        try:
            freq, total = marshal.loads(file.read())
        except (OSError, EOFError, ValueError, TypeError):
            return None
    return (freq, total) if isinstance(freq, dict) and isinstance(total, int) else None


def _write_cache(cache: Path, loaded: tuple[dict[str, int], int]) -> None:
    """Save jieba's dictionary as a cache file only this user can read (written aside, then renamed into place)."""
    # No cache saved (no room, a folder made read-only) only means the next process builds the dictionary again.
    try:
        descriptor, temporary = tempfile.mkstemp(dir=cache.parent, prefix=".jieba.cache.")  # mode 0600
    except OSError:
        return
    try:
        with open(descriptor, "wb") as file:
            marshal.dump(loaded, file)
        os.replace(temporary, cache)
    except OSError:
        Path(temporary).unlink(missing_ok=True)


def cut_chinese(run: str) -> list[str]:
    """Cut a Chinese run into words with jieba's precise mode, its dictionary loaded by :func:`load_dictionary`.

    Args:
        run: Chinese text.

    Returns:
        The words, in order.
    """
    if not jieba.dt.initialized:
        load_dictionary()
    return jieba.lcut(run)


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    stemmer = getattr(_stemmers, "english", None)
    if stemmer is None:
        stemmer = _stemmers.english = snowballstemmer.stemmer("english")
    return stemmer.stemWord(word)


def tokenize(text: str) -> list[str]:
    """Split a text into BM25 terms.

    Args:
        text: A sentence or a query, Chinese, English or mixed.

    Returns:
        Lower-cased terms in order, stop words dropped; English words stemmed
        (Snowball), Chinese runs segmented by jieba in search mode.
    """
    terms: list[str] = []
    for match in _TOKEN_RE.finditer(text.lower()):
        cjk_run, word = match.groups()
        if cjk_run:
            if not jieba.dt.initialized:
                load_dictionary()
            terms.extend(w for w in jieba.cut_for_search(cjk_run) if w not in ZH_STOPWORDS)
        else:
            word = _POSSESSIVE.sub("", word)  # "the kettle's cord" is about the kettle
            if word not in EN_STOPWORDS:
                terms.append(_stem(word) if word.isalpha() else word)
    return terms
