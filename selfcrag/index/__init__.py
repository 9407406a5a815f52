"""The index engine: every sentence a Qdrant point, with a dense vector and a BM25 sparse vector.

It takes points (sentences with their vectors and terms), never files or documents: the ingest, a room
above this one, reads, splits and embeds, and writes through :class:`~selfcrag.index.writer.IndexWriter`.

* :mod:`selfcrag.index.tokenize`: language-aware tokens (jieba for Chinese, stemmed English);
* :mod:`selfcrag.index.sparse`: BM25 as sparse vectors with stable term ids (the engine applies IDF);
* :mod:`selfcrag.index.bm25`: BM25 scored in memory with rank-bm25's statistics (the reference);
* :mod:`selfcrag.index.points`: the point schema (ids computed from document and position, payload);
* :mod:`selfcrag.index.records`: documents' ids and content hashes;
* :mod:`selfcrag.index.store`: Qdrant Edge in-process, or a Qdrant server through qdrant-client;
* :mod:`selfcrag.index.manifest`: the documents and term statistics beside Qdrant, in SQLite;
* :mod:`selfcrag.index.generations`: immutable generations behind a pointer, for many processes;
* :mod:`selfcrag.index.shard_files`, :mod:`selfcrag.index.page_cache`: a generation's shard files, shared and cached;
* :mod:`selfcrag.index.writer`: the next generation written, checked against its manifest and published;
* :mod:`selfcrag.index.reader`, :mod:`selfcrag.index.engine`: opening the current one for search (or writing);
* :mod:`selfcrag.index.checks`, :mod:`selfcrag.index.catalogue`: damage found, and what the index holds listed.
"""
