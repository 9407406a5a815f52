"""reStructuredText to text with its heading path, through docutils' own parser.

The document is parsed into a docutils doctree, and the tree is walked:
sections give the headings, paragraphs, list items, table rows and literal
blocks give the text. Nothing in a document is ever carried out: the
``include`` and ``raw`` directives (and file or URL options such as
``csv-table``'s) are disabled, no ``docutils.conf`` is read from the current
folder or elsewhere, and docutils reports nothing to stderr. Directives
docutils does not know (Sphinx's ``toctree``, ``automodule`` ...) leave only
their error in the tree, which is skipped.

A picture (``.. image::``, ``.. figure::``) is read as its ``:alt:`` text, a line where it stands (a figure's
caption after it), unless that is a file name or empty (see :mod:`selfcrag.files.alt_text`).

A substitution (``.. |name| replace:: ...``) is copied into the tree at each
``|name|`` before the tree can be walked, so what the substitutions would make
is reckoned from the source first (:func:`_substituted_chars`), and a document
whose substitutions would take it past its budget is not parsed.
"""

from __future__ import annotations

import io
import re
from collections import Counter
from typing import TYPE_CHECKING

from docutils import nodes
from docutils.core import publish_doctree

from selfcrag.files.alt_text import alt_text_lines
from selfcrag.files.outline import MarkdownOutline

if TYPE_CHECKING:
    from selfcrag.files.containers import ReadingBudget

__all__ = ["rst_to_markdown"]

# Parse only: no file insertion, no raw passthrough, no config files, no reports, never halt.
_SETTINGS = {
    "file_insertion_enabled": False,
    "raw_enabled": False,
    "_disable_config": True,
    "report_level": 5,
    "halt_level": 5,
    "traceback": True,  # raise, rather than print and exit, when docutils itself fails
    "syntax_highlight": "none",
    "input_encoding": "unicode",
    # Sections stay sections: promoting the title and a lone subsection to title and subtitle would drop
    # that subsection from the heading path of everything in it.
    "doctitle_xform": False,
}
# Nodes that hold no text of the document: parser messages, comments, link targets, substitutions.
_SKIPPED = (
    nodes.system_message,
    nodes.comment,
    nodes.target,
    nodes.substitution_definition,
    nodes.raw,
    nodes.pending,
    nodes.decoration,
    nodes.footnote_reference,
    nodes.citation_reference,
    nodes.label,
)
# An interpreted-text role docutils does not know (Sphinx's :func:`~pkg.name`, :ref:`Text <label>`),
# as the parser leaves it in a ``problematic`` node.
_UNKNOWN_ROLE = re.compile(r":[\w.+-]+(?::[\w.+-]+)*:`(?P<body>.*)`\Z", re.DOTALL)
_EXPLICIT_TARGET = re.compile(r"(?P<text>.*?)\s*<[^<>]*>\Z", re.DOTALL)
# A substitution's definition (``.. |name| replace:: text``; its text may go on in indented lines), and a use of one.
_SUBSTITUTION_DEFINITION = re.compile(r"\.\.[ \t]+\|(?P<name>[^|\n]+)\|[ \t]+[\w:-]+::")
_SUBSTITUTION_REFERENCE = re.compile(r"\|(?P<name>[^|\n]{1,200})\|")


def rst_to_markdown(source: str, budget: ReadingBudget) -> str:
    """Parse reStructuredText and write it as Markdown-shaped text.

    Top-level sections are level-1 headings and their subsections the levels
    below, so a document with one title over its sections is titled and
    sectioned as the same Markdown file would be. A table of contents
    (``.. contents::``) is left out: its entries are headings, not answers.

    Args:
        source: The document's text.
        budget: What reading it may make: its substitutions are reckoned against it before it is parsed,
            its text charged as it is written.

    Returns:
        The text, blocks separated by blank lines; empty when the document holds no text.

    Raises:
        UnreadableDocument: Its substitutions would take it past its budget, or its text does.
        Exception: Whatever docutils raises when it cannot parse the document at all.
    """
    budget.expect(_substituted_chars(source), counting="its substitutions")
    settings = {**_SETTINGS, "warning_stream": io.StringIO()}
    document = publish_doctree(source, settings_overrides=settings)
    outline = MarkdownOutline(budget)
    # Each node is walked with the heading level of the section it stands in; an explicit stack, not
    # recursion, so the walk works at any nesting docutils accepts.
    stack: list[tuple[nodes.Node, int]] = [(document, 0)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, _SKIPPED) or not isinstance(node, nodes.Element):
            continue
        children = _write_block(outline, node, level)
        inner = level + 1 if isinstance(node, nodes.section) else level
        stack.extend((child, inner) for child in reversed(children))
    return outline.text()


