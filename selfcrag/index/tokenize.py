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
import re
import tempfile
from functools import lru_cache
from pathlib import Path

import jieba
import snowballstemmer

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

_stemmer = snowballstemmer.stemmer("english")


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
    """Load jieba's prefix dictionary (once per process), from jieba's own cache file in one read.

    jieba reads its 9 MB cache with ``marshal.load`` on the open file, which
    reads it in hundreds of thousands of small pieces: 1.0 s of a fresh search
    process, where ``marshal.loads`` of the whole file takes 0.5 s. The cache is
    the same file jieba writes and reads; without one, jieba builds it as usual.
    """
    dictionary = jieba.dt
    with dictionary.lock:
        if dictionary.initialized:
            return
        if dictionary.dictionary is jieba.DEFAULT_DICT and not dictionary.cache_file:
            cache = Path(dictionary.tmp_dir or tempfile.gettempdir()) / "jieba.cache"
            try:
                freq, total = marshal.loads(cache.read_bytes())
            except (OSError, EOFError, ValueError, TypeError):
                pass
            else:
                if isinstance(freq, dict) and isinstance(total, int):
                    dictionary.FREQ, dictionary.total = freq, total
                    dictionary.initialized = True
                    return
        jieba.initialize()


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return _stemmer.stemWord(word)


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
