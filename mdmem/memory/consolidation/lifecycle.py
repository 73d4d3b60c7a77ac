"""The memory lifecycle: auto-resolve, the contradiction judge, bulk resolve, retention.

**Auto-resolve (OAK).** When ``remember`` stores a new memory, the top
:data:`SIMILAR_K` most similar *active* memories of the same kind and scope
are compared with it, first by cosine similarity of their embeddings, then by
wording (:func:`mdmem.memory.consolidation.subjects.compare`). A candidate is retired only
when the wording says the new memory states *the same subject with a new
value* (``the office is cleaned monthly`` -> ``… weekly``) and the cosine is
at or above ``consolidation.same_context_threshold`` (0.85) when both share a
context, or ``other_context_threshold`` (0.92) otherwise; at or above
:data:`SAID_THRESHOLD` (0.6) when the newer text says it changed (``… now``,
``moved to …``) or only a value that measures or names changed (``port 8080``
-> ``port 9090``, ``is Redis`` -> ``is Memcached``: ``Verdict.one_value``).
Similarity alone never retires: ``Note abc123 says …`` / ``Note def456 says …`` and
``The frontend is …`` / ``The backend is …`` read alike but are different
facts. A retired memory is marked ``[status:: superseded] [by:: ^new]`` in
the same commit as the new memory (subject ``auto-supersede …``, trailers
``Supersedes: m-…`` and ``Resolved-By`` with the similarity and what changed).
Two memories share a context when they carry the same ``[context:: …]``
field, mention the same file (``src/lib/constants.ts``; a bare
``constants.ts`` matches it by name), sit under the same ``## Topic: …``
heading of LEARNING.md, or the wording finds the same named subject (``the
office``; a bare ``it`` names nothing).

**Judge (Martha).** With an LLM configured, candidates within
``consolidation.judge_distance`` (cosine distance, default 0.7: cosine ≥ 0.3),
at most ``judge_candidates`` of them, are sent with their ids as delimited
data; the model answers ``{"contradicted": ["m-…", …]}`` and exactly those
candidates are retired (ids it invents are ignored). The judge sees every
candidate in range that the similarity rule kept, so it settles what the
wording could not (``Bob is on call`` -> ``Carol is on call``). A judge
failure is logged and the memory is stored anyway: the judge refines, it
never blocks a write.

**Exemptions.** ``session_summary`` memories and entry kinds (chat messages,
tool outputs, logs, journal, episodes) are never auto-resolved, and neither
are memories of the same session (``[session:: …]`` field). Setting both
thresholds above 1 switches the similarity rule off.

**Retention.** Retired (superseded or resolved) memories whose ``updated``
date (else creation) is older than N days get their text replaced by
``[REDACTED]``; the block, its id, fields and links stay, so supersede chains
still resolve. Their derived copies, found by their links
(:mod:`mdmem.store.derived`), lose it too, in the same commit: an episode,
session summary or daily-log line made from a retired memory is written
again from its other sources (:mod:`mdmem.memory.consolidation.regenerate`; ``[REDACTED]``
when none is left), and a retired fact's line in its episode reads
``[REDACTED]``. Facts extracted from a retired entry are memories of their
own and keep their text until they are retired themselves. Dry-run unless
asked to apply; git history keeps the old text (rewriting history is a
separate, deliberate act: purge).

**Resolve-session** marks a session's entries and the memories carrying its
``[session:: …]`` field resolved, and with them each episode whose sources
are then all retired - its summary block and the daily-log entry that links
it - so recall stops returning copies of a closed conversation. An episode
that still summarises active entries of another session stays active.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

import numpy as np

from mdmem.errors import InvalidInputError, LLMError, MdmemError
from mdmem.files import blocks as blk
from mdmem.files import render
from mdmem.memory.capture.sessions import session_id_of, validate_session_id
from mdmem.memory.consolidation.regenerate import regenerate
from mdmem.memory.consolidation.subjects import Verdict, compare
from mdmem.models import Block, Memory, first_line
from mdmem.providers.llm import DATA_INSTRUCTIONS, data_block
from mdmem.store.derived import NoteText, Provenance, Rewrite, front_ids
from mdmem.store.importance import KEEP_LONGER, importance_of
from mdmem.store.writer import memory_trailers

if TYPE_CHECKING:
    from mdmem.config import ConsolidationSettings
    from mdmem.files.textfile import TextFile
    from mdmem.providers.llm import LLMClient
    from mdmem.store.memories import MemoryStore

__all__ = [
    "EXEMPT_KINDS",
    "REDACTED",
    "SAID_THRESHOLD",
    "SIMILAR_K",
    "AutoResolver",
    "Candidate",
    "RetentionReport",
    "Rule",
    "anonymize_retired",
    "auto_resolve",
    "contexts_of",
    "judge",
    "resolve_session",
    "retire_limit",
    "retired_before",
    "similarity_only",
]

log = logging.getLogger("mdmem")

SIMILAR_K = 5
# The cosine at which a memory the wording rule calls an update *that says so*
# (subjects.Verdict.said), or one where only a value that measures or names
# changed (Verdict.one_value), retires the old one. Saying it moves the value
# far from the old text ("The user lives in Lisbon" / "The user moved to
# Porto": 0.65 with MiniLM), and so does a new name or number ("The API
# listens on port 8080" / "… 9090": 0.82; "The cache backend is Redis" /
# "… Memcached": 0.77); look-alikes the rule lets through sat at <= 0.55 in
# bench/supersede_more.py's sets.
SAID_THRESHOLD = 0.6
REDACTED = "[REDACTED]"
EXEMPT_KINDS = frozenset(
    {"session_summary", "chat_message", "tool_output", "log", "journal", "episode", "note"}
)
_OVERFETCH = 50
_WIDEST = 3_200  # nearest vectors fetched before listing the eligible ones
_FILE_EXT = (
    "py|pyi|ts|tsx|js|jsx|mjs|cjs|rs|go|java|kt|rb|php|c|h|cc|cpp|hpp|cs|swift|scala|sql|sh|"
    "bash|zsh|ps1|md|mdx|rst|txt|json|jsonl|yaml|yml|toml|ini|cfg|conf|env|lock|xml|html|css|"
    "scss|vue|svelte|dockerfile|tf|proto|gradle|csv"
)
_PATH = re.compile(
    rf"(?<![\w/.-])((?:[\w.-]+/)*[\w-][\w.-]*\.(?:{_FILE_EXT}))(?![\w/-])", re.IGNORECASE
)


@dataclass(frozen=True)
class Candidate:
    block: Block
    cosine: float
    same_context: bool


# Decides, from the two texts (older, newer), whether the newer replaces the older.
Rule = Callable[[str, str], Verdict]


def similarity_only(old: str, new: str) -> Verdict:
    """The rule before wording was checked: every similar enough candidate is replaced.

    Kept as the baseline ``bench/supersede.py`` measures against.
    """
    return Verdict("update", "similarity only")


def retire_limit(verdict: Verdict, same_context: bool, cfg: ConsolidationSettings) -> float:
    """The cosine at which a candidate the wording calls an update is retired."""
    same = same_context or bool(verdict.subject)
    limit = cfg.same_context_threshold if same else cfg.other_context_threshold
    if verdict.said or verdict.one_value:
        # "… now", "moved to …": the text itself says it replaces. "port 8080" ->
        # "port 9090", "is Redis" -> "is Memcached": only the value changed, and
        # values that name or measure embed far apart (0.82 and 0.77 with MiniLM).
        limit = min(limit, SAID_THRESHOLD)
    return limit


# ----------------------------------------------------------------- contexts ----


def contexts_of(block: Block) -> set[tuple[str, str]]:
    """What a memory is *about* beyond its words: context field, files, LEARNING topic."""
    found: set[tuple[str, str]] = set()
    explicit = block.field("context")
    if explicit:
        found.add(("context", explicit.strip().lower()))
        found.update(("file", p) for p in _paths(explicit))
    found.update(("file", p) for p in _paths(block.text))
    if block.heading.lower().startswith("topic:"):
        found.add(("topic", " ".join(block.heading.lower().split())))
    return found


def _paths(text: str) -> set[str]:
    return {m.group(1).lower().lstrip("./") for m in _PATH.finditer(text)}


def share_context(a: Block, b: Block) -> bool:
    ca, cb = contexts_of(a), contexts_of(b)
    if ca & cb:
        return True
    files_a = {v for k, v in ca if k == "file"}
    files_b = {v for k, v in cb if k == "file"}
    for fa in files_a:
        for fb in files_b:
            # A bare name matches a path ending in it ("constants.ts" ~ "src/lib/constants.ts").
            bare = "/" not in fa or "/" not in fb
            if bare and PurePosixPath(fa).name == PurePosixPath(fb).name:
                return True
    return False


def _sessions_of(block: Block) -> set[str]:
    value = block.field("session")
    return set(value.split()) if value else set()


# ---------------------------------------------------------------- candidates ----


def _eligible(new: Block, other: Block, new_sessions: set[str] | None = None) -> bool:
    # Cheap attribute checks first: the fallback in nearest() runs this over
    # every memory in the store.
    if not (
        other.kind == new.kind
        and other.scope == new.scope
        and other.status == "active"
        and other.is_memory
        and other.id != new.id
        and other.kind not in EXEMPT_KINDS
    ):
        return False
    sessions = _sessions_of(new) if new_sessions is None else new_sessions
    return not (sessions and sessions & _sessions_of(other))


def _vector_of(store: MemoryStore, block: Block) -> np.ndarray | None:
    """The new block's embedding, put in the cache so indexing does not embed it
    again; None when there are no vectors or the embedder does not answer (the
    memory is stored all the same, only not compared with older ones)."""
    vec = store.embedding.cached_vector(block)
    if vec is None:
        return None
    vec = np.asarray(vec, dtype=np.float32)
    norm = float(np.linalg.norm(vec))
    return vec / norm if norm else None


def nearest(
    store: MemoryStore,
    block: Block,
    vec: np.ndarray,
    k: int,
    exclude: Collection[str] = (),
    *,
    floor: float = -1.0,
) -> list[Candidate]:
    """The ``k`` most similar eligible memories (same kind and scope, active,
    not in ``exclude``), best first; none below the cosine ``floor``.

    The nearest vectors of any kind are fetched, more each round (x8) while
    too few are eligible; once the last one fetched is below ``floor``, no
    eligible memory further away can matter and the search stops. Only when
    many vectors of other kinds lie above the floor are exactly the eligible
    memories listed (a pass over the catalog: in a large vault of chat turns
    that pass cost each new fact a scan of every memory).
    """
    vectors = store.indexer.vectors
    if vectors is None or len(vectors) == 0 or k <= 0:
        return []
    query = vec.reshape(1, -1)
    sessions = _sessions_of(block)
    fetch = _OVERFETCH
    while True:
        raw = vectors.search(query, fetch)
        picked: list[tuple[Block, float]] = []
        for block_id, score in raw:
            if score < floor:
                break
            other = store.catalog.block(block_id)
            if other is not None and _eligible(block, other, sessions) and block_id not in exclude:
                picked.append((other, score))
        exhausted = len(raw) < fetch or (raw and raw[-1][1] < floor)
        if len(picked) >= k or exhausted or fetch >= _WIDEST:
            break
        fetch *= 8
    if len(picked) < k and not exhausted:
        # Over-fetching found too few of this kind: ask again among exactly those.
        allowed = [
            b.id
            for b in store.catalog.blocks(memories_only=True)
            if _eligible(block, b, sessions) and b.id not in exclude
        ]
        picked = []
        for block_id, score in vectors.search(query, k, allowed=allowed):
            other = store.catalog.block(block_id)
            if other is not None and score >= floor:
                picked.append((other, score))
    return [Candidate(b, float(s), share_context(block, b)) for b, s in picked[:k]]


# --------------------------------------------------------------------- judge ----

JUDGE_SYSTEM = (
    "You are mdmem's contradiction judge. An AI agent is storing a NEW memory; below are "
    "older CANDIDATE memories, each with its id. A candidate is contradicted when it cannot "
    "be true at the same time as the new memory: an older value of the same attribute, a "
    "reversed decision, a fact the new memory corrects. Related, overlapping or merely "
    "similar memories are NOT contradicted.\n"
    f"{DATA_INSTRUCTIONS}\n"
    'Reply with one JSON object exactly of the form {"contradicted": ["<candidate id>", ...]} '
    "listing the ids of contradicted candidates, or an empty list."
)


def judge(llm: LLMClient, new_text: str, candidates: list[Candidate]) -> list[str]:
    """Ids among ``candidates`` the model says the new memory contradicts."""
    if not candidates:
        return []
    listing = "\n".join(f"{c.block.id}: {' '.join(c.block.text.split())}" for c in candidates)
    messages = [
        {"role": "system", "content": JUDGE_SYSTEM},
        {
            "role": "user",
            "content": data_block("new memory", new_text)
            + "\n\n"
            + data_block("candidates", listing),
        },
    ]

    def check(data: dict[str, Any]) -> None:
        if not all(isinstance(x, str) for x in data["contradicted"]):
            raise ValueError("contradicted must list candidate ids (strings)")

    reply = llm.chat_json(messages, required={"contradicted": list}, validate=check)
    wanted = {c.block.id for c in candidates}
    chosen = [i.strip().lstrip("^") for i in reply["contradicted"]]
    ignored = [i for i in chosen if i not in wanted]
    if ignored:
        log.info("judge named ids that were not candidates (ignored): %s", ", ".join(ignored))
    return [i for i in dict.fromkeys(chosen) if i in wanted]


# --------------------------------------------------------------- auto-resolve ----


def auto_resolve(
    store: MemoryStore,
    memory: Memory,
    *,
    fresh_batch: bool,
    llm: LLMClient | None,
    exclude: Collection[str] = (),
    rule: Rule = compare,
) -> Memory:
    """Retire memories the new one replaces; runs inside the batch of its ``remember``.

    ``exclude``: ids never to retire (the other memories of the same batch).
    ``rule``: decides from the wording which similar candidates the new
    memory replaces (the judge, when there is one, looks at the rest).
    """
    if not memory.was_new or memory.kind in EXEMPT_KINDS:
        return memory
    cfg = store.settings.consolidation
    similarity_on = min(cfg.same_context_threshold, cfg.other_context_threshold) <= 1.0
    if not similarity_on and llm is None:
        return memory
    block = store.block(memory.id)
    vec = _vector_of(store, block)
    if vec is None:
        return memory
    k = max(SIMILAR_K, cfg.judge_candidates if llm is not None else 0)
    # Below this cosine a candidate can neither be retired by similarity nor
    # be shown to the judge: the search for candidates stops there.
    floor = min(cfg.same_context_threshold, cfg.other_context_threshold, SAID_THRESHOLD)
    if llm is not None:
        floor = min(floor, 1.0 - cfg.judge_distance)
    candidates = nearest(store, block, vec, k, exclude, floor=floor)
    retired: dict[str, str] = {}  # id -> why
    if similarity_on:
        for cand in candidates[:SIMILAR_K]:
            verdict = rule(cand.block.text, block.text)
            if not verdict.update:
                # Kept: a different subject, or the wording can't tell. The
                # judge below, when configured, still sees this candidate.
                log.debug("auto-resolve keeps %s: %s", cand.block.id, verdict.reason)
                continue
            limit = retire_limit(verdict, cand.same_context, cfg)
            if cand.cosine >= limit:
                retired[cand.block.id] = f"similarity {cand.cosine:.2f}, {verdict.reason}"
    if llm is not None:
        cutoff = 1.0 - cfg.judge_distance
        to_judge = [
            c
            for c in candidates[: cfg.judge_candidates]
            if c.cosine >= cutoff and c.block.id not in retired
        ]
        if to_judge:
            try:
                for block_id in judge(llm, block.text, to_judge):
                    retired[block_id] = "judge"
            except LLMError as exc:
                log.warning("contradiction judge unavailable, similarity rule only: %s", exc)
    if not retired:
        return memory
    today = store.clock.today()
    with store.writer.batch(subject=None) as tx:
        for old_id, why in retired.items():
            old = store.block(old_id)
            tx.set_fields(
                old_id,
                {"status": "superseded", "by": f"^{memory.id}", "updated": today},
                op="auto-resolve",
                subject=f"auto-supersede {old.kind}: {first_line(old.text)}",
                extra_trailers=[("Supersedes", old_id), ("Resolved-By", why)],
            )
        if fresh_batch:
            # This remember owns the commit: say what happened in its subject.
            tx.set_message(
                f"auto-supersede {memory.kind}: {first_line(memory.text)}",
                [
                    *memory_trailers(memory.id, memory.kind, memory.scope, "remember"),
                    *[("Supersedes", i) for i in retired],
                    *[("Resolved-By", f"{i} {why}") for i, why in retired.items()],
                ],
            )
    log.info("%s supersedes %s", memory.id, ", ".join(retired))
    return Memory.from_block(
        store.block(memory.id), was_new=True, superseded=(*memory.superseded, *retired)
    )


class AutoResolver:
    """Auto-resolve as the store's write hooks: after each ``remember`` and at a batch's end.

    ``llm`` gives the configured contradiction judge (or None);
    :meth:`judge_with` swaps in another model for a while (a consolidation's).
    ``rule`` is the wording rule of the similarity path (:func:`compare`).
    """

    def __init__(
        self, store: MemoryStore, llm: Callable[[], LLMClient | None], rule: Rule = compare
    ) -> None:
        self.store = store
        self.rule = rule
        self._configured = llm
        self._override: tuple[LLMClient | None] | None = None

    def __call__(self, memory: Memory, fresh_batch: bool) -> Memory:
        return auto_resolve(
            self.store, memory, fresh_batch=fresh_batch, llm=self._llm(), rule=self.rule
        )

    def after_batch(self, memory_ids: list[str]) -> None:
        """Auto-resolve a batch's new memories against what the vault held before it.

        The memories of one batch never retire each other (an import of
        similar notes keeps them all), as when each was resolved on its own.
        """
        catalog = self.store.catalog
        live = [b for i in memory_ids if (b := catalog.block(i)) and b.status == "active"]
        if not live:
            return
        batch_ids = frozenset(memory_ids)
        try:
            # One batched pass; auto-resolve then finds each vector in the cache.
            self.store.indexer.warm_cache(live)
            llm = self._llm()
            for block in live:
                memory = Memory.from_block(block, was_new=True)
                auto_resolve(
                    self.store,
                    memory,
                    fresh_batch=False,
                    llm=llm,
                    exclude=batch_ids,
                    rule=self.rule,
                )
        except MdmemError as e:
            # The memories themselves are written either way.
            log.warning("auto-resolve after the batch stopped: %s", e)

    @contextmanager
    def judge_with(self, llm: LLMClient | None) -> Iterator[None]:
        """Use ``llm`` (not the configured one) for the contradiction judge meanwhile."""
        saved = self._override
        self._override = (llm,) if llm is not None else saved
        try:
            yield
        finally:
            self._override = saved

    def _llm(self) -> LLMClient | None:
        return self._override[0] if self._override is not None else self._configured()


# -------------------------------------------------------------- bulk resolve ----


def session_memories(
    store: MemoryStore, session_id: str, *, scope: str | None = None
) -> list[Block]:
    """Active memories of a session: its entries and memories carrying ``[session:: id]``.

    Its ``session_summary`` is not one of them: the summary is what stays
    of a finished session (OAK never auto-resolves summaries either).
    """
    validate_session_id(session_id)
    store.refresh()
    wanted_scope = None if scope is None else blk.validate_scope(scope)
    out = []
    for block in store.catalog.blocks(memories_only=True):
        if block.status != "active" or block.kind == "session_summary":
            continue
        if wanted_scope is not None and block.scope != wanted_scope:
            continue
        if session_id_of(block.path) == session_id or session_id in _sessions_of(block):
            out.append(block)
    return out


def resolve_session(
    store: MemoryStore, session_id: str, *, scope: str | None = None
) -> list[Memory]:
    """Mark every active memory of a session resolved, and its episodes' copies, in one commit.

    An episode (its summary block and its daily-log entry) is resolved with
    the session when every source entry it names is then retired.
    """
    targets = session_memories(store, session_id, scope=scope)
    if not targets:
        return []
    ids = [b.id for b in targets]
    ids += [i for i in _episodes_retired_with(store, set(ids)) if i not in ids]
    today = store.clock.today()
    subject = f"resolve session {session_id}: {len(ids)} memories"
    # A batch, so the session's summary (memory.summaries) can share the commit.
    with store.writer.batch(subject) as tx:
        tx.set_fields_of(
            ids,
            {"status": "resolved", "updated": today},
            subject=subject,
            trailers=[
                ("Op", "resolve-session"),
                ("Session", session_id),
                *(("Memory-Id", i) for i in ids[:20]),
            ],
        )
    return [store.get(i) for i in ids]


def _episodes_retired_with(store: MemoryStore, retiring: set[str]) -> list[str]:
    """Active episode blocks, and the daily-log entries linking them, whose sources all retire."""
    graph = _graph(store)
    catalog = store.catalog
    out: list[str] = []
    for episode in sorted({e for i in retiring for e in graph.episodes_of(i)}):
        summary = catalog.block(episode)
        # A session summary outlives its session (memory.summaries).
        if summary is None or summary.status != "active" or graph.pieces[episode].rule != "episode":
            continue
        if all(
            s in retiring or (b := catalog.block(s)) is None or b.status != "active"
            for s in graph.pieces[episode].named
        ):
            out.append(episode)
            out += sorted(
                i
                for i in graph.logs_of(episode)
                if (b := catalog.block(i)) is not None and b.status == "active"
            )
    return out


def _graph(store: MemoryStore) -> Provenance:
    return Provenance.of(state.parsed for state in list(store.catalog.files.values()))


# ------------------------------------------------------------------ retention ----


@dataclass(frozen=True)
class RetentionReport:
    """What retention found (and, when ``applied``, anonymised)."""

    days: int
    cutoff: datetime
    memories: list[Memory]
    applied: bool
    commit: str | None = None
    # Blocks holding derived copies of them (episode summaries, daily-log
    # entries) whose copied text is (or would be) [REDACTED].
    copies: list[str] = field(default_factory=list)


def retired_before(
    store: MemoryStore, cutoff: datetime, *, important_cutoff: datetime | None = None
) -> list[Block]:
    """Retired memories last changed before ``cutoff`` that still carry text.

    ``important_cutoff``: the (earlier) cutoff for memories of importance
    >= KEEP_LONGER, which retention keeps longer.
    """
    store.refresh()
    out = []
    for block in store.catalog.blocks(memories_only=True):
        if block.status not in ("superseded", "resolved") or block.text.strip() == REDACTED:
            continue
        moment = block.updated or block.created
        level = importance_of(block)
        if important_cutoff is not None and level is not None and level >= KEEP_LONGER:
            if moment < important_cutoff:
                out.append(block)
            continue
        if moment < cutoff:
            out.append(block)
    out.sort(key=lambda b: (b.path, b.line_start))
    return out


def _redact(today: str) -> Any:
    # The text and its tags go (a tag can say as much); the date of the
    # redaction is kept beside the line (retention records it).
    def make(block: Block, tf: TextFile) -> list[str]:
        return render.replace_text(block, tf, REDACTED, tags=())

    return make


def anonymize_retired(
    store: MemoryStore, days: int | None = None, *, apply: bool = False, now: datetime | None = None
) -> RetentionReport:
    """Replace the text of old retired memories, and their derived copies, with ``[REDACTED]``.

    Dry-run by default: the report lists what would change.
    """
    days = store.settings.consolidation.retention_days if days is None else days
    if not isinstance(days, int) or days < 0:
        raise InvalidInputError("retention days must be a non-negative integer")
    moment = now or datetime.now(UTC)
    cutoff = moment - timedelta(days=days)
    # An important memory (>= KEEP_LONGER) keeps its text twice as long.
    targets = retired_before(store, cutoff, important_cutoff=moment - timedelta(days=2 * days))
    memories = [Memory.from_block(b, was_new=False) for b in targets]
    if not targets:
        return RetentionReport(days, cutoff, memories, applied=False)
    ids = {b.id for b in targets}
    rewrite, copies = _retention_rewrite(store, ids)
    if not apply:
        return RetentionReport(days, cutoff, memories, applied=False, copies=sorted(copies))
    subject = f"retention: anonymise {len(targets)} retired memories older than {days} days"
    with store.writer.transaction(subject) as tx:
        today = moment.date().isoformat()
        tx.rewrite_blocks(
            [b.id for b in targets],
            _redact(today),
            subject=subject,
            op="retention",
            trailers=[("Retention-Days", str(days))],
        )
        for path in sorted({b.path for b in targets}):
            marks = [("redacted", today), ("tags", None)]
            tx.record_many(path, [(b.id, marks) for b in targets if b.path == path])
        for path in sorted(set(copies.values())):
            tx.apply(path, rewrite.editor(), subject, [("Op", "retention")])
            here = [i for i, where in copies.items() if where == path]
            tx.record_many(path, rewrite.record_updates(here))
    return RetentionReport(
        days, cutoff, memories, applied=True, commit=store.git.head(), copies=sorted(copies)
    )


def _retention_rewrite(store: MemoryStore, ids: set[str]) -> tuple[Rewrite, dict[str, str]]:
    """The edits that take retired memories' text out of their copies, and the
    blocks (id -> path) those edits change."""
    graph = _graph(store)
    affected = graph.affected(ids, remove=False)
    made = regenerate(store, graph, affected, REDACTED, rename=False)
    notes = dict(made.notes)
    for episode in ids:  # a retired episode: its note's title and tiers quote it
        if (d := graph.pieces.get(episode)) is not None and d.rule == "episode":
            notes[episode] = _redacted_note(store, episode)
    # Nothing leaves: the retired blocks keep their ids, their copies their place.
    rewrite = Rewrite(
        mark=REDACTED, texts=made.texts, fields=made.fields, notes=notes, marked=frozenset(ids)
    )
    copies = {
        i: path
        for i in (*affected.regenerated, *notes)
        if (path := store.catalog.path_of(i)) is not None
    }
    for episode, paths in graph.notes.items():  # notes listing a retired fact
        for path in paths:
            state = store.catalog.files.get(path)
            if state is not None and ids.intersection(front_ids(state.parsed.frontmatter, "facts")):
                copies[episode] = path
    return rewrite, {i: p for i, p in copies.items() if i not in ids or i in notes}


def _redacted_note(store: MemoryStore, episode: str) -> NoteText:
    path = store.catalog.path_of(episode)
    state = store.catalog.files.get(path) if path is not None else None
    pending = state.parsed.frontmatter.get("pending") if state is not None else None
    items = tuple(str(i) for i in pending) if isinstance(pending, list) else ()
    front = {"title": REDACTED, "abstract": REDACTED, "overview": REDACTED}
    return NoteText(title=REDACTED, pending=items, front=front)
