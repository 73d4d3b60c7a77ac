"""Consolidation: short-term session entries become episodes and durable facts.

Flow (OrcBot's short-term → episodic consolidation, written back as markdown):

1. **Pending entries** are session entries (``chat_message``/``tool_output``)
   without a ``[consolidated:: …]`` field. Automatic runs start when more than
   ``consolidation.threshold`` (30) are pending and take the oldest
   ``consolidation.batch`` (20); ``store.consolidate()`` takes all of them.
2. They are **grouped** by scope, contact and (local) day, and each group is cut
   into chunks of at most ``batch`` entries.
3. Each chunk is **drafted** - by the LLM when one is configured, else by the
   extractive summariser (:mod:`mdmem.memory.capture.extractive`). The LLM sees the entries,
   the known facts of this contact and the open items of its last episode,
   all as delimited data, and answers ``{summary, facts, pending,
   preferences, tone, confidence}``. Every LLM call happens before anything
   is written: a malformed reply, a 429 or a timeout leaves the vault as it
   was, and running again retries.
4. **Safety**: the facts a draft was *given* are the known facts of the contact
   (active memories an earlier consolidation extracted, newest 20), the open
   items of its last episode, and the explicit statements in the chunk
   (:func:`mdmem.memory.capture.extractive.explicit_facts`). A given fact the draft neither
   restates nor mentions (content-word coverage) counts as dropped; a draft that
   drops more than ``max_drop_ratio`` (25%) of them is rejected, logged and
   left pending (``force=True`` accepts it).
5. **Writing**, in ONE commit: facts and preferences through
   ``store.remember`` (so dedupe, auto-resolve and the judge apply) with
   ``[episode:: ^m-…]`` and, where the draft can say, ``[sources:: ^S…]``
   (the entries a fact came from) and ``[speaker:: …]`` (who said them);
   the episode note ``episodes/YYYY-MM-DD-<slug>.md`` (frontmatter: source
   block links, what the drafter was ``given``, time range, scope, contact,
   model, confidence, ``extractive``), one line in the daily log
   (``[sources:: ^<episode>]``), and ``[consolidated:: ^<episode id>]`` on
   every source entry (never deleted). These links are how purge, retention
   and visibility find every copy (:mod:`mdmem.store.derived`).
   ``dry_run`` renders the same edits in memory and returns their diff.

**Who spoke.** A turn with a ``[speaker:: …]`` (a group chat's member, other
than the session's own contact) is that person's; any other user turn is
the session user's. Only the session user's statements go to ``USER.md``;
a statement of someone else is a fact named after them ("Ana prefers
tea.", ``[speaker:: Ana]``) in ``MEMORY.md``, which their contact profile
lists (:mod:`mdmem.memory.desks.contacts`); one the draft cannot attribute stays
out of ``USER.md`` too. The model sees each entry numbered with its
speaker and answers facts as ``{"text", "speaker", "sources": [n…]}``;
who said it is read from the cited entries, not from the model's words.
6. **Review** (``review=True``, or ``[consolidation] review = true``): the
   same edits become one commit on a branch ``mdmem/consolidate-<date>``
   instead, for a person to merge or reject (:mod:`mdmem.git.review`). Entries
   such a branch holds are not pending meanwhile.
"""

from __future__ import annotations

import difflib
import logging
import re
import time
import weakref
from collections.abc import Callable, Iterable
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

import yaml

from mdmem.errors import ConfigError, InvalidInputError, LLMError, MdmemError
from mdmem.files import blocks as blk
from mdmem.files import render
from mdmem.files.ids import ID_PATTERN
from mdmem.git import review as rv
from mdmem.index.progress import Progress, silent
from mdmem.memory.capture import extractive
from mdmem.memory.capture.sessions import attribute, session_id_of, speaker_of, turn_text
from mdmem.memory.consolidation.episode_text import episode_name, episode_text, log_text, title_of
from mdmem.models import FACT_KINDS, Block, Memory, one_line
from mdmem.providers.llm import DATA_INSTRUCTIONS, data_block
from mdmem.store.derived import source_field
from mdmem.store.importance import kind_importance, origin_of_tools
from mdmem.store.writer import Transaction, memory_trailers

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from mdmem.providers.llm import LLMClient
    from mdmem.store.memories import MemoryStore


class AutoResolver(Protocol):
    """What consolidation needs of the auto-resolver (:class:`~mdmem.memory.consolidation.
    lifecycle.AutoResolver`): to judge with the run's model. Named here, not imported, so
    consolidation stays below the lifecycle that regenerates through it."""

    def judge_with(self, llm: LLMClient | None) -> AbstractContextManager[None]: ...


