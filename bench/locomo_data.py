"""LoCoMo-format data for the retrieval benchmark: loading, evidence repair, metrics.

Pure functions only (no vault, no index), so ``tests/test_locomo_data.py`` can
check them on small synthetic dicts. The format (Maharana et al. 2024,
"Evaluating Very Long-Term Conversational Memory of LLM Agents"): a sample is
``{"sample_id", "conversation": {"speaker_a", "speaker_b", "session_N": [turn],
"session_N_date_time": "1:56 pm on 8 May, 2023"}, "qa": [{"question",
"answer", "evidence": ["D1:3"], "category": 1-5}]}``; a turn is ``{"speaker",
"dia_id": "D<session>:<n>", "text"}`` plus optional ``blip_caption`` for a
shared image. A file holds a list of samples or a single one.

Categories as the LoCoMo code numbers them: 1 multi-hop, 2 temporal,
3 open-domain (commonsense/world knowledge), 4 single-hop, 5 adversarial
(unanswerable). Metrics follow the paper's retrieval evaluation: recall@k is
the *fraction* of evidence turns among the top k.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = [
    "CATEGORY_NAMES",
    "HEADLINE_CATEGORIES",
    "QUESTION_WORDS",
    "Conversation",
    "EvidenceFix",
    "Question",
    "Turn",
    "all_at_k",
    "conversations_from",
    "copies_at_k",
    "covered_recall_at_k",
    "covered_reciprocal_rank",
    "load",
    "mean",
    "memory_text",
    "normalise_evidence",
    "parse_session_datetime",
    "recall_at_k",
    "reciprocal_rank",
    "rewrite_query",
]

CATEGORY_NAMES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
# The headline excludes 3 (answers need world knowledge, evidence is often
# loose) and 5 (questions about things that never happened).
HEADLINE_CATEGORIES: tuple[int, ...] = (1, 2, 4)

_SESSION_KEY = re.compile(r"^session_(\d+)$")
_SESSION_DATE = re.compile(
    r"^\s*(\d{1,2}):(\d{2})\s*([ap])\.?m\.?\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})\s*$",
    re.IGNORECASE,
)
# REALTALK's sessions: "29.12.2023, 22:42:04" (day first, 24-hour clock).
_SESSION_DATE_DOTTED = re.compile(
    r"^\s*(\d{1,2})\.(\d{1,2})\.(\d{4}),?\s+(\d{1,2}):(\d{2})(?::(\d{2}))?\s*$"
)
_MONTHS = {
    name: i
    for i, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
# A dialog id as annotators wrote it: "D1:3", and the slips seen in the
# released file: "D:11:26", "D30:05", " D9:17".
_EVIDENCE_ID = re.compile(r"^D\s*:?\s*(\d+)\s*:\s*(\d+)$", re.IGNORECASE)
_EVIDENCE_SPLIT = re.compile(r"[;,\s]+(?=D)", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_QUERY_WORD = re.compile(r"[\w'’-]+")


@dataclass(frozen=True)
class Turn:
    """One dialog turn; ``when`` is its session's date-time (UTC-naive as written)."""

    dia_id: str
    speaker: str
    text: str
    session: int
    when: datetime | None
    caption: str | None = None


@dataclass(frozen=True)
class Question:
    question: str
    answer: str
    category: int
    evidence: tuple[str, ...]  # normalised, existing dia ids (maybe empty)
    raw_evidence: tuple[str, ...]


@dataclass(frozen=True)
class EvidenceFix:
    """Result of :func:`normalise_evidence` for one question."""

    ids: tuple[str, ...]
    fixed: int  # raw entries that had to be rewritten or split to be read
    dropped: int  # ids unreadable or absent from the conversation


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    speaker_a: str
    speaker_b: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]
    evidence_fixed: int = 0
    evidence_dropped: int = 0

    def turn(self, dia_id: str) -> Turn:
        for t in self.turns:
            if t.dia_id == dia_id:
                return t
        raise KeyError(dia_id)


def parse_session_datetime(value: str | None) -> datetime | None:
    """``"1:56 pm on 8 May, 2023"`` -> ``datetime(2023, 5, 8, 13, 56, tzinfo=UTC)``;
    REALTALK's ``"29.12.2023, 22:42:04"`` (day first) too.

    The conversations carry no time zone; UTC keeps the date as written.
    Returns None for anything unreadable rather than guessing.
    """
    if not value:
        return None
    dotted = _SESSION_DATE_DOTTED.match(value)
    if dotted:
        d, mo, y, h24, mi, se = (int(x or 0) for x in dotted.groups())
        try:
            return datetime(y, mo, d, h24, mi, se, tzinfo=UTC)
        except ValueError:
            return None
    m = _SESSION_DATE.match(value)
    if not m:
        return None
    hour, minute, half, day, month_name, year = m.groups()
    month = _MONTHS.get(month_name.lower())
    h = int(hour)
    if month is None or not 1 <= h <= 12:
        return None
    h = h % 12 + (12 if half.lower() == "p" else 0)
    try:
        return datetime(int(year), month, int(day), h, int(minute), tzinfo=UTC)
    except ValueError:
        return None


