"""A retired line leaving its note is read without a parse (blocks.without_lines):
whenever it answers, it answers what a full parse of the file would."""

from __future__ import annotations

import itertools

import pytest

from mdmem.files import blocks as blk
from mdmem.files.textfile import TextFile

FILES = [
    "# Memory\n\n- one ^m-0000000001aaaa\n- two ^m-0000000002aaaa\n- three ^m-0000000003aaaa\n",
    "# Memory\n\n- one ^m-0000000001aaaa\n\n- two\n  wrapped ^m-0000000002aaaa\n\n## Later\n\n"
    "- three ^m-0000000003aaaa\n",
    "# Memory\n\nA note of a person.\n- one ^m-0000000001aaaa\nMore of the note.\n",
    "# Memory\n\npara memory ^m-0000000009aaaa\n- one ^m-0000000001aaaa\nnext para\n",
    "---\ntags: [x]\n---\n# User\n\n- typed line\n- one ^m-0000000001aaaa\n- typed two\n",
    "# Learning\n\n## Topic: Git\n\n- one ^m-0000000001aaaa\n\n## Topic: Go\n\n"
    "- two ^m-0000000002aaaa\n",
    "# Memory\n\n- parent ^m-0000000001aaaa\n  - child note\n- two ^m-0000000002aaaa\n",
]


def _remove(tf: TextFile, block: blk.Block) -> tuple[TextFile, int, int]:
    """The lifter's cut: the block's lines and one separating blank line."""
    lines = list(tf.lines)
    start, end = block.line_start - 1, block.line_end
    if end < len(lines) and not lines[end].strip() and (start == 0 or not lines[start - 1].strip()):
        end += 1
    del lines[start:end]
    return TextFile(lines=lines), start, end


def _key(parsed: blk.ParsedFile) -> list[tuple[object, ...]]:
    return [(b.id, b.line_start, b.line_end, b.heading, b.text, b.kind) for b in parsed.blocks]


PATHS = ["USER.md", "notes/x.md"]


@pytest.mark.parametrize(("text", "path"), list(itertools.product(FILES, PATHS)))
def test_every_answer_is_a_full_parse(text: str, path: str) -> None:
    tf = TextFile(lines=text.splitlines(keepends=True))
    parsed = blk.parse(path, tf)
    answered = 0
    for block in parsed.memories():
        after, start, end = _remove(tf, block)
        quick = blk.without_lines(parsed, after, start, end)
        if quick is None:
            continue
        answered += 1
        assert _key(quick) == _key(blk.parse(path, after)), (text, block.id)
    if text in FILES[:2]:
        assert answered == len(parsed.memories())  # a memory file's list: always quick
