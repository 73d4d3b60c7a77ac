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
   (``is``, ``was``, ``has``, ``will``, ``we're`` …) or separator (``:``,
   ``=``) when it has one, else the word after a personal pronoun (``We
   pin …``, ``I use …``), else the first word shaped like a finite verb
   (``lives``, ``prefers``, ``needs``: ``-s``/``-ed`` or a common irregular
   past such as ``ran``, after a word that is not a determiner or
   preposition). Before it is the *subject*, after it the *value*.
3. The verdict:

   * ``distinct`` when a region touches a subject (``frontend``/``backend``,
     ``Note abc123``/``Note def456``, ``fact 1-1``/``fact 1-2``), or when the
     differing words include an identifier (a code with digits such as
     ``web-01`` or ``INV-2041``, a ``#number``, a path or dotted name, a
     quoted string, a ``--flag``, a number that names something such as
     ``room 204``) anywhere but in the value's own slot: the identifier of a
     thing the verb relates its subject to is one of many (``The release
     includes PR #412``, ``owns service web-01``, ``is watching issue
     #880``, ``is flaky on host ci-03``, and any identifier of an event);
   * ``update`` when every region lies in the value of a clause whose main
     verb both texts share, and the value changed in one place
     (``monthly`` → ``weekly``, ``v4.2`` → ``v4.3``, ``Paris`` → ``Berlin``)
     or only in quantities and identifiers (``7am and 6pm`` → ``8am and
     7pm``). An identifier is the value itself when it is the predicate of
     ``be`` or a separator (``The phone number is 555-0134``), or stands in
     a preposition's phrase right after the verb (``lives on host db-07``,
     ``listens on port 8080``, ``is hosted in us-east-1``), the kind of
     name (``host``, ``port``) before it or not. Also an update when the
     newer text says that it changed: a time word set aside (``… Tuesday
     09:00 now``, ``currently``, ``these days``), ``no longer`` before the
     very same statement, a verb of change taking the old value's place
     (``The standup moved to 11am`` after ``The standup is at 10am``: the
     same subject words, then the values compared as ``is …``), ``is now on
     …`` after ``lives on …`` (another verb, the same preposition), or ``is
     now $25`` after ``costs $20`` (another verb, values that are numbers or
     identifiers);
   * ``unsure`` otherwise: no verb found, the verb itself changed shape,
     several words changed in several places, the bound of a quantity
     changed with it (``at least 3`` / ``at most 10``), the tags differ, or
     the verb is an event in the past tense (``Alice visited Paris`` /
     ``Alice visited Berlin``: events add up, they do not replace each other).

Only ``update`` lets the similarity rule retire a memory. ``unsure`` and
``distinct`` keep both active; a configured LLM judge still sees them and
may retire what the wording cannot settle.

An update is ``one_value`` when nothing changed but values that measure or
name: numbers, times, dates, versions, amounts and identifiers in the
value's slot (``port 8080`` → ``port 9090``), or a name that is the whole
predicate of ``be`` after a definite subject (``The cache backend is
Redis`` → ``… Memcached``; not ``One of our customers is …``, not a lower
case property such as ``is slow``, which may hold beside another). Such
values embed far apart while the rest stays word for word, so auto-resolve
trusts them at the lower similarity it allows a text that says it changed.
What the wording cannot tell is a relation that holds many values from one
that holds one: ``The user likes tea`` / ``… coffee`` reads like ``The
service uses Postgres`` / ``… MySQL``; both stay at the ordinary bar.

