"""One guard for every string that reaches disk or a name (issue #33, item 1).

Tokens and card numbers written the ways a reader would undo (a ``#tag``,
groups of four, dashes, another case, a look-alike letter, HTML entities, URL
escapes, dots, two lines) are found; through every door (text, tags, fields,
scope, session ids, log categories, topics, tools, import rows, documents)
they are refused or redacted and are then in no file, file name, git object
or state file; and a door that forgets is stopped by the writer itself.
"""

from __future__ import annotations

import json
import random
import string
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from mdmem import Vault
from mdmem.errors import MdmemError, SecretRefusedError
from mdmem.hookkit.policy import Policy
from mdmem.hookkit.runner import run_event
from mdmem.mcp.tools import Toolset
from mdmem.store.secret_guard import guard, scan
from tests.hookkit.test_runner import payload
from tests.secret_samples import luhn_complete

_rng = random.Random(33)
_ALNUM = string.ascii_letters + string.digits


def _pick(n: int) -> str:
    while True:
        value = "".join(_rng.choice(_ALNUM) for _ in range(n))
        if any(c.isdigit() for c in value) and any(c.isupper() for c in value):
            return value


GH = "ghp_" + _pick(36)
OPENAI = "sk-proj-" + _pick(40)
CARD = luhn_complete("4539" + "".join(_rng.choice(string.digits) for _ in range(11)))
GH_BODY, OPENAI_BODY = GH[4:], OPENAI[8:]
# Pieces that must never be stored (lower case too: the indexes fold case).
FRAGMENTS = [GH_BODY[:12], GH_BODY[12:24], GH_BODY[24:], OPENAI_BODY[:20], CARD[4:12], CARD[8:]]

_GROUPS4 = " ".join(GH[i : i + 4] for i in range(0, 40, 4))
FORMS: dict[str, tuple[str, str]] = {
    # name: (text, a piece of the secret as written there, which must go)
    "GitHub token as a #tag": (f"ci uses #{GH} for the mirror", GH_BODY),
    "GitHub token in groups of four": (f"token {_GROUPS4} ok", _GROUPS4[10:30]),
    "GitHub token in dash groups": (
        "token " + "-".join(GH[i : i + 4] for i in range(0, 40, 4)) + " ok",
        "-".join(GH[i : i + 4] for i in range(8, 28, 4)),
    ),
    "GitHub token in upper case": (f"token {GH.upper()} ok", GH_BODY.upper()),
    "GitHub token with a Cyrillic p": (f"token {GH.replace('p', 'р', 1)} ok", GH_BODY),
    "GitHub token with zero-width spaces": (
        f"token {GH[:12]}\u200b{GH[12:26]}\u200c{GH[26:]} ok",
        GH[26:],
    ),
    "OpenAI key with &#45; entities": (
        "key " + OPENAI.replace("-", "&#45;") + " here",
        OPENAI_BODY,
    ),
    "OpenAI key with &#x2D; entities": ("key " + OPENAI.replace("-", "&#x2D;"), OPENAI_BODY),
    "OpenAI key with &hyphen; entities": ("key " + OPENAI.replace("-", "&hyphen;"), OPENAI_BODY),
    "OpenAI key URL-escaped": ("key " + OPENAI.replace("-", "%2D") + " here", OPENAI_BODY),
    "card with dots": (
        "card " + ".".join(CARD[i : i + 4] for i in range(0, 16, 4)) + " ok",
        ".".join(CARD[i : i + 4] for i in range(4, 16, 4)),
    ),
    "card over two lines": (f"my card {CARD[:8]}\n{CARD[8:]} thanks", CARD[8:]),
    "card groups over two lines": (
        f"pay with {CARD[:4]} {CARD[4:8]}\n{CARD[8:12]} {CARD[12:]} please",
        f"{CARD[8:12]} {CARD[12:]}",
    ),
    "card with mixed separators": (
        f"card {CARD[:4]} {CARD[4:8]}.{CARD[8:12]}-{CARD[12:]} ok",
        CARD[8:12],
    ),
}


@pytest.mark.parametrize("name", FORMS)
def test_every_form_is_found_and_redacted_whole(name: str) -> None:
    text, piece = FORMS[name]
    assert scan(text), name
    redacted = guard(text, "redact")
    assert "[REDACTED:" in redacted
    assert piece not in redacted, redacted
    # The words around it stay.
    assert redacted.split()[0] == text.split()[0]


