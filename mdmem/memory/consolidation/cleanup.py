"""The whole-store cleanup pass: an LLM reads a scope's MEMORY and USER files and
merges duplicates, retires superseded facts and settles contradictions (operator_use's
``MemoryConsolidateWorkflow``, done the mdmem way).

1. **Batches.** The scope's active memories in ``MEMORY.md`` and ``USER.md``
   are listed (``id [kind, date]: text``), each followed by its near
   neighbours (cosine >= 0.6 on the cached embeddings, so duplicates far
   apart in the files share a batch), and cut into batches of at most
   ``[cleanup] batch_chars`` characters, one model call each, so each fits
   the context window. The memories are DATA in the prompt, never
   instructions (:func:`mdmem.providers.llm.data_block`).
2. **A plan, checked.** The model answers ``{"actions": [...]}`` with
   ``merge`` (ids + optional merged text) and ``retire`` (id, optionally the
   id that replaces it). Its output is untrusted: every id must be in the
   batch it was shown and used once, merged text passes the same checks and
   secrets guard as any memory text (``[key:: value]`` in it stays text),
   reasons go through the commit-message guard; a failing action is dropped
   and reported. A batch whose plan would retire more than
   ``max_retire_ratio`` of it is rejected as a whole.
3. **Ordinary changes, one commit.** A merge with text is a
   :meth:`~mdmem.store.memories.MemoryStore.supersede` of the first id (kind,
   tags and scope stay the old memory's), and each other id is marked
   ``[status:: superseded] [by:: ^survivor]``; a retire is the same mark, or
   ``[status:: resolved]`` without a successor. Every change of the run is one
   commit (``Op: cleanup``) with a ``Reason:`` trailer per action. With
   ``review`` it is one commit on a review branch ``mdmem/cleanup-<date>``
   (:mod:`mdmem.git.review`) that a person merges or rejects; the working
   tree is not touched.
4. **When.** On demand, or ``cleanup(if_due=True)`` from a host's scheduler:
   it runs when ``interval_hours`` (168, weekly) passed since the scope's
   last run (kept in the state dir; losing it costs one early run).
"""

from __future__ import annotations

import json
import logging
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from mdmem.errors import InvalidInputError, LLMNotConfiguredError, MdmemError
from mdmem.files import blocks as blk
from mdmem.files.textfile import atomic_write
from mdmem.git import review as rv
from mdmem.memory.consolidation.consolidate import render_diff
from mdmem.models import Block, one_line
from mdmem.providers.llm import DATA_INSTRUCTIONS, LLMClient, data_block
from mdmem.store.inputs import check_chars
from mdmem.store.memories import MemoryStore
from mdmem.store.secret_guard import refuse_in_metadata

__all__ = ["CLEANUP_SYSTEM", "CleanupResult", "cleanup", "cleanup_due", "last_run"]

log = logging.getLogger("mdmem")

_FILES = ("MEMORY.md", "USER.md")
_MAX_REASON = 300
_MIN_ACTIONS = 10  # actions a batch's plan may hold whatever its size
_STATE_FILE = "cleanup.json"

CLEANUP_SYSTEM = (
    "You are mdmem's memory cleanup pass. Below are stored long-term memories of one "
    "scope, one per line as `id [kind, date]: text`. Find only these problems:\n"
    "- duplicates (the same fact stated more than once): merge them;\n"
    "- a fact a newer memory replaced (an old value, a reversed decision): retire the old "
    "one by the newer;\n"
    "- contradictions: keep the memory that is right (usually the newer) and retire the "
    "other by it.\n"
    "Leave everything else alone; when in doubt, change nothing.\n"
    f"{DATA_INSTRUCTIONS}\n"
    'Reply with one JSON object: {"actions": [{"op": "merge", "ids": ["<id>", "<id>"], '
    '"text": "<the merged memory, or omit to keep the first as it is>", "reason": "<why>"}, '
    '{"op": "retire", "id": "<id>", "by": "<id of the memory that replaces it>", '
    '"reason": "<why>"}]}. Use only ids from the list. An empty list means nothing to do.'
)


@dataclass
class CleanupResult:
    """What a cleanup run did (or, dry, would do)."""

    scope: str
    memories: int = 0  # active memories looked at
    batches: int = 0
    actions: list[dict[str, Any]] = field(default_factory=list)  # the ones applied
    rejected: list[dict[str, Any]] = field(default_factory=list)  # action + why
    retired: list[str] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    commit: str | None = None
    branch: str | None = None
    diff: str = ""
    dry_run: bool = False
    skipped: str | None = None  # why nothing ran (not due, no LLM)
    model: str = ""


