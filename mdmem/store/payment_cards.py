"""Payment card numbers for the secret guard: a number is a card when its digits
are laid out as cards print them, its prefix and length are a card brand's, and
its Luhn check digit is right.

A number written as one run of digits (``4111111111111111``) is as likely an
order or tracking number, and one in ten passes the Luhn check by chance; it
counts only with a card word, an expiry date or a security code near it. A
number in a card's groups (``4111 1111 1111 1111``, ``3782 822463 10005``)
counts on its own. The card's security code (CVV/CVC) next to it is found
too: with the number, it is what a charge needs.

Brand prefixes and lengths are the issuers' published ranges (Visa, Mastercard,
American Express, Discover, JCB, Diners Club, UnionPay, Maestro, Mir); the
layouts are the ones cards are embossed with.
"""

from __future__ import annotations

import re

__all__ = ["CARD_GATE", "find_cards", "luhn_ok"]

# A run of 13 digits, maybe grouped: cheap to look for, and a card needs one.
CARD_GATE = re.compile(r"\d(?:[ -]?\d){12}")

# Digits in groups split by one space or one dash, as long as a card may be;
# not inside a word or a longer number (an IBAN's groups follow letters and digits).
_CANDIDATE = re.compile(r"(?<![\w.,/-])(?<!\d[ -])\d(?:[ -]?\d){12,18}(?!\w)")
# Group lengths cards are printed with (16: 4-4-4-4; Amex 4-6-5; Diners 4-6-4; 19: 4-4-4-4-3).
_LAYOUTS = frozenset({(4, 4, 4, 4), (4, 6, 5), (4, 6, 4), (4, 4, 4, 4, 3)})
# (first digits, lengths): the brands' ranges.
_BRANDS: tuple[tuple[tuple[int, int], frozenset[int]], ...] = (
    ((4, 4), frozenset({13, 16, 19})),  # Visa
    ((51, 55), frozenset({16})),  # Mastercard
    ((2221, 2720), frozenset({16})),  # Mastercard 2-series
    ((34, 34), frozenset({15})),  # American Express
    ((37, 37), frozenset({15})),
    ((6011, 6011), frozenset(range(16, 20))),  # Discover
    ((644, 649), frozenset(range(16, 20))),
    ((65, 65), frozenset(range(16, 20))),
    ((62, 62), frozenset(range(16, 20))),  # UnionPay
    ((3528, 3589), frozenset(range(16, 20))),  # JCB
    ((300, 305), frozenset(range(14, 20))),  # Diners Club
    ((36, 36), frozenset(range(14, 20))),
    ((38, 39), frozenset(range(16, 20))),
    ((2200, 2204), frozenset(range(16, 20))),  # Mir
    ((5018, 5018), frozenset(range(13, 20))),  # Maestro
    ((5020, 5020), frozenset(range(13, 20))),
    ((5038, 5038), frozenset(range(13, 20))),
    ((5893, 5893), frozenset(range(13, 20))),
    ((6304, 6304), frozenset(range(13, 20))),
    ((6759, 6759), frozenset(range(13, 20))),
    ((6761, 6763), frozenset(range(13, 20))),
)
_CONTEXT_CHARS = 48
_CARD_WORD = re.compile(
    r"(?i)(?<![a-z])(?:cards?|visa|master\s?card|mc|amex|american\s+express|discover|diners|jcb"
    r"|union\s?pay|maestro|mir|credit|debit|cc|ccn|pan|kreditkarte|karte|tarjeta|carte|cart[aã]o"
    r"|exp(?:iry|ires|iration)?|valid\s+(?:thru|through)|good\s+thru"
    r"|cvv2?|cvc2?|csc|cvn|cid|security\s+code)(?![a-z])"
)
_EXPIRY = re.compile(r"(?<![\d/])(?:0[1-9]|1[0-2])\s?/\s?(?:\d{2}|20\d{2})(?![\d/])")
# The security code's value: after its name, or (right after the number and
# an expiry) a bare 3-4 digit group.
_SECURITY_CODE = re.compile(
    r"(?i)(?<![a-z])(?:cvv2?|cvc2?|csc|cvn|security\s+code)(?![a-z])[\s:=#.-]{0,4}(\d{3,4})(?!\d)"
)


# "4111 1111 1111 1111 12/29 123": the code as the last of number, expiry, code.
_BARE_CODE = re.compile(
    r"[\s,;:-]{1,3}(?:(?i:exp\w*|valid\s+thru)[\s:.]{0,3})?"
    r"(?:0[1-9]|1[0-2])\s?/\s?(?:\d{2}|20\d{2})[\s,;:-]{1,3}(\d{3,4})(?![\d/])"
)


def luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _brand_ok(digits: str) -> bool:
    for (low, high), lengths in _BRANDS:
        width = len(str(low))
        if low <= int(digits[:width]) <= high and len(digits) in lengths:
            return True
    return False


def _card_in(run: str) -> tuple[int, bool] | None:
    """The length (in characters) of the card number at the start of ``run``,
    and whether it is laid out in a card's groups; None if there is none.

    A run may carry a group too many ("4111 1111 1111 1111 12" before "/29"):
    the longest leading groups that make a card count."""
    separators = {c for c in run if not c.isdigit()}
    if not separators:
        return (len(run), False) if _is_card(run) else None
    if len(separators) > 1:
        return None
    groups = run.split(separators.pop())
    for n in range(len(groups), 1, -1):
        if tuple(len(g) for g in groups[:n]) in _LAYOUTS and _is_card("".join(groups[:n])):
            return sum(len(g) for g in groups[:n]) + n - 1, True
    # One run of digits, then something else ("6011000990139424 03/27").
    return (len(groups[0]), False) if _is_card(groups[0]) else None


def _is_card(digits: str) -> bool:
    return (
        13 <= len(digits) <= 19 and len(set(digits)) > 1 and _brand_ok(digits) and luhn_ok(digits)
    )


def find_cards(text: str) -> list[tuple[str, int, int]]:
    """(kind, start, end) of each card number in ``text`` and of the security
    code written next to it."""
    out: list[tuple[str, int, int]] = []
    for match in _CANDIDATE.finditer(text):
        found = _card_in(match.group())
        if found is None:
            continue
        length, grouped = found
        start, end = match.start(), match.start() + length
        before = text[max(0, start - _CONTEXT_CHARS) : start]
        after = text[end : end + _CONTEXT_CHARS]
        if not grouped and not (
            _CARD_WORD.search(before) or _CARD_WORD.search(after) or _EXPIRY.search(after)
        ):
            continue
        out.append(("card number", start, end))
        bare = _BARE_CODE.match(text, end)
        if bare is not None:
            out.append(("card security code", bare.start(1), bare.end(1)))
        for code in _SECURITY_CODE.finditer(text, max(0, start - _CONTEXT_CHARS), end + 80):
            if code.start(1) >= end or code.end(1) <= start:
                out.append(("card security code", code.start(1), code.end(1)))
    return out
