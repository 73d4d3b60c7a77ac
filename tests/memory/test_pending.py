"""The pending-message buffer (issue 18 item 15, Otto)."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from mdmem import Vault
from mdmem.agent.prompt import prompt_context
from mdmem.cli import main
from mdmem.errors import InvalidInputError, SecretRefusedError

TOKEN = "ghp_" + "Zq8vLm3Rt6Yp1Wx4Nc7Bd0Fg2Hj5Kk9Ls1Qa"


def test_fifo_once_per_channel_with_event_dedupe(vault: Vault) -> None:
    buf = vault.sessions.pending
    a = buf.push("Can someone review PR 12?", sender="alice", source="slack", event_id="e1")
    buf.push("Build is red on main.", sender="bob", source="slack", event_id="e2")
    again = buf.push("Can someone review PR 12?", sender="alice", source="slack", event_id="e1")
    assert again.seq == a.seq  # redelivered: queued once
    buf.push("Other project note.", channel="project-b")
    assert [m.text for m in buf.peek()] == ["Can someone review PR 12?", "Build is red on main."]
    taken = buf.take()
    assert [m.sender for m in taken] == ["alice", "bob"]
    assert buf.take() == []  # handed over once
    assert [m.text for m in buf.take(channel="project-b")] == ["Other project note."]


def test_ttl_expires_and_bad_input_is_refused(vault: Vault) -> None:
    buf = vault.sessions.pending
    buf.push("Gone soon.", ttl_days=1e-6)  # ~0.09 s
    buf.push("Stays.")
    time.sleep(0.2)
    assert [m.text for m in buf.take()] == ["Stays."]
    with pytest.raises(InvalidInputError):
        buf.push("x", channel="../etc")
    with pytest.raises(InvalidInputError):
        buf.push("x", ttl_days=0)
    with pytest.raises(SecretRefusedError):
        buf.push(f"the token is {TOKEN}")


def test_survives_a_restart_and_two_hosts_never_take_the_same_message(vault: Vault) -> None:
    for n in range(40):
        vault.sessions.pending.push(f"message {n}")
    vault.close()
    code = (
        "import json,sys; from mdmem import Vault; v=Vault.open(sys.argv[1]); out=[]\n"
        "while True:\n"
        "    got=v.sessions.pending.take(limit=1)\n"
        "    if not got: break\n"
        "    out.append(got[0].text)\n"
        "print(json.dumps(out))"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(vault.root)], stdout=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    results = [json.loads(p.communicate(timeout=120)[0]) for p in procs]
    every = results[0] + results[1]
    assert sorted(every) == sorted(f"message {n}" for n in range(40))
    assert len(set(every)) == 40
    for got in results:  # each host saw its share in FIFO order
        assert got == sorted(got, key=lambda t: int(t.split()[1]))


def test_prompt_section_hands_messages_to_the_next_task_once(vault: Vault) -> None:
    vault.remember("The team uses Slack for standups.")
    vault.sessions.pending.push("Standup moved to 10:30 today.", sender="carol", source="slack")
    ctx = prompt_context(vault, "plan the day", pending_channel="default")
    assert ctx["pending"].title == "## Messages While You Were Busy"
    assert "carol (slack) Standup moved to 10:30 today." in ctx.render()
    # The next task does not get it again.
    assert "Standup moved" not in prompt_context(vault, "plan", pending_channel="default").render()
    # Without a channel nothing is taken from the buffer.
    vault.sessions.pending.push("Lunch at noon.")
    assert "Lunch at noon" not in prompt_context(vault, "plan the day").render()
    assert [m.text for m in vault.sessions.pending.peek()] == ["Lunch at noon."]


def test_pending_cli(vault: Vault) -> None:
    runner = CliRunner()
    base = ["--vault", str(vault.root), "session", "pending"]
    out = runner.invoke(main, [*base, "add", "Deploy freeze starts Friday.", "--sender", "dan"])
    assert out.exit_code == 0, out.output
    listed = runner.invoke(main, [*base, "list", "--json"])
    assert [m["text"] for m in json.loads(listed.output)] == ["Deploy freeze starts Friday."]
    taken = runner.invoke(main, [*base, "take", "--json"])
    assert [m["sender"] for m in json.loads(taken.output)] == ["dan"]
    assert json.loads(runner.invoke(main, [*base, "take", "--json"]).output) == []
    bad = runner.invoke(main, [*base, "add", "x", "--channel", "a b"])
    assert bad.exit_code != 0 and "invalid channel" in bad.output
