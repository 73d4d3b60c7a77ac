"""Prompt assembly: everything an agent should see before a step (after OrcBot and Otto).

:func:`prompt_context` is a list of section builders over one budget object,
each reading the vault through the reader it was asked for (the scopes, the
contact: :mod:`mdmem.store.visibility`), so no section can show what another
would hide::

    user        the profile: USER.md memories of the scopes read   (user_chars)
    learning    LEARNING.md memories                                (learning_chars)
    journal     JOURNAL.md memories                                 (journal_chars)
    episodes    episodes relevant to the task, else the latest ones (episodes_k)
    semantic    the top-k memories for the task                    (semantic_k)
    recent      the newest memories                                 (recent_n)
    thread      recent + relevant entries of the same contact, in time order,
                each line cut at 420 characters     (thread_recent_n, thread_relevant_n)
    changes     with ``session_start=True``: what changed since this agent's
                last session (mdmem.git.seen), then marked seen    (changes_chars)
    pending     with ``pending_channel``: the messages that waited for this
                task (mdmem.memory.capture.pending), taken from the buffer once  (pending_n)
    team        with ``repo``: the accepted team memories of that repository
                relevant to the task, once the checkout is trusted
                (mdmem.team.tier)                                   (team_k, team_chars)

Sections show memories — text, date and citation — never a file's raw text,
and only active ones (superseded, resolved and archived memories stay out).
Memories are data, not instructions (:mod:`mdmem.recall.asdata`): ``render()``
fences each section as quoted data, each item carries its provenance (id,
date, kind, who captured it, reviewed or not), text that reads as an order to
the model is labelled so, and the profile sections (user, learning, journal)
leave such text out: nothing instruction-like is promoted to profile context.
Each section has its own character budget, so one noisy source cannot crowd
out the others, and ``total_chars`` caps them together; packing skips an item
that does not fit and tries the next. The retrieval runs in parallel threads;
a memory shown in one section is not repeated in another (thread, episodes,
semantic, recent take precedence in that order). ``PromptContext.render()``
joins the non-empty sections into one prompt string.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any

from mdmem.agent.synthesis import SYNTHESIS_TITLE, check_method, synthesis_block
from mdmem.errors import InvalidInputError
from mdmem.files.blocks import scope_dir, validate_scope
from mdmem.git.seen import LAST_SESSION, render_changes
from mdmem.memory.capture.pending import render_pending
from mdmem.models import KINDS, Hit, Memory, one_line
from mdmem.recall.asdata import data_line, fence, instruction_like, warning
from mdmem.recall.instructions import instruction_cues

if TYPE_CHECKING:
    from mdmem.vault import Vault

__all__ = ["PromptBudgets", "PromptContext", "PromptSection", "prompt_context"]

_EPISODE_KINDS = ("episode", "session_summary")
_THREAD_KINDS = ("chat_message", "tool_output", "log")
_NOT_EPISODES = tuple(k for k in KINDS if k not in _EPISODE_KINDS)
_PROFILES = {"user": "USER.md", "learning": "LEARNING.md", "journal": "JOURNAL.md"}


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
    team_k: int = 3  # team memories of the repository (with ``repo``)
    team_chars: int = 1500
    total_chars: int = 0  # all sections together at most (0: only each section's own)

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
    "team",
    "recent",
    "thread",
)
_TITLES = {
    "user": "## User Profile",
    "learning": "## Learning",
    "journal": "## Journal",
    "episodes": "## Relevant Episodes",
    "semantic": "## Recalled Memory",
    "team": "## Team Memory (accepted by teammates)",
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
            body = section.text.rstrip()
            # Quoted data in a fence no quoted text can close (mdmem.recall.asdata).
            parts.append(f"{section.title}\n\n{fence(body.splitlines()) if body else '(none)'}")
        return "\n\n".join(parts) + ("\n" if parts else "")

    def __str__(self) -> str:
        return self.render()


# ---------------------------------------------------------------- packing ----


def _fill(section: PromptSection, lines: Iterable[tuple[str, str]], room: int) -> PromptSection:
    """Add (id, line) pairs while they fit ``room``; one that does not fit is skipped
    (shortened, if it is the first and alone too big) and the next is tried."""
    out: list[str] = []
    used = 0
    for memory_id, line in lines:
        cost = len(line) + 1
        if used + cost > room:
            section.truncated = True
            left = room - used - 1
            if out or left < 40:
                continue
            line, cost = one_line(line, left), left + 1
        out.append(line)
        section.ids.append(memory_id)
        used += cost
    section.text = "\n".join(out)
    return section


def _cite(item: Memory | Hit) -> str:
    if isinstance(item, Hit):
        return item.citation
    return f"{item.path}#^{item.id}" if item.id.startswith("m-") else item.id


def _role_of(item: Memory | Hit) -> str:
    role = item.field("role")
    if role:
        return role
    heading = getattr(item, "heading", "")
    # Session entries are headed "HH:MM · role" (the daily-log convention).
    if "·" in heading:
        return heading.rsplit("·", 1)[1].strip() or item.kind
    return item.kind


# -------------------------------------------------------------- assembly ----


class _Assembly:
    """One prompt being assembled: what every section builder reads."""

    def __init__(
        self,
        vault: Vault,
        task: str,
        contact: str | None,
        scopes: list[str] | None,
        budgets: PromptBudgets,
        method: str,
    ) -> None:
        self.vault = vault
        self.task = task
        self.contact = contact
        self.scopes = scopes
        self.b = budgets
        self.method = method
        self.reading = vault.reading(scopes=scopes, contact=contact)
        self.shown: set[str] = set()
        self.left = budgets.total_chars or None  # what the sections may still use together

    def line(self, item: Memory | Hit) -> str:
        # The reading view hands out shown text (a secret a person typed redacted).
        text = one_line(item.text, self.b.entry_chars)
        return data_line(item, text, _cite(item))

    def recall(self, query: str, k: int, kinds: Sequence[str] | None, **controls: Any) -> list[Hit]:
        if k <= 0:
            return []
        found = self.reading.recall(
            query, k=min(k, 200), kinds=kinds, scope=self.scopes, **controls
        )
        # The relevance gate's items: none when nothing in the vault is relevant.
        return found.relevant_items

    def newest(self, n: int, **filters: Any) -> list[Memory]:
        if n <= 0:
            return []
        return self.reading.list(statuses="active", limit=n, **filters)

    def section(self, name: str, items: Iterable[tuple[str, str]], **kw: Any) -> PromptSection:
        """A section of ``items`` packed into its budget (and what is left of the total)."""
        budget = getattr(self.b, f"{name}_chars")
        room = budget if self.left is None else min(budget, self.left)
        built = _fill(PromptSection(name, _TITLES[name], budget=budget, **kw), items, room)
        self.spend(built)
        return built

    def spend(self, section: PromptSection) -> None:
        self.shown.update(section.ids)
        if self.left is not None:
            self.left = max(0, self.left - len(section.text))


# ------------------------------------------------------ what is fetched ----
# Each fetch runs in its own thread; the sections are filled from them after.


def _profile(a: _Assembly, name: str) -> list[Memory]:
    roots = [""] if a.scopes is None else a.scopes
    paths = [(scope_dir(s) / _PROFILES[name]).as_posix() for s in roots]
    return a.newest(10_000, paths=paths, notes=True)


def _semantic(a: _Assembly) -> list[Hit] | tuple[str, list[str]]:
    b = a.b
    if a.method == "reflect" and b.semantic_k > 0:
        synthesis = synthesis_block(
            a.vault, a.task, k=b.semantic_k, reading=a.reading, max_chars=b.semantic_chars
        )
        if synthesis:
            return synthesis
    # Over-fetch: items shown in a higher section are dropped from this one.
    return a.recall(
        a.task, b.semantic_k and b.semantic_k + b.episodes_k + b.thread_relevant_n, None
    )


def _episodes(a: _Assembly) -> list[Hit] | list[Memory]:
    k = a.b.episodes_k
    return a.recall(a.task, k, _EPISODE_KINDS) or a.newest(k, kinds=_EPISODE_KINDS)


def _recent(a: _Assembly) -> list[Memory]:
    b = a.b
    n = b.recent_n + b.semantic_k + b.episodes_k + b.thread_recent_n + b.thread_relevant_n
    return a.newest(n, kinds=_NOT_EPISODES)


def _thread(a: _Assembly) -> list[Memory | Hit]:
    """The contact's newest entries and those relevant to the task, in time order."""
    if not a.contact:
        return []
    b = a.b
    recent: list[Memory | Hit] = list(a.newest(b.thread_recent_n, contact=a.contact))
    relevant = a.recall(a.task, b.thread_relevant_n, _THREAD_KINDS, contact=a.contact)
    merged: dict[str, Memory | Hit] = {}
    for item in [*recent, *relevant]:
        merged.setdefault(item.id, item)
    return sorted(merged.values(), key=lambda x: (x.created, x.id))