__all__ = [
    "ConsolidationResult",
    "Draft",
    "EpisodeInfo",
    "Group",
    "Rejection",
    "consolidate",
    "consolidate_stale",
    "draft_extractive",
    "last_episode",
    "maybe_auto_consolidate",
    "pending_entries",
    "stale_entries",
]

log = logging.getLogger("mdmem")

SESSION_KINDS = frozenset({"chat_message", "tool_output"})
KNOWN_FACTS_LIMIT = 20
ENTRY_CHARS = 1_500  # per entry in the prompt (OrcBot's memoryContentMaxLength)
AUTO_BACKOFF_SECONDS = 300.0
_INLINE_ID = re.compile(rf"\^{ID_PATTERN}")
_LEAD = re.compile(r"^\s*(?:[#>*+-]+|\d+[.)])\s+")

CONSOLIDATE_SYSTEM = (
    "You are mdmem's memory consolidator. You turn an AI agent's short-term memory - chat "
    "messages and tool outputs from one conversation - into an episodic summary and durable "
    "knowledge.\n"
    f"{DATA_INSTRUCTIONS}\n"
    "Each entry is numbered (#1, #2...) and says who spoke: 'user' is the person the "
    "conversation is with, a name is someone else in a group chat.\n"
    "Reply with one JSON object with exactly these keys:\n"
    '{"summary": "...", "facts": [{"text": "...", "speaker": "user", "sources": [1]}], '
    '"pending": ["..."], "preferences": [{"text": "...", "speaker": "Ana", "sources": [3]}], '
    '"tone": "...", "confidence": 0.8}\n'
    "- summary: what happened, 2-5 sentences, past tense, third person.\n"
    "- facts: durable facts worth remembering after this conversation (about the user, the "
    "people in it, their work, the world), one self-contained sentence each, as "
    '{"text", "speaker", "sources"}: speaker is who said it ("user", or the name), sources '
    "the numbers of the entries it comes from. A fact someone other than the user said names "
    'them ("Ana prefers tea."), never "the user". Include every KNOWN FACT that is '
    "still true (you may reword it; sources [] then); leave one out only when the "
    "conversation shows it is no longer true, and then state the new fact.\n"
    "- pending: tasks, promises or questions still open at the end, including OPEN ITEMS "
    "from earlier that are still open.\n"
    "- preferences: stated preferences (style, units, tools...), one sentence each, in the "
    "same form as facts.\n"
    "- tone: the conversation's tone in one or two words.\n"
    "- confidence: from 0 to 1, how sure you are of the facts.\n"
    "Use [] for empty lists. Never invent anything the data does not say."
)


# ------------------------------------------------------------------ records ----


@dataclass(frozen=True)
class EpisodeInfo:
    id: str
    path: str
    scope: str
    contact: str
    entries: int
    facts: list[str]  # ids of the memories its facts/preferences map to
    model: str
    extractive: bool
    confidence: float | None
    summary: str


@dataclass(frozen=True)
class Rejection:
    scope: str
    contact: str
    day: str
    entries: list[str]
    given: int
    dropped: list[str]
    reason: str


@dataclass
class ConsolidationResult:
    """What a consolidation did (or, with ``dry_run``, would do)."""

    episodes: list[EpisodeInfo] = field(default_factory=list)
    facts: list[Memory] = field(default_factory=list)  # new memories (was_new)
    consolidated: int = 0  # source entries marked consolidated
    pending_before: int = 0
    rejected: list[Rejection] = field(default_factory=list)
    superseded: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)  # given facts the drafts did not carry
    dry_run: bool = False
    diff: str = ""
    commit: str | None = None  # in review mode the commit on ``branch``, not on HEAD
    branch: str | None = None  # review mode: the branch holding the commit
    model: str = "extractive"
    # Everything this consolidation cost, drafting and the contradiction judge
    # (which runs inside each fact's ``remember``); ``judge_*`` is that part.
    llm_requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    judge_requests: int = 0
    judge_prompt_tokens: int = 0
    reason: str = "manual"


@dataclass(frozen=True)
class FactItem:
    text: str
    kind: str = "fact"
    topic: str | None = None
    sources: tuple[int, ...] = ()  # 0-based entries of the group it came from
    speaker: str | None = None  # who the draft says said it ("user" or a name)


@dataclass
class Group:
    scope: str
    contact: str
    day: str
    entries: list[Block]