@pytest.mark.parametrize(
    "text",
    [
        "Pi is 3.14159 and e is 2.71828; version 4.1.2 shipped on 2024.06.01.",
        "Order 1234.5678 cost 99.50 EUR\n1234 people came",
        "AT&amp;T and R&amp;D spent 50% more; see https://example.com/a%20b",
        "Привет, как дела? Встреча в пятницу.",
        "a uuid 123e4567-e89b-12d3-a456-426614174000 and sk-learn is a library",
        "Ask-me-anything day: risk-free, task-based",
    ],
)
def test_ordinary_text_in_these_forms_is_not_a_secret(text: str) -> None:
    assert scan(text) == []


# -- through the doors -------------------------------------------------------


def _everything_stored(vault: Vault, state_root: Path) -> dict[str, bytes]:
    """Every vault file and file name, every git object, every state file and name."""
    stored: dict[str, bytes] = {}
    for path in vault.root.rglob("*"):
        rel = path.relative_to(vault.root)
        stored[f"name:{rel}"] = str(rel).encode()
        if path.is_file() and ".git" not in rel.parts:
            stored[f"vault:{rel}"] = path.read_bytes()
    stored["git objects"] = subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch"],
        cwd=vault.root,
        capture_output=True,
        check=True,
    ).stdout
    refs = subprocess.run(
        ["git", "for-each-ref", "--format=%(refname)"], cwd=vault.root, capture_output=True
    ).stdout
    stored["git refs"] = refs
    for path in state_root.rglob("*"):
        stored[f"state name:{path}"] = str(path.relative_to(state_root)).encode()
        if path.is_file():
            stored[f"state:{path.relative_to(state_root)}"] = path.read_bytes()
    return stored


def _leaks(vault: Vault, state_root: Path) -> list[tuple[str, str]]:
    needles = {f.encode() for f in FRAGMENTS} | {f.lower().encode() for f in FRAGMENTS}
    return [
        (where, needle.decode())
        for where, data in _everything_stored(vault, state_root).items()
        for needle in needles
        if needle in data or needle in data.lower()
    ]


def _jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


Door = Callable[[Vault, Path, str], object]


def _hook(vault: Vault, work: Path, **fields: object) -> None:
    """A Claude Code PostToolUseFailure payload (the documented shape) with ``fields`` set."""
    data = payload("claude-code", "post-tool-failure", work)
    data.update(fields)
    run_event(vault, "claude-code", "post-tool-failure", data, Policy())


def _tool(vault: Vault, args: dict[str, object]) -> None:
    result = Toolset(vault).dispatch("remember", args)
    if "error" in result:
        raise MdmemError(str(result["error"]))


DOORS: dict[str, Door] = {
    "remember text": lambda v, d, s: v.remember(f"note {s} end"),
    "remember tag": lambda v, d, s: v.remember("a plain note", tags=[s]),
    "remember field value": lambda v, d, s: v.remember("a plain note", fields=[("ref", s)]),
    "remember scope": lambda v, d, s: v.remember("a plain note", scope=f"project:{s}"),
    "log text": lambda v, d, s: v.log(f"deploy {s}"),
    "log category": lambda v, d, s: v.log("deployed", category=s),
    "journal": lambda v, d, s: v.journal(f"today {s}"),
    "learn topic": lambda v, d, s: v.learn(s, "an insight"),
    "learn text": lambda v, d, s: v.learn("ops", f"use {s}"),
    "session id": lambda v, d, s: v.session(s).record("user", "hello there"),
    "session turn": lambda v, d, s: v.session("chat-1").record("user", f"it is {s}"),
    "session source": lambda v, d, s: v.session("chat-2", source=s).record("user", "hi"),
    "tool call content": lambda v, d, s: _tool(v, {"content": f"the key is {s}"}),
    "tool call tag": lambda v, d, s: _tool(v, {"content": "a note", "tags": [s]}),
    "import row text": lambda v, d, s: v.library.import_(
        _jsonl(d / "rows.jsonl", [{"role": "user", "content": f"mine is {s}", "session": "x"}])
    ),
    "import session id": lambda v, d, s: v.library.import_(
        _jsonl(d / "ids.jsonl", [{"role": "user", "content": "hello", "session": s}])
    ),
    "hook session id": lambda v, d, s: _hook(v, d, session_id=s),
    "hook tool error": lambda v, d, s: _hook(
        v, d, error=f"Exit code 1\nAuthError: token {s} rejected by the registry"
    ),
    "hook tool command": lambda v, d, s: _hook(
        v, d, tool_input={"command": f"deploy --token {s}", "description": "deploy"}
    ),
    "document text": lambda v, d, s: (
        (d / "doc.md").write_text(f"# Setup\n\nThe deploy key is {s} today.\n"),
        v.library.ingest(d / "doc.md"),
    ),
    "document file name": lambda v, d, s: (
        (d / f"{s.replace('/', '_')[:60]}.md").write_text("# Notes\n\nplain words\n"),
        v.library.ingest(d / f"{s.replace('/', '_')[:60]}.md"),
    ),
}

