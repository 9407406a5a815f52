"""A manual page saved as text (``man userdel | col -b > userdel.txt``), read for its sections and title.

Such a file starts with the page's header line, ``USERDEL(8)   System Management
Commands   USERDEL(8)``, puts each section's name at the left margin (``NAME``,
``OPTIONS``, ``名称``, ``选项``) and indents its text. It is written as Markdown
here: the NAME section's line (``userdel - delete a user account and related
files``) is the title, each section a heading, an option with its indented
description one item, so a question about ``-r`` finds its sentence under
"OPTIONS" and the page is titled by what it is about, not by its header line.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from selfcrag.files.outline import MarkdownOutline
from selfcrag.split.sentences import join_wrapped_lines

if TYPE_CHECKING:
    from selfcrag.files.containers import ReadingBudget

__all__ = ["is_man_page", "is_roff_page", "man_page_to_markdown", "roff_page_to_markdown"]

# The header (and footer) line: the page's name and section at the left and at the right.
_HEADER = re.compile(r"^(?P<page>[\w.:+-]+)\((?P<section>\w+)\)\s.*\S\s+(?P=page)\((?P=section)\)\s*$")
_FOOTER = re.compile(r"\S\s{2,}.*\s(?P<page>[\w.:+-]+)\((?P<section>\w+)\)\s*$")
_NAME_SECTIONS = frozenset({"NAME", "名称", "名字", "NOM", "NOMBRE", "NAMN", "BEZEICHNUNG", "名前"})


def is_man_page(text: str) -> bool:
    """Tell whether a text file is a manual page: its first line is the page's header.

    Args:
        text: The decoded file.

    Returns:
        True for a first line such as ``USERDEL(8)  系统管理命令  USERDEL(8)``.
    """
    first = next((line for line in text.split("\n") if line.strip()), "")
    return _HEADER.match(first.strip()) is not None


def man_page_to_markdown(text: str, budget: ReadingBudget) -> str:
    """Write a manual page's text as Markdown: title, section headings, paragraphs and option items.

    Args:
        text: A text the :func:`is_man_page` test accepts.
        budget: What reading it may make, charged as it is written.

    Returns:
        ``# name - what it does`` (from the NAME section), then ``## SECTION`` and its blocks.

    Raises:
        UnreadableDocument: It is past its budget.
    """
    lines = text.split("\n")
    header = next(i for i, line in enumerate(lines) if line.strip())
    sections: list[tuple[str, list[str]]] = []
    for line in lines[header + 1 :]:
        if line.strip() and not line[0].isspace():
            if _FOOTER.search(line):
                continue  # the footer: the package, the date and the page again
            sections.append((line.strip(), []))
        elif sections:
            sections[-1][1].append(line)
    outline = MarkdownOutline(budget)
    title = next((_one_text(body) for name, body in sections if name.upper() in _NAME_SECTIONS), "")
    outline.heading(1, title or lines[header].split("(")[0])
    for name, body in sections:
        if name.upper() in _NAME_SECTIONS and title:
            continue
        outline.heading(2, name)
        for block in _blocks(body):
            _write_block(outline, block)
    return outline.text()


def _blocks(body: list[str]) -> list[list[str]]:
    """The blank-line-separated blocks of a section's lines."""
    blocks: list[list[str]] = [[]]
    for line in body:
        if line.strip():
            blocks[-1].append(line)
        elif blocks[-1]:
            blocks.append([])
    return [block for block in blocks if block]


def _write_block(outline: MarkdownOutline, block: list[str]) -> None:
    """A block whose first line is followed by deeper-indented lines is an option and its description."""
    indent = _indent(block[0])
    if len(block) > 1 and all(_indent(line) > indent for line in block[1:]):
        outline.item(f"{block[0].strip()}: {_one_text(block[1:])}")
    else:
        outline.paragraph(_one_text(block))


def _one_text(lines: list[str]) -> str:
    """Indented lines as one line of text (no space between two Chinese characters)."""
    return join_wrapped_lines("\n".join(line.strip() for line in lines if line.strip()))


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


# --------------------------------------------------------------------------- #
# manual pages in their source, roff (man and mdoc macros)
# --------------------------------------------------------------------------- #

