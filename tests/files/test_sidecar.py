"""The fields file beside a note: its records, and how they resolve (mdmem.files.sidecar)."""

from __future__ import annotations

import json
from pathlib import PurePosixPath

import pytest

from mdmem.files.sidecar import (
    SIDECAR_DIR,
    SIDECAR_SUFFIX,
    Record,
    encode,
    note_of,
    parse_records,
    resolve,
    sidecar_of,
    stamp,
)


def test_a_note_and_its_fields_file_name_each_other() -> None:
    assert sidecar_of("MEMORY.md") == ".fields/MEMORY.md.jsonl"
    assert sidecar_of("scopes/user/ana/USER.md") == "scopes/user/ana/.fields/USER.md.jsonl"
    assert note_of("sessions/.fields/s1.md.jsonl") == "sessions/s1.md"
    assert note_of(".fields/MEMORY.md.jsonl") == "MEMORY.md"
    for other in ("MEMORY.md", ".fields/x.jsonl", "fields/MEMORY.md.jsonl", "a.md.jsonl"):
        assert note_of(other) is None


@pytest.mark.parametrize(
    "rel",
    [
        "a.md", "x/y/z.md", "sessions/2026-01-01 talk.md", "é/ü.md", "..md", "../a.md",
        ".fields/a.md.jsonl", "x/.fields/a.md.jsonl", "x/.fields/y/a.md.jsonl",
        ".fields/.md.jsonl", ".fields/.fields/a.md.jsonl", "x/.fields.md.jsonl",
        "./a.md", "a//b.md", "x/./.fields/a.md.jsonl", "a/.fields/", "../.fields/a.md.jsonl",
    ],
)  # fmt: skip
def test_names_are_read_as_pathlib_reads_them(rel: str) -> None:
    path = PurePosixPath(rel)
    assert sidecar_of(rel) == str(path.parent / SIDECAR_DIR / (path.name + SIDECAR_SUFFIX))
    is_fields = path.parent.name == SIDECAR_DIR and path.name.endswith(".md" + SIDECAR_SUFFIX)
    note = str(path.parent.parent / path.name[: -len(SIDECAR_SUFFIX)]) if is_fields else None
    assert note_of(rel) == note


def test_a_record_is_one_json_line_that_reads_back() -> None:
    values = (("status", "superseded"), ("by", '^m-0"x]'), ("x", None))
    record = Record("m-01abcdefghjk", stamp(), values)
    line = encode(record)
    assert "\n" not in line and json.loads(line)["x"] is None
    assert list(json.loads(line))[:2] == ["id", "at"]  # the id first: grep finds a memory
    (back,), bad = parse_records([line])
    assert back == record and bad == []


def test_damaged_lines_are_skipped_and_named() -> None:
    good = encode(Record("m-01abcdefghjk", "2026-01-01T00:00:00.000001Z", (("kind", "fact"),)))
    records, bad = parse_records([good, "{not json", "[1, 2]", '{"at": "x"}', "", good])
    assert len(records) == 2 and bad == [2, 3, 4]


def test_the_latest_record_of_each_field_wins_whatever_the_line_order() -> None:
    early, late = "2026-01-01T00:00:00.000001Z", "2026-01-02T00:00:00.000001Z"
    records = [
        Record("m-1aaaaaaa", late, (("status", "resolved"),)),
        Record("m-1aaaaaaa", early, (("kind", "decision"), ("status", "superseded"))),
        Record("m-2bbbbbbb", early, (("importance", "7"),)),
        Record("m-2bbbbbbb", late, (("importance", None),)),  # unset
    ]
    resolved = resolve(records)
    assert resolved["m-1aaaaaaa"] == (("status", "resolved"), ("kind", "decision"))
    assert resolved["m-2bbbbbbb"] == ()
    # Two clones in the same microsecond: the greater value, so both read the same.
    tie = [
        Record("m-3ccccccc", late, (("status", "resolved"),)),
        Record("m-3ccccccc", late, (("status", "archived"),)),
    ]
    assert resolve(tie) == resolve(list(reversed(tie))) == {"m-3ccccccc": (("status", "resolved"),)}


def test_stamps_increase_within_a_process() -> None:
    stamps = [stamp() for _ in range(1000)]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
