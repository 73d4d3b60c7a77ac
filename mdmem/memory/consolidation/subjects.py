"""Same subject, new value? The wording rule auto-resolve applies before it retires a memory.

Cosine similarity says two memories read alike; it cannot say whether they
are about the same thing. ``Note abc123 says …`` and ``Note def456 says …``
embed close together, and so do ``The frontend is written in TypeScript`` and
``The backend is written in TypeScript``, yet each is a fact of its own.
:func:`compare` looks at *where* two texts differ:

1. Both are split into tokens (a quoted string, a path or a code is one
   token; ``#tags`` are set aside), and the token sequences are aligned; the
   stretches where they differ are the *regions*.
2. Each clause is split at its main verb: the first auxiliary or copula
   (``is``, ``was``, ``has``, ``will`` …) or separator (``:``, ``=``) when it
   has one, else the first word shaped like a finite verb (``lives``,
   ``prefers``, ``needs``: ``-s``/``-ed``, after a word that is not a
   determiner or preposition). Before it is the *subject*, after it the
   *value*.
3. The verdict:

   * ``distinct`` when a region touches a subject (``frontend``/``backend``,
     ``Note abc123``/``Note def456``, ``fact 1-1``/``fact 1-2``), or when the
     differing words include an identifier: a code with digits
     (``web-01``, ``INV-2041``, ``abc123``), a ``#number``, a path or dotted
     name, a quoted string, or a number that names something
     (``room 204``, ``step 3``);
   * ``update`` when every region lies in the value of a clause whose main
     verb both texts share, and the value changed in one place
     (``monthly`` → ``weekly``, ``v4.2`` → ``v4.3``, ``Paris`` → ``Berlin``)
     or only in quantities (``7am and 6pm`` → ``8am and 7pm``), also when the
     newer text says that it changed: a time word set aside (``… Tuesday
     09:00 now``, ``currently``, ``these days``), ``no longer`` before the
     very same statement, or a verb of change taking the old value's place
     (``The standup moved to 11am`` after ``The standup is at 10am``: the
     same subject words, then the values compared as ``is …``);
   * ``unsure`` otherwise: no verb found, the verb itself changed shape,
     several words changed in several places, the tags differ, or the verb is
     an event in the past tense (``Alice visited Paris`` /
     ``Alice visited Berlin``: events add up, they do not replace each other).

Only ``update`` lets the similarity rule retire a memory. ``unsure`` and
``distinct`` keep both active; a configured LLM judge still sees them and
may retire what the wording cannot settle.

The only word lists here are English closed classes (auxiliaries,
determiners, pronouns, prepositions, conjunctions): grammar, not vocabulary.
Open-class words (nouns, verbs, names) are recognised by their shape.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from difflib import SequenceMatcher
from typing import Literal

__all__ = ["Verdict", "compare", "tokens"]

Kind = Literal["update", "distinct", "unsure"]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


AUXILIARIES = _words(
    "am is are was were be been being has have had do does did will would shall should "
    "can could may might must isn't aren't wasn't weren't hasn't haven't hadn't doesn't "
    "don't didn't won't wouldn't shan't shouldn't can't cannot couldn't mightn't mustn't "
    "it's that's there's here's what's who's he's she's"
)
# Words that sit before a noun: a word right after one of these is not a verb.
DETERMINERS = _words(
    "the a an this that these those my your his her its our their each every some any no "
    "all both either neither another such"
)
PREPOSITIONS = _words(
    "about above across after against along among around as at before behind below beneath "
    "beside besides between beyond by despite down during except for from in inside into "
    "like near of off on onto out outside over past per since through throughout till to "
    "toward towards under underneath until unlike up upon via with within without"
)
PRONOUNS = _words("i you he she it we they me him us them who whom whose which what there here")
CONJUNCTIONS = _words("and or but nor so yet")
# A subordinate or relative clause has a verb of its own: it starts a new clause.
SUBORDINATORS = _words(
    "when whenever while because although though if unless whereas which who whom where"
)
FUNCTION_WORDS = AUXILIARIES | DETERMINERS | PREPOSITIONS | PRONOUNS | CONJUNCTIONS | SUBORDINATORS
ARTICLES = frozenset({"a", "an", "the"})
SEPARATORS = frozenset({":", "=", "->", "=>", "→"})

# A #tag, as mdmem.files.blocks parses it.
_TAG = re.compile(r"(?<![\w&/#\]\)`])#([A-Za-z_][\w/-]*)")
# A quoted string (one token), else a run of non-space characters.
_CHUNK = re.compile(r"\"([^\"\n]+)\"|“([^”\n]+)”|`([^`\n]+)`|(?<![\w'])'([^'\n]+)'(?![\w])|\S+")
_LEADING = "([{<\"'“‘"
_TRAILING = ")]}>\"'”’,.;:!?"
# Values: amounts, units, money, percentages, times, dates, versions.
_NUMBER = re.compile(
    r"""^(?:
        [~≈<>+-]?[$€£¥]?\d[\d,]*(?:\.\d+)*(?:%|[a-z]{1,3})?   # 12, 1,450, 99.9%, $20, 10am
      | \d{1,2}:\d{2}(?::\d{2})?(?:am|pm)?                    # 9:30, 18:00:00, 9:30am
      | \d{4}-\d{2}(?:-\d{2})?                                # 2024-03 and 2024-03-04
      | \d{1,4}/\d{1,4}(?:/\d{2,4})?                          # 135/85, 3/14/2025
      | v\d+(?:\.\d+)*(?:-[a-z0-9.]+)?                        # v4, v4.2, v1.2.3-rc1
    )$""",
    re.VERBOSE,
)
_DOTTED = re.compile(r"[A-Za-z]\.[A-Za-z]")


@dataclass(frozen=True)
class Token:
    """One token of a memory's text."""

    text: str  # as written
    key: str  # what alignment compares: lower case, commas out of numbers
    cls: Literal["word", "number", "code", "sep"]
    clause: int  # which clause of the text it belongs to


