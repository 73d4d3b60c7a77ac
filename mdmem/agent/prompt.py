"""Prompt assembly: everything an agent should see before a step (after OrcBot and Otto).

:func:`prompt_context` gathers, for one task, the sections of OrcBot's
``assemblePromptContext`` with Otto's top-k injection::

    user        tail of USER.md                      (user_chars)
    learning    tail of LEARNING.md                  (learning_chars)
    journal     tail of JOURNAL.md                   (journal_chars)
    episodes    episodes relevant to the task, else the latest ones (episodes_k)
    semantic    the top-k memories for the task      (semantic_k)
    recent      the newest memories                  (recent_n)
    thread      recent + relevant entries from the same contact, deduplicated,
                each line cut at 420 characters      (thread_recent_n, thread_relevant_n)
    changes     with ``session_start=True``: what changed since this agent's
                last session (mdmem.git.seen), then marked seen   (changes_chars)
    pending     with ``pending_channel``: the messages that waited for this
                task (mdmem.memory.pending), taken from the buffer once  (pending_n)

Every section has its own character budget, so one noisy source cannot crowd
out the others; the retrieval sections run in parallel threads. A memory
shown in one section is not repeated in another (thread, episodes, semantic,
recent take precedence in that order). When a ``contact`` is given, conversation
entries (chat messages, tool outputs, logs) tagged with another contact stay
out of every section. ``PromptContext.render()`` joins the
non-empty sections into one prompt string.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mdmem.agent.synthesis import SYNTHESIS_TITLE, check_method, synthesis_block
from mdmem.errors import InvalidInputError
from mdmem.files.blocks import scope_dir, validate_scope
from mdmem.git.seen import LAST_SESSION, render_changes
from mdmem.memory.pending import render_pending
from mdmem.models import Block, Hit, one_line
from mdmem.store.secret_guard import scrub

if TYPE_CHECKING:
    from mdmem.vault import Vault

__all__ = ["PromptBudgets", "PromptContext", "PromptSection", "prompt_context"]

_EPISODE_KINDS = ("episode", "session_summary")
_THREAD_KINDS = ("chat_message", "tool_output", "log")


@dataclass(frozen=True)
class PromptBudgets:
    """Sizes of each section. Character budgets cap the rendered section text."""

    user_chars: int = 2000  # OrcBot memoryExtendedContextLimit
    learning_chars: int = 1500  # learningContextLimit
    journal_chars: int = 1500  # journalContextLimit
    episodes_chars: int = 2000
    semantic_chars: int = 3000
    recent_chars: int = 3000
    thread_chars: int = 3000
    episodes_k: int = 5  # memoryEpisodicLimit
    semantic_k: int = 3  # Otto injects the top 3
    recent_n: int = 20  # memoryContextLimit
    thread_recent_n: int = 8  # threadContextRecentN
    thread_relevant_n: int = 8  # threadContextRelevantN
    thread_line_chars: int = 420  # threadContextMaxLineLen
    entry_chars: int = 1500  # memoryContentMaxLength: one memory's text at most
    changes_chars: int = 2000  # "what changed since the last session", at session start
    pending_n: int = 20  # waiting messages handed to a task at most (as recent_n)
    pending_chars: int = 3000

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidInputError(f"{f.name} must be a non-negative integer")


@dataclass
class PromptSection:
    """One section: its rendered text and the memory ids it shows."""

    name: str
    title: str
    text: str = ""
    ids: list[str] = field(default_factory=list)
    budget: int = 0
    truncated: bool = False  # something was left out or shortened to fit

    def __bool__(self) -> bool:
        return bool(self.text.strip())


_ORDER = (
    "user",
    "changes",
    "pending",
    "learning",
    "journal",
    "episodes",
    "semantic",
    "recent",
    "thread",
)
_TITLES = {
    "user": "## User Profile",
    "learning": "## Learning",
    "journal": "## Journal",
    "episodes": "## Relevant Episodes",
    "semantic": "## Recalled Memory",
    "recent": "## Recent Memory",
    "thread": "## Thread Context",
    "changes": "## Changed since your last session",
    "pending": "## Messages While You Were Busy",
}


@dataclass
class PromptContext:
    """The assembled context for one task; ``render()`` gives the prompt text."""

    task: str
    contact: str | None
    sections: dict[str, PromptSection]
    took_ms: float = 0.0

    def __getitem__(self, name: str) -> PromptSection:
        return self.sections[name]

    @property
    def ids(self) -> list[str]:
        """Every memory id shown, in render order."""
        return [i for name in _ORDER if name in self.sections for i in self.sections[name].ids]

    def render(self, *, include_empty: bool = False) -> str:
        parts = []
        for name in _ORDER:
            section = self.sections.get(name)
            if section is None or (not section and not include_empty):
                continue
            parts.append(f"{section.title}\n\n{section.text.rstrip() or '(none)'}")
        return "\n\n".join(parts) + ("\n" if parts else "")

    def __str__(self) -> str:
        return self.render()


# ---------------------------------------------------------------- helpers ----


def _fill(section: PromptSection, lines: Iterable[tuple[str, str]]) -> PromptSection:
    """Add (id, line) pairs while they fit the budget; shorten the first if it alone is too big."""
    out: list[str] = []
    used = 0
    for memory_id, line in lines:
        cost = len(line) + 1
        if used + cost > section.budget:
            room = section.budget - used - 1
            if not out and room >= 40:
                out.append(one_line(line, room))
                section.ids.append(memory_id)
            section.truncated = True
            break
        out.append(line)
        section.ids.append(memory_id)
        used += cost
    section.text = "\n".join(out)
    return section


def _memory_line(block: Block | Hit, limit: int, safe: Callable[[str], str]) -> str:
    anchor = f"^{block.id}" if block.id.startswith("m-") else safe(block.heading)
    cite = f"{block.path}#{anchor}" if anchor else block.path
    text = one_line(safe(block.text), limit)
    return f"- {text} ({cite}; {block.kind}; {block.created:%Y-%m-%d})"


def _tail(path: Path, budget: int, safe: Callable[[str], str]) -> tuple[str, bool]:
    """The last ``budget`` characters of a markdown file, cut at a line start,
    without its frontmatter; secrets typed into it redacted before the cut,
    so that no part of one is left at the edge."""
    try:
        text = safe(path.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return "", False
    if text.startswith("---\n"):
        end = text.find("\n---", 4)
        if end != -1:
            text = text[text.find("\n", end + 1) + 1 :] if "\n" in text[end + 1 :] else ""
    text = text.strip()
    if len(text) <= budget:
        return text, False
    tail = text[-budget:]
    cut = tail.find("\n")
    if 0 <= cut < len(tail) - 1:
        tail = tail[cut + 1 :]
    return tail.strip(), True


def _contact_of(block: Block, frontmatter: Callable[[str], dict[str, Any]]) -> str | None:
    value = block.field("contact")
    if value:
        return value.strip()
    contact = frontmatter(block.path).get("contact")
    return str(contact).strip() if contact else None


def _role_of(block: Block) -> str:
    role = block.field("role")
    if role:
        return role
    # Session entries are headed "HH:MM · role" (the daily-log convention).
    if "·" in block.heading:
        return block.heading.rsplit("·", 1)[1].strip() or block.kind
    return block.kind


# ------------------------------------------------------------------ public ----


def prompt_context(
    vault: Vault,
    task: str,
    contact: str | None = None,
    *,
    scope: str | Sequence[str] | None = None,
    parallel: bool = True,
    session_start: bool = False,
    session: str | None = None,
    pending_channel: str | None = None,
    lean: bool = False,
    prefetch_method: str | None = None,
    **budgets: int,
) -> PromptContext:
    """Assemble the memory context for ``task`` (see the module docstring).

    ``contact`` (e.g. ``telegram:123``) selects the thread context: entries
    whose ``[contact:: …]`` field or file frontmatter ``contact`` matches.
    ``scope``: the scope(s) to read, None for every scope; the file tails come
    from those scopes' USER/LEARNING/JOURNAL (the vault root's when None).
    ``session_start``: add the "changed since your last session" section
    (for ``session``, if given) and record the current commit as seen, so
    the next session start lists only what comes after. ``pending_channel``:
    take the messages waiting in that channel of ``vault.sessions.pending`` (each is
    handed to one task only) into their own section.
    Keyword ``budgets`` override :class:`PromptBudgets` fields.
    ``lean`` (OrcBot's isLeanMode, for simple tasks): no semantic and no
    episodic retrieval; the sections are there, empty.
    ``prefetch_method``: "recall" (the top memories in the semantic section)
    or "reflect" (an LLM synthesis of them there, titled "## Memory
    Synthesis"; recall when none can run); default ``[recall] prefetch_method``.
    """
    method = check_method(prefetch_method, vault)
    if not isinstance(lean, bool):
        raise InvalidInputError("lean must be true or false")
    if lean:
        budgets = {**budgets, "semantic_k": 0, "episodes_k": 0}
    if not isinstance(task, str) or not task.strip():
        raise InvalidInputError("prompt_context needs a non-empty task")
    known = {f.name for f in fields(PromptBudgets)}
    unknown = sorted(set(budgets) - known)
    if unknown:
        raise InvalidInputError(f"unknown budget(s): {', '.join(unknown)}")
    b = replace(PromptBudgets(), **budgets)
    scopes: list[str] | None
    if scope is None:
        scopes = None
    elif isinstance(scope, str):
        scopes = [validate_scope(scope)]
    else:
        scopes = [validate_scope(s) for s in scope]
    started = time.perf_counter()
    vault.admin.refresh()  # once, so the parallel readers below see the same files

    def safe(text: str) -> str:
        """Text as a prompt may carry it: a secret a person typed into the
        vault (the writer never stores one) is redacted."""
        return scrub(text, vault.settings.secrets)

    catalog = vault.admin.store.catalog

    def frontmatter(path: str) -> dict[str, Any]:
        state = catalog.files.get(path)
        return state.parsed.frontmatter if state is not None else {}

    def admitted(block: Block) -> bool:
        return block.status == "active" and (scopes is None or block.scope in scopes)

    def recall(query: str, k: int, kinds: Sequence[str] | None) -> list[Hit]:
        if k <= 0:
            return []
        return list(vault.recall(query, k=min(k, 200), kinds=kinds, scope=scopes).items)

    def newest(n: int, keep: Callable[[Block], bool]) -> list[Block]:
        if n <= 0:
            return []
        pool = (x for x in catalog.blocks(memories_only=True) if admitted(x) and keep(x))
        return heapq.nlargest(n, pool, key=lambda x: (x.created, x.id))

    def tails() -> dict[str, tuple[str, bool]]:
        roots = [""] if scopes is None else scopes
        out: dict[str, tuple[str, bool]] = {}
        for name, filename, budget in (
            ("user", "USER.md", b.user_chars),
            ("learning", "LEARNING.md", b.learning_chars),
            ("journal", "JOURNAL.md", b.journal_chars),
        ):
            parts: list[str] = []
            cut = False
            share = budget // max(len(roots), 1)
            for s in roots:
                text, was_cut = _tail(vault.root / scope_dir(s) / filename, share, safe)
                cut = cut or was_cut
                if text:
                    parts.append(f"[{s}]\n{text}" if len(roots) > 1 else text)
            out[name] = ("\n\n".join(parts), cut)
        return out

    def thread_blocks() -> tuple[list[Block], list[Block]]:
        if not contact:
            return [], []
        mine: Callable[[Block], bool] = lambda x: _contact_of(x, frontmatter) == contact  # noqa: E731
        recent = newest(b.thread_recent_n, mine)
        relevant: list[Block] = []
        if b.thread_relevant_n > 0:
            hits = recall(task, min(200, b.thread_relevant_n * 6), list(_THREAD_KINDS))
            for hit in hits:
                block = catalog.block(hit.id)
                if block is not None and mine(block):
                    relevant.append(block)
                if len(relevant) >= b.thread_relevant_n:
                    break
        return recent, relevant

    jobs: dict[str, Callable[[], Any]] = {
        "tails": tails,
        # Over-fetch: items shown in a higher section are dropped from this one.
        "semantic": lambda: (
            (
                method == "reflect"
                and b.semantic_k > 0
                and synthesis_block(
                    vault, task, k=b.semantic_k, scope=scopes, max_chars=b.semantic_chars
                )
            )
            or recall(
                task, b.semantic_k and b.semantic_k + b.episodes_k + b.thread_relevant_n, None
            )
        ),
        "episodes": lambda: (
            recall(task, b.episodes_k, list(_EPISODE_KINDS))
            or newest(b.episodes_k, lambda x: x.kind in _EPISODE_KINDS)
        ),
        "recent": lambda: newest(
            b.recent_n + b.semantic_k + b.episodes_k + b.thread_recent_n + b.thread_relevant_n,
            lambda x: x.kind not in _EPISODE_KINDS,
        ),
        "thread": thread_blocks,
    }
    results: dict[str, Any] = {}
    if parallel:
        with ThreadPoolExecutor(max_workers=len(jobs), thread_name_prefix="mdmem-prompt") as pool:
            futures: dict[str, Future[Any]] = {k: pool.submit(f) for k, f in jobs.items()}
            results = {k: f.result() for k, f in futures.items()}
    else:
        results = {k: f() for k, f in jobs.items()}

    sections: dict[str, PromptSection] = {}
    for name, (text, cut) in results["tails"].items():
        sections[name] = PromptSection(
            name, _TITLES[name], text=text, budget=getattr(b, f"{name}_chars"), truncated=cut
        )

    shown: set[str] = set()

    # Thread: recent and relevant from the same contact, merged in time order.
    recent_t, relevant_t = results["thread"]
    merged: dict[str, Block] = {}
    for item in [*recent_t, *relevant_t]:
        merged.setdefault(item.id, item)
    thread_items = sorted(merged.values(), key=lambda x: (x.created, x.id))
    sections["thread"] = _fill(
        PromptSection("thread", _TITLES["thread"], budget=b.thread_chars),
        (
            (
                x.id,
                one_line(
                    f"[{x.created:%Y-%m-%d %H:%M}] ({_role_of(x)}) {safe(x.text)}",
                    b.thread_line_chars,
                ),
            )
            for x in thread_items
        ),
    )
    shown.update(sections["thread"].ids)

    def elsewhere(x: Block | Hit) -> bool:
        """A conversation entry with another contact (kept out when a contact is given)."""
        if not contact or x.kind not in _THREAD_KINDS:
            return False
        block = x if isinstance(x, Block) else catalog.block(x.id)
        other = _contact_of(block, frontmatter) if block is not None else None
        return other is not None and other != contact

    synthesis = results["semantic"] if isinstance(results["semantic"], tuple) else None
    if synthesis is not None:
        text, cited = synthesis
        sections["semantic"] = PromptSection(
            "semantic",
            SYNTHESIS_TITLE,
            text=text.split("\n", 2)[-1].strip(),
            ids=cited,
            budget=b.semantic_chars,
        )
    for name, items, limit in (
        ("episodes", results["episodes"], b.episodes_k),
        ("semantic", [] if synthesis is not None else results["semantic"], b.semantic_k),
        ("recent", results["recent"], b.recent_n),
    ):
        if name == "semantic" and synthesis is not None:
            shown.update(sections["semantic"].ids)
            continue
        fresh = [x for x in items if x.id not in shown and not elsewhere(x)][:limit]
        section = _fill(
            PromptSection(name, _TITLES[name], budget=getattr(b, f"{name}_chars")),
            ((x.id, _memory_line(x, b.entry_chars, safe)) for x in fresh),
        )
        shown.update(section.ids)
        sections[name] = section

    if session_start:
        sections["changes"] = _changes_section(vault, b, scopes, session, safe)
    if pending_channel is not None and b.pending_n > 0:
        taken = vault.sessions.pending.take(channel=pending_channel, limit=b.pending_n)
        # Every taken message is shown (they leave the buffer): lines are cut
        # to the thread line length instead of dropping whole messages.
        sections["pending"] = PromptSection(
            "pending",
            _TITLES["pending"],
            text=safe(
                render_pending(
                    taken,
                    max(b.pending_chars, len(taken) * (b.thread_line_chars + 1)),
                    b.thread_line_chars,
                )
            ),
            budget=b.pending_chars,
        )

    return PromptContext(
        task=task.strip(),
        contact=contact,
        sections=sections,
        took_ms=(time.perf_counter() - started) * 1000,
    )


def _changes_section(
    vault: Vault,
    b: PromptBudgets,
    scopes: list[str] | None,
    session: str | None,
    safe: Callable[[str], str],
) -> PromptSection:
    result = vault.git.changes(LAST_SESSION, session=session)

    def scope_of(memory_id: str) -> str | None:
        block = vault.admin.store.catalog.block(memory_id)
        return block.scope if block is not None else None

    text, ids, cut = render_changes(
        result, scopes=scopes, scope_of=scope_of, max_chars=b.changes_chars
    )
    # Shown: from now on this agent has seen everything up to HEAD.
    vault.git.mark_seen(session=session)
    return PromptSection(
        "changes",
        _TITLES["changes"],
        text=safe(text),
        ids=ids,
        budget=b.changes_chars,
        truncated=cut,
    )