# A manual's section as a file's suffix: ls.1, useradd.8, SSL_read.3ssl, chage.zh_CN.1 (compressed or not).
_SECTION_SUFFIX = re.compile(r"\.[1-9][a-z]*$", re.IGNORECASE)
# How a page's source opens: a comment, the man page's title, the mdoc page's date or title, a macro or string.
_ROFF_OPENING = re.compile(r"""^(?:[.']\\"|\.(?:TH|Dd|Dt|de|ig|ds|nr|so|lf|if|ie)\b)""")
_ROFF_TITLE = re.compile(r"^\.(?:TH|Dd|Dt)\b", re.MULTILINE)
_LINES_FOR_TITLE = 200  # the .TH line stands after the page's license comment, if any
# The requests and macros that end a paragraph (man's and mdoc's), and those that only format (no text of their own).
_BREAKS = frozenset({"PP", "LP", "P", "HP", "sp", "br", "RS", "RE", "Pp", "Lp", "Bd", "Ed", "Bl", "El", "in", "ti"})
_FONT_ALTERNATING = frozenset({"BR", "BI", "IB", "IR", "RB", "RI"})
_FONT_WORDS = frozenset({"B", "I", "SM", "SB"})
_NO_FILL = frozenset({"nf", "EX"})
_FILL = frozenset({"fi", "EE"})
# mdoc's macros that may stand inside a line (``.It Fl v Ar file``): left out, their arguments kept; Fl makes an option.
_MDOC_CALLABLE = frozenset(
    {"Ar", "Cm", "Dv", "Er", "Ev", "Fa", "Fn", "Ic", "Li", "Nm", "Pa", "Sy", "Em", "Va", "Xr", "Ql", "Dq", "Sq"}
    | {"Qq", "Pq", "Op", "Oo", "Oc", "Ns", "No", "Ux", "Aq", "Bq", "Brq", "Ad", "An", "Cd", "Ft", "Lk", "Mt", "Tn"}
)
_ESCAPE = re.compile(
    r"""\\(?:
        f(?:\[[^\]\n]*\]|\(..|.)          # a font
      | s(?:\[[^\]\n]*\]|[-+]?\d{1,2}|\(..)  # a size
      | [*](?:\[(?P<string>[^\]\n]*)\]|\((?P<string2>..)|(?P<string1>.))  # a string
      | \[(?P<named>[^\]\n]*)\]          # a character by name
      | \((?P<named2>..)                 # a character by a two-letter name
      | [hvwoklLDNbxXZ]'[^'\n]*'         # a motion, width, overstrike, line, ...
      | [nmgkVY](?:\[[^\]\n]*\]|\(..|.)  # a number register, colour, environment
      | (?P<char>.)                      # one character
    )""",
    re.VERBOSE,
)
_ONE_CHARACTER = {"-": "-", "e": "\\", "\\": "\\", " ": " ", "~": " ", "0": " ", "t": "\t", ".": ".", "'": "'"}
_NAMED = {
    "em": "—", "en": "–", "hy": "-", "aq": "'", "dq": '"', "bu": "•", "co": "©", "rg": "®", "tm": "™",
    "lq": "“", "rq": "”", "oq": "‘", "cq": "’", "Fo": "«", "Fc": "»", "ha": "^", "ti": "~", "rs": "\\",
    "mu": "×", "di": "÷", "+-": "±", "<=": "≤", ">=": "≥", "!=": "≠", "->": "→", "<-": "←", "de": "°",
    "sc": "§", "ps": "¶", "ga": "`", "aa": "´", "at": "@", "sh": "#", "Do": "$", "ba": "|", "or": "|",
    "lB": "[", "rB": "]", "lC": "{", "rC": "}", "la": "⟨", "ra": "⟩", "R": "®", "Tm": "™",
}  # fmt: skip
_CONTINUED = re.compile(r"(?<!\\)\\\n")  # a line ending in a backslash goes on on the next
_CLOSING = frozenset({".", ",", ":", ";", ")", "]", "?", "!"})  # mdoc's punctuation, written against the word before
_QUOTED_ARGUMENT = re.compile(r'"((?:[^"]|"")*)"?|((?:\\.|\S)+)')  # an escaped space is no gap


