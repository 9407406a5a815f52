"""An e-mail saved as ``.eml`` as Markdown: its subject as the title, who sent it and when, then its text.

The message is parsed by the standard library's :mod:`email` package with
``policy.default``, which decodes encoded headers (``=?UTF-8?B?…?=``), transfer
encodings and charsets. The text is the plain-text body, or when there is none
the HTML body read by the HTML reader. Attachments are not read, and nothing in a
message is run or fetched (the HTML reader loads no image and follows no link).
"""

from __future__ import annotations

from email import policy
from email.message import EmailMessage
from email.parser import BytesParser

from selfcrag.files.containers import UnreadableDocument
from selfcrag.files.html_page import TooDeeplyNested, html_to_markdown
from selfcrag.files.outline import MarkdownOutline, plain_text

__all__ = ["read_email"]


def read_email(data: bytes) -> str:
    """Read an e-mail message as Markdown.

    Args:
        data: The ``.eml`` file's bytes (RFC 5322).

    Returns:
        ``# Subject``, a line ``From: … · Date: …``, then the body: the text/plain part as
        plain text (a ``#`` line in it is text), else the text/html part through the HTML
        reader, its headings below the subject.

    Raises:
        UnreadableDocument: The message cannot be parsed, or nests its parts past what can be read.
    """
    try:
        message = BytesParser(policy=policy.default).parsebytes(data)
        if not isinstance(message, EmailMessage):  # policy.default makes every message one
            raise UnreadableDocument("corrupt or unreadable e-mail message")
        subject = str(message.get("subject") or "")
        sender = str(message.get("from") or "")
        date = str(message.get("date") or "")
        body = message.get_body(preferencelist=("plain", "html"))
        text = _content(body) if isinstance(body, EmailMessage) else ""
        html = isinstance(body, EmailMessage) and body.get_content_subtype() == "html"
    except UnreadableDocument:
        raise
    except Exception:  # the email package may raise anything on a damaged message: that file is skipped
        raise UnreadableDocument("corrupt or unreadable e-mail message") from None
    outline = MarkdownOutline()
    outline.heading(1, subject)
    outline.paragraph(" · ".join(f"{name}: {value}" for name, value in (("From", sender), ("Date", date)) if value))
    if html:
        try:
            outline.markdown(html_to_markdown(text, under=1))
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
