"""Vectors an ingest has computed and not yet published, kept on disk: an interrupted ingest resumes.

Every batch of sentences the writer embeds is stored, before the writer goes on, in a SQLite file in the
index folder (``index/kept-vectors.sqlite``), each vector under a digest of the model (name, version, size)
and of the text, as the shipped vectors are keyed (:mod:`selfcrag.embed.remembered`). Killed at any point
(``kill -9``, Ctrl-C, a full disk, a failing endpoint), the writer leaves the file behind, and the next ingest
takes from it the vectors it would have computed again: it embeds only what is left.

* SQLite's write-ahead log keeps each batch whole or absent: a tail torn by a kill fails its checksum and is
  dropped when the file is next opened. A file that is not such a database is removed and started anew.
* Each vector read is checked (its size, finite, unit length); one that fails is embedded again. Nothing is
  unpickled.
* Once a generation holding the vectors is published (a long ingest publishes every few minutes), the rows of
  the vectors it used are deleted, and the file with its last row; rows kept for another folder's interrupted
  ingest stay for it. The file stops growing at :data:`MAX_KEPT_BYTES`: it holds minutes of embedding, not the
  corpus.
* Keeping is a saving, never a reason to fail: when the file cannot be written (a full disk), the run goes on
  without it, and the engine's own writes report the full disk if it is one.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from selfcrag.embed.embedders import Embedder, WrappedEmbedder, passage_batch
from selfcrag.errors import UserError

KEPT_FILE = "kept-vectors.sqlite"
# What SQLite writes beside the database while it is open, or after a kill.
_SIDE_FILES = ("-wal", "-shm", "-journal")
# 1 GiB: about 700,000 vectors of 384 dimensions, hours of embedding on a laptop. Past it the run keeps nothing
# more (a publish deletes what the run used long before, unless publishing along the way is turned off).
MAX_KEPT_BYTES = 2**30
# Keys per lookup (SQLite allows 32,766 parameters in a statement).
_LOOKUP_CHUNK = 500
_PAGE_SIZE = 4096


def kept_vectors_file(index_root: Path) -> Path:
    """Where an index folder's writer keeps the vectors it has not published yet."""
    return index_root / KEPT_FILE


