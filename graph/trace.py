"""Route trace: each node records one step in the state and streams it as a custom event.

Steps are written to the state, the checkpointer and ``--json`` output, so
credentials are scrubbed from them on the way in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langgraph.runtime import Runtime

from selfcrag.graph.state import TraceStep
from selfcrag.llm.secrets import redact_all


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
    # Whatever a node puts in its step (an error text quoting the request, a query the model wrote), no
    # credential gets in: neither the configured keys nor anything shaped like one.
    event: TraceStep = {"step": step, "decision": decision, **redact_all(details)}
    runtime.stream_writer({"type": "trace", **event})
    return [event]


def retract(runtime: Runtime[Any], step: str, reason: str) -> None:
    """Withdraw the tokens a step has streamed so far: they are not the answer, which comes after them.

    A reply failed (another attempt or the offline answer follows), or the support check rejected the draft or
    cut it to its supported sentences (the final answer holds them).

    ``stream_ask`` turns the event into ``("retract", {"step", "reason"})``;
    a display drops the text of the step it has shown.

    Args:
        runtime: The node's runtime.
        step: The node's name.
        reason: Why, in one line (no secrets: see :func:`models.describe_failure`).
    """
    runtime.stream_writer({"type": "retract", "step": step, "reason": reason})


def retracting(runtime: Runtime[Any], step: str, failures: list[str]) -> Callable[[str], None]:
    """Make the ``on_retry`` of a step whose tokens stream: note why an attempt failed, and retract its tokens.

    Args:
        runtime: The node's runtime.
        step: The node's name.
        failures: Where the reasons are appended (for the trace's ``retries``).

    Returns:
        The callback.
    """

    def failed(reason: str) -> None:
        failures.append(reason)
        retract(runtime, step, reason)

    return failed