def is_roff_page(name: str, text: str) -> bool:
    """Tell whether a file is a manual page's source: a section as its suffix, and roff in it.

    Args:
        name: The file's name (a compressed file's without ``.gz``): ``ls.1``, ``chage.zh_CN.1``, ``SSL_read.3ssl``.
        text: Its decoded text.

    Returns:
        True when the name ends in a section (``.1`` to ``.9``, letters after it allowed) and the text opens as
        roff does (a comment, ``.TH``, ``.Dd``, a macro's definition) with a page title in its first lines; a
        ``notes.1`` of plain text is no manual page.
    """
    if not _SECTION_SUFFIX.search(name):
        return False
    first = next((line for line in text.split("\n") if line.strip()), "")
    head = "\n".join(text.split("\n", _LINES_FOR_TITLE)[:_LINES_FOR_TITLE])
    return _ROFF_OPENING.match(first) is not None and _ROFF_TITLE.search(head) is not None


def roff_page_to_markdown(text: str, budget: ReadingBudget) -> str:
    """Write a manual page's source (man or mdoc macros) as Markdown, as a formatted page is written.

    The NAME section's text is the title (``# ls - list directory contents``), each ``.SH`` (``.Sh``) a ``##``
    heading and each ``.SS`` (``.Ss``) a ``###``, a ``.TP`` or ``.IP`` tag (``.It`` in mdoc) and its text one
    item (``- -a, --all: do not ignore entries starting with .``), and the rest paragraphs. Fonts, sizes and
    comments are left out, roff's escapes become their characters, requests that only format are dropped;
    nothing is run (no ``.so`` is followed, no macro a page defines is expanded).

    Args:
        text: A text the :func:`is_roff_page` test accepts.
        budget: What reading it may make, charged as it is written.

    Returns:
        The Markdown.

    Raises:
        UnreadableDocument: It is past its budget.
    """
    return _RoffWriter(budget).write(text)


class _RoffWriter:
    """Reads a page's roff lines in order, gathering the text of the block being read until something ends it."""

    def __init__(self, budget: ReadingBudget) -> None:
        self.outline = MarkdownOutline(budget)
        self.page = ""
        self.title = ""
        self.section = ""
        self.words: list[str] = []  # the block being read
        self.tag: str | None = None  # the tag of the item being read (None: a paragraph)
        self.tag_next = False  # the next line of text is a .TP's tag
        self.filled = True
        self.skipping = ""  # the end of a block not read (a macro's definition, an .ig), or ""
        self.blocks: list[tuple[str, str]] = []  # (heading level or "p"/"i"/"l", text), written once the title is known

    def write(self, text: str) -> str:
        """Read the page and return its Markdown."""
        for line in _CONTINUED.sub("", text).split("\n"):
            self._line(line)
        self._end_block()
        title = self.title or self.page
        if title:
            self.outline.heading(1, title)
        for kind, block in self.blocks:
            if kind == "p":
                self.outline.paragraph(block)
            elif kind == "i":
                self.outline.item(block)
            elif kind == "l":
                self.outline.lines(block)
            else:
                self.outline.heading(int(kind), block)
        return self.outline.text()

    def _line(self, line: str) -> None:
        if self.skipping:
            if line.rstrip() == "." + self.skipping:
                self.skipping = ""
            return
        if line.startswith((".", "'")):
            self._request(line[1:].lstrip())
            return
        text = _unescaped(line)
        if self.tag_next:
            self.tag, self.tag_next = text.strip(), False
            return
        if not self.filled:
            self.words.append(text)
            return
        if not line.strip() or line[0] in " \t":
            self._end_block()  # a blank line or one that starts with a space begins a new paragraph
        if line.strip():
            self.words.append(text.strip())

    def _request(self, request: str) -> None:
        """A control line: a comment, a request or a macro with its arguments."""
        if request.startswith('\\"') or not request:
            return
        name, _, rest = request.partition(" ")
        name = name.strip()
        arguments = _arguments(rest)
        if name in ("de", "de1", "am", "ig"):  # a macro's definition, or text to ignore, up to ".." or its end
            ends = arguments[1:] if name != "ig" else arguments
            self.skipping = ends[0].lstrip(".") if ends else "."
            return
        if name == "TH" or name == "Dt":
            self.page = arguments[0] if arguments else ""
        elif name in ("SH", "Sh", "SS", "Ss"):
            self._end_block()
            self.section = " ".join(arguments)
            if self.section.upper() not in _NAME_SECTIONS:
                self.blocks.append(("2" if name in ("SH", "Sh") else "3", self.section))
            self.tag_next = False
        elif name in ("TP", "TQ"):
            self._end_block()
            self.tag_next = True
        elif name in ("IP", "It"):
            self._end_block()
            tag = " ".join(_mdoc_words(arguments)) if name == "It" else (arguments[0] if arguments else "")
            self.tag = tag or None
        elif name == "RS" and self.tag is None and len(self.words) == 1 and self.filled:
            self.tag, self.words = self.words[0], []  # a line, then its text indented below it: a tag (DocBook's pages)
        elif name in _BREAKS:
            self._end_block()
        elif name in _NO_FILL or name in _FILL:
            self._end_block()
            self.filled = name in _FILL
        elif name in _FONT_WORDS:
            self._words(" ".join(arguments))
        elif name in _FONT_ALTERNATING:
            self._words("".join(arguments))
        elif name == "OP":
            self._words(f"[{' '.join(arguments)}]")
        elif name in ("SY", "UR", "MT"):
            self._words(" ".join(arguments) if name == "SY" else "")
        elif name == "Nd":
            self._words("- " + " ".join(arguments))
        elif name == "Nm" and not arguments:
            self._words(self.page.lower())
        elif name in _MDOC_CALLABLE or name in ("Fl", "Nm"):
            self._words(" ".join(_mdoc_words([name, *arguments])))
        # Any other request or macro (.ad, .hy, .PD, .if, .ds, .so, ...) formats, defines or includes: not read.

    def _words(self, text: str) -> None:
        if self.tag_next:
            self.tag, self.tag_next = text.strip(), False
        elif text.strip():
            self.words.append(text.strip())

    def _end_block(self) -> None:
        """Keep the block read so far: the NAME section's text as the title, a tagged block as an item."""
        if not self.filled:
            block = "\n".join(self.words).strip("\n")
            if block.strip():
                self.blocks.append(("l", block))
            self.words = []
            return
        text = join_wrapped_lines("\n".join(self.words)).strip()
        self.words = []
        if self.section.upper() in _NAME_SECTIONS:
            self.title = f"{self.title} {text}".strip()
        elif self.tag is not None:
            self.blocks.append(("i", f"{self.tag}: {text}" if text else self.tag))
        elif text:
            self.blocks.append(("p", text))
        self.tag = None


