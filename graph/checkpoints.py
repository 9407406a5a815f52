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

What decodes is then checked for the shape selfcrag writes before LangGraph or
the chat reads it (:class:`ConversationSaver`): the tables and the types of
their columns, each checkpoint's ids, versions and channels, each channel's
value against the state's types (:class:`selfcrag.graph.state.State`), and the
pending writes. A checkpoint id ``"x"``, ``messages = 5`` or a list where the
channels should be is "damaged" in the same one line, never a traceback from
deep inside LangGraph.
"""

from __future__ import annotations

import re
import sqlite3
import types
import typing
from collections.abc import Iterator, Mapping
from functools import cache
from typing import Annotated, Any, Literal, NotRequired, Required, TypedDict, Union

import ormsgpack
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Overwrite

from selfcrag.errors import UserError
from selfcrag.graph.state import State
from selfcrag.spans import Citation

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


class ConversationSaver(SqliteSaver):
    """LangGraph's SQLite checkpointer, handing back only conversations of the shape selfcrag writes.

    Every checkpoint read (``get_tuple``, ``list``, and so LangGraph's ``get_state`` and
    ``get_state_history``) is checked first; one of another shape raises
    :class:`UnreadableConversationError`, whose line says to move the file away.

    Args:
        connection: The open ``conversations.sqlite``.
    """

    def __init__(self, connection: sqlite3.Connection) -> None:
        super().__init__(connection, serde=CheckpointSerializer())

    def setup(self) -> None:
        """Create the tables if they are missing, and check the ones found are those LangGraph writes.

        Raises:
            UnreadableConversationError: A table lacks a column, or a column holds values of another type.
        """
        if self.is_setup:
            return
        super().setup()
        try:
            check_tables(self.conn, _CHECKPOINT_TABLES)
        except UnreadableConversationError:
            self.is_setup = False  # checked again, and refused again, on the next read
            raise

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint a config names (or its thread's latest), checked; see :class:`SqliteSaver`."""
        try:
            saved = super().get_tuple(config)
        except UserError:  # the serializer's own refusal, already one line
            raise
        except (ValueError, RecursionError) as error:  # metadata that is not JSON, or nested past the parser
            raise UnreadableConversationError(_refusal(f"is damaged ({_kind(error)} in its metadata)")) from None
        return check_saved(saved) if saved is not None else None

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,  # noqa: A002 (SqliteSaver's name)
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """The checkpoints a config names, newest first, each checked; see :class:`SqliteSaver`."""
        found = super().list(config, filter=filter, before=before, limit=limit)
        while True:
            try:
                saved = next(found)
            except StopIteration:
                return
            except UserError:
                raise
            except (ValueError, RecursionError) as error:
                raise UnreadableConversationError(_refusal(f"is damaged ({_kind(error)} in its metadata)")) from None
            yield check_saved(saved)


# The columns of LangGraph's tables that are read, and the SQLite types their values may have (SQLite keeps any
# value in any column): an integer where a text id should be, or text where an index should be, breaks the reads.
ColumnTypes = Mapping[str, Mapping[str, tuple[str, ...]]]
_CHECKPOINT_TABLES: ColumnTypes = {
    "checkpoints": {
        "thread_id": ("text",),
        "checkpoint_ns": ("text",),
        "checkpoint_id": ("text",),
        "parent_checkpoint_id": ("text", "null"),
        "type": ("text", "null"),
        "checkpoint": ("blob", "null"),
        "metadata": ("blob", "text", "null"),
    },
    "writes": {
        "thread_id": ("text",),
        "checkpoint_ns": ("text",),
        "checkpoint_id": ("text",),
        "task_id": ("text",),
        "task_path": ("text",),
        "idx": ("integer",),
        "channel": ("text",),
        "type": ("text", "null"),
        "value": ("blob", "null"),
    },
}


