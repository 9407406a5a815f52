"""Read each document in a worker process, so that a reader that blows up loses its worker, not the ingest.

The readers bound what they make by the document's budget
(:class:`~selfcrag.files.containers.ReadingBudget`); this bounds what no budget foresees: a
library that needs far more memory than the text it gives (python-docx builds some 400 bytes
for each XML element), or a file that takes a reader forever. Apache Tika reads in a forked
process for the same reason.

:func:`read_document` sends the file to a worker process (``python -m selfcrag.files.worker``, a
fresh interpreter: the process that asks holds threads, onnxruntime and Qdrant, which a fork
would copy), which reads it with :func:`selfcrag.files.loaders.read_document` and sends back what
it read. While it reads, its resident memory is looked at every :data:`_POLL_SECONDS`; once it
holds more than :data:`DEFAULT_READ_MEMORY_MB` (``SELFCRAG_READ_MEMORY_MB``) more than when it
was idle, or the file has taken :data:`DEFAULT_READ_SECONDS` (``SELFCRAG_READ_SECONDS``), the
worker is killed and the file skipped with that reason; the next file gets a new worker. The
worker also limits its own address space (a single allocation of gigabytes fails at once, as a
:class:`MemoryError`, which skips the file too) and its CPU time per file, and ends itself when
the process that started it is gone, so that no worker outlives its ingest (Ctrl-C, a kill).

A worker is started at the first file read and kept for the next (its start, some 0.15 s, is paid
once; each file then costs a round trip through a pipe, some 0.3 ms). Idle workers wait in a pool, each used by
one thread at a time; one left idle for :data:`_IDLE_SECONDS` ends itself, and every worker is
ended when the process exits. Requests and results cross the pipes as JSON (:func:`_encoded`,
:func:`_decoded`): nothing is unpickled, not even what this package's own child sends, which has just
read a hostile file.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import subprocess
import sys
import threading
import time
import traceback
from dataclasses import asdict, dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from selfcrag.errors import SettingError
from selfcrag.files.pdf import MAX_READ_SECONDS

if TYPE_CHECKING:
    from selfcrag.files.loaders import LoadedFile, SkippedFile

if sys.platform != "win32":  # no resource limits there: the parent's time limit still holds
    import resource

__all__ = [
    "DEFAULT_OCR_MEMORY_MB",
    "DEFAULT_READ_MEMORY_MB",
    "DEFAULT_READ_SECONDS",
    "OCR_MEMORY_MB_VARIABLE",
    "READ_MEMORY_MB_VARIABLE",
    "READ_SECONDS_VARIABLE",
    "ReadingLimits",
    "read_document",
]

READ_MEMORY_MB_VARIABLE = "SELFCRAG_READ_MEMORY_MB"
READ_SECONDS_VARIABLE = "SELFCRAG_READ_SECONDS"
OCR_MEMORY_MB_VARIABLE = "SELFCRAG_OCR_MEMORY_MB"

DEFAULT_READ_MEMORY_MB = 300
"""Megabytes a worker may hold beyond its idle size while it reads one file.

Measured, the largest honest files the readers admit need about half of it beyond the worker's
idle 30 MB: a 45 MB text file 165 MB, a 45 MB CSV file 125 MB, a 100,000-row workbook 135 MB, a
2,000-page PDF 80 MB (``scripts/bench-hostile-files --honest``). An ingest's usual peak is some
390 MB, the worker's idle size included.
"""

DEFAULT_OCR_MEMORY_MB = 1200
"""Megabytes a worker may hold beyond its idle size while it reads a file by OCR (from the moment OCR starts).

