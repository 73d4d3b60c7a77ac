"""One context for a prompt: the person's memories and the team's lines, one budget.

:meth:`mdmem.memory.desks.reading.Reading.compose` is what every door that
puts memory in front of a model calls — the prompt-submit and session-start
hooks, ``prompt_context``, ``mdmem context``/``recall``, ``mdmem team show``
and the MCP ``context``/``recall`` tools — so the team tier is one of the
reading view's sources, composed one way:

* the person's sections first (recall's relevant items, or the sections a
  hook built: the pinned profile, what changed), then the repository's
  team lines (:func:`mdmem.team.tier.team_context`), each section fenced as
  quoted data (the team's under its own note);
* every item is added while the whole stays within ``max_chars``; one that
  does not fit is skipped and the next tried, so a long item does not keep
  a shorter one after it out;
* a memory both sides hold (the person's own copy of a line the team
  accepted) is shown once, in the team's section: its label says who
  accepted it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from mdmem.errors import InvalidInputError
from mdmem.models import Hit, Recall, one_line
from mdmem.recall.asdata import data_line, fence
from mdmem.team.tier import TeamContext, render_team

__all__ = ["Composed", "Section", "compose"]

#: A section of a composed context: its heading ("" for none) and its (id, line) items.
Section = tuple[str, Sequence[tuple[str, str]]]
_NOTHING = "(no relevant memories)"


@dataclass
class Composed:
    """A composed context and what it shows."""

    text: str  # the whole block, within the budget
    ids: list[str]  # the person's own memories shown, in order
    team: TeamContext  # the team tier's answer (status, repository, its lines)
    team_ids: list[str] = field(default_factory=list)  # the team lines shown
    team_block: str = ""  # the team's section as it stands in ``text`` ("" without)
    recall: Recall | None = None  # the recall the person's items came from, if any
    cited: list[Hit] = field(default_factory=list)  # those items shown, best first
    empty: bool = False  # nothing fitted or nothing to show: ``text`` says so

    @property
    def shown(self) -> list[str]:
        """Every memory id shown, the person's and the team's."""
        return [*self.ids, *self.team_ids]

    def team_json(self) -> dict[str, Any]:
        """The team tier's part in the doors' stable shape (status, repo, items, ...)."""
        return self.team.to_json(self.team_ids, self.team_block)


def compose(
    title: str,
    own: Sequence[Section],
    team: TeamContext,
    max_chars: int | None,
    *,
    hits: Sequence[Hit] = (),
    recall: Recall | None = None,
) -> Composed:
    """Pack ``own`` sections and ``team``'s lines (see the module doc). ``hits``:
    the items of a recall-made first section, so that one is shortened rather
    than none shown when no item fits whole."""
    if max_chars is not None and max_chars < len(title) + 20:
        raise InvalidInputError(f"max_chars must be at least {len(title) + 20}")
    sections: list[tuple[str, Sequence[tuple[str, str]], bool]] = [
        (heading, lines, False) for heading, lines in own
    ]
    if team.lines:
        sections.append((team.heading, team.lines, True))
    # A memory two sections hold is shown once, in the last.
    last = {i: n for n, (_, lines, _) in enumerate(sections) for i, _ in lines if i}
    chosen: list[tuple[str, list[str], bool]] = []
    ids: list[str] = []
    team_ids: list[str] = []
    for n, (heading, lines, is_team) in enumerate(sections):
        kept: list[str] = []
        for memory_id, line in lines:
            if memory_id and last[memory_id] != n:
                continue
            if max_chars is not None:
                trial = [*chosen, (heading, [*kept, line], is_team)]
                if len(_render(title, trial)) > max_chars:
                    continue
            kept.append(line)
            if memory_id:
                (team_ids if is_team else ids).append(memory_id)
        if kept:
            chosen.append((heading, kept, is_team))
    cited = [h for h in hits if h.id in ids]
    if hits and not ids and max_chars is not None:
        # No item fits whole: the best one, shortened, rather than nothing.
        best = hits[0]
        bare = ("", [data_line(best, "", best.citation)], False)
        room = max_chars - len(_render(title, [bare, *chosen]))
        if room >= 20:
            short = data_line(best, one_line(best.text, room), best.citation)
            chosen.insert(0, ("", [short], False))
            ids, cited = [best.id], [best]
    text = _render(title, chosen) if chosen else f"{title}\n\n{_NOTHING}\n"
    team_part = next((_part(h, lines, t) for h, lines, t in chosen if t), "")
    return Composed(text, ids, team, team_ids, team_part, recall, cited, empty=not chosen)


def recalled_lines(hits: Sequence[Hit]) -> list[tuple[str, str]]:
    """A recall's items as a section's (id, line) pairs, each cited by path#^id."""
    return [(h.id, data_line(h, " ".join(h.text.split()), h.citation)) for h in hits]


def _part(heading: str, lines: list[str], is_team: bool) -> str:
    body = render_team(lines) if is_team else fence(lines)
    return f"{heading}\n{body}" if heading else body


def _render(title: str, parts: Sequence[tuple[str, list[str], bool]]) -> str:
    return "\n\n".join([title, *(_part(h, lines, t) for h, lines, t in parts)]) + "\n"
