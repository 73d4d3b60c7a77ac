"""``hooks doctor`` (mdmem/hookkit/doctor.py): each installed hook run as its host runs it."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from mdmem.hookkit import doctor
from mdmem.hookkit.hosts import HOSTS, parse_input


def settings_with(repo: Path, event: str, command: str) -> None:
    """A project's Claude Code settings holding one mdmem-looking hook for ``event``."""
    native = HOSTS["claude-code"].native(event)
    data = {"hooks": {native: [{"hooks": [{"type": "command", "command": command}]}]}}
    (repo / ".claude").mkdir(parents=True, exist_ok=True)
    (repo / ".claude" / "settings.json").write_text(json.dumps(data))


@pytest.mark.parametrize("answer", ["[1, 2]", '"text"', "not json"])
def test_an_answer_that_is_no_json_object_fails_its_check(
    answer: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A hook that prints JSON of another shape is a failed check, not a crashed doctor.
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no user-level settings of the machine's
    repo = tmp_path / "repo"
    printer = f"{shlex.quote(sys.executable)} -c {shlex.quote(f'print({answer!r})')}"
    # The trailing words make it look like what `hooks install` writes (the doctor runs only those).
    settings_with(repo, "stop", f"{printer} # mdmem hook stop --host claude-code")
    report, ran = doctor.check(("claude-code",), str(repo))
    assert ran == 1 and not report["ok"]
    [check] = report["checks"]
    assert check["event"] == "stop" and "not the JSON object claude-code reads" in check["problem"]


@pytest.mark.parametrize("name", sorted(HOSTS))
def test_the_doctors_payloads_read_as_the_hosts_own(name: str, tmp_path: Path) -> None:
    # What the doctor sends must parse as a real payload: the session, the project folder,
    # the tool's output and a failure's message each where the host keeps them.
    for event in HOSTS[name].events:
        payload = doctor.doctor_payload(name, event, tmp_path, "the prompt")
        parsed = parse_input(name, event, json.loads(json.dumps(payload)))
        assert parsed.session_id == "mdmem-doctor" and parsed.cwd == str(tmp_path), event
        if event == "prompt-submit":
            assert parsed.prompt == "the prompt"
        if event == "post-tool-use":
            assert parsed.tool_output == ""
        if event == "post-tool-failure":
            assert parsed.error == "Exit code 1"
