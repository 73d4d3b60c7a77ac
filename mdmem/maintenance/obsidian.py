"""The vault's Obsidian settings that mdmem relies on, checked and repaired by ``doctor``.

A vault made before tool outputs moved to ``tool-outputs/`` (root and scoped
folders) has ``.obsidian/app.json`` hiding ``sessions/tool-outputs/``, which
holds nothing: the raw outputs then flood Obsidian's search and graph.
``doctor`` reports it; ``doctor --fix`` adds the current filters, keeps every
other setting and filter the person chose, and commits (``Op: repair``).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mdmem.store.memories import MemoryStore

__all__ = ["APP_JSON", "TOOL_OUTPUT_FILTERS", "fix_ignore_filters", "stale_ignore_filters"]

APP_JSON = ".obsidian/app.json"
# What vault_template/.obsidian/app.json says: the root folder, and the
# same folder under any scope (a /regex/ entry in Obsidian's "Excluded files").
TOOL_OUTPUT_FILTERS = ("tool-outputs/", "/(^|\\/)tool-outputs\\//")
_OLD_FILTER = "sessions/tool-outputs/"


def _settings(store: MemoryStore) -> dict[str, Any] | None:
    try:
        data = json.loads((store.root / APP_JSON).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # no Obsidian settings, or not ones we can read: not ours to judge
    return data if isinstance(data, dict) else None


def stale_ignore_filters(store: MemoryStore) -> str | None:
    """What is wrong with the Obsidian filters for tool outputs, or None."""
    data = _settings(store)
    if data is None:
        return None
    filters = data.get("userIgnoreFilters")
    filters = filters if isinstance(filters, list) else []
    missing = [f for f in TOOL_OUTPUT_FILTERS if f not in filters]
    if not missing:
        return None
    return (
        f"{APP_JSON} does not hide tool-outputs/ (where large tool outputs are written); "
        "--fix adds it"
    )


def fix_ignore_filters(store: MemoryStore) -> bool:
    """Add the tool-output filters (dropping the old one); True when it committed."""
    data = _settings(store)
    if data is None or stale_ignore_filters(store) is None:
        return False
    filters = data.get("userIgnoreFilters")
    kept = [f for f in (filters if isinstance(filters, list) else []) if f != _OLD_FILTER]
    data["userIgnoreFilters"] = kept + [f for f in TOOL_OUTPUT_FILTERS if f not in kept]
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    with store.writer.transaction("repair: Obsidian hides tool-outputs/") as tx:
        tx.stage_raw_file(APP_JSON, text.encode("utf-8"))
        tx.set_message("repair: Obsidian hides tool-outputs/", [("Op", "repair")])
    return True