@dataclass
class Draft:
    group: Group
    summary: str
    facts: list[FactItem]
    pending: list[str]
    tone: str
    confidence: float | None
    model: str
    extractive: bool
    given: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    # What the drafter was shown besides the entries (known facts, the earlier
    # episode whose open items it carried): the note's ``given`` links.
    shown: list[str] = field(default_factory=list)


# ---------------------------------------------------------- pending entries ----


@dataclass
class _VaultState:
    files: dict[str, tuple[Any, int, list[str]]] = field(default_factory=dict)
    backoff_until: float = 0.0
    rejected: set[frozenset[str]] = field(default_factory=set)
    running: bool = False


_STATE: weakref.WeakKeyDictionary[MemoryStore, _VaultState] = weakref.WeakKeyDictionary()


def _state(store: MemoryStore) -> _VaultState:
    state = _STATE.get(store)
    if state is None:
        state = _STATE[store] = _VaultState()
    return state


def _is_pending(block: Block) -> bool:
    return (
        block.is_memory
        and block.kind in SESSION_KINDS
        and block.status == "active"
        and block.field("consolidated") is None
    )


def pending_entries(store: MemoryStore) -> list[Block]:
    """Unconsolidated session entries, oldest first (cached per file by stat).

    Entries an open review branch consolidates are left out: they wait for
    the review, and drafting them again would make two competing episodes.
    """
    cache = _state(store).files
    held = rv.held(store).entries
    out: list[Block] = []
    seen: set[str] = set()
    for path, state in list(store.catalog.files.items()):
        if session_id_of(path) is None:
            continue
        seen.add(path)
        key = (state.signature, len(state.parsed.blocks))
        hit = cache.get(path)
        if hit is None or (hit[0], hit[1]) != key or key[0] == (0, 0, 0):
            ids = [b.id for b in state.parsed.blocks if _is_pending(b)]
            cache[path] = (key[0], key[1], ids)
        else:
            ids = hit[2]
        for block_id in ids:
            block = store.catalog.block(block_id)
            if block is not None and _is_pending(block) and block_id not in held:
                out.append(block)
    for stale in set(cache) - seen:
        cache.pop(stale, None)
    out.sort(key=lambda b: (b.created, b.id))
    return out


def _contact_of(store: MemoryStore, block: Block) -> str:
    value = block.field("contact")
    if value:
        return value
    state = store.catalog.files.get(block.path)
    meta = state.parsed.frontmatter if state is not None else {}
    return str(meta.get("contact") or "")


def plan(store: MemoryStore, entries: list[Block], chunk: int) -> list[Group]:
    """Group by (scope, contact, local day) and cut each group into chunks."""
    groups: dict[tuple[str, str, str], list[Block]] = {}
    for block in entries:
        day = store.clock.local(block.created).date().isoformat()
        groups.setdefault((block.scope, _contact_of(store, block), day), []).append(block)
    out = []
    for (scope, contact, day), blocks in sorted(groups.items(), key=lambda kv: kv[1][0].created):
        for start in range(0, len(blocks), max(1, chunk)):
            out.append(Group(scope, contact, day, blocks[start : start + max(1, chunk)]))
    return out


# ------------------------------------------------------------------- inputs ----


def known_facts(store: MemoryStore, scope: str, contact: str) -> list[Block]:
    """Active facts an earlier consolidation extracted for this scope and contact."""
    found = [
        b
        for b in store.catalog.blocks(memories_only=True)
        if b.status == "active"
        and b.scope == scope
        and b.kind in FACT_KINDS
        and b.field("episode")
        and (b.field("contact") or "") == contact
    ]
    found.sort(key=lambda b: (b.created, b.id))
    return found[-KNOWN_FACTS_LIMIT:]


def last_episode(store: MemoryStore, scope: str, contact: str) -> tuple[str | None, list[str]]:
    """This contact's latest episode (its summary's id) and its open items."""
    latest: tuple[str, list[str], str] | None = None
    for path, state in store.catalog.files.items():
        file_scope, inner = blk.scope_of_path(path)
        if file_scope != scope or not inner.startswith("episodes/"):
            continue
        meta = state.parsed.frontmatter
        if str(meta.get("contact") or "") != contact:
            continue
        span = meta.get("time_range") or {}  # episodes written before time_to
        end = meta.get("time_to") or (span.get("to") if isinstance(span, dict) else "")
        stamp = str(end or "") + path
        items = meta.get("pending") or []
        if isinstance(items, list) and (latest is None or stamp > latest[0]):
            latest = (stamp, [str(i) for i in items if str(i).strip()], path)
    if latest is None:
        return None, []
    summary = next((b.id for b in store.catalog.blocks_in(latest[2]) if b.kind == "episode"), None)
    return summary, latest[1]


