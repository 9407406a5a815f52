"""An EPUB book as Markdown: its title, then each chapter in reading order under its table-of-contents title.

An EPUB is a ZIP archive of XHTML chapters, listed in reading order by the package
document's spine and titled by the book's table of contents (``nav.xhtml`` in EPUB 3,
``toc.ncx`` in EPUB 2). It is read with :mod:`zipfile` and defusedxml through
:mod:`selfcrag.files.containers`, which bounds what is unpacked (a zip bomb is refused
from the archive's directory, before anything is inflated) and refuses any XML part that
declares entities (a billion laughs is never expanded). Each chapter is read by the HTML
reader (:func:`~selfcrag.files.html_page.html_to_markdown`), its headings placed below
its section, so a sentence's section path is the book's title, the chapter's title in the
table of contents, then the chapter's own headings. Nothing in a book is run or fetched:
scripts are left out by the HTML reader and links are never followed. A chapter the spine
lists more than once is read once, where it is first listed (a spine of 30,000 entries
naming one chapter is one chapter, not 30,000 copies of it), and every entry is charged to
the book's budget.

EbookLib (0.20) reads EPUBs too, but it inflates every item of the manifest (images and
fonts too) whole into memory, with no bound on what a member unpacks to, and parses with
lxml's recovering parser; the bounds and the refusal of entities here are those of every
container format the project reads, and only the chapters' text is inflated.
"""

from __future__ import annotations

import posixpath
import re
import zipfile
from urllib.parse import unquote, urlsplit
from xml.etree.ElementTree import Element

from selectolax.lexbor import LexborHTMLParser

from selfcrag.files.containers import (
    ReadingBudget,
    UnreadableDocument,
    count_tags,
    open_zip,
    parse_xml,
    read_member,
)
from selfcrag.files.html_page import TooDeeplyNested, html_to_markdown

__all__ = ["read_epub"]

_KIND = "EPUB book"
_CHAPTER_TYPES = frozenset({"application/xhtml+xml", "text/html", "application/html"})
# The heading a chapter's table-of-contents title takes, under the book's title; the chapter's own headings go below.
_CHAPTER_LEVEL = 2
# Font obfuscation (EPUB's and Adobe's) scrambles fonts only; any other encryption of a chapter is DRM.
_FONT_OBFUSCATION = frozenset({"http://www.idpf.org/2008/embedding", "http://ns.adobe.com/pdf/enc#RC"})
_XML_ENCODING = re.compile(rb"""<\?xml[^>]*encoding=["']([A-Za-z0-9._-]{1,40})["']""")
_SPACES = re.compile(r"\s+")


def read_epub(data: bytes, budget: ReadingBudget) -> str:
    """Read an EPUB book's chapters, in reading order, as Markdown under their table-of-contents titles.

    Args:
        data: The ``.epub`` file's bytes.
        budget: What reading it may make: charged the elements of its package documents before they are
            parsed, each entry of its spine, each chapter's elements and its text as it is written.

    Returns:
        ``# Book title``, then for each chapter ``## Its title in the table of contents`` and its
        text (its own headings from level 3; a first heading that repeats the chapter's title is
        left out). A chapter the table of contents does not list (a cover, a title page) keeps
        its own headings from level 2. The table of contents itself is not part of the text.

    Raises:
        UnreadableDocument: The file is no EPUB, is corrupt, DRM-protected, would unpack past the
            bounds of :func:`~selfcrag.files.containers.open_zip`, one of its XML parts declares entities,
            or it is past its budget.
    """
    archive = open_zip(data, _KIND)
    package_path = _package_path(archive, budget)
    package = parse_xml(read_member(archive, package_path, _KIND), _KIND, budget)
    folder = posixpath.dirname(package_path)
    manifest = {
        item.get("id", ""): item
        for item in _children(package, "manifest", "item")
        if item.get("id") and item.get("href") is not None
    }
    _refuse_drm(archive, budget)
    titles = _table_of_contents(archive, package, manifest, folder, budget)
    blocks: list[str] = []
    book_title = _one_line(next((_text(e) for e in package.iter() if _local(e.tag) == "title"), ""))
    if book_title:
        blocks.append(f"# {book_title}")
        budget.charge(len(blocks[-1]), pieces=1)
    read: set[str] = set()
    for itemref in _children(package, "spine", "itemref"):
        budget.charge(pieces=1)
        item = manifest.get(itemref.get("idref", ""))
        if item is None or item.get("media-type", "") not in _CHAPTER_TYPES:
            continue
        if "nav" in item.get("properties", "").split():
            continue  # the table of contents, read as the chapters' titles: no evidence of its own
        path = _member_path(folder, item.get("href", ""))
        if path in read:
            continue  # listed again: its text is in the book once
        read.add(path)
        chapter = _chapter_markdown(read_member(archive, path, _KIND), titles.get(path), path, budget)
        if chapter.strip():
            blocks.append(chapter)
    return "\n\n".join(blocks)


def _package_path(archive: zipfile.ZipFile, budget: ReadingBudget) -> str:
    """The package document's path, as ``META-INF/container.xml`` names it."""
    container = parse_xml(read_member(archive, "META-INF/container.xml", _KIND), _KIND, budget)
    for rootfile in container.iter():
        if _local(rootfile.tag) == "rootfile" and rootfile.get("full-path"):
            return rootfile.get("full-path", "")
    raise UnreadableDocument(f"corrupt or unreadable {_KIND} (no package document named in it)")


