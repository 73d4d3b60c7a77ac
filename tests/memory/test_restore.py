"""Lossless round trip (issue 25): export → ``import --restore`` → export is the same vault.

The restore is the user's act (``restore=True``), the export a whole file
(header, trailer, digest); anything else is refused before a byte is written.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mdmem import Vault
from mdmem.cli import main
from mdmem.errors import InvalidInputError, MdmemError
from mdmem.memory.capture.sessions import session_id_of

T0 = datetime(2024, 5, 3, 9, 0, tzinfo=UTC)


def _export(vault: Vault, path: Path) -> Path:
    with path.open("w", encoding="utf-8") as out:
        vault.library.export(out)
    return path


def _body(path: Path) -> list[str]:
    """The export's lines but its header (vault name, commit and time: the commit
    metadata, which differs by design) and the trailer's digest (it covers the header)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0])["mdmem_export"] == 2
    trailer = json.loads(lines[-1])
    del trailer["sha256"]
    return [*lines[1:-1], json.dumps(trailer)]


def _restored(vault: Vault, tmp_path: Path, name: str = "moved") -> tuple[Vault, Path]:
    dump = _export(vault, tmp_path / f"{name}-export.jsonl")
    fresh = Vault.init(tmp_path / name, agent="mover")
    report = fresh.library.import_(dump, restore=True)
    assert report.refused == 0, report.refusals
    assert report.restored and report.commits >= 1
    return fresh, dump


def _consolidated_vault(root: Path) -> Vault:
    """Sessions from several sources (one session switches source mid-way), a
    supersede chain, importance, consolidation (episodes, facts, daily-log
    links, markers), a linked contact with a profile, a tool output."""
    vault = Vault.init(root, agent="orc-1")
    vault.contacts.link("telegram:42", "user:ana", display_name="Ana")
    chat = vault.session("trip", source="telegram", contact="telegram:42")
    chat.record("user", "I prefer metric units.", "t1", when=T0)
    chat.record("assistant", "Noted: metric.", "t2", when=T0 + timedelta(minutes=1))
    # The same conversation continued from another device.
    desk = vault.session("trip", source="cli", contact="telegram:42")
    desk.record("user", "My manager is Joao.", "c1", when=T0 + timedelta(minutes=2))
    chat.record("user", "Book the train to Porto.", "t3", when=T0 + timedelta(minutes=3))
    chat.record_tool_output("search", "3 trains found", when=T0 + timedelta(minutes=4))
    ops = vault.session("ops", source="slack")
    ops.record("user", "We deploy on Tuesdays.", "s1", speaker="Joao", when=T0 + timedelta(hours=2))
    ops.record("assistant", "Got it.", "s2", when=T0 + timedelta(hours=2, minutes=1))
    first = vault.remember("The launch is in April.", importance=8)
    second = vault.supersede(first.id, "The launch is in May.")
    vault.supersede(second.id, "The launch is in June.")
    vault.remember("Use pnpm.", kind="decision", importance=3, origin="planning")
    vault.resolve(vault.remember("Fix the flaky login test.", kind="gotcha").id)
    vault.learn("Git", "Rebase keeps history linear.")
    vault.journal("I should ask before deleting branches.")
    result = vault.consolidate()
    assert result.episodes and result.consolidated >= 7
    return vault


def _links(vault: Vault) -> set[tuple[str, str, str]]:
    keys = ("by", "episode", "consolidated", "contact", "session", "importance", "origin_type")
    return {
        (m.id, key, value)
        for m in vault.library.list()
        for key, value in vault.get(m.id).fields
        if key in keys
    }


def _session_order(vault: Vault) -> dict[str, list[tuple[str, str | None]]]:
    order: dict[str, list[tuple[str, str | None]]] = {}
    for m in sorted(vault.library.list(), key=lambda m: (m.path, m.line)):
        if session_id_of(m.path) is not None:
            order.setdefault(m.path, []).append((m.text, vault.get(m.id).field("source")))
    return order


def _files(vault: Vault) -> dict[str, bytes]:
    """The vault's files but its settings (mdmem.toml names its own agent)."""
    skip = {".git", ".obsidian", "templates", "mdmem.toml", ".gitignore", ".gitattributes"}
    return {
        p.relative_to(vault.root).as_posix(): p.read_bytes()
        for p in vault.root.rglob("*")
        if p.is_file() and not skip & set(p.relative_to(vault.root).parts)
    }


