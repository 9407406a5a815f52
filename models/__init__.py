"""Chat models: construction, transient-fault retries, ``<think>`` stripping, checked replies, redaction."""

from models.chat import build_chat_model
from models.errors import UnparsableReplyError, UnusableReplyError
from models.retry import OnRetry, describe_failure, invoke_with_retries, is_transient
from models.secrets import redact
from models.structured import CHAT_FAILURES, invoke_structured, parse_reply
from models.text import invoke_text
from models.think import ThinkFilter, strip_think

__all__ = [
    "CHAT_FAILURES",
    "OnRetry",
    "ThinkFilter",
    "UnparsableReplyError",
    "UnusableReplyError",
    "build_chat_model",
    "describe_failure",
    "invoke_structured",
    "invoke_text",
    "invoke_with_retries",
    "is_transient",
    "parse_reply",
    "redact",
    "strip_think",
]
