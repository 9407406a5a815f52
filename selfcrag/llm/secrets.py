"""Keeping credentials out of what the workflow records: traces, logs, error messages.

A server may echo the key it was sent in an error ("Incorrect API key
provided: sk-..."), and that text would reach the trace, the answer's notes,
the ``--json`` output and a checkpointer. Every failure description passes
through :func:`redact`, and every trace step through :func:`scrub`, on the
way in.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any

REDACTED = "(redacted)"

# Environment variables whose values are credentials: their names end like these.
_SECRET_NAME = re.compile(r"(?:API_?KEY|TOKEN|SECRET|PASSWORD)$", re.IGNORECASE)
# Values too short to be a real secret would redact ordinary words.
_MIN_SECRET_CHARS = 8
# Credentials recognisable by their shape: OpenAI-style keys and bearer tokens.
_SHAPES = re.compile(r"\bsk-[A-Za-z0-9_\-]{6,}|(?i:bearer)\s+[A-Za-z0-9._~+/=\-]{8,}")


def secret_values() -> list[str]:
    """The credentials set in the environment (``OPENAI_API_KEY``, ``QDRANT_API_KEY``, ...), longest first.

    Returns:
        Their values.
    """
    values = {
        value for name, value in os.environ.items() if _SECRET_NAME.search(name) and len(value) >= _MIN_SECRET_CHARS
    }
    return sorted(values, key=len, reverse=True)


def scrub(value: Any, secrets: Sequence[str] | None = None) -> Any:
    """Replace the environment's credentials in JSON-ready data (strings, lists, dicts), wherever they are.

    Only exact values are replaced (no key-shaped guesses), so ordinary text
    is never touched.

    Args:
        value: A string, number, list or dict.
        secrets: The credentials (default: :func:`secret_values`).

    Returns:
        The same data, credentials replaced by ``(redacted)``.
    """
    secrets = secret_values() if secrets is None else secrets
    if not secrets:
        return value
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, REDACTED)
        return value
    if isinstance(value, list | tuple):
        return type(value)(scrub(v, secrets) for v in value)
    if isinstance(value, dict):
        return {k: scrub(v, secrets) for k, v in value.items()}
    return value


def redact_all(value: Any) -> Any:
    """Redact credentials, by value and by shape, in JSON-ready data (strings, lists, dicts), wherever they are.

    Args:
        value: A string, number, list or dict: a trace step, a parsed reply.

    Returns:
        The same data, with :func:`redact` applied to every string.
    """
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list | tuple):
        return type(value)(redact_all(v) for v in value)
    if isinstance(value, dict):
        return {k: redact_all(v) for k, v in value.items()}
    return value


def redact(text: str) -> str:
    """Replace every credential in a text by ``(redacted)``.

    Args:
        text: A message that may quote a key (an error, a log line).

    Returns:
        The text without the environment's credentials or key-shaped strings.
    """
    return _SHAPES.sub(REDACTED, scrub(text))
