"""Tokenisation for BM25: jieba for Chinese runs, stemmed word tokens for the rest.

Both the index and the queries go through :func:`tokenize`, so a term matches
only when both sides produce it. Chinese runs use jieba's search mode, which
also emits the shorter words inside long ones (``中华人民共和国`` gives
``中华``, ``华人``, ``人民``, ``共和``, ``共和国`` ...), so a question that
names part of a compound still matches it.
"""

from __future__ import annotations

import logging
import re
import threading
import unicodedata
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

import jieba
import snowballstemmer

from selfcrag.user_cache import own_folder, read_table, user_cache_folder, write_table

# jieba prints its dictionary loading to stderr through logging; keep it quiet.
jieba.setLogLevel(logging.WARNING)

# Bump when tokenize() or what it is given changes: saved indexes are rebuilt, every sentence embedded again
# (3: an English possessive is its word, "kettle's" -> "kettl"). Compatibility forms folded by NFKC
# ("Grundbegriﬀe" -> "grundbegriff") did not bump it: that would embed every index again for the few sentences
# holding a ligature or a fullwidth letter; a document indexed since (new, or changed) has the folded terms.
TOKENIZER_VERSION = 3

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_POSSESSIVE = re.compile(r"(?<=[^\W\d_])['’]s$")
_TOKEN_RE = re.compile(rf"([{_CJK}]+)|([^\W_{_CJK}]+(?:['’.\-][^\W_{_CJK}]+)*)")
_CJK_RE = re.compile(f"[{_CJK}]")
_LETTER_RE = re.compile(r"[^\W\d_]")
_WORD_RE = re.compile(rf"[^\W\d_{_CJK}]+")

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
    """Guess whether a text is Chinese or English, as :func:`text_language` reads it.

    Args:
        text: Any text.

    Returns:
        ``"zh"`` or ``"en"`` (the latter also for a text without letters).
    """
    return text_language(text) or "en"


# Latin letters a Chinese character stands for, when a document's languages are weighed.
HAN_LETTERS = 3


def text_language(text: str) -> str | None:
    """The language of a sentence, read from its ordinary words, or None for one without letters.

    Chinese characters are Chinese words and lowercase Latin words English ones; a capitalised word, an acronym
    or a letter (``Python``, ``COMAC``, ``C``) names something in either language. ``目前支援的语言有Python、Vala、
    Java、C与C++。`` is a Chinese sentence, though most of its letters are Latin: read as English, its cosine with a
    Chinese question was placed on the scale of a passage in the other language (lower), and came first in the
    evidence. A text is Chinese when Chinese characters make up at least a fifth of its ordinary words' letters;
    a text of names alone is English.

    Args:
        text: A sentence.

    Returns:
        ``zh``, ``en``, or None (numbers, symbols: a row of figures is of no language).
    """
    chinese = len(_CJK_RE.findall(text))
    ordinary = chinese + sum(len(word) for word in _WORD_RE.findall(text) if word[0].islower())
    if ordinary:
        return "zh" if chinese * 5 >= ordinary else "en"
    return "en" if _LETTER_RE.search(text) else None


def document_languages(texts: Iterable[str]) -> str:
    """The languages of a document: the one most of its text is in, and another holding a fifth of it or more.

    Measured in letters, a Chinese character counting as :data:`HAN_LETTERS` Latin ones (about what it takes
    to say as much in English), so that English names and titles in a Chinese text, or a Chinese heading over
    English paragraphs, do not make a document of two languages, while an English manual with a Chinese section
    of a quarter of its length does.

    Args:
        texts: The document's sentences.

    Returns:
        ``en``, ``zh``, ``en,zh`` (in that order), or "" when it has no letters.
    """
    han = latin = 0
    for text in texts:
        cjk, letters = letter_counts(text)
        han, latin = han + cjk, latin + letters - cjk
    sizes = {"zh": han * HAN_LETTERS, "en": latin}
    total, most = sum(sizes.values()), max(sizes.values())
    if not total:
        return ""
    return ",".join(sorted(lang for lang, size in sizes.items() if size and (size * 5 >= total or size == most)))


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
        if folder is not None and not own_folder(folder):
            folder = None
        cache = folder / "jieba.cache" if folder is not None else None
        loaded = _frequencies(read_table(cache)) if cache is not None else None
        if loaded is None:
            loaded = dictionary.gen_pfdict(dictionary.get_dict_file())
            if cache is not None:
                write_table(cache, loaded)
        dictionary.FREQ, dictionary.total = loaded
        dictionary.initialized = True


def _frequencies(table: object) -> tuple[dict[str, int], int] | None:
    """The word frequencies of jieba and their total, when a cache file held them; else None."""
    if isinstance(table, tuple) and len(table) == 2 and isinstance(table[0], dict) and isinstance(table[1], int):
        return table[0], table[1]
    return None


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
def stem(word: str) -> str:
    """An English word's Snowball stem, as the index's terms have it.

    Args:
        word: A lower-cased word.

    Returns:
        Its stem (``represented`` -> ``repres``).
    """
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
        (Snowball), Chinese runs segmented by jieba in search mode. Compatibility
        forms are folded first (NFKC), so a PDF's ligatures ("ﬀ") and fullwidth
        letters and digits give the terms their plain spelling gives.
    """
    terms: list[str] = []
    # Terms only: NFKC may change the text's length, and no offset is taken from it here.
    folded = text if unicodedata.is_normalized("NFKC", text) else unicodedata.normalize("NFKC", text)
    for match in _TOKEN_RE.finditer(folded.lower()):
        cjk_run, word = match.groups()
        if cjk_run:
            if not jieba.dt.initialized:
                load_dictionary()
            terms.extend(w for w in jieba.cut_for_search(cjk_run) if w not in ZH_STOPWORDS)
        else:
            word = _POSSESSIVE.sub("", word)  # "the kettle's cord" is about the kettle
            if word not in EN_STOPWORDS:
                terms.append(stem(word) if word.isalpha() else word)
    return terms
