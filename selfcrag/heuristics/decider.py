"""Offline routing of messages that need no retrieval, and the replies to them.

Rules, not guesses: a message is answered directly only when the whole of it
is a greeting or thanks, an arithmetic expression, or a question about the
conversation itself (:mod:`selfcrag.heuristics.conversation`). Anything else goes to retrieval, where the evaluator
decides whether the knowledge base can answer it.

A chat model may judge a message the rules would retrieve to need no documents
(small talk the rules do not know). Its judgement is a suggestion only:
:func:`knowledge_base_match` scores what the knowledge base holds for the
message with the offline evaluator, and a message it matches is retrieved
whatever the model said, so a weak or misled model cannot answer a question
of the documents from its own memory.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Sequence
from typing import Literal

from langchain_core.messages import AnyMessage

from selfcrag.heuristics.conversation import ConversationQuestion, conversation_question, recall
from selfcrag.heuristics.evaluator import OfflineEvaluator, standings
from selfcrag.index.tokenize import detect_language
from selfcrag.prompts import replies
from selfcrag.search.retriever import RetrievalConfig

Route = Literal["retrieve", "greeting", "thanks", "arithmetic", "conversation", "empty"]

_GREETING = re.compile(
    r"^(?:hi|hello|hey|hiya|good (?:morning|afternoon|evening)|greetings|who are you|what can you do|"
    r"你好|您好|嗨|哈喽|早上好|下午好|晚上好|你是谁|你能做什么)(?: there| everyone|呀|啊)?$"
)
_THANKS = re.compile(
    r"^(?:thanks|thank you|thx|cheers|great|ok|okay|bye|goodbye|谢谢|多谢|感谢|好的|再见|拜拜)"
    r"(?: (?:a lot|very much|so much))?(?:你|您)?$"
)
_ARITHMETIC_FILLER = re.compile(
    r"^(?:what(?:'s| is)|calculate|compute|how much is|请问|请计算|计算|算一下)?\s*(.*?)\s*"
    r"(?:\s*(?:=\s*\?|=|\?|？|等于多少|等于几|是多少|是几))*\s*$",
    re.IGNORECASE,
)
_ARITHMETIC_CHARS = re.compile(r"^[\d\s.+\-*/%()^×÷xX（）加减乘除以]+$")
_OPERATORS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}


def _plain(message: str) -> str:
    return re.sub(r"[\s!！.。,，~～?？]+$", "", message.strip().lower()).strip()


def classify_message(message: str) -> Route:
    """Decide, by rule, whether a message needs the knowledge base.

    Args:
        message: The user's message.

    Returns:
        ``retrieve``, or why the message is answered directly.
    """
    plain = _plain(message)
    if not plain:
        return "empty"
    if _GREETING.match(plain):
        return "greeting"
    if _THANKS.match(plain):
        return "thanks"
    if arithmetic_expression(message) is not None:
        return "arithmetic"
    if conversation_question(message) is not None:
        return "conversation"
    return "retrieve"


def knowledge_base_match(evaluator: OfflineEvaluator, message: str, config: RetrievalConfig) -> float:
    """How well the knowledge base matches a message: the offline evaluator's best score among what a search finds.

    The same score ``grade_documents`` gives offline, so it reads against the same thresholds: at or above
    ``lower_threshold`` the passages are not all Incorrect, and the documents have something to say.

    Args:
        evaluator: The offline evaluator of the index.
        message: The user's message.
        config: The search settings.

    Returns:
        A score in [0, 1]; 0 when the search finds nothing.
    """
    passages = evaluator.retriever.search(message, config).passages
    if not passages:
        return 0.0
    profile = evaluator.profile(message)
    places = standings(passages)
    return max(evaluator.score_passage(profile, passage, places[passage["id"]]) for passage in passages)


def arithmetic_expression(message: str) -> str | None:
    """Extract an arithmetic expression that makes up the whole message.

    Args:
        message: E.g. ``What is (3 + 4) * 2?`` or ``12乘以3等于多少``.

    Returns:
        The expression in Python syntax, or None when the message is not one.
    """
    match = _ARITHMETIC_FILLER.match(message.strip())
    body = match.group(1) if match else ""
    if not body or not _ARITHMETIC_CHARS.match(body) or not re.search(r"\d", body):
        return None
    expression = (
        body.replace("×", "*")
        .replace("x", "*")
        .replace("X", "*")
        .replace("÷", "/")
        .replace("^", "**")
        .replace("（", "(")
        .replace("）", ")")
        .replace("乘以", "*")
        .replace("除以", "/")
        .replace("加", "+")
        .replace("减", "-")
        .replace("乘", "*")
        .replace("除", "/")
    )
    if not re.search(r"\d\s*(?:\*\*|[-+*/%])\s*[\d(]", expression) or evaluate(expression) is None:
        return None
    return expression


def evaluate(expression: str) -> float | int | None:
    """Evaluate an arithmetic expression safely (numbers and + - * / // % ** only).

    Args:
        expression: Python-syntax arithmetic.

    Returns:
        The value, or None when it is not plain arithmetic or cannot be computed.
    """

    def walk(node: ast.AST) -> float | int:
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            value = walk(node.operand)
            return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            left, right = walk(node.left), walk(node.right)
            if isinstance(node.op, ast.Pow) and abs(right) > 100:
                raise ValueError("exponent too large")
            return _OPERATORS[type(node.op)](left, right)
        raise ValueError("not arithmetic")

    try:
        value = walk(ast.parse(expression, mode="eval").body)
    except (SyntaxError, ValueError, ZeroDivisionError, OverflowError):
        return None
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return int(value)
    return round(value, 10) if isinstance(value, float) else value


def direct_reply(route: Route, message: str, history: Sequence[AnyMessage], kept_turns: int) -> str:
    """Write the offline reply to a message that needs no retrieval.

    Args:
        route: From :func:`classify_message`.
        message: The user's message.
        history: Earlier messages of the conversation (without this one).
        kept_turns: Earlier turns a thread keeps (``history_turns``), for a question about the conversation.

    Returns:
        The reply, in the message's language.
    """
    language = detect_language(message)
    if route == "empty":
        return replies.EMPTY_QUESTION[language]
    if route == "greeting":
        return replies.GREETING[language]
    if route == "thanks":
        return replies.THANKS[language]
    if route == "arithmetic":
        expression = arithmetic_expression(message) or ""
        return replies.ARITHMETIC[language].format(expression=expression.replace("**", "^"), value=evaluate(expression))
    asked = conversation_question(message) or ConversationQuestion("question", "last")
    return recall(asked, message, history, kept_turns)
