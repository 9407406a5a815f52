"""The ingest: files in, points out, through the index engine; one module a stage, in the order data flows.

* :mod:`selfcrag.ingest.finding`: the files and folders named walked (links and skips), sizes and shown paths;
* :mod:`selfcrag.ingest.documents`: each file read and decoded by its format's reader (:mod:`selfcrag.files`);
* :mod:`selfcrag.ingest.sentences`: documents split into sentences (:mod:`selfcrag.split`), placed
  (:mod:`selfcrag.ingest.places`) and tokenised;
* :mod:`selfcrag.ingest.vectors`: sentences embedded (:mod:`selfcrag.embed`), each vector kept as computed;
* :mod:`selfcrag.ingest.points`: points measured for semantic boundaries, written and published through
  :mod:`selfcrag.index.writer`;
* :mod:`selfcrag.ingest.propositions`: with a chat model, statements drawn from passages, one more document each;
* :mod:`selfcrag.ingest.progress`, :mod:`selfcrag.ingest.threads`: progress, and the reading thread;
* :mod:`selfcrag.ingest.run`: :func:`~selfcrag.ingest.run.ingest` runs them, and
  :func:`~selfcrag.ingest.run.remove` takes files out.
"""
