"""What the index keeps beside Qdrant: the document manifest, in SQLite.

One small database per generation (see :mod:`selfcrag.index.generations`)
holds the documents (path, title, content hash, sentence count, the
:data:`INDEXING_VERSION` they were split with), the files they were read from
(format, pages, size, when; a file identical to an indexed one is recorded as
another file of that document, not indexed twice), the files the last ingests
skipped and why, the BM25 collection statistics the sparse weights were written
with, and each term's document frequency (for the offline heuristics; the
engine keeps its own for ranking). It carries a format name and version: a
file that is not one of ours, or of another version, or one whose tables or
values are not what selfcrag writes (a dropped table, ``points = 'x'``, text
where a count belongs) is refused with one line that says what to do.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from selfcrag.errors import UserError
from selfcrag.index.sparse import term_id

MANIFEST_FILE = "manifest.sqlite"
FORMAT_NAME = "selfcrag-index"
FORMAT_VERSION = 1
# How documents are read, split and tokenised into points. Bump it whenever a
# change to files/, split/ or tokenize.py alters the points of an unchanged
# file: the next ingest then indexes such documents again (1: before the
# version was kept; 2: table-of-contents dot leaders stay in one sentence;
# 3: underlined headings, titles from a real title line, Markdown without its
# HTML, man pages by section, PDF titles and "#" lines of PDF code as text;
# 4: a "!", "?" or "." inside brackets closed on the same line ends no sentence,
# and a line of capitals or a numbered title alone between blank lines is a plain-text heading;
# 5: a numbered title directly over its text, "2.1 包装清单" then "音箱主机一台…", is a heading too;
# 6: every sentence keeps where it stands in the original, its pages, slide, rows or lines, and the path shown
# for its file: an unchanged document split the same has only that written into its points, with no embedding;
# 7: a Word or OpenDocument text's table rows stand on their table and row, and its footnotes and endnotes are read;
# 8: a Markdown file's link reference definitions are not read, and a heading of only a logo is its alt text;
# 9: a long table's later pieces keep its header, a sentence over a page break where its next page starts, and an
# HTML page's sentences the anchor they stand at: written into the points of an unchanged document, with no
# embedding; 10: every sentence and document knows its language, relabelled likewise; 11: pictures' alt text, charts
# and hidden slides of pptx, Word comments and equations, EPUB metadata and table-of-contents sections, man pages
# from roff, menus and tables of contents left out of HTML, definition terms with their definitions, a pivot
# table's header, and scanned pages read by OCR: an unchanged document is relabelled, not embedded again;
# 12: a sentence's language is read from its ordinary words, names being no language's, relabelled likewise).
# A change of terms that keeps their count (tokenize.py) is TOKENIZER_VERSION's.
INDEXING_VERSION = 12

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS documents (
    doc_id TEXT PRIMARY KEY,
    source TEXT NOT NULL,
    title TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    sentence_count INTEGER NOT NULL,
    terms INTEGER NOT NULL,
    seq INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS indexed_with (doc_id TEXT PRIMARY KEY, version INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS term_df (term INTEGER PRIMARY KEY, df INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS files (
    source TEXT PRIMARY KEY,
    doc_id TEXT NOT NULL,
    path TEXT NOT NULL,
    format TEXT NOT NULL,
    pages INTEGER,
    size INTEGER NOT NULL,
    indexed_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS files_by_document ON files(doc_id);
CREATE INDEX IF NOT EXISTS documents_by_text ON documents(content_hash);
CREATE TABLE IF NOT EXISTS skipped (path TEXT PRIMARY KEY, reason TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS languages (doc_id TEXT PRIMARY KEY, language TEXT NOT NULL) WITHOUT ROWID;
"""
# The columns each table must have (``indexed_with``, ``files``, ``skipped`` and ``languages`` are missing from
# manifests older than them).
_COLUMNS = {
    "meta": {"key", "value"},
    "documents": {"doc_id", "source", "title", "content_hash", "sentence_count", "terms", "seq"},
    "term_df": {"term", "df"},
}
# Metadata values and what they must parse as, when present.
_META_NUMBERS = {"points": int, "dim": int, "tokenizer": int, "avg_length": float, "k1": float, "b": float}
_DOCUMENT_TYPES = (
    "typeof(doc_id) != 'text' OR typeof(source) != 'text' OR typeof(title) != 'text' "
    "OR typeof(content_hash) != 'text' OR typeof(sentence_count) != 'integer' OR sentence_count < 0 "
    "OR typeof(terms) != 'integer' OR terms < 0 OR typeof(seq) != 'integer'"
)


