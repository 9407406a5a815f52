"""The chat model that draws propositions from passages at ingest (``selfcrag ingest --propositions``).

Each passage is one structured request (Dense X Retrieval's propositionizer
prompt, :mod:`selfcrag.prompts.propositions`), asked as the workflow's steps
ask: the context's structured-output method and the ways the endpoint is known
to refuse, its retries and token limit. A call that fails, or whose reply does
not parse, gives no statements and a one-line note: the ingest skips that
passage (:mod:`selfcrag.ingest.propositions`). After ``chat_failure_limit``
failed calls in a row the endpoint is taken for dead and the passages left are
skipped at once, instead of each waiting out its retries.
"""

from __future__ import annotations

from dataclasses import replace

from langchain_core.callbacks import get_usage_metadata_callback
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.messages.ai import UsageMetadata
from pydantic import BaseModel, Field

from selfcrag.errors import UserError
from selfcrag.graph.context import Context
from selfcrag.graph.resources import Resources
from selfcrag.index.tokenize import detect_language
from selfcrag.ingest.propositions import PropositionPassage, PropositionReply, Propositions
from selfcrag.llm.chat import endpoint_of
from selfcrag.llm.errors import UnusableReplyError
from selfcrag.llm.retry import describe_failure
from selfcrag.llm.structured import CHAT_FAILURES, invoke_structured
from selfcrag.prompts import defuse
from selfcrag.prompts.propositions import PROPOSITIONS_SYSTEM, PROPOSITIONS_USER


class PropositionList(BaseModel):
    """The propositions of one passage."""

    propositions: list[str] = Field(description="the passage's propositions, each a short self-contained sentence")


def chat_propositions(context: Context, chat_model: BaseChatModel | None = None) -> Propositions:
    """The chat model of a context as the ingest's propositionizer, bounded by the context's knobs.

    Args:
        context: The run's settings (endpoint, model, ``structured_output``, ``max_attempts``,
            ``max_proposition_calls``, ``max_proposition_tokens``, ``chat_failure_limit``).
        chat_model: A chat model to use instead of the one the context configures.

    Returns:
        The model call and its bound.

    Raises:
        UserError: No chat model is configured.
    """
    resources = Resources(chat_model)
    try:
        model = resources.chat_model(replace(context, answerer="chat"))
    except UserError:
        model = None
    if model is None or context.answerer == "offline":
        raise UserError(
            "--propositions needs a chat model: set OPENAI_BASE_URL (an OpenAI-compatible server) and/or "
            "OPENAI_API_KEY, and SELFCRAG_ANSWERER is not offline"
        )
    memory = resources.endpoint_memory(context)
    endpoint = endpoint_of(model)
    failures_in_a_row = 0

    def propose(passage: PropositionPassage) -> PropositionReply:
        nonlocal failures_in_a_row
        if failures_in_a_row >= context.chat_failure_limit:
            return PropositionReply(None, f"not asked: the chat endpoint failed {failures_in_a_row} times in a row")
        text = passage.text
        language = detect_language(text)
        messages = [
            SystemMessage(PROPOSITIONS_SYSTEM[language]),
            HumanMessage(
                PROPOSITIONS_USER[language].format(
                    title=defuse(passage.title), section=defuse(" > ".join(passage.section)), content=defuse(text)
                )
            ),
        ]
        with get_usage_metadata_callback() as usage:
            try:
                reply = invoke_structured(
                    model,
                    PropositionList,
                    messages,
                    method=context.structured_output,
                    attempts=context.max_attempts,
                    parse_attempts=context.parse_attempts,
                    name="propositionize",
                    max_tokens=context.max_proposition_tokens,
                    refused=memory.refused(endpoint),
                    on_refused=lambda method, reason: memory.remember(endpoint, method, reason),
                )
            except CHAT_FAILURES as error:
                # A reply that does not parse is the model's; anything else is the endpoint failing.
                failures_in_a_row = 0 if isinstance(error, UnusableReplyError) else failures_in_a_row + 1
                return PropositionReply(None, describe_failure(error), _tokens(usage.usage_metadata))
        failures_in_a_row = 0
        return PropositionReply(reply.propositions, "", _tokens(usage.usage_metadata))

    return Propositions(propose, context.max_proposition_calls)


def _tokens(usage: dict[str, UsageMetadata]) -> int:
    """Tokens read and written, as the endpoint reported them (0 when it did not)."""
    return sum(u.get("total_tokens", 0) for u in usage.values())
