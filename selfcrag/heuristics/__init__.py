"""The LLM-free twins of the workflow's nodes: the index's signals and the offline embedder, no chat model.

They decide alone when no chat model is configured, and stand in for one when it fails.

* :mod:`selfcrag.heuristics.signals`: question words, IDFs, expected answer types;
* :mod:`selfcrag.heuristics.strips`: passages decomposed into sentences (knowledge strips);
* :mod:`selfcrag.heuristics.evaluator`: CRAG's retrieval evaluator, for passages and strips;
* :mod:`selfcrag.heuristics.rewriter`: keyword and pseudo-relevance-feedback query rewriting;
* :mod:`selfcrag.heuristics.answerer`: the extractive, cited answer;
* :mod:`selfcrag.heuristics.support`: the support check of answer sentences against their sources;
* :mod:`selfcrag.heuristics.decider`: the rules for messages that need no retrieval;
* :mod:`selfcrag.heuristics.conversation`: questions about the conversation itself, answered from its record.
"""
