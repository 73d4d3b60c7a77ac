"""The team tier: memory a team shares through its code repository.

A folder of markdown memory lines (``.mdmem/team/``) committed with the
code, promoted from a person's vault by proposal and accepted by another
person (:mod:`mdmem.team.folder`, written through the write engine's lock and
compare-and-swap, :mod:`mdmem.team.writer`), whose provenance is git's
(:mod:`mdmem.team.provenance`), checked for CI (:mod:`mdmem.team.check`) and
read by every teammate's doors, through the reading view's ``compose``, once
they trust the checkout (:mod:`mdmem.team.tier`, :mod:`mdmem.team.trust`).
See ``docs/team.md``.
"""

from mdmem.team.check import Finding, check
from mdmem.team.folder import Decision, SetUp, Source, TeamFolder
from mdmem.team.lines import TeamLine
from mdmem.team.repo import TEAM_DIR, Checkout, find_checkout, require_checkout
from mdmem.team.tier import TeamContext, team_context
from mdmem.team.trust import is_trusted, trust_checkout

__all__ = [
    "TEAM_DIR",
    "Checkout",
    "Decision",
    "Finding",
    "SetUp",
    "Source",
    "TeamContext",
    "TeamFolder",
    "TeamLine",
    "check",
    "find_checkout",
    "is_trusted",
    "require_checkout",
    "team_context",
    "trust_checkout",
]
