"""Is the engine's data the one the manifest describes? Checks run when an index is opened.

Damaged engine files do not always fail to load: a deleted ``version.info``
or id tracker loads as an empty segment, and an emptied store can load and
then panic on the first search. Each reader therefore compares the engine's
point count with the manifest and reads a few sentences back by their
computed ids; the writer also runs a dense and a sparse search with stored
vectors. Anything off is reported as what is wrong, in a few words.
"""

from __future__ import annotations

import math

from selfcrag.index.manifest import Manifest
from selfcrag.index.points import sentence_point_id
from selfcrag.index.store import SentenceStore


def find_damage(store: SentenceStore, manifest: Manifest, *, searches: bool = False) -> str | None:
    """What is wrong with the engine's data, judged against the manifest, or None when nothing shows.

    Args:
        store: The engine's data of a generation.
        manifest: The generation's manifest.
        searches: Also search with the stored vectors of a sentence (the writer, before it builds on the data).

    Raises:
        EngineError: The engine failed on its files while being checked.
    """
    expected = manifest.totals()[0]
    count = store.count()
    if count != expected:
        return f"it holds {count} sentences, the manifest {expected}"
    keys = manifest.sample_positions()
    ids = {sentence_point_id(doc_id, position): (doc_id, position) for doc_id, position in keys}
    found = store.retrieve(list(ids), dense=searches, sparse=searches)
    for point_id, (doc_id, position) in ids.items():
        point = found.get(point_id)
        if point is None:
            return f"sentence {position} of {doc_id} is missing"
        if (point.sentence.doc_id, point.sentence.position) != (doc_id, position):
            return f"sentence {position} of {doc_id} reads back as another one"
    if not searches or not found:
        return None
    point = next(iter(found.values()))
    if point.dense is None or not all(math.isfinite(x) for x in point.dense.tolist()):
        return "a stored vector is unreadable"
    lists = store.search(point.dense, point.sparse, candidates=10)
    # Any sentence's own vector is its own best match (a duplicate sentence ties with it).
    if not lists.dense or lists.dense[0][1] < 0.99:
        return "the dense index does not find a stored sentence"
    if point.sparse is not None and point.sparse.indices and not lists.sparse:
        return "the sparse index does not find a stored sentence"
    return None
