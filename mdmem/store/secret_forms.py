"""Other ways of writing a secret, undone before the guard scans again.

:func:`mdmem.store.secret_guard.scan` looks at the text as written, with
invisible characters and compatibility forms folded. A secret can also hide
behind what a reader, a browser or a shell would undo:

* HTML character references (``sk&#45;proj&#x2D;…``, ``&hyphen;``) and URL
  escapes (``sk%2Dproj…``);
* letters from another script that look like Latin ones (``ghр_…`` with a
  Cyrillic ``р``);
* a vendor prefix in another case (``GHP_…``, ``akia…``);
* a vendor key whose format is upper case, written in lower case
  (``akiaiosfodnn7example``: a tag or a scope name is stored lower-cased);
* a token cut into equal groups by dashes, dots or slashes
  (``ghp_-NqVw-YS81-…``), where spaces are already handled by the guard's
  split-key search;
* a card number grouped by dots, slashes or underscores
  (``4539.1488.0343.6467``), joined to a word (``card-4539-…``), or broken
  over two lines, in groups or not;
* what a shell or a JSON reader undoes: a backslash-newline line
  continuation, and ``\\n``, ``\\"``, ``\\uXXXX`` escapes (a command a host
  reports as JSON, a token wrapped over two lines inside quotes).

Each form is a :class:`Form`: the undone text and, for each of its
characters, the span of the original it came from, so a refusal names and a
redaction replaces what was actually written. Forms are built only when the
text holds what they undo (an ``&``, a ``%``, a non-ASCII letter, a digit
group next to a dot or a line break...), so ordinary text pays one regex.
"""

from __future__ import annotations

import html
import itertools
import re
import unicodedata
from dataclasses import dataclass

__all__ = ["CONFUSABLES", "INVISIBLE", "Form", "forms", "may_hide", "may_hide_digits"]

# Invisible characters that split a key without showing (zero-width space,
# joiners, word joiner, invisible operators, BOM, soft hyphen, Mongolian vowel
# separator); NFKC leaves them alone.
INVISIBLE = "\u00ad\u180e\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff"

# Letters of other scripts drawn like Latin ones (Unicode's confusables for
# the Latin letters and digits tokens are made of; Cyrillic and Greek).
CONFUSABLES = dict(
    zip(
        "аеорсухіјѕԁһӏԛԝАВЕКМНОРСТХІЈЅΑΒΕΖΗΙΚΜΝΟΡΤΥΧοικνυ",
        "aeopcyxijsdhlqwABEKMHOPCTXIJSABEZHIKMNOPTYXoikvu",
        strict=True,
    )
)

# Character references and URL escapes: what a browser or a URL parser undoes;
# backslash escapes: what a shell (line continuation) or a JSON reader undoes.
_ESCAPE = re.compile(
    r"&#[0-9]{1,7};?|&#[xX][0-9a-fA-F]{1,6};?|&[A-Za-z][A-Za-z0-9]{1,31};|%[0-9a-fA-F]{2}"
    r"|\\(?:\r?\n|u[0-9a-fA-F]{4}|[nrt\"'/\\])"
)
_BACKSLASH_ESCAPES = {"n": "\n", "r": "\r", "t": "\t"}
# Marks a number is grouped with besides a space: dots, dashes of any width,
# middle dots and bullets, slashes, underscores, commas, colons, bars.
_SEPARATOR_MARKS = "./_,:|\\\\\u00b7\u2022\u2219\u30fb\u2010-\u2015-"
# Of those, the ones that also list or divide numbers ("ratio 4111/1111/…",
# "ids 4539,4262,…"): digits split by them count as a card only with a card
# word, an expiry or a code nearby, as one unbroken run does.
_LISTING_MARKS = frozenset("/_,:|\\")
# One of those marks between digits (blanks around it, mixed with other separators), or a
# line break (with the blanks and quote marks around it), between digits; a
# dash or an underscore joining a word to a digit group ("card-4539-…").
_DIGIT_BREAK = re.compile(
    rf"(?<=\d)(?:[ \t]*[{_SEPARATOR_MARKS}][ \t]*|[ \t]*\r?\n[ \t>]*)(?=\d)"
    r"|(?<=[A-Za-z])[_-](?=\d{4})"
)
# What the forms undo, for the quick test of may_hide: an escape, or 13 digits
# with a dot or a line break among them (a card needs 13).
_ESCAPE_HINT = re.compile(
    r"&#|&[A-Za-z][A-Za-z0-9]{1,31};|%[0-9a-fA-F]{2}|\\(?:\r?\n|u[0-9a-fA-F]{4}|[nrt\"'/\\])"
)
_SPREAD_DIGITS = re.compile(
    rf"\d(?:(?:[ \t>-]{{0,3}}\r?\n[ \t>]{{0,3}}|[ \t]*[{_SEPARATOR_MARKS}][ \t]*| )?\d){{12}}"
)