def _role_of(block: Block) -> str:
    if block.kind == "tool_output":
        return "tool"
    return block.field("role") or "user"


def _entry_line(store: MemoryStore, block: Block, number: int) -> str:
    moment = store.clock.local(block.created)
    if block.kind == "tool_output":
        label = f"tool {block.field('tool') or ''}".strip()
    else:
        speaker = speaker_of(block)
        label = f"{speaker} ({_role_of(block)})" if speaker else _role_of(block)
    text = turn_text(block).strip()
    if len(text) > ENTRY_CHARS:
        text = text[: ENTRY_CHARS - 1] + "…"
    text = text.replace("\n", "\n    ")
    return f"[{moment:%H:%M:%S}] #{number} {label}: {text}"


def _items(group: Group) -> list[tuple[str, str]]:
    return [(_role_of(b), turn_text(b)) for b in group.entries]


def _statements(group: Group) -> list[extractive.ExplicitFact]:
    """The explicit statements of the group's turns, each with its entry and speaker."""
    return extractive.explicit_facts(_items(group), speakers=[speaker_of(b) for b in group.entries])


# ------------------------------------------------------------------- drafts ----


def _clean(text: Any) -> str:
    """One line of LLM text made safe for a list item or paragraph."""
    line = " ".join(str(text).split())
    line = _INLINE_ID.sub("", line)
    line = line.replace("::", ":")
    while True:
        stripped = _LEAD.sub("", line)
        if stripped == line:
            break
        line = stripped
    return line.strip()


def _fact_items(raw: Any, default_kind: str, entries: int) -> list[FactItem]:
    out: list[FactItem] = []
    if isinstance(raw, dict):
        for key, value in raw.items():
            text = _clean(f"{key}: {value}")
            if text:
                out.append(FactItem(f"User preference - {text}", "preference"))
        return out
    for item in raw or []:
        if isinstance(item, dict):
            text = _clean(item.get("text") or item.get("fact") or "")
            kind = str(item.get("kind") or default_kind)
            topic = item.get("topic")
            if kind not in FACT_KINDS:
                kind = default_kind
            sources = _entry_numbers(item.get("sources") or item.get("source"), entries)
            said = item.get("speaker")
            speaker = _clean(said)[:100] if isinstance(said, str) and said.strip() else None
            if text:
                out.append(FactItem(text, kind, _clean(topic) if topic else None, sources, speaker))
        else:
            text = _clean(item)
            if text:
                out.append(FactItem(text, default_kind))
    return out


def _entry_numbers(cited: Any, entries: int) -> tuple[int, ...]:
    """The entries (0-based) a model cited by the numbers the prompt gave; others cite nothing."""
    out: list[int] = []
    for n in cited if isinstance(cited, list) else [cited]:
        text = str(n).strip().lstrip("#") if isinstance(n, int | str) else ""
        if not isinstance(n, bool) and text.isdigit() and 1 <= int(text) <= entries:
            out.append(int(text) - 1)
    return tuple(dict.fromkeys(out))


def _validate(data: dict[str, Any]) -> None:
    if not str(data["summary"]).strip():
        raise ValueError("summary is empty")
    for key in ("facts", "pending"):
        for item in data[key]:
            if not isinstance(item, str | dict):
                raise ValueError(f"{key} must hold strings")
    prefs = data["preferences"]
    if isinstance(prefs, list) and not all(isinstance(p, str | dict) for p in prefs):
        raise ValueError("preferences must hold strings")


def draft_with_llm(
    store: MemoryStore, llm: LLMClient, group: Group, known: list[Block], items: list[str]
) -> Draft:
    who = group.contact or "the user"
    lines = [_entry_line(store, b, n) for n, b in enumerate(group.entries, start=1)]
    parts = [
        f"Conversation with {who} on {group.day} ({len(group.entries)} entries).",
        data_block("entries", "\n".join(lines)),
    ]
    if known:
        parts.append(data_block("known facts", "\n".join(f"- {b.text}" for b in known)))
    if items:
        parts.append(data_block("open items", "\n".join(f"- {i}" for i in items)))
    messages = [
        {"role": "system", "content": CONSOLIDATE_SYSTEM},
        {"role": "user", "content": "\n\n".join(parts)},
    ]
    data = llm.chat_json(
        messages,
        required={
            "summary": str,
            "facts": list,
            "pending": list,
            "preferences": (list, dict),
            "tone": str,
            "confidence": (int, float),
        },
        validate=_validate,
    )
    n = len(group.entries)
    facts = _fact_items(data["facts"], "fact", n) + _fact_items(
        data["preferences"], "preference", n
    )
    confidence = max(0.0, min(1.0, float(data["confidence"])))
    return Draft(
        group=group,
        summary=_clean(data["summary"]),
        facts=facts,
        pending=[p for p in (_clean(x) for x in data["pending"]) if p],
        tone=_clean(data["tone"])[:40],
        confidence=confidence,
        model=llm.model,
        extractive=False,
    )