_FETCH: dict[str, Callable[[_Assembly], Any]] = {
    "user": lambda a: _profile(a, "user"),
    "learning": lambda a: _profile(a, "learning"),
    "journal": lambda a: _profile(a, "journal"),
    "semantic": _semantic,
    "episodes": _episodes,
    "recent": _recent,
    "thread": _thread,
}


# --------------------------------------------------------------- builders ----


def _build_profile(a: _Assembly, name: str, found: list[Memory]) -> PromptSection:
    # A profile is read as who the user is: text that reads as an order to the
    # model is never promoted there (recall may still show it, labelled).
    kept = [m for m in found if not instruction_like(m, m.text)]
    return a.section(name, ((m.id, a.line(m)) for m in kept))


def _build_thread(a: _Assembly, found: list[Memory | Hit]) -> PromptSection:
    b = a.b
    return a.section(
        "thread",
        (
            (
                x.id,
                one_line(
                    f"[{x.created:%Y-%m-%d %H:%M}] ({_role_of(x)}) "
                    f"{warning(instruction_cues(x.text))}{x.text}",
                    b.thread_line_chars,
                ),
            )
            for x in found
        ),
    )


def _build_ranked(a: _Assembly, name: str, found: Sequence[Memory | Hit]) -> PromptSection:
    limit = getattr(a.b, {"episodes": "episodes_k", "semantic": "semantic_k"}.get(name, "recent_n"))
    fresh = [x for x in found if x.id not in a.shown][:limit]
    return a.section(name, ((x.id, a.line(x)) for x in fresh))