@dataclass(frozen=True)
class Verdict:
    """What :func:`compare` found, with a one-line reason for logs and commit trailers."""

    kind: Kind
    reason: str
    # The content words of the subject both texts share ("office" for "The
    # office is cleaned …"); empty when unknown or only a pronoun ("It is …").
    subject: tuple[str, ...] = ()
    # The newer text says itself that something changed ("now", "no longer",
    # "moved to"), which a mere look-alike does not: auto-resolve trusts a
    # lower similarity then (lifecycle.SAID_THRESHOLD).
    said: bool = False

    @property
    def update(self) -> bool:
        return self.kind == "update"


# ----------------------------------------------------------------- tokens ----


def _classify(core: str) -> Literal["word", "number", "code"]:
    low = core.lower()
    if _NUMBER.match(low):
        return "number"
    if any(c.isdigit() for c in core) or core.startswith(("#", "@", "$")):
        return "code"  # abc123, web-01, 1-1, us-east-1, #312, @alice, $HOME
    if "_" in core or "://" in core or _DOTTED.search(core):
        return "code"  # snake_case, URLs, file.ts, api.example.com
    if "/" in core and (core.startswith(("/", "./", "~/")) or "." in core.rsplit("/", 1)[-1]):
        return "code"  # paths (but "he/him" and "and/or" stay words)
    return "word"


def tokens(text: str) -> tuple[list[Token], frozenset[str]]:
    """The tokens of ``text`` and its ``#tags`` (lower case), set apart."""
    tags = frozenset(m.group(1).lower() for m in _TAG.finditer(text))
    text = _TAG.sub(" ", text)
    out: list[Token] = []
    clause = 0
    for match in _CHUNK.finditer(text):
        chunk = match.group(0)
        inner = next((g for g in match.groups() if g is not None), None)
        if inner is not None:  # a quoted string names one thing, whatever it says
            out.append(Token(inner, "«" + " ".join(inner.lower().split()) + "»", "code", clause))
            continue
        if chunk in SEPARATORS:
            out.append(Token(chunk, ":", "sep", clause))
            continue
        stripped = chunk.lstrip(_LEADING)
        core = stripped.rstrip(_TRAILING)
        tail = stripped[len(core) :]
        if not core or not any(c.isalnum() for c in core):
            if any(c in ".;!?" for c in chunk):
                clause += 1
            continue
        low = core.lower()
        if low in SUBORDINATORS and out and out[-1].clause == clause:
            clause += 1
        cls = _classify(core)
        key = low.replace(",", "") if cls == "number" else low
        out.append(Token(core, key, cls, clause))
        if tail.startswith(":"):
            out.append(Token(":", ":", "sep", clause))  # "Office cleaning: weekly"
        if any(c in ".;!?" for c in tail):
            clause += 1
    return out, tags


