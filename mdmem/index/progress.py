"""Progress reports of long work: ``progress(phase, done, total)``.

The CLI turns them into bars on stderr (only on a terminal); the library
calls them at each step it can count (files indexed, blocks embedded, groups
consolidated, doctor's checks).
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["Progress", "counter", "silent"]

Progress = Callable[[str, int, int], None]


def silent(phase: str, done: int, total: int) -> None:
    """The progress callback of a caller who asked for none."""


def counter(tell: Progress, phase: str, total: int) -> Callable[[int], None]:
    """A per-chunk callback (``tick(n)``) that reports the running count of ``phase``."""
    done = 0

    def tick(n: int) -> None:
        nonlocal done
        done += n
        tell(phase, done, total)

    return tick
