"""The knowledge index: every sentence a Qdrant point, with a dense vector and a BM25 sparse vector.

The vectors come from :mod:`selfcrag.embed`; this package holds the engine's side:

* :mod:`selfcrag.index.tokenize`: language-aware tokens (jieba for Chinese, stemmed English);
* :mod:`selfcrag.index.sparse`: BM25 as sparse vectors with stable term ids (the engine applies IDF);
* :mod:`selfcrag.index.bm25`: BM25 scored in memory with rank-bm25's statistics (the reference);
* :mod:`selfcrag.index.points`: the point schema (ids computed from document and position, payload);
* :mod:`selfcrag.index.store`: Qdrant Edge in-process, or a Qdrant server through qdrant-client;
* :mod:`selfcrag.index.manifest`: the documents and term statistics beside Qdrant, in SQLite;
* :mod:`selfcrag.index.generations`: immutable generations behind a pointer, for many processes;
* :mod:`selfcrag.index.ingest`: files into a new generation, through the stages of :mod:`selfcrag.index.pipeline`:
  files -> documents (:mod:`selfcrag.index.documents`) -> vectors -> points (:mod:`selfcrag.index.writer`);
* :mod:`selfcrag.index.reader`, :mod:`selfcrag.index.engine`: opening the current one for search;
* :mod:`selfcrag.index.lc`: the collection as a LangChain hybrid vector store.
"""
