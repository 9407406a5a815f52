"""What a conversation's checkpoints may hold when they are read back: the types selfcrag writes, nothing else.

A checkpoint store lives in the data directory (``conversations.sqlite``), and
a data directory is untrusted input: someone else's folder, a download, a
shared drive. LangGraph's serializer, in its default, revives any
``(module, name, args)`` it finds by importing the module and calling the name,
so a planted row holding ``("os", "system", [cmd])`` runs ``cmd``. This
serializer writes as LangGraph's does (msgpack) but reads only the message
types the workflow writes, built from the classes themselves, never
from a module name in the file. Anything else, and any other payload kind
(JSON revival, pickle), is refused with one line naming the file's problem.
"""

from __future__ import annotations

from typing import Any

import ormsgpack
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.types import Overwrite

from selfcrag.errors import UserError

# The msgpack extension codes LangGraph writes objects under: (module, name, keyword arguments[, method]).
_KEYWORD_CONSTRUCTOR, _PYDANTIC_MODEL = 2, 5

# Every type the workflow's checkpoints hold, by the extension and the name it is written under: the conversation's
# messages (graph.state) and the Overwrite a node resets a reduced field with (its pending write). A new type in the
# state must be added here, or its conversations cannot be read back.
WRITTEN_TYPES: dict[tuple[int, str, str], type[BaseMessage] | type[Overwrite]] = {
    (_PYDANTIC_MODEL, "langchain_core.messages.human", "HumanMessage"): HumanMessage,
    (_PYDANTIC_MODEL, "langchain_core.messages.ai", "AIMessage"): AIMessage,
    (_KEYWORD_CONSTRUCTOR, "langgraph.types", "Overwrite"): Overwrite,
}


class UnreadableConversationError(UserError):
    """A stored conversation holds something selfcrag never writes, or is damaged; nothing of it was run."""


class CheckpointSerializer(JsonPlusSerializer):
    """LangGraph's checkpoint serializer, reading back only what selfcrag writes."""

    def __init__(self) -> None:
        super().__init__(pickle_fallback=False, allowed_msgpack_modules=None)

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        """Read one stored value, refusing any type or payload kind the workflow does not write.

        Args:
            data: The payload kind (``msgpack``, ``null`` ...) and its bytes, as the checkpointer stored them.

        Returns:
            The value, with its messages rebuilt from the allowed classes.

        Raises:
            UnreadableConversationError: The value names another type or kind, or does not decode.
        """
        kind, payload = data
        if kind == "null":
            return None
        if kind != "msgpack":
            raise UnreadableConversationError(_refusal(f"holds a {kind!r} value, which selfcrag never writes"))
        refused: list[str] = []

        def revive(code: int, body: bytes) -> Any:
            # ormsgpack turns an exception raised here into a bare "ext_hook failed": the refusal is noted instead.
            parts = ormsgpack.unpackb(body, ext_hook=revive, option=ormsgpack.OPT_NON_STR_KEYS)
            named = isinstance(parts, list | tuple) and len(parts) >= 3
            written_type = WRITTEN_TYPES.get((code, str(parts[0]), str(parts[1]))) if named else None
            if written_type is None or not isinstance(parts[2], dict):
                refused.append(f"{parts[0]}.{parts[1]}" if named else f"msgpack extension {code}")
                return None
            return written_type(**parts[2])

        try:
            value = ormsgpack.unpackb(payload, ext_hook=revive, option=ormsgpack.OPT_NON_STR_KEYS)
        except (ValueError, TypeError) as error:  # MsgpackDecodeError is a ValueError; bad message fields too
            problem = f"holds {refused[0]}, which selfcrag never writes" if refused else f"is damaged ({error})"
            raise UnreadableConversationError(_refusal(problem)) from None
        if refused:
            raise UnreadableConversationError(_refusal(f"holds {refused[0]}, which selfcrag never writes"))
        return value


def _refusal(problem: str) -> str:
    """The one line a refused checkpoint is reported with."""
    return (
        f"a saved conversation {problem}; nothing of it was loaded. "
        "Move conversations.sqlite out of the data directory to start afresh"
    )
