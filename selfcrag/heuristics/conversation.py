"""Questions about the conversation itself ("what was my first question?", "我刚才问了什么？"), answered from it.

A message is such a question only when the whole of it asks for earlier questions or answers of this conversation,
in one of the ways people ask it, in English or Chinese: which one (the first, the last, the third, all of them)
is read from its words. Anything else, "What did I ask the support team to do?" included, is not, and goes to
retrieval. The reply quotes the conversation as the thread keeps it: exact, where a model may misremember or obey
text that earlier answers quoted from documents.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal, NamedTuple

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage

from selfcrag.index.tokenize import detect_language
from selfcrag.prompts import replies

Which = Literal["first", "last", "all"] | int


class ConversationQuestion(NamedTuple):
    """What a question about the conversation asks for.

    Attributes:
        about: ``question`` (the user's earlier questions) or ``answer`` (the assistant's earlier replies).
        which: ``first``, ``last``, ``all``, or a position counted from 1.
    """

    about: Literal["question", "answer"]
    which: Which


# English. Lead-ins ("remind me", "sorry,") and tails ("at first", "so far") around the question proper.
_EN_LEAD = (
    r"(?:(?:so|ok|okay|sorry|hey|hi|um|and|wait|thanks|thank you|please|remind me|tell me|can you (?:tell|remind) me|"
    r"could you (?:tell|remind) me|do you (?:remember|recall)|i forgot)[,:!.]?\s+)*"
)
_EN_ORDINAL = (
    r"(?:very first|first|1st|second|2nd|third|3rd|fourth|4th|fifth|5th|last|latest|previous|prior|earlier|"
    r"most recent|original|initial)"
)
_EN_TAIL = (
    r"(?:\s+(?:again|first|at first|at the (?:start|beginning)|in the beginning|last|before|earlier|previously|"
    r"just now|so far|until now|up to now|in this (?:conversation|chat)|here|of all|to you|you|about))*"
)
_EN_ABOUT_QUESTION = [
    rf"what(?: was| were| is| are|'s) my (?:{_EN_ORDINAL} )?questions?",
    rf"what my (?:{_EN_ORDINAL} )?questions? (?:was|were|is|are)",
    rf"what(?: was| were| is|'s) the (?:{_EN_ORDINAL} )?(?:questions?|things?) i (?:asked|had)(?: you)?",
    r"what (?:did|have) i (?:just |first |last |previously |originally |initially |already )?ask(?:ed)?(?: you)?",
    r"what i (?:just |first |last |previously |originally |initially )?asked(?: you)?",
    r"(?:which|what) questions? (?:did|have) i (?:just )?ask(?:ed)?(?: you)?",
    r"what was i (?:just )?asking(?: you)?(?: about)?",
    rf"(?:(?:list|show|repeat|give me)(?: all)? )?my (?:{_EN_ORDINAL} )?questions?",
]
_EN_ABOUT_ANSWER = [
    r"what (?:did|have) you (?:just |first |last |previously )?(?:say|said|answer|answered|reply|replied|"
    r"respond|tell me|told me)",
    r"what you (?:just |first |last |previously )?(?:said|answered|replied|told me)",
    rf"what(?: was| were| is| are|'s) your (?:{_EN_ORDINAL} )?(?:answers?|replies|reply|responses?)",
    rf"what your (?:{_EN_ORDINAL} )?(?:answers?|reply|response) (?:was|were|is)",
    rf"(?:repeat|say) (?:that|it|your (?:{_EN_ORDINAL} )?(?:answer|reply)|what you (?:just )?said)",
    rf"your (?:{_EN_ORDINAL} )?(?:answers?|reply|response)",
]

# Chinese. 请问 / 你还记得 before, 呢 / 来着 after; when (刚才, 一开始) and which (第一个, 上一个) inside.
_ZH_LEAD = (
    r"(?:请问|请|你还记得|还记得|你记得|能告诉我|可以告诉我|告诉我|提醒我一下|提醒我|麻烦你|那么|那|所以|对了|"
    r"谢谢|好的)*[，,！!。]?"
)
_ZH_TAIL = r"(?:来着|呢|呀|啊|吗|了)*"
_ZH_WHEN = r"(?:刚才|刚刚|之前|先前|早先|上次|上一次|前面|一开始|最开始|刚开始|开始|起初|最初|最早|第一次|最后)"
_ZH_ORDINAL = (
    r"(?:第[一二三四五六七八九十两\d]+|上一|前一|最后一|最早的?一|最开始的?|一开始的?|刚才的?|之前的?|上次的?)"
)
_ZH_ABOUT_QUESTION = [
    rf"我{_ZH_WHEN}?(?:都|一共|总共)?(?:问|提|说|讲)(?:了|过)?(?:你)?(?:些|哪些|几个)?(?:什么|啥|哪些|哪几个)(?:问题)?",
    rf"我{_ZH_WHEN}?(?:都)?(?:问|提)(?:的|过的)(?:{_ZH_ORDINAL}个?)?问题(?:是|都是|有)?(?:什么|啥|哪些)?",
    rf"我的?{_ZH_ORDINAL}个?问题(?:是)?(?:什么|啥)?",
    r"(?:上一个|前一个|第一个)问题(?:是)?(?:什么|啥)?",
    rf"(?:重复|再说)(?:一下|一遍)?我的?(?:{_ZH_ORDINAL}个?)?问题",
]
_ZH_ABOUT_ANSWER = [
    rf"你{_ZH_WHEN}?(?:都)?(?:说|回答|答|讲|回复)了?(?:些)?(?:什么|啥)",
    rf"你{_ZH_WHEN}?(?:说|回答|回复)的(?:是)?(?:什么|啥)",
    rf"你的?(?:{_ZH_ORDINAL}[个次]?)?(?:回答|答案|回复)(?:是)?(?:什么|啥)?",
    r"(?:重复|再说)(?:一下|一遍|一次)(?:你(?:刚才|刚刚)?(?:说的|的回答))?",
]


def _whole(alternatives: list[str], lead: str, tail: str) -> re.Pattern[str]:
    return re.compile(rf"{lead}(?:{'|'.join(alternatives)}){tail}")


_ABOUT_QUESTION = [_whole(_EN_ABOUT_QUESTION, _EN_LEAD, _EN_TAIL), _whole(_ZH_ABOUT_QUESTION, _ZH_LEAD, _ZH_TAIL)]
_ABOUT_ANSWER = [_whole(_EN_ABOUT_ANSWER, _EN_LEAD, _EN_TAIL), _whole(_ZH_ABOUT_ANSWER, _ZH_LEAD, _ZH_TAIL)]

# Which one is asked for, read from the words once the message is known to be about the conversation.
_FIRST = re.compile(
    r"\b(?:very first|first|1st|original|originally|initial|initially|at the (?:start|beginning)|in the beginning)\b|"
    r"一开始|最开始|刚开始|起初|最初|最早|第一"
)
_POSITION_EN = {"second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4, "fifth": 5, "5th": 5}
_POSITION = re.compile(r"\b(second|2nd|third|3rd|fourth|4th|fifth|5th)\b|第([一二三四五六七八九十两\d]+)")
_ALL = re.compile(
    r"\b(?:questions|answers|replies|responses|so far|until now|up to now|have i asked)\b|都|哪些|一共|总共|哪几个"
)
_DIGITS = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}


def _plain(message: str) -> str:
    text = " ".join(message.strip().lower().replace("’", "'").split())
    text = re.sub(r"[\s!！.。,，~～?？…]+$", "", text)
    # Chinese is written without spaces; people type them anyway ("我 刚才 问了 什么").
    return re.sub(r"(?<=[\u4e00-\u9fff])\s+|\s+(?=[\u4e00-\u9fff])", "", text)


def _chinese_number(text: str) -> int | None:
    """Read 3, 三, 十二 or 二十一 (to 99); None for anything else."""
    if text.isdigit():
        return int(text)
    if "十" not in text:
        return _DIGITS.get(text)
    tens, _, ones = text.partition("十")
    if (tens and tens not in _DIGITS) or (ones and ones not in _DIGITS):
        return None
    return _DIGITS.get(tens, 1) * 10 + _DIGITS.get(ones, 0)


def _which(plain: str) -> Which:
    position = _POSITION.search(plain)
    if position is not None:
        number = _POSITION_EN[position.group(1)] if position.group(1) else _chinese_number(position.group(2))
        if number is not None and number > 1:
            return number
    if _FIRST.search(plain):
        return "first"
    return "all" if _ALL.search(plain) else "last"


def conversation_question(message: str) -> ConversationQuestion | None:
    """Tell whether a message asks about the conversation itself, and what for.

    Args:
        message: The user's message, as written.

    Returns:
        What it asks for, or None when it is not a question about the conversation.
    """
    plain = _plain(message)
    if any(pattern.fullmatch(plain) for pattern in _ABOUT_QUESTION):
        return ConversationQuestion("question", _which(plain))
    if any(pattern.fullmatch(plain) for pattern in _ABOUT_ANSWER):
        return ConversationQuestion("answer", _which(plain))
    return None


def recall(asked: ConversationQuestion, message: str, history: Sequence[AnyMessage], kept_turns: int) -> str:
    """Answer a question about the conversation from its record.

    Args:
        asked: From :func:`conversation_question`.
        message: The message (its language is the reply's).
        history: The conversation before this message, as the thread keeps it.
        kept_turns: Earlier turns a thread keeps (``history_turns``): with that many, older ones may be forgotten.

    Returns:
        The reply, quoting the earlier questions or answers asked for.
    """
    language = detect_language(message)
    kind = HumanMessage if asked.about == "question" else AIMessage
    earlier = [m.text for m in history if isinstance(m, kind)]
    if not earlier:
        return replies.NO_HISTORY[language]
    said = replies.QUESTIONS_RECALLED if asked.about == "question" else replies.ANSWERS_RECALLED
    listed = "\n".join(f"{n}. {text}" for n, text in enumerate(earlier, 1))
    # A full window may have forgotten older turns: the earliest kept is then not the first, nor is a position sure.
    forgotten = sum(isinstance(m, HumanMessage) for m in history) >= kept_turns
    if asked.which == "last":
        return said["last"][language].format(text=earlier[-1])
    if asked.which == "first" and not forgotten:
        return said["first"][language].format(text=earlier[0])
    if isinstance(asked.which, int) and asked.which <= len(earlier) and not forgotten:
        return said["nth"][language].format(n=asked.which, text=earlier[asked.which - 1])
    if forgotten:
        return said["kept"][language].format(turns=kept_turns, text=listed)
    if isinstance(asked.which, int):
        return said["beyond"][language].format(n=asked.which, count=len(earlier), text=listed)
    return said["all"][language].format(text=listed)
