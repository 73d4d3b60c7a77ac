"""The vault as Obsidian shows it: excluded folders, episode links, properties, titles."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from mdmem import Vault
from mdmem.memory.consolidation.consolidate import last_episode

_LINK = re.compile(r"\[\[([^\]|#]+)#\^(m-[0-9a-z]+)(?:\|[^\]]*)?\]\]")


def _obsidian_ignores(filters: list[str], rel: str) -> bool:
    """Obsidian's "Excluded files": a /regex/ entry is a regular expression,
    any other entry a path prefix."""
    for entry in filters:
        if len(entry) > 2 and entry.startswith("/") and entry.endswith("/"):
            if re.search(entry[1:-1], rel):
                return True
        elif rel.startswith(entry):
            return True
    return False


def _meta(path: Path) -> dict[str, object]:
    return yaml.safe_load(path.read_text(encoding="utf-8").split("---\n")[1])


def test_obsidian_hides_every_tool_output_mdmem_writes(vault: Vault) -> None:
    filters = json.loads((vault.root / ".obsidian" / "app.json").read_text())["userIgnoreFilters"]
    big = "\n".join(f"line {i} of a long build log" for i in range(800))
    vault.session("root-chat").record_tool_output("make", big)
    vault.session("scoped-chat", scope="project:web").record_tool_output("make", big + " web")
    written = [
        p.relative_to(vault.root).as_posix()
        for p in vault.root.rglob("*.md")
        if "tool-outputs" in p.parts
    ]
    assert len(written) == 2
    for rel in written:
        assert _obsidian_ignores(filters, rel), rel
    # A scope's own folder is hidden as well, and nothing else is.
    assert _obsidian_ignores(filters, "scopes/project/web/tool-outputs/tout_x.md")
    for rel in ("MEMORY.md", "sessions/root-chat.md", "scopes/project/web/sessions/scoped-chat.md"):
        assert not _obsidian_ignores(filters, rel), rel


def test_episode_links_name_files_by_full_path_once_scopes_have_their_own(vault: Vault) -> None:
    vault.remember("Scoped facts live here.", scope="project:web")  # a second MEMORY.md
    s = vault.session("chat-1", contact="alice")
    s.record("user", "Remember that the staging database resets every night at two.")
    s.record("assistant", "Noted: the staging database resets nightly at two.")
    result = vault.consolidate()
    (episode,) = result.episodes
    text = (vault.root / episode.path).read_text(encoding="utf-8")
    daily = "".join(p.read_text(encoding="utf-8") for p in (vault.root / "daily").glob("*.md"))
    links = _LINK.findall(text + daily)
    assert links and any(target == "MEMORY.md" for target, _ in links)
    for target, block_id in links:
        # Each target is a vault path with its extension: exactly one file, the
        # one holding the block (a bare [[MEMORY#^…]] matches every MEMORY.md).
        assert target.endswith(".md"), target
        assert f"^{block_id}" in (vault.root / target).read_text(encoding="utf-8")


def test_episode_properties_are_flat_and_old_episodes_still_read(vault: Vault) -> None:
    s = vault.session("chat-2", contact="bob")
    s.record("user", "I prefer tea over coffee in the morning, please remember it.")
    s.record("assistant", "I will remember that you prefer tea in the morning.")
    (episode,) = vault.consolidate().episodes
    meta = _meta(vault.root / episode.path)
    for key, value in meta.items():
        assert value is not None, key
        assert not isinstance(value, dict), key
        if isinstance(value, list):
            assert all(isinstance(v, str) for v in value), key
    assert meta["time_from"] <= meta["time_to"]

    # An episode written before (nested time_range, nulls) is still understood.
    old = vault.root / "episodes" / "2020-01-01-old.md"
    old.write_text(
        "---\nkind: episode\ntitle: Old\ncontact: carol\nconfidence: null\n"
        "time_range:\n  from: '2020-01-01T10:00:00+00:00'\n  to: '2020-01-01T11:00:00+00:00'\n"
        "pending:\n- call the plumber\n---\n# Old\n\nAn old summary. ^m-01aaaaaaaa0000\n",
        encoding="utf-8",
    )
    vault.admin.commit_human_edits()
    assert last_episode(vault.admin.store, "", "carol")[1] == ["call the plumber"]


def test_extractive_titles_are_a_phrase_of_the_conversation(vault: Vault) -> None:
    s = vault.session("chat-3", contact="dana")
    turns = [
        ("user", "Can you bullet the points for the Lisbon team quarterly review?"),
        ("assistant", "Sure: the Lisbon team hit its quarterly targets, hiring slowed."),
        ("user", "Add that the Lisbon office moves to a new building in March."),
        ("assistant", "Added the Lisbon office move in March to the quarterly points."),
    ]
    for role, text in turns:
        s.record(role, text)
    (episode,) = vault.consolidate().episodes
    title = str(_meta(vault.root / episode.path)["title"])
    said = " ".join(text for _, text in turns).lower()
    assert len(title.split()) >= 3 and len(title) <= 60, title
    # Words in the order the conversation said them, not five keywords strung together.
    assert title.lower() in said, title
    assert f"# {title}" in (vault.root / episode.path).read_text(encoding="utf-8")
