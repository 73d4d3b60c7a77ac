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

from mdmem.errors import ConfigError, InvalidInputError, SecretRefusedError
from mdmem.files import blocks as blk
from mdmem.models import KINDS
from mdmem.store.secret_guard import guard, refuse_in_metadata
from mdmem.store.write_guard import allow_unguarded, looks_random

__all__ = [
    "MAX_MEMORY_CHARS",
    "Clock",
    "check_category",
    "check_chars",
    "check_fields",
    "check_kind",
    "check_tags",
    "check_topic",
    "clean_text",
    "iso_date",
    "refuse_secret_metadata",
    "refuse_secret_name",
]

MAX_MEMORY_CHARS = 20_000
SECRET_MODES = ("refuse", "redact", "off")
# Validation patterns are used with fullmatch: "$" would also match before a final newline.
_TAG_OK = re.compile(r"[A-Za-z_][\w/-]{0,63}")
_CATEGORY_OK = re.compile(r"[\w][\w .&/-]{0,39}")
_FIELD_KEY_OK = re.compile(r"[A-Za-z][\w-]{0,31}")
_FIELD_VALUE_BAD = re.compile(r"[\[\]()\n\r]")
# Characters no stored text may hold: NUL makes the file "binary" (skipped
# whole), a lone surrogate can't be encoded as UTF-8, other control
# characters and the Unicode line/paragraph separators are line breaks to
# some readers and not to others (and terminal escapes have no place in a
# memory). Tab, LF and CR are text; CR is stored as a line ending.
_BAD_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
# The part of those a whole file can't survive; the rest is kept verbatim
# where text is code (a tool's output, shown inside a fence).
_UNSTORABLE = re.compile(r"[\x00\ud800-\udfff]")
# A closing "#" sequence of an ATX heading: markdown drops it from the heading text.
_HEADING_TAIL = re.compile(r"(?:^|[ \t])#+[ \t]*$")
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


def check_chars(value: str, what: str, *, code: bool = False) -> str:
    """``value`` if it holds only characters a vault file stores faithfully.

    ``code``: text kept verbatim inside a code fence (a tool's output), which
    may hold control characters such as terminal colours; only NUL and lone
    surrogates, which no file can hold, are refused there.
    """
    bad = (_UNSTORABLE if code else _BAD_CHARS).search(value)
    if bad is not None:
        char = bad.group(0)
        name = "a NUL byte" if char == "\x00" else f"the character U+{ord(char):04X}"
        raise InvalidInputError(f"{what} contains {name}, which can't be stored")
    return value


def clean_text(text: object, secrets: str) -> str:
    """Memory text as it will be stored, or InvalidInputError / SecretRefusedError.

    The stored form: line endings (CRLF, CR) become LF, trailing whitespace
    goes from every line, and leading/trailing blank space from the whole.
    What a write returns and what any later read returns is exactly this text
    (a list-item memory, one paragraph, also drops blank lines; see
    :func:`mdmem.files.render.render_list_item`).
    """
    if not isinstance(text, str):
        raise InvalidInputError("memory text must be a string")
    check_chars(text, "memory text")
    text = "\n".join(
        line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    ).strip()
    if not text:
        raise InvalidInputError("memory text is empty")
    if len(text) > MAX_MEMORY_CHARS:
        raise InvalidInputError(
            f"memory text is {len(text)} characters; the limit is {MAX_MEMORY_CHARS}"
        )
    if secrets not in SECRET_MODES:
        raise InvalidInputError("secrets must be refuse, redact or off")
    if secrets == "off":
        allow_unguarded(text)  # the caller's choice for this text: the writer lets it through
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
        if not _TAG_OK.fullmatch(clean):
            raise InvalidInputError(f"invalid tag {tag!r}: letters, digits, _ - / only")
        refuse_secret_name(clean, "the tags")
        if clean.lower() not in out:
            out.append(clean.lower())
    return out


def check_fields(fields: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """Inline fields ``(key, value)`` a caller sets; a value is read back stripped, so
    it must not start or end with space, nor hold brackets or line breaks."""
    out = []
    for key, value in fields:
        text = str(value)
        if (
            not isinstance(key, str)
            or not _FIELD_KEY_OK.fullmatch(key)
            or _FIELD_VALUE_BAD.search(text)
            or text != text.strip()
        ):
            raise InvalidInputError(f"invalid field {key!r}: {text!r}")
        refuse_secret_name(key, "the field names")
        check_chars(text, "a field value")
        refuse_in_metadata(text, "the field values")
        out.append((key.lower(), text))
    return out


def check_category(category: str) -> str:
    check_chars(str(category), "log category")
    category = " ".join(str(category).split())
    if not _CATEGORY_OK.fullmatch(category):
        raise InvalidInputError(f"invalid log category {category!r}")
    return category


def check_topic(topic: object) -> str:
    """A learning topic: one line that reads back as itself in ``## Topic: <topic>``."""
    if not isinstance(topic, str):
        raise InvalidInputError("topic must be a string")
    check_chars(topic, "topic")
    topic = " ".join(topic.split())
    if not topic or len(topic) > 120 or topic.startswith("#") or _HEADING_TAIL.search(topic):
        raise InvalidInputError(f"invalid topic {topic!r}")
    return topic


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


def refuse_secret_name(value: str, what: str) -> None:
    """Refuse a name (a tag, a field name) that holds a secret, whatever the mode:
    redacted, it would be a broken name that still says a secret was there.

    Judged as given and as stored (names are stored lower case, and a vendor
    key whose format is upper case must still be seen: the guard also reads a
    lower-cased one upper-cased); a long run that reads as random data counts
    too, as it does in a file name (:func:`mdmem.store.write_guard.looks_random`).
    """
    for form in dict.fromkeys((value, value.lower())):
        refuse_in_metadata(form, what)
    if looks_random(value):
        raise SecretRefusedError(
            f"refused: {what} contain what looks like random key material; "
            "redaction applies to the memory text only, so remove it"
        )


def _zone(name: str) -> tzinfo | None:
    if not name:
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigError(f"unknown timezone {name!r}") from None