def test_a_consolidated_vault_moves_without_losing_a_line(tmp_path: Path) -> None:
    vault = _consolidated_vault(tmp_path / "home")
    moved, dump = _restored(vault, tmp_path)
    before = {m.id: (m.text, m.kind, m.status, m.scope, m.path) for m in vault.library.list()}
    after = {m.id: (m.text, m.kind, m.status, m.scope, m.path) for m in moved.library.list()}
    assert after == before
    assert _links(moved) == _links(vault)
    assert _session_order(moved) == _session_order(vault)
    # Every file of the vault's knowledge, byte for byte (settings aside).
    assert _files(moved) == _files(vault)
    # The episode is an episode, the daily log still links it, the supersede
    # chain holds, the contact's profile and scope came along.
    (episode,) = [m for m in moved.library.list() if m.kind == "episode" and m.scope == "user:ana"]
    daily = next(m for m in moved.library.list() if m.kind == "log" and episode.id in m.text)
    assert daily.scope == "user:ana"
    assert moved.contacts.profile("user:ana").platform_ids == ["telegram:42"]
    assert moved.contacts.scope_for("telegram:42") == "user:ana"
    june = next(m for m in moved.library.list() if m.text == "The launch is in June.")
    may = next(m for m in moved.library.list() if m.text == "The launch is in May.")
    assert moved.get(may.id).field("by") == f"^{june.id}" and may.status == "superseded"
    # Nothing to consolidate again: the markers came along.
    dry = moved.consolidate(dry_run=True)
    assert (dry.pending_before, dry.episodes, dry.facts, dry.diff) == (0, [], [], "")
    # export → restore → export: the same lines (ids, commits' metadata aside).
    again = _export(moved, tmp_path / "again.jsonl")
    assert _body(again) == _body(dump)
    # Recall finds the same things.
    for query in ("metric units", "Porto train", "launch month", "deploy day"):
        want = [h.id for h in vault.recall(query, k=3).items[:1]]
        assert [h.id for h in moved.recall(query, k=3).items[:1]] == want, query


def test_restoring_twice_or_into_the_source_adds_nothing(tmp_path: Path) -> None:
    vault = _consolidated_vault(tmp_path / "home")
    moved, dump = _restored(vault, tmp_path)
    head = moved.admin.store.git.head()
    again = moved.library.import_(dump, restore=True)
    assert (again.added, again.refused, again.commits) == (0, 0, 0)
    assert again.duplicates == again.messages > 0
    home = vault.library.import_(dump, restore=True)
    assert (home.added, home.refused, home.commits) == (0, 0, 0)
    assert moved.admin.store.git.head() == head


def test_restore_merges_into_a_vault_with_its_own_memories(tmp_path: Path) -> None:
    source = Vault.init(tmp_path / "a", agent="a")
    source.remember("Alpha prefers tea.", kind="preference")
    source.learn("Git", "Rebase keeps history linear.")
    source.session("chat", source="cli").record("user", "From vault A.", "a1", when=T0)
    dump = _export(source, tmp_path / "a.jsonl")
    target = Vault.init(tmp_path / "b", agent="b")
    mine = target.remember("Beta drinks coffee.", kind="preference")
    target.learn("Git", "Small commits review faster.")
    target.learn("Python", "Use pathlib.")
    target.session("chat", source="cli").record("user", "From vault B.", "b1", when=T0)
    report = target.library.import_(dump, restore=True)
    assert report.refused == 0 and report.added == 3, report.refusals
    texts = {m.text: m for m in target.library.list()}
    assert {"Alpha prefers tea.", "Beta drinks coffee.", mine.text} <= set(texts)
    # A learning lands under its topic; the session keeps both vaults' turns.
    learning = (target.root / "LEARNING.md").read_text()
    git_section = learning.split("## Topic: Git")[1].split("## Topic:")[0]
    assert "Rebase keeps history linear." in git_section
    assert texts["Rebase keeps history linear."].kind == "learning"
    chat = [m.text for m in target.session("chat").entries()]
    assert chat == ["From vault B.", "From vault A."]
    # A line outside any memory that the vault's own file lacks is named, not lost silently.
    (source.root / "LEARNING.md").write_text(
        (source.root / "LEARNING.md").read_text() + "\n## My notes\n\nCall the bank.\n"
    )
    source.admin.commit_human_edits()
    report = target.library.import_(_export(source, tmp_path / "a2.jsonl"), restore=True)
    assert report.added == 0
    assert [r["where"] for r in report.refusals] == ["LEARNING.md"]
    assert "outside its memories" in report.refusals[0]["reason"]


