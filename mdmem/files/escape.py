"""Reversible escaping of memory text, so that text never reads as structure or metadata.

A write stores the caller's text inside a markdown block whose metadata lives
in the same lines: Dataview fields (``[status:: superseded]``), the block id
(``^m-…``), headings that delimit entries, list markers, fences. Text that
contained any of those would set metadata (a scope, a status, a kind) or break
the file around it. So the writer escapes such text and the parser decodes it:
the block reads back as exactly the text that was written, while the parser
(and Obsidian, and Dataview) see plain text.

The escape is CommonMark's own, a backslash before ASCII punctuation, which
Obsidian renders as the bare character. It is used only at *special
positions*, the few places where a parser would otherwise see structure:

* the first character of a line, after spaces and tabs, if it is one of
  ``# > - + * _ = ` ~ | < : [``, and the ``.`` or ``)`` after a number that
  opens a line (headings, quotes, lists, fences, tables, HTML blocks, setext
  underlines, thematic breaks, task boxes);
* a ``[`` or ``(`` that opens ``key::`` (a Dataview inline field, either form);
* a ``^`` at the start of a line or after whitespace, before a word of
  letters, digits and ``-`` (an Obsidian block id such as ``^m-…``);
* the ``:`` after a kind's word that opens a line (``Decision:``, see
  :data:`mdmem.models.KIND_LABELS`), which on a memory line's first line
  says the line's kind;
* the ``[`` of a link to a block after an arrow at the end of a line
  (``→ [[MEMORY.md#^m-…|newer]]``), which on a retired memory's line names
  the memory that replaced it.

At a special position, a run of *n* backslashes before the character decodes
to *n*//2 backslashes, and an odd run means the character itself was escaped.
The encoder writes the text's own run doubled, plus one to escape the
character, so decoding is exact; backslashes anywhere else are left alone in
both directions. What is special is decided by the same test on the plain
and on the escaped line (escaping only adds backslashes, which none of the
tests look past), which is what makes the mapping reversible.

A fenced code block is code: its lines are kept as they are (the parser reads
no fields or ids in them), except one that starts like a merge conflict
marker, which gets a backslash (see ``_CONFLICT``).

A person who types a field or a heading by hand types it unescaped, and the
parser honours it as before.
"""

from __future__ import annotations

import re

from mdmem.models import KIND_LABELS

__all__ = [
    "FIELD",
    "LABEL",
    "REPLACED_BY",
    "closes_fence",
    "escape_code_line",
    "escape_lines",
    "fence_opener",
    "is_plain_line",
    "take_fields",
    "unescape_code_line",
    "unescape_line",
]

# A Dataview inline field in either bracket form: ``[key:: value]``, ``(key:: value)``.
FIELD = re.compile(r"[\[(]([A-Za-z][\w-]*)::[ \t]*([^\])\n]*?)[ \t]*[\])]")

# Special positions (see the module docstring); group 1 is the backslash run
# before the special character, which is the last character of the match.
_LEAD = re.compile(r"[ \t]*(\\*)[#>+*_=`~|<:\[-]")
_NUMBER = re.compile(r"[ \t]*\d{1,9}(\\*)[.)]")
_FIELD_OPEN = re.compile(r"(\\*)[\[(](?=[A-Za-z][\w-]*::)")
_CARET = re.compile(r"(?:^|(?<=\s))(\\*)\^(?=[A-Za-z0-9-]+(?:\s|$))")
# A kind's word opening a line, then a colon and a space (group 2: the backslash
# run before the colon). Case-insensitive: a person types "decision:" too.
_WORDS = "|".join(re.escape(w) for w in sorted(KIND_LABELS.values(), key=len, reverse=True))
LABEL = re.compile(rf"[ \t]*({_WORDS})(\\*):(?=[ \t]|$)", re.IGNORECASE)
# "→ [[path#^m-…|alias]]" ending a line (group 1: the backslash run before the "[").
REPLACED_BY = re.compile(
    r"(?:^|[ \t])→[ \t]+(\\*)\[\[[^\]\n]*#\^([A-Za-z0-9-]+)(?:\|[^\]\n]*)?\]\][ \t]*$"
)

