"""How much of a conversation a thread keeps: its latest turns, a window of ``history_turns``.

Without a bound, each turn's checkpoint holds every message of the thread, so
a 280-turn chat stored 145 KB per checkpoint (21.9 MB in all) and turns grew
slower as it went on. At the start of each turn ``decide_retrieval`` forgets
the turns before the window (``RemoveMessage``), so what the workflow sees,
and what a checkpointer stores, stays the same size.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AnyMessage, HumanMessage, RemoveMessage


def forget_old_turns(history: Sequence[AnyMessage], keep_turns: int) -> list[RemoveMessage]:
    """Remove the messages of the turns before the latest ``keep_turns``.

    A turn starts at a human message; the messages before the first kept
    turn's question are removed.

    Args:
        history: The conversation before this turn's question.
        keep_turns: Earlier turns to keep (0 keeps none).

    Returns:
        One ``RemoveMessage`` per forgotten message, oldest first (none when the history fits).
    """
    starts = [i for i, message in enumerate(history) if isinstance(message, HumanMessage)]
    if len(starts) <= keep_turns:
        return []
    cut = starts[len(starts) - keep_turns] if keep_turns > 0 else len(history)
    return [RemoveMessage(id=message.id) for message in history[:cut] if message.id]
