"""Who pinned a memory: a pin counts only when a person or an explicit caller set it.

A pinned memory goes into every session start's profile, read as standing
context, so a pin must not be something memory text, a model's tool call, a
hook or an import row can produce. ``#pinned`` is an ordinary tag once it is
written (inside the text or among the tags), so the tag alone says nothing
about who meant it:

* ``[pinned:: caller]``: the writer sets this field when the API caller passes
  the tag explicitly (``vault.remember(..., tags=["pinned"])``,
  :meth:`mdmem.store.memories.MemoryStore.remember`). The memory tools drop a
  model's ``pinned`` tag before the call, imports drop a row's, hooks never
  pass one, and the field cannot be typed into text (an inline field in the
  text is escaped);
* ``#pinned`` on a person's own line (``[captured:: human]``, or a note
  without an id): their edit is their pin.

Import never pins: a row's ``pinned`` tag is dropped before it is written,
and a markdown file an import copied in (``imported/``) is the import's,
never the person's own line, whatever ``#pinned`` or ``[captured:: human]``
its text holds (:func:`mdmem.recall.asdata.provenance`). Anything else
tagged ``#pinned`` is an ordinary memory. :func:`pin_note` is
what the profile shows beside each pinned line.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from mdmem.recall.asdata import provenance

__all__ = ["PIN_FIELD", "PIN_TAG", "pin_note", "pinned_by"]

PIN_TAG = "pinned"
#: The field the writer sets from an explicit caller pin; its value says who.
PIN_FIELD = "pinned"


class _Item(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def path(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def tags(self) -> tuple[str, ...]: ...
    @property
    def created(self) -> datetime: ...

    def field(self, name: str) -> str | None: ...


def pinned_by(item: _Item) -> str | None:
    """``"caller"`` or ``"person"`` when the pin of ``item`` counts; None when it is
    not pinned, or its ``#pinned`` came from text, a tool, a hook or an import."""
    if (item.field(PIN_FIELD) or "").strip().lower() == "caller":
        return "caller"
    if PIN_TAG in item.tags and provenance(item).by == "person":
        return "person"
    return None


def pin_note(item: _Item) -> str:
    """What the profile says about why ``item`` is there: who pinned it, or the
    profile file it is an entry of."""
    who = pinned_by(item)
    return f"pinned by {who}" if who else "profile entry"
