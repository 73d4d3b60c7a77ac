"""doctor finds an old vault's Obsidian filter that misses tool-outputs/, and --fix repairs it."""

from __future__ import annotations

import json

from mdmem import Vault
from mdmem.maintenance.obsidian import TOOL_OUTPUT_FILTERS

from ..conftest import git


def test_an_old_ignore_filter_is_reported_and_fixed_keeping_the_persons_settings(
    vault: Vault,
) -> None:
    app = vault.root / ".obsidian" / "app.json"
    old = {"userIgnoreFilters": ["sessions/tool-outputs/", "drafts/"], "vimMode": True}
    app.write_text(json.dumps(old), encoding="utf-8")
    git(vault.root, "commit", "-qam", "an old vault's settings", human=True)

    report = vault.admin.doctor()
    found = [p for p in report.problems if p.check == "obsidian settings"]
    assert len(found) == 1 and found[0].fixable and "tool-outputs/" in found[0].detail

    fixed = vault.admin.doctor(fix=True)
    assert found[0].detail in fixed.fixed
    data = json.loads(app.read_text(encoding="utf-8"))
    assert data["vimMode"] is True
    assert data["userIgnoreFilters"] == ["drafts/", *TOOL_OUTPUT_FILTERS]
    assert "Op: repair" in git(vault.root, "log", "-1", "--format=%B")
    assert git(vault.root, "status", "--porcelain") == ""
    assert not [p for p in vault.admin.doctor().problems if p.check == "obsidian settings"]


def test_a_new_vault_and_a_vault_without_obsidian_settings_are_fine(vault: Vault) -> None:
    assert not [p for p in vault.admin.doctor().problems if p.check == "obsidian settings"]
    (vault.root / ".obsidian" / "app.json").unlink()
    assert not [p for p in vault.admin.doctor().problems if p.check == "obsidian settings"]