SECRETS = {
    "GitHub token": GH,
    "GitHub token upper case": GH.upper(),
    "OpenAI key with entities": OPENAI.replace("-", "&#45;"),
    "card with dots": ".".join(CARD[i : i + 4] for i in range(0, 16, 4)),
}


@pytest.mark.parametrize("secret", SECRETS)
def test_no_door_stores_a_secret_anywhere(vault: Vault, tmp_path: Path, secret: str) -> None:
    value = SECRETS[secret]
    work = tmp_path / "in"
    work.mkdir()
    accepted = []
    for name, door in DOORS.items():
        try:
            result = door(vault, work, value)
        except MdmemError:
            continue
        for report in result if isinstance(result, tuple | list) else [result]:
            # An import or ingest reports what it refused instead of raising.
            if getattr(report, "error", None) or getattr(report, "refused", 0):
                break
        else:
            accepted.append(name)
    vault.reindex()
    assert _leaks(vault, tmp_path / "_state") == [], accepted


def test_redact_means_the_redacted_form_everywhere(vault: Vault, tmp_path: Path) -> None:
    for text, _piece in FORMS.values():
        memory = vault.remember(text, secrets="redact")
        assert "[REDACTED:" in memory.text
    vault.session("chat-r").record("user", f"mine is {GH.upper()}", secrets="redact")
    vault.reindex()
    assert _leaks(vault, tmp_path / "_state") == []


# -- the writer's own check: a door that forgets --------------------------------


def test_a_door_that_forgets_is_stopped_by_the_writer(vault: Vault, tmp_path: Path) -> None:
    writer = vault.admin.store.writer
    before = vault.git.head()
    attempts: list[Callable[[object], None]] = [
        lambda tx: tx.create_file(  # type: ignore[attr-defined]
            f"notes/{GH}.md", ["# hi", "", "plain words"], subject="add", trailers=[]
        ),
        lambda tx: tx.create_file(  # type: ignore[attr-defined]
            "notes/ok.md",
            ["# hi", "", f"the card {CARD[:8]}", f"{CARD[8:]} paid"],
            subject="add",
            trailers=[],
        ),
        lambda tx: tx.create_file(  # type: ignore[attr-defined]
            "notes/ok2.md", ["# hi", "", "plain"], subject=f"add {GH.upper()}", trailers=[]
        ),
        lambda tx: tx.create_file(  # type: ignore[attr-defined]
            "notes/ok3.md", ["# hi", "", "plain"], subject="add", trailers=[("Session", GH)]
        ),
    ]
    for attempt in attempts:
        with pytest.raises(SecretRefusedError) as caught, writer.transaction("test"):
            attempt(writer.current)
        assert not [f for f in FRAGMENTS if f in str(caught.value)]
        assert "\n" not in str(caught.value)
    assert vault.git.head() == before
    assert not (vault.root / "notes").exists()
    assert _leaks(vault, tmp_path / "_state") == []


def test_a_secret_a_person_typed_does_not_block_mdmem_edits(
    vault: Vault, run_git: Callable[..., str]
) -> None:
    memory = vault.remember("the staging box is fine", tags=["ops"])
    path = vault.root / memory.path
    # The person pastes a token into their own file, on a line of its own.
    path.write_text(path.read_text() + f"\n- my token {GH} for the mirror\n")
    run_git(vault.root, "commit", "-qam", "mine", human=True)
    # mdmem still writes to that file (the person's line is left to them).
    other = vault.remember("the prod box is fine", tags=["ops"])
    assert other.path == memory.path
    vault.resolve(memory.id)
    assert GH in path.read_text()
