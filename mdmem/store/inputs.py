"""What a write accepts: checks of caller input, and the vault's clock.

Every write verb cleans its text and metadata here before anything touches
a file, so a refusal is one :class:`~mdmem.errors.InvalidInputError` (or
:class:`~mdmem.errors.SecretRefusedError`) and nothing is written.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, date, datetime, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from mdmem.errors import ConfigError, InvalidInputError
from mdmem.models import KINDS
from mdmem.store import blocks as blk
from mdmem.store.secret_guard import guard, refuse_in_metadata

__all__ = [
    "MAX_MEMORY_CHARS",
    "Clock",
    "check_category",
    "check_fields",
    "check_kind",
    "check_tags",
    "clean_text",
    "iso_date",
    "refuse_secret_metadata",
]

MAX_MEMORY_CHARS = 20_000
SECRET_MODES = ("refuse", "redact", "off")
_TAG_OK = re.compile(r"^[A-Za-z_][\w/-]{0,63}$")
_CATEGORY_OK = re.compile(r"^[\w][\w .&/-]{0,39}$")
_FIELD_KEY_OK = re.compile(r"^[A-Za-z][\w-]{0,31}$")
_FIELD_VALUE_BAD = re.compile(r"[\[\]()\n]")
# Stands in for the text when the metadata is checked on its own: the text has
# its own guard (which may redact), and scanning text and metadata together
# would refuse ordinary text that happens to end in "password is" before a tag.
# ASCII, so that metadata without any secret-like piece skips the patterns.
MASK = "x"


class Clock:
    """The vault's notion of now and today, in its configured zone."""

    def __init__(self, zone: str = "") -> None:
        self.zone: tzinfo | None = _zone(zone)

    def local(self, when: datetime | None = None) -> datetime:
        """``when`` (default now; naive means UTC) in the vault's zone."""
        moment = when or datetime.now(UTC)
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return moment.astimezone(self.zone) if self.zone else moment.astimezone()

    def today(self) -> str:
        """Today's date (``YYYY-MM-DD``) in the vault's zone."""
        return self.local().date().isoformat()


def clean_text(text: object, secrets: str) -> str:
    """Memory text as it will be stored, or InvalidInputError / SecretRefusedError."""
    if not isinstance(text, str):
        raise InvalidInputError("memory text must be a string")
    if "\x00" in text:
        raise InvalidInputError("memory text contains a NUL byte")
    text = text.strip()
    if not text:
        raise InvalidInputError("memory text is empty")
    if len(text) > MAX_MEMORY_CHARS:
        raise InvalidInputError(
            f"memory text is {len(text)} characters; the limit is {MAX_MEMORY_CHARS}"
        )
    if secrets not in SECRET_MODES:
        raise InvalidInputError("secrets must be refuse, redact or off")
    return guard(text, secrets)


def check_kind(kind: str) -> str:
    if kind not in KINDS:
        raise InvalidInputError(f"unknown kind {kind!r}; one of: {', '.join(KINDS)}")
    return kind


def check_tags(tags: Iterable[str]) -> list[str]:
    """Tags without ``#``, lower case, each once; a string is split on commas and spaces."""
    if isinstance(tags, str):
        tags = [t for t in re.split(r"[,\s]+", tags) if t]
    out: list[str] = []
    for tag in tags:
        clean = str(tag).strip().lstrip("#")
        if not _TAG_OK.match(clean):
            raise InvalidInputError(f"invalid tag {tag!r}: letters, digits, _ - / only")
        if clean.lower() not in out:
            out.append(clean.lower())
    return out


def check_fields(fields: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    out = []
    for key, value in fields:
        if not _FIELD_KEY_OK.match(key) or _FIELD_VALUE_BAD.search(str(value)):
            raise InvalidInputError(f"invalid field {key!r}")
        out.append((key.lower(), str(value)))
    return out


def check_category(category: str) -> str:
    category = " ".join(str(category).split())
    if not _CATEGORY_OK.match(category):
        raise InvalidInputError(f"invalid log category {category!r}")
    return category


def iso_date(value: datetime | date | str) -> str:
    """A creation date as written into ``[created:: …]``."""
    if isinstance(value, datetime):
        return value.isoformat(timespec="seconds")
    if isinstance(value, date):
        return value.isoformat()
    parsed = blk.parse_datetime(value)
    if parsed is None:
        raise InvalidInputError(f"not a date: {value!r}")
    return str(value).strip()


def refuse_secret_metadata(rel: str, rendered: list[str], extra: list[str]) -> None:
    """Refuse a secret anywhere around the text, as it would be written.

    ``rendered`` is the block rendered around :data:`MASK`, so tags, inline
    fields and headings (a log category, a learning topic) are checked in
    their final form; ``rel`` carries the scope and session id, ``extra`` a
    file header or section heading that the write may add.
    """
    refuse_in_metadata(
        "\n".join([rel, *rendered, *extra]),
        "the tags, fields, topic, category, scope or names of this memory",
    )


def _zone(name: str) -> tzinfo | None:
    if not name:
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigError(f"unknown timezone {name!r}") from None
