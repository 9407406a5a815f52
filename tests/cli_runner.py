"""Run the real ``selfcrag`` command as a subprocess, pointed at a loopback chat server or at none."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path


def selfcrag(
    *args: str | Path,
    cwd: Path,
    url: str | None = None,
    stdin: str | None = None,
    key: str = "test-key",
    prefix: Sequence[str] = (),
    **env: str,
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m selfcrag.cli ARGS`` in ``cwd`` (a folder without a .env); the chat model is ``url``'s, if any.

    ``prefix`` runs it under another command (``setpriv ...``).
    """
    environment = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    if url is not None:
        environment.update(OPENAI_BASE_URL=url, OPENAI_API_KEY=key)
    environment.update(env)
    return subprocess.run(
        [*prefix, sys.executable, "-m", "selfcrag.cli", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env=environment,
        input=stdin,
    )
