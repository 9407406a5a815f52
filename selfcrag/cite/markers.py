"""Reading and writing ``[n]`` citation markers.

An answer cites knowledge items as ``[1]``, ``[2]`` or ``[1][3]`` after the
sentences that use them. :func:`split_cited` turns an answer into sentences
with the numbers each cites; a sentence without a marker inherits the markers
of the rest of its paragraph, since models often cite once per paragraph.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from selfcrag.spans import Citation, KnowledgeItem, located, named_paths

_MARKER = re.compile(r"\s*\[(\d+)\]")
# A sentence ends at . ! ? 。 ！ ？ ； (with closing quotes/brackets), or at a line break.
_SENTENCE = re.compile(r".+?(?:(?:[。！？；]|[.!?;](?=\s|$|[\[\"'”’)）]))[\"'”’)）]*(?:\s*\[\d+\])*|\n|$)", re.DOTALL)


@dataclass(frozen=True)
class CitedSentence:
    """One answer sentence and the knowledge items it cites.

    Attributes:
        text: The sentence without its markers.
        cites: Item numbers cited, in order of appearance.
    """

    text: str
    cites: tuple[int, ...]


def defuse_markers(text: str) -> str:
    """Write a document's own bracketed numbers as ``［n］``, so they cannot pass for the answer's citations.

    A document may contain ``[7]`` (its own footnotes, or an injected fake
    citation); quoted into an answer as it is, it would be read as a citation
    of knowledge item 7. Full-width brackets read the same to people.

    Args:
        text: Text from a document.

    Returns:
        The text with every ``[n]`` as ``［n］``.
    """
    return _MARKER.sub(lambda marker: marker.group(0).replace("[", "［").replace("]", "］"), text)


def split_cited(answer: str) -> list[CitedSentence]:
    """Split an answer into sentences with the numbers each cites.

    Args:
        answer: Text with ``[n]`` markers.

    Returns:
        Non-empty sentences, in order.
    """
    sentences: list[CitedSentence] = []
    for paragraph in re.split(r"\n\s*\n", answer):
        found = []
        for piece in _pieces(paragraph):
            cites = tuple(dict.fromkeys(int(n) for n in _MARKER.findall(piece)))
            text = _MARKER.sub("", piece).strip()
            if text:
                found.append(CitedSentence(text, cites))
            elif cites and found:
                # Markers standing alone after the sentence they belong to.
                last = found[-1]
                found[-1] = CitedSentence(last.text, tuple(dict.fromkeys(last.cites + cites)))
        paragraph_cites = tuple(dict.fromkeys(n for s in found for n in s.cites))
        sentences.extend(s if s.cites else CitedSentence(s.text, paragraph_cites) for s in found)
    return sentences


def _pieces(paragraph: str) -> list[str]:
    """Sentences of a paragraph with their markers; the rows of a table stay one piece."""
    pieces: list[str] = []
    table: list[str] = []
    text: list[str] = []
    for line in paragraph.split("\n"):
        target = table if line.lstrip().startswith("|") else text
        other = text if target is table else table
        if other:
            pieces.extend(["\n".join(table)] if other is table else _SENTENCE.findall("\n".join(text)))
            other.clear()
        target.append(line)
    pieces.extend(["\n".join(table)] if table else _SENTENCE.findall("\n".join(text)))
    return pieces


def drop_unknown_markers(
    sentences: Sequence[CitedSentence], knowledge: Sequence[KnowledgeItem]
) -> tuple[list[CitedSentence], int]:
    """Remove the markers that point at no knowledge item (``[99]`` when there are five).

    A model may invent a source number, or be told to by a document; the
    marker would then cite nothing, and the sentence would look checked.

    Args:
        sentences: The answer's cited sentences.
        knowledge: The numbered knowledge items the answer drew on.

    Returns:
        The sentences with only the markers of existing items, and how many markers were removed.
    """
    known = {k["n"] for k in knowledge}
    kept = [CitedSentence(s.text, tuple(n for n in s.cites if n in known)) for s in sentences]
    return kept, sum(len(s.cites) for s in sentences) - sum(len(s.cites) for s in kept)


def keep_known_markers(text: str, knowledge: Sequence[KnowledgeItem]) -> str:
    """Remove from a text, left otherwise as written, the ``[n]`` markers that point at no knowledge item.

    Args:
        text: An answer with markers.
        knowledge: The numbered knowledge items the answer drew on.

    Returns:
        The text without the unknown markers.
    """
    known = {k["n"] for k in knowledge}
    return _MARKER.sub(lambda m: m.group(0) if int(m.group(1)) in known else "", text)


def join_cited(sentences: Iterable[CitedSentence], separator: str = " ") -> str:
    """Write sentences back with their markers.

    Args:
        sentences: Cited sentences.
        separator: Put between sentences.

    Returns:
        The answer text.
    """
    return separator.join(s.text + _markers(s) for s in sentences)


def _markers(sentence: CitedSentence) -> str:
    marks = "".join(f"[{n}]" for n in sentence.cites)
    # "... days. [1]" in English; "……退回。[1]" after Chinese punctuation.
    return marks if not marks or sentence.text[-1:] in "。！？；：，、）”" else " " + marks


def build_citations(sentences: Sequence[CitedSentence], knowledge: Sequence[KnowledgeItem]) -> list[Citation]:
    """List the knowledge items an answer cites, in order of first citation.

    Args:
        sentences: The answer's cited sentences.
        knowledge: The numbered knowledge items the answer drew on.

    Returns:
        One citation per cited item that exists; unknown numbers are ignored.
    """
    items = {k["n"]: k for k in knowledge}
    cited = dict.fromkeys(n for s in sentences for n in s.cites if n in items)
    return [
        Citation(
            n=n,
            source=items[n]["source"],
            **located(items[n]["path"], items[n]["place"], items[n]["also"]),
            title=items[n]["title"],
            section=list(items[n]["section"]),
            first=items[n]["first"],
            last=items[n]["last"],
            quote=items[n]["text"],
        )
        for n in cited
    ]


def section_path(section: Sequence[str], title: str) -> list[str]:
    """A passage's heading path without the heading that is its document's title.

    The first heading is the title only when it says so: a document may open
    with a ``##`` heading, or take its title from its first line.

    Args:
        section: Heading path, outermost first.
        title: The document's title.

    Returns:
        The headings to show, outermost first (empty: the passage stands under the title alone).
    """
    return list(section[1:] if section and section[0] == title else section)


def locate(
    source: str,
    section: Sequence[str],
    first: int,
    last: int,
    *,
    title: str,
    where: str = "",
    also: Sequence[str] = (),
) -> str:
    """Describe where a passage stands, for people: ``file › section (p. 6)``, or ``(sentences a–b)``.

    Args:
        source: Source path (or the form that opens it at its place, ``docs/guide.pdf#page=6``).
        section: Heading path.
        first: First sentence position (from 0).
        last: Last sentence position (inclusive).
        title: The document's title (not repeated in the path).
        where: Its place in the original file (``p. 6 (printed 3)``, ``lines 12–14``); without one, the
            sentence numbers are said, from 1.
        also: The other files of the same text: ``file (also: copy/file) › section (p. 6)``.

    Returns:
        The description.
    """
    path = " › ".join([named_paths(source, also), *section_path(section, title)])
    span = where or (f"sentence {first + 1}" if first == last else f"sentences {first + 1}–{last + 1}")
    return f"{path} ({span})"
