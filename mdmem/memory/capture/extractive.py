"""Text heuristics that work without a language model.

Pure functions, used where no LLM is configured and as the LLM's safety net:

* :func:`summarize` picks the most central sentences of a batch (TF-IDF
  vectors, degree centrality as in LexRank) for an extractive episode;
* :func:`explicit_facts` finds the few statements a user makes *about
  themselves or on purpose* ("remember that…", "I prefer…", "my X is…"),
  conservatively: a missed fact costs less than a stored misunderstanding;
* :func:`covered` tells whether a fact survives, in any wording, in a text:
  the consolidation safety check counts facts an LLM output dropped with it.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "ExplicitFact",
    "content_words",
    "covered",
    "explicit_facts",
    "keywords",
    "sentences",
    "slugify",
    "summarize",
    "title",
]

_STOP = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just let me more most my myself no nor not now of off on once only or other our
    ours ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    ok okay yes yeah sure thanks thank please hi hello hey also really like get got one user
    assistant tool remember note noted s t don didn doesn isn wasn won can't i'm it's
    that's""".split()  # noqa: SIM905
)
_WORD = re.compile(r"[a-z0-9][a-z0-9'_-]*")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])")
_MD_NOISE = re.compile(r"`{3,}.*?(?:`{3,}|$)|[*_`>#|]+", re.DOTALL)