def test_a_memory_changed_since_the_export_is_kept_and_listed(tmp_path: Path) -> None:
    vault = Vault.init(tmp_path / "v", agent="a")
    kept = vault.remember("The office is in Lisbon.")
    dump = _export(vault, tmp_path / "old.jsonl")
    vault.resolve(kept.id)
    report = vault.library.import_(dump, restore=True)
    assert report.added == 0 and report.refused == 1
    assert (
        kept.id in report.refusals[0]["where"]
        and "kept the vault's" in report.refusals[0]["reason"]
    )
    assert vault.get(kept.id).status == "resolved"


def _rewrite(dump: Path, edit) -> Path:  # type: ignore[no-untyped-def]
    """The export with its body edited and a trailer that matches again (a
    forger can compute a digest: the trailer guards against accidents)."""
    lines = dump.read_text().splitlines(keepends=True)
    body = edit(lines[:-1])
    trailer = json.loads(lines[-1])
    trailer["rows"] = len(body)
    trailer["sha256"] = hashlib.sha256("".join(body).encode()).hexdigest()
    out = dump.with_name("edited-" + dump.name)
    out.write_text("".join(body) + json.dumps(trailer) + "\n")
    return out


def test_only_a_whole_unchanged_export_is_restored(vault: Vault, tmp_path: Path) -> None:
    vault.remember("Something worth keeping.")
    dump = _export(vault, tmp_path / "export.jsonl")
    target = Vault.init(tmp_path / "t", agent="t")
    head = target.admin.store.git.head()
    chat = tmp_path / "chat.jsonl"
    chat.write_text(json.dumps({"role": "user", "content": "hi", "scope": "user:x"}) + "\n")
    lines = dump.read_text().splitlines(keepends=True)
    cut = tmp_path / "cut.jsonl"
    cut.write_text("".join(lines[:-1]))
    edited = tmp_path / "edited.jsonl"
    edited.write_text("".join(lines).replace("worth keeping", "worth stealing"))
    later = tmp_path / "v9.jsonl"
    later.write_text(json.dumps({"mdmem_export": 9}) + "\n" + "".join(lines[1:]))
    cases = {
        chat: "not an mdmem export",
        cut: "cut short",
        edited: "don't match",
        later: "format 9",
    }
    for path, message in cases.items():
        with pytest.raises(InvalidInputError, match=message):
            target.library.import_(path, restore=True)
    with pytest.raises(InvalidInputError, match="--restore"):
        target.library.import_(dump, restore=True, scope="user:x")
    assert target.admin.store.git.head() == head and target.library.list() == []


def test_a_restore_writes_only_knowledge_files_inside_the_vault(
    vault: Vault, tmp_path: Path
) -> None:
    vault.remember("A fact.")
    dump = _export(vault, tmp_path / "export.jsonl")
    hostile = [
        "../outside.md",
        ".git/hooks/post-commit.md",
        ".obsidian/app.md",
        "templates/daily.md",
        "mdmem.toml",
        "/etc/passwd.md",
        "notes\\win.md",
    ]

    def add_files(body: list[str]) -> list[str]:
        return body + [json.dumps({"file": p, "text": "planted\n"}) + "\n" for p in hostile]

    target = Vault.init(tmp_path / "t", agent="t")
    report = target.library.import_(_rewrite(dump, add_files), restore=True)
    assert report.added == 1
    assert {r["where"] for r in report.refusals} == set(hostile)
    assert not (tmp_path / "outside.md").exists()
    assert not (target.root / ".git" / "hooks" / "post-commit.md").exists()
    assert (target.root / "templates" / "daily.md").read_text() != "planted\n"


def test_cli_restore_and_its_refusals(vault: Vault, tmp_path: Path) -> None:
    vault.remember("The cat is called Mia.", importance=7)
    dump = _export(vault, tmp_path / "export.jsonl")
    runner = CliRunner()
    target = tmp_path / "target"
    assert runner.invoke(main, ["init", str(target)]).exit_code == 0
    out = runner.invoke(main, ["--vault", str(target), "library", "import", "--restore", str(dump)])
    assert out.exit_code == 0, out.output
    assert "restored 1 files from the export of vault: 1 of 1 memories new" in out.output
    usage = runner.invoke(
        main,
        ["--vault", str(target), "library", "import", "--restore", "--scope", "user:x", str(dump)],
    )
    assert usage.exit_code == 2 and "--restore" in usage.output
    plain = runner.invoke(main, ["--vault", str(target), "library", "import", str(dump), "--json"])
    report = json.loads(plain.output)
    assert report["duplicates"] == 1 and any("--restore" in n for n in report["notes"])