The only word lists here are English closed classes (auxiliaries,
determiners, pronouns, prepositions, conjunctions, titles such as ``Dr.``,
the irregular past forms of common verbs): grammar, not vocabulary.
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
    "it's that's there's here's what's who's he's she's i'm you're we're they're"
)
# The forms of "be", and the contractions that end in one: a verb that links
# its subject to a value ("is", "we're") rather than relating it to a thing.
COPULAS = _words("am is are was were be been being isn't aren't wasn't weren't") | frozenset(
    w for w in AUXILIARIES if w.endswith(("'s", "'m", "'re"))
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
# A clause that opens with one of these has its verb right after it: "We pin numpy 1.26".
PERSONAL = _words("i you we they")
CONJUNCTIONS = _words("and or but nor so yet")
# A subordinate or relative clause has a verb of its own: it starts a new clause.
SUBORDINATORS = _words(
    "when whenever while because although though if unless whereas which who whom where"
)
FUNCTION_WORDS = AUXILIARIES | DETERMINERS | PREPOSITIONS | PRONOUNS | CONJUNCTIONS | SUBORDINATORS
ARTICLES = frozenset({"a", "an", "the"})
# The past tense of the common irregular verbs (those it tells from the present:
# not "read", "put", "set"): "The user ran 5 km" is an event, as "walked" is.
IRREGULAR_PAST = _words(
    "ate became began bought brought built came caught chose drank drove fell felt fought "
    "flew forgot found gave grew heard held kept knew led left lost made meant met paid ran "
    "rang rode said sang sat saw sent slept sold spent spoke stole stood swam taught thought "
    "threw told took understood went woke won wore wrote"
)
IRREGULAR_PARTICIPLES = IRREGULAR_PAST | _words(
    "set put run cut hit let shut cast cost read become begun come done drunk gone grown known "
    "seen shown sung flown thrown worn torn broken written hidden given taken driven eaten "
    "chosen fallen forgotten spoken stolen ridden frozen"
)
# A subject that opens with one of these is one of many ("One of our customers is …").
INDEFINITE = _words("a an one some any another each every many several few")
# Adverbs of time and degree before a number: "is now 25", "is still 3".
ADVERBS = _words("now still already just only also even ever never currently usually almost")
# Words that bound a quantity: "at least 3" and "at most 10" are two limits, not two values.
BOUNDS = _words("least most more less fewer than")
# Abbreviated titles: the full stop of "Dr. Chen" does not end a sentence.
TITLES = _words("dr mr mrs ms mx prof st mt jr sr vs")
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
    # Nothing changed but values of the shape that measures or names (a number,
    # time, version, amount, host, port, path) in the value of a clause whose
    # subject and verb stay: as sure a sign of a replacement as saying so, so
    # auto-resolve trusts the same lower similarity.
    one_value: bool = False

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
        return "code"  # paths
    if "/" in core and not all(part.lower() in FUNCTION_WORDS for part in core.split("/")):
        return "code"  # packages/ui, feature/login (but "he/him" and "and/or" stay words)
    if core.startswith("-") and len(core) > 1:
        return "code"  # a command-line option: --verbose, -v
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
        low = core.lower().replace("’", "'")  # "we’re" is "we're"
        if low in SUBORDINATORS and out and out[-1].clause == clause:
            clause += 1
        cls = _classify(core)
        key = low.replace(",", "") if cls == "number" else low
        out.append(Token(core, key, cls, clause))
        if tail.startswith(":"):
            out.append(Token(":", ":", "sep", clause))  # "Office cleaning: weekly"
        if any(c in ".;!?" for c in tail) and not (tail == "." and low in TITLES):
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
    return (word.endswith("ed") and len(word) > 3) or word in IRREGULAR_PAST


def _past(tok: Token) -> bool:
    return tok.key.endswith("ed") or tok.key in IRREGULAR_PAST


def _auxiliary(toks: list[Token], i: int, start: int) -> bool:
    # "in May", "ask Will": a capitalised auxiliary inside a clause is a name.
    return toks[i].key in AUXILIARIES and (i == start or not toks[i].text[:1].isupper())


def _main_verb(toks: list[Token], start: int, end: int) -> _Verb | None:
    """The main verb of the clause ``toks[start:end]``."""
    for i in range(start, end):
        if toks[i].cls == "sep" or _auxiliary(toks, i, start):
            return _Verb(i, strong=True, past_event=False)
    if end - start > 1 and toks[start].key in PERSONAL:
        # "I use …", "We pin …": after a personal pronoun the verb needs no -s.
        tok = toks[start + 1]
        if tok.cls == "word" and tok.text.isalpha() and tok.key not in FUNCTION_WORDS:
            return _Verb(start + 1, strong=False, past_event=_past(tok))
    for i in range(start + 1, end):
        prev, tok = toks[i - 1], toks[i]
        if prev.cls == "sep" or prev.key in DETERMINERS or prev.key in PREPOSITIONS:
            continue
        if prev.key.endswith(("'s", "s'")):  # "the user's preferred airline"
            continue
        if tok.cls == "word" and _looks_finite(tok.text):
            return _Verb(i, strong=False, past_event=_past(tok))
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
    if toks[i].cls != "number" or i == 0 or "." in toks[i].key:
        return False  # a dotted number is a version or a measure: "numpy 1.26", "Python 3.12"
    prev = toks[i - 1]
    if prev.cls != "word" or prev.key in FUNCTION_WORDS or not prev.text.islower():
        return False  # "is 7", "at 9:30", "Node 20" (a version of a name)
    if _looks_finite(prev.text):
        return False  # "takes 12", "weighs 82"
    if prev.key in ADVERBS or prev.key.endswith("ly"):
        return False  # "now 25", "roughly 30": an amount, said of when or how nearly
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
    for marker, old_said, new_said, need in _said_changed(old, new):
        again = _compare(old_said, new_said)
        if not again.update:
            continue
        if need == "same" and again.reason != "same statement":
            continue
        if need == "value" and not again.one_value:
            continue
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
    one_value = True
    for i1, i2, j1, j2 in regions:
        ra, rb = a[i1:i2], b[j1:j2]
        words = _shown(ra), _shown(rb)
        changed.append(f"{words[0]} -> {words[1]}")
        names = any(t.cls == "code" for t in ra + rb)
        names |= any(_is_name_number(a, k) for k in range(i1, i2))
        names |= any(_is_name_number(b, k) for k in range(j1, j2))
        where, verb_a, verb_b = _position(a, b, clauses_a, clauses_b, i1, j1)
        if names and not (
            where == "value" and _holds_value(a, verb_a, i1) and _holds_value(b, verb_b, j1)
        ):
            # An identifier that names what the text is about ("Server web-01 has …"),
            # or a thing the verb relates its subject to ("includes PR #412"): another fact.
            return Verdict("distinct", f"identifier differs: {words[0]} -> {words[1]}")
        if where == "subject":
            return Verdict("distinct", f"subject differs: {words[0]} -> {words[1]}")
        if where != "value":
            return Verdict("unsure", where)
        shapes = {t.cls for t in ra + rb}
        if "number" in shapes and any(t.key in BOUNDS for t in ra + rb):
            return Verdict("unsure", f"the bound changed: {words[0]} -> {words[1]}")
        values_only &= shapes <= {"number", "code"}
        one_value &= (
            bool(ra)
            and bool(rb)
            and (
                shapes <= {"number", "code"}
                or (
                    _names_the_predicate(a, verb_a, i1, i2, clauses_a)
                    and _names_the_predicate(b, verb_b, j1, j2, clauses_b)
                )
            )
        )
    if len(regions) > 1 and not values_only:
        return Verdict("unsure", "changed in several places: " + "; ".join(changed))
    subject = _subject(a, a[min(regions[0][0], len(a) - 1)].clause)
    return Verdict(
        "update", "same subject, new value: " + "; ".join(changed), subject, one_value=one_value
    )


def _names_the_predicate(
    toks: list[Token],
    verb: _Verb | None,
    start: int,
    stop: int,
    clauses: dict[int, tuple[int, int]],
) -> bool:
    """Is ``toks[start:stop]`` a name that is the whole predicate of "be" with a definite subject?

    ``The cache backend is Redis``, ``The user's dentist is Maria Alvarez``:
    one thing named as the subject's value, which another name replaces. Not
    a property (``is slow``, lower case: properties can hold together), not a
    name inside a longer predicate (``Alice is Bob's manager``), and not one
    of many (``One of our customers is Initech``).
    """
    if verb is None or start >= stop:
        return False
    if toks[verb.index].cls != "sep" and toks[verb.index].key not in COPULAS:
        return False
    first, end = clauses[toks[start].clause]
    if stop != end or toks[first].key in INDEFINITE:
        return False
    # Between "is" and the change: determiners and the shared part of the name ("Dr.").
    if any(t.key not in DETERMINERS and not _capital(t) for t in toks[verb.index + 1 : start]):
        return False
    named = toks[start:stop]
    # Names, and a name among them: "Route 53" replaces "Cloudflare", "30" does not.
    return all(t.cls != "word" or _capital(t) for t in named) and any(
        t.cls != "number" for t in named
    )


def _capital(tok: Token) -> bool:
    return tok.cls == "word" and tok.text[:1].isupper()


def _holds_value(toks: list[Token], verb: _Verb | None, start: int) -> bool:
    """Does the region at ``toks[start]`` hold the value its clause gives the subject?

    It does after a form of "be" or a separator (``is 555-0134``, ``is at
    /etc/app.conf``, ``is hosted in us-east-1``) or a preposition right after
    the verb (``lives on host db-07``, ``listens on port 8080``), the kind of
    name between (``host``, ``port``) or not. A thing the verb relates its
    subject to is not a value: ``owns service billing-api``, ``includes PR
    #412``, ``is watching issue #880`` hold one of many.
    """
    if verb is None:
        return False
    head = toks[verb.index]
    copula = head.cls == "sep" or head.key in COPULAS
    linked = copula
    between = toks[verb.index + 1 : start]
    for k, tok in enumerate(between):
        if tok.key in PREPOSITIONS:
            linked = True
        elif tok.key in FUNCTION_WORDS:
            continue
        elif k == len(between) - 1 and tok.cls == "word" and tok.text.islower():
            continue  # the kind of name: "host db-07", "port 8080"
        elif k == 0 and copula and tok.cls == "word":
            if tok.key.endswith("ing"):
                linked = False  # "is watching issue #880": the verb is "watching"
            elif not _participle(tok):
                # "is flaky on host ci-03", "is available in": a property, which
                # may hold in many places; a passive ("is hosted in") names the place.
                return False
        else:
            return False
    return linked


def _participle(tok: Token) -> bool:
    return (tok.key.endswith("ed") and len(tok.key) > 3) or tok.key in IRREGULAR_PARTICIPLES


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
) -> tuple[str, _Verb | None, _Verb | None]:
    """``subject`` or ``value`` for a region starting at ``a[i1]``/``b[j1]``, else why
    not; with the main verbs of its clause in ``a`` and ``b``."""
    # A pure insertion at the end belongs to the last token's clause.
    clause = a[min(i1, len(a) - 1)].clause
    if b[min(j1, len(b) - 1)].clause != clause:
        return "changed across sentences", None, None
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
        return "no verb found", verb_a, verb_b
    before_a, before_b = verb_a.index <= i1, verb_b.index <= j1
    if before_a != before_b:
        return "the verb changed", verb_a, verb_b
    if not before_a:
        return "subject", verb_a, verb_b
    # The verb is in the shared prefix, or (an auxiliary) opens the region itself.
    shared = verb_a.index < i1 and verb_b.index < j1 and a[verb_a.index].key == b[verb_b.index].key
    if not shared and not (verb_a.strong and verb_b.strong):
        return "the verb changed", verb_a, verb_b
    if verb_a.past_event or verb_b.past_event:
        return "an event, not a state", verb_a, verb_b
    return "value", verb_a, verb_b


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


