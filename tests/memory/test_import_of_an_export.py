"""Moving a vault the plain way (``library export`` then ``library import``) can't hurt:
only active memories come in, none superseded, no one else's preference in USER.md;
``--restore`` brings everything and names the settings it left behind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from mdmem import Vault
from mdmem.cli import main

from ..conftest import git


def _cli(*args: str) -> str:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return result.output  # stdout and stderr, as a person sees them


@pytest.fixture
def exported(tmp_path: Path) -> Path:
    """A vault with a superseded decision, the user's and a contact's preference,
    a person's note and a contact profile; and its export, made by the CLI."""
    root = tmp_path / "home"
    with Vault.init(root, agent="orc-1") as vault:
        old = vault.remember("Use npm for the web app packages.", kind="decision")
        vault.supersede(old.id, "Use pnpm for the web app packages.")
        vault.remember("Prefers tea over coffee.", kind="preference")
        vault.remember(
            "Ana prefers code reviews in the morning.",
            kind="preference",
            fields=[("contact", "telegram:42"), ("speaker", "Ana")],
        )
        vault.contacts.link("telegram:42", "user:ana", display_name="Ana")
    (root / "notes").mkdir()
    (root / "notes" / "idea.md").write_text("# Idea\n\nA garden on the roof.\n")
    toml = root / "mdmem.toml"
    toml.write_text(toml.read_text().replace("k = 5", "k = 9", 1))
    git(root, "add", "-A", human=True)
    git(root, "commit", "-qm", "my note and settings", human=True)
    out = tmp_path / "x.jsonl"
    _cli("--vault", str(root), "library", "export", "-o", str(out))  # no --jsonl needed
    return out


def test_a_plain_import_of_an_export_takes_only_active_memories(
    exported: Path, tmp_path: Path
) -> None:
    target = tmp_path / "new"
    _cli("init", str(target))
    said = _cli("--vault", str(target), "library", "import", str(exported))
    assert "only its active memories" in said and "1 superseded" in said
    assert "`mdmem library import --restore FILE`" in said
    with Vault.open(target) as vault:
        texts = {m.text: m for m in vault.library.list()}
        assert "Use npm for the web app packages." not in texts
        assert texts["Use pnpm for the web app packages."].status == "active"
        top = vault.recall("which package manager for the web app", k=1).items
        assert top and top[0].text == "Use pnpm for the web app packages."
        assert texts["Prefers tea over coffee."].path == "USER.md"
        ana = texts["Ana prefers code reviews in the morning."]
        assert ana.path == "MEMORY.md" and ana.kind == "preference"
    profile = (target / "USER.md").read_text(encoding="utf-8")
    assert "Ana" not in profile and "Prefers tea" in profile


def test_restore_brings_it_whole_and_names_the_settings_left_behind(
    exported: Path, tmp_path: Path
) -> None:
    target = tmp_path / "moved"
    _cli("init", str(target))
    result = CliRunner().invoke(
        main, ["--vault", str(target), "library", "import", "--restore", str(exported), "--json"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["restored"] is True
    # The changed k and the other agent name; nothing the two vaults share.
    assert report["settings_left_behind"] == ["agent", "recall.k"]
    assert any("recall.k" in note and "copy them" in note for note in report["notes"])
    assert "k = 5" in (target / "mdmem.toml").read_text()  # not taken from the export
    assert (target / "notes" / "idea.md").read_text() == "# Idea\n\nA garden on the roof.\n"
    with Vault.open(target) as vault:
        statuses = {m.text: m.status for m in vault.library.list()}
    assert statuses["Use npm for the web app packages."] == "superseded"
    human = _cli(
        "--vault", str(tmp_path / "moved"), "library", "import", "--restore", str(exported)
    )
    assert "restored" in human and "recall.k" in human


def test_the_export_header_carries_digests_not_values(exported: Path) -> None:
    header = json.loads(exported.read_text(encoding="utf-8").splitlines()[0])
    assert header["settings"]["recall.k"] != "9" and len(header["settings"]["recall.k"]) == 12
    assert "OPENAI_API_KEY" not in json.dumps(header)
