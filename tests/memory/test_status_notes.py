"""``status`` on an adopted vault of notes counts its note sections, not "memories 0" alone."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from mdmem.cli import main


def test_status_counts_the_notes_of_an_adopted_vault(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    (root / "ideas").mkdir(parents=True)
    garden = "# Garden\n\nTomatoes need sun.\n\n## Soil\n\nLoam.\n"
    (root / "ideas" / "garden.md").write_text(garden)
    (root / "todo.md").write_text("---\ntags: [home]\n---\nFix the gate.\n")
    runner = CliRunner()
    result = runner.invoke(main, ["init", str(root), "--author", "Pat <pat@example.com>"])
    assert result.exit_code == 0, result.output
    st = json.loads(runner.invoke(main, ["--vault", str(root), "status", "--json"]).stdout)
    assert (st["memories"], st["notes"]) == (0, 3)  # two sections and a note; no frontmatter
    human = runner.invoke(main, ["--vault", str(root), "status"]).stdout
    assert "memories 0, note sections 3," in human
    runner.invoke(main, ["--vault", str(root), "remember", "Gate code is blue."])
    st = json.loads(runner.invoke(main, ["--vault", str(root), "status", "--json"]).stdout)
    assert (st["memories"], st["notes"]) == (1, 3)
