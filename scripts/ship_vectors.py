"""Make the vectors shipped with the package for the default embedder (selfcrag/embed/vectors/).

Run after the default embedder's version, the sample knowledge base or the sentence splitter changes
(tests/test_background_vectors.py and tests/test_sample_vectors.py say when):

    .venv/bin/python scripts/ship_vectors.py

It embeds, with the default embedder:

* the evaluator's background sentences of every language: one NumPy array per language, named by the digest
  :func:`~selfcrag.heuristics.background.background_cache_file` gives;
* every sentence of the bundled sample knowledge base, as an ingest embeds it: one ``.npz`` of the texts and
  their vectors (:func:`~selfcrag.embed.remembered.sample_vectors_file`);

and removes the files of other versions.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence

import numpy as np

from selfcrag.embed.embedders import Embedder, WrappedEmbedder, load_embedder
from selfcrag.embed.remembered import SHIPPED_DIR, sample_vectors_file, write_sample_vectors, write_vectors
from selfcrag.files.sample import sample_kb
from selfcrag.graph.context import Context
from selfcrag.heuristics.background import BACKGROUND_SENTENCES, background_cache_file, background_vectors
from selfcrag.ingest.run import ingest


class Recording(WrappedEmbedder):
    """The embedder, keeping every passage it embeds and its vector."""

    def __init__(self, embedder: Embedder) -> None:
        super().__init__(embedder)
        self.texts: list[str] = []
        self.vectors: list[np.ndarray] = []

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:  # noqa: D102
        vectors = self.embedder.embed_passages(texts)
        self.texts.extend(texts)
        self.vectors.append(vectors)
        return vectors


def main() -> None:
    """Write the current vectors and drop stale ones."""
    context = Context()  # the default embedder, not what the environment sets
    embedder = load_embedder(context.embedding_model)
    current = set()
    for language, sentences in sorted(BACKGROUND_SENTENCES.items()):
        path = background_cache_file(SHIPPED_DIR, embedder, sentences)
        write_vectors(path, background_vectors(embedder, sentences))
        current.add(path)
        print(f"{language}: {path.name} ({embedder.name} {embedder.version})")

    recording = Recording(embedder)
    with tempfile.TemporaryDirectory() as tmp:
        ingest([sample_kb()], Context(data_dir=tmp).settings(), embedder=recording)
    path = sample_vectors_file(embedder)
    write_sample_vectors(path, recording.texts, np.concatenate(recording.vectors))
    current.add(path)
    print(f"sample_kb: {path.name}, {len(recording.texts)} sentences ({embedder.name} {embedder.version})")

    for stale in {*SHIPPED_DIR.glob("background-*.npy"), *SHIPPED_DIR.glob("sample-*.npz")} - current:
        stale.unlink()
        print(f"removed {stale.name}")


if __name__ == "__main__":
    main()
