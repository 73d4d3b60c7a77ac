"""Purge by content: the purged text is searched for everywhere after the sources are followed.

A person's note quoting it inside a longer line, a commit body, an annotated
tag's message, another branch, a stash, a git note, a consolidated copy that
cites the wrong source: each is rewritten, or purge fails naming what holds
it. Checked by byte search over every git object, the work tree and the
state dir, in the spellings the text was planted in.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from mdmem import Vault
from mdmem.cli import main
from mdmem.errors import PurgeIncompleteError
from mdmem.git.purge import PURGED
from mdmem.git.sweep import Sweep, is_copy_of
from mdmem.index.blocktext import embed_key
from mdmem.testing import ScriptedOpenAIServer
from tests.llm_fakes import FakeModel, llm_vault

from ..conftest import git

SECRET = "Remember that the Harrowby safe code is 7741-Quorn."
# Every spelling planted below, as bytes; and the words that only the secret has.
NEEDLES = (b"7741-quorn", b"7741\\-quorn", b"harrowby safe")


def everywhere(vault: Vault) -> list[str]:
    """Where any planted spelling still is (case-folded): git objects, files, state dir."""
    found = []
    objects = subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch"],
        cwd=vault.root,
        capture_output=True,
        check=True,
    ).stdout.lower()
    found += [f"git objects: {n!r}" for n in NEEDLES if n in objects]
    for base in (vault.root, vault.admin.state_dir):
        for path in base.rglob("*"):
            if path.is_file():
                data = path.read_bytes().lower()
                found += [f"{path}: {n!r}" for n in NEEDLES if n in data]
    return found


def _git_in(root: Path, *args: str, text: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, input=text, capture_output=True, text=True, check=True
    ).stdout


def _commit_on_branch(root: Path, branch: str, path: str, text: str, message: str) -> None:
    """A commit on another branch, made with plumbing (the work tree stays as it is)."""
    blob = _git_in(root, "hash-object", "-w", "--stdin", text=text).strip()
    base = git(root, "rev-parse", "HEAD").strip()
    listing = git(root, "ls-tree", base)
    tree = _git_in(root, "mktree", text=listing + f"100644 blob {blob}\t{path}\n").strip()
    commit = git(root, "commit-tree", tree, "-p", base, "-m", message, human=True).strip()
    git(root, "update-ref", f"refs/heads/{branch}", commit)


def _conversation(vault: Vault) -> dict[str, str]:
    s = vault.session("s1", source="cli", contact="alice")
    return {
        "hello": s.record("user", "Good morning, a few things for today.").id,
        "secret": s.record("user", SECRET).id,
        "pref": s.record("user", "I prefer dark mode in every editor.").id,
        "boss": s.record("user", "Also, my manager is Joao.").id,
    }


def _plant_everywhere(vault: Vault) -> None:
    root = vault.root
    note = root / "notes" / "plans.md"
    note.parent.mkdir(exist_ok=True)
    # Inside a longer line, in other case and spacing, and markdown-escaped.
    note.write_text(
        "# Plans\n\nMonday: remember that the HARROWBY safe code   is 7741-Quorn. Then lunch.\n"
        "Tuesday: Remember that the Harrowby safe code is 7741\\-Quorn. Bring tea.\n"
        "Wednesday: the garden.\n"
    )
    git(root, "add", "notes/plans.md", human=True)
    git(root, "commit", "-q", "-m", "my plans", "-m", f"Body that says: {SECRET}", human=True)
    git(root, "tag", "-a", "v1", "-m", f"release one\n\nNote to self: {SECRET}", human=True)
    _commit_on_branch(root, "side", "side.md", f"On a branch:\n{SECRET}\n", "side work")
    git(root, "notes", "add", "-m", f"reviewed; {SECRET}", "HEAD", human=True)
    # A plain-text file, and a note that said it once and was deleted since.
    (root / "notes" / "todo.txt").write_text(f"- [ ] {SECRET}\n- [ ] call Bea\n")
    gone = root / "notes" / "old.md"
    gone.write_text(f"Once: {SECRET}\n")
    git(root, "add", "notes/todo.txt", "notes/old.md", human=True)
    git(root, "commit", "-q", "-m", "todo and an old note", human=True)
    git(root, "rm", "-q", "notes/old.md")
    git(root, "commit", "-q", "-m", "drop the old note", human=True)
    scratch = root / "notes" / "scratch.md"
    scratch.write_text(f"a stash of: {SECRET}\n")
    git(root, "add", "notes/scratch.md", human=True)
    git(root, "stash", "push", "-q", "-m", "scratch", human=True)
    # A stash whose own message quotes it.
    (root / "notes" / "plans.md").write_text("# Plans\n\nnothing yet\n")
    git(root, "stash", "push", "-q", "-m", f"wip {SECRET}", human=True)


def test_a_planted_text_is_gone_from_notes_bodies_tags_branches_stashes_and_git_notes(
    vault: Vault,
) -> None:
    ids = _conversation(vault)
    keep = vault.remember("The garden gate code is 1234 and nothing else.")
    _plant_everywhere(vault)
    vault.recall("Harrowby safe code")  # index rows, cached vectors
    assert len(everywhere(vault)) > 3

    result = vault.git.purge(ids["secret"], confirm=True)

    assert everywhere(vault) == []
    note = (vault.root / "notes" / "plans.md").read_text()
    # The quote is redacted; the rest of each line stays.
    assert f"Monday: {PURGED} Then lunch." in note
    assert f"Tuesday: {PURGED} Bring tea." in note
    assert "Wednesday: the garden." in note
    cleaned = "\n".join(result.cleaned)
    assert "notes/plans.md" in cleaned and "message of tag v1" in cleaned
    assert "refs/heads/side:side.md" in cleaned and "refs/notes/commits:" in cleaned
    assert "message of commit" in cleaned
    # What the refs were is kept: the tag, the branch, the note, the stash.
    assert "release one" in git(vault.root, "tag", "-n1", "v1")
    assert PURGED in git(vault.root, "show", "side:side.md")
    # The note follows its commit, rewritten with a new sha.
    noted = git(vault.root, "log", "--format=%H", "--grep=my plans").split()[0]
    assert git(vault.root, "notes", "show", noted) == f"reviewed; {PURGED}\n"
    stashes = git(vault.root, "stash", "list").splitlines()
    assert len(stashes) == 2 and f"wip {PURGED}" in stashes[0] and "scratch" in stashes[1]
    assert (vault.root / "notes" / "todo.txt").read_text() == f"- [ ] {PURGED}\n- [ ] call Bea\n"
    assert vault.get(keep.id).text == "The garden gate code is 1234 and nothing else."
    subprocess.run(["git", "fsck", "--strict"], cwd=vault.root, check=True, capture_output=True)


def test_a_copy_citing_the_wrong_source_goes_with_the_purged_text(
    tmp_path: Path, server: ScriptedOpenAIServer, model: FakeModel
) -> None:
    def consolidate(blocks: dict[str, str]) -> dict[str, Any]:
        # The model cites the manager's turn (4) for the safe code: wrong.
        return {
            "summary": "Alice said the Harrowby safe code is 7741-Quorn and likes dark mode.",
            "facts": [
                {"text": "The Harrowby safe code is 7741-Quorn.", "sources": [4]},
                {"text": "The user's manager is Joao.", "sources": [4]},
            ],
            "pending": [],
            "preferences": [{"text": "The user prefers dark mode.", "sources": [3]}],
            "tone": "brisk",
            "confidence": 0.9,
        }

    model.consolidate = consolidate
    vault = llm_vault(tmp_path, server)
    ids = _conversation(vault)
    result = vault.consolidate()
    by_text = {m.text: m for m in result.facts}
    wrong = by_text["The Harrowby safe code is 7741-Quorn."]
    assert vault.get(wrong.id).field("sources") == f"^{ids['boss']}"
    assert any(b"7741-quorn" in n for n in (p.read_bytes().lower() for p in _md(vault)))

    purged = vault.git.purge(ids["secret"], confirm=True)

    assert everywhere(vault) == []
    assert wrong.id in purged.derived
    assert vault.get(by_text["The user's manager is Joao."].id).text.endswith("Joao.")
    assert "dark mode" in (vault.root / "USER.md").read_text()


def test_a_fact_its_own_source_explains_stays_though_it_sounds_like_the_purged_one(
    tmp_path: Path, server: ScriptedOpenAIServer, model: FakeModel
) -> None:
    def consolidate(blocks: dict[str, str]) -> dict[str, Any]:
        return {
            "summary": "Alice likes dark mode.",
            "facts": [
                {"text": "The user prefers dark mode in every terminal.", "sources": [2]},
                {"text": "The user prefers dark mode in every editor.", "sources": [1]},
                {"text": "The user's manager is Joao.", "sources": [4]},
            ],
            "pending": [],
            "preferences": [],
            "tone": "brisk",
            "confidence": 0.9,
        }

    model.consolidate = consolidate
    vault = llm_vault(tmp_path, server)
    s = vault.session("s2", source="cli", contact="alice")
    s.record("user", "Good morning.")
    s.record("user", "Dark mode in every terminal too, please.")
    editor = s.record("user", "I prefer dark mode in every editor, always.").id
    s.record("user", "Also, my manager is Joao.")
    facts = {m.text: m for m in vault.consolidate().facts}
    terminal = facts["The user prefers dark mode in every terminal."]
    miscited = facts["The user prefers dark mode in every editor."]  # cites "Good morning."

    purged = vault.git.purge(editor, confirm=True)

    assert miscited.id in purged.derived and terminal.id not in purged.derived
    assert vault.get(terminal.id).text == "The user prefers dark mode in every terminal."


def _md(vault: Vault) -> list[Path]:
    return [p for p in vault.root.rglob("*.md") if ".git" not in p.parts]


def test_nothing_of_the_purged_text_is_left_in_the_embedding_cache(vault: Vault) -> None:
    secret = vault.remember(SECRET)
    vault.remember("The boat is moored at pier nine.")
    vault.recall("Harrowby safe code")
    key = embed_key(vault.admin.store.block(secret.id))
    cache = vault.admin.state_dir / "embeddings.sqlite"
    assert key in _cache_keys(cache)

    result = vault.git.purge(secret.id, confirm=True)

    keys = _cache_keys(cache)
    assert key not in keys and keys  # the other memory's vector stays
    for path in vault.admin.state_dir.rglob("*"):
        if path.is_file():
            assert key.encode() not in path.read_bytes(), path
    assert any(c.startswith("embedding cache") for c in result.cleaned)


def _cache_keys(path: Path) -> set[str]:
    with sqlite3.connect(path) as db:
        return {h for (h,) in db.execute("SELECT hash FROM vectors")}


def test_purge_fails_naming_an_untracked_file_it_cannot_clean(vault: Vault) -> None:
    ids = _conversation(vault)
    stray = vault.root / "drafts.txt"  # untracked: not the vault's to rewrite
    stray.write_text(f"pasted: {SECRET.lower()}\n")

    with pytest.raises(PurgeIncompleteError, match=r"drafts\.txt") as raised:
        vault.git.purge(ids["secret"], confirm=True)

    assert raised.value.places == ("drafts.txt",)
    stray.unlink()
    assert everywhere(vault) == []


def test_cli_purge_prints_holders_cleaned_and_left(vault: Vault, tmp_path: Path) -> None:
    ids = _conversation(vault)
    _plant_everywhere(vault)
    out = CliRunner().invoke(
        main, ["--vault", str(vault.root), "git", "purge", ids["secret"], "--yes", "--json"]
    )
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert any("notes/plans.md" in c for c in data["cleaned"])

    other = Vault.init(tmp_path / "other", agent="test-agent")
    secret = _conversation(other)["secret"]
    stray = other.admin.state_dir / "someone-elses-cache.txt"  # no mdmem cache: not cleaned
    stray.write_text(f"pasted: {SECRET}\n")
    out = CliRunner().invoke(main, ["--vault", str(other.root), "git", "purge", secret, "--yes"])
    assert out.exit_code != 0 and "someone-elses-cache.txt" in out.output


# -- the pieces --------------------------------------------------------------------------------


def test_a_sweep_matches_case_spacing_line_breaks_and_markdown_escapes() -> None:
    sweep = Sweep.of([SECRET], mark=PURGED)
    for form in (
        SECRET,
        SECRET.upper(),
        "Remember  that the\nHarrowby safe code is 7741-Quorn.",
        "Remember that the Harrowby safe code is 7741\\-Quorn\\.",
    ):
        data = f"before {form} after".encode()
        assert sweep.found_in(data), form
        assert sweep.redact(data) == f"before {PURGED} after".encode()
    assert not sweep.found_in(b"the Harrowby safe code is something else")
    data = b"nothing here"
    assert sweep.redact(data) is data


def test_a_short_text_or_one_a_kept_memory_says_is_no_needle() -> None:
    assert not Sweep.of(["ok", "Ashcombe"], mark=PURGED)
    kept = ["We invoiced Ashcombe Ltd in March."]
    assert not Sweep.of(["Ashcombe Ltd"], kept=kept, mark=PURGED)
    assert Sweep.of(["Ashcombe Ltd paid"], kept=kept, mark=PURGED).needles == (
        "Ashcombe Ltd paid",
    )


def test_is_copy_of_needs_the_purged_words() -> None:
    assert is_copy_of("The Harrowby safe code is 7741-Quorn.", [SECRET])
    assert not is_copy_of("The user's manager is Joao.", [SECRET])
    assert not is_copy_of("The safe is in the hall.", [SECRET])
