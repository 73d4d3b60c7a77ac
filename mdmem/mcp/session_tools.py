"""Session-level tools for a model: ``changes`` (what changed since the last session).

Kept apart from :mod:`mdmem.mcp.tools` so that module stays small; the
Toolset registers :data:`SPECS` and :data:`HANDLERS` beside its own. A
handler gets the Toolset (for the vault and the host's scope rules) and the
checked arguments, and returns a JSON-serialisable dict.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from mdmem.git.seen import LAST_SESSION, render_changes
from mdmem.models import first_line, one_line

__all__ = ["HANDLERS", "SPECS"]

_LINE_CHARS = 200


class _Tools(Protocol):
    """What a handler uses of :class:`mdmem.mcp.tools.Toolset`."""

    vault: Any
    reading: Any  # mdmem.memory.desks.reading.Reading


SPECS: dict[str, tuple[str, dict[str, Any]]] = {
    "changes": (
        "What changed in memory since your last session (or since a commit or an ISO date): "
        "memories added, changed and retired, with ids, first lines and authors. Call it at "
        "the start of a session to catch up on what other agents and people did.",
        {
            "type": "object",
            "properties": {
                "since": {
                    "type": "string",
                    "default": LAST_SESSION,
                    "description": '"last-session" (default), a commit id, or an ISO date.',
                },
                "max_chars": {
                    "type": "integer",
                    "minimum": 200,
                    "maximum": 20000,
                    "default": 4000,
                    "description": "Size cap of the text in characters (default 4000).",
                },
                "mark_seen": {
                    "type": "boolean",
                    "default": False,
                    "description": "Record that you have seen these changes, so the next "
                    "session lists only newer ones (do it once, at the start of a session).",
                },
            },
            "required": [],
            "additionalProperties": False,
        },
    ),
}


def _changes(tools: _Tools, args: dict[str, Any]) -> dict[str, Any]:
    vault = tools.vault
    # Only what this toolset's reader may see (a block's effective scope and the
    # sources of a copy decide), its texts shown: a secret a person typed redacted.
    result = tools.reading.changes(args.get("since") or LAST_SESSION)
    if args.get("mark_seen"):
        vault.git.mark_seen()
    text, _ids, truncated = render_changes(result, max_chars=args.get("max_chars") or 4000)

    def item(c: Any) -> dict[str, Any]:
        return {
            "id": c.id,
            "kind": c.kind,
            "first_line": one_line(first_line(c.text or ""), _LINE_CHARS),
            "author": c.author,
            "by_agent": c.is_agent,
            "date": c.date,
        }

    return {
        "since": result.since,
        "text": text or "(no changes)",
        "truncated": truncated,
        "added": [item(c) for c in result.remembered],
        "retired": [item(c) for c in (*result.resolved, *result.forgotten)],
        "changed": [
            {"old_id": s.old_id, "new_id": s.new_id, "author": s.author, "date": s.date}
            for s in result.superseded
        ],
    }


HANDLERS: dict[str, Callable[[Any, dict[str, Any]], dict[str, Any]]] = {"changes": _changes}