# ------------------------------------------------------------------- verbs ----


@dataclass(frozen=True)
class _Verb:
    index: int
    strong: bool  # an auxiliary or a separator, not a guess from a word's shape
    past_event: bool  # an open-class verb in -ed: something that happened


def _looks_finite(word: str) -> bool:
    if not word.isalpha() or not word.islower() or word in FUNCTION_WORDS:
        return False
    if word.endswith("s"):
        return not word.endswith(("ss", "us", "is"))
    return word.endswith("ed") and len(word) > 3


def _main_verb(toks: list[Token], start: int, end: int) -> _Verb | None:
    """The main verb of the clause ``toks[start:end]``."""
    for i in range(start, end):
        if toks[i].cls == "sep" or toks[i].key in AUXILIARIES:
            return _Verb(i, strong=True, past_event=False)
    for i in range(start + 1, end):
        prev, tok = toks[i - 1], toks[i]
        if prev.cls == "sep" or prev.key in DETERMINERS or prev.key in PREPOSITIONS:
            continue
        if prev.key.endswith(("'s", "s'")):  # "the user's preferred airline"
            continue
        if tok.cls == "word" and _looks_finite(tok.text):
            return _Verb(i, strong=False, past_event=tok.key.endswith("ed"))
    for i in range(start + 1, end - 1):
        # A plural subject takes the bare verb: "deploys happen on", "reports go to".
        prev, tok, nxt = toks[i - 1], toks[i], toks[i + 1]
        if (
            prev.cls == "word"
            and _looks_finite(prev.text)
            and tok.cls == "word"
            and tok.text.isalpha()
            and tok.text.islower()
            and tok.key not in FUNCTION_WORDS
            and (nxt.key in PREPOSITIONS or nxt.key in DETERMINERS)
        ):
            return _Verb(i, strong=False, past_event=False)
    return None


def _clauses(toks: list[Token]) -> dict[int, tuple[int, int]]:
    spans: dict[int, tuple[int, int]] = {}
    for i, tok in enumerate(toks):
        first, _ = spans.get(tok.clause, (i, i))
        spans[tok.clause] = (first, i + 1)
    return spans


# ------------------------------------------------------------------ verdict ----


def _is_name_number(toks: list[Token], i: int) -> bool:
    """A number that names something (``room 204``, ``step 3``), not an amount of it."""
    if toks[i].cls != "number" or i == 0:
        return False
    prev = toks[i - 1]
    if prev.cls != "word" or prev.key in FUNCTION_WORDS or not prev.text.islower():
        return False  # "is 7", "at 9:30", "Node 20" (a version of a name)
    if _looks_finite(prev.text):
        return False  # "takes 12", "weighs 82"
    nxt = toks[i + 1] if i + 1 < len(toks) and toks[i + 1].clause == toks[i].clause else None
    # "3 nodes", "12 characters": a quantity of what follows.
    return nxt is None or nxt.key in FUNCTION_WORDS or nxt.cls != "word"


def _same_path(a: list[Token], b: list[Token]) -> bool:
    # "constants.ts" and "src/lib/constants.ts" name the same file.
    if len(a) != 1 or len(b) != 1 or a[0].cls != "code" or b[0].cls != "code":
        return False
    x, y = a[0].key, b[0].key
    return ("/" in x) != ("/" in y) and x.rsplit("/", 1)[-1] == y.rsplit("/", 1)[-1]