def draft_extractive(group: Group, items: list[str]) -> Draft:
    pairs = _items(group)
    summary = extractive.summarize(pairs) or (
        _clean(turn_text(group.entries[0]))[:300] if group.entries else ""
    )
    facts = [
        FactItem(f.text, f.kind, sources=(f.source,), speaker=f.speaker or "user")
        for f in _statements(group)
    ]
    return Draft(
        group=group,
        summary=_clean(summary),
        facts=facts,
        pending=list(items),  # without a model nothing can tell an item is done
        tone="",
        confidence=None,
        model="extractive",
        extractive=True,
    )


def check_drops(draft: Draft, known: list[Block], items: list[str]) -> None:
    """Fill ``given``/``dropped``: given facts the draft does not cover in any field."""
    given = [b.text for b in known] + list(items)
    given += [f.text for f in _statements(draft.group)]
    given = list(dict.fromkeys(given))
    output = "\n".join([draft.summary, *(f.text for f in draft.facts), *draft.pending])
    draft.given = given
    draft.dropped = [g for g in given if not extractive.covered(g, output)]


# ------------------------------------------------------------------ running ----


def consolidate(
    store: MemoryStore,
    resolver: AutoResolver,
    llm: LLMClient | None,
    *,
    dry_run: bool = False,
    force: bool = False,
    entries: list[Block] | None = None,
    reason: str = "manual",
    review: bool = False,
    progress: Progress | None = None,
) -> ConsolidationResult:
    """Consolidate ``entries`` (default: every pending entry); see the module docstring.

    ``progress`` hears of each group drafted (a model call each, with an LLM).

    ``dry_run`` wins over ``review``: a dry run writes nothing, not even a branch.
    """
    review = review and not dry_run
    if review and not store.settings.git.enabled:
        raise ConfigError("review mode commits to a branch and needs git ([git] enabled = true)")
    store.refresh()
    pending = pending_entries(store)
    todo = pending if entries is None else entries
    cfg = store.settings.consolidation
    result = ConsolidationResult(
        pending_before=len(pending),
        dry_run=dry_run,
        model=llm.model if llm is not None else "extractive",
        reason=reason,
    )
    if not todo:
        return result
    before = _usage(llm)
    drafts: list[Draft] = []
    # Every model call happens before the vault is touched: an error here
    # leaves nothing half-written.
    tell = progress or silent
    groups = plan(store, todo, cfg.batch)
    for drafted_groups, group in enumerate(groups):
        tell("consolidate", drafted_groups, len(groups))
        known = known_facts(store, group.scope, group.contact)
        earlier, items = last_episode(store, group.scope, group.contact)
        if llm is not None:
            try:
                draft = draft_with_llm(store, llm, group, known, items)
            except LLMError as exc:
                raise type(exc)(f"consolidation stopped, nothing was written: {exc}") from None
            draft.shown = [b.id for b in known]
        else:
            draft = draft_extractive(group, items)
        if items and earlier is not None:
            draft.shown.append(earlier)
        check_drops(draft, known, items)
        ratio = len(draft.dropped) / len(draft.given) if draft.given else 0.0
        if ratio > cfg.max_drop_ratio and not force:
            rejection = Rejection(
                scope=group.scope,
                contact=group.contact,
                day=group.day,
                entries=[b.id for b in group.entries],
                given=len(draft.given),
                dropped=draft.dropped,
                reason=(
                    f"would drop {len(draft.dropped)} of {len(draft.given)} given facts "
                    f"({ratio:.0%} > {cfg.max_drop_ratio:.0%})"
                ),
            )
            log.warning(
                "consolidation of %d entries (%s, %s) rejected: %s; dropped: %s",
                len(group.entries),
                group.contact or "no contact",
                group.day,
                rejection.reason,
                "; ".join(draft.dropped),
            )
            result.rejected.append(rejection)
            _state(store).rejected.add(frozenset(rejection.entries))
            continue
        drafts.append(draft)
    tell("consolidate", len(groups), len(groups))
    drafted = _usage(llm)
    if drafts:
        # Writing the facts calls the contradiction judge: count it too.
        _write(store, resolver, drafts, result, llm, dry_run=dry_run, review=review)
    done = _usage(llm)
    result.llm_requests = done[0] - before[0]
    result.prompt_tokens = done[1] - before[1]
    result.completion_tokens = done[2] - before[2]
    result.judge_requests = done[0] - drafted[0]
    result.judge_prompt_tokens = done[1] - drafted[1]
    return result