class KeptVectors(WrappedEmbedder):
    """Stores every passage vector the model computes, and answers from the vectors an earlier run stored.

    Only vectors stored by another run are taken: within one run a text is embedded as it always was, so an
    ingest that is not interrupted writes the vectors it wrote before this file existed. The file is used from
    one thread at a time (SQLite's connection is not shared between threads at once).

    Args:
        embedder: The model (or one answering some texts itself: :class:`~selfcrag.embed.remembered.RememberedVectors`).
        path: The file (see :func:`kept_vectors_file`); opened at the first passages, so a writer that embeds
            nothing never touches it.

    Attributes:
        recalled: Passages answered from vectors an earlier run stored.
    """

    def __init__(self, embedder: Embedder, path: Path) -> None:
        super().__init__(embedder)
        self.path = path
        self.recalled = 0
        self._model = "\n".join([embedder.name, embedder.version, str(embedder.dim), "passage", ""]).encode("utf-8")
        self._db: sqlite3.Connection | None = None
        # The rows earlier runs stored, by key: read once, when the file is opened.
        self._earlier: dict[bytes, int] = {}
        # Rows up to this one were stored by earlier runs; those after it by this run (rows are appended).
        self._mark = 0
        # Rows of earlier runs this run looked up since it last published: published with it, they go too.
        self._used: list[int] = []
        # Opened by this run since it last published; and whether writing it failed.
        self._opened = False
        self._off = False

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:  # noqa: D102
        if not texts:
            return self.embedder.embed_passages(texts)
        db = self._open()
        if db is None:
            return self.embedder.embed_passages(texts)
        keys = [hashlib.sha256(self._model + text.encode("utf-8", "surrogatepass")).digest()[:16] for text in texts]
        known = self._recall(db, keys)
        missing = [i for i, key in enumerate(keys) if key not in known]
        vectors = np.empty((len(texts), self.dim), dtype=np.float32)
        if missing:
            # The model picks its runtime for the whole batch, not for the part left (see passage_batch).
            with passage_batch(len(texts)):
                computed = np.asarray(self.embedder.embed_passages([texts[i] for i in missing]), dtype=np.float32)
            vectors[missing] = computed
            self._keep(db, [keys[i] for i in missing], computed)
        for i, key in enumerate(keys):
            if key in known:
                vectors[i] = known[key]
        self.recalled += len(texts) - len(missing)
        return vectors

    def _recall(self, db: sqlite3.Connection, keys: list[bytes]) -> dict[bytes, np.ndarray]:
        """The vectors earlier runs stored for these keys, those that pass the checks."""
        rowids = {self._earlier[key]: key for key in keys if key in self._earlier}
        found: dict[bytes, np.ndarray] = {}
        ordered = list(rowids)
        self._used.extend(ordered)  # recalled, or failing its checks: either way not needed once published
        for start in range(0, len(ordered), _LOOKUP_CHUNK):
            chunk = ordered[start : start + _LOOKUP_CHUNK]
            rows = [
                (rowids[rowid], blob)
                for rowid, blob in db.execute(
                    f"SELECT rowid, vector FROM kept WHERE rowid IN ({','.join('?' * len(chunk))})", chunk
                )
                if rowid in rowids and isinstance(blob, bytes) and len(blob) == 4 * self.dim
            ]
            if not rows:
                continue
            vectors = np.frombuffer(b"".join(blob for _, blob in rows), dtype="<f4").astype(np.float32)
            vectors = vectors.reshape(len(rows), self.dim)
            # Finite and of unit length, as every embedder's vectors are (see remembered.unit_vectors).
            with np.errstate(all="ignore"):
                sound = np.isfinite(vectors).all(axis=1) & (np.abs(np.linalg.norm(vectors, axis=1) - 1.0) <= 0.01)
            found.update((key, vector) for (key, _), vector, ok in zip(rows, vectors, sound, strict=True) if ok)
        return found

    def _keep(self, db: sqlite3.Connection, keys: list[bytes], vectors: np.ndarray) -> None:
        """Append a batch in one transaction: after a kill it is there whole, or not at all."""
        (pages,) = db.execute("PRAGMA page_count").fetchone()
        (free,) = db.execute("PRAGMA freelist_count").fetchone()  # pages of deleted rows, written again first
        if (pages - free) * _PAGE_SIZE >= MAX_KEPT_BYTES:
            return
        rows = [(key, vector.astype("<f4").tobytes()) for key, vector in zip(keys, vectors, strict=True)]
        try:
            with db:
                # The connection commits each statement by itself (isolation_level None): BEGIN makes the batch
                # one transaction, whole or absent after a kill, and one write of the log instead of one a row.
                db.execute("BEGIN")
                # Appended in rowid order, without an index: a batch writes a few pages, not one per random key.
                db.executemany("INSERT INTO kept (key, vector) VALUES (?, ?)", rows)
        except sqlite3.Error:
            # A full disk: keeping is a saving, never a reason to fail. The run goes on as if there were no
            # file (the engine's own writes say the disk is full, if it is), and what was kept stays kept.
            self._off = True
            self.close()

    def _open(self) -> sqlite3.Connection | None:
        """The file, opened (made when missing, made anew when it is not ours); None when it cannot be written."""
        if self._db is None and not self._off:
            _refuse_links(self.path)
            self._opened = True
            try:
                try:
                    db = _connect(self.path)
                except sqlite3.DatabaseError as error:
                    if "full" in str(error).lower():
                        raise
                    _remove(self.path)  # not a file of ours, or damaged: what it held is embedded again
                    db = _connect(self.path)
                self._earlier, spare = _earlier_rows(db)
                if spare:
                    _delete_rows(db, spare)
                (self._mark,) = db.execute("SELECT coalesce(max(rowid), 0) FROM kept").fetchone()
            except sqlite3.Error:
                self._off = True  # as for a failed write (see _keep)
                return None
            self._db = db
        return self._db

    def close(self) -> None:
        """Close the file, leaving what it holds for the next run."""
        db, self._db = self._db, None
        if db is not None:
            db.close()

    def forget_published(self) -> None:
        """Delete the vectors this run used, now in a published generation; the file goes with its last row.

        Rows stored by another run and not used by this one stay: they are an interrupted ingest's, of other files
        perhaps, and its next run takes them.
        """
        if not self._opened:
            return
        used, self._used = self._used, []
        try:
            if self._db is None:  # closed after a failed write: the rows it kept go all the same
                _refuse_links(self.path)
            db = self._db or _connect(self.path)
            db.execute("DELETE FROM kept WHERE rowid > ?", (self._mark,))
            _delete_rows(db, used)
            (left, self._mark) = db.execute("SELECT count(*), coalesce(max(rowid), 0) FROM kept").fetchone()
        except (sqlite3.Error, UserError):
            left = 1  # not deleted now: the rows are sound vectors, and the size cap bounds them
        else:
            self._db = db
        self._off = False  # a publish may have freed the space a failed write lacked
        if left:
            forgotten = set(used)
            self._earlier = {key: rowid for key, rowid in self._earlier.items() if rowid not in forgotten}
            return
        self.close()
        self._earlier = {}
        self._opened = False
        _remove(self.path)


