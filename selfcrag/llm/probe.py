"""Probing a chat endpoint: the models it serves, the ways of asking for structured replies it takes, streaming, speed.

What ``selfcrag model check`` measures. Every probe is one or two small requests, with no retries: the check says
what the endpoint does, it does not work around it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import openai
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage

from selfcrag.llm.chat import limited
from selfcrag.llm.errors import UnusableReplyError
from selfcrag.llm.replies import RetrievalDecision
from selfcrag.llm.retry import describe_failure, refuses_structured_output
from selfcrag.llm.structured import CHAT_FAILURES, STRUCTURED_OUTPUT_METHODS, invoke_structured

# Characters per token assumed when a server reports no usage.
_CHARS_PER_TOKEN = 4.0
# Tokens of the speed probes: a prompt about the size of a grading prompt, a short generation.
PROMPT_PROBE_CHARS = 4_000
GENERATION_PROBE_TOKENS = 64


@dataclass
class ModeCheck:
    """How an endpoint took one way of asking for a structured reply.

    Attributes:
        method: ``json_schema``, ``function_calling`` or ``json_mode``.
        outcome: ``works``, ``refused`` (the server refused the request), ``unparsed`` (it answered, but not with the
            structure asked for) or ``failed`` (another error).
        detail: The server's reason, or what came back, in one line.
    """

    method: str
    outcome: str
    detail: str = ""


@dataclass
class Speed:
    """How fast the endpoint reads a prompt and writes a reply.

    Attributes:
        prompt_tokens: Tokens of the long prompt.
        prompt_seconds: Seconds to read it (and write one token).
        generated_tokens: Tokens written in the generation probe.
        generation_seconds: Seconds spent writing them (the short prompt's reading taken off).
        chars_per_token: Characters of prompt per token, as the server counted them.
    """

    prompt_tokens: int
    prompt_seconds: float
    generated_tokens: int
    generation_seconds: float
    chars_per_token: float

    @property
    def prompt_rate(self) -> float:
        """Prompt tokens read per second."""
        return self.prompt_tokens / max(self.prompt_seconds, 1e-3)

    @property
    def generation_rate(self) -> float:
        """Tokens written per second."""
        return self.generated_tokens / max(self.generation_seconds, 1e-3)

    def seconds(self, prompt_chars: float, reply_tokens: float) -> float:
        """Estimate one request: reading a prompt of this many characters, then writing this many tokens.

        Args:
            prompt_chars: Characters of prompt.
            reply_tokens: Tokens of reply.

        Returns:
            Seconds.
        """
        return prompt_chars / self.chars_per_token / self.prompt_rate + reply_tokens / self.generation_rate


def list_models(base_url: str | None, api_key: str | None, timeout: float) -> list[str]:
    """The models an endpoint serves (``GET /models``).

    Args:
        base_url: The endpoint (None: OpenAI's).
        api_key: Its key.
        timeout: Seconds the request may take.

    Returns:
        The model ids.

    Raises:
        openai.OpenAIError: The endpoint could not be reached or refused.
    """
    client = openai.OpenAI(base_url=base_url, api_key=api_key or "unused", timeout=timeout, max_retries=0)
    return [model.id for model in client.models.list()]


def check_modes(model: BaseChatModel, messages: Sequence[BaseMessage], max_tokens: int) -> list[ModeCheck]:
    """Ask for a retrieval decision each way, once, and say how each went.

    Args:
        model: The chat model.
        messages: The prompt (the workflow's own routing prompt).
        max_tokens: Tokens the reply may hold.

    Returns:
        One check per method, in the order of :data:`STRUCTURED_OUTPUT_METHODS`.
    """
    checks = []
    for method in STRUCTURED_OUTPUT_METHODS:
        try:
            invoke_structured(
                model,
                RetrievalDecision,
                messages,
                method=method,
                attempts=1,
                parse_attempts=1,
                name="model check",
                max_tokens=max_tokens,
                refused=[other for other in STRUCTURED_OUTPUT_METHODS if other != method],
            )
        except CHAT_FAILURES as error:
            if refuses_structured_output(error):
                outcome = "refused"
            elif isinstance(error, UnusableReplyError):
                outcome = "unparsed"
            else:
                outcome = "failed"
            checks.append(ModeCheck(method, outcome, describe_failure(error)))
            continue
        checks.append(ModeCheck(method, "works"))
    return checks


def check_streaming(model: BaseChatModel) -> tuple[bool, str]:
    """Stream a short reply and tell whether it came in pieces and ended with a finish reason.

    Args:
        model: The chat model (limited to a few tokens by the caller).

    Returns:
        Whether streaming works, and what was seen, in one line.
    """
    pieces = 0
    finish = None
    try:
        for chunk in model.stream([HumanMessage("Say hello in five words.")]):
            pieces += bool(chunk.text)
            finish = chunk.response_metadata.get("finish_reason") or finish
    except CHAT_FAILURES as error:
        return False, describe_failure(error)
    except ValueError as error:  # LangChain: a stream that held no chunk at all
        return False, str(error)
    if pieces == 0:
        return False, "the stream held no text"
    if finish is None:
        return False, f"{pieces} pieces, but the stream never said why it ended"
    return True, f"{pieces} pieces, finish reason {finish}"


def measure_speed(model: BaseChatModel, filler: str) -> Speed:
    """Time a long prompt (one token of reply), then a short prompt with a longer reply.

    The long prompt starts with the time, so no server answers it from a cache of the previous check.

    Args:
        model: The chat model, without a token limit (each probe sets its own).
        filler: Text to make the long prompt of (about :data:`PROMPT_PROBE_CHARS` characters are used).

    Returns:
        The measured speed.

    Raises:
        openai.OpenAIError: A probe failed.
    """
    prompt = f"{time.time():.6f}\nRepeat the first word of this text.\n\n{filler[:PROMPT_PROBE_CHARS]}"
    started = time.perf_counter()
    read = limited(model, max_tokens=1).invoke([HumanMessage(prompt)])
    prompt_seconds = time.perf_counter() - started
    prompt_tokens = _usage(read, "input_tokens") or round(len(prompt) / _CHARS_PER_TOKEN)
    chars_per_token = len(prompt) / max(prompt_tokens, 1)

    short = f"{time.time():.6f} Count from 1 to 500, separated by spaces."
    started = time.perf_counter()
    written = limited(model, max_tokens=GENERATION_PROBE_TOKENS).invoke([HumanMessage(short)])
    elapsed = time.perf_counter() - started
    generated = _usage(written, "output_tokens") or max(round(len(written.text) / _CHARS_PER_TOKEN), 1)
    reading = len(short) / chars_per_token / (prompt_tokens / max(prompt_seconds, 1e-3))
    return Speed(prompt_tokens, prompt_seconds, generated, max(elapsed - reading, 1e-3), chars_per_token)


def _usage(message: BaseMessage, key: str) -> int:
    usage = getattr(message, "usage_metadata", None) or {}
    value = usage.get(key)
    return int(value) if isinstance(value, int) and value > 0 else 0