def _usage(llm: LLMClient | None) -> tuple[int, int, int]:
    if llm is None:
        return (0, 0, 0)
    return (llm.usage.requests, llm.usage.prompt_tokens, llm.usage.completion_tokens)


def _write(
    store: MemoryStore,
    resolver: AutoResolver,
    drafts: list[Draft],
    result: ConsolidationResult,
    llm: LLMClient | None,
    *,
    dry_run: bool,
    review: bool = False,
) -> None:
    subject = "consolidate"
    message: tuple[str, list[tuple[str, str]]] | None = None
    sources_done: list[str] = []
    # Review mode keeps the lock (which first commits human edits) until the
    # branch commit exists: the bytes collected below must still be HEAD's.
    outer = store.writer.writing() if review else nullcontext()
    with outer:
        with (
            resolver.judge_with(llm),
            store.writer.transaction(subject, dry_run=dry_run or review) as tx,
        ):
            held = rv.held(store)
            taken: set[str] = set(held.episodes)
            for draft in drafts:
                sources = [store.catalog.block(b.id) for b in draft.group.entries]
                if any(s is None or not _is_pending(s) or s.id in held.entries for s in sources):
                    # Another process consolidated (or removed, or sent for
                    # review) some of them meanwhile.
                    log.info("skipping a group whose entries changed since drafting")
                    continue
                episode = _write_one(store, tx, draft, result, taken)
                result.episodes.append(episode)
                result.consolidated += episode.entries
                result.dropped.extend(d for d in draft.dropped if d not in result.dropped)
                sources_done.extend(b.id for b in draft.group.entries)
            if tx.ops:
                result.superseded = [v for k, v in tx.trailers if k == "Supersedes"]
                message = _message(result, llm)
                tx.set_message(*message)
        if review and message is not None:
            result.branch, result.commit = rv.create_branch(
                store, tx.changes, message[0], message[1], sources_done
            )
    if dry_run or review:
        result.diff = render_diff(tx.changes)
    elif result.episodes:
        result.commit = store.git.head()


def _message(
    result: ConsolidationResult, llm: LLMClient | None
) -> tuple[str, list[tuple[str, str]]]:
    """Subject and trailers of the consolidation commit."""
    n_facts = len(result.facts)
    title = (
        f"consolidate: {result.consolidated} entries → {len(result.episodes)} "
        f"episode{'s' if len(result.episodes) != 1 else ''}, {n_facts} new "
        f"fact{'s' if n_facts != 1 else ''}"
    )
    ids = [("Memory-Id", e.id) for e in result.episodes]
    ids += [("Memory-Id", m.id) for m in result.facts]
    trailers = [
        *ids[:100],
        *[("Episode", e.path) for e in result.episodes],
        ("Sources", str(result.consolidated)),
        ("Model", result.model),
        ("Extractive", "true" if llm is None else "false"),
        ("Reason", result.reason),
        *[("Supersedes", old) for old in result.superseded],
        *[("Dropped", one_line(d, 300)) for d in result.dropped],
        ("Op", "consolidate"),
    ]
    return title, list(dict.fromkeys(trailers))


