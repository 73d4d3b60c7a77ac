"""Names a query calls people by that the vault knows under another name.

In real chat people are not called what their ``speaker`` field says: the
field holds a display name ("Emi", "Fahim Khan") while the other person
writes "Hey Kate!", and whoever asks about the chat later writes "Kate",
"Fahin" or "Aqib". Recall treats known people's names as labels (the people
feature, names left out of the embedded query, see
:mod:`mdmem.recall.conversation`), so a name it does not know is worse than
useless: the keyword side matches the *other* person's turns that greet
"Kate" by name. :func:`resolve` finds, for each name-like word of a query
that is nobody's name in the vault, the person it means:

* **A nickname** is found from how the conversation uses it: a word said to
  someone ("Hey Kate!", "Thank you Kate.", "What about you Kate?", "…, Kate.")
  names the person the turns around it come from (the addressee), and a
  word a speaker introduces themselves with ("I'm Kate", "my name is Kate")
  names that speaker. It resolves when the uses agree on one person: at
  least :data:`MIN_VOTES` votes (an introduction counts
  :data:`INTRODUCTION_VOTES`), :data:`AGREEMENT` of them for that person, and
  address being at least :data:`ADDRESS_SHARE` of the word's uses (a
  third person talked about — "I met Kate at work" — is not anyone's
  nickname).
* **A misspelt name** ("Aqib" for Akib, "Fahin" for Fahim) is a word that
  no memory holds at all, one edit (Damerau) away from exactly one known
  name word of at least four letters.

Nothing is learnt or stored: each query looks its candidate words up in the
keyword index (one search each, for the few capitalised words a question
has), so the answer follows the vault as it changes. Measured on the
REALTALK dev chats, where question writers call one participant by her real
name and misspell two others (``bench/rerank_fit.py``), see docs/architecture.md.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass

from mdmem.models import Block
from mdmem.recall.conversation import voice_of

__all__ = [
    "ADDRESS_SHARE",
    "AGREEMENT",
    "INTRODUCTION_VOTES",
    "MIN_VOTES",
    "Alias",
    "resolve",
    "rewrite",
]

MIN_VOTES = 3
INTRODUCTION_VOTES = 3
AGREEMENT = 0.8
ADDRESS_SHARE = 0.3
LOOKUP_LIMIT = 200  # blocks read per candidate word
_MIN_TYPO_LENGTH = 4

# A capitalised word, with an optional possessive.
_NAME_WORD = re.compile(r"\b([A-Z][a-z]+(?:[-'][A-Z]?[a-z]+)?)(?:['’]s)?\b")
# Capitalised words of a question that are never names.
# fmt: off
_NOT_NAMES = frozenset((
    "what", "when", "where", "who", "whom", "whose", "which", "why", "how", "is", "are", "was",
    "were", "do", "does", "did", "has", "have", "had", "can", "could", "would", "should", "will",
    "may", "might", "must", "the", "a", "an", "in", "on", "at", "of", "for", "from", "to", "and",
    "or", "if", "i", "it", "its", "they", "their", "he", "she", "his", "her", "we", "you",
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
    "january", "february", "march", "april", "june", "july", "august", "september",
    "october", "november", "december", "yesterday", "today", "tomorrow", "last", "next",
    "both", "all", "any", "some", "many", "much", "list", "name", "tell", "give",
))
_GREETINGS = (
    r"hi|hey|heya|hiya|hello|yo|thanks|thank\s+you|thank\s+u|thx|ty|wow|oh|aw+|congrats|"
    r"congratulations|welcome|morning|good\s+morning|good\s+night|goodnight|night|bye|"
    r"see\s+you|see\s+ya|talk\s+to\s+you|love\s+you|miss\s+you|sorry|dear|ok|okay|omg|haha"
)
# Words before a name that make it someone talked about, not talked to.
_OBJECT_OF = frozenset((
    "in", "to", "at", "from", "of", "the", "a", "an", "with", "for", "about", "into", "on", "by",
    "like", "my", "our", "your", "his", "her", "their", "this", "that", "and", "or", "visit",
    "visited", "near", "met", "meet", "saw", "see", "tell", "told", "ask", "asked", "call",
    "called", "text", "texted", "named", "than",
))
# fmt: on


@dataclass(frozen=True)
class Alias:
    """``word`` (as the query wrote it) means the person named ``name``; ``why`` is
    ``"nickname"`` or ``"misspelling"``."""

    word: str
    name: str
    why: str


def _candidates(query: str, people: Collection[str]) -> list[str]:
    out: list[str] = []
    for m in _NAME_WORD.finditer(query):
        word = m.group(1)
        folded = word.casefold()
        if folded in _NOT_NAMES or folded in people or len(folded) < 3 or word in out:
            continue
        out.append(word)
    return out


def _patterns(word: str) -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    w = re.escape(word)
    address = re.compile(
        rf"(?:\b(?:{_GREETINGS})\W{{0,3}}\s*{w}\b"  # "Hey Kate", "Thank you Kate"
        rf"|\byou\s+{w}\s*(?:[.!?,]|$)"  # "What about you Kate?"
        rf"|,\s*{w}\s*(?:[.!?,]|$)"  # "…, Kate."
        rf"|^\s*{w}\s*[,!]"  # "Kate, …" / "Kate!"
        rf"|(?P<before>\b[\w'’]+)\s+{w}\s*[!?])",  # "Looks amazing Kate!"
        re.IGNORECASE | re.MULTILINE,
    )
    intro = re.compile(
        rf"\b(?:i['’]?m|i\s+am|my\s+name\s+is|call\s+me|this\s+is|it['’]s)\s+{w}\b", re.IGNORECASE
    )
    anywhere = re.compile(rf"\b{w}\b", re.IGNORECASE)
    return address, intro, anywhere


def _addressed(match: re.Match[str]) -> bool:
    before = match.groupdict().get("before")
    return before is None or before.casefold() not in _OBJECT_OF


def _addressee(block: Block, neighbours: Callable[[Block], Sequence[Block]]) -> str | None:
    """The one other voice among the turns around ``block`` (its speaker's name
    as the field writes it), or None when there is none or more than one."""
    own = voice_of(block)
    others = {
        name.strip()
        for turn in neighbours(block)
        if voice_of(turn) not in (None, own)
        and (name := turn.field("speaker") or turn.field("role"))
    }
    return others.pop() if len(others) == 1 else None


def _speaker(block: Block) -> str | None:
    name = block.field("speaker") or block.field("role")
    return name.strip() if name and name.strip() else None


def _nickname(
    word: str, blocks: Iterable[Block], neighbours: Callable[[Block], Sequence[Block]]
) -> str | None:
    address, intro, anywhere = _patterns(word)
    votes: Counter[str] = Counter()
    uses = addressed = 0
    for block in blocks:
        text = block.text
        found = len(anywhere.findall(text))
        if not found or voice_of(block) is None:
            continue
        uses += found
        if intro.search(text):
            speaker = _speaker(block)
            if speaker is not None:
                votes[speaker] += INTRODUCTION_VOTES
                addressed += 1
            continue
        if any(_addressed(m) for m in address.finditer(text)):
            addressed += 1
            person = _addressee(block, neighbours)
            if person is not None:
                votes[person] += 1
    if not votes:
        return None
    name, n = votes.most_common(1)[0]
    total = sum(votes.values())
    if n < MIN_VOTES or n < AGREEMENT * total or addressed < ADDRESS_SHARE * uses:
        return None
    return name


def _one_edit(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` differ by one insertion, deletion, substitution or
    transposition of neighbours (Damerau)."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        if len(diff) == 1:
            return True
        return (
            len(diff) == 2
            and diff[1] == diff[0] + 1
            and a[diff[0]] == b[diff[1]]
            and a[diff[1]] == b[diff[0]]
        )
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    i = 0
    while i < len(short) and short[i] == long_[i]:
        i += 1
    return short[i:] == long_[i + 1 :]


def _misspelling(word: str, people: Collection[str]) -> str | None:
    folded = word.casefold()
    if len(folded) < _MIN_TYPO_LENGTH:
        return None
    close = {p for p in people if len(p) >= _MIN_TYPO_LENGTH and _one_edit(folded, p)}
    return close.pop() if len(close) == 1 else None


def resolve(
    query: str,
    people: Collection[str],
    lookup: Callable[[str], Iterable[Block]],
    neighbours: Callable[[Block], Sequence[Block]],
) -> list[Alias]:
    """The aliases in ``query`` (see the module doc).

    ``people``: the casefolded name words the vault knows
    (``Threads.people()``); ``lookup(word)``: the blocks whose index holds
    ``word`` (a keyword search, at most :data:`LOOKUP_LIMIT`);
    ``neighbours(block)``: the turns right around a turn
    (``Threads.neighbours``).
    """
    if not people:
        return []
    out: list[Alias] = []
    for word in _candidates(query, people):
        blocks = list(lookup(word))
        anywhere = _patterns(word)[2]
        if not any(anywhere.search(b.text) for b in blocks):
            typo = _misspelling(word, people)
            if typo is not None:
                out.append(Alias(word, typo, "misspelling"))
            continue
        name = _nickname(word, blocks, neighbours)
        if name is not None and name.casefold() != word.casefold():
            out.append(Alias(word, name, "nickname"))
    return out


def rewrite(query: str, aliases: Sequence[Alias]) -> str:
    """``query`` with each alias replaced by the name the vault knows (a
    possessive kept): "What are Kate's hobbies?" -> "What are Emi's hobbies?"."""
    for alias in aliases:
        query = re.sub(rf"\b{re.escape(alias.word)}\b", alias.name, query)
    return query


def understood(
    query: str,
    people: Collection[str],
    search: Callable[[str, int], Iterable[tuple[str, float]]],
    block_of: Callable[[str], Block | None],
    neighbours: Callable[[Block], Sequence[Block]],
) -> str:
    """``query`` as recall should read it: its aliases replaced (:func:`resolve`,
    :func:`rewrite`). ``search(word, limit)`` is the keyword index's search;
    an index that fails leaves the query as it is."""
    from mdmem.errors import IndexError_

    def lookup(word: str) -> list[Block]:
        try:
            found = search(word, LOOKUP_LIMIT)
        except IndexError_:
            return []
        return [b for i, _ in found if (b := block_of(i)) is not None]

    aliases = resolve(query, people, lookup, neighbours)
    return rewrite(query, aliases) if aliases else query