def _refuse_drm(archive: zipfile.ZipFile, budget: ReadingBudget) -> None:
    """Refuse a book whose chapters are encrypted (DRM): their bytes would be read as noise."""
    if "META-INF/encryption.xml" not in archive.namelist():
        return
    encryption = parse_xml(read_member(archive, "META-INF/encryption.xml", _KIND), _KIND, budget)
    for data in encryption.iter():
        if _local(data.tag) != "EncryptedData":
            continue
        methods = [e.get("Algorithm", "") for e in data.iter() if _local(e.tag) == "EncryptionMethod"]
        if not all(method in _FONT_OBFUSCATION for method in methods):
            raise UnreadableDocument(f"DRM-protected {_KIND} (its chapters are encrypted)")


def _table_of_contents(
    archive: zipfile.ZipFile, package: Element, manifest: dict[str, Element], folder: str, budget: ReadingBudget
) -> dict[str, str]:
    """Each chapter's title in the book's table of contents (EPUB 3's navigation document, else EPUB 2's NCX).

    Returns:
        The title of the first entry that leads to each chapter, by the chapter's member path.
    """
    nav = next((item for item in manifest.values() if "nav" in item.get("properties", "").split()), None)
    if nav is not None:
        path = _member_path(folder, nav.get("href", ""))
        titles = _nav_titles(read_member(archive, path, _KIND), posixpath.dirname(path), budget)
        if titles:
            return titles
    spine = next((e for e in package.iter() if _local(e.tag) == "spine"), None)
    ncx = manifest.get(spine.get("toc", "") if spine is not None else "")
    if ncx is None:
        ncx = next((item for item in manifest.values() if item.get("media-type") == "application/x-dtbncx+xml"), None)
    if ncx is None:
        return {}
    path = _member_path(folder, ncx.get("href", ""))
    return _ncx_titles(parse_xml(read_member(archive, path, _KIND), _KIND, budget), posixpath.dirname(path))


def _nav_titles(data: bytes, folder: str, budget: ReadingBudget) -> dict[str, str]:
    """The chapter titles of an EPUB 3 navigation document: the links of its ``toc`` nav, in order."""
    budget.charge(pieces=count_tags(data))
    tree = LexborHTMLParser(_decode(data))
    toc = tree.css_first('nav[epub\\:type~="toc"]') or tree.css_first("nav")
    titles: dict[str, str] = {}
    for link in toc.css("a[href]") if toc is not None else []:
        title = _one_line(link.text(deep=True))
        path = _member_path(folder, link.attributes.get("href") or "")
        if title and path:
            titles.setdefault(path, title)
    return titles


def _ncx_titles(ncx: Element, folder: str) -> dict[str, str]:
    """The chapter titles of an EPUB 2 NCX: its navigation points, in document order."""
    titles: dict[str, str] = {}
    for point in ncx.iter():
        if _local(point.tag) != "navPoint":
            continue
        label = next((e for e in point.iter() if _local(e.tag) == "text"), None)
        content = next((e for e in point if _local(e.tag) == "content"), None)
        title = _one_line(_text(label)) if label is not None else ""
        path = _member_path(folder, content.get("src", "")) if content is not None else ""
        if title and path:
            titles.setdefault(path, title)
    return titles


def _chapter_markdown(data: bytes, title: str | None, path: str, budget: ReadingBudget) -> str:
    """A chapter as Markdown: under ``## title`` when the table of contents names it, else by its own headings.

    Its text is charged to ``budget`` as it is written, its heading and the blank lines around it here.
    """
    try:
        if title is None:
            return html_to_markdown(_decode(data), budget, under=_CHAPTER_LEVEL - 1)
        text = html_to_markdown(_decode(data), budget, under=_CHAPTER_LEVEL)
    except TooDeeplyNested as refused:
        raise UnreadableDocument(f"{refused} ({path})") from None
    except (UnreadableDocument, MemoryError):
        raise
    except Exception:  # the HTML parser may raise anything on a chapter it cannot read: the book is skipped
        raise UnreadableDocument(f"corrupt or unreadable {_KIND} ({path} is damaged)") from None
    heading = f"{'#' * _CHAPTER_LEVEL} {title}"
    budget.charge(len(heading) + 4, pieces=1)
    first, _, rest = text.partition("\n\n")
    if first.lstrip("#").strip() == title and first.startswith("#"):
        text = rest  # the chapter's first heading repeats its title in the table of contents
    return f"{heading}\n\n{text}" if text.strip() else heading


def _decode(data: bytes) -> str:
    """An XHTML part's text: UTF-16 by its byte-order mark, else UTF-8, else the encoding its XML declaration names."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", errors="replace")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    declared = _XML_ENCODING.search(data[:200])
    try:
        return data.decode(declared.group(1).decode("ascii") if declared else "cp1252", errors="replace")
    except LookupError:
        return data.decode("utf-8", errors="replace")


def _member_path(folder: str, href: str) -> str:
    """The archive member a link leads to (relative to ``folder``), without its fragment; empty for another site."""
    parts = urlsplit(href)
    if parts.scheme or parts.netloc or not parts.path:
        return ""
    return posixpath.normpath(posixpath.join(folder, unquote(parts.path))).lstrip("/")


def _children(root: Element, parent: str, child: str) -> list[Element]:
    """The ``child`` elements of the first ``parent`` element (namespaces ignored), in order."""
    found = next((e for e in root.iter() if _local(e.tag) == parent), None)
    return [e for e in found if _local(e.tag) == child] if found is not None else []


def _local(tag: object) -> str:
    """An element's name without its namespace (comments and processing instructions have none)."""
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _text(element: Element) -> str:
    return "".join(element.itertext())


def _one_line(text: str) -> str:
    return _SPACES.sub(" ", text).strip()