def _arguments(rest: str) -> list[str]:
    """A macro's arguments: words, or quoted strings (``""`` a quote inside one), their escapes made characters."""
    rest = rest.split('\\"', 1)[0]  # a comment to the end of the line
    found = [quoted.replace('""', '"') if quoted else word for quoted, word in _QUOTED_ARGUMENT.findall(rest)]
    return [_unescaped(argument) for argument in found]


def _mdoc_words(arguments: list[str]) -> list[str]:
    """An mdoc line's words: its callable macros' names left out, an ``Fl``'s argument an option (``-v``).

    Closing punctuation stands against the word before it, ``Ns`` joins two words, ``Ux`` is UNIX.
    """
    words: list[str] = []
    option = join = False
    for argument in arguments:
        if argument in ("Fl", "Ns"):
            option, join = option or argument == "Fl", join or argument == "Ns"
            continue
        if argument in _MDOC_CALLABLE:
            if argument == "Ux":
                words.append("UNIX")
            continue
        word = f"-{argument}" if option else argument
        if words and (join or word in _CLOSING):
            words[-1] += word
        else:
            words.append(word)
        option = join = False
    if option:
        words.append("-")
    return words


def _unescaped(text: str) -> str:
    r"""A line's text with roff's escapes made characters and its comment (``\"``) left out."""
    text = re.sub(r'\\".*', "", text)
    return _ESCAPE.sub(_escape_text, text)


def _escape_text(match: re.Match[str]) -> str:
    named = match.group("named") or match.group("named2") or match.group("string") or match.group("string2")
    named = named or match.group("string1")
    if named is not None:
        if named.startswith("u") and len(named) in (5, 6) and all(c in "0123456789ABCDEFabcdef" for c in named[1:]):
            code = int(named[1:], 16)
            return chr(code) if code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else ""  # no surrogate
        return _NAMED.get(named, "")
    char = match.group("char")
    return _ONE_CHARACTER.get(char, "") if char is not None else ""
