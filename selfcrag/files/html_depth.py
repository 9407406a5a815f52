"""How deep a page's elements nest, measured from its tags before an HTML parser builds the tree.

Lexbor (selectolax's parser) looks through the open elements at each block
start tag, so its time grows about as depth^2.6: a page of 200,000 nested
``div`` elements kept it busy for over 600 s. The depth is measured here first,
in time linear in the page, with the HTML5 parser's rules for closing
elements, and a page nested deeper than :data:`MAX_NESTING` is not parsed.
"""

from __future__ import annotations

import re

__all__ = ["MAX_NESTING", "nesting_depth"]

MAX_NESTING = 1_000
"""Pages whose elements nest deeper than this are not parsed.

The parser's time grows about as depth^2.6 (each block start tag looks through
the open elements): 200,000 nested ``div`` took over 600 s, 16,000 take 0.5 s,
4,000 take 0.02 s. Browsers stop nesting at 512; real pages stay well below 100.
"""

_HEADINGS = frozenset(f"h{n}" for n in range(1, 7))

_TEXT = re.compile(r"\S")
_MARKUP = re.compile(r"<(?:(!--)|(/?)([A-Za-z][^\t\n\f\r />]*)([^<>]*)>?)")
# Elements that never hold others.
_VOID = frozenset(
    "area base br col embed hr img input link meta param source track wbr basefont bgsound frame keygen image".split()
)
# Elements whose text is not markup: a "<div>" inside a script is no element.
_RAW_TEXT = frozenset("script style textarea title xmp iframe noembed noframes plaintext".split())
# The parser's "special" elements: where a new <li>, <dd> or <dt> stops looking for the open one to close.
_SPECIAL = frozenset(
    """address applet area article aside base basefont bgsound blockquote body br button caption center col
    colgroup dd details dir div dl dt embed fieldset figcaption figure footer form frame frameset h1 h2 h3 h4 h5 h6
    head header hgroup hr html iframe img input keygen li link listing main marquee menu meta nav noembed noframes
    noscript object ol p param plaintext pre script search section select source style summary table tbody td
    template textarea tfoot th thead title tr track ul wbr xmp math:mi math:mo math:mn math:ms math:mtext
    math:annotation-xml svg:foreignobject svg:desc svg:title""".split()
)
# Start tags that close an open <p> first.
_CLOSES_P = frozenset(
    """address article aside blockquote center details dialog dir div dl fieldset figcaption figure footer header
    hgroup main menu nav ol p search section summary ul h1 h2 h3 h4 h5 h6 pre listing form plaintext table hr
    xmp li dd dt""".split()
)
# Start tags that close the current element when it is of their kind (and only then).
_CLOSES_CURRENT = {
    "option": frozenset({"option"}),
    "optgroup": frozenset({"option"}),
    **dict.fromkeys(_HEADINGS, frozenset(_HEADINGS)),
}
# Parts of a table, by rank: a start tag of rank r closes the open parts of rank r or more in its table.
_TABLE_PARTS = {"caption": 1, "colgroup": 1, "thead": 1, "tbody": 1, "tfoot": 1, "tr": 2, "td": 3, "th": 3}
# How far a search for the element a tag closes looks (the parser's scopes).
_SCOPE = frozenset(
    """applet caption html table td th marquee object template math:mi math:mo math:mn math:ms math:mtext
    math:annotation-xml svg:foreignobject svg:desc svg:title""".split()
)
_BUTTON_SCOPE = _SCOPE | {"button"}
_LIST_ITEM_SCOPE = _SCOPE | {"ul", "ol"}
_ITEM_SCOPE = _SPECIAL - {"address", "div", "p"}
_TABLE_SCOPE = frozenset({"html", "table"})
_PAGE_SCOPE = frozenset({"html"})
# Start tags that close an open element of their own kind, and how far they look for it (<p>: _CLOSES_P).
_CLOSES_OWN = {
    "li": ("li", _ITEM_SCOPE),
    "dd": ("dd/dt", _ITEM_SCOPE),
    "dt": ("dd/dt", _ITEM_SCOPE),
    "button": ("button", _SCOPE),
}
_KIND = {"dd": "dd/dt", "dt": "dd/dt", **dict.fromkeys(_HEADINGS, "heading")}
# Where an end tag looks for its element. These close theirs when it is in scope; any other end tag (span, b,
# noscript ...) only when no special element stands above it, or the parser ignores it.
_SCOPED_ENDS = frozenset(
    """address article aside blockquote button center details dialog dir div dl fieldset figcaption figure footer
    header hgroup listing main menu nav ol pre search section summary ul applet marquee object select template
    heading""".split()
)
_END_SCOPE = {
    "p": _BUTTON_SCOPE,
    "li": _LIST_ITEM_SCOPE,
    **dict.fromkeys([*_TABLE_PARTS, "table"], _TABLE_SCOPE),
    **dict.fromkeys(_SCOPED_ENDS | {"dd/dt"}, _SCOPE),
}
_OTHER_END_SCOPE = _SPECIAL | _SCOPE
_FORMATTING = frozenset("a b big code em font i nobr s small strike strong tt u".split())
_RUBY = frozenset({"rb", "rtc", "rp", "rt"})
# Elements whose end tag is implied when a ruby annotation starts.
_IMPLIED = frozenset("dd dt li optgroup option p rb rp rt rtc".split())
# Start tags before which the parser does not open closed formatting elements again (it does before all others,
# and before text).
_NO_REOPEN = _CLOSES_P | _TABLE_PARTS.keys() | _RUBY | {"html", "head", "body", "frameset", "template"}
# Elements whose opening puts a marker in the list of active formatting elements.
_MARKERS = frozenset("applet object marquee template td th caption".split())
_FOREIGN = frozenset({"svg", "math"})
# Tags the parser ignores once the body has started (start and end tags alike, for the depth).
_IGNORED_IN_BODY = frozenset({"html", "head", "body", "frameset"})
_ENDS_IN_SELECT = frozenset({"select", "option", "optgroup"})
# Elements of svg and math whose content is HTML again.
_INTEGRATION = {
    "svg": frozenset({"foreignobject", "desc", "title"}),
    "math": frozenset({"mi", "mo", "mn", "ms", "mtext", "annotation-xml"}),
}
# HTML start tags that end an svg or math element in the parser.
_BREAKOUT = frozenset(
    """b big blockquote body br center code dd div dl dt em embed h1 h2 h3 h4 h5 h6 head hr i img li listing
    menu meta nobr ol p pre ruby s small span strong strike sub sup table tt u ul var""".split()
)
# Open elements looked through for the one a tag closes; past them the tag is taken to close nothing, which can
# only make the measured depth larger, never smaller, than the parser's.
_LOOK = 32