def last_run(store: MemoryStore, scope: str | None = None) -> datetime | None:
    """When the scope's last (non-dry) cleanup ran, from the state dir."""
    label = blk.validate_scope(scope) or blk.ROOT_SCOPE
    value = _read_state(store).get(label)
    try:
        return datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None


def cleanup_due(
    store: MemoryStore, scope: str | None = None, *, now: datetime | None = None
) -> bool:
    """Whether ``interval_hours`` passed since the scope's last cleanup (or it never ran)."""
    last = last_run(store, scope)
    if last is None:
        return True
    interval = timedelta(hours=max(0.0, store.settings.cleanup.interval_hours))
    return (now or datetime.now(UTC)) - last >= interval


def cleanup(
    store: MemoryStore,
    llm: LLMClient | None,
    *,
    scope: str | None = None,
    dry_run: bool = False,
    review: bool = False,
    if_due: bool = False,
) -> CleanupResult:
    """Run the cleanup pass over one scope; see the module doc."""
    scope = blk.validate_scope(scope)
    result = CleanupResult(scope=scope or blk.ROOT_SCOPE, dry_run=dry_run)
    if if_due and not cleanup_due(store, scope):
        last = last_run(store, scope)
        result.skipped = f"not due: last run {last.isoformat() if last else 'never'}"
        return result
    if llm is None:
        if if_due:
            result.skipped = "no LLM configured"
            return result
        raise LLMNotConfiguredError(
            "cleanup needs an LLM: set [llm] base_url and model (or OPENAI_BASE_URL and "
            "MDMEM_LLM_MODEL)"
        )
    result.model = llm.model
    memories = _neighbours_together(store, _memories(store, scope))
    result.memories = len(memories)
    batches = _batches(memories, max(1_000, store.settings.cleanup.batch_chars))
    result.batches = len(batches)
    # Every model call happens before anything is written: a failing call
    # (timeout, bad JSON twice) leaves the vault as it was.
    plans = [(batch, _plan(store, llm, batch, result)) for batch in batches]
    review = review and not dry_run
    _apply(store, plans, result, dry_run=dry_run, review=review)
    if not dry_run:
        _record_run(store, scope)
    return result


# -- reading ------------------------------------------------------------------


def _memories(store: MemoryStore, scope: str) -> list[Block]:
    store.refresh()
    out: list[Block] = []
    for name in _FILES:
        rel = str(blk.scope_dir(scope) / name)
        state = store.catalog.files.get(rel)
        if state is None:
            continue
        out.extend(b for b in state.parsed.blocks if b.is_memory and b.status == "active")
    return out


# Memories at least this similar (cosine) are listed next to each other, so a
# duplicate or contradiction lands in one batch even when the files hold them
# far apart. MiniLM puts restatements of one fact above ~0.7 and related facts
# of one subject above ~0.6.
_NEAR = 0.6


def _neighbours_together(store: MemoryStore, memories: list[Block]) -> list[Block]:
    """File order, except that each memory pulls its near neighbours in after it.

    Uses the cached embeddings; without vectors the file order stays.
    """
    if len(memories) < 3:
        return memories
    vectors = [store.embedding.cached_vector(b) for b in memories]
    if any(v is None for v in vectors):
        return memories
    import numpy as np  # with vectors on, numpy is loaded already

    matrix = np.stack([np.asarray(v, dtype=np.float32) for v in vectors])
    sims = matrix @ matrix.T
    order: list[int] = []
    placed = np.zeros(len(memories), dtype=bool)
    for i in range(len(memories)):
        if placed[i]:
            continue
        placed[i] = True
        order.append(i)
        for j in np.argsort(-sims[i], kind="stable"):
            if sims[i, j] < _NEAR:
                break
            if not placed[j]:
                placed[j] = True
                order.append(int(j))
    return [memories[i] for i in order]


def _line(block: Block) -> str:
    return f"{block.id} [{block.kind}, {block.created:%Y-%m-%d}]: {one_line(block.text)}"


def _batches(memories: list[Block], budget: int) -> list[list[Block]]:
    batches: list[list[Block]] = []
    current: list[Block] = []
    size = 0
    for block in memories:
        cost = len(_line(block)) + 1
        if current and size + cost > budget:
            batches.append(current)
            current, size = [], 0
        current.append(block)
        size += cost
    if current:
        batches.append(current)
    return batches


# -- the plan (untrusted model output) -------------------------------------------