# ----------------------------------------------------------- the property --

WORDS = ["alpha", "tea", "Lisbon", "train", "deploy", "Tuesday", "cat", "Mia", "pnpm", "Git"]
_text = st.lists(st.sampled_from(WORDS), min_size=2, max_size=6).map(
    lambda ws: " ".join(ws).capitalize() + "."
)
_scope = st.sampled_from(["", "project:web", "user:ana"])
_op = st.one_of(
    st.tuples(
        st.just("remember"),
        _text,
        st.sampled_from(["fact", "preference", "decision", "gotcha", "world"]),
        _scope,
        st.one_of(st.none(), st.integers(1, 10)),
    ),
    st.tuples(st.just("supersede"), _text, st.integers(0, 50)),
    st.tuples(st.just("resolve"), st.integers(0, 50)),
    st.tuples(
        st.just("record"),
        _text,
        st.sampled_from(["s1", "s2"]),
        st.sampled_from([None, "telegram", "cli"]),
        st.sampled_from(["user", "assistant"]),
        st.sampled_from([None, "telegram:42"]),
        st.integers(0, 500),
    ),
    st.tuples(st.just("tool"), _text, st.sampled_from(["s1", "s2"]), st.integers(0, 500)),
    st.tuples(st.just("log"), _text, _scope),
    st.tuples(st.just("learn"), _text, st.sampled_from(["Git", "Ops"])),
    st.tuples(st.just("journal"), _text),
    st.tuples(st.just("link"), st.sampled_from(["user:ana", "user:bo"])),
    st.tuples(st.just("consolidate")),
    st.tuples(st.just("note"), _text, st.sampled_from(["notes/plan.md", "ideas.md"])),
)


def _apply(vault: Vault, op: tuple) -> None:  # type: ignore[type-arg]
    ids = [m.id for m in vault.library.list() if m.status == "active" and m.kind != "episode"]
    name = op[0]
    if name == "remember":
        vault.remember(op[1], kind=op[2], scope=op[3] or None, importance=op[4])
    elif name == "supersede" and ids:
        vault.supersede(ids[op[2] % len(ids)], op[1])
    elif name == "resolve" and ids:
        vault.resolve(ids[op[1] % len(ids)])
    elif name == "record":
        session = vault.session(op[2], source=op[3], contact=op[5])
        session.record(op[4], op[1], when=T0 + timedelta(minutes=op[6]))
    elif name == "tool":
        vault.session(op[2]).record_tool_output("pytest", op[1], when=T0 + timedelta(minutes=op[3]))
    elif name == "log":
        vault.log(op[1], category="Ops", scope=op[2] or None)
    elif name == "learn":
        vault.learn(op[2], op[1])
    elif name == "journal":
        vault.journal(op[1])
    elif name == "link":
        vault.contacts.link("telegram:42", op[1])
    elif name == "consolidate":
        vault.consolidate()
    elif name == "note":  # a person's own note, typed in the editor
        path = vault.root / op[2]
        path.parent.mkdir(exist_ok=True)
        path.write_text(f"# Plan\n\n{op[1]}\n")
        vault.admin.commit_human_edits()


@pytest.mark.slow
def test_property_export_restore_export_is_the_identity(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    @settings(
        max_examples=15,  # each builds two vaults under git
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(ops=st.lists(_op, min_size=1, max_size=14))
    def check(ops: list[tuple]) -> None:  # type: ignore[type-arg]
        # Whoosh names its segment files with the random module, which
        # hypothesis seeds the same for every example.
        random.seed(os.urandom(16))
        tmp = tmp_path_factory.mktemp("vaults")
        vault = Vault.init(tmp / "src", agent="gen")
        for op in ops:
            try:
                _apply(vault, op)
            except MdmemError:
                pass  # a refused write (a duplicate, a supersede of an odd target)
        first = _export(vault, tmp / "first.jsonl")
        moved = Vault.init(tmp / "dst", agent="mover")
        report = moved.library.import_(first, restore=True)
        assert report.refused == 0, report.refusals
        second = _export(moved, tmp / "second.jsonl")
        assert _body(second) == _body(first)
        vault.close()
        moved.close()

    check()


def test_export_to_a_stream_has_the_same_body(vault: Vault, tmp_path: Path) -> None:
    vault.remember("A streamed fact.")
    out = io.StringIO()
    vault.library.export(out)
    streamed = tmp_path / "streamed.jsonl"
    streamed.write_text(out.getvalue())
    assert _body(streamed) == _body(_export(vault, tmp_path / "e.jsonl"))