def _substituted_chars(source: str) -> int:
    """The characters the document's substitutions add, at most: each definition's text at each use of its name.

    Reckoned from the source, in one pass over it: a definition's text is its directive's line and the indented
    lines under it, with the substitutions it uses in turn (docutils refuses a circular one: it counts as none).
    A ``|name|`` anywhere counts as a use (in a table's border, a literal block or a definition too): more, never
    fewer. Names are compared as docutils does at last, in lower case with their spaces made single.
    """
    lines = source.split("\n")
    own: dict[str, str] = {}
    for number, line in enumerate(lines):
        definition = _SUBSTITUTION_DEFINITION.match(line)
        if definition is None:
            continue
        body = [line[definition.end() :]]
        for following in lines[number + 1 :]:
            if following.strip() and not following[0].isspace():
                break
            body.append(following)
        own.setdefault(_normalized(definition.group("name")), "\n".join(body))
    if not own:
        return 0
    inside = {
        name: Counter(_normalized(use) for use in _SUBSTITUTION_REFERENCE.findall(body)) for name, body in own.items()
    }
    sizes: dict[str, int] = {}
    for first in own:  # depth first, with a stack of its own: a chain of definitions may be long
        stack, open_now = [(first, False)], set()
        while stack:
            name, inner_done = stack.pop()
            if name in sizes:
                continue
            if inner_done:
                open_now.discard(name)
                used = inside[name].items()
                sizes[name] = len(own[name]) + sum(count * sizes.get(other, 0) for other, count in used)
            elif name not in open_now:  # one met again while open is a circle, which docutils refuses: none
                open_now.add(name)
                stack.append((name, True))
                stack.extend((other, False) for other in inside[name] if other in own and other not in open_now)
    uses = Counter(_normalized(use) for use in _SUBSTITUTION_REFERENCE.findall(source))
    return sum(count * sizes[name] for name, count in uses.items() if name in own)


def _normalized(name: str) -> str:
    """A substitution's name as docutils compares names at last: in lower case, its spaces made single."""
    return " ".join(name.split()).lower()


def _write_block(outline: MarkdownOutline, node: nodes.Element, level: int) -> list[nodes.Node]:
    """Write one block of the doctree and return the children still to walk.

    Args:
        outline: Where the text goes.
        node: The block.
        level: Heading level of the section the block stands in (0 before any heading).

    Returns:
        The children to walk next; empty when the block was written whole.
    """
    if isinstance(node, nodes.title) and isinstance(node.parent, nodes.section):
        outline.heading(level, inline_text(node))
        return []
    if isinstance(node, nodes.topic) and "contents" in node["classes"]:
        return []
    if isinstance(node, (nodes.definition_list_item, nodes.field, nodes.option_list_item)):
        return _write_labelled_item(outline, node)
    if isinstance(node, nodes.paragraph) and isinstance(node.parent, nodes.list_item) and node is node.parent[0]:
        outline.item(inline_text(node))
        return []
    if isinstance(node, nodes.image):  # a picture (``.. image::``, a figure's): its ``:alt:`` text, where it stands
        for line in alt_text_lines(node.get("alt")):
            outline.paragraph(line)
        return []
    if isinstance(node, nodes.FixedTextElement):  # literal and doctest blocks, math: lines that mean something
        outline.code(node.astext())
        return []
    if isinstance(node, nodes.line_block):
        outline.paragraph("\n".join(inline_text(line) for line in node.findall(nodes.line)))
        return []
    if isinstance(node, nodes.table):
        title = node.first_child_matching_class(nodes.title)
        if title is not None:
            outline.paragraph(inline_text(node[title]))
        outline.table([[inline_text(entry) for entry in row.findall(nodes.entry)] for row in node.findall(nodes.row)])
        return []
    if isinstance(node, nodes.TextElement):  # paragraphs and any other block of text: its words, on one line
        outline.paragraph(inline_text(node))
        return []
    return list(node.children)


def _write_labelled_item(outline: MarkdownOutline, node: nodes.Element) -> list[nodes.Node]:
    """Write a definition, field or option as one item, ``label: first paragraph``, and return the rest.

    Args:
        outline: Where the text goes.
        node: A ``definition_list_item``, ``field`` or ``option_list_item``.

    Returns:
        The blocks of its body after the first paragraph, still to walk.
    """
    body_class = {
        nodes.definition_list_item: nodes.definition,
        nodes.field: nodes.field_body,
        nodes.option_list_item: nodes.description,
    }[type(node)]
    labels = [child for child in node.children if not isinstance(child, body_class)]
    label = " ".join(inline_text(child) for child in labels if isinstance(child, nodes.Element))
    bodies = [child for child in node.children if isinstance(child, body_class)]
    rest = list(bodies[0].children) if bodies else []
    if rest and isinstance(rest[0], nodes.paragraph):
        outline.item(f"{label}: {inline_text(rest.pop(0))}")
    else:
        outline.item(label)
    return rest


def inline_text(node: nodes.Element) -> str:
    """The words of a text block: inline markup kept as its text, references to notes left out.

    Args:
        node: A paragraph, title, table entry or other block of text.

    Returns:
        Its text; a role docutils does not know (``:func:`~pkg.run```) gives its text (``run``).
    """
    parts: list[str] = []
    stack: list[nodes.Node] = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, nodes.Text):
            parts.append(current.astext())
        elif isinstance(current, nodes.problematic):
            parts.append(_role_text(current.astext()))
        elif isinstance(current, nodes.Element) and not isinstance(current, _SKIPPED):
            stack.extend(reversed(current.children))
    return "".join(parts)


def _role_text(raw: str) -> str:
    """What a reader sees of a role docutils does not know.

    ``:ref:`Install <install>``` is ``Install``, ``:func:`~a.run``` is ``run``, ``:envvar:`HOME``` is ``HOME``.
    """
    role = _UNKNOWN_ROLE.match(raw)
    if role is None:
        return raw
    body = role.group("body")
    explicit = _EXPLICIT_TARGET.match(body)
    if explicit is not None and explicit.group("text"):
        return explicit.group("text")
    return body.rsplit(".", 1)[-1] if body.startswith("~") else body.lstrip("!")