# What a line start must not be left as (the text after indentation).
_ATX = re.compile(r"#{1,6}(?:[ \t]|$)")
_RULE = re.compile(r"(?:=+|-+|(?:[-*_][ \t]*){3,})[ \t]*$")  # setext underline, thematic break
_LIST = re.compile(r"(?:[-+*]|\d{1,9}[.)])(?:[ \t]|$)")
_TABLE_RULE = re.compile(r"[|:\- \t]*-[|:\- \t]*$")
_CONTAINERS = re.compile(r"(?:(?:[-+*]|\d{1,9}[.)])(?:[ \t]+|$)|>[ \t]?)+")
_FENCE_OPEN = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")
_FENCE_CLOSE = re.compile(r" {0,3}(`{3,}|~{3,})[ \t]*")
# Inside a code fence text is kept as it is, except a line that starts like a
# merge conflict marker: a vault file holding one reads as an unresolved merge
# and is skipped whole, so such a line gets one more backslash, taken off on read.
_CONFLICT = re.compile(r"\\*(?:<<<<<<<|>>>>>>>) ")


# ----------------------------------------------------------------- fences ----


def fence_opener(line: str) -> str | None:
    """The fence (```` ``` ```` or ``~~~``, full length) a line opens, as CommonMark reads it."""
    match = _FENCE_OPEN.match(line)
    if match is None:
        return None
    marker = match.group(1)
    if marker[0] == "`" and "`" in match.group(2):
        return None  # a backtick fence's info string may not hold a backtick
    return marker


def closes_fence(line: str, marker: str) -> bool:
    """Whether ``line`` closes the fence opened with ``marker``."""
    match = _FENCE_CLOSE.fullmatch(line)
    return (
        match is not None and match.group(1)[0] == marker[0] and len(match.group(1)) >= len(marker)
    )


# ------------------------------------------------------ special positions ----


def _specials(line: str) -> tuple[dict[int, int], int]:
    """({index of each special character: index where the backslash run before
    it starts}, index of the line-start special character or -1)."""
    found: dict[int, int] = {}
    lead = -1
    match = _LEAD.match(line) or _NUMBER.match(line)
    if match is not None:
        lead = match.end() - 1
        found[lead] = match.start(1)
    if "::" in line:
        for match in _FIELD_OPEN.finditer(line):
            found[match.end() - 1] = match.start(1)
    if "^" in line:
        for match in _CARET.finditer(line):
            found[match.end() - 1] = match.start(1)
    if lead < 0 and ":" in line:
        label = LABEL.match(line)
        if label is not None:
            found[label.end() - 1] = label.start(2)
    if "→" in line:
        link = REPLACED_BY.search(line)
        if link is not None:
            found[link.end(1)] = link.start(1)
    return found, lead


