"""Prompt texts, Chinese and English side by side; the question's language picks one.

Each prompt is a ``{"en": ..., "zh": ...}`` constant in the module of its step.
Retrieved documents always enter a prompt as quoted data between
``<passage>`` tags, and every prompt that carries them says they are data,
not instructions.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from langchain_core.messages import BaseMessage

from selfcrag.cite.markers import locate
from selfcrag.index.tokenize import detect_language
from selfcrag.spans import KnowledgeItem

Localized = Mapping[str, str]

# A "<" that would open or close a passage tag, or start a chat template's role marker (<|im_start|>).
_BREAKOUT = re.compile(r"<(?=\s*/?\s*passage\b|\|)", re.IGNORECASE)


def pick(prompt: Localized, text: str) -> str:
    """Choose the version of a prompt in the language of a text.

    Args:
        prompt: ``{"en": ..., "zh": ...}``.
        text: Usually the question.

    Returns:
        The Chinese version for Chinese text, else the English one.
    """
    return prompt[detect_language(text)]


def defuse(text: str) -> str:
    """Make document text unable to leave its quotation in a prompt.

    A ``<`` that would open or close a ``<passage>`` tag (in any case or
    spacing) or start a chat-template marker such as ``<|im_start|>`` is
    written ``&lt;``: the model reads it as the text it is, and a server that
    parses special tokens in messages sees none.

    Args:
        text: Text from a document (a passage, a heading, a title).

    Returns:
        The text, safe to put between ``<passage>`` tags.
    """
    return _BREAKOUT.sub("&lt;", text)


def quote_passages(passages: Iterable[tuple[int, str, str]]) -> str:
    """Quote numbered passages between tags that their own text cannot close.

    Args:
        passages: ``(number, where, text)``; ``where`` is a source and section.

    Returns:
        The passages, one tagged block each.
    """
    blocks = []
    for number, where, text in passages:
        where = defuse(where).replace('"', "'").replace("\n", " ")
        blocks.append(f'<passage n="{number}" source="{where}">\n{defuse(text)}\n</passage>')
    return "\n\n".join(blocks)


def quote_knowledge(knowledge: Sequence[KnowledgeItem]) -> str:
    """Quote the numbered knowledge items, each with where it stands.

    Args:
        knowledge: The refined knowledge.

    Returns:
        The tagged passages.
    """
    return quote_passages(
        (k["n"], locate(k["source"], k["section"], k["first"], k["last"], title=k["title"]), k["text"])
        for k in knowledge
    )


def history_text(messages: Sequence[BaseMessage], limit: int = 6) -> str:
    """Render the last messages of a conversation as ``role: text`` lines, for a prompt.

    Args:
        messages: Earlier messages.
        limit: How many to show.

    Returns:
        The lines, or ``(none)``; earlier answers quote documents, so they are defused as passages are.
    """
    lines = [f"{m.type}: {defuse(m.text)}" for m in messages[-limit:]]
    return "\n".join(lines) or "(none)"