def _said_changed(old: str, new: str) -> list[tuple[str, str, str, str]]:
    """Rewrites of (old, new) that set aside how ``new`` says it changed: (marker,
    old text, new text, what the rewrite must then be: ``same`` statement, one
    ``value`` changed, or ``any`` update)."""
    out: list[tuple[str, str, str, str]] = []
    old_plain, new_plain = _tidy(_NOW.sub(" ", old)), _tidy(_NOW.sub(" ", new))
    if new_plain != _tidy(new):
        out.append(("said to hold now", old_plain, new_plain, "any"))
        linked = _LINKED.match(_expanded(new_plain).rstrip(".!"))
        rest = _after_subject(old_plain, linked["subject"]) if linked else None
        if linked is not None and rest is not None:
            verb, *words = rest.rstrip(".!").split()
            subject, value = linked["subject"], linked["value"]
            if words and verb.lower() not in AUXILIARIES:
                if (
                    words[0].lower() in PREPOSITIONS
                    and words[0].lower() == value.split()[0].lower()
                ):
                    # "… lives on host db-07" -> "… is now on host db-12": another
                    # verb, the same preposition before the value.
                    pair = f"{subject} is {' '.join(words)}.", f"{subject} is {value}."
                    out.append(("said to hold now", *pair, "any"))
                elif _measures(words) and _measures(value.split()):
                    # "The plan costs $20" -> "The plan is now $25": as sure only when
                    # what changed is a number or an identifier.
                    pair = f"{subject} is {_strip_lead(' '.join(words))}.", f"{subject} is {value}."
                    out.append(("said to hold now", *pair, "value"))
    if _NO_LONGER.search(new_plain) and not _NO_LONGER.search(old_plain):
        out.append(("no longer", old_plain, _tidy(_NO_LONGER.sub("", new_plain)), "same"))
    change = _CHANGE.match(_expanded(new_plain).rstrip(".!"))
    if change is not None:
        subject = change.group("subject")
        rest = _after_subject(old_plain, subject)
        if rest is not None and any(c.isalpha() for c in subject):
            value = _old_value(rest.rstrip(".!"))
            if value:
                out.append(
                    (
                        "said to change",
                        f"{subject} is {value}.",
                        f"{subject} is {_strip_lead(change.group('value'))}.",
                        "any",
                    )
                )
    return out


# "<subject> is <value>", once the time words are set aside.
_LINKED = re.compile(r"^(?P<subject>.+?)\s+(?:is|are|was|were|am)\s+(?P<value>.+)$", re.I)
_CONTRACTED = re.compile(r"\b(i|you|we|they)['’](m|re)\b", re.IGNORECASE)


def _measures(words: list[str]) -> bool:
    return any(_classify(w.strip(_LEADING + _TRAILING) or w) != "word" for w in words)


def _expanded(text: str) -> str:
    """``we're`` as ``we are``: so that the subject words of both texts line up."""
    return _CONTRACTED.sub(lambda m: f"{m[1]} {'am' if m[2].lower() == 'm' else 'are'}", text)


def _after_subject(old: str, subject: str) -> str | None:
    """``old`` after the words of ``subject`` (case, a leading article and contractions
    aside), or None when it does not start with them."""
    want = _bare(subject)
    words = _expanded(old).split()
    for n in range(1, len(words)):
        if _bare(" ".join(words[:n])) == want:
            return " ".join(words[n:])
    return None


def _bare(text: str) -> str:
    words = text.lower().split()
    if words and words[0] in ARTICLES:
        words = words[1:]
    return " ".join(words)


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