def unescape_line(line: str) -> str:
    """A stored line as the text it encodes (outside code fences)."""
    if "\\" not in line:
        return line
    specials, _ = _specials(line)
    out: list[str] = []
    prev = 0
    for index in sorted(specials):
        start = specials[index]
        out += [line[prev:start], "\\" * ((index - start) // 2), line[index]]
        prev = index + 1
    out.append(line[prev:])
    return "".join(out)


def _escape_line(line: str, lead: bool) -> str:
    """``line`` with its special characters escaped; the line start only if ``lead``."""
    specials, lead_at = _specials(line)
    out: list[str] = []
    prev = 0
    for index in sorted(specials):
        start = specials[index]
        # Field openers and carets are always escaped; a line start only when
        # it would otherwise open a block. A line start that also opens a
        # field (``[k:: v]`` first on the line) is escaped as a field.
        live = index == lead_at and not lead and _FIELD_OPEN.match(line, start) is None
        out += [line[prev:start], "\\" * (2 * (index - start) + (0 if live else 1)), line[index]]
        prev = index + 1
    out.append(line[prev:])
    return "".join(out)


# ---------------------------------------------------------- line starts ----


def _opens_block(rest: str) -> bool:
    """Whether a line starting with ``rest`` (indentation removed) could leave a paragraph."""
    first = rest[0]
    if first == "#":
        return bool(_ATX.match(rest))
    if first in "-+*":
        return bool(_LIST.match(rest) or _RULE.match(rest) or _TABLE_RULE.match(rest))
    if first in "_=":
        return bool(_RULE.match(rest))
    if first in "`~":
        return rest.startswith(("```", "~~~"))
    if first.isdigit():
        return bool(_LIST.match(rest))
    return first in ">|<:["


def is_plain_line(line: str) -> bool:
    """Whether a stored line can only be a line of a paragraph (or blank, or
    indented code): nothing on it opens a block that could hold a heading."""
    rest = line.lstrip(" \t")
    return not rest or rest[0] == "\\" or not _opens_block(rest)


def _ends_entry(rest: str) -> bool:
    """Whether a line starting with ``rest`` could end an entry section, swallow
    what follows it or spoil the file: a heading (also inside a list item or
    quote), a setext underline, an HTML block, a fence inside a container, a
    merge conflict marker."""
    first = rest[0]
    if first == "<" or (first == "#" and _ATX.match(rest)) or _RULE.match(rest):
        return True
    if rest.startswith(">>>>>>> "):
        return True  # a merge conflict marker: the whole file would be skipped
    containers = _CONTAINERS.match(rest)
    if containers is None:
        return False
    inner = rest[containers.end() :]
    return bool(inner) and (
        inner[0] == "<"
        or bool(_ATX.match(inner))
        or bool(_RULE.match(inner))
        or fence_opener(inner) is not None
    )


def escape_code_line(line: str) -> str:
    """A line inside a code fence as stored (see ``_CONFLICT``)."""
    return "\\" + line if _CONFLICT.match(line) else line


def unescape_code_line(line: str) -> str:
    """A stored line inside a code fence as the text it encodes."""
    return line[1:] if line.startswith("\\") and _CONFLICT.match(line) else line


def _closers_after(lines: list[str]) -> list[dict[str, int]]:
    """For each line, the longest fence closer of each kind on a later line."""
    best: dict[str, int] = {"`": 0, "~": 0}
    after: list[dict[str, int]] = [best] * len(lines)
    for idx in range(len(lines) - 1, -1, -1):
        after[idx] = best
        match = _FENCE_CLOSE.fullmatch(lines[idx])
        if match is not None:
            run = match.group(1)
            if len(run) > best[run[0]]:
                best = {**best, run[0]: len(run)}
    return after


def escape_lines(lines: list[str], *, full: bool) -> tuple[list[str], list[str]]:
    """Text lines escaped for storage in a block, and the lines they read back as.

    ``full``: every line must stay a line of one paragraph (a list item, a
    paragraph with an id), so every line start that could open a block is
    escaped, fences included. Otherwise (an entry section, which may hold any
    markdown) lists, quotes, tables and closed code fences stay as they are;
    only what could end the section or swallow what follows is escaped, and a
    fence that is never closed is escaped rather than closed.

    Lines outside code fences lose their trailing whitespace (the parser drops
    it); lines inside a fence are code and are kept as they are.
    """
    out: list[str] = []
    plain: list[str] = []
    fence: str | None = None
    # A closer is judged on the line as written (inside a fence lines are kept).
    closers = _closers_after(lines) if not full else []
    for idx, raw in enumerate(lines):
        if fence is not None:
            if closes_fence(raw, fence):
                fence = None
                raw = raw.rstrip()
            out.append(raw if fence is None else escape_code_line(raw))
            plain.append(raw)
            continue
        line = raw.rstrip()
        plain.append(line)
        marker = None if full else fence_opener(line)
        if marker is not None and closers[idx][marker[0]] >= len(marker):
            fence = marker
            out.append(line)
            continue
        rest = line.lstrip(" \t")
        lead = bool(rest) and rest[0] != "\\"
        if lead:
            lead = marker is not None or (_opens_block(rest) if full else _ends_entry(rest))
        out.append(_escape_line(line, lead))
    return out, plain


# ----------------------------------------------------------------- fields ----


def take_fields(line: str, keys: frozenset[str] | None = None) -> tuple[str, list[tuple[str, str]]]:
    """Remove the live (unescaped) inline fields from ``line``; return it and the fields.

    ``keys``: remove only fields with these (lower-case) keys. A field goes
    with the spaces before it, so ``a [k:: v] b`` reads ``a b``.
    """
    fields: list[tuple[str, str]] = []
    out: list[str] = []
    prev = pos = 0
    while True:
        match = FIELD.search(line, pos)
        if match is None:
            break
        start = match.start()
        run = start
        while run > 0 and line[run - 1] == "\\":
            run -= 1
        key = match.group(1).lower()
        if (start - run) % 2 or (keys is not None and key not in keys):
            pos = start + 1  # escaped (or not asked for): text; a field may start inside it
            continue
        fields.append((key, match.group(2).strip()))
        cut = start
        while cut > prev and line[cut - 1] in " \t":
            cut -= 1
        out.append(line[prev:cut])
        prev = pos = match.end()
    if not fields:
        return line, fields
    out.append(line[prev:])
    return "".join(out), fields
