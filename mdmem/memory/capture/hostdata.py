"""What a coding-agent host sends (a session id, a tool's error, a payload's
fields), made safe to keep: ids become file names, fields and commit
messages, records go to state files outside the vault. The doors (the hook
kit) call these rather than the secret guard itself, so what counts as a
secret is decided in one place (:mod:`mdmem.store.write_guard`).
"""

from __future__ import annotations

import re
from typing import Any

from mdmem.store.write_guard import redacted, safe_id

__all__ = ["host_session_id", "safe_record", "safe_token"]

_NOT_IN_A_NAME = re.compile(r"[^A-Za-z0-9._-]")
_MAX_SESSION_ID = 128  # what validate_session_id accepts


def safe_token(value: str) -> str:
    """``value`` as sent, or a stable stand-in made from its hash when it holds
    a secret or reads as random key material."""
    return safe_id(value)


def host_session_id(host: str, raw: str) -> str:
    """The vault's session id for a host's session: ``<host>-<id>``, the id made
    safe (see :func:`safe_token`) and reduced to what a file name may hold."""
    name = _NOT_IN_A_NAME.sub("-", safe_id(raw)).strip(".-") or "unknown"
    return f"{host}-{name}"[:_MAX_SESSION_ID].rstrip(".")


def safe_record(entry: Any) -> Any:
    """A JSON-like record with a secret in any key or string value redacted."""
    return redacted(entry)
