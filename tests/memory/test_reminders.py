"""Time-based consolidation and the flush reminder (issue 18 item 11, OrcBot)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from click.testing import CliRunner

from mdmem import Vault
from mdmem.cli import main


def _age(vault: Vault, session: str, minutes: float) -> None:
    """Make a session file look last written ``minutes`` ago."""
    path = vault.root / "sessions" / f"{session}.md"
    then = time.time() - minutes * 60
    os.utime(path, (then, then))
    vault.admin.refresh()


def _auto_vault(tmp_path: Path, **consolidation: object) -> Vault:
    return Vault.init(
        tmp_path / "v", agent="test-agent", consolidation={"auto": True, **consolidation}
    )


def test_an_idle_conversation_is_consolidated_after_stale_minutes(tmp_path: Path) -> None:
    vault = _auto_vault(tmp_path)
    assert vault.settings.consolidation.stale_minutes == 10  # OrcBot's default
    old = vault.session("chat-old")
    old.record("user", "My favourite editor is Helix.")
    old.record("assistant", "Noted, Helix it is.")
    _age(vault, "chat-old", 11)
    # A write elsewhere triggers the check; the idle chat is folded into an episode.
    vault.session("chat-new").record("user", "Hello there.")
    episodes = [m for m in vault.library.list() if m.kind == "episode"]
    assert len(episodes) == 1
    old_entries = vault.session("chat-old").entries()
    assert all(vault.get(m.id).field("consolidated") for m in old_entries)
    # The fresh conversation is left alone.
    (new_entry,) = vault.session("chat-new").entries()
    assert vault.get(new_entry.id).field("consolidated") is None


def test_a_recent_conversation_waits_and_stale_minutes_zero_turns_it_off(tmp_path: Path) -> None:
    vault = _auto_vault(tmp_path, stale_minutes=0)
    s = vault.session("a")
    s.record("user", "The office wifi is called Heron.")
    s.record("assistant", "Got it.")
    _age(vault, "a", 60)
    assert vault.sessions.consolidate_stale() is None
    vault.close()
    vault = _auto_vault(tmp_path / "2")
    s = vault.session("b")
    s.record("user", "The office wifi is called Heron.")
    s.record("assistant", "Got it.")
    _age(vault, "b", 5)
    assert vault.sessions.consolidate_stale() is None  # 5 < 10 minutes
    _age(vault, "b", 15)
    result = CliRunner().invoke(
        main, ["--vault", str(vault.root), "session", "consolidate-stale", "--json"]
    )
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.output)["episodes"]) == 1


def test_flush_reminder_at_the_soft_threshold_with_a_cooldown(vault: Vault) -> None:
    assert vault.settings.consolidation.flush_soft_threshold == 25
    assert vault.settings.consolidation.flush_cooldown_minutes == 30
    s = vault.session("long")
    for n in range(24):
        s.record("user" if n % 2 else "assistant", f"Turn number {n} about the migration plan.")
    assert vault.sessions.flush_reminder(session="long") is None  # 24 < 25
    s.record("user", "One more turn about the migration plan.")
    text = vault.sessions.flush_reminder(session="long")
    assert text is not None and "25 entries" in text and "remember" in text
    assert vault.sessions.flush_reminder(session="long") is None  # cooling down
    assert vault.sessions.flush_reminder(session="other") is None  # counts only its own turns
    out = CliRunner().invoke(
        main, ["--vault", str(vault.root), "session", "flush-reminder", "--json"]
    )
    assert out.exit_code == 0, out.output
    assert "approaching consolidation" in json.loads(out.output)["reminder"]  # vault-wide key


def test_flush_reminder_cooldown_expires(vault: Vault) -> None:
    from mdmem.memory.capture.reminders import flush_reminder

    s = vault.session("c")
    for n in range(25):
        s.record("user", f"Note {n} on the quarterly budget.")
    now = time.time()
    agent = vault.settings.agent
    assert flush_reminder(vault.admin.store, agent, session="c", now=now)
    assert flush_reminder(vault.admin.store, agent, session="c", now=now + 29 * 60) is None
    assert flush_reminder(vault.admin.store, agent, session="c", now=now + 31 * 60)


def test_runtime_hooks_surface_the_reminder_for_their_session(vault: Vault) -> None:
    from mdmem.agent.hooks import MemoryHooks

    hooks = MemoryHooks(vault, session_id="hooked", background=False)
    for n in range(13):  # 26 turns: user + assistant each
        hooks.on_turn_complete(f"Question {n} about the data pipeline?", f"Answer {n}.")
    text = hooks.flush_reminder()
    assert text is not None and "26 entries" in text
    assert hooks.flush_reminder() is None
    assert MemoryHooks(vault, enabled=False, session_id="hooked").flush_reminder() is None
    hooks.shutdown()
