"""How the LoCoMo benchmark puts a conversation into a vault, and how it credits hits.

Two recording ways, as issue 16's checks define them (one fresh vault per
conversation and way):

* ``memories``: each turn ``remember(text, kind="fact", fields=[("speaker",
  name)], created=session_date)``, all inside one ``vault.batch()``;
* ``session``: one ``vault.session()`` per dialog session, each turn
  ``record("user", text, event_id=dia_id, speaker=name, when=session_date)``,
  as a chat host records it. Turns are grouped into one commit per dialog
  session when the installed mdmem lets ``record`` run inside
  ``vault.batch()``; otherwise each turn is its own commit (about 180 ms a
  turn at the time of writing) and the result says so.

Consolidation (``extractive`` or ``llm``) runs over a conversation's session
entries before its questions are asked a second time. ``llm`` uses a scripted
model behind the real local OpenAI-protocol server
(:class:`mdmem.testing.ScriptedOpenAIServer`): its episodes and facts are built
deterministically from the turns it is shown, so a run is repeatable and
needs no network.

Crediting: a hit is worth the dialog turns it stands for. A turn's own entry
stands for itself. A consolidated fact or episode stands for the turns it was
derived from, found through the links the vault keeps: a hit's ``sources``
when recall provides them, else the fact's ``[episode:: ^id]`` field and the
episode note's ``sources`` frontmatter. Those links name the whole chunk an
episode summarised (up to ``consolidation.batch`` turns), so two creditings
are reported: ``links`` (every linked turn) and ``narrow`` (only the linked
turns the hit's text actually overlaps, see :func:`overlaps`), the honest one.
Bookkeeping (the daily-log line announcing a consolidation, an episode's
``## Sources`` list) stands for nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from locomo_data import Conversation, Turn

__all__ = [
    "CREDITS",
    "RECORD_WAYS",
    "Credit",
    "Ingested",
    "consolidate",
    "ingest",
    "overlaps",
    "scripted_llm",
    "session_slug",
]

RECORD_WAYS = ("memories", "session")
CREDITS = ("links", "narrow")
_LINK_ID = re.compile(r"\^(m-[A-Za-z0-9_-]+)")
_WORD = re.compile(r"[A-Za-z0-9']+")
_DATA = re.compile(r"<<<MDMEM_DATA ([^\n]*)\n(.*?)\nMDMEM_DATA>>>", re.DOTALL)
_ENTRY = re.compile(r"^\[\d\d:\d\d:\d\d\] \w+: (.*)$")
_SAID = re.compile(r'^(.+?) said, "(.*)"(?: and shared (.*))?$')
# Too common in chat to tell two turns apart.
# fmt: off
_STOP = frozenset((
    "about", "after", "again", "also", "been", "before", "being", "could", "didn't", "doing",
    "don't", "from", "going", "have", "just", "know", "like", "really", "said", "shared",
    "should", "that", "their", "them", "then", "there", "these", "they", "this", "those",
    "thing", "things", "think", "want", "were", "what", "when", "where", "which", "while",
    "will", "with", "would", "your", "yeah", "more", "much", "some", "very", "well", "good",
    "great", "love", "photo",
))
# fmt: on


@dataclass
class Ingested:
    """A conversation recorded into a vault: which memory holds which turn."""

    vault: Any
    way: str
    turn_ids: dict[str, str]  # dia id -> memory id
    texts: dict[str, str]  # dia id -> the text recorded
    commits: str  # "one per turn" / "one per dialog session" / "one"


def session_slug(sample_id: str, session: int) -> str:
    """A valid session id for dialog session ``session`` of a sample."""
    base = re.sub(r"[^A-Za-z0-9._-]+", "-", sample_id).strip("-._") or "conv"
    return f"{base[:100]}-s{session}"


def ingest(
    vault: Any,
    conv: Conversation,
    way: str,
    texts: Sequence[str],
    *,
    speaker: str = "field",
) -> Ingested:
    """Record every turn of ``conv`` into ``vault`` the ``way`` asked for."""
    if way == "memories":
        return _as_memories(vault, conv, texts, speaker)
    if way == "session":
        return _as_session(vault, conv, texts, speaker)
    raise ValueError(f"unknown record way {way!r}; one of {RECORD_WAYS}")


def _tag(name: str) -> str:
    tag = re.sub(r"[^\w-]+", "_", name.strip()).strip("_").lower()
    return tag if tag and not tag[0].isdigit() else f"_{tag}" if tag else ""


def _as_memories(vault: Any, conv: Conversation, texts: Sequence[str], speaker: str) -> Ingested:
    ids: dict[str, str] = {}
    with vault.batch(f"locomo {conv.sample_id}"):
        for turn, text in zip(conv.turns, texts, strict=True):
            tags = [_tag(turn.speaker)] if speaker == "tag" else []
            said_by = [("speaker", turn.speaker)] if speaker == "field" and turn.speaker else []
            m = vault.remember(
                text, kind="fact", tags=[t for t in tags if t], fields=said_by, created=turn.when
            )
            ids[turn.dia_id] = m.id
    by_dia = {t.dia_id: x for t, x in zip(conv.turns, texts, strict=True)}
    return Ingested(vault, "memories", ids, by_dia, "one")


def _sessions(conv: Conversation, texts: Sequence[str]) -> Iterator[list[tuple[Turn, str]]]:
    group: list[tuple[Turn, str]] = []
    for turn, text in zip(conv.turns, texts, strict=True):
        if group and group[-1][0].session != turn.session:
            yield group
            group = []
        group.append((turn, text))
    if group:
        yield group


def _as_session(vault: Any, conv: Conversation, texts: Sequence[str], speaker: str) -> Ingested:
    from mdmem.errors import InvalidInputError

    ids: dict[str, str] = {}
    grouped = True
    for turns in _sessions(conv, texts):
        session = vault.session(session_slug(conv.sample_id, turns[0][0].session), source="locomo")

        def record(turn: Turn, text: str, session: Any = session) -> None:
            # The session API has no tags: "tag" records no speaker, like "none".
            who = turn.speaker if speaker == "field" and turn.speaker else None
            m = session.record("user", text, event_id=turn.dia_id, speaker=who, when=turn.when)
            ids[turn.dia_id] = m.id

        if grouped:
            try:
                # One commit per dialog session, where the public API allows it.
                with vault.batch(f"locomo {conv.sample_id} session {turns[0][0].session}"):
                    for turn, text in turns:
                        record(turn, text)
                continue
            except InvalidInputError as exc:
                if "inside vault.batch()" not in str(exc) or ids:
                    raise
                grouped = False
        for turn, text in turns:
            record(turn, text)
    by_dia = {t.dia_id: x for t, x in zip(conv.turns, texts, strict=True)}
    commits = "one per dialog session" if grouped else "one per turn"
    return Ingested(vault, "session", ids, by_dia, commits)


# --------------------------------------------------------------- crediting ----


def words(text: str) -> set[str]:
    """Content words: lower case, 4+ letters, not chat filler."""
    return {w for w in (x.lower().strip("'") for x in _WORD.findall(text)) if len(w) >= 4} - _STOP


def overlaps(derived: str, turn: str) -> bool:
    """Whether ``derived`` text restates ``turn``: at least two shared content
    words, covering half of the shorter side's content words."""
    a, b = words(derived), words(turn)
    if not a or not b:
        return False
    shared = len(a & b)
    return shared >= 2 and shared >= 0.5 * min(len(a), len(b))