def normalise_evidence(raw: Iterable[Any], known: Collection[str]) -> EvidenceFix:
    """Read annotators' evidence ids, repairing the known slips.

    ``"D8:6; D9:17"`` is two ids, ``"D:11:26"`` is ``D11:26``, ``"D30:05"`` is
    ``D30:5``. Ids that cannot be read, or that name no turn in ``known``, are
    dropped (and counted) so a metric never divides by evidence nobody can
    retrieve. Order is kept, duplicates removed.
    """
    ids: list[str] = []
    fixed = dropped = 0
    for entry in raw:
        text = str(entry)
        parts = [p.strip() for p in _EVIDENCE_SPLIT.split(text.strip()) if p.strip()]
        rewritten = len(parts) > 1
        for part in parts or [text]:
            m = _EVIDENCE_ID.match(part)
            if not m:
                dropped += 1
                continue
            dia_id = f"D{int(m.group(1))}:{int(m.group(2))}"
            rewritten = rewritten or dia_id != part
            if dia_id not in known:
                dropped += 1
                continue
            if dia_id not in ids:
                ids.append(dia_id)
        if rewritten:
            fixed += 1
    return EvidenceFix(ids=tuple(ids), fixed=fixed, dropped=dropped)


def _turns(conv: Mapping[str, Any]) -> list[Turn]:
    sessions = sorted(int(m.group(1)) for key in conv if (m := _SESSION_KEY.match(key)) is not None)
    out: list[Turn] = []
    for n in sessions:
        when = parse_session_datetime(conv.get(f"session_{n}_date_time"))
        for raw in conv.get(f"session_{n}") or []:
            caption = raw.get("blip_caption")
            out.append(
                Turn(
                    dia_id=str(raw["dia_id"]).strip(),
                    speaker=str(raw.get("speaker", "")).strip(),
                    text=str(raw.get("text", "")),
                    session=n,
                    when=when,
                    caption=str(caption).strip() if caption else None,
                )
            )
    return out


def _conversation(sample: Mapping[str, Any], index: int) -> Conversation:
    conv = sample.get("conversation")
    if not isinstance(conv, Mapping):
        raise ValueError(f"sample {index}: no 'conversation' object")
    turns = _turns(conv)
    known = {t.dia_id for t in turns}
    questions: list[Question] = []
    fixed = dropped = 0
    for qa in sample.get("qa") or []:
        fix = normalise_evidence(qa.get("evidence") or [], known)
        fixed += fix.fixed
        dropped += fix.dropped
        answer = qa.get("answer", qa.get("adversarial_answer", ""))
        questions.append(
            Question(
                question=str(qa["question"]),
                answer=str(answer),
                category=int(qa["category"]),
                evidence=fix.ids,
                raw_evidence=tuple(str(e) for e in qa.get("evidence") or []),
            )
        )
    return Conversation(
        sample_id=str(sample.get("sample_id", f"conv-{index}")),
        speaker_a=str(conv.get("speaker_a", "")),
        speaker_b=str(conv.get("speaker_b", "")),
        turns=tuple(turns),
        questions=tuple(questions),
        evidence_fixed=fixed,
        evidence_dropped=dropped,
    )


def conversations_from(data: Any) -> list[Conversation]:
    """Conversations from parsed JSON: a list of samples or a single sample."""
    samples = [data] if isinstance(data, Mapping) else data
    if not isinstance(samples, list):
        raise ValueError("LoCoMo data must be a sample object or a list of them")
    return [_conversation(s, i) for i, s in enumerate(samples)]


def load(path: str | Path) -> list[Conversation]:
    with open(path, encoding="utf-8") as fh:
        return conversations_from(json.load(fh))