def _write_one(
    store: MemoryStore, tx: Transaction, draft: Draft, result: ConsolidationResult, taken: set[str]
) -> EpisodeInfo:
    group = draft.group
    episode_id = store.writer.new_id()
    sessions = sorted({session_id_of(b.path) or "" for b in group.entries} - {""})
    base_fields: list[tuple[str, str]] = [("episode", f"^{episode_id}")]
    if group.contact:
        base_fields.append(("contact", group.contact))
    if sessions:
        base_fields.append(("session", " ".join(sessions)))
    fact_links: list[tuple[FactItem, Memory]] = []
    # OAK: importance by kind, capped by the session's origin (its tool calls:
    # a session that only read is investigation, capped at 5). A plain chat
    # has no tool calls and no origin to record.
    tools = [b.field("tool") or "" for b in group.entries if b.kind == "tool_output"]
    origin = origin_of_tools(tools) if tools else None
    for item in draft.facts:
        sources, speaker, owner = attribute(group.entries, item.sources, item.speaker)
        fields = list(base_fields)
        if sources:
            fields.append(source_field(b.id for b in sources))
        if speaker:
            fields.append(("speaker", speaker))
        try:
            if item.kind == "learning" and item.topic:
                memory = store.learn(item.topic, item.text, scope=group.scope, fields=fields)
            else:
                memory = store.remember(
                    item.text,
                    kind=item.kind,
                    scope=group.scope,
                    fields=fields,
                    importance=kind_importance(item.kind, origin),
                    origin=origin,
                    owner=owner,
                )
        except InvalidInputError as exc:  # a secret, an empty or oversized line
            log.warning("consolidation skipped a fact (%s): %s", exc, item.text[:80])
            continue
        fact_links.append((item, memory))
        if memory.was_new:
            result.facts.append(memory)
    rel = _episode_path(store, group, draft, taken)
    lines = render_episode(store, draft, episode_id, fact_links, sessions)
    tx.create_file(
        rel,
        lines,
        subject=f"episode: {draft.summary[:60]}",
        trailers=memory_trailers(episode_id, "episode", group.scope, "consolidate"),
    )
    ids = [b.id for b in group.entries]
    tx.set_fields_of(
        ids,
        {"consolidated": f"^{episode_id}"},
        subject=f"consolidated {len(group.entries)} entries",
        trailers=[("Op", "consolidate"), *(("Memory-Id", i) for i in ids[:20])],
    )
    store.log(
        log_text(
            len(group.entries),
            group.contact,
            rel,
            episode_id,
            "extractive" if draft.extractive else draft.model,
            draft.summary,
        ),
        category="Consolidation",
        scope=group.scope,
        fields=[source_field([episode_id])],
    )
    return EpisodeInfo(
        id=episode_id,
        path=rel,
        scope=group.scope,
        contact=group.contact,
        entries=len(group.entries),
        facts=[m.id for _, m in fact_links],
        model=draft.model,
        extractive=draft.extractive,
        confidence=draft.confidence,
        summary=draft.summary,
    )


def _episode_path(store: MemoryStore, group: Group, draft: Draft, taken: set[str]) -> str:
    folder = blk.scope_dir(group.scope) / "episodes"
    title = title_of(draft.summary, draft.group.entries)
    for n in range(1, 1000):
        rel = str(folder / episode_name(group.day, title, n))
        if rel in taken or (store.root / rel).exists() or rel in store.catalog.files:
            continue
        taken.add(rel)
        return rel
    raise InvalidInputError(f"too many episodes named {extractive.slugify(title)} on {group.day}")


def _given_link(store: MemoryStore, memory_id: str) -> str:
    path = store.catalog.path_of(memory_id)
    return _link(path, memory_id) if path is not None else f"^{memory_id}"


def _link(path: str, block_id: str, alias: str | None = None) -> str:
    # The full vault path with its extension: `[[MEMORY#^id]]` matches any
    # MEMORY.md once scopes have their own, `[[MEMORY.md#^id]]` only the root's.
    target = f"{path}#^{block_id}"
    return f"[[{target}|{alias}]]" if alias else f"[[{target}]]"


def render_episode(
    store: MemoryStore,
    draft: Draft,
    episode_id: str,
    facts: list[tuple[FactItem, Memory]],
    sessions: list[str],
) -> list[str]:
    """The episode note: YAML frontmatter, title, summary block, facts, open items, sources."""
    group = draft.group
    first, last = group.entries[0].created, group.entries[-1].created
    summary_text = draft.summary or ""
    text = episode_text(summary_text, group.entries, [item.text for item, _ in facts])
    meta: dict[str, Any] = {"kind": "episode", "title": text.title}
    meta["scope"] = group.scope or blk.ROOT_SCOPE
    if group.contact:
        meta["contact"] = group.contact
    meta["sessions"] = sessions
    # Flat properties, no nulls: Obsidian's properties view shows neither a
    # nested map nor an empty value (old episodes' time_range is still read).
    meta["time_from"] = first.isoformat(timespec="seconds")
    meta["time_to"] = last.isoformat(timespec="seconds")
    meta["entries"] = len(group.entries)
    if draft.model:
        meta["model"] = draft.model
    meta["extractive"] = draft.extractive
    if draft.confidence is not None:
        meta["confidence"] = round(draft.confidence, 3)
    if draft.tone:
        meta["tone"] = draft.tone
    meta["abstract"] = text.abstract
    if text.overview:
        meta["overview"] = text.overview
    meta["consolidated"] = datetime.now(UTC).isoformat(timespec="seconds")
    meta["sources"] = [_link(b.path, b.id) for b in group.entries]
    if draft.shown:
        meta["given"] = [_given_link(store, i) for i in draft.shown]
    meta["facts"] = [_link(m.path, m.id) for _, m in facts]
    meta["pending"] = draft.pending
    front = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, width=1000).splitlines()
    summary = draft.summary or "(empty conversation)"
    # The summary is model text: rendered like any memory, so what it holds
    # (fields, ids, headings) stays text and the block reads back as written.
    paragraph = render.render_paragraph(summary, episode_id)
    lines = ["---", *front, "---", f"# {meta['title']}", "", *paragraph, ""]
    if facts:
        lines += ["## Facts", ""]
        lines += [f"- {item.text} ({_link(m.path, m.id)})" for item, m in facts]
        lines.append("")
    if draft.pending:
        lines += ["## Open items", ""]
        lines += [f"- {p}" for p in draft.pending]
        lines.append("")
    lines += ["## Sources", ""]
    for block in group.entries:
        moment = store.clock.local(block.created)
        label = f"{moment:%H:%M:%S} {_role_of(block)}"
        if block.kind == "tool_output":
            label = f"{moment:%H:%M:%S} tool {block.field('tool') or ''}".rstrip()
        lines.append(f"- {_link(block.path, block.id, label)}")
    return lines