def check_tables(connection: sqlite3.Connection, tables: ColumnTypes) -> None:
    """Check that a conversation store's tables have the columns selfcrag reads, holding values of their types.

    Args:
        connection: The open store.
        tables: Each table's columns, and the SQLite types (``typeof``) their values may have.

    Raises:
        UnreadableConversationError: A table lacks a column, or a value is of another type.
    """
    for table, columns in tables.items():
        present = {row[1] for row in connection.execute(f"PRAGMA table_info({table})")}
        if not present >= columns.keys():
            raise UnreadableConversationError(_refusal(f"is damaged (its {table} table is not one selfcrag writes)"))
        odd = " OR ".join(
            f"typeof({column}) NOT IN ({', '.join(repr(kind) for kind in kinds)})" for column, kinds in columns.items()
        )
        if connection.execute(f"SELECT 1 FROM {table} WHERE {odd} LIMIT 1").fetchone() is not None:
            raise UnreadableConversationError(
                _refusal(f"is damaged (its {table} table holds values of types selfcrag never writes)")
            )


def check_saved(saved: CheckpointTuple) -> CheckpointTuple:
    """Check a checkpoint read back has the shape selfcrag writes.

    Args:
        saved: The checkpoint, its config, metadata and pending writes, as decoded.

    Returns:
        The same checkpoint.

    Raises:
        UnreadableConversationError: Anything in it has another shape.
    """
    problem = _problem(saved)
    if problem is not None:
        raise UnreadableConversationError(_refusal(f"is damaged ({problem})"))
    return saved


# A TypedDict's keys may be missing from what is read back (a conversation saved before a key was added lacks it),
# but have their types when present; the keys below must be there.
_QuestionCut = TypedDict("_QuestionCut", {"from": Required[int], "to": Required[int]})


class _SavedStep(TypedDict):
    """A route step as ``graph.trace.record`` writes it, with the details a saved answer's notes read."""

    step: Required[str]
    decision: Required[str]
    question_cut: _QuestionCut
    fallback: str


# The keys of the state's types that a saved answer is rebuilt from without a default (graph.api.Citation.from_state).
_READ_WITHOUT_DEFAULT: dict[Any, frozenset[str]] = {
    Citation: frozenset({"n", "source", "title", "section", "first", "last", "quote"}),
}
# A route step is any mapping in the state's type (TraceStep); reading a saved answer needs more of it.
_READ_FROM_A_SAVED_ANSWER: dict[str, Any] = {"trace": list[_SavedStep]}

# A checkpoint id, as LangGraph makes them (a UUID in its usual form).
_CHECKPOINT_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
# A channel version, as SqliteSaver makes them: a counter, a dot and a random fraction (the counter is read back).
_VERSION = re.compile(r"[0-9]+(\.[0-9.e+-]*)?")
# The channels besides the state's: the trigger of each node (set to None) and the run's input.
_TRIGGER = re.compile(r"branch:to:[a-z_]+")
_INPUT = "__start__"
# What LangGraph saves of a step besides its writes to channels: the error it failed with (as text), or that it
# wrote nothing.
_WRITE_MARKERS: dict[str, Any] = {"__error__": str, "__no_writes__": None}


def _problem(saved: CheckpointTuple) -> str | None:
    """What in a checkpoint selfcrag would not have written, or None."""
    ids = [saved.config.get("configurable", {}).get("checkpoint_id")]
    if saved.parent_config is not None:
        ids.append(saved.parent_config.get("configurable", {}).get("checkpoint_id"))
    if not all(isinstance(i, str) and _CHECKPOINT_ID.fullmatch(i) for i in ids):
        return "a checkpoint id is not one LangGraph makes"
    checkpoint: Any = saved.checkpoint
    if not isinstance(checkpoint, dict):
        return "a checkpoint is not a mapping"
    if checkpoint.get("id") != ids[0]:
        return "a checkpoint's id is not its row's"
    if not (_fits(checkpoint.get("v"), int) and _fits(checkpoint.get("ts"), str)):
        return "a checkpoint has no format version or time"
    if not _fits(checkpoint.get("updated_channels"), list[str] | None) or checkpoint.get("pending_sends", []) != []:
        return "a checkpoint's updated channels are not a list of names"
    versions: Any = checkpoint.get("channel_versions")
    seen: Any = checkpoint.get("versions_seen")
    if not (_fits(versions, dict[str, str]) and _fits(seen, dict[str, dict[str, str]])):
        return "a checkpoint's channel versions are not a mapping of names to versions"
    if not all(_VERSION.fullmatch(v) for v in [*versions.values(), *(v for n in seen.values() for v in n.values())]):
        return "a checkpoint's channel version is not one LangGraph makes"
    values = checkpoint.get("channel_values")
    if not isinstance(values, dict):
        return "a checkpoint's channels are not a mapping"
    for channel, value in values.items():
        if not _channel_holds(channel, value):
            return _channel_problem(channel)
    if not _fits(dict(saved.metadata) if isinstance(saved.metadata, dict) else None, _Metadata):
        return "a checkpoint's metadata is not the one LangGraph writes"
    for write in saved.pending_writes or []:
        if not (isinstance(write, tuple) and len(write) == 3 and isinstance(write[0], str)):
            return "a pending write is not a task's"
        channel, value = write[1], write[2]
        if channel in _WRITE_MARKERS:
            if not _fits(value, _WRITE_MARKERS[channel]):
                return "a step's saved error is not text"
        elif not _channel_holds(channel, value.value if isinstance(value, Overwrite) else value):
            return _channel_problem(channel)  # a write to a reduced field may replace it (Overwrite)
    return None