def compare(old: str, new: str) -> Verdict:
    """Is ``new`` the same subject as ``old`` with a changed value?

    The wording rule first (:func:`_compare`); when it cannot tell, the words
    a person uses to *say* that something changed (:mod:`.changes`: "… now",
    "no longer …", "moved to …") may settle it.
    """
    verdict = _compare(old, new)
    if verdict.kind == "distinct":
        return verdict
    for marker, old_said, new_said, exact in _said_changed(old, new):
        again = _compare(old_said, new_said)
        if again.update and (not exact or again.reason == "same statement"):
            if verdict.update:  # the wording already saw it; the change words only vouch
                return replace(verdict, said=True)
            return Verdict("update", f"{marker}: {again.reason}", again.subject, said=True)
    return verdict


def _compare(old: str, new: str) -> Verdict:
    a, tags_a = tokens(old)
    b, tags_b = tokens(new)
    if tags_a != tags_b:
        return Verdict("unsure", "tags differ")
    if not a or not b:
        return Verdict("unsure", "no words")
    matcher = SequenceMatcher(None, [t.key for t in a], [t.key for t in b], autojunk=False)
    regions = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            continue
        ra, rb = a[i1:i2], b[j1:j2]
        if {t.key for t in ra + rb} <= ARTICLES or _same_path(ra, rb):
            continue  # "the"/"a", or the same file by another path
        regions.append((i1, i2, j1, j2))
    if not regions:
        return Verdict("update", "same statement", _subject(a, 0))
    if len(_clauses(a)) != len(_clauses(b)):
        return Verdict("unsure", "different sentence structure")
    clauses_a, clauses_b = _clauses(a), _clauses(b)
    changed: list[str] = []
    values_only = True
    for i1, i2, j1, j2 in regions:
        ra, rb = a[i1:i2], b[j1:j2]
        words = _shown(ra), _shown(rb)
        changed.append(f"{words[0]} -> {words[1]}")
        codes = [t.text for t in ra + rb if t.cls == "code"]
        codes += [a[k].text for k in range(i1, i2) if _is_name_number(a, k)]
        codes += [b[k].text for k in range(j1, j2) if _is_name_number(b, k)]
        if codes:
            return Verdict("distinct", f"identifier differs: {words[0]} -> {words[1]}")
        where = _position(a, b, clauses_a, clauses_b, i1, j1)
        if where == "subject":
            return Verdict("distinct", f"subject differs: {words[0]} -> {words[1]}")
        if where != "value":
            return Verdict("unsure", where)
        values_only &= all(t.cls == "number" for t in ra + rb)
    if len(regions) > 1 and not values_only:
        return Verdict("unsure", "changed in several places: " + "; ".join(changed))
    subject = _subject(a, a[min(regions[0][0], len(a) - 1)].clause)
    return Verdict("update", "same subject, new value: " + "; ".join(changed), subject)


def _shown(toks: list[Token], limit: int = 40) -> str:
    # Reasons go to logs and commit trailers: short, one line.
    text = " ".join(t.text for t in toks) or "∅"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _subject(toks: list[Token], clause: int) -> tuple[str, ...]:
    start, end = _clauses(toks).get(clause, (0, 0))
    verb = _main_verb(toks, start, end)
    if verb is None:
        return ()
    return tuple(t.key for t in toks[start : verb.index] if t.key not in FUNCTION_WORDS)


