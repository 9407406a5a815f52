"""The knowledge index: sentences embedded, tokenised for BM25, and stored in Qdrant.

* :mod:`selfcrag.index.tokenize`: language-aware tokens (jieba for Chinese, stemmed English);
* :mod:`selfcrag.index.bm25`: BM25 scoring of sentences;
* :mod:`selfcrag.index.embed`: sentence embedders (offline wheels, or an OpenAI-compatible endpoint);
* :mod:`selfcrag.index.records`, :mod:`selfcrag.index.snapshot`, :mod:`selfcrag.index.vectors`: what is stored;
* :mod:`selfcrag.index.ingest`: files to a committed index.
"""
