"""Who proposed and who accepted a team line: git's answer, never the line's.

A line's ``accepted by Bob`` is text anyone can type. What counts is the
repository's history: each ``mdmem team`` verb is a commit authored by the
person who ran it, with trailers naming what it did (``Op: team-propose`` /
``Op: team-accept``, one ``Memory-Id`` per line). From ``git log`` of the
team folder (:func:`events`) a line's review (:func:`review`) is:

* **accepted** — its latest proposal is followed by an acceptance whose
  author is a person (not an agent's identity) other than the proposal's
  author, and the line's text now is the text that acceptance commit held;
* **proposed** — a proposal nobody else accepted yet;
* **unreviewed** — anything else, and why: no proposal in git (typed into
  the file by hand), accepted by its own proposer (or only by an agent),
  changed since it was accepted, or past the start of a shallow clone.

The same person is the same email (case aside) or the same name: changing
one of them does not make a second reviewer. Git identities are what the
repository's own review process vouches for (who may push, pull request
reviews); mdmem does not check signatures.

:func:`events` reads the commits, and the text each acceptance held from its
commit's tree (one ``git cat-file --batch``), once: the tier caches them under the commit
HEAD names and asks only for the commits a later HEAD added.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from mdmem.errors import GitError
from mdmem.files import blocks as blk
from mdmem.files.ids import ID_PATTERN
from mdmem.files.textfile import SkipFile, decode
from mdmem.store.gitstore import GitStore, is_agent_email
from mdmem.team.lines import ACCEPTED, PROPOSED, UNREVIEWED, TeamLine, digest, team_line
from mdmem.team.repo import TEAM_DIR

__all__ = ["Event", "events", "review", "same_person"]

_RS, _US = "\x1e", "\x1f"
_TRAILER = re.compile(r"^(Op|Memory-Id):[ \t]*(\S+)[ \t]*$", re.MULTILINE)
_ID = re.compile(ID_PATTERN)
_OPS = {"team-propose": PROPOSED, "team-accept": ACCEPTED}


@dataclass(frozen=True)
class Event:
    """One proposal or acceptance of one line, as a commit records it."""

    op: str  # "proposed" | "accepted"
    id: str
    sha: str
    name: str
    email: str
    date: str  # the author date, ISO 8601
    digest: str = ""  # an acceptance: the digest of the line's text in its commit

    def to_json(self) -> list[str]:
        return [self.op, self.id, self.sha, self.name, self.email, self.date, self.digest]

    @classmethod
    def from_json(cls, row: Sequence[str]) -> Event:
        return cls(*(str(x) for x in row[:7]))


def events(git: GitStore, head: str, since: str | None = None) -> list[Event]:
    """The proposals and acceptances in the history of ``head`` (only the commits
    after ``since``, an ancestor of it, when given), oldest first."""
    span = f"{since}..{head}" if since else head
    out = git.run(
        "log",
        "--reverse",
        "--topo-order",
        "--no-renames",
        "--name-only",
        f"--format={_RS}%H{_US}%an{_US}%ae{_US}%aI{_US}%B{_US}",
        span,
        "--",
        TEAM_DIR,
        strip=False,
    )
    commits = []
    for chunk in out.split(_RS)[1:]:
        parts = chunk.split(_US)
        if len(parts) < 6:
            continue
        sha, name, email, date, body, names = parts[:6]
        ops = [_OPS[v] for k, v in _TRAILER.findall(body) if k == "Op" and v in _OPS]
        ids = [v for k, v in _TRAILER.findall(body) if k == "Memory-Id" and _ID.fullmatch(v)]
        if ops and ids:
            commits.append((sha, name, email, date, ops, ids, names.split()))
    # The text each acceptance held, read from all their trees in one git process.
    wanted = [
        (sha, rel)
        for sha, _, _, _, ops, _, paths in commits
        if ACCEPTED in ops
        for rel in paths
        if rel.startswith(f"{TEAM_DIR}/") and rel.endswith(".md") and "/." not in rel
    ]
    texts = _accepted_texts(git, wanted)
    found: list[Event] = []
    for sha, name, email, date, ops, ids, _ in commits:
        for op in dict.fromkeys(ops):
            for memory_id in dict.fromkeys(ids):
                mark = texts.get((sha, memory_id), "") if op == ACCEPTED else ""
                found.append(Event(op, memory_id, sha, name, email, date, mark))
    return found


def _accepted_texts(git: GitStore, wanted: list[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """(commit, id) -> the digest of that line's text in the team files the commit
    holds (``git cat-file --batch`` of each (commit, path))."""
    if not wanted:
        return {}
    out = git.run_bytes(
        "cat-file", "--batch", input="".join(f"{sha}:{rel}\n" for sha, rel in wanted).encode()
    )
    digests: dict[tuple[str, str], str] = {}
    pos = 0
    for sha, rel in wanted:
        header_end = out.index(b"\n", pos)
        header = out[pos:header_end].split()
        pos = header_end + 1
        if len(header) < 3 or header[1] != b"blob":
            continue  # "missing": the commit removed the file
        size = int(header[2])
        data = out[pos : pos + size]
        pos += size + 1
        try:
            parsed = blk.parse(rel, decode(data), labels=True)
        except SkipFile:
            continue
        for block in parsed.memories():
            digests.setdefault((sha, block.id), digest(team_line(block).text))
    return digests


def same_person(a: tuple[str, str], b: tuple[str, str]) -> bool:
    """One person behind two (name, email) identities: the same email or the
    same name (case and spacing aside; an empty one matches nothing)."""

    def norm(text: str) -> str:
        return " ".join(text.split()).casefold()

    return any(norm(x) and norm(x) == norm(y) for x, y in zip(a, b, strict=True))


def review(line: TeamLine, history: Sequence[Event], *, shallow: bool = False) -> TeamLine:
    """``line`` with git's answer (see the module doc); ``history``: every event
    of the repository (or of this line), oldest first."""
    mine = [e for e in history if e.id == line.id]
    proposals = [n for n, e in enumerate(mine) if e.op == PROPOSED]
    if not proposals:
        why = "no proposal in git: typed into the file by hand"
        if shallow:
            why = "its proposal is not in this shallow clone's history"
        return line.reviewed(status=UNREVIEWED, why=why)
    proposal = mine[proposals[-1]]
    found = {
        "proposed_by": proposal.name,
        "proposed_email": proposal.email,
        "proposed": proposal.date[:10],
    }
    accepts = [e for e in mine[proposals[-1] + 1 :] if e.op == ACCEPTED]
    if not accepts:
        return line.reviewed(status=PROPOSED, **found)
    proposer = (proposal.name, proposal.email)
    others = [
        e
        for e in accepts
        if not same_person((e.name, e.email), proposer) and not is_agent_email(e.email)
    ]
    if not others:
        who = "an agent" if all(is_agent_email(e.email) for e in accepts) else "its own proposer"
        return line.reviewed(status=UNREVIEWED, why=f"accepted by {who} only", **found)
    kept = [e for e in others if e.digest and e.digest == line.digest]
    if not kept:
        last = others[-1]
        return line.reviewed(
            status=UNREVIEWED,
            why=f"its text changed since {last.name} accepted it ({last.sha[:10]})",
            **found,
        )
    accept = kept[-1]
    return line.reviewed(
        status=ACCEPTED,
        accepted_by=accept.name,
        accepted=accept.date[:10],
        accept_commit=accept.sha,
        **found,
    )


def reviewed_lines(git: GitStore, lines: list[TeamLine], *, shallow: bool) -> list[TeamLine]:
    """``lines`` reviewed against the whole history of HEAD (no cache: the CLI's
    verbs and ``team check``)."""
    head = git.head()
    if head is None:
        return [review(line, (), shallow=shallow) for line in lines]
    try:
        history = events(git, head)
    except GitError:
        history = []
    return [review(line, history, shallow=shallow) for line in lines]
