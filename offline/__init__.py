"""The offline workflow steps: no chat model, only the index's signals and the offline embedder.

* :mod:`offline.signals`: question words, IDFs, expected answer types;
* :mod:`offline.strips`: passages decomposed into sentences (knowledge strips);
* :mod:`offline.evaluator`: CRAG's retrieval evaluator, for passages and strips;
* :mod:`offline.rewriter`: keyword and pseudo-relevance-feedback query rewriting;
* :mod:`offline.answerer`: the extractive, cited answer;
* :mod:`offline.support`: the support check of answer sentences against their sources;
* :mod:`offline.decider`: the rules for messages that need no retrieval.
"""
