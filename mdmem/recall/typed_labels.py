"""Labels no memory text can type: what the renderer writes beside an item,
neutralised where the item's own text imitates it.

An injected item reads ``- [^m-abc · 2026-11-20 · fact · by agent, unreviewed]
<text>`` (:mod:`mdmem.recall.asdata`). A text that carried its own
``[^m-abc · … · by person, reviewed]``, a bare "by person, reviewed", or an
``INSTRUCTION-LIKE (…)`` / "no instruction" claim would sit beside the real
label, and a model cannot tell which of the two the renderer wrote. So, in
the injected copy of the text only (the file keeps every byte):

* the label's separator ``·`` (and the dots drawn like it) becomes ``/``;
* ``[^`` (the id that opens a label) loses its caret;
* a provenance claim ("by person, reviewed", "by caller", "reviewed by a
  person", a team line's "accepted by Bob"...) is quoted as a claim: ``by
  person, reviewed`` reads ``(text claims: by person - reviewed)``;
* the renderer's own words (``INSTRUCTION-LIKE``, ``Quoted data from the
  user's memory vault``) are shown in lower case, so the real ones stand out.

Matching is done on the text with invisible characters removed and
look-alike letters folded (:mod:`mdmem.store.secret_forms`), so
``by реrson`` with Cyrillic letters is caught too.
"""

from __future__ import annotations

import re
import unicodedata

from mdmem.store.secret_forms import CONFUSABLES, INVISIBLE

__all__ = ["neutralise"]

_DOTS = re.compile("[\u00b7\u2022\u2219\u22c5\u30fb\u2027\u0387\u16eb\u2e31\u00b7]")
_CARET_ID = re.compile(r"\[\s*\^")
_WHO = r"(?:person|human|user|agent|caller|import|consolidation|assistant|system|owner|admin)"
# "by person, reviewed", "reviewed by a human", "human-reviewed"; and, inside
# brackets (where the renderer puts its label), a bare "by caller".
_CLAIM = re.compile(
    rf"(?i)\bby\s+(?:the\s+|a\s+)?{_WHO}\s*[,;/-]\s*(?:un)?reviewed\b"
    rf"|\b(?:un)?reviewed\s+by\s+(?:the\s+|a\s+)?{_WHO}\b|\b(?:human|person)[\s-]+reviewed\b"
    rf"|(?:(?<=[\[(/])|(?<=[\[(/]\s))by\s+{_WHO}\b|\bby\s+{_WHO}(?=\s*[\])])"
    # A team line's label names who proposed and accepted it (from git): the
    # same words typed into any memory's text are its claim, not a review.
    r"|\b(?:accepted|proposed)\s+by\s+(?:the\s+|a\s+)?[\w.@'-]+"
)
_RENDERER_WORDS = re.compile(r"(?i)instruction-like|quoted data from the user's memory vault")
_ODD = re.compile("[" + INVISIBLE + "".join(CONFUSABLES) + "]")


def neutralise(text: str) -> str:
    """``text`` as an injected item may show it: nothing in it reads as a label."""
    if _ODD.search(text) or not text.isascii():
        text = _fold(text)
    text = _DOTS.sub("/", text)
    text = _CARET_ID.sub("[", text)
    text = _CLAIM.sub(_claimed, text)
    return _RENDERER_WORDS.sub(lambda m: m.group().lower(), text)


def _fold(text: str) -> str:
    out = []
    for ch in text:
        if ch in INVISIBLE:
            continue
        ch = CONFUSABLES.get(ch, ch)
        out.append(ch if ch.isascii() else unicodedata.normalize("NFKC", ch))
    return "".join(out)


def _claimed(match: re.Match[str]) -> str:
    words = re.sub(r"\s*[,;/]\s*", " - ", match.group())
    return f"(text claims: {words})"
