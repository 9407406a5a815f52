"""An EPUB book as Markdown: its title, then each chapter in reading order under its table-of-contents title.

An EPUB is a ZIP archive of XHTML chapters, listed in reading order by the package
document's spine and titled by the book's table of contents (``nav.xhtml`` in EPUB 3,
``toc.ncx`` in EPUB 2). It is read with :mod:`zipfile` and defusedxml through
:mod:`selfcrag.files.containers`, which bounds what is unpacked (a zip bomb is refused
from the archive's directory, before anything is inflated) and refuses any XML part that
declares entities (a billion laughs is never expanded). Each chapter is read by the HTML
reader (:mod:`selfcrag.files.html_page`), its headings placed below its section, so a
sentence's section path is the book's title, the chapter's title in the table of contents,
then the chapter's own headings. The book's author(s) (``dc:creator``) and description
(``dc:description``) are its first lines, under its title.

A table of contents may lead into a chapter at its anchors (``chapter.xhtml#part2``), as a
book whose whole text is one file's does: each such entry then cuts the chapter, and titles
the part from its anchor on (a part's heading that repeats the title is left out), so the
parts are sections of their own, not all the one section of the chapter's first entry. The
text is placed at the anchors it stands at, as an HTML page's is
(:data:`~selfcrag.files.places.ANCHOR`, its ``id``), so a citation names ``#part2``. Nothing
in a book is run or fetched:
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

import itertools
import posixpath
import re
import zipfile
from collections.abc import Iterator
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
from selfcrag.files.html_page import TooDeeplyNested, _written
from selfcrag.files.outline import BLOCK_SEPARATOR
from selfcrag.files.places import ANCHOR, NO_PLACE, Place, PlacedOutline

__all__ = ["read_epub"]

_KIND = "EPUB book"
_CHAPTER_TYPES = frozenset({"application/xhtml+xml", "text/html", "application/html"})
# The heading a chapter's table-of-contents title takes, under the book's title; the chapter's own headings go below.
_CHAPTER_LEVEL = 2
# Font obfuscation (EPUB's and Adobe's) scrambles fonts only; any other encryption of a chapter is DRM.
_FONT_OBFUSCATION = frozenset({"http://www.idpf.org/2008/embedding", "http://ns.adobe.com/pdf/enc#RC"})
_XML_ENCODING = re.compile(rb"""<\?xml[^>]*encoding=["']([A-Za-z0-9._-]{1,40})["']""")
_SPACES = re.compile(r"\s+")
_HEADING = re.compile(r"^#{1,6} ")

# A chapter's entries in the table of contents, in order: the anchor each leads to ("" for the chapter's start), and
# its title (a dict: an anchor listed again is found in one step, so a table of 100,000 anchors is no quadratic walk).
TableOfContents = dict[str, dict[str, str]]


def read_epub(data: bytes, budget: ReadingBudget) -> tuple[str, tuple[Place, ...]]:
    """Read an EPUB book's chapters, in reading order, as Markdown under their table-of-contents titles.

    Args:
        data: The ``.epub`` file's bytes.
        budget: What reading it may make: charged the elements of its package documents before they are
            parsed, each entry of its spine, each chapter's elements and its text as it is written.

    Returns:
        ``# Book title``, its authors and description, then for each chapter ``## Its title in the
        table of contents`` and its text (its own headings from level 3; a first heading that
        repeats the chapter's title is left out), each entry leading to an anchor in it a ``##``
        section from there. A chapter the table of contents does not list (a cover, a title page)
        keeps its own headings from level 2. The table of contents itself is not part of the text.
        And the anchors the text stands at (:data:`~selfcrag.files.places.ANCHOR` places).

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
    contents = _table_of_contents(archive, package, manifest, folder, budget)
    outline = PlacedOutline(budget)
    _write_metadata(outline, package)
    anchors = itertools.count(1)  # the book's anchors, numbered in its order
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
        entries = list(contents.get(path, {}).items())
        _write_chapter(outline, read_member(archive, path, _KIND), entries, path, anchors)
    return outline.text(), outline.places()


def _write_metadata(outline: PlacedOutline, package: Element) -> None:
    """Write the book's title as its heading, then its authors and its description (which may be HTML)."""
    metadata = next((e for e in package.iter() if _local(e.tag) == "metadata"), package)
    values: dict[str, list[str]] = {"title": [], "creator": [], "description": []}
    for element in metadata.iter():
        if _local(element.tag) in values:
            values[_local(element.tag)].append(_text(element))
    titles = [_one_line(title) for title in values["title"] if title.strip()]
    if titles:
        outline.heading(1, titles[0])
    creators = [_one_line(creator) for creator in values["creator"] if creator.strip()]
    if creators:
        outline.paragraph(f"{'Authors' if len(creators) > 1 else 'Author'}: {', '.join(creators)}")
    for description in values["description"]:
        for paragraph in _decode_markup(description).split("\n"):
            outline.paragraph(paragraph)


def _decode_markup(text: str) -> str:
    """A description's text: its HTML's paragraphs one a line when it is HTML (as EPUB's often is), else itself."""
    if "<" not in text:
        return text
    tree = LexborHTMLParser(text)
    for block in tree.css("p, div, li, br, h1, h2, h3, h4, h5, h6"):
        block.insert_after("\n")
    body = tree.body
    return body.text(deep=True) if body is not None else text


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
) -> TableOfContents:
    """Each chapter's entries in the book's table of contents (EPUB 3's navigation document, else EPUB 2's NCX).

    Returns:
        By the chapter's member path, the entries that lead into it, in order: the anchor each leads to (``""``
        for none) and its title; an anchor the table lists twice is titled by its first entry.
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


def _nav_titles(data: bytes, folder: str, budget: ReadingBudget) -> TableOfContents:
    """The entries of an EPUB 3 navigation document: the links of its ``toc`` nav, in order."""
    budget.charge(pieces=count_tags(data))
    tree = LexborHTMLParser(_decode(data))
    toc = tree.css_first('nav[epub\\:type~="toc"]') or tree.css_first("nav")
    contents: TableOfContents = {}
    for link in toc.css("a[href]") if toc is not None else []:
        _add_entry(contents, folder, link.attributes.get("href") or "", _one_line(link.text(deep=True)))
    return contents


def _ncx_titles(ncx: Element, folder: str) -> TableOfContents:
    """The entries of an EPUB 2 NCX: its navigation points, in document order.

    A point's title is its own ``navLabel``'s text, never looked for among the points nested in it: 18,000 nested
    points without a label of their own took 58 s to be searched each through all below it.
    """
    contents: TableOfContents = {}
    for point in ncx.iter():
        if _local(point.tag) != "navPoint":
            continue
        label = next((e for e in point if _local(e.tag) == "navLabel"), None)
        content = next((e for e in point if _local(e.tag) == "content"), None)
        title = _one_line(_text(label)) if label is not None else ""
        _add_entry(contents, folder, content.get("src", "") if content is not None else "", title)
    return contents


def _add_entry(contents: TableOfContents, folder: str, href: str, title: str) -> None:
    """Add an entry of the table of contents under its chapter, unless untitled, elsewhere or its anchor's again."""
    path = _member_path(folder, href)
    anchor = unquote(urlsplit(href).fragment)
    if title and path:
        contents.setdefault(path, {}).setdefault(anchor, title)


