"""What each chat endpoint was found to refuse, remembered in the data folder.

A server that refuses a way of asking for structured replies (JSON schema,
function calling, JSON mode) refuses it every time. Once a step has found
that out, the refusal is written to ``<data dir>/chat_endpoints.json``, keyed
by endpoint and model, and later questions (in any process) skip that way at
once. ``selfcrag model check`` probes every way and writes the record afresh;
deleting the file forgets everything.

The file is a cache, never a requirement: one that cannot be read or written
(no data folder yet, a read-only disk, damaged JSON) is treated as empty, and
only the method names selfcrag knows are read from it.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

FILE_NAME = "chat_endpoints.json"
# Longest reason kept per refusal.
_REASON_CHARS = 300


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
        entry = self._read().get(endpoint)
        refusals = entry.get("refused") if isinstance(entry, dict) else None
        if not isinstance(refusals, dict):
            return {}
        return {m: str(r)[:_REASON_CHARS] for m, r in refusals.items() if m in self._known}

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
            record = self._read()
            record[endpoint] = {"refused": change(self.refused(endpoint))}
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

    def _read(self) -> dict[str, Any]:
        try:
            record = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return record if isinstance(record, dict) else {}
