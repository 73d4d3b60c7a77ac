"""The block model: golden files, byte-exact round trips, and a hypothesis property."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mdmem.errors import InvalidInputError
from mdmem.files import blocks as blk
from mdmem.files import render
from mdmem.files.textfile import SkipFile, TextFile, decode

GOLDEN = Path(__file__).parent / "golden" / "blocks"
CASES = sorted(p for p in GOLDEN.rglob("*.md"))


def _rel(path: Path) -> str:
    return path.relative_to(GOLDEN).as_posix()


def _summary(parsed: blk.ParsedFile) -> list[dict[str, object]]:
    return [
        {
            "id": b.id,
            "lines": [b.line_start, b.line_end],
            "heading": b.heading,
            "text": b.text,
            "kind": b.kind,
            "tags": list(b.tags),
            "scope": b.scope,
            "status": b.status,
            "fields": [list(f) for f in b.fields],
            "memory": b.is_memory,
        }
        for b in parsed.blocks
    ]


@pytest.mark.parametrize("path", CASES, ids=_rel)
def test_golden_parse(path: Path) -> None:
    parsed = blk.parse(_rel(path), decode(path.read_bytes()))
    result = path.with_suffix(".result.json")
    got = _summary(parsed)
    if os.environ.get("UPDATE_GOLDEN"):
        result.write_text(json.dumps(got, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    assert got == json.loads(result.read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", CASES, ids=_rel)
def test_golden_round_trip_is_byte_exact(path: Path) -> None:
    raw = path.read_bytes()
    assert decode(raw).to_bytes() == raw


@pytest.mark.parametrize("path", CASES, ids=_rel)
def test_golden_editing_one_block_leaves_every_other_byte(path: Path) -> None:
    raw = path.read_bytes()
    tf = decode(raw)
    parsed = blk.parse(_rel(path), tf)
    for block in parsed.memories():
        edited = tf.copy()
        new_lines = render.with_fields(block, edited, {"status": "resolved"})
        edited.replace_lines(block.line_start - 1, block.line_end, new_lines)
        before, after = tf.lines, edited.lines
        assert before[: block.line_start - 1] == after[: block.line_start - 1]
        tail = len(before) - block.line_end
        assert before[len(before) - tail :] == after[len(after) - tail :]
        assert edited.bom == tf.bom
        reparsed = blk.parse(_rel(path), edited)
        again = reparsed.by_id(block.id)
        assert again is not None and again.status == "resolved"
        assert again.text == block.text
        others = {b.id: b.text for b in parsed.memories() if b.id != block.id}
        assert {b.id: b.text for b in reparsed.memories() if b.id != block.id} == others


def test_crlf_and_bom_survive_an_append() -> None:
    raw = (GOLDEN / "crlf_bom.md").read_bytes()
    tf = decode(raw)
    assert tf.bom and tf.newline == "\r\n"
    tf.append_lines(render.render_list_item("New fact", "m-01jd3k5x7q0099"))
    out = tf.to_bytes()
    assert out.startswith(raw + b"\r\n")  # the unterminated last line got the file's newline
    assert out.endswith(b"- New fact ^m-01jd3k5x7q0099\r\n")


def test_frontmatter_key_order_is_never_rewritten() -> None:
    raw = (GOLDEN / "ledger.md").read_bytes()
    tf = decode(raw)
    parsed = blk.parse("MEMORY.md", tf)
    assert list(parsed.frontmatter) == ["title", "zeta", "tags", "alpha"]
    block = parsed.memories()[0]
    tf.replace_lines(
        block.line_start - 1, block.line_end, render.with_fields(block, tf, {"x": "1"})
    )
    assert tf.to_bytes()[:60] == raw[:60]


def test_kinds_follow_the_file_and_inline_fields() -> None:
    tf = decode(b"- a ^m-01jd3k5x7q0001\n- b [kind:: gotcha] ^m-01jd3k5x7q0002\n")
    kinds = [b.kind for b in blk.parse("USER.md", tf).memories()]
    assert kinds == ["preference", "gotcha"]
    assert blk.parse("scopes/user/alice/WORLD.md", tf).memories()[0].kind == "world"
    assert blk.parse("scopes/user/alice/WORLD.md", tf).memories()[0].scope == "user:alice"


def test_created_comes_from_field_then_id() -> None:
    tf = decode(b"- a [created:: 2023-05-08] ^m-01jd3k5x7q0001\n- b ^m-01jd3k5x7q0002\n")
    a, b = blk.parse("MEMORY.md", tf).memories()
    assert a.created.isoformat().startswith("2023-05-08")
    assert b.created.year == 2024  # decoded from the id's time part


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"\x00\x01binary", "binary"),
        (b"caf\xe9\n", "UTF-8"),
        (b"---\ntitle: [unclosed\n---\nbody\n", "malformed frontmatter"),
        (b"---\ntitle: x\nbody without end\n", "no closing"),
        (b"a\n<<<<<<< HEAD\nx\n=======\ny\n>>>>>>> other\n", "conflict"),
        (b"---\n- just\n- a list\n---\n", "not a mapping"),
    ],
)
def test_unusable_files_are_skipped_with_a_reason(raw: bytes, reason: str) -> None:
    with pytest.raises(SkipFile, match=reason):
        blk.parse("x.md", decode(raw))


def test_yaml_alias_bomb_is_refused() -> None:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 9):
        prev = chr(ord("a") + i - 1)
        cur = chr(ord("a") + i)
        lines.append(f"{cur}: &{cur} [" + ",".join([f"*{prev}"] * 9) + "]")
    raw = ("---\n" + "\n".join(lines) + "\n---\nbody\n").encode()
    with pytest.raises(SkipFile, match="alias"):
        blk.parse("bomb.md", decode(raw))


def test_oversized_frontmatter_is_refused() -> None:
    raw = ("---\nbig: " + "x" * (blk.FRONTMATTER_MAX_BYTES + 10) + "\n---\n").encode()
    with pytest.raises(SkipFile, match="frontmatter larger"):
        blk.parse("big.md", decode(raw))


@pytest.mark.parametrize("scope", ["project:marketing", "user:alice", "agent:orc-1", ""])
def test_valid_scopes(scope: str) -> None:
    assert blk.validate_scope(scope) == scope


@pytest.mark.parametrize("scope", ["Project:x", "x", "a:../b", "a:b/c", ":x", "a:", "a:b:c"])
def test_invalid_scopes(scope: str) -> None:
    with pytest.raises(InvalidInputError):
        blk.validate_scope(scope)


def test_render_entry_keeps_the_section_whole() -> None:
    lines = render.render_entry(
        "09:00 · Code", "# Title\nsome text\n---\n```py\nx = 1", "m-01jd3k5x7q0001"
    )
    tf = TextFile(lines=[line + "\n" for line in ["# Daily", "", *lines]])
    parsed = blk.parse("daily/2026-01-01.md", tf)
    (memory,) = parsed.memories()
    assert memory.line_start == 3 and memory.line_end == len(tf.lines)
    assert memory.text.startswith("# Title\nsome text")
    assert [b.id for b in parsed.blocks if not b.is_memory] == []


def test_normalised_hash_ignores_case_space_tags_and_trailing_dot() -> None:
    assert blk.content_hash("The user prefers  metric units. #units") == blk.content_hash(
        "the user prefers metric units"
    )
    assert blk.content_hash("metric") != blk.content_hash("imperial")


# ------------------------------------------------------------ property ----

_word = st.text(alphabet="abcdefghij klmnoé✓#_-*", min_size=1, max_size=12).filter(
    lambda s: s.strip() != ""
)
_line = st.one_of(
    st.builds(lambda w: f"# {w}", _word),
    st.builds(lambda w: f"## {w}", _word),
    st.builds(lambda w: f"- {w}", _word),
    st.builds(lambda w, n: f"- {w} ^m-01jd3k5x7q{n:04d}", _word, st.integers(0, 9999)),
    st.builds(lambda w, n: f"  - {w} ^m-01jd3k5x7r{n:04d}", _word, st.integers(0, 9999)),
    st.builds(
        lambda w, n: f"{w} [status:: active] ^m-01jd3k5x7s{n:04d}", _word, st.integers(0, 9999)
    ),
    _word,
    st.just(""),
    st.just("```"),
    st.just("> quoted"),
    st.just("   "),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=st.lists(_line, max_size=30),
    crlf=st.booleans(),
    bom=st.booleans(),
    final_newline=st.booleans(),
    frontmatter=st.booleans(),
    path=st.sampled_from(["MEMORY.md", "daily/2026-01-01.md", "notes/x.md", "JOURNAL.md"]),
)
def test_property_round_trip_and_isolated_edits(
    lines: list[str], crlf: bool, bom: bool, final_newline: bool, frontmatter: bool, path: str
) -> None:
    nl = "\r\n" if crlf else "\n"
    body = ["---", "b: 2", "a: 1", "---", *lines] if frontmatter else lines
    text = nl.join(body) + (nl if final_newline and body else "")
    raw = (("\ufeff" if bom else "") + text).encode()
    tf = decode(raw)
    assert tf.to_bytes() == raw
    parsed = blk.parse(path, tf)
    # Every line with an id is a memory, a copied line (a repeated id) too:
    # keying the copy apart is the catalog's job, not the parser's.
    starts = [b.line_start for b in parsed.memories()]
    assert len(starts) == len(set(starts))
    for block in parsed.blocks:
        assert 1 <= block.line_start <= block.line_end <= len(tf.lines)
    for block in parsed.memories():
        edited = tf.copy()
        edited.replace_lines(
            block.line_start - 1,
            block.line_end,
            render.with_fields(block, edited, {"status": "resolved"}),
        )
        assert edited.lines[: block.line_start - 1] == tf.lines[: block.line_start - 1]
        tail = len(tf.lines) - block.line_end
        assert edited.lines[len(edited.lines) - tail :] == tf.lines[len(tf.lines) - tail :]
        again = [b for b in blk.parse(path, edited).memories() if b.line_start == block.line_start]
        assert [b.id for b in again] == [block.id] and again[0].status == "resolved"