def render_diff(changes: Iterable[tuple[str, bytes | None, bytes]]) -> str:
    """A unified diff of (path, old bytes or None, new bytes) triples."""
    out: list[str] = []
    for rel, old, new in sorted(changes, key=lambda c: c[0]):
        old_lines = (old or b"").decode("utf-8", "replace").splitlines(keepends=True)
        new_lines = new.decode("utf-8", "replace").splitlines(keepends=True)
        for line in difflib.unified_diff(
            old_lines,
            new_lines,
            fromfile="/dev/null" if old is None else f"a/{rel}",
            tofile=f"b/{rel}",
        ):
            out.append(line if line.endswith("\n") else line + "\n")
    return "".join(out)


# --------------------------------------------------------------------- auto ----


def maybe_auto_consolidate(
    store: MemoryStore, run: Callable[[list[Block]], ConsolidationResult]
) -> ConsolidationResult | None:
    """After a session write: consolidate the oldest batch once too many are pending,
    else the entries of conversations gone idle (:func:`stale_entries`).

    Failures are logged, never raised (the turn was recorded), and back off for
    a few minutes so a down LLM does not slow every turn.
    """
    cfg = store.settings.consolidation
    if not cfg.auto:
        return None
    state = _state(store)
    if state.running or time.monotonic() < state.backoff_until:
        return None
    pending = pending_entries(store)
    if len(pending) <= cfg.threshold:
        pending = stale_entries(store, pending)
        if not pending:
            return None
    oldest = [b for b in pending if not any(b.id in r for r in state.rejected)][: cfg.batch]
    if not oldest:
        return None
    state.running = True
    try:
        return run(oldest)
    except MdmemError as exc:
        state.backoff_until = time.monotonic() + AUTO_BACKOFF_SECONDS
        log.warning("automatic consolidation failed (retrying later): %s", exc)
        return None
    finally:
        state.running = False


# A lone entry is not yet a conversation: it waits for a reply, the count
# threshold or a manual consolidate.
MIN_STALE_ENTRIES = 2


def stale_entries(
    store: MemoryStore, pending: list[Block] | None = None, *, now: float | None = None
) -> list[Block]:
    """Pending entries of the conversations idle for ``consolidation.stale_minutes``.

    A conversation is a session file; it is idle when the file was last
    written that long ago (the file's time, not the entries' ``created``,
    which an import may set years back). Oldest conversation first.
    """
    minutes = store.settings.consolidation.stale_minutes
    if minutes <= 0:
        return []
    pending = pending_entries(store) if pending is None else pending
    cutoff_ns = int(((time.time() if now is None else now) - minutes * 60) * 1e9)
    by_file: dict[str, list[Block]] = {}
    for block in pending:
        by_file.setdefault(block.path, []).append(block)
    idle: list[tuple[int, list[Block]]] = []
    for path, blocks in by_file.items():
        state = store.catalog.files.get(path)
        if state is None or len(blocks) < MIN_STALE_ENTRIES:
            continue
        written = state.signature[0]
        if 0 < written <= cutoff_ns:
            idle.append((written, blocks))
    idle.sort(key=lambda item: item[0])
    return [b for _, blocks in idle for b in blocks]


def consolidate_stale(
    store: MemoryStore, run: Callable[[list[Block]], ConsolidationResult]
) -> ConsolidationResult | None:
    """Consolidate the conversations gone idle now (for a host's timer); None if none are."""
    entries = stale_entries(store)[: store.settings.consolidation.batch]
    return run(entries) if entries else None