def memory_text(turn: Turn, style: str = "said", previous: Turn | None = None) -> str:
    """The memory stored for one turn.

    ``said`` (the benchmark's default): ``Caroline said, "…" and shared a
    photo of …``, so the speaker's name is in the text both retrievers see.
    ``plain``: the utterance alone (plus caption), the ablation without names.
    ``dated``: ``said`` prefixed with the session date, ``[8 May 2023]``.
    ``reply``: ``said`` plus the question(s) of ``previous`` when it is the
    turn just before in the same session and asks something, so an answer
    like "3 years now!" carries what it answers (``(replying to Nate: "How
    long have you had them?")``).
    """
    text = " ".join(turn.text.split())
    if style == "plain":
        body = text
        if turn.caption:
            body += f" [shared {turn.caption}]"
        return body
    body = f'{turn.speaker} said, "{text}"'
    if turn.caption:
        body += f" and shared {turn.caption}."
    if style == "said":
        return body
    if style == "dated":
        if turn.when is None:
            return body
        return f"[{turn.when.day} {turn.when:%B %Y}] {body}"
    if style == "reply":
        if previous is None or previous.session != turn.session:
            return body
        asked = [s for s in _SENTENCE.split(" ".join(previous.text.split())) if s.endswith("?")]
        if not asked:
            return body
        return f'{body} (replying to {previous.speaker}: "{" ".join(asked)}")'
    raise ValueError(f"unknown memory text style {style!r}")


# Words that shape a question but name nothing a memory would contain.
# Whoosh's stop list already drops "is", "are", "can", "the"...
# fmt: off
QUESTION_WORDS = frozenset((
    "what", "when", "where", "who", "whom", "whose", "which", "why", "how",
    "did", "does", "do", "was", "were", "has", "have", "had",
    "kind", "type", "many", "much", "long", "would", "could", "should",
))
# fmt: on


def rewrite_query(question: str, style: str = "raw", names: Collection[str] = ()) -> str:
    """The query an agent would send to memory for ``question``.

    ``raw``: the question as asked. ``keywords``: without question words
    (``When did Melanie paint a sunrise?`` -> ``Melanie paint a sunrise``).
    ``keywords-nonames``: also without ``names`` (the conversation's
    participants, who are in every memory). Falls back to the question when
    nothing would be left.
    """
    if style == "raw":
        return question
    if style not in ("keywords", "keywords-nonames"):
        raise ValueError(f"unknown query style {style!r}")
    drop = set(QUESTION_WORDS)
    if style == "keywords-nonames":
        drop |= {n.casefold() for n in names}
    words = _QUERY_WORD.findall(question)
    kept = [w for w in words if _possessive(w).casefold() not in drop]
    return " ".join(kept) if kept else question


def _possessive(word: str) -> str:
    return word[:-2] if word.casefold().endswith(("'s", "’s")) else word


def recall_at_k(ranked: Sequence[str], evidence: Collection[str], k: int) -> float:
    """Fraction of ``evidence`` found in ``ranked[:k]`` (LoCoMo's recall@k)."""
    if not evidence:
        raise ValueError("recall is undefined without evidence")
    top = set(ranked[:k])
    return sum(1 for e in set(evidence) if e in top) / len(set(evidence))


def all_at_k(ranked: Sequence[str], evidence: Collection[str], k: int) -> float:
    """1.0 when every evidence item is in ``ranked[:k]``, else 0.0."""
    return 1.0 if recall_at_k(ranked, evidence, k) == 1.0 else 0.0


def reciprocal_rank(ranked: Sequence[str], evidence: Collection[str], k: int = 25) -> float:
    """1 / rank of the first evidence item within the top ``k``; 0 if none."""
    wanted = set(evidence)
    for rank, key in enumerate(ranked[:k], start=1):
        if key in wanted:
            return 1.0 / rank
    return 0.0


def covered_recall_at_k(
    ranked: Sequence[Collection[str]], evidence: Collection[str], k: int
) -> float:
    """Fraction of ``evidence`` covered by the top ``k`` hits, each hit standing
    for a set of items (a turn for itself, a consolidated fact for its sources)."""
    if not evidence:
        raise ValueError("recall is undefined without evidence")
    top: set[str] = set()
    for items in ranked[:k]:
        top |= set(items)
    wanted = set(evidence)
    return len(wanted & top) / len(wanted)


def covered_reciprocal_rank(
    ranked: Sequence[Collection[str]], evidence: Collection[str], k: int = 25
) -> float:
    """1 / rank of the first hit standing for an evidence item within the top ``k``."""
    wanted = set(evidence)
    for rank, items in enumerate(ranked[:k], start=1):
        if wanted & set(items):
            return 1.0 / rank
    return 0.0


def copies_at_k(ranked: Sequence[Collection[str]], k: int = 5) -> int:
    """Hits in the top ``k`` that add nothing: every item they stand for was
    already covered by a better-placed hit (a copy of one piece of knowledge).
    Hits standing for nothing are not copies (they are misses)."""
    seen: set[str] = set()
    copies = 0
    for items in ranked[:k]:
        here = set(items)
        if here and here <= seen:
            copies += 1
        seen |= here
    return copies


def mean(values: Iterable[float]) -> float:
    items = list(values)
    return sum(items) / len(items) if items else float("nan")