# Vendor prefixes in the case their formats fix, looked for in any case.
_PREFIXES = (
    "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "sk-proj-", "sk-ant-",
    "sk-", "sk_live_", "rk_live_", "xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxs-", "hf_", "npm_",
    "pypi-", "dop_v1_", "shpat_", "AKIA", "ASIA", "AIza", "SG.", "LTAI",
)  # fmt: skip
_PREFIX_RE = re.compile(r"(?i)(?<![A-Za-z0-9])(" + "|".join(re.escape(p) for p in _PREFIXES) + ")")
_CANONICAL = {p.lower(): p for p in _PREFIXES}
_ODD_LETTER = re.compile("[" + INVISIBLE + "".join(CONFUSABLES) + "]")
# A word cut into groups by dashes or dots: "ghp_-NqVw-YS81-VP7H-…".
_GROUPED = re.compile(r"[A-Za-z0-9_]+(?:[-./][A-Za-z0-9_]+){3,}")
_GROUP_SPLIT = re.compile(r"[-./]")
# Vendor keys whose format is upper case, with the whole word's length: a
# lower-cased one is looked for upper-cased. Only "asia" starts ordinary words
# ("asiapacific2024event"): after it, the body must be in the base32 alphabet
# AWS key ids use, or hold digits in two places, as random data does.
_UPPER_KEYS = re.compile(
    r"(?i)(?<![A-Za-z0-9])(?:(?:akia|abia|acca|a3t[a-z0-9])[a-z0-9]{16}"
    r"|asia(?:[a-z2-7]{16}|(?=[a-z]*[0-9]+[a-z]+[0-9])[a-z0-9]{16})"
    r"|ltai[a-z0-9]{20}|nrak-[a-z0-9]{27})(?![A-Za-z0-9])"
)


@dataclass(frozen=True)
class Form:
    """Text as a reader would undo it; ``starts[i]``/``ends[i]``: where its
    character ``i`` was in the original."""

    text: str
    starts: list[int]
    ends: list[int]

    def span(self, start: int, end: int) -> tuple[int, int]:
        return self.starts[start], self.ends[end - 1]


def may_hide(text: str) -> bool:
    """Whether ``text`` holds anything a form would undo (else no form differs from it)."""
    if not text.isascii() and _changes_letters(text):
        return True
    if ("&" in text or "%" in text or "\\" in text) and _ESCAPE_HINT.search(text):
        return True
    if may_hide_digits(text):
        return True
    if any(_upper_key(m) != m.group() for m in _UPPER_KEYS.finditer(text)):
        return True
    lower = text.lower()
    if not any(prefix in lower for prefix in _CANONICAL):
        return False
    for m in _PREFIX_RE.finditer(text):
        if m.group() != _CANONICAL[m.group().lower()]:
            return True
        word = _GROUPED.match(text, m.start())
        if word is not None and _spaced_groups(word) != word.group():
            return True
    return False


def may_hide_digits(text: str) -> bool:
    """Whether ``text`` has 13 digits with a dot, a slash, an underscore or a line
    break among them, or both dashes and spaces (separators the card finder
    takes one kind at a time), or a digit group joined to a word."""
    for match in _SPREAD_DIGITS.finditer(text):
        marks = set(match.group()) - set("0123456789")
        if marks - {" ", "-"} or {" ", "-"} <= marks:
            return True
        before = text[match.start() - 1 : match.start()]
        if before in ("-", "_") and text[match.start() - 2 : match.start() - 1].isalpha():
            return True
    return False


def _changes_letters(text: str) -> bool:
    """Non-ASCII text with an invisible character, a look-alike or a compatibility form."""
    return _ODD_LETTER.search(text) is not None or not unicodedata.is_normalized("NFKC", text)


