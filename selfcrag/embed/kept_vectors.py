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
* The file is read only when it (and each file SQLite keeps beside it) is a regular file of this user's that
  no one else may write, as the converted model's cache is (:func:`~selfcrag.embed.model_cache.file_distrusted`);
  selfcrag makes it readable and writable by this user alone. And before the vectors of a run are taken, a few
  of them, drawn at random, are embedded again and compared: a file whose vectors are not those of their texts
  (another text's vector under a text's key, say) is not used at all. Anything distrusted, or standing at the
  file's name that is not a file (a folder), is moved aside under a new name in the index folder, never deleted
  (it may hold anything), one line says so, and the run keeps its vectors in a new file.
* Once a generation holding the vectors is published (a long ingest publishes every few minutes), the rows of
  the vectors it used are deleted, and the file with its last row; rows kept for another folder's interrupted
  ingest stay for it. The file stops growing at :data:`MAX_KEPT_BYTES`: it holds minutes of embedding, not the
  corpus.
* Keeping is a saving, never a reason to fail: when the file cannot be written (a full disk), the run goes on
  without it, and the engine's own writes report the full disk if it is one.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import random
import secrets
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from selfcrag.embed.embedders import Embedder, WrappedEmbedder, passage_batch, sound_rows
from selfcrag.embed.model_cache import file_distrusted
from selfcrag.errors import UserError

log = logging.getLogger(__name__)

KEPT_FILE = "kept-vectors.sqlite"
# What SQLite writes beside the database while it is open, or after a kill.
_SIDE_FILES = ("-wal", "-shm", "-journal")
# 1 GiB: about 700,000 vectors of 384 dimensions, hours of embedding on a laptop. Past it the run keeps nothing
# more (a publish deletes what the run used long before, unless publishing along the way is turned off).
MAX_KEPT_BYTES = 2**30
# Keys per lookup (SQLite allows 32,766 parameters in a statement).
_LOOKUP_CHUNK = 500
_PAGE_SIZE = 4096
# Vectors of an earlier run embedded again, and compared, each time the file is opened, before the others are
# taken: a few sentences' embedding (about 0.1 s with the default model) against the minutes a resume saves.
CHECKED_ROWS = 4
# A kept vector and the model's of the same text agree at least this well. The default model's runtimes differ
# by 1e-3 at most (cosine 0.998 in int8 against the engine); another text's vector is far below it.
AGREEING_COSINE = 0.99
# Drawn from the system's randomness: rows a writer of the file planted cannot be placed where none is drawn.
_DRAW = random.SystemRandom()


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
        recalled: Passages answered from vectors an earlier run stored (those embedded again to check them too).
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
        # Opened by this run since it last published; whether writing it failed; whether it is not to be used at
        # all (distrusted, and it could not be moved aside).
        self._opened = False
        self._off = False
        self._refused = False
        # Vectors of earlier runs still to be embedded again and compared before the rest are taken.
        self._unchecked = CHECKED_ROWS

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:  # noqa: D102
        if not texts:
            return self.embedder.embed_passages(texts)
        db = self._open()
        if db is None:
            return self.embedder.embed_passages(texts)
        keys = [hashlib.sha256(self._model + text.encode("utf-8", "surrogatepass")).digest()[:16] for text in texts]
        known = self._recall(db, keys)
        if known and self._unchecked and not self._agrees(texts, keys, known):
            self._set_aside("holds vectors that are not those of their texts")
            return self.embed_passages(texts)  # from the new file, where nothing is known
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
            found.update(
                (key, vector) for (key, _), vector, ok in zip(rows, vectors, sound_rows(vectors), strict=True) if ok
            )
        return found

    def _agrees(self, texts: Sequence[str], keys: list[bytes], known: dict[bytes, np.ndarray]) -> bool:
        """Whether a few of the vectors recalled, drawn at random, are those the model makes of their texts now.

        Outside :func:`passage_batch`: a few texts go to whichever runtime is quickest for few (the default
        model's runtimes agree far above :data:`AGREEING_COSINE`).
        """
        recalled = [i for i, key in enumerate(keys) if key in known]
        drawn = _DRAW.sample(recalled, min(self._unchecked, len(recalled)))
        self._unchecked -= len(drawn)
        fresh = np.asarray(self.embedder.embed_passages([texts[i] for i in drawn]), dtype=np.float32)
        kept = np.stack([known[keys[i]] for i in drawn])
        return bool((np.einsum("ij,ij->i", fresh, kept) >= AGREEING_COSINE).all())

    def _set_aside(self, reason: str) -> None:
        """Stop using the file, move it aside (:func:`_set_aside`), and go on with a new one, or with none."""
        self.close()
        self._earlier, self._used, self._mark = {}, [], 0
        if not _set_aside(self.path, reason):
            self._refused = True

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
        if self._db is None and not self._off and not self._refused:
            _refuse_links(self.path)
            self._opened = True
            self._unchecked = CHECKED_ROWS
            reason = _distrusted(self.path)
            if reason is not None and not _set_aside(self.path, reason):
                self._refused = True
                return None
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
    try:
        # Made here, for this user alone, whatever the umask: SQLite gives the files beside it the same mode, and
        # a file others may write is not read (see _distrusted).
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
    except FileExistsError:
        pass
    except OSError as error:
        raise sqlite3.OperationalError(str(error)) from error  # a full disk, a read-only folder: as SQLite's own
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
    for part in _parts(path):
        if part.is_symlink():
            raise UserError(
                f"{part} is a symbolic link, and selfcrag never follows links in its data folder; remove it"
            )


