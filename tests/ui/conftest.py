"""A vault with what the viewer shows: memories, a history, a hook run, a pending review."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from mdmem import Vault
from mdmem.hookkit.policy import Policy
from mdmem.hookkit.runner import run_event
from mdmem.ui import UiServer

HOOKS = Path(__file__).resolve().parents[1] / "hookkit" / "data" / "hooks"
#: Text a memory may hold that a careless page would run.
PAYLOAD = (
    '<script>document.title="pwned"</script><img src=x onerror="document.title=\'img\'">'
    ' [click me](javascript:alert(1)) <a href="javascript:alert(2)">link</a>'
)


@dataclass
class Filled:
    vault: Vault
    units: str  # an active memory with a superseded predecessor (two versions)
    old_units: str
    payload: str
    deploy: str  # the memory the logged prompt-submit hook injected
    review: str  # the branch of a consolidation waiting for review


def fill(vault: Vault, repo: Path) -> Filled:
    old = vault.remember("The user prefers imperial units.", kind="preference", tags=("units",))
    new = vault.supersede(old.id, "The user prefers metric units for every measurement.")
    payload = vault.remember(PAYLOAD, kind="note")
    deploy = vault.remember("We deploy the shop service to fly.io in the ams region.")
    text = (HOOKS / "claude-code.prompt-submit.json").read_text(encoding="utf-8")
    event = json.loads(text.replace("{CWD}", str(repo)).replace("{TRANSCRIPT}", ""))
    run_event(vault, "claude-code", "prompt-submit", event, Policy())
    chat = vault.session("c1", source="cli", contact="al")
    chat.record("user", "I prefer dark mode in every editor.")
    result = vault.consolidate(review=True)
    assert result.branch is not None
    return Filled(vault, new.id, old.id, payload.id, deploy.id, result.branch)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    return path


@pytest.fixture
def filled(tmp_path: Path, repo: Path) -> Iterator[Filled]:
    vault = Vault.init(tmp_path / "vault", agent="ada")
    try:
        yield fill(vault, repo)
    finally:
        vault.close()


@pytest.fixture
def ui(filled: Filled) -> Iterator[UiServer]:
    server = UiServer(filled.vault)
    server.start()
    try:
        yield server
    finally:
        server.close()


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: str


def request(
    server: UiServer,
    method: str,
    path: str,
    *,
    headers: Mapping[str, str] | None = None,
    body: str = "",
) -> Reply:
    """One request with exactly these headers (Host included: http.client sends ours)."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    try:
        sent = {"Host": f"127.0.0.1:{server.port}", **(headers or {})}
        if body:
            sent.setdefault("Content-Type", "application/x-www-form-urlencoded")
        conn.request(method, path, body=body.encode("utf-8") or None, headers=sent)
        response = conn.getresponse()
        return Reply(
            response.status,
            {k.lower(): v for k, v in response.getheaders()},
            response.read().decode("utf-8"),
        )
    finally:
        conn.close()


@dataclass(frozen=True)
class Session:
    """What opening the printed URL gives a browser: a cookie ("name=value") and the
    session's own path, which every page's URL starts with."""

    server: UiServer
    cookie: str
    base: str

    def get(self, path: str, headers: Mapping[str, str] | None = None) -> Reply:
        sent = {"Cookie": self.cookie, **(headers or {})}
        return request(self.server, "GET", self.base + path, headers=sent)

    def post(self, path: str, body: str, headers: Mapping[str, str] | None = None) -> Reply:
        sent = {"Cookie": self.cookie, **(headers or {})}
        return request(self.server, "POST", self.base + path, headers=sent, body=body)


def login(server: UiServer) -> Session:
    """The session the printed URL starts."""
    path = server.url.split(f":{server.port}", 1)[1]
    reply = request(server, "GET", path)
    assert reply.status == 303
    location = reply.headers["location"]
    assert location.startswith("/") and location.endswith("/") and location.count("/") == 2
    return Session(server, reply.headers["set-cookie"].split(";", 1)[0], location[:-1])