class ManifestError(UserError):
    """A manifest that selfcrag cannot use: damaged, foreign, of another version, or with values it never writes.

    Attributes:
        reason: What is wrong, without the advice (an ingest rebuilds the index instead).
    """

    def __init__(self, path: Path, reason: str, fix: str) -> None:
        super().__init__(f"{path} {reason}: {fix}")
        self.reason = reason


@dataclass(frozen=True, slots=True)
class DocumentEntry:
    """One indexed document.

    Attributes:
        doc_id: Stable id from the resolved path.
        source: The path.
        title: First heading, first short line, or the file name.
        content_hash: SHA-256 of the decoded text.
        sentence_count: Sentences (points) of the document.
        terms: BM25 terms over all its sentences.
        also: The other files of the same text, as shown to people (their paths relative to the folder ingested):
            identical copies, indexed once under this document.
        language: Its languages (:func:`~selfcrag.index.tokenize.document_languages`): ``en``, ``zh`` or
            ``en,zh``; "" when unknown (indexed before languages were kept) or without letters.
    """

    doc_id: str
    source: str
    title: str
    content_hash: str
    sentence_count: int
    terms: int
    also: tuple[str, ...] = ()
    language: str = ""


@dataclass(frozen=True, slots=True)
class IndexedFile:
    """A file the index holds: the document it was read as, or an identical copy of another one's text.

    Attributes:
        source: Its resolved path.
        doc_id: The document it reads as (for a copy: the document of the first file found with that text).
        path: Its path as shown to people (relative to the folder ingested).
        format: What it was read as: its suffix (``pdf``, ``docx``, ``md``), ``txt.gz``, or ``text`` without one.
        pages: A PDF's pages (None for other formats).
        size: Its size in bytes when it was indexed.
        indexed_at: When it was indexed (seconds since the epoch).
    """

    source: str
    doc_id: str
    path: str
    format: str
    pages: int | None
    size: int
    indexed_at: float