def _distrusted(path: Path) -> str | None:
    """Why the file, or one SQLite keeps beside it, is not to be read (see file_distrusted); None when it may be."""
    for part in _parts(path):
        try:
            status = os.lstat(part)
        except FileNotFoundError:
            continue
        except OSError as error:
            return f"cannot be looked at ({error.strerror})"
        reason = file_distrusted(status)
        if reason is not None:
            return reason if part == path else f"has a {part.name} beside it that {reason}"
    return None


def _set_aside(path: Path, reason: str) -> bool:
    """Move the file, and the files SQLite keeps beside it, aside: renamed in their folder, never deleted.

    What stands at the name may be a folder holding anything, or another user's file: deleting it could lose what
    is not ours. A rename in the same folder keeps it inside the data folder, moves the entry itself (never what
    a link points to, never what a folder holds), and frees the name for a new file. One line says what was done.

    Args:
        path: The file.
        reason: Why it is not used, as the end of a sentence about it ("is a folder, not a file").

    Returns:
        Whether the name is free now (when not, the run keeps no vectors: it is a saving, never a reason to fail).
    """
    aside = path.with_name(f"{path.name}.set-aside-{secrets.token_hex(4)}")
    try:
        # The files beside it first: left behind at their names, they would be taken into the new file.
        for suffix in (*_SIDE_FILES, ""):
            part, target = path.with_name(path.name + suffix), aside.with_name(aside.name + suffix)
            if not os.path.lexists(part):
                continue
            if os.path.lexists(target):  # a rename would replace it
                raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(target))
            os.rename(part, target)
    except OSError as error:
        log.warning(
            "%s %s, and cannot be moved aside (%s): this ingest keeps no vectors for resuming; move it away",
            path,
            reason,
            error.strerror,
        )
        return False
    log.warning(
        "%s %s: not read, moved aside to %s (delete it once you have looked); a new file keeps this ingest's vectors",
        path,
        reason,
        aside.name,
    )
    return True


def _parts(path: Path) -> tuple[Path, ...]:
    """The file and the files SQLite keeps beside it."""
    return (path, *(path.with_name(path.name + suffix) for suffix in _SIDE_FILES))


def _remove(path: Path) -> None:
    for part in _parts(path):
        part.unlink(missing_ok=True)
