"""The self-correcting workflow: LangGraph state, context and wiring (installed as ``selfcrag.graph``).

``selfcrag.graph.builder.graph`` is the compiled graph that ``langgraph dev``
loads; ``selfcrag.graph.api`` runs it (``from selfcrag import ask``).
"""
