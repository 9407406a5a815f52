"""Chat models: construction, transient-fault retries, ``<think>`` stripping, structured replies."""

from models.chat import build_chat_model
from models.retry import invoke_with_retries, is_transient
from models.structured import CHAT_FAILURES, UnparsableReplyError, invoke_structured, parse_reply
from models.think import ThinkFilter, strip_think

__all__ = [
    "CHAT_FAILURES",
    "ThinkFilter",
    "UnparsableReplyError",
    "build_chat_model",
    "invoke_structured",
    "is_transient",
    "parse_reply",
    "strip_think",
    "invoke_with_retries",
]