def nesting_depth(source: str, limit: int) -> int:
    """How deep a page's open elements get, measured from its tags before any parser builds the tree.

    The stack of open elements is kept as an HTML5 parser keeps it, roughly:
    void elements hold nothing; ``<p>``, ``<li>``, ``<td>`` ... close the open
    one of their kind; an end tag closes its element only when it is in scope;
    scripts, styles and comments hold no elements. Where it follows the rules
    only roughly, it errs on the deep side, so a page never nests deeper than it
    measures, and the time is linear in the page's length.

    Args:
        source: The page's markup.
        limit: Stop once the depth passes this.

    Returns:
        The greatest depth reached, or ``limit + 1`` as soon as it passes ``limit``.
    """
    return _OpenElements(source).deepest(limit)


class _Formatting:
    """An entry of the parser's list of active formatting elements (``b``, ``a``, ``font`` ...)."""

    __slots__ = ("active", "name", "open")

    def __init__(self, name: str) -> None:
        self.name = name
        self.open = True  # on the stack; once closed by another element's end, the parser opens it again
        self.active = True  # still in the list (an entry taken off it is never opened again)


# Opening a cell, a caption or an object puts a marker in the list: formatting opened inside stays inside.
_MARKER = _Formatting("")


class _OpenElements:
    """The stack of open elements of one page, and its active formatting elements, as its tags are read."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.stack: list[str] = []
        self.formatting_at: list[_Formatting | None] = []  # the entry each open element put in the list, if any
        self.active: list[_Formatting] = []  # the list of active formatting elements, with markers
        self.reopen = 0  # active entries closed and not yet opened again
        # Where the stack switches between HTML and svg or math content, and to which: (index, "svg", "math" or "").
        self.contexts: list[tuple[int, str]] = []
        self.open_count: dict[str, int] = {}
        self.changes = 0
        # A search that found nothing, and the stack's number of changes then: asked again unchanged, it is not redone.
        self.missed: dict[tuple[str, frozenset[str]], int] = {}

    def deepest(self, limit: int) -> int:
        """Read the tags in order; the greatest depth, or ``limit + 1`` once it passes ``limit``."""
        stack, source, contexts, open_count = self.stack, self.source, self.contexts, self.open_count
        deepest = 0
        position = 0
        tags = _MARKUP.finditer(source)
        while deepest <= limit and (tag := next(tags, None)) is not None:
            text_from, position = position, tag.end()
            if tag.group(1):  # a comment runs to the next "-->", or to the end
                end = source.find("-->", position)
                position = len(source) if end < 0 else end + 3
                tags = _MARKUP.finditer(source, position)
                continue
            name = tag.group(3).lower()
            ending = tag.group(2)
            foreign = bool(contexts) and bool(contexts[-1][1])
            if foreign and ending and name in ("p", "br"):
                self.leave_foreign()  # </p> and </br> end svg and math content first
                foreign = False
            if name in _VOID:
                continue
            if self.reopen and not foreign and _TEXT.search(source, text_from, tag.start()):
                deepest = max(deepest, self.reopen_formatting())  # text opens closed formatting again
            if ending:
                # </body> and </html> close nothing (what follows still goes in the body); inside a select, only the
                # end tags of a select, an option or an option group close anything.
                if (foreign and self.close_foreign(name)) or name in _IGNORED_IN_BODY:
                    continue
                if not open_count.get("select") or name in _ENDS_IN_SELECT:
                    deepest = max(deepest, self.end(name))
                continue
            self_closing = tag.group(4).rstrip().endswith("/")
            if foreign:
                if name not in _BREAKOUT:
                    if not self_closing:  # <path/> inside svg holds nothing
                        deepest = max(deepest, self.open(name))
                    continue
                self.leave_foreign()
            if name in _RAW_TEXT:
                closing = re.compile(f"</{re.escape(name)}", re.IGNORECASE).search(source, position)
                position = len(source) if closing is None else closing.start()
                tags = _MARKUP.finditer(source, position)
                continue
            if name in _FOREIGN and self_closing:
                deepest = max(deepest, self.reopen_formatting())
                continue  # <svg/> opens nothing
            if name in _IGNORED_IN_BODY:
                continue  # a second <html> or <body> adds its attributes, nothing else
            if name == "select" and (index := self.find("select", _SCOPE)) >= 0:
                self.close_from(index)  # a select inside a select ends the first
                continue
            if name in _CLOSES_OWN:  # an <li> looks for the open one before it closes a <p>
                self.close(*_CLOSES_OWN[name])
            if name in _CLOSES_P:
                self.close("p", _BUTTON_SCOPE)
            if name in _TABLE_PARTS:
                if not open_count.get("table"):
                    continue  # a table part outside any table is dropped
                self.close_table_parts(_TABLE_PARTS[name])
                deepest = max(deepest, self.open_implied_parts(_TABLE_PARTS[name]))
            elif name in _RUBY and self.find("ruby", _SCOPE) >= 0:
                self.close_implied(_IMPLIED - {"rtc"} if name in ("rt", "rp") else _IMPLIED)
            elif stack and stack[-1] in _CLOSES_CURRENT.get(name, ()):
                self.close_from(len(stack) - 1)
            if name == "form" and open_count.get("form"):
                continue  # a form inside a form is dropped
            if name in ("a", "nobr"):
                deepest = max(deepest, self.end(name))  # a new link ends the open one, as its end tag would
            if self.reopen and name not in _NO_REOPEN:
                deepest = max(deepest, self.reopen_formatting())
            depth = self.open(name)
            if depth > deepest:
                deepest = depth
        return deepest

    def open(self, name: str) -> int:
        """Open an element; the depth it stands at.

        An element of svg or math content is kept as ``svg:name`` or ``math:name``, so no rule for HTML elements
        of that name (a table cell, a form) ever applies to it.
        """
        entry = None
        content = self.contexts[-1][1] if self.contexts else ""
        if content:
            if name in _INTEGRATION[content]:
                self.contexts.append((len(self.stack), ""))
            name = f"{content}:{name}"
        elif name in _FOREIGN:
            self.contexts.append((len(self.stack), name))
            name = f"{name}:{name}"
        elif name in _FORMATTING:
            entry = _Formatting(name)
            same = [i for i in range(self.last_marker() + 1, len(self.active)) if self.active[i].name == name]
            if len(same) >= 3:  # the parser keeps three of a kind ("Noah's Ark")
                self.drop_active(same[0])
            self.active.append(entry)
        elif name in _MARKERS:
            entry = _MARKER
            self.active.append(entry)
        self.stack.append(name)
        self.formatting_at.append(entry)
        kind = _KIND.get(name, name)
        self.open_count[kind] = self.open_count.get(kind, 0) + 1
        self.changes += 1
        return len(self.stack)

    def reopen_formatting(self) -> int:
        """Open again the active formatting elements another element's end closed, as the parser does."""
        if self.reopen:
            for entry in self.active[self.last_marker() + 1 :]:
                if not entry.open:
                    entry.open = True
                    self.reopen -= 1
                    self.stack.append(entry.name)
                    self.formatting_at.append(entry)
                    self.open_count[entry.name] = self.open_count.get(entry.name, 0) + 1
                    self.changes += 1
        return len(self.stack)

    def end(self, name: str) -> int:
        """An end tag: close its element if the parser would; the depth after it."""
        if name == "form":  # the parser takes the form out of the stack and leaves what was opened inside it open
            index = self.find(name, _SCOPE)
            if index >= 0:
                self.take_out(index)
            return len(self.stack)
        entry = self.active_entry(name) if name in _FORMATTING else None
        if entry is None:
            wanted = "heading" if name in _HEADINGS else name  # </h2> ends an open <h3> too
            self.close(wanted, _END_SCOPE.get(_KIND.get(name, name), _OTHER_END_SCOPE))
            return len(self.stack)
        self.drop_active(self.active.index(entry))
        if not entry.open:
            return len(self.stack)  # closed already: the parser only forgets it
        index = self.find(name, _OTHER_END_SCOPE)
        if index >= 0 and self.formatting_at[index] is entry:
            self.close_from(index)
            return len(self.stack)
        # A block stands above it: the parser moves a copy of it into the block and keeps that one active. Here the
        # original stays open and the copy opens on top, which errs deep.
        return self.open(name)

    def active_entry(self, name: str) -> _Formatting | None:
        """The last active formatting element ``name`` after the last marker."""
        return next((e for e in reversed(self.active[self.last_marker() + 1 :]) if e.name == name), None)

    def drop_active(self, index: int) -> None:
        """Take an entry off the list of active formatting elements."""
        entry = self.active.pop(index)
        entry.active = False
        if not entry.open:
            self.reopen -= 1

    def drop_active_last(self) -> _Formatting:
        """Take the last entry off the list of active formatting elements, and return it."""
        entry = self.active[-1]
        self.drop_active(len(self.active) - 1)
        return entry

    def last_marker(self) -> int:
        """Where the last marker stands in the list, or -1."""
        return next((i for i in range(len(self.active) - 1, -1, -1) if self.active[i] is _MARKER), -1)

    def close_foreign(self, name: str) -> bool:
        """Close the svg or math element ``name`` above the first HTML element, if there is one."""
        for index in range(len(self.stack) - 1, max(len(self.stack) - _LOOK, 0) - 1, -1):
            content, _, local = self.stack[index].partition(":")
            if not local:
                return False  # an HTML element: the end tag is the HTML rules'
            if local == name:
                self.close_from(index)
                return True
        return False

    def leave_foreign(self) -> None:
        """Go back to HTML content, as an HTML tag inside svg or math makes the parser do.

        The parser closes the svg or math elements first; here they stay open, which errs deep.
        """
        self.contexts[-1] = (self.contexts[-1][0], "")

    def in_foreign(self) -> bool:
        """Whether the current element is svg or math content (not HTML inside it)."""
        return bool(self.contexts) and bool(self.contexts[-1][1])

    def find(self, wanted: str, scope: frozenset[str]) -> int:
        """Where the open element ``wanted`` (a name or a kind) stands, or -1 when none is within reach."""
        stack = self.stack
        if not self.open_count.get(_KIND.get(wanted, wanted)) or self.missed.get((wanted, scope)) == self.changes:
            return -1
        for index in range(len(stack) - 1, max(len(stack) - _LOOK, 0) - 1, -1):
            if stack[index] == wanted or _KIND.get(stack[index]) == wanted:
                return index
            if stack[index] in scope:
                break
        self.missed[(wanted, scope)] = self.changes
        return -1

    def close(self, wanted: str, scope: frozenset[str]) -> None:
        """Close the open element ``wanted`` and all above it, if it is within reach."""
        index = self.find(wanted, scope)
        if index >= 0:
            self.close_from(index)

    def close_table_parts(self, rank: int) -> None:
        """Before a table part of ``rank`` starts, close the open parts of that rank or more in its table."""
        table = self.find("table", _PAGE_SCOPE)
        if table >= 0:
            stack = self.stack
            part = next((i for i in range(table + 1, len(stack)) if _TABLE_PARTS.get(stack[i], 0) >= rank), -1)
            if part >= 0:
                self.close_from(part)

    def open_implied_parts(self, rank: int) -> int:
        """Open the row group and row a cell (or a row) needs, as the parser does when they are left out."""
        top = _TABLE_PARTS.get(self.stack[-1], 0) if self.stack else 0
        if rank == 3 and top != 2:
            if top != 1:
                self.open("tbody")
            self.open("tr")
        elif rank == 2 and top != 1:
            self.open("tbody")
        return len(self.stack)

    def close_implied(self, names: frozenset[str]) -> None:
        """Close the current element while it is one of ``names`` (the parser's implied end tags)."""
        while self.stack and self.stack[-1] in names:
            self.close_from(len(self.stack) - 1)

    def take_out(self, index: int) -> None:
        """Take one element (a form) out of the stack, leaving those above it open.

        It stays in the tree, around what was opened inside it, so it keeps its place in the depth here: under a
        name no tag closes.
        """
        self.open_count[self.stack[index]] -= 1
        self.stack[index] = "#form"
        # Counted under its new name, as every name on the stack is: closing it later (with the element around
        # it) takes one off that count.
        self.open_count["#form"] = self.open_count.get("#form", 0) + 1
        self.changes += 1

    def close_from(self, index: int) -> None:
        """Close the element at ``index`` of the stack and all above it."""
        for name, entry in zip(reversed(self.stack[index:]), reversed(self.formatting_at[index:]), strict=True):
            self.open_count[_KIND.get(name, name)] -= 1
            if entry is _MARKER:  # closing a cell or caption forgets the formatting opened inside it
                while self.active and self.drop_active_last() is not _MARKER:
                    pass
            elif entry is not None and entry.active and entry.open:
                entry.open = False
                self.reopen += 1
        del self.stack[index:]
        del self.formatting_at[index:]
        while self.contexts and self.contexts[-1][0] >= index:
            self.contexts.pop()
        self.changes += 1
