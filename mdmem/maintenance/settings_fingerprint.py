"""What a vault's ``mdmem.toml`` sets, as digests: enough to tell a restore which
settings it left behind, without an export carrying a single setting's value.

An export leaves the vault (and may be handed on); a restore must not take
settings from it (settings that send data or credentials somewhere never come
from a file that travels with the vault). So the export's header holds, per
setting, a short digest of its value; the restore compares them with the
receiving vault's own and names the keys that differ, for the person to copy
by hand from the old vault's ``mdmem.toml``.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["SETTINGS_FILE", "settings_fingerprint", "settings_left_behind"]

SETTINGS_FILE = "mdmem.toml"


def settings_fingerprint(root: Path) -> dict[str, str]:
    """``{"llm.model": <12 hex digits>, ...}`` for every value ``root/mdmem.toml`` sets
    ({} without a readable file: nothing to compare)."""
    try:
        data = tomllib.loads((root / SETTINGS_FILE).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}
    return {key: _digest(value) for key, value in _flat(data)}


def settings_left_behind(root: Path, exported: Any) -> list[str] | None:
    """The keys the export's vault set otherwise than ``root`` does, sorted; None
    when the export carries no fingerprint (made before there was one)."""
    if not isinstance(exported, Mapping):
        return None
    here = settings_fingerprint(root)
    return sorted(str(key) for key, digest in exported.items() if here.get(str(key)) != digest)


def _flat(data: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.extend(_flat(value, f"{name}."))
        else:
            out.append((name, value))
    return out


def _digest(value: Any) -> str:
    raw = json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:12]