def _plan(
    store: MemoryStore, llm: LLMClient, batch: list[Block], result: CleanupResult
) -> list[dict[str, Any]]:
    messages = [
        {"role": "system", "content": CLEANUP_SYSTEM},
        {"role": "user", "content": data_block("memories", "\n".join(_line(b) for b in batch))},
    ]

    def check(data: dict[str, Any]) -> None:
        if not all(isinstance(a, dict) for a in data["actions"]):
            raise ValueError("actions must be objects")

    reply = llm.chat_json(messages, required={"actions": list}, validate=check)
    return _checked(store, reply["actions"], batch, result)


def _reject(result: CleanupResult, action: Any, why: str) -> None:
    shown = one_line(json.dumps(action, ensure_ascii=False, default=str), 300)
    result.rejected.append({"action": shown, "why": why})
    log.info("cleanup: dropped a proposed action (%s): %s", why, shown)


def _id(value: Any) -> str | None:
    return value.strip().lstrip("^") if isinstance(value, str) else None


def _reason(store: MemoryStore, value: Any) -> str:
    if value is None:
        return "no reason given"
    if not isinstance(value, str):
        raise InvalidInputError("the reason is not text")
    reason = one_line(value, _MAX_REASON) or "no reason given"
    check_chars(reason, "the reason")
    refuse_in_metadata(reason, "the reason (it goes into the commit message)")
    return reason


def _checked(
    store: MemoryStore, actions: list[Any], batch: list[Block], result: CleanupResult
) -> list[dict[str, Any]]:
    """The model's actions that name only this batch's ids, each id once, with safe text."""
    shown = {b.id: b for b in batch}
    used: set[str] = set()
    plan: list[dict[str, Any]] = []
    # Each id may be named once, so a sane plan has fewer actions than the
    # batch has memories; a flood (a model looping, or text in a memory that
    # talks it into one) is dropped whole instead of checked one by one.
    if len(actions) > max(_MIN_ACTIONS, len(batch)):
        _reject(
            result,
            {"batch": [b.id for b in batch], "actions": len(actions)},
            f"the model proposed {len(actions)} actions for {len(batch)} memories",
        )
        return []
    for action in actions:
        op = action.get("op")
        try:
            reason = _reason(store, action.get("reason"))
            if op == "merge":
                raw = action.get("ids")
                ids = [_id(i) for i in raw] if isinstance(raw, list) else []
                if len(ids) < 2 or any(i not in shown for i in ids):
                    raise InvalidInputError("merge needs two or more ids from the list")
                ids_ok = [i for i in ids if i is not None]
                if len(set(ids_ok)) != len(ids_ok) or used & set(ids_ok):
                    raise InvalidInputError("an id is named twice")
                text = action.get("text")
                if text is not None:
                    if not isinstance(text, str):
                        raise InvalidInputError("the merged text is not text")
                    text = store.clean_text(text)  # the secrets guard and text checks
                plan.append({"op": "merge", "ids": ids_ok, "text": text, "reason": reason})
                used.update(ids_ok)
            elif op == "retire":
                target, by = _id(action.get("id")), _id(action.get("by"))
                if target not in shown or (action.get("by") is not None and by not in shown):
                    raise InvalidInputError("retire names an id that is not in the list")
                if target == by or target in used or (by is not None and by in used):
                    raise InvalidInputError("an id is named twice")
                plan.append({"op": "retire", "id": target, "by": by, "reason": reason})
                used.add(str(target))
                if by is not None:
                    used.add(by)  # a successor is kept: nothing else may retire it
            else:
                raise InvalidInputError(f"unknown op {op!r}")
        except MdmemError as exc:  # InvalidInput and SecretRefused: drop this action only
            _reject(result, action, one_line(str(exc), 200))
    # Net loss: a merge of n keeps one memory (the first, or the merged text).
    lost = sum(len(a["ids"]) - 1 for a in plan if a["op"] == "merge")
    lost += sum(1 for a in plan if a["op"] == "retire")
    ratio = store.settings.cleanup.max_retire_ratio
    # One is always allowed (two duplicates merge into one); beyond that the
    # ratio holds even in a small scope, where a floor of 2 let a hostile
    # plan retire 2 of 3 memories.
    if lost > max(1, ratio * len(batch)):
        _reject(
            result,
            {"batch": [b.id for b in batch], "actions": len(plan)},
            f"the plan would retire {lost} of {len(batch)} memories "
            f"(more than max_retire_ratio {ratio})",
        )
        return []
    return plan


# -- writing ------------------------------------------------------------------


