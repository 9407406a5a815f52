"""Route trace: each node records one step in the state and streams it as a custom event."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from graph.state import TraceStep


def record(runtime: Runtime[Any], step: str, decision: str, **details: Any) -> list[TraceStep]:
    """Emit a trace step on the ``custom`` stream and return it for the state's trace.

    Args:
        runtime: The node's runtime (its ``stream_writer`` feeds ``stream_mode="custom"``).
        step: The node's name.
        decision: What the node decided, in a word or two.
        **details: Scores, counters, queries, fallbacks: anything JSON-ready.

    Returns:
        A one-element list to return as the node's ``trace`` update.
    """
    event: TraceStep = {"step": step, "decision": decision, **details}
    runtime.stream_writer({"type": "trace", **event})
    return [event]