def _earlier_rows(db: sqlite3.Connection) -> tuple[dict[bytes, int], list[int]]:
    """The rows an earlier run stored, by key; and the rows no lookup would take.

    Those are a key's second row (a text in two batches of a killed run: within a run a text is embedded as it
    comes) and rows of no key of ours. No run would use them, so no publish would delete them: they go at once.
    """
    earlier: dict[bytes, int] = {}
    spare: list[int] = []
    for rowid, key in db.execute("SELECT rowid, key FROM kept ORDER BY rowid"):
        if isinstance(key, bytes) and len(key) == 16 and key not in earlier:
            earlier[key] = rowid
        else:
            spare.append(rowid)
    return earlier, spare


def _delete_rows(db: sqlite3.Connection, rowids: Sequence[int]) -> None:
    """Delete rows, in one transaction."""
    with db:
        db.execute("BEGIN")
        for start in range(0, len(rowids), _LOOKUP_CHUNK):
            chunk = rowids[start : start + _LOOKUP_CHUNK]
            db.execute(f"DELETE FROM kept WHERE rowid IN ({','.join('?' * len(chunk))})", chunk)


def _connect(path: Path) -> sqlite3.Connection:
    """Open (or make) the file and check that it is ours; raises :class:`sqlite3.DatabaseError` when it is not."""
    db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
    try:
        db.execute(f"PRAGMA page_size={_PAGE_SIZE}")  # what the size cap counts in (a new file only)
        # WAL: a committed batch survives the process being killed; a torn tail is detected and dropped.
        db.execute("PRAGMA journal_mode=WAL")
        # OFF: no fsync. A killed process loses nothing the operating system was given; what a power cut
        # damages is caught by the checks (the file's at opening, each vector's when read).
        db.execute("PRAGMA synchronous=OFF")
        db.execute("CREATE TABLE IF NOT EXISTS kept (key BLOB NOT NULL, vector BLOB NOT NULL)")
        db.execute("SELECT rowid, key, vector FROM kept LIMIT 1").fetchall()
        if db.execute("PRAGMA quick_check").fetchone() != ("ok",):
            raise sqlite3.DatabaseError("damaged")
    except BaseException:
        db.close()
        raise
    return db


def _refuse_links(path: Path) -> None:
    """Refuse a link in the file's place: selfcrag never makes one, and SQLite would write through it."""
    for part in (path, *(path.with_name(path.name + suffix) for suffix in _SIDE_FILES)):
        if part.is_symlink():
            raise UserError(
                f"{part} is a symbolic link, and selfcrag never follows links in its data folder; remove it"
            )


def _remove(path: Path) -> None:
    for part in (path, *(path.with_name(path.name + suffix) for suffix in _SIDE_FILES)):
        part.unlink(missing_ok=True)
