"""A note's YAML frontmatter: read safely (size and alias limits, the reference
loader), and its tags.

Pure functions: nothing here touches the disk.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import yaml

from mdmem.files.textfile import SkipFile, TextFile
from mdmem.models import one_line

__all__ = ["FRONTMATTER_MAX_BYTES", "frontmatter_tags", "split_frontmatter"]

FRONTMATTER_MAX_BYTES = 64 * 1024
_MAX_YAML_ALIASES = 64


def split_frontmatter(tf: TextFile) -> tuple[dict[str, Any], int]:
    """(the frontmatter's mapping, lines it takes with its fences); ({}, 0) when the
    file opens with none. Raises SkipFile for a frontmatter that can't be read."""
    lines = tf.lines
    if not lines or lines[0].rstrip("\r\n").rstrip() != "---":
        return {}, 0
    for idx in range(1, len(lines)):
        stripped = lines[idx].rstrip("\r\n").rstrip()
        if stripped in ("---", "..."):
            meta = _load("".join(lines[1:idx]))
            return meta, idx + 1
    raise SkipFile("malformed frontmatter: no closing ---")


def frontmatter_tags(meta: dict[str, Any]) -> list[str]:
    raw = meta.get("tags", meta.get("tag"))
    if raw is None:
        return []
    items: Iterable[Any]
    if isinstance(raw, str):
        items = re.split(r"[,\s]+", raw)
    elif isinstance(raw, list | tuple):
        items = raw
    else:
        items = [raw]
    return [str(t).lstrip("#").lower() for t in items if str(t).strip().lstrip("#")]


def _load(text: str) -> dict[str, Any]:
    if len(text.encode("utf-8")) > FRONTMATTER_MAX_BYTES:
        raise SkipFile(f"frontmatter larger than {FRONTMATTER_MAX_BYTES // 1024} KiB")
    try:
        aliases = sum(
            1 for ev in yaml.parse(text, Loader=yaml.SafeLoader) if isinstance(ev, yaml.AliasEvent)
        )
    except yaml.YAMLError as exc:
        raise SkipFile(f"malformed frontmatter: {one_line(str(exc), 200)}") from None
    if aliases > _MAX_YAML_ALIASES:
        raise SkipFile(f"frontmatter uses {aliases} YAML aliases (alias bomb?)")
    import frontmatter  # python-frontmatter: its YAML handler is the reference loader

    try:
        meta = frontmatter.YAMLHandler().load(text)
    except yaml.YAMLError as exc:
        raise SkipFile(f"malformed frontmatter: {one_line(str(exc), 200)}") from None
    if meta is None:
        return {}
    if not isinstance(meta, dict):
        raise SkipFile("malformed frontmatter: not a mapping")
    return meta