def forms(text: str) -> list[Form]:
    """The forms of ``text`` that differ from it: escapes, look-alikes,
    invisible characters and compatibility forms undone, prefixes in their
    case, grouped tokens spaced; for digits across a dot or a line break, one
    form with a space there and one with nothing."""
    if not may_hide(text):
        return []
    out: list[Form] = []
    breaks = [(m.start(), m.end()) for m in _DIGIT_BREAK.finditer(text)]
    for joiner in (" ", "") if breaks else (None,):
        form = _undo(text, breaks if joiner is not None else [], joiner)
        text_of = _respell(form.text)
        if text_of != form.text:
            form = Form(text_of, form.starts, form.ends)
        if form.text != text and all(form.text != f.text for f in out):
            out.append(form)
    return out


def _undo(text: str, breaks: list[tuple[int, int]], joiner: str | None) -> Form:
    """One pass over ``text``: escapes decoded, invisible characters dropped,
    look-alikes and compatibility forms folded, each digit break replaced
    by ``joiner`` (see ``joined`` for the breaks that take their own)."""
    chars: list[str] = []
    starts: list[int] = []
    ends: list[int] = []

    def put(piece: str, start: int, end: int) -> None:
        for ch in piece:
            if ch in INVISIBLE:
                continue
            folded = CONFUSABLES.get(ch, ch)
            if not folded.isascii():
                folded = unicodedata.normalize("NFKC", folded)
            for each in folded:
                chars.append(CONFUSABLES.get(each, each))
                starts.append(start)
                ends.append(end)

    cuts = {start: end for start, end in breaks}

    def joined(start: int) -> str:
        # A word joined to its digits is a word before a number; digits split
        # by slashes or underscores are one run (a card written so needs a card
        # word nearby: "ratio 4111/1111/1111/1111" is a ratio).
        if text[start - 1].isalpha():
            return " "
        stop = cuts[start]
        return "" if _LISTING_MARKS & set(text[start:stop]) else joiner or ""

    escapes = (
        {m.start(): m for m in _ESCAPE.finditer(text)}
        if "&" in text or "%" in text or "\\" in text
        else {}
    )
    i = 0
    while i < len(text):
        stop = cuts.get(i)
        if stop is not None:
            put(joined(i), i, stop)
            i = stop
            continue
        escape = escapes.get(i)
        if escape is not None:
            decoded = _decode(escape.group())
            if decoded is not None:
                put(decoded, i, escape.end())
                i = escape.end()
                continue
        put(text[i], i, i + 1)
        i += 1
    return Form("".join(chars), starts, ends)


def _decode(escape: str) -> str | None:
    if escape.startswith("\\"):
        body = escape[1:]
        if body.startswith(("\n", "\r")):
            return ""  # a shell's line continuation: the two lines are one
        if body.startswith("u"):
            return chr(int(body[1:], 16))
        return _BACKSLASH_ESCAPES.get(body, body)
    if escape.startswith("%"):
        value = int(escape[1:], 16)
        return chr(value) if value < 0x80 else None  # a multi-byte UTF-8 piece: left as is
    decoded = html.unescape(escape)
    if decoded == escape or len(decoded) > 2:
        return None
    return decoded


def _respell(text: str) -> str:
    """Same length as ``text``: vendor prefixes in their own case (an upper-case
    key all of it), grouped tokens spaced."""
    text = _PREFIX_RE.sub(_canonical_prefix, text)
    text = _UPPER_KEYS.sub(_upper_key, text)
    return _GROUPED.sub(_spaced_groups, text)


def _upper_key(match: re.Match[str]) -> str:
    word = match.group()
    return word.upper() if any(c.isdigit() for c in word) else word


def _canonical_prefix(match: re.Match[str]) -> str:
    return _CANONICAL.get(match.group().lower(), match.group())


def _spaced_groups(match: re.Match[str]) -> str:
    """Dashes and dots become spaces in a word of three or more equal groups after
    a prefix, so the guard's split-key search sees the pieces (``sk-proj-…``,
    ``1.2.3``, a UUID stay as they are: their groups are not equal)."""
    word = match.group()
    parts = _GROUP_SPLIT.split(word)
    widths = [len(p) for p in parts[1:]]
    same = max(_runs(widths), default=0)
    if same < 3 or not 3 <= max(widths) <= 8 or not _PREFIX_RE.match(word):
        return word
    return _GROUP_SPLIT.sub(" ", word)


def _runs(values: list[int]) -> list[int]:
    """Lengths of the runs of equal neighbouring values."""
    out: list[int] = []
    run = 1
    for a, b in itertools.pairwise(values):
        if a == b:
            run += 1
        else:
            out.append(run)
            run = 1
    out.append(run)
    return out
