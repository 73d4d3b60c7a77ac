"""Recall controls (Martha, OrcBot, operator_use): what a caller narrows or weighs beyond
kind, tag, scope and date.

* ``exclude_ids``: memories the agent has already seen (ids, ``^ids`` or
  citations ``path#^id``; note ids ``path.md#Heading``) never come back.
* metadata filters: ``source``, ``contact``, ``session``, ``author``, each one
  value or several (any may match). ``source``/``contact`` match the block's
  ``[source:: …]``/``[contact:: …]`` fields (session turns carry them, and
  consolidated facts their contact); ``session`` matches the session file a
  turn is in or the ``[session:: …]`` ids a consolidated fact names;
  ``author`` matches an ``[author:: …]`` or ``[speaker:: …]`` field a host
  recorded, and ``human`` matches what a person wrote without mdmem (note
  sections, which have no memory id).
* ``status``: only these statuses (``archived``, ``resolved``, …), active or not.
* ``scope_weights``: a recall across scopes multiplies each hit's score by its
  scope's weight (``{"user:alice": 1.2, "project:x": 0}``; unnamed scopes 1,
  ``"root"`` or ``""`` the vault root); 0 leaves the scope out entirely.
* ``tier``: what a hit's text holds, 0 a one-line abstract, 1 an overview,
  2 the full text (default; see :mod:`mdmem.store.tiers`).
* the substring fallback: when the keyword side finds nothing (a query of
  symbols the tokenizer drops, ``C++``, ``→``, a code fragment), blocks that
  hold the query as a substring (case-insensitive; else all of its
  whitespace-separated parts) stand in for keyword hits, newest first, as
  operator_use's LIKE scan does when its FTS5 query fails. ``fallback=False``
  turns it off.

Everything here is pure: :class:`RecallControls` is carried by the query and
asked by ``RecallQuery.admits`` and the scoring loop of :mod:`mdmem.recall.search`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from mdmem.errors import InvalidInputError
from mdmem.files.blocks import validate_scope
from mdmem.files.ids import normalize_id, written_id
from mdmem.models import STATUSES, Block, Hit
from mdmem.store.tiers import FULL, check_tier, tier_text

__all__ = ["FIELD_FILTERS", "RecallControls", "at_tier", "substring_candidates"]

FIELD_FILTERS: tuple[str, ...] = ("source", "contact", "session", "author")
HUMAN_AUTHOR = "human"


def _values(name: str, value: str | Iterable[str] | None) -> frozenset[str] | None:
    if value is None:
        return None
    items = [value] if isinstance(value, str) else list(value)
    if not items or not all(isinstance(v, str) and v.strip() for v in items):
        raise InvalidInputError(f"{name} must be a non-empty string or list of strings")
    return frozenset(v.strip() for v in items)


def _exclusions(ids: Iterable[str] | str | None) -> frozenset[str]:
    if ids is None:
        return frozenset()
    items = [ids] if isinstance(ids, str) else list(ids)
    out: set[str] = set()
    for raw in items:
        if not isinstance(raw, str) or not raw.strip():
            raise InvalidInputError("exclude_ids must be a list of memory ids")
        text = raw.strip()
        anchor = text.partition("#")[2]
        # A note section's id is its own key; anything else must be a memory id.
        out.add(text if anchor and not anchor.startswith("^") else normalize_id(text))
    return frozenset(out)


def _weights(weights: Mapping[str, float] | None) -> tuple[tuple[str, float], ...]:
    if weights is None:
        return ()
    if not isinstance(weights, Mapping):
        raise InvalidInputError('scope_weights must map scopes to numbers, e.g. {"root": 0.5}')
    out = []
    for scope, weight in weights.items():
        name = "" if str(scope).strip().lower() in ("root", "(root)", "") else validate_scope(scope)
        if (
            isinstance(weight, bool)
            or not isinstance(weight, (int, float))
            or not 0 <= weight <= 10
        ):
            raise InvalidInputError(f"scope weight of {scope!r} must be a number from 0 to 10")
        out.append((name, float(weight)))
    return tuple(sorted(out))


@dataclass(frozen=True)
class RecallControls:
    exclude_ids: frozenset[str] = frozenset()
    fields: tuple[tuple[str, frozenset[str]], ...] = ()
    statuses: frozenset[str] | None = None
    scope_weights: tuple[tuple[str, float], ...] = ()
    fallback: bool = True
    tier: int = FULL

    @classmethod
    def build(
        cls,
        *,
        exclude_ids: Iterable[str] | str | None = None,
        source: str | Iterable[str] | None = None,
        contact: str | Iterable[str] | None = None,
        session: str | Iterable[str] | None = None,
        author: str | Iterable[str] | None = None,
        status: str | Iterable[str] | None = None,
        scope_weights: Mapping[str, float] | None = None,
        fallback: bool = True,
        tier: int = FULL,
        **unknown: object,
    ) -> RecallControls:
        """Checked controls; InvalidInputError names the argument that is wrong."""
        if unknown:
            raise InvalidInputError(
                f"unknown recall argument(s): {', '.join(sorted(unknown))}; controls are "
                "exclude_ids, source, contact, session, author, status, scope_weights, "
                "fallback, tier"
            )
        given = {"source": source, "contact": contact, "session": session, "author": author}
        fields = tuple(
            (name, values)
            for name, value in given.items()
            if (values := _values(name, value)) is not None
        )
        statuses = _values("status", status)
        if statuses is not None and not statuses <= set(STATUSES):
            bad = ", ".join(sorted(statuses - set(STATUSES)))
            raise InvalidInputError(f"unknown status {bad}; one of: {', '.join(STATUSES)}")
        if not isinstance(fallback, bool):
            raise InvalidInputError("fallback must be true or false")
        return cls(
            _exclusions(exclude_ids),
            fields,
            statuses,
            _weights(scope_weights),
            fallback,
            check_tier(tier),
        )

    @property
    def widens_status(self) -> bool:
        """Whether a status filter asks for memories default recall leaves out."""
        return self.statuses is not None and self.statuses != {"active"}

    def admits(self, block: Block) -> bool:
        if self.exclude_ids and (
            block.id in self.exclude_ids or written_id(block.id) in self.exclude_ids
        ):
            return False
        if self.statuses is not None and block.status not in self.statuses:
            return False
        if self.scope_weights and self.weight(block) <= 0:
            return False
        return all(_matches(name, wanted, block) for name, wanted in self.fields)

    def weight(self, block: Block) -> float:
        for scope, weight in self.scope_weights:
            if scope == block.scope:
                return weight
        return 1.0


def _matches(name: str, wanted: frozenset[str], block: Block) -> bool:
    if name == "session":
        from_path = _session_of(block.path)
        named = set((block.field("session") or "").split())
        return bool((wanted & named) or (from_path is not None and from_path in wanted))
    if name == "author":
        if HUMAN_AUTHOR in wanted and not block.is_memory:
            return True
        return any(block.field(key) in wanted for key in ("author", "speaker"))
    return block.field(name) in wanted


def _session_of(path: str) -> str | None:
    parts = path.split("/")
    if len(parts) >= 2 and parts[-2] == "sessions" and parts[-1].endswith(".md"):
        return parts[-1][:-3]
    return None


def substring_candidates(
    query: str,
    blocks: Iterable[Block],
    admits: object,
    pool: int,
    shown: Callable[[str], str],
) -> list[tuple[str, float]]:
    """Blocks holding ``query`` as a substring (case-insensitive), else all of its
    whitespace-separated parts; newest first, as keyword-like (id, 1.0) pairs.
    ``admits``: the query's filter (a callable on a block). ``shown``: the
    text as the indexes hold it; a block matches only if that still holds
    the query, so a secret typed into a file by hand can't be found by its
    characters (as the keyword index can't)."""
    needle = " ".join(query.casefold().split())
    parts = needle.split()
    if not needle:
        return []
    whole: list[Block] = []
    every: list[Block] = []
    check = admits if callable(admits) else (lambda _b: True)

    def flat(text: str) -> str:
        return " ".join(text.casefold().split())

    def holds(text: str) -> tuple[bool, bool]:
        hay = flat(text)
        return needle in hay, len(parts) > 1 and all(p in hay for p in parts)

    for block in blocks:
        raw = f"{block.heading}\n{block.text}"
        is_whole, is_every = holds(raw)
        if not (is_whole or is_every) or not check(block):
            continue
        # Cheap on the raw text first; the redacted text decides.
        is_whole, is_every = holds(f"{shown(block.heading)}\n{shown(block.text)}")
        if is_whole:
            whole.append(block)
        elif is_every:
            every.append(block)
    found = whole or every
    found.sort(key=lambda b: (b.created, b.id), reverse=True)
    return [(b.id, 1.0) for b in found[:pool]]


def at_tier(
    hits: list[Hit],
    tier: int,
    block_of: Callable[[str], Block | None],
    frontmatter_of: Callable[[str], Mapping[str, Any]],
) -> list[Hit]:
    """``hits`` with their text at ``tier`` (store/tiers.py): abstracts or overviews
    first, so an agent opens only what it needs in full, by id."""
    if tier >= FULL:
        return hits
    out = []
    for hit in hits:
        block = block_of(hit.id)
        if block is None:
            out.append(hit)
            continue
        text = tier_text(block, tier, frontmatter_of(block.path))
        out.append(replace(hit, text=text, tier=tier))
    return out
