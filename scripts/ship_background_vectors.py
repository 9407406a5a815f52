"""Make the background vectors shipped with the package for the default embedder (selfcrag/heuristics/vectors/).

Run after the default embedder's version changes (tests/test_background_vectors.py says when):

    .venv/bin/python scripts/ship_background_vectors.py

It embeds the evaluator's background sentences of every language with the default embedder, writes one NumPy
array per language named by the digest :func:`~selfcrag.heuristics.background.background_cache_file` gives, and
removes the arrays of other versions.
"""

from __future__ import annotations

from selfcrag.graph.context import Context
from selfcrag.heuristics.background import (
    BACKGROUND_SENTENCES,
    SHIPPED_DIR,
    background_cache_file,
    background_vectors,
    write_vectors,
)
from selfcrag.index.embed import load_embedder


def main() -> None:
    """Write the current vectors and drop stale ones."""
    embedder = load_embedder(Context().embedding_model)  # the default, not what the environment sets
    current = set()
    for language, sentences in sorted(BACKGROUND_SENTENCES.items()):
        path = background_cache_file(SHIPPED_DIR, embedder, sentences)
        write_vectors(path, background_vectors(embedder, sentences))
        current.add(path)
        print(f"{language}: {path.relative_to(SHIPPED_DIR.parent.parent.parent)} ({embedder.name} {embedder.version})")
    for stale in set(SHIPPED_DIR.glob("background-*.npy")) - current:
        stale.unlink()
        print(f"removed {stale.name}")


if __name__ == "__main__":
    main()