def _apply(
    store: MemoryStore,
    plans: list[tuple[list[Block], list[dict[str, Any]]]],
    result: CleanupResult,
    *,
    dry_run: bool,
    review: bool,
) -> None:
    if not any(plan for _, plan in plans):
        return
    seen = {b.id: b for batch, _plan in plans for b in batch}
    message: tuple[str, list[tuple[str, str]]] | None = None
    # Review keeps the lock until the branch commit exists (its bytes must be HEAD's).
    with store.writer.writing() if review else nullcontext():
        with store.writer.transaction("cleanup", dry_run=dry_run or review) as tx:
            reasons: list[tuple[str, str]] = []
            for _batch, plan in plans:
                for action in plan:
                    done = _apply_one(store, tx, action, seen)
                    if done is None:
                        _reject(result, action, "a memory changed since the model saw it")
                        continue
                    retired, created = done
                    result.actions.append(action)
                    result.retired.extend(retired)
                    result.created.extend(created)
                    what = " ".join(action["ids"] if action["op"] == "merge" else [action["id"]])
                    reasons.append(("Reason", f"{action['op']} {what}: {action['reason']}"))
            if tx.ops:
                message = _message(result, reasons)
                tx.set_message(*message)
        if review and message is not None:
            result.branch, result.commit = rv.create_branch(
                store, tx.changes, *message, [], prefix=rv.CLEANUP_PREFIX
            )
    if message is None:
        return
    if dry_run or review:
        result.diff = render_diff(tx.changes)
    else:
        result.commit = store.git.head()


def _message(
    result: CleanupResult, reasons: list[tuple[str, str]]
) -> tuple[str, list[tuple[str, str]]]:
    """The commit's title and trailers: what was retired and written, and why."""
    n = len(result.created)
    title = (
        f"cleanup {result.scope}: {len(result.retired)} retired, "
        f"{n} merged memor{'y' if n == 1 else 'ies'} written"
    )
    trailers = [
        *[("Memory-Id", i) for i in result.created[:50]],
        *[("Supersedes", i) for i in result.retired[:100]],
        *reasons[:100],
        ("Scope", result.scope),
        ("Model", result.model),
        ("Op", "cleanup"),
    ]
    return title, trailers


def _as_seen(store: MemoryStore, memory_id: str, seen: dict[str, Block]) -> Block | None:
    """The memory if it is still active and reads as the model saw it, else None.

    The model's calls run outside the vault lock: another writer, a second
    cleanup or a person's edit may have changed a memory meanwhile, and a
    plan made from the old text must not overwrite the new one.
    """
    block = store.catalog.block(memory_id)
    was = seen.get(memory_id)
    if block is None or block.status != "active" or was is None:
        return None
    return block if (block.text, block.kind) == (was.text, was.kind) else None


def _apply_one(
    store: MemoryStore, tx: Any, action: dict[str, Any], seen: dict[str, Block]
) -> tuple[list[str], list[str]] | None:
    """(retired ids, new ids), or None when a memory changed since the model saw it."""

    today = store.clock.today()
    if action["op"] == "retire":
        if _as_seen(store, action["id"], seen) is None:
            return None
        if action["by"] is not None and _as_seen(store, action["by"], seen) is None:
            return None
        updates: dict[str, str | None] = (
            {"status": "superseded", "by": f"^{action['by']}", "updated": today}
            if action["by"] is not None
            else {"status": "resolved", "updated": today}
        )
        tx.set_fields(
            action["id"], updates, op="cleanup", subject=f"cleanup: retire {action['id']}"
        )
        return [action["id"]], []
    ids: list[str] = action["ids"]
    if any(_as_seen(store, i, seen) is None for i in ids):
        return None
    created: list[str] = []
    survivor = ids[0]
    if action["text"] is not None:
        new = store.supersede(ids[0], action["text"])
        if new.id != ids[0]:
            survivor = new.id
            created = [new.id] if new.was_new else []
    retired = [i for i in ids if i != survivor]
    for other in retired:
        if other == ids[0] and survivor != ids[0]:
            continue  # supersede already marked it
        tx.set_fields(
            other,
            {"status": "superseded", "by": f"^{survivor}", "updated": today},
            op="cleanup",
            subject=f"cleanup: merge {other} into {survivor}",
        )
    return retired, created


# -- the schedule's state ------------------------------------------------------------


def _read_state(store: MemoryStore) -> dict[str, Any]:
    try:
        data = json.loads((store.state_dir / _STATE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _record_run(store: MemoryStore, scope: str) -> None:
    data = _read_state(store)
    data[scope or blk.ROOT_SCOPE] = datetime.now(UTC).isoformat(timespec="seconds")
    path = store.state_dir / _STATE_FILE
    try:
        atomic_write(path, json.dumps(data, indent=2, sort_keys=True).encode())
    except OSError as exc:  # derived state: a full disk must not fail the run
        log.warning("could not record the cleanup run in %s: %s", path, exc)
