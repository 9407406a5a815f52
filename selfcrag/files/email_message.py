"""An e-mail saved as ``.eml`` as Markdown: its subject as the title, who sent it and when, then its text.

The message is parsed by the standard library's :mod:`email` package with
``policy.default``, which decodes encoded headers (``=?UTF-8?B?…?=``), transfer
encodings and charsets. The text is the plain-text body, or when there is none
the HTML body read by the HTML reader. Attachments are not read, and nothing in a
message is run or fetched (the HTML reader loads no image and follows no link).

What the email package makes is bounded as it is made: a message of more than
:data:`MAX_PARTS` parts is refused while it is parsed (each part is an object with
its headers, some kilobytes), and a header is read up to its first
:data:`MAX_ENCODED_WORDS` encoded words and :data:`MAX_HEADER_CHARS` characters
(the header parser's time and memory grow as the square of its encoded words:
40,000 of them took 49 s and 16 GB).
"""

from __future__ import annotations

import re
from email import policy
from email.headerregistry import BaseHeader, HeaderRegistry
from email.message import EmailMessage
from email.parser import BytesParser
from email.policy import Policy

from selfcrag.files.containers import ReadingBudget, UnreadableDocument
from selfcrag.files.html_page import TooDeeplyNested, html_to_markdown
from selfcrag.files.outline import MarkdownOutline, plain_text

__all__ = ["MAX_ENCODED_WORDS", "MAX_HEADER_CHARS", "MAX_PARTS", "read_email"]

MAX_PARTS = 10_000
"""A message of more than this many MIME parts is not read (a message with a hundred attachments has a hundred)."""

MAX_ENCODED_WORDS = 1_000
"""A header is read up to its first this many encoded words (``=?utf-8?b?…?=``); a subject has a few."""

MAX_HEADER_CHARS = 100_000
"""A header is read up to its first this many characters."""

_ENCODED_WORD = re.compile(r"=\?[^?\s]*\?[bBqQ]\?[^?\s]*\?=")  # RFC 2047: =?charset?encoding?text?=


def read_email(data: bytes, budget: ReadingBudget) -> str:
    """Read an e-mail message as Markdown.

    Args:
        data: The ``.eml`` file's bytes (RFC 5322).
        budget: What reading it may make: charged a piece for each part and each encoded word read, and the
            text as it is written.

    Returns:
        ``# Subject``, a line ``From: … · Date: …``, then the body: the text/plain part as
        plain text (a ``#`` line in it is text), else the text/html part through the HTML
        reader, its headings below the subject.

    Raises:
        UnreadableDocument: The message cannot be parsed, nests its parts past what can be read, holds more
            than :data:`MAX_PARTS` parts, or is past its budget.
    """
    bounded = policy.default.clone(message_factory=_PartCounter(budget), header_factory=_BoundedHeaders(budget))
    try:
        message = BytesParser(policy=bounded).parsebytes(data)
        if not isinstance(message, EmailMessage):  # policy.default makes every message one
            raise UnreadableDocument("corrupt or unreadable e-mail message")
        subject = str(message.get("subject") or "")
        sender = str(message.get("from") or "")
        date = str(message.get("date") or "")
        body = message.get_body(preferencelist=("plain", "html"))
        text = _content(body) if isinstance(body, EmailMessage) else ""
        html = isinstance(body, EmailMessage) and body.get_content_subtype() == "html"
    except (UnreadableDocument, MemoryError):
        raise
    except Exception:  # the email package may raise anything on a damaged message: that file is skipped
        raise UnreadableDocument("corrupt or unreadable e-mail message") from None
    outline = MarkdownOutline(budget)
    outline.heading(1, subject)
    outline.paragraph(" · ".join(f"{name}: {value}" for name, value in (("From", sender), ("Date", date)) if value))
    if html:
        try:
            outline.markdown(html_to_markdown(text, budget, under=1))
        except TooDeeplyNested as refused:
            raise UnreadableDocument(str(refused)) from None
    else:
        outline.markdown(plain_text(text.replace("\r\n", "\n").replace("\r", "\n")))
    return outline.text()


def _content(part: EmailMessage) -> str:
    """A text part's content, decoded; a charset Python does not know is read as UTF-8, bad bytes replaced."""
    try:
        content = part.get_content()
    except (LookupError, UnicodeError):
        payload = part.get_payload(decode=True)
        return payload.decode("utf-8", errors="replace") if isinstance(payload, bytes) else ""
    return content if isinstance(content, str) else ""


class _PartCounter:
    """Makes the message's parts for the parser, charging each, and refuses the message past :data:`MAX_PARTS`."""

    def __init__(self, budget: ReadingBudget) -> None:
        self.budget = budget
        self.parts = 0

    def __call__(self, policy: Policy[EmailMessage]) -> EmailMessage:
        self.parts += 1
        if self.parts > MAX_PARTS:
            raise UnreadableDocument(f"e-mail message of more than {MAX_PARTS:,} parts")
        self.budget.charge(pieces=1)
        return EmailMessage(policy=policy)


class _BoundedHeaders(HeaderRegistry):
    """The header registry of ``policy.default``, given each header cut to its bounds and charged its encoded words."""

    def __init__(self, budget: ReadingBudget) -> None:
        super().__init__()
        self.budget = budget

    def __call__(self, name: str, value: str) -> BaseHeader:
        value = value[:MAX_HEADER_CHARS]
        words = 0
        for words, word in enumerate(_ENCODED_WORD.finditer(value)):  # noqa: B007 (the count is used after)
            if words == MAX_ENCODED_WORDS:
                value = value[: word.start()]
                break
        self.budget.charge(pieces=words)
        return super().__call__(name, value)
