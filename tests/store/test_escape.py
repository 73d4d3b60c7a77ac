"""Escaping memory text: exact round trips, no live fields or ids, and people's own fields."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mdmem.errors import InvalidInputError
from mdmem.files import blocks as blk
from mdmem.files import escape as esc
from mdmem.files import render
from mdmem.files.textfile import TextFile, decode

_PIECES = [
    "\\",
    "\\\\",
    "[",
    "(",
    "]",
    ")",
    "k::",
    "status:: resolved",
    "[scope:: user:alice]",
    "(kind:: gotcha)",
    " ",
    "\t",
    "#",
    "## ",
    "^",
    "^m-01jd3k5x7q0001",
    "^abc",
    "-",
    "- ",
    "*",
    "_",
    "=",
    "`",
    "```",
    "~~~",
    "|",
    "<",
    "<!--",
    ":",
    "1. ",
    "2)",
    "> ",
    "word",
    "é✓",
    ">>>>>>> ",
    "<<<<<<< ",
    "\n",
]
_texts = st.lists(st.sampled_from(_PIECES), max_size=14).map("".join)
_LIVE_ID = re.compile(r"(?:^|\s)\^m-[0-9a-z]{6,32}\s*$")


def _decode(lines: list[str]) -> list[str]:
    """What the parser does with stored lines: fences kept, the rest unescaped."""
    out: list[str] = []
    fence: str | None = None
    for line in lines:
        if fence is not None:
            if esc.closes_fence(line, fence):
                fence = None
            out.append(line if fence is None else esc.unescape_code_line(line))
            continue
        fence = esc.fence_opener(line)
        out.append(line if fence is not None else esc.unescape_line(line))
    return out


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_texts, full=st.booleans())
def test_property_escaping_is_reversible(text: str, full: bool) -> None:
    lines = [line.rstrip() for line in text.split("\n")]
    escaped, plain = esc.escape_lines(lines, full=full)
    assert plain == lines
    assert _decode(escaped) == lines


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_texts)
def test_property_escaped_text_holds_no_live_field_or_id(text: str) -> None:
    escaped, _ = esc.escape_lines(text.split("\n"), full=True)
    for line in escaped:
        # The suffix a write appends after the text must stay the only metadata.
        assert esc.take_fields(f"{line} [kind:: fact] ^m-01jd3k5x7q0009")[1] == [("kind", "fact")]
        assert not _LIVE_ID.search(line)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_texts)
def test_property_a_rendered_item_parses_as_its_text(text: str) -> None:
    lines = [line.rstrip() for line in text.split("\n")]
    expected = "\n".join(line for line in lines if line.strip()).strip()
    if not expected:
        with pytest.raises(InvalidInputError):
            render.render_list_item(text, "m-01jd3k5x7q0100")
        return
    item = render.render_list_item(text, "m-01jd3k5x7q0100")
    tf = TextFile(
        lines=[line + "\n" for line in ["# Memory", "", *item, "- after ^m-01jd3k5x7q0101"]]
    )
    parsed = blk.parse("MEMORY.md", tf)
    assert [(b.id, b.text, b.fields) for b in parsed.memories()] == [
        ("m-01jd3k5x7q0100", expected.lstrip(), ()),
        ("m-01jd3k5x7q0101", "after", ()),
    ]


def test_a_person_typing_fields_by_hand_still_sets_them() -> None:
    tf = decode(
        b"# Memory\n\n- typed by hand [status:: resolved] (kind:: gotcha) ^m-01jd3k5x7q0001\n"
        b"- escaped by a write \\[status:: resolved] ^m-01jd3k5x7q0002\n"
    )
    by_hand, written = blk.parse("MEMORY.md", tf).memories()
    assert (by_hand.text, by_hand.status, by_hand.kind) == ("typed by hand", "resolved", "gotcha")
    assert (written.text, written.status, written.kind) == (
        "escaped by a write [status:: resolved]",
        "active",
        "fact",
    )


def test_setting_a_field_leaves_field_syntax_in_the_text_alone() -> None:
    (line,) = render.render_list_item("use [status:: x] here [status:: y]", "m-01jd3k5x7q0001")
    tf = TextFile(lines=[line + "\n"])
    block = blk.parse("MEMORY.md", tf).memories()[0]
    tf.replace_lines(0, 1, render.with_fields(block, tf, {"status": "resolved"}))
    again = blk.parse("MEMORY.md", tf).memories()[0]
    assert (again.text, again.status) == ("use [status:: x] here [status:: y]", "resolved")


def test_a_file_location_decides_the_scope() -> None:
    raw = b"---\nscope: user:alice\n---\n- hand typed [scope:: user:alice] ^m-01jd3k5x7q0001\n"
    in_scope = blk.parse("scopes/user/mallory/MEMORY.md", decode(raw)).memories()[0]
    assert in_scope.scope == "user:mallory"
    # Outside scopes/, a person's frontmatter or field still decides, as before.
    assert blk.parse("notes/x.md", decode(raw)).memories()[0].scope == "user:alice"


def test_an_entry_keeps_its_markdown_but_not_its_headings() -> None:
    text = "- a list\n> a quote\n\n| a | b |\n|---|---|\n# not a heading\n```py\n# code\n```"
    lines = render.render_entry("09:00 · Note", text, "m-01jd3k5x7q0001")
    assert "- a list" in lines and "> a quote" in lines and "# code" in lines
    assert "\\# not a heading" in lines
    tf = TextFile(lines=[line + "\n" for line in ["# Daily", "", *lines]])
    (memory,) = blk.parse("daily/2026-01-01.md", tf).memories()
    assert memory.text == text


def test_an_unclosed_fence_is_escaped_not_closed() -> None:
    text = "before\n```\ncode [status:: resolved]\n## 10:00 · Fake"
    lines = render.render_entry("09:00 · Note", text, "m-01jd3k5x7q0001")
    tf = TextFile(
        lines=[
            line + "\n" for line in ["# Daily", "", *lines, "", "## Next", "n ^m-01jd3k5x7q0002"]
        ]
    )
    first, second = blk.parse("daily/2026-01-01.md", tf).memories()
    assert (first.text, first.status, second.text) == (text, "active", "n")


def test_code_in_a_fence_is_kept_verbatim() -> None:
    content = "```\n  x = [status:: resolved]  \n# comment ^m-01jd3k5x7q0002\n```"
    lines = render.render_entry("09:00 · tool t", content, "m-01jd3k5x7q0001")
    assert lines[1:4] == content.split("\n")[:3]
    tf = TextFile(lines=[line + "\n" for line in ["# S", "", *lines]])
    (memory,) = blk.parse("sessions/s.md", tf).memories()
    assert (memory.text, memory.fields) == (content, ())
