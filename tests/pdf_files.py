"""Hand-written PDFs for tests: text pages, an Info dictionary, and pages that share one content stream."""

from __future__ import annotations

import zlib
from collections.abc import Sequence


def _escape(line: str) -> str:
    return line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def page_content(lines: Sequence[str]) -> bytes:
    """The content stream of a page that shows ``lines`` top to bottom in Helvetica, one a line."""
    shown = "".join(f"({_escape(line)}) Tj T* " for line in lines)
    return f"BT /F1 11 Tf 14 TL 72 740 Td {shown}ET".encode("latin-1")


def text_pdf(
    pages: Sequence[bytes],
    *,
    title: str | None = None,
    shared: bool = False,
    compress: bool = False,
) -> bytes:
    """A PDF whose pages draw the given content streams.

    Args:
        pages: One content stream per page (see :func:`page_content`).
        title: The Info dictionary's ``/Title``, if any.
        shared: Every page draws the first stream (one object), as a hostile file does.
        compress: Store the streams with ``/FlateDecode``.

    Returns:
        The file's bytes.
    """
    streams = pages[:1] if shared else list(pages)
    first_page = 3
    font = first_page + len(pages)
    first_stream = font + 1
    info = first_stream + len(streams)
    kids = " ".join(f"{first_page + i} 0 R" for i in range(len(pages)))
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode()]
    for i in range(len(pages)):
        contents = first_stream if shared else first_stream + i
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 {font} 0 R >> >>"
            f" /Contents {contents} 0 R >>".encode()
        )
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for content in streams:
        body = zlib.compress(content, 9) if compress else content
        flate = b" /Filter /FlateDecode" if compress else b""
        objects.append(b"<< /Length %d%s >>\nstream\n" % (len(body), flate) + body + b"\nendstream")
    if title is not None:
        objects.append(f"<< /Title ({_escape(title)}) >>".encode("latin-1"))
    trailer_info = b" /Info %d 0 R" % info if title is not None else b""
    return pdf_bytes(objects, trailer=trailer_info)


def pdf_bytes(objects: Sequence[bytes], *, root: int = 1, trailer: bytes = b"") -> bytes:
    """A PDF of ``objects`` (numbered from 1, in order), its catalog object ``root``, with a cross-reference table."""
    out = bytearray(b"%PDF-1.7\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref_at = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root %d 0 R%s >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        root,
        trailer,
        xref_at,
    )
    return bytes(out)