def _channel_holds(channel: object, value: Any) -> bool:
    """Whether a channel of the workflow holds a value of its type."""
    if channel in _STATE_TYPES:
        return _fits(value, _STATE_TYPES[channel]) and _fits(value, _READ_FROM_A_SAVED_ANSWER.get(channel, Any))
    if channel == _INPUT:
        return isinstance(value, dict) and all(k in _STATE_TYPES and _channel_holds(k, v) for k, v in value.items())
    return isinstance(channel, str) and _TRIGGER.fullmatch(channel) is not None and value is None


def _channel_problem(channel: object) -> str:
    """Say which channel holds a value selfcrag never writes (only the state's own names are quoted)."""
    if channel in _STATE_TYPES:
        return f"its {channel!r} channel holds a value selfcrag never writes there"
    return "it holds a channel the workflow does not have"


class _Metadata(TypedDict):
    """The metadata LangGraph writes with a checkpoint, as far as it reads it back."""

    source: str
    step: int
    parents: dict[str, str]


_STATE_TYPES = typing.get_type_hints(State, include_extras=True)


def _fits(value: Any, hint: Any) -> bool:
    """Whether a decoded value has a type: the state's types, written as ``typing`` writes them.

    A TypedDict's keys marked ``Required`` (or named in ``_READ_WITHOUT_DEFAULT``) must be there, its others fit
    their types when present, and keys it does not name are let through; a float may be written as an integer, and
    a bool is not taken for an integer.
    """
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return True
    if hint is None or hint is type(None):
        return value is None
    if origin is Annotated:
        return _fits(value, args[0])
    if origin is Union or origin is types.UnionType:
        return any(_fits(value, arg) for arg in args)
    if origin is Literal:
        return any(type(value) is type(arg) and value == arg for arg in args)
    if origin is list:
        return isinstance(value, list) and all(_fits(item, args[0]) for item in value)
    if origin is dict:
        return isinstance(value, dict) and all(_fits(k, args[0]) and _fits(v, args[1]) for k, v in value.items())
    if typing.is_typeddict(hint):
        keys, required = _typed_keys(hint)
        return (
            isinstance(value, dict)
            and required <= value.keys()
            and all(_fits(value[key], keys[key]) for key in keys.keys() & value.keys())
        )
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if isinstance(hint, type):
        return isinstance(value, hint)
    raise TypeError(f"no check for {hint!r}: a type of the state this module does not know yet")


@cache
def _typed_keys(hint: Any) -> tuple[dict[str, Any], frozenset[str]]:
    """A TypedDict's keys with their types (``Required`` / ``NotRequired`` unwrapped), and those that must be there.

    Not ``__required_keys__``: Python 3.11 takes every key for required when annotations are postponed, and a
    conversation saved by an older selfcrag lacks the keys added since.
    """
    keys, required = {}, set(_READ_WITHOUT_DEFAULT.get(hint, ()))
    for key, kind in typing.get_type_hints(hint, include_extras=True).items():
        marked = typing.get_origin(kind)
        keys[key] = typing.get_args(kind)[0] if marked in (Required, NotRequired) else kind
        if marked is Required:
            required.add(key)
    return keys, frozenset(required)


def _kind(error: BaseException) -> str:
    """A decoding error in a few words, without the file's content."""
    return "nesting too deep" if isinstance(error, RecursionError) else "not JSON"
