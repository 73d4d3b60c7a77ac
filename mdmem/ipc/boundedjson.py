"""JSON from a stranger, refused before it can nest deep enough to end the process.

Every door reads JSON a host or a client sent: the warm server's messages, a
hook's stdin, a transcript's lines. Python's parser and every walk over its
result recurse, so nesting is bounded before parsing. Standard library only:
the hook client imports this on its fast path.
"""

from __future__ import annotations

import json
import re

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

__all__ = ["MAX_DEPTH", "loads_bounded"]

#: The deepest JSON nesting a message (or a hook payload) may have. Hosts send
#: a few levels (a tool's input inside the payload); Python's parser and every
#: walk over the result recurse, and ~1,000 levels end the process's stack.
MAX_DEPTH = 64

_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def loads_bounded(data: bytes, max_depth: int = MAX_DEPTH) -> Any:
    """``json.loads(data)``, refusing (ValueError) nesting deeper than ``max_depth``.

    The depth is measured before parsing, at C speed: strings are cut out,
    every other byte but brackets dropped, and innermost ``[]``/``{}`` pairs
    peeled off one level per pass. What is left after ``max_depth`` passes
    is nested deeper (or unbalanced, which the parser then rejects).
    """
    brackets = _JSON_STRING.sub(b"", data).translate(None, _NOT_BRACKETS)
    for _ in range(max_depth):
        if not brackets:
            break
        peeled = brackets.replace(b"[]", b"").replace(b"{}", b"")
        if peeled == brackets:
            break  # unbalanced: json.loads says where
        brackets = peeled
    else:
        if brackets:
            raise ValueError(f"JSON nested deeper than {max_depth} levels")
    try:
        return json.loads(data)
    except RecursionError:  # not reachable after the check; never let it past
        raise ValueError(f"JSON nested deeper than {max_depth} levels") from None