OCR's models need far more than the text they give: loaded, 105 MB; the detection model's run on a page,
300 to 500 MB more; a 36-million-pixel PNG, 110 MB decoded, reaches 1,100 MB in all (measured with
``/proc/self/status``' peak, 2026-12-06). The limit of other files is not raised for it: the worker says when it
starts OCR (a scanned page, a picture), and from then on this limit holds for that file.
"""

DEFAULT_READ_SECONDS = MAX_READ_SECONDS + 60
"""Seconds one file may take to read: a PDF's own bound says how many pages it read; this one also ends a page,
or any other reader, that never returns."""

_POLL_SECONDS = 0.02  # how often a reading worker's memory and time are looked at
_START_SECONDS = 120.0  # a worker that has not started after this long (imported its readers' loader) never will
_IDLE_SECONDS = 60.0  # a worker sent no file for this long ends itself
_ADDRESS_SPACE_FACTOR = 4  # the worker's address space may grow by this many times its memory limit
_MEGABYTE = 1024 * 1024
_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_IDLE_EXIT = 0  # the status a worker ends with when it is sent nothing more (idle, or its pipe closed)
_clock = time.monotonic  # what the seconds a file takes are measured by (a test gives its own)


@dataclass(frozen=True)
class ReadingLimits:
    """What reading one file in a worker may take.

    Attributes:
        memory_mb: Megabytes of resident memory beyond the worker's idle size.
        ocr_memory_mb: The same, for a file once the worker has started reading it by OCR.
        seconds: Seconds, from the file being sent to its text coming back.
    """

    memory_mb: int = DEFAULT_READ_MEMORY_MB
    ocr_memory_mb: int = DEFAULT_OCR_MEMORY_MB
    seconds: float = DEFAULT_READ_SECONDS

    @classmethod
    def from_environment(cls) -> ReadingLimits:
        """The limits ``SELFCRAG_READ_MEMORY_MB`` and ``SELFCRAG_READ_SECONDS`` set, else the defaults.

        Raises:
            SettingError: A variable is set to something other than a positive number.
        """
        memory = _positive(READ_MEMORY_MB_VARIABLE, "a whole number of megabytes", int)
        ocr_memory = _positive(OCR_MEMORY_MB_VARIABLE, "a whole number of megabytes", int)
        seconds = _positive(READ_SECONDS_VARIABLE, "a number of seconds", float)
        return cls(
            memory_mb=int(memory) if memory is not None else DEFAULT_READ_MEMORY_MB,
            ocr_memory_mb=int(ocr_memory) if ocr_memory is not None else DEFAULT_OCR_MEMORY_MB,
            seconds=seconds if seconds is not None else DEFAULT_READ_SECONDS,
        )


def read_document(path: Path, *, follow_links: bool = True) -> LoadedFile | SkippedFile:
    """Read one file as :func:`selfcrag.files.loaders.read_document` does, in a worker process within limits.

    Args:
        path: The file to read.
        follow_links: Follow links in its path (see :func:`selfcrag.files.loaders.read_document`).

    Returns:
        What the file read as, or why it was skipped: as the loader says, or ``needed more than 300 MB of
        memory to read`` / ``still being read after 660 s`` when the worker was ended for it.

    Raises:
        SettingError: ``SELFCRAG_READ_MEMORY_MB`` or ``SELFCRAG_READ_SECONDS`` is not a positive number.
        Exception: What reading raised in the worker (an error of ours, not of the file), raised again here.
    """
    limits = ReadingLimits.from_environment()
    while True:
        try:
            worker = _workers.take(limits)
        except OSError:  # no interpreter to start (an embedded Python): read here, within the budget alone
            from selfcrag.files.loaders import read_document as read_here

            return read_here(path, follow_links=follow_links)
        try:
            read = worker.read(Path(path), follow_links)
        finally:
            _workers.give_back(worker)
        if read is not None:
            return read


class _Worker:
    """One worker process, and the pipes to it; used by one thread at a time."""

    def __init__(self, limits: ReadingLimits) -> None:
        self.limits = limits
        self.memory_mb = limits.memory_mb  # the limit of the file being read (OCR's, once the worker says it OCRs)
        self.retired = False
        from_parent, to_worker = os.pipe()
        from_worker, to_parent = os.pipe()
        environment = dict(os.environ)
        # The worker imports this package from where this process did, installed or not.
        package_root = str(Path(__file__).resolve().parents[2])
        environment["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, environment.get("PYTHONPATH")]))
        try:
            self.process = subprocess.Popen(
                [
                    *(sys.executable, "-m", "selfcrag.files.worker"),
                    *(str(limits.memory_mb), str(limits.seconds), str(limits.ocr_memory_mb)),
                ],
                stdin=from_parent,
                stdout=to_parent,
                stderr=subprocess.DEVNULL,
                env=environment,
                # A group of its own: Ctrl-C at the terminal reaches the ingest, which ends the worker.
                process_group=0 if os.name == "posix" else None,
            )
        finally:
            os.close(from_parent)
            os.close(to_parent)
        self.requests = Connection(to_worker, readable=False)
        self.replies = Connection(from_worker, writable=False)
        _workers.started(self)
        self.idle_rss = 0
        ready = self._reply(_START_SECONDS)
        if ready != ("ready", None):
            self.stop()
            raise RuntimeError(f"the reading worker did not start: {ready!r}")
        self.idle_rss = self.rss() or 0

    def read(self, path: Path, follow_links: bool) -> LoadedFile | SkippedFile | None:
        """Have the worker read a file, within the limits; a worker ended for it is not used again.

        Returns:
            What it read, or why the file is skipped; None when the worker had ended itself, idle, as the file
            was sent (another reads it).
        """
        try:
            self.requests.send_bytes(_encoded([str(path), follow_links]))
        except OSError:  # it ended itself, idle, just now
            self.retired = True
            return None
        started = _clock()
        self.memory_mb = self.limits.memory_mb
        limit = self.idle_rss + self.memory_mb * _MEGABYTE
        while True:
            while not self.replies.poll(_POLL_SECONDS):
                rss = self.rss()
                if rss is not None and rss > limit:
                    return self._ended(path, self._memory_reason())
                if _clock() - started > self.limits.seconds:
                    return self._ended(path, f"still being read after {self.limits.seconds:,g} s")
            reply = self._reply(0)
            if reply is None or reply[0] != "ocr":
                break
            self.memory_mb = max(self.memory_mb, self.limits.ocr_memory_mb)  # it starts OCR: OCR's limit holds
            limit = self.idle_rss + self.memory_mb * _MEGABYTE
        if reply is None:  # it ended (or sent what is no reply, and is ended)
            self.retired = True
            try:
                status = self.process.wait(_POLL_SECONDS * 50)
            except subprocess.TimeoutExpired:
                status = None
            if status == _IDLE_EXIT:  # it ended itself, idle, as the file was sent
                return None
            ended = _exit_reason(status) if status is not None else "no reply"
            return self._ended(path, f"its reader crashed ({ended})")
        kind, value = reply
        if kind == "read":
            read, peak = _read_file(value["read"]), value["peak"]
            rss = self.rss()
            self.retired = rss is None or rss > self.idle_rss + self.limits.memory_mb * _MEGABYTE // 2
            if peak is not None and peak > limit:  # between two looks: the same file is skipped however fast it is
                self.retired = True
                return _skipped(path, self._memory_reason())
            return read
        if kind == "memory":
            self.retired = True
            return _skipped(path, self._memory_reason())
        self.retired = True
        error = RuntimeError(f"{value['error']}: {value['message']}")
        error.add_note(f"raised while the reading worker read {path}:\n{value['traceback']}")
        raise error

    def _memory_reason(self) -> str:
        return f"needed more than {self.memory_mb:,} MB of memory to read"

    def rss(self) -> int | None:
        """The worker's resident memory in bytes (None once it has ended, or where /proc does not tell)."""
        try:
            with open(f"/proc/{self.process.pid}/statm", "rb") as statm:
                return int(statm.read().split()[1]) * _PAGE_SIZE
        except (OSError, ValueError, IndexError):
            return None

    def alive(self) -> bool:
        """Whether the worker is still running."""
        return self.process.poll() is None

    def stop(self) -> None:
        """End the worker now, and wait for it."""
        for connection in (self.requests, self.replies):
            connection.close()
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        _workers.stopped(self)

    def _reply(self, seconds: float) -> tuple[str, Any] | None:
        """The worker's next message (waiting at most ``seconds``), or None when it has ended."""
        try:
            if self.replies.poll(seconds):
                message = _decoded(self.replies.recv_bytes())
                return str(message["kind"]), message.get("value")
        except (EOFError, OSError, ValueError, KeyError, TypeError):  # ended, or sent what is no message of ours
            return None
        return None

    def _ended(self, path: Path, reason: str) -> SkippedFile:
        """End the worker that was reading ``path``, and skip the file with ``reason``."""
        self.retired = True
        self.stop()
        return _skipped(path, reason)


class _Pool:
    """The workers of this process: those idle, for the next file, and every one running, to end at exit."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._running: set[_Worker] = set()

    def take(self, limits: ReadingLimits) -> _Worker:
        """An idle worker with these limits, else a new one (an idle one that has ended, or other limits, goes)."""
        found, gone = None, []
        with self._lock:
            while self._idle and found is None:
                worker = self._idle.pop()
                if worker.limits == limits and worker.alive():
                    found = worker
                else:
                    gone.append(worker)
        for worker in gone:
            worker.stop()
        return found or _Worker(limits)

    def give_back(self, worker: _Worker) -> None:
        """Keep a worker for the next file, unless it was ended or should be (its memory grew)."""
        if worker.retired or not worker.alive():
            worker.stop()
            return
        with self._lock:
            self._idle.append(worker)

    def started(self, worker: _Worker) -> None:
        with self._lock:
            self._running.add(worker)

    def stopped(self, worker: _Worker) -> None:
        with self._lock:
            self._running.discard(worker)

    def end_all(self) -> None:
        """End every worker, reading or idle (at exit: a thread still reading a file is not waited for)."""
        with self._lock:
            running, self._idle = list(self._running), []
        for worker in running:
            if worker.process.poll() is None:
                worker.process.kill()
            worker.process.wait()


_workers = _Pool()
atexit.register(_workers.end_all)


def _skipped(path: Path, reason: str) -> SkippedFile:
    """A file skipped for ``reason``, its path as the loader reports one: absolute, links kept."""
    from selfcrag.files.loaders import SkippedFile  # the loader is imported where it is used (see _serve)

    return SkippedFile(Path(os.path.abspath(Path(path).expanduser())), reason)


def _exit_reason(status: int) -> str:
    """How a process ended, in words: ``signal SIGSEGV`` or ``exit status 3``."""
    if status < 0:
        try:
            return f"signal {signal.Signals(-status).name}"
        except ValueError:
            return f"signal {-status}"
    return f"exit status {status}"


def _positive(variable: str, what: str, kind: type[int] | type[float]) -> float | None:
    """A positive number set in the environment (None when unset or empty)."""
    raw = os.environ.get(variable, "").strip()
    if not raw:
        return None
    try:
        value = kind(raw)
    except ValueError:
        value = 0
    if not value > 0:
        raise SettingError(f"{variable}={raw!r}: set it to {what} greater than 0")
    return value


# --------------------------------------------------------------------------- #
# the worker process
# --------------------------------------------------------------------------- #


def _serve(memory_mb: int, seconds: float, ocr_memory_mb: int = DEFAULT_OCR_MEMORY_MB) -> None:
    """Read the files the parent sends, one at a time, and send back each result, until idle or orphaned.

    Args:
        memory_mb: The parent's memory limit, from which the worker's address space limit is set.
        seconds: The parent's time limit per file, from which the worker's CPU time limit per file is set.
        ocr_memory_mb: The parent's memory limit for a file read by OCR, from which the address space limit is
            set again when OCR starts.
    """
    # Imported here, not above: the modules of selfcrag.files but the loader stand below it (the readers), and
    # this one is imported by the ingest without the loader's readers needing it.
    from selfcrag.files.loaders import read_document as read_here

    requests = Connection(0, writable=False)
    replies = Connection(os.dup(1), readable=False)
    os.dup2(2, 1)  # what a library prints goes where stderr goes, never into the replies
    parent = os.getppid()
    threading.Thread(target=_end_when_orphaned, args=(parent,), daemon=True, name="selfcrag-orphaned").start()
    _limit_address_space(memory_mb)
    replies.send_bytes(_encoded({"kind": "ready"}))
    from selfcrag.files import ocr

    def announce_ocr() -> None:  # OCR's own memory limit holds from then on, for this file
        replies.send_bytes(_encoded({"kind": "ocr"}))
        _limit_address_space(ocr_memory_mb)

    while True:
        try:
            if not requests.poll(_IDLE_SECONDS):
                return
            path, follow_links = _decoded(requests.recv_bytes())
        except (EOFError, OSError):
            return
        _limit_cpu(seconds)
        _forget_peak()
        try:
            ocr.announce = announce_ocr  # once per file: the first page read by OCR tells the parent
            read = read_here(Path(path), follow_links=follow_links)
            reply: dict[str, Any] = {"kind": "read", "value": {"read": _file_read(read), "peak": _peak()}}
        except MemoryError:
            reply = {"kind": "memory"}
        except Exception as error:  # an error of ours: raised again in the parent, with this traceback
            failure = {"error": type(error).__name__, "message": str(error), "traceback": traceback.format_exc()}
            reply = {"kind": "raised", "value": failure}
        try:
            replies.send_bytes(_encoded(reply))
        except MemoryError:
            replies.send_bytes(_encoded({"kind": "memory"}))
        if reply["kind"] != "read":
            return  # its memory may be in pieces: the parent starts a new worker


def _forget_peak() -> None:
    """Start counting the worker's peak resident memory again (Linux: ``/proc/self/clear_refs``), for one file."""
    try:
        with open("/proc/self/clear_refs", "wb") as clear:
            clear.write(b"5")
    except OSError:
        pass


def _peak() -> int | None:
    """The worker's peak resident memory since :func:`_forget_peak`, in bytes (None where /proc does not tell)."""
    try:
        with open("/proc/self/status", "rb") as status:
            for line in status:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _encoded(message: object) -> bytes:
    """A message as it crosses a pipe: JSON (ASCII, so a file name's undecodable bytes, lone surrogates, survive)."""
    return json.dumps(message, ensure_ascii=True).encode("ascii")


def _decoded(data: bytes) -> Any:
    """A message from a pipe: plain values only."""
    return json.loads(data.decode("ascii"))


def _file_read(read: LoadedFile | SkippedFile) -> dict[str, Any]:
    """What a reader made, as plain values."""
    from selfcrag.files.loaders import SkippedFile

    if isinstance(read, SkippedFile):
        return {"skipped": str(read.path), "reason": read.reason}
    return {
        "loaded": str(read.path),
        "text": read.text,
        "encoding": read.encoding,
        "places": [asdict(place) for place in read.places],
        "same_lines": read.same_lines,
    }


def _read_file(value: dict[str, Any]) -> LoadedFile | SkippedFile:
    """What a reader made, from its plain values (:func:`_file_read`)."""
    from selfcrag.files.loaders import LoadedFile, SkippedFile
    from selfcrag.files.places import Place

    if "skipped" in value:
        return SkippedFile(Path(value["skipped"]), str(value["reason"]))
    places = tuple(Place(**place) for place in value["places"])
    return LoadedFile(
        Path(value["loaded"]), str(value["text"]), str(value["encoding"]), places, bool(value["same_lines"])
    )


def _end_when_orphaned(parent: int) -> None:
    """End the worker once the process that started it is gone (killed, or ended without ending it)."""
    while os.getppid() == parent:
        time.sleep(1)
    os._exit(1)


def _limit_address_space(memory_mb: int) -> None:
    """Let the worker's address space grow by a few times its memory limit at most: a huge allocation fails."""
    if sys.platform == "win32":
        return
    try:
        with open("/proc/self/statm", "rb") as statm:
            size = int(statm.read().split()[0]) * _PAGE_SIZE
    except (OSError, ValueError, IndexError):
        return  # no /proc: the parent's time limit still holds
    limit = size + _ADDRESS_SPACE_FACTOR * memory_mb * _MEGABYTE
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard == resource.RLIM_INFINITY or hard > limit:
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _limit_cpu(seconds: float) -> None:
    """Let this file take at most a little more CPU time than the parent's limit (should the parent be gone)."""
    if sys.platform == "win32":
        return
    used = resource.getrusage(resource.RUSAGE_SELF)
    limit = int(used.ru_utime + used.ru_stime + seconds) + 5
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if hard == resource.RLIM_INFINITY or hard > limit:
        resource.setrlimit(resource.RLIMIT_CPU, (limit, hard))


if __name__ == "__main__":
    _serve(int(sys.argv[1]), float(sys.argv[2]), *map(int, sys.argv[3:4]))