def _position(
    a: list[Token],
    b: list[Token],
    clauses_a: dict[int, tuple[int, int]],
    clauses_b: dict[int, tuple[int, int]],
    i1: int,
    j1: int,
) -> str:
    """``subject`` or ``value`` for a region starting at ``a[i1]``/``b[j1]``, else why not."""
    # A pure insertion at the end belongs to the last token's clause.
    clause = a[min(i1, len(a) - 1)].clause
    if b[min(j1, len(b) - 1)].clause != clause:
        return "changed across sentences"
    start_a, end_a = clauses_a[clause]
    start_b, end_b = clauses_b[clause]
    verb_a = _main_verb(a, start_a, end_a)
    verb_b = _main_verb(b, start_b, end_b)
    # "the cache is too slow" -> "the cache got fast": one side's auxiliary
    # opens the region and the other's verb, of a shape not recognised, is in it.
    if verb_a is not None and verb_b is None and verb_a.strong and verb_a.index == i1:
        verb_b = _Verb(j1, strong=True, past_event=False)
    if verb_b is not None and verb_a is None and verb_b.strong and verb_b.index == j1:
        verb_a = _Verb(i1, strong=True, past_event=False)
    if verb_a is None or verb_b is None:
        return "no verb found"
    before_a, before_b = verb_a.index <= i1, verb_b.index <= j1
    if before_a != before_b:
        return "the verb changed"
    if not before_a:
        return "subject"
    # The verb is in the shared prefix, or (an auxiliary) opens the region itself.
    shared = verb_a.index < i1 and verb_b.index < j1 and a[verb_a.index].key == b[verb_b.index].key
    if not shared and not (verb_a.strong and verb_b.strong):
        return "the verb changed"
    if verb_a.past_event or verb_b.past_event:
        return "an event, not a state"
    return "value"


# --------------------------------------------------------- said to change ----

# Words that only say *when* a statement holds; set aside, the values compare.
_NOW = re.compile(
    r"(?:,\s*)?\b(?:right now|now(?! and (?:then|again))|currently|nowadays|these days|"
    r"from now on|as of (?:now|today)|"
    r"today|at the moment|instead|anymore|any more)\b,?",
    re.IGNORECASE,
)
_NO_LONGER = re.compile(r"\b(?:no longer|not any ?more)\s+", re.IGNORECASE)
# "<subject> [has|was|…] moved/switched/changed [back|over] to <value>"
_CHANGE = re.compile(
    r"^(?P<subject>.+?)\s+(?:(?:has|have|had|was|were|has been|have been|is being|got)\s+)?"
    r"(?:moved|switched|changed|shifted|migrated|upgraded|downgraded|raised|lowered|"
    r"increased|decreased|reduced|bumped|cut|went|rescheduled|renamed|changed over)"
    r"(?:\s+(?:back|over|up|down))?\s+(?:from\s+.+?\s+)?(?:to|into)\s+(?P<value>.+)$",
    re.IGNORECASE,
)


def _said_changed(old: str, new: str) -> list[tuple[str, str, str, bool]]:
    """Rewrites of (old, new) that set aside how ``new`` says it changed:
    (marker, old text, new text, whether the rewrite must be the same statement)."""
    out: list[tuple[str, str, str, bool]] = []
    old_plain, new_plain = _tidy(_NOW.sub(" ", old)), _tidy(_NOW.sub(" ", new))
    if new_plain != _tidy(new):
        out.append(("said to hold now", old_plain, new_plain, False))
    if _NO_LONGER.search(new_plain) and not _NO_LONGER.search(old_plain):
        out.append(("no longer", old_plain, _tidy(_NO_LONGER.sub("", new_plain)), True))
    change = _CHANGE.match(new_plain.rstrip(".!"))
    if change is not None:
        subject = change.group("subject")
        key = " ".join(subject.lower().split())
        if old_plain.lower().startswith(key + " ") and any(c.isalpha() for c in key):
            rest = old_plain[len(subject) :].strip().rstrip(".!")
            value = _old_value(rest)
            if value:
                out.append(
                    (
                        "said to change",
                        f"{subject} is {value}.",
                        f"{subject} is {_strip_lead(change.group('value'))}.",
                        False,
                    )
                )
    return out


def _old_value(rest: str) -> str:
    """What follows the main verb of ``rest`` (the old text after the subject words)."""
    words = rest.split()
    if not words:
        return ""
    i = 1
    while i < len(words) and words[i].lower() in AUXILIARIES | {"been", "being"}:
        i += 1  # "is being held", "has been"
    return _strip_lead(" ".join(words[i:]))


def _strip_lead(value: str) -> str:
    words = value.split()
    while words and words[0].lower() in PREPOSITIONS:
        words.pop(0)  # "at 10am" and "to 11am" name the same kind of value
    return " ".join(words).rstrip(".!")


def _tidy(text: str) -> str:
    return re.sub(r"\s+([.,;!?])", r"\1", " ".join(text.split()))
