"""Identifiers a prompt names: the one rule no fitted gate may veto.

Who asks about ``PAY-1234``, ``9f3c2ab``, ``src/pay/api.py``, port ``8080``,
``ERR_CONN_RESET`` or ``parse_config`` wants the memory that says it, not its
look-alikes, and wants it even when the rest of the prompt looks like nothing
the vault knows. So (DESIGN, "Guarantees are rules, fits are for the rest"):
a memory that holds, whole, an identifier-shaped token of the prompt that at
most :data:`FEW` memories hold is put first and always kept, whatever the
relevance gate (:mod:`mdmem.recall.gate`) says. Recall's ``exact`` stage finds
those memories and its ``named`` stage applies the rule after the gate, so
``recall``, ``context``, ``prompt_context`` and the hooks all get it; the team
tier (:mod:`mdmem.team.tier`) uses the same shapes and the same "held whole".

This module says only what an identifier looks like and what holding one
whole means:

* :func:`identifier_like`: a token shaped like something only code, a ticket
  or a log says: letters and digits mixed (``E1234``, ``db-07``, a hash), a
  number of three digits or more (a port, a status code), an underscore, a
  path or a dotted name (``src/pay/api.py``, ``Vault.recall``, a branch
  ``fix/login-timeout``), camelCase, a kebab-case name of two joins or more
  (``payments-webhooks-dlq``), a Header-Case name (``X-Fail-Mode``), an
  all-caps code with a joiner or digit (``PAY-1234``, ``ERR_CONN_RESET``) or
  an errno or signal name (``ECONNREFUSED``, ``SIGKILL``). Not identifiers,
  although they share a shape: years and dates (``2023``, ``10.01.2024``),
  times (``14:00``), ordinals (``8th``), abbreviations (``U.S``), two words
  joined by a slash (``and/or``) or one hyphen (``dairy-free``). In the dev
  chats' 1,105 questions, years, dates and ordinals were 134 of the 144 tokens
  the earlier rule took for identifiers; a year or a date is what recall's
  dating signals are for, and lifting the few turns holding one cost evidence;
* :func:`named_identifiers`: the query's identifier-shaped tokens, plus any
  token it writes as code (in backticks, a call ``name()``, a ``--flag``);
* :func:`holds_exactly`: the text holds the token whole (case-insensitive),
  not as part of a longer word or identifier.
"""

from __future__ import annotations

import errno
import re
import signal

__all__ = [
    "FEW",
    "exact_tokens",
    "holds_exactly",
    "identifier_like",
    "named_identifiers",
]

# A token held whole by at most this many memories names them (chosen: a
# ticket id or a hash is said by one memory or a handful, an ordinary word
# by many; above it the token no longer picks a memory out).
FEW = 3

# A token as a person types an identifier: letters, digits and the joiners of
# codes, paths and names (E1234, ERR_CONN_RESET, PAY-1234, src/pay/api.py).
_TOKEN = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_./:#@-]*[A-Za-z0-9_])?")
_CAMEL = re.compile(r"[a-z][A-Z]|[A-Z]{2,}[a-z]")
# Shapes of identifiers that are dates, times, counts or abbreviations instead.
_YEAR = re.compile(r"(?:1[89]|2[01])\d\d")
_DATE = re.compile(r"\d{1,4}[./-]\d{1,2}[./-]\d{1,4}")
_TIME = re.compile(r"\d{1,2}:\d{2}(?::\d{2})?")
_ORDINAL = re.compile(r"\d+(?:st|nd|rd|th)", re.IGNORECASE)
_ABBREVIATION = re.compile(r"(?:[A-Za-z]\.)+[A-Za-z]")
# errno and signal names (ENOENT, ECONNREFUSED, SIGKILL): the platform's own
# lists, so "EVERY" shouted in a prompt is not one.
_SYSTEM_NAMES = frozenset(errno.errorcode.values()) | frozenset(s.name for s in signal.Signals)
# Written as code: `name`, name(), --flag or -f.
_BACKTICKS = re.compile(r"`([^`\n]+)`")


def identifier_like(token: str) -> bool:
    """Whether ``token`` is shaped like an identifier (see the module doc)."""
    if len(token) < 3:
        return False
    for shape in (_YEAR, _DATE, _TIME, _ORDINAL, _ABBREVIATION):
        if shape.fullmatch(token):
            return False
    if "/" in token and not _a_path(token):
        return False
    has_alpha = any(c.isalpha() for c in token)
    has_digit = any(c.isdigit() for c in token)
    if has_digit:
        return True  # letters and digits mixed, or a number of 3+ digits
    if "_" in token or "/" in token or "." in token.strip("."):
        return True
    if _CAMEL.search(token) or token in _SYSTEM_NAMES:
        return True
    parts = token.split("-")
    # kebab-case names of two joins or more (payments-webhooks-dlq; one join is
    # English: "dairy-free", "ex-partner"), and Header-Case names (X-Fail-Mode).
    if len(parts) >= 3 or (len(parts) >= 2 and all(p[:1].isupper() for p in parts if p)):
        return all(parts)
    return has_alpha and token.isupper() and any(c in "-:#@" for c in token)


def _a_path(token: str) -> bool:
    """``src/pay/api.py`` or ``a/b/c`` is a path; ``and/or`` two words."""
    parts = [p for p in token.split("/") if p]
    if len(parts) >= 3:
        return True
    return any(
        "." in p.strip(".") or "_" in p or "-" in p or any(c.isdigit() for c in p) for p in parts
    )


def exact_tokens(query: str) -> list[str]:
    """The query's tokens that could name one block exactly (3+ characters),
    in order, each once; trailing sentence punctuation is not part of them."""
    seen: dict[str, None] = {}
    for m in _TOKEN.finditer(query):
        token = m.group(0).rstrip(".:")
        if len(token) >= 3:
            seen.setdefault(token, None)
    return list(seen)


def named_identifiers(query: str) -> list[str]:
    """The identifiers ``query`` names, in order, each once: its identifier-shaped
    tokens and the tokens it writes as code (`name`, ``name()``, ``--flag``)."""
    as_code: set[str] = set()
    for m in _BACKTICKS.finditer(query):
        as_code.update(exact_tokens(m.group(1)))
    for m in _TOKEN.finditer(query):
        token = m.group(0).rstrip(".:")
        after = query[m.start() + len(token) : m.start() + len(token) + 2]
        before = query[max(0, m.start() - 2) : m.start()]
        if after.startswith("(") or before.endswith("--") or before in (" -", "-"):
            as_code.add(token)
    return [t for t in exact_tokens(query) if t in as_code or identifier_like(t)]


def holds_exactly(text: str, token: str) -> bool:
    """Whether ``text`` holds ``token`` whole (case-insensitive): not as part of
    a longer word or identifier."""
    pattern = r"(?<![A-Za-z0-9_])" + re.escape(token) + r"(?![A-Za-z0-9_]|[./-][A-Za-z0-9_])"
    return re.search(pattern, text, re.IGNORECASE) is not None
