"""Reading a ``.env`` file, only the one the user names, once per process.

A ``.env`` in the current folder is never read by itself: a folder you do
not trust could otherwise point ``OPENAI_BASE_URL`` at its own server and
receive your exported ``OPENAI_API_KEY``. Name the file with ``--env-file``
or ``SELFCRAG_ENV_FILE`` (LangGraph Studio reads langgraph.json's ``env``).
Values already in the environment win over the file's.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from dotenv import dotenv_values

from selfcrag.errors import UserError

ENV_FILE_VARIABLE = "SELFCRAG_ENV_FILE"

_lock = threading.Lock()
_loaded: set[Path] = set()


def load_env_file(path: str | os.PathLike[str] | None = None) -> Path | None:
    """Load the named ``.env`` file into the environment, once per process.

    Args:
        path: The file; None means ``$SELFCRAG_ENV_FILE`` if set, else nothing.

    Returns:
        The file loaded (or loaded before), or None when none was named.

    Raises:
        UserError: The named file does not exist or cannot be read.
    """
    named = path or os.environ.get(ENV_FILE_VARIABLE) or None
    if named is None:
        return None
    file = Path(named).expanduser()
    with _lock:
        key = file.resolve()
        if key in _loaded:
            return file
        if not file.is_file():
            raise UserError(f"the env file {file} does not exist")
        try:
            values = dotenv_values(file)
        except (OSError, UnicodeDecodeError) as error:
            raise UserError(f"the env file {file} cannot be read ({type(error).__name__})") from None
        for name, value in values.items():
            if value is not None and not os.environ.get(name):
                os.environ[name] = value
        _loaded.add(key)
    return file
