"""The words of an episode note besides its summary: title, tiers, file name, log line.

Consolidation writes them from a draft's summary; purge and retention write
them again, from a regenerated one (:mod:`mdmem.memory.consolidation.regenerate`), with the
same functions, so a regenerated note reads as a fresh one would.
"""

from __future__ import annotations

from dataclasses import dataclass

from mdmem.memory.capture import extractive
from mdmem.memory.capture.sessions import turn_text
from mdmem.models import Block
from mdmem.store.tiers import OVERVIEW_CHARS, abstract_of

__all__ = ["EpisodeText", "episode_name", "episode_text", "log_text", "title_of"]


def _first_sentence(text: str, limit: int = 160) -> str:
    first = extractive.sentences(text)[:1]
    out = first[0] if first else text
    return out if len(out) <= limit else out[: limit - 1] + "…"


def log_text(
    entries: int, contact: str, path: str, episode_id: str, model: str, summary: str
) -> str:
    """The daily-log line announcing an episode (its first sentence quoted)."""
    who = f" with {contact}" if contact else ""
    return (
        f"Consolidated {entries} session entries{who} into [[{path}#^{episode_id}]]"
        f" ({model}): {_first_sentence(summary)}"
    )


def title_of(summary: str, entries: list[Block]) -> str:
    """A phrase of the summary (its most central sentence, shortened), else of the
    conversation; the keywords only when neither has a sentence to offer."""
    texts = [turn_text(b) for b in entries]
    phrase = extractive.title(summary) or extractive.title("\n".join(texts))
    if phrase:
        return phrase
    words = extractive.keywords(texts, n=5)
    return " ".join(words).capitalize() if words else "Conversation"


@dataclass(frozen=True)
class EpisodeText:
    """The phrases of an episode note made from its summary: title and tiers."""

    title: str
    abstract: str
    overview: str


def episode_text(summary: str, entries: list[Block], facts: list[str]) -> EpisodeText:
    """Title, ``abstract`` (L0) and ``overview`` (L1) of an episode (store/tiers.py):
    L1 is a few central sentences of the summary and the facts; L2 the summary."""
    title = title_of(summary, entries)
    overview = extractive.summarize(
        [("user", summary), *(("user", text) for text in facts)],
        max_sentences=4,
        max_chars=OVERVIEW_CHARS,
    )
    abstract = abstract_of(title if not summary else _first_sentence(summary))
    return EpisodeText(title, abstract, overview)


def episode_name(day: str, title: str, n: int = 1) -> str:
    """``2026-03-01-deploy-schedule-thursday.md``: the day and the title's first words."""
    slug = extractive.slugify(title, max_words=5)
    return f"{day}-{slug}{'' if n == 1 else f'-{n}'}.md"
