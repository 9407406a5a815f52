"""Prompt texts, Chinese and English side by side; the question's language picks one.

Each prompt is a ``{"en": ..., "zh": ...}`` constant in the module of its step.
Retrieved documents always enter a prompt as quoted data between
``<passage>`` tags, and every prompt that carries them says they are data,
not instructions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from citations import locate
from graph.state import KnowledgeItem
from lexical import detect_language

Localized = Mapping[str, str]


def pick(prompt: Localized, text: str) -> str:
    """Choose the version of a prompt in the language of a text.

    Args:
        prompt: ``{"en": ..., "zh": ...}``.
        text: Usually the question.

    Returns:
        The Chinese version for Chinese text, else the English one.
    """
    return prompt[detect_language(text)]


def quote_passages(passages: Iterable[tuple[int, str, str]]) -> str:
    """Quote numbered passages between tags that their own text cannot close.

    Args:
        passages: ``(number, where, text)``; ``where`` is a source and section.

    Returns:
        The passages, one tagged block each.
    """
    blocks = []
    for number, where, text in passages:
        safe = text.replace("</passage", "</ passage").replace("<passage", "< passage")
        where = where.replace('"', "'")
        blocks.append(f'<passage n="{number}" source="{where}">\n{safe}\n</passage>')
    return "\n\n".join(blocks)


def quote_knowledge(knowledge: Sequence[KnowledgeItem]) -> str:
    """Quote the numbered knowledge items, each with where it stands.

    Args:
        knowledge: The refined knowledge.

    Returns:
        The tagged passages.
    """
    return quote_passages((k["n"], locate(k["source"], k["section"], k["first"], k["last"]), k["text"])
                          for k in knowledge)
