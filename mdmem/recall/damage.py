"""Recall's answer says so when a file was read only in part.

A line that is not UTF-8 is skipped, not the file (files/textfile.py
``decode_readable``); the memories on it are missing from the answer, so the
answer is degraded and names where the bytes are, like a missing index would.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from mdmem.files.textfile import BadByte
from mdmem.models import Recall

__all__ = ["damage_reason", "with_damage"]

_NAMED = 3  # files named in the reason; the rest are counted


def damage_reason(damaged: Mapping[str, tuple[BadByte, ...]]) -> str | None:
    """One clause naming the files with lines skipped, or None when there are none."""
    if not damaged:
        return None
    paths = sorted(damaged)
    named = [
        f"{damaged[p][0].where(p)}"
        + (f" (+{len(damaged[p]) - 1} more lines)" if len(damaged[p]) > 1 else "")
        for p in paths[:_NAMED]
    ]
    more = f" and {len(paths) - _NAMED} more files" if len(paths) > _NAMED else ""
    return "lines skipped: " + ", ".join(named) + more + " (mdmem doctor)"


def with_damage(result: Recall, damaged: Mapping[str, tuple[BadByte, ...]]) -> Recall:
    why = damage_reason(damaged)
    if why is None:
        return result
    reason = f"{result.degraded_reason}; {why}" if result.degraded_reason else why
    return replace(result, degraded=True, degraded_reason=reason)