@dataclass
class Credit:
    """Maps recall hits of one vault to the dialog turns they stand for."""

    vault: Any
    ingested: Ingested
    _turn_of: dict[str, str] = field(default_factory=dict)
    _cache: dict[tuple[str, str], frozenset[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._turn_of = {}
        for dia, mid in self.ingested.turn_ids.items():
            # remember() dedupes identical text into one memory: it stands for each.
            self._turn_of.setdefault(mid, "")
            self._turn_of[mid] = f"{self._turn_of[mid]} {dia}".strip()

    def turns_of_memory(self, memory_id: str) -> frozenset[str]:
        return frozenset(self._turn_of.get(memory_id, "").split())

    def of(self, hit: Any, how: str = "narrow") -> frozenset[str]:
        """The dia ids ``hit`` is credited with under crediting ``how``."""
        own = self.turns_of_memory(hit.id)
        if own:
            return own
        key = (hit.id, how)
        if key not in self._cache:
            self._cache[key] = self._derived(hit, how)
        return self._cache[key]

    def _derived(self, hit: Any, how: str) -> frozenset[str]:
        linked = self._linked(hit)
        if how == "links" or not linked:
            return frozenset(linked)
        text = hit.text
        return frozenset(d for d in linked if overlaps(text, self.ingested.texts.get(d, "")))

    def _linked(self, hit: Any) -> set[str]:
        out: set[str] = set()
        # Recall's own provenance when it has it (a hit's sources).
        for source in getattr(hit, "sources", None) or ():
            out |= self.turns_of_memory(_plain_id(str(source)))
        if out:
            return out
        episode_path = self._episode_path(hit)
        if episode_path is None:
            return out
        for link in self._frontmatter(episode_path).get("sources") or []:
            m = _LINK_ID.search(str(link))
            if m:
                out |= self.turns_of_memory(m.group(1))
        return out

    def _episode_path(self, hit: Any) -> str | None:
        if self._frontmatter(hit.path).get("kind") == "episode":
            # The episode's own summary (or a section of its note). Its
            # "## Sources" list is bookkeeping, not knowledge.
            return None if hit.heading.strip().lower() == "sources" else hit.path
        try:
            block = self.vault.block(hit.id)
        except Exception:  # a heading section or a line that moved: no provenance
            return None
        ref = block.field("episode") if hasattr(block, "field") else None
        m = _LINK_ID.search(str(ref or ""))
        if not m:
            return None
        try:
            return str(self.vault.block(m.group(1)).path)
        except Exception:
            return None

    def _frontmatter(self, path: str) -> dict[str, Any]:
        state = self.vault.admin.store.catalog.files.get(path)
        meta = getattr(getattr(state, "parsed", None), "frontmatter", None)
        return meta if isinstance(meta, dict) else {}


def _plain_id(ref: str) -> str:
    m = _LINK_ID.search(ref)
    return m.group(1) if m else ref.lstrip("^")


# ------------------------------------------------------------ consolidation ----


def _blocks(body: dict[str, Any]) -> dict[str, str]:
    text = "\n".join(str(m.get("content") or "") for m in body["messages"] if m["role"] != "system")
    return dict(_DATA.findall(text))


def _system(body: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content") or "") for m in body["messages"] if m["role"] == "system")


def _first_sentences(text: str, limit: int = 220) -> str:
    out = ""
    for sentence in re.split(r"(?<=[.!?])\s+", text.strip()):
        if out and len(out) + len(sentence) > limit:
            break
        out = f"{out} {sentence}".strip()
    return out[:limit].rstrip()


def scripted_consolidation(blocks: dict[str, str]) -> dict[str, Any]:
    """A deterministic consolidator: one fact per substantial statement turn.

    ``Ann said, "We adopted a puppy named Biscuit last week."`` becomes the
    fact ``Ann: We adopted a puppy named Biscuit last week.``; questions and
    short replies make no fact. Known facts are restated, as a faithful
    model does (the drop-ratio check expects it).
    """
    facts: list[str] = [
        x[2:] for x in blocks.get("known facts", "").splitlines() if x.startswith("- ")
    ]
    people: list[str] = []
    gist: list[str] = []
    for line in blocks.get("entries", "").splitlines():
        m = _ENTRY.match(line)
        if not m:
            continue
        said = _SAID.match(m.group(1))
        who, what = (said.group(1), said.group(2)) if said else ("Someone", m.group(1))
        if who not in people:
            people.append(who)
        statement = " ".join(s for s in re.split(r"(?<=[.!?])\s+", what) if not s.endswith("?"))
        if len(words(statement)) >= 3:
            fact = f"{who}: {_first_sentences(statement)}"
            facts.append(fact)
            if len(gist) < 3:
                gist.append(fact)
    summary = (
        f"{' and '.join(people[:3]) or 'The speakers'} talked. " + " ".join(gist)
        if gist
        else f"{' and '.join(people[:3]) or 'The speakers'} exchanged short messages."
    )
    return {
        "summary": summary[:900],
        "facts": list(dict.fromkeys(facts)),
        "pending": [],
        "preferences": [],
        "tone": "friendly",
        "confidence": 0.8,
    }


def scripted_responder(body: dict[str, Any]) -> Any:
    """Answers mdmem's prompts for the benchmark's scripted model."""
    from mdmem.testing import Reply

    system = _system(body)
    if "memory consolidator" in system:
        reply: dict[str, Any] = scripted_consolidation(_blocks(body))
    elif "contradiction judge" in system:
        reply = {"contradicted": []}  # turns of a chat do not retire each other
    else:
        reply = {"answer": "", "citations": [], "facts": [], "preferences": []}
    return Reply(content=json.dumps(reply))


@contextmanager
def scripted_llm(mode: str) -> Iterator[dict[str, Any]]:
    """``[llm]`` settings for ``Vault.init`` in consolidation ``mode`` ({} for none/extractive)."""
    if mode != "llm":
        yield {}
        return
    from mdmem.testing import ScriptedOpenAIServer

    with ScriptedOpenAIServer(responder=scripted_responder) as srv:
        yield {"base_url": srv.base_url, "model": "scripted-bench", "timeout": 30.0}


def consolidate(vault: Any, mode: str) -> dict[str, Any]:
    """Consolidate every pending session entry; what it did, as plain numbers."""
    import time

    start = time.perf_counter()
    # The bench vault has an [llm] only in "llm" mode; without one,
    # consolidate() drafts extractively. force: a draft is never held back
    # by the drop-ratio check, so every turn is consolidated in both modes.
    result = vault.consolidate(force=True)
    return {
        "seconds": time.perf_counter() - start,
        "entries": result.consolidated,
        "episodes": len(result.episodes),
        "facts": sum(len(e.facts) for e in result.episodes),
        "rejected": len(result.rejected),
        "llm_requests": result.llm_requests,
    }