def _write_chapter(
    outline: PlacedOutline, data: bytes, entries: list[tuple[str, str]], path: str, anchors: Iterator[int]
) -> None:
    """Write a chapter: under ``## title`` when the table of contents names it, else by its own headings.

    An entry that leads to an anchor in the chapter titles the part from that anchor on, as a ``##`` heading of
    its own. The chapter's blocks are charged to the book's budget as the HTML reader writes them; the headings
    written here, when written.
    """
    titled = bool(entries)
    try:
        chapter = _written(_decode(data), _CHAPTER_LEVEL if titled else _CHAPTER_LEVEL - 1, outline.budget)
    except TooDeeplyNested as refused:
        raise UnreadableDocument(f"{refused} ({path})") from None
    except (UnreadableDocument, MemoryError):
        raise
    except Exception:  # the HTML parser may raise anything on a chapter it cannot read: the book is skipped
        raise UnreadableDocument(f"corrupt or unreadable {_KIND} ({path} is damaged)") from None
    places = _places_by_block(chapter)
    found = {place.label for block in places.values() for place in block if place.kind == ANCHOR}
    cuts = {anchor: title for anchor, title in entries if anchor in found}
    # The chapter's start is titled by an entry that leads to it, else by the first entry whose anchor the HTML
    # reader does not place (an id on a span inside a paragraph): its title is kept, at the chapter's start.
    start = next((title for anchor, title in entries if not anchor), None)
    if entries and entries[0][0] not in cuts:
        start = entries[0][1]
    outline.unplace()  # no anchor of the chapter before holds here
    if start is not None:
        outline.heading(_CHAPTER_LEVEL, start)
    title = start
    for number, block in enumerate(chapter.blocks):
        for place in places.get(number, []):
            if place.kind == NO_PLACE:
                outline.unplace()
                continue
            outline.place(ANCHOR, next(anchors), label=place.label)
            if place.label in cuts:
                title = cuts.pop(place.label)
                outline.heading(_CHAPTER_LEVEL, title)
        if title is not None and _HEADING.match(block) and block.lstrip("#").strip() == title:
            title = None  # the part's first heading repeats its title in the table of contents
            continue
        title = None
        outline.blocks.append(block)  # charged by the HTML reader


def _places_by_block(chapter: PlacedOutline) -> dict[int, list[Place]]:
    """A chapter's places, by the block each starts at."""
    starts: dict[int, int] = {}
    offset = 0
    for number, block in enumerate(chapter.blocks):
        starts[offset] = number
        offset += len(block) + len(BLOCK_SEPARATOR)
    by_block: dict[int, list[Place]] = {}
    for place in chapter.places():
        if place.offset in starts:
            by_block.setdefault(starts[place.offset], []).append(place)
    return by_block


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
