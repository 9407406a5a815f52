"""What each chat endpoint was found to refuse, remembered in the data folder.

A server that refuses a way of asking for structured replies (JSON schema,
function calling, JSON mode) refuses it every time. Once a step has found
that out, the refusal is written to ``<data dir>/chat_endpoints.json``, keyed
by endpoint and model, and later questions (in any process) skip that way at
once. ``selfcrag model check`` probes every way and writes the record afresh;
deleting the file forgets everything.

The file is a cache, never a requirement: one that cannot be read or written
(no data folder yet, a read-only disk, damaged JSON) is treated as empty, and
only the method names selfcrag knows are read from it. A data folder is
untrusted input, so the file is read with care: whatever stands at its name
(JSON nested past Python's recursion limit, values of other shapes, a huge
file, bytes that are not UTF-8, a folder, a symbolic link or a pipe) is
ignored, and the next write replaces it (except a folder) without following a
link, through a new file in the data folder renamed over it.
"""

from __future__ import annotations

import json
import logging
import os
import stat
import tempfile
import threading
from collections.abc import Callable, Mapping
from pathlib import Path

log = logging.getLogger(__name__)

FILE_NAME = "chat_endpoints.json"
# Longest reason kept per refusal.
_REASON_CHARS = 300
# A record holds a few lines per endpoint: a larger file is not one selfcrag wrote, and is not read.
_MAX_FILE_BYTES = 1 << 20


class EndpointMemory:
    """The refusals of each chat endpoint, in one JSON file.

    Args:
        path: The file (``<data dir>/chat_endpoints.json``).
        known: The method names that may be read from it.
    """

    def __init__(self, path: Path, known: tuple[str, ...]) -> None:
        self.path = path
        self._known = known
        self._lock = threading.Lock()

    def refused(self, endpoint: str) -> dict[str, str]:
        """The ways of asking an endpoint refused, and why.

        Args:
            endpoint: ``"<base URL> <model>"`` (see :func:`selfcrag.llm.chat.endpoint_of`).

        Returns:
            Method name to the server's reason, in one line each.
        """
        return dict(self._read().get(endpoint, {}))

    def remember(self, endpoint: str, method: str, reason: str) -> bool:
        """Add a refusal to what is known of an endpoint.

        Args:
            endpoint: The endpoint and model.
            method: The method it refused.
            reason: Why, in one line.

        Returns:
            True when it was written (the data folder exists and is writable).
        """
        return self._update(endpoint, lambda refusals: {**refusals, method: reason[:_REASON_CHARS]})

    def replace(self, endpoint: str, refusals: Mapping[str, str]) -> bool:
        """Write what is known of an endpoint afresh (after probing every method).

        Args:
            endpoint: The endpoint and model.
            refusals: Every method it refuses, and why.

        Returns:
            True when it was written.
        """
        return self._update(endpoint, lambda _: {m: r[:_REASON_CHARS] for m, r in refusals.items()})

    def _update(self, endpoint: str, change: Callable[[dict[str, str]], dict[str, str]]) -> bool:
        if not self.path.parent.is_dir():
            return False  # nothing is ingested here yet: no folder is made just for this
        with self._lock:
            # Read again under the lock: another process may have written since.
            refusals = self._read()
            refusals[endpoint] = change(refusals.get(endpoint, {}))
            # Only what was read back as selfcrag writes it is written again: nothing else of a damaged file.
            record = {name: {"refused": methods} for name, methods in refusals.items()}
            written: str | None = None
            try:
                with tempfile.NamedTemporaryFile(
                    "w", encoding="utf-8", dir=self.path.parent, prefix=".chat_endpoints.", delete=False
                ) as file:
                    written = file.name
                    json.dump(record, file, indent=2, ensure_ascii=False, sort_keys=True)
                os.replace(written, self.path)
            except OSError as error:
                if written is not None:
                    Path(written).unlink(missing_ok=True)
                log.info("could not remember what %s refuses in %s: %s", endpoint, self.path, error)
                return False
        return True

    def _read(self) -> dict[str, dict[str, str]]:
        """Each endpoint's refusals as the file holds them, keeping only what has the shape selfcrag writes."""
        try:
            # Never through a link, nor blocking on a pipe: only a regular file of a sane size is read.
            descriptor = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            return {}
        data = b""
        try:
            if not stat.S_ISREG(os.fstat(descriptor).st_mode):
                return {}
            while len(data) <= _MAX_FILE_BYTES and (piece := os.read(descriptor, _MAX_FILE_BYTES + 1 - len(data))):
                data += piece
        except OSError:
            return {}
        finally:
            os.close(descriptor)
        if len(data) > _MAX_FILE_BYTES:
            return {}
        try:
            record = json.loads(data.decode("utf-8"))
        except (ValueError, RecursionError):  # not UTF-8, not JSON, or nested deeper than the parser goes
            return {}
        if not isinstance(record, dict):
            return {}
        found: dict[str, dict[str, str]] = {}
        for endpoint, entry in record.items():
            refusals = entry.get("refused") if isinstance(entry, dict) else None
            if isinstance(refusals, dict):
                # Only the methods selfcrag knows, each with its reason in one bounded line.
                found[endpoint] = {
                    m: r[:_REASON_CHARS] for m, r in refusals.items() if m in self._known and isinstance(r, str)
                }
        return found