class Manifest:
    """The manifest of one generation.

    Args:
        path: The SQLite file.
        writable: Open for writing (creating it when missing); readers open
            the immutable file read-only and take no lock.
    """

    def __init__(self, path: Path, *, writable: bool = False) -> None:
        self.path = path
        if writable:
            self.db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
            self.db.execute("PRAGMA journal_mode=DELETE")
            self.db.executescript(_SCHEMA)
            if self._meta_raw("format") is None:
                self.set_meta(format=FORMAT_NAME, format_version=FORMAT_VERSION)
        else:
            if not path.is_file():
                raise ManifestError(path, "is missing", "run `selfcrag ingest PATH` again")
            self.db = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True, check_same_thread=False)
        try:
            self._check()
        except BaseException:
            self.db.close()
            raise

    def _meta_raw(self, key: str) -> str | None:
        try:
            row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        except sqlite3.DatabaseError:
            return None
        return row[0] if row else None

    def _damaged(self, reason: str) -> ManifestError:
        return ManifestError(self.path, reason, "run `selfcrag ingest PATH` to rebuild the index")

    def _check(self) -> None:
        fix = "move the data folder away and run `selfcrag ingest PATH` again"
        try:
            name = self._meta_raw("format")
            version = self._meta_raw("format_version")
            self.db.execute("SELECT count(*) FROM documents").fetchone()
        except sqlite3.DatabaseError:
            name = version = None
        if name != FORMAT_NAME:
            raise ManifestError(self.path, "is not a selfcrag index manifest (damaged or foreign file)", fix)
        if version != str(FORMAT_VERSION):
            raise ManifestError(
                self.path,
                f"was written by another selfcrag version (format {version}, this one reads {FORMAT_VERSION})",
                fix,
            )
        try:
            tables = {
                table: {row[1] for row in self.db.execute(f"PRAGMA table_info({table})")}
                for (table,) in self.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            }
            for table, columns in _COLUMNS.items():
                if table not in tables:
                    raise self._damaged(f"is damaged (its {table} table is missing)")
                missing = ", ".join(sorted(columns - tables[table]))
                if missing:
                    raise self._damaged(f"is damaged (its {table} table lacks {missing})")
            self._versions_kept = "indexed_with" in tables
            self._files_kept = "files" in tables
            self._skips_kept = "skipped" in tables
            self._languages_kept = "languages" in tables
            for key, kind in _META_NUMBERS.items():
                value = self._meta_raw(key)
                if value is not None and not _parses(value, kind):
                    raise self._damaged(f"is damaged (its {key} is {value!r}, not a number)")
            if self.db.execute(f"SELECT 1 FROM documents WHERE {_DOCUMENT_TYPES} LIMIT 1").fetchone():
                raise self._damaged("is damaged (a document row holds a value selfcrag never writes)")
        except sqlite3.DatabaseError as error:
            raise self._damaged(f"is damaged ({error})") from None

    def validate(self) -> None:
        """Check every row, term statistics included (the writer does before it builds on a manifest).

        Raises:
            ManifestError: A row holds a value selfcrag never writes.
        """
        checks = {
            "term_df": "SELECT 1 FROM term_df WHERE typeof(term) != 'integer' OR typeof(df) != 'integer' LIMIT 1",
            "indexed_with": "SELECT 1 FROM indexed_with WHERE typeof(doc_id) != 'text' "
            "OR typeof(version) != 'integer' LIMIT 1",
            "files": "SELECT 1 FROM files WHERE typeof(source) != 'text' OR typeof(doc_id) != 'text' "
            "OR typeof(path) != 'text' OR typeof(format) != 'text' OR typeof(pages) NOT IN ('integer', 'null') "
            "OR typeof(size) != 'integer' OR typeof(indexed_at) NOT IN ('real', 'integer') LIMIT 1",
            "skipped": "SELECT 1 FROM skipped WHERE typeof(path) != 'text' OR typeof(reason) != 'text' LIMIT 1",
            "languages": "SELECT 1 FROM languages WHERE typeof(doc_id) != 'text' OR language NOT IN "
            "('', 'en', 'zh', 'en,zh') LIMIT 1",
        }
        kept = {
            "indexed_with": self._versions_kept,
            "files": self._files_kept,
            "skipped": self._skips_kept,
            "languages": self._languages_kept,
        }
        for table, sql in checks.items():
            if not kept.get(table, True):
                continue
            try:
                wrong = self.db.execute(sql).fetchone()
            except sqlite3.DatabaseError as error:
                raise self._damaged(f"is damaged ({error})") from None
            if wrong:
                raise self._damaged(f"is damaged (a {table} row holds a value selfcrag never writes)")

    def _rows(self, sql: str, parameters: tuple[object, ...] = ()) -> list[tuple]:
        """Run a query; a damaged page of the file is one line, as at open."""
        try:
            return self.db.execute(sql, parameters).fetchall()
        except sqlite3.DatabaseError as error:
            raise self._damaged(f"is damaged ({error})") from None

    # ------------------------------------------------------------------ meta

    def meta(self, key: str, default: str | None = None) -> str | None:
        """A value of the manifest's metadata."""
        value = self._meta_raw(key)
        return default if value is None else value

    def set_meta(self, **values: object) -> None:
        """Set metadata values."""
        self.db.executemany(
            "INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            [(k, str(v)) for k, v in values.items()],
        )

    @property
    def avg_length(self) -> float:
        """Average BM25 terms per sentence the stored sparse weights were written with."""
        return float(self.meta("avg_length", "0") or 0)

    # ------------------------------------------------------------------ documents

    def documents(self) -> Iterator[DocumentEntry]:
        """All documents, in ingestion order."""
        also: dict[str, list[str]] = {}
        for doc_id, path in self._copies():
            also.setdefault(doc_id, []).append(path)
        for row in self._rows(f"SELECT {self._document_columns()} ORDER BY seq"):
            yield _entry(row, also.get(row[0], ()))

    def document(self, doc_id: str) -> DocumentEntry | None:
        """One document, or None."""
        rows = self._rows(f"SELECT {self._document_columns()} WHERE doc_id = ?", (doc_id,))
        return _entry(rows[0], [path for _, path in self._copies(doc_id)]) if rows else None

    def _document_columns(self) -> str:
        """The columns of a document's entry, and the tables they come from (no language in older manifests)."""
        columns = "doc_id, source, title, content_hash, sentence_count, terms"
        if not self._languages_kept:
            return f"{columns}, '' FROM documents"
        return f"{columns}, coalesce(language, '') FROM documents LEFT JOIN languages USING (doc_id)"

    def languages(self) -> frozenset[str] | None:
        """The languages the documents are in.

        Returns:
            ``en`` and ``zh`` as the documents hold them; None when some document's languages are unknown (indexed
            before they were kept: the next ingest records them).
        """
        if not self._languages_kept or self._rows(
            "SELECT 1 FROM documents LEFT JOIN languages USING (doc_id) WHERE languages.doc_id IS NULL LIMIT 1"
        ):
            return None
        labels = self._rows("SELECT DISTINCT language FROM languages")
        return frozenset(language for (label,) in labels for language in label.split(",") if language)

    def documents_with_text(self, content_hash: str) -> list[DocumentEntry]:
        """The documents indexed with a text, in ingestion order (a document's propositions carry its text's hash).

        Args:
            content_hash: The text's :func:`~selfcrag.index.records.content_hash`.
        """
        rows = self._rows("SELECT doc_id FROM documents WHERE content_hash = ? ORDER BY seq", (content_hash,))
        return [entry for (doc_id,) in rows if (entry := self.document(doc_id)) is not None]

    def document_count(self) -> int:
        """Number of documents."""
        return int(self._rows("SELECT count(*) FROM documents")[0][0])

    def totals(self) -> tuple[int, int]:
        """``(sentences, terms)`` over all documents."""
        sentences, terms = self._rows(
            "SELECT coalesce(sum(sentence_count), 0), coalesce(sum(terms), 0) FROM documents"
        )[0]
        return int(sentences), int(terms)

    def sample_positions(self, documents: int = 4) -> list[tuple[str, int]]:
        """``(doc_id, position)`` of the first and last sentence of the first and last few documents.

        What a quick check of the engine's data reads back (see :mod:`selfcrag.index.checks`).
        """
        rows = self._rows(
            "SELECT doc_id, sentence_count FROM (SELECT * FROM documents WHERE sentence_count > 0 "
            "ORDER BY seq LIMIT ?) UNION SELECT doc_id, sentence_count FROM (SELECT * FROM documents "
            "WHERE sentence_count > 0 ORDER BY seq DESC LIMIT ?)",
            (documents, documents),
        )
        return sorted({(doc_id, position) for doc_id, count in rows for position in (0, count - 1)})

    def put_document(self, entry: DocumentEntry, version: int = INDEXING_VERSION) -> None:
        """Add or replace a document, read, split and tokenised by ``version`` (see :meth:`indexing_version`)."""
        self.db.execute(
            "INSERT INTO documents(doc_id, source, title, content_hash, sentence_count, terms, seq) "
            "VALUES(?, ?, ?, ?, ?, ?, (SELECT coalesce(max(seq), 0) + 1 FROM documents)) "
            "ON CONFLICT(doc_id) DO UPDATE SET source = excluded.source, title = excluded.title, "
            "content_hash = excluded.content_hash, sentence_count = excluded.sentence_count, "
            "terms = excluded.terms",
            (entry.doc_id, entry.source, entry.title, entry.content_hash, entry.sentence_count, entry.terms),
        )
        self.db.execute(
            "INSERT INTO indexed_with(doc_id, version) VALUES(?, ?) "
            "ON CONFLICT(doc_id) DO UPDATE SET version = excluded.version",
            (entry.doc_id, version),
        )
        self.db.execute(
            "INSERT INTO languages(doc_id, language) VALUES(?, ?) "
            "ON CONFLICT(doc_id) DO UPDATE SET language = excluded.language",
            (entry.doc_id, entry.language),
        )

    def indexing_version(self, doc_id: str) -> int:
        """The :data:`INDEXING_VERSION` a document was indexed with (1 when it predates the record)."""
        if not self._versions_kept:
            return 1
        rows = self._rows("SELECT version FROM indexed_with WHERE doc_id = ?", (doc_id,))
        if rows and not isinstance(rows[0][0], int):
            raise self._damaged("is damaged (an indexed_with row holds a value selfcrag never writes)")
        return rows[0][0] if rows else 1

    def remove_document(self, doc_id: str) -> None:
        """Forget a document, and the files read as it."""
        self.db.execute("DELETE FROM documents WHERE doc_id = ?", (doc_id,))
        self.db.execute("DELETE FROM indexed_with WHERE doc_id = ?", (doc_id,))
        self.db.execute("DELETE FROM languages WHERE doc_id = ?", (doc_id,))
        self.db.execute("DELETE FROM files WHERE doc_id = ?", (doc_id,))

    # ------------------------------------------------------------------ files

    def files(self, doc_id: str | None = None) -> list[IndexedFile]:
        """The files the index holds, a document's first and its copies after it (all of them when None).

        Args:
            doc_id: Only the files read as this document.

        Returns:
            The files, by document (in ingestion order), then the copies by path; none in a manifest older than them.
        """
        if not self._files_kept:
            return []
        where = "WHERE f.doc_id = ?" if doc_id is not None else ""
        rows = self._rows(
            "SELECT f.source, f.doc_id, f.path, f.format, f.pages, f.size, f.indexed_at FROM files f "
            f"JOIN documents d ON d.doc_id = f.doc_id {where} ORDER BY d.seq, f.source != d.source, f.path",
            (doc_id,) if doc_id is not None else (),
        )
        return [IndexedFile(*row) for row in rows]

    def file(self, source: str) -> IndexedFile | None:
        """The file of a resolved path, or None."""
        if not self._files_kept:
            return None
        rows = self._rows(
            "SELECT source, doc_id, path, format, pages, size, indexed_at FROM files WHERE source = ?", (source,)
        )
        return IndexedFile(*rows[0]) if rows else None

    def put_file(self, file: IndexedFile) -> None:
        """Record a file (replacing what was recorded of it)."""
        self.db.execute(
            "INSERT OR REPLACE INTO files(source, doc_id, path, format, pages, size, indexed_at) "
            "VALUES(?, ?, ?, ?, ?, ?, ?)",
            (file.source, file.doc_id, file.path, file.format, file.pages, file.size, file.indexed_at),
        )

    def forget_file(self, source: str) -> None:
        """Forget a file (a copy no longer indexed under its document)."""
        self.db.execute("DELETE FROM files WHERE source = ?", (source,))

    def move_files(self, doc_id: str, to: str) -> None:
        """Record the files read as one document as read as another (which took over its points)."""
        self.db.execute("UPDATE files SET doc_id = ? WHERE doc_id = ?", (to, doc_id))

    def _copies(self, doc_id: str | None = None) -> list[tuple[str, str]]:
        """``(doc_id, shown path)`` of the files identical to a document's, other than its own (of all documents)."""
        if not self._files_kept:
            return []
        where = "AND f.doc_id = ?" if doc_id is not None else ""
        return self._rows(
            "SELECT f.doc_id, f.path FROM files f JOIN documents d ON d.doc_id = f.doc_id "
            f"WHERE f.source != d.source {where} ORDER BY f.path",
            (doc_id,) if doc_id is not None else (),
        )

    # ------------------------------------------------------------------ skipped files

    def skipped(self) -> list[tuple[str, str]]:
        """``(path, reason)`` of the files the last ingests skipped, by path (none in a manifest older than that)."""
        if not self._skips_kept:
            return []
        return self._rows("SELECT path, reason FROM skipped ORDER BY path")

    def set_skipped(self, skipped: Iterable[tuple[str, str]]) -> None:
        """Record ``(path, reason)`` of the files skipped, in place of what was recorded."""
        self.db.execute("DELETE FROM skipped")
        self.db.executemany("INSERT OR REPLACE INTO skipped(path, reason) VALUES(?, ?)", list(skipped))

    # ------------------------------------------------------------------ term statistics

    def add_document_frequencies(self, counts: Mapping[int, int], sign: int = 1) -> None:
        """Add (or, with ``sign=-1``, subtract) sentence counts per term id."""
        self.db.executemany(
            "INSERT INTO term_df(term, df) VALUES(?, ?) ON CONFLICT(term) DO UPDATE SET df = df + excluded.df",
            [(term, sign * n) for term, n in counts.items()],
        )

    def document_frequency(self, term: str) -> int:
        """In how many sentences a term occurs."""
        rows = self._rows("SELECT df FROM term_df WHERE term = ?", (term_id(term),))
        if rows and not isinstance(rows[0][0], int):
            raise self._damaged("is damaged (a term_df row holds a value selfcrag never writes)")
        return rows[0][0] if rows else 0

    def idf(self, terms: Iterable[str]) -> dict[str, float]:
        """Lucene's IDF of terms, ``log(1 + (N - n + 0.5) / (n + 0.5))``; unseen terms get n = 1."""
        points = self.meta("points")
        size = max(int(points) if points is not None else self.totals()[0], 1)
        result = {}
        for term in terms:
            n = self.document_frequency(term) or 1
            result[term] = math.log1p((size - n + 0.5) / (n + 0.5))
        return result

    # ------------------------------------------------------------------ transactions

    def begin(self) -> None:
        """Start a transaction (many small writes, one commit)."""
        self.db.execute("BEGIN")

    def commit(self) -> None:
        """Commit the open transaction."""
        self.db.execute("COMMIT")

    def close(self) -> None:
        """Close the database."""
        self.db.close()


def _entry(row: tuple, also: Iterable[str]) -> DocumentEntry:
    """A document from its row of the documents table, with the paths of its copies."""
    doc_id, source, title, content_hash, sentence_count, terms, language = row
    return DocumentEntry(doc_id, source, title, content_hash, sentence_count, terms, tuple(also), language)


def at_or_under(path: str, folder: str) -> bool:
    """Whether a path is ``folder`` itself or lies inside it (both absolute, compared as written).

    Args:
        path: A file's path.
        folder: A file or folder named by the user.
    """
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _parses(value: str, kind: type) -> bool:
    """Whether a metadata value reads as a finite, non-negative number of its kind."""
    try:
        number = kind(value)
    except ValueError:
        return False
    return math.isfinite(number) and number >= 0
