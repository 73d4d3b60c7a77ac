"""The people a vault's memories name: ``speaker`` and ``contact`` fields.

The catalog counts them as it reads files, and recall treats their names as
labels (see :mod:`mdmem.recall.conversation`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from mdmem.models import Block

__all__ = ["PEOPLE_FIELDS", "TOKEN", "name_tokens", "people_of"]

PEOPLE_FIELDS = ("speaker", "contact")
TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
# Name tokens that are also everyday query words would strip meaning from
# queries ("will", "may"): keep them in the text.
_HANDLE = re.compile(r"[:@/\\#\d]")
_COMMON_WORDS = (
    "a an and are at be but by can did do does for from had has have he her him his how "
    "i in is it its may me my of on or our she so that the their them they this to us was "
    "we what when where which who why will with you your "
    "user assistant system agent human bot tool"
)
_COMMON = frozenset(_COMMON_WORDS.split())


def people_of(block: Block) -> list[str]:
    """The people a block names in its ``speaker``/``contact`` fields."""
    return [v for key, v in block.fields if key in PEOPLE_FIELDS and v.strip()]


def name_tokens(names: Iterable[str]) -> set[str]:
    """Casefolded words of people's names, minus everyday words.

    Values that look like handles or ids (``telegram:123``, ``ana@x.org``,
    ``user:demo``) are not names: their words ("telegram", "user") are what
    people ask about, and stay in the query.
    """
    out: set[str] = set()
    for name in names:
        if _HANDLE.search(name):
            continue
        for token in TOKEN.findall(name.casefold()):
            if len(token) > 1 and token not in _COMMON and not token.isdigit():
                out.add(token)
    return out
