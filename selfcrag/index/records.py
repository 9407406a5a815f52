"""Stable ids of documents and of their versions."""

from __future__ import annotations

import hashlib


def document_id(source: str) -> str:
    """Derive the stable id of a document from its resolved path.

    Args:
        source: Absolute path of the file.

    Returns:
        16 hex digits of the path's SHA-1.
    """
    return hashlib.sha1(source.encode("utf-8")).hexdigest()[:16]


def content_hash(text: str) -> str:
    """Hash a document's text.

    Args:
        text: The decoded text.

    Returns:
        The SHA-256 hex digest.
    """
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