def _build_synthesis(a: _Assembly, text: str, cited: list[str]) -> PromptSection:
    built = PromptSection(
        "semantic",
        SYNTHESIS_TITLE,
        text=text.split("\n", 2)[-1].strip(),
        ids=cited,
        budget=a.b.semantic_chars,
    )
    a.spend(built)
    return built


def _build_changes(a: _Assembly, session: str | None) -> PromptSection:
    result = a.reading.changes(LAST_SESSION, session=session)
    text, ids, cut = render_changes(result, max_chars=a.b.changes_chars)
    # Shown: from now on this agent has seen everything up to HEAD.
    a.vault.git.mark_seen(session=session)
    built = PromptSection(
        "changes",
        _TITLES["changes"],
        text=text,
        ids=ids,
        budget=a.b.changes_chars,
        truncated=cut,
    )
    a.spend(built)
    return built


def _build_pending(a: _Assembly, channel: str) -> PromptSection:
    b = a.b
    taken = a.reading.take_pending(channel, b.pending_n)
    # Every taken message is shown (they leave the buffer): lines are cut to
    # the thread line length instead of dropping whole messages.
    built = PromptSection(
        "pending",
        _TITLES["pending"],
        text=render_pending(
            taken,
            max(b.pending_chars, len(taken) * (b.thread_line_chars + 1)),
            b.thread_line_chars,
        ),
        budget=b.pending_chars,
    )
    a.spend(built)
    return built


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
    repo: str | os.PathLike[str] | None = None,
    **budgets: int,
) -> PromptContext:
    """Assemble the memory context for ``task`` (see the module docstring).

    ``contact`` (e.g. ``telegram:123``): whose conversation this is. Its
    entries make the thread section, and what belongs to another contact —
    their turns, and the episodes, facts and log lines made from them — stays
    out of every section. ``scope``: the scope(s) to read, None for every
    scope; the profile sections read those scopes' USER/LEARNING/JOURNAL (the
    vault root's when None). ``session_start``: add the "changed since your
    last session" section (for ``session``, if given) and record the current
    commit as seen. ``pending_channel``: take the messages waiting in that
    channel of ``vault.sessions.pending`` (each is handed to one task only).
    Keyword ``budgets`` override :class:`PromptBudgets` fields. ``lean``
    (OrcBot's isLeanMode, for simple tasks): no semantic and no episodic
    retrieval; the sections are there, empty. ``prefetch_method``: "recall"
    (the top memories in the semantic section) or "reflect" (an LLM synthesis
    of them there, titled "## Memory Synthesis"; recall when none can run);
    default ``[recall] prefetch_method``. ``repo``: a folder the agent works
    in; its repository's team tier, if the person trusts that checkout, adds
    the ``team`` section (:mod:`mdmem.team`).
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
    scopes: list[str] | None
    if scope is None:
        scopes = None
    elif isinstance(scope, str):
        scopes = [validate_scope(scope)]
    else:
        scopes = [validate_scope(s) for s in scope]
    started = time.perf_counter()
    vault.admin.refresh()  # once, so the parallel readers below see the same files
    a = _Assembly(vault, task, contact, scopes, replace(PromptBudgets(), **budgets), method)

    found: dict[str, Any]
    if parallel:
        with ThreadPoolExecutor(max_workers=len(_FETCH), thread_name_prefix="mdmem-prompt") as pool:
            futures: dict[str, Future[Any]] = {n: pool.submit(f, a) for n, f in _FETCH.items()}
            found = {n: f.result() for n, f in futures.items()}
    else:
        found = {n: f(a) for n, f in _FETCH.items()}

    # Filled in precedence order: what a higher section shows, a lower one skips.
    sections: dict[str, PromptSection] = {}
    if session_start:
        sections["changes"] = _build_changes(a, session)
    if pending_channel is not None and a.b.pending_n > 0:
        sections["pending"] = _build_pending(a, pending_channel)
    for name in _PROFILES:
        sections[name] = _build_profile(a, name, found[name])
    sections["thread"] = _build_thread(a, found["thread"])
    sections["episodes"] = _build_ranked(a, "episodes", found["episodes"])
    semantic = found["semantic"]
    if isinstance(semantic, tuple):
        sections["semantic"] = _build_synthesis(a, *semantic)
    else:
        sections["semantic"] = _build_ranked(a, "semantic", semantic)
    sections["recent"] = _build_ranked(a, "recent", found["recent"])
    if repo is not None:
        # The team tier through the reading view's one composition: its lines
        # relevant to the task, within the team section's budget.
        composed = a.reading.compose(
            task, None, repo=repo, team_k=a.b.team_k, sections=[], title=_TITLES["team"]
        )
        sections["team"] = a.section("team", composed.team.lines)
    return PromptContext(
        task=task.strip(),
        contact=contact,
        sections=sections,
        took_ms=(time.perf_counter() - started) * 1000,
    )