def _stem(word: str) -> str:
    """A crude suffix stripper: enough for 'deploys'/'deployed'/'deploy' to meet."""
    for suffix in ("ing", "edly", "ed", "ies", "es", "s", "ly"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


def content_words(text: str) -> list[str]:
    """Lower-cased, stemmed words without stop words, in order."""
    return [_stem(w.strip("'-_")) for w in _WORD.findall(text.lower()) if w not in _STOP]


def sentences(text: str, *, max_chars: int = 400) -> list[str]:
    """Split text into sentences (and lines); long ones are cut at ``max_chars``."""
    out: list[str] = []
    for line in _MD_NOISE.sub(" ", text).splitlines():
        line = " ".join(line.split()).strip(" -")
        if not line:
            continue
        for part in _SENTENCE_END.split(line):
            part = part.strip()
            if not part:
                continue
            if len(part) > max_chars:
                part = part[: max_chars - 1].rstrip() + "…"
            out.append(part)
    return out


@dataclass(frozen=True)
class _Sentence:
    text: str
    order: int
    weight: float  # prior: user words weigh more than tool dumps


def summarize(
    items: Sequence[tuple[str, str]], *, max_sentences: int = 3, max_chars: int = 700
) -> str:
    """The most central sentences of ``items`` ((role, text) pairs), in their original order.

    Each sentence is a TF-IDF vector over the batch; its score is the sum of
    its cosine similarity to every other sentence (degree centrality), times
    a small prior by role, plus a bonus for carrying many distinct terms.
    Sentences that repeat an already chosen one (cosine > 0.8) are skipped.
    """
    pool: list[_Sentence] = []
    for role, text in items:
        prior = {"user": 1.2, "assistant": 1.0}.get(role, 0.6)
        for sent in sentences(text):
            if len(content_words(sent)) >= 2:
                pool.append(_Sentence(sent, len(pool), prior))
    if not pool:
        return ""
    vectors = _tfidf([content_words(s.text) for s in pool])
    scores: list[float] = []
    for i, vec in enumerate(vectors):
        centrality = sum(_cosine(vec, other) for j, other in enumerate(vectors) if j != i)
        richness = math.log1p(len(vec))
        scores.append((centrality + 0.25 * richness) * pool[i].weight)
    ranked = sorted(range(len(pool)), key=lambda i: (-scores[i], i))
    chosen: list[int] = []
    used = 0
    for i in ranked:
        if len(chosen) >= max_sentences:
            break
        if any(_cosine(vectors[i], vectors[j]) > 0.8 for j in chosen):
            continue
        length = len(pool[i].text) + 1
        if chosen and used + length > max_chars:
            continue
        chosen.append(i)
        used += length
    # A turn is often a sentence without its full stop: joined as it is, two
    # turns would read as one sentence ("my pin is 4417 I prefer tea").
    return " ".join(_closed(pool[i].text) for i in sorted(chosen))


def _closed(sentence: str) -> str:
    return sentence if sentence.endswith((".", "!", "?", "…", ":", ";")) else sentence + "."


def keywords(texts: Iterable[str], n: int = 4) -> list[str]:
    """The ``n`` most characteristic words of ``texts`` (frequency × length)."""
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(w for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 2)
    ranked = sorted(counts, key=lambda w: (-counts[w] * math.log(len(w) + 1), w))
    return [w for w in ranked if not w.isdigit()][:n]


_CLAUSE = re.compile(r"\s*(?:[,;:()]|\s[-–—]\s)\s*")
_TRAILING = re.compile(r"[\s.,;:!?…\-–—]+$")


def title(text: str, *, max_chars: int = 60) -> str:
    """A readable title for ``text``: its most central sentence, shortened to
    its first clause and then to whole words within ``max_chars``.

    A phrase the conversation itself said reads better in a note list than
    the top keywords strung together ("Bullet lisbon points team quarterly").
    "" when ``text`` has no sentence with two content words.
    """
    central = summarize([("user", text)], max_sentences=1, max_chars=10_000)
    if not central:
        return ""
    phrase = central.strip().lstrip("-*+> ").strip()
    first = _CLAUSE.split(phrase, maxsplit=1)[0]
    if len(content_words(first)) >= 2:
        phrase = first
    if len(phrase) > max_chars:
        cut = phrase[: max_chars + 1].rsplit(" ", 1)[0]
        phrase = cut if len(cut) >= max_chars // 2 else phrase[:max_chars]
    phrase = _TRAILING.sub("", phrase).strip("\"'“”‘’ ")
    return phrase[:1].upper() + phrase[1:]


def slugify(text: str, *, max_words: int = 6, max_chars: int = 48) -> str:
    """``"Deploy schedule: Thursday!"`` -> ``"deploy-schedule-thursday"``."""
    words = re.findall(r"[a-z0-9]+", text.lower())[:max_words]
    slug = "-".join(words)[:max_chars].strip("-")
    return slug or "episode"


def _tfidf(docs: list[list[str]]) -> list[dict[str, float]]:
    df: Counter[str] = Counter()
    for doc in docs:
        df.update(set(doc))
    n = len(docs)
    out = []
    for doc in docs:
        tf = Counter(doc)
        vec = {w: (c / len(doc)) * math.log(1 + n / df[w]) for w, c in tf.items()} if doc else {}
        norm = math.sqrt(sum(v * v for v in vec.values())) or 1.0
        out.append({w: v / norm for w, v in vec.items()})
    return out


def _cosine(a: dict[str, float], b: dict[str, float]) -> float:
    if len(a) > len(b):
        a, b = b, a
    return sum(v * b.get(w, 0.0) for w, v in a.items())


# -- explicit facts -------------------------------------------------------------


@dataclass(frozen=True)
class ExplicitFact:
    text: str
    kind: str  # "fact" | "preference"
    source: int = 0  # which message (index into the messages given) said it
    speaker: str | None = None  # who said it (None: the user)


_VERBS = {
    "prefer": "prefers",
    "like": "likes",
    "love": "loves",
    "hate": "hates",
    "dislike": "dislikes",
    "use": "uses",
    "want": "wants",
    "need": "needs",
}
_REMEMBER = re.compile(
    r"^(?:please\s+)?(?:remember|note|keep in mind|don't forget)(?:\s+that)?[,:]?\s+(.{6,300})$",
    re.IGNORECASE,
)
_I_VERB = re.compile(
    r"^i\s+(?:really\s+|always\s+|usually\s+)?(prefer|like|love|hate|dislike|use|want|need)\s+(.{3,200})$",
    re.IGNORECASE,
)
_MY_IS = re.compile(
    r"^my\s+((?:[a-z][\w-]*\s+){0,3}[a-z][\w-]*)\s+(is|are)\s+(.{2,200})$", re.IGNORECASE
)
_I_PLACE = re.compile(r"^i\s+(live|work|am based)\s+(in|at|for)\s+(.{2,200})$", re.IGNORECASE)
_TRANSIENT = re.compile(
    r"\b(today|tonight|right now|now|at the moment|this (morning|evening))\b", re.IGNORECASE
)


# What people put before a statement without changing it ("Also, my manager is Joao").
_LEAD_IN = re.compile(
    r"^(?:(?:also|and|oh|ah|btw|by the way|fyi|for the record|just so you know|ok|okay|so|"
    r"well|actually|anyway|plus|but|hey|hi|hello)\b[,!:.]?\s+)+",
    re.IGNORECASE,
)
# Two statements in one sentence: "My name is Bob and I live in Porto".
_CLAUSES = re.compile(r"\s*(?:;|,?\s+and\s+(?=(?:i|my)\b))\s*", re.IGNORECASE)


def explicit_facts(
    messages: Iterable[tuple[str, str]], *, speakers: Sequence[str | None] | None = None
) -> list[ExplicitFact]:
    """Durable statements people make explicitly, rewritten in the third person.

    Only ``user`` messages are read; questions, transient statements ("I want
    coffee now") and anything hedged are skipped. ``speakers[i]`` names who
    said message ``i`` (a group chat's member): their statements read "Ana
    prefers tea." instead of "The user prefers tea.". Each fact says which
    message it came from (``source``) and who said it. Deliberately narrow:
    it is the offline fallback of consolidation and memory flush, and the
    yardstick of the consolidation safety check.
    """
    out: list[ExplicitFact] = []
    seen: set[str] = set()
    for index, (role, text) in enumerate(messages):
        if role != "user":
            continue
        speaker = speakers[index] if speakers is not None and index < len(speakers) else None
        for sent in sentences(text):
            sent = sent.strip().rstrip(".!").strip()
            if not sent or sent.endswith("?") or _TRANSIENT.search(sent):
                continue
            for clause in _CLAUSES.split(_LEAD_IN.sub("", sent)):
                fact = _rewrite(clause.strip().rstrip(".!,").strip(), speaker)
                if fact is None:
                    continue
                key = " ".join(content_words(fact.text))
                if key and key not in seen:
                    seen.add(key)
                    out.append(ExplicitFact(fact.text, fact.kind, index, speaker))
    return out


def _rewrite(sent: str, speaker: str | None = None) -> ExplicitFact | None:
    who = speaker or "The user"
    match = _REMEMBER.match(sent)
    if match:
        body = _first_person(match.group(1).strip().rstrip("."), speaker)
        return ExplicitFact(_sentence_case(_third_person(body)), "fact")
    match = _I_VERB.match(sent)
    if match:
        verb = _VERBS[match.group(1).lower()]
        liking = ("prefers", "likes", "loves", "hates", "dislikes")
        kind = "preference" if verb in liking else "fact"
        if verb in ("wants", "needs"):
            return None  # mostly requests of the moment, not durable facts
        return ExplicitFact(f"{who} {verb} {_third_person(match.group(2))}.", kind)
    match = _MY_IS.match(sent)
    if match:
        return ExplicitFact(
            f"{who}'s {match.group(1).lower()} {match.group(2).lower()} "
            f"{_third_person(match.group(3))}.",
            "fact",
        )
    match = _I_PLACE.match(sent)
    if match:
        verb = {"live": "lives", "work": "works", "am based": "is based"}[match.group(1).lower()]
        return ExplicitFact(
            f"{who} {verb} {match.group(2).lower()} {_third_person(match.group(3))}.", "fact"
        )
    return None


_MODALS = frozenset(("can", "could", "will", "would", "shall", "should", "may", "might", "must"))


def _first_person(text: str, speaker: str | None = None) -> str:
    """``I am vegetarian`` -> ``the user is vegetarian``; ``my car`` -> ``the user's car``
    (``Ana is vegetarian``, ``Ana's car`` when Ana said it)."""
    who = speaker or "the user"
    lowered = text.lower()
    for said, meant in (("i am ", "is "), ("i'm ", "is "), ("i have ", "has ")):
        if lowered.startswith(said):
            return f"{who} {meant}{text[len(said) :]}"
    if lowered.startswith("my "):
        return f"{who}'s {text[3:]}"
    match = re.match(r"^i\s+(\w+)\b(.*)$", text, re.IGNORECASE | re.DOTALL)
    if match is None:
        return text
    verb, rest = match.group(1).lower(), match.group(2)
    if verb in _MODALS or verb in ("was", "did"):
        return f"{who} {verb}{rest}"
    return f"{who} {_VERBS.get(verb) or _conjugate(verb)}{rest}"


def _conjugate(verb: str) -> str:
    if verb in ("do", "go"):
        return verb + "es"
    if verb.endswith(("s", "sh", "ch", "x", "z")):
        return verb + "es"
    if verb.endswith("y") and len(verb) > 1 and verb[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def _third_person(text: str) -> str:
    text = text.strip().rstrip(".")
    text = re.sub(r"\bmy\b", "their", text, flags=re.IGNORECASE)
    text = re.sub(r"\bme\b", "them", text, flags=re.IGNORECASE)
    return re.sub(r"\bI\b", "they", text)


def _sentence_case(text: str) -> str:
    text = text.strip()
    if not text:
        return text
    text = text[0].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."


# -- coverage -------------------------------------------------------------------


def covered(fact: str, text: str, *, min_share: float = 0.6) -> bool:
    """True when most of ``fact``'s content words occur in ``text``.

    Robust to rewording that keeps the key terms ("prefers metric units" is
    covered by "The user likes metric units"), and strict enough that an empty
    or unrelated output covers nothing.
    """
    words = set(content_words(fact))
    if not words:
        return True
    present = set(content_words(text))
    return len(words & present) / len(words) >= min_share
