"""The hook's fast client: standard library only, and deciding as the cold path does."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mdmem import Vault
from mdmem.config import config_home
from mdmem.errors import InvalidInputError
from mdmem.hookkit import client
from mdmem.hookkit.hosts import HOSTS, parse_input
from mdmem.hookkit.policy import hook_vault_root, resolve_policy
from mdmem.hookkit.runner import serve_hook
from mdmem.projects import trust
from mdmem.warm.client import ask

DATA = Path(__file__).parent / "data" / "hooks"
REPO = Path(__file__).resolve().parents[2]
# What the fast path may load besides the standard library: itself and the
# standard-library-only helpers it calls.
OURS = {
    "mdmem",
    "mdmem.__main__",
    "mdmem.hookkit",
    "mdmem.hookkit.client",
    "mdmem.warm",
    "mdmem.warm.client",
    "mdmem.ipc",
    "mdmem.ipc.boundedjson",
    "mdmem.ipc.sockets",
    "mdmem.ipc.capped",
    "mdmem.ipc.hostproc",
}


def payload(host: str, event: str, cwd: Path) -> bytes:
    text = (DATA / f"{host}.{event}.json").read_text(encoding="utf-8")
    return text.replace("{CWD}", str(cwd)).replace("{TRANSCRIPT}", "").encode()


def write_user_config(text: str) -> None:
    home = Path(os.environ["MDMEM_CONFIG_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "hooks.toml").write_text(text, encoding="utf-8")


def imports_of(module: str) -> set[str]:
    """Every module ``module``'s source imports, at the top or inside a function,
    leaving out what only a type checker reads (``if TYPE_CHECKING:``)."""
    path = REPO / Path(*module.split("."))
    source = (path / "__init__.py" if path.is_dir() else path.with_suffix(".py")).read_text()
    tree = ast.parse(source)
    typing_only = {
        id(n)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for n in ast.walk(node)
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module != "__future__":
            found.add(node.module)
    return found


def test_the_fast_path_imports_the_standard_library_and_its_own_helpers_only() -> None:
    # Read from the source, so an import on a rare branch (one no served hook
    # takes) counts as much as one at the top; the served test below checks
    # what a real run loads. The package itself is imported on the fast path:
    # its __init__ must import nothing.
    assert imports_of("mdmem.hookkit") == set()
    ours = {"mdmem.warm.client", "mdmem.ipc.boundedjson", "mdmem.ipc.capped", "mdmem.ipc.hostproc"}
    for module in ("mdmem.hookkit.client", *sorted(ours)):
        outside = {name for name in imports_of(module) if not stdlib(name) and name not in OURS}
        # mdmem.errors only where the server answered an error (the cold path's case).
        assert outside <= {"mdmem.errors"}, (module, outside)
    assert {name for name in imports_of("mdmem.hookkit.client") if not stdlib(name)} == ours


def stdlib(name: str) -> bool:
    # The interpreter's private C modules (_socket, _sha2 or _sha256) count too.
    root = name.split(".")[0]
    return root in sys.stdlib_module_names or root.startswith("_")


def test_the_host_tables_are_hostformats_own() -> None:
    assert {name: frozenset(h.events) for name, h in HOSTS.items()} == client.HOST_EVENTS
    for h in HOSTS.values():
        assert h.timeouts == client.HOST_TIMEOUTS
    assert {name: h.fields.cwd for name, h in HOSTS.items()} == client.HOST_CWD
    lists = frozenset().union(*(h.fields.folder_lists for h in HOSTS.values()))
    assert lists == client.FOLDER_LISTS


@pytest.mark.parametrize("name", sorted(HOSTS))
def test_the_client_reads_the_project_folder_where_the_cold_path_does(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The server resolves the policy from the client's route, the cold path from
    # parse_input: the same folder, or a warm and a cold run would disagree.
    monkeypatch.chdir(tmp_path)
    project, elsewhere = str(tmp_path / "project"), str(tmp_path / "tool-ran-here")
    for event in HOSTS[name].events:
        recorded = json.loads(payload(name, event, Path(project)))
        # A payload naming the folder two ways (Cursor's failure event names the
        # folder the tool ran in beside the workspace) and one naming it not at all.
        both = {**recorded, "cwd": elsewhere} if "workspace_roots" in recorded else recorded
        for data in (recorded, both, {}, {"cwd": ["not", "a", "folder"]}):
            route = client.hook_route({"--host": name}, data)
            cold = parse_input(name, event, data).cwd
            assert route["cwd"] == (cold or str(tmp_path)), (event, data)
        assert parse_input(name, event, both).cwd == project, event


@pytest.mark.parametrize("xdg", [None, "", "  ", "/somewhere/cfg"])
def test_config_home_agrees_with_mdmem_config(
    xdg: str | None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert client.config_home() == str(config_home())  # MDMEM_CONFIG_HOME (conftest)
    monkeypatch.delenv("MDMEM_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    if xdg is None:
        monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_CONFIG_HOME", xdg)
    assert client.config_home() == str(config_home())


def decide_cold(
    cwd: Path, workdir: Path, vault: str | None, name: str | None
) -> tuple[str | None, int, int]:
    """The vault and latency budgets the cold path (mdmem.hookkit.cold) decides."""
    policy = resolve_policy(str(cwd))
    budgets = (policy.prompt_latency_ms, policy.hook_latency_ms)
    try:
        root, _ = hook_vault_root(policy, vault, name, workdir=str(workdir))
    except FileNotFoundError:
        return None, *budgets
    return str(root), *budgets


def decide_fast(
    cwd: Path, workdir: Path, vault: str | None, name: str | None, monkeypatch: pytest.MonkeyPatch
) -> tuple[str | None, int, int]:
    monkeypatch.chdir(workdir)
    options = {k: v for k, v in (("--vault", vault), ("--vault-name", name)) if v}
    route = client.hook_route(options, {"cwd": str(cwd)})
    budgets = (client.prompt_latency_ms(route), client.hook_latency_ms(route))
    return client.guess_root(route), *budgets


USER_FILES = [
    "",
    'vault = "{default}"\nprompt_latency_ms = 250\nhook_latency_ms = 700\n'
    '[vaults]\nwork = "{work}"\n',
    '[vaults]\nwork = "{work}"\nempty = ""\n',
    "prompt_latency_ms = true\nhook_latency_ms = -5\nvault = 3\n",
    "not toml [",
]
PROJECT_FILES = [
    None,
    'vault = "work"\nprompt_latency_ms = 100\nhook_latency_ms = 400\n',
    'vault = "{work}"\n',  # a path, allowed when it is one of the user's
    'vault = "/tmp/attacker-vault"\nprompt_latency_ms = 9000\nhook_latency_ms = 90000\n',
    'vault = ""\nprompt_latency_ms = -1\n',
    "vault = [1]\n",
]
OPTIONS = [(None, None), ("{other}", None), (None, "work"), (None, "nope")]


@pytest.mark.parametrize("confirmed", [False, True])
@pytest.mark.parametrize("user", USER_FILES)
@pytest.mark.parametrize("project", PROJECT_FILES)
def test_the_client_decides_vault_and_budget_as_the_cold_path(
    user: str,
    project: str | None,
    confirmed: bool,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    names = {k: str(tmp_path / k) for k in ("default", "work", "other")}
    repo = tmp_path / "repo" / "sub"
    repo.mkdir(parents=True)
    workdir = tmp_path / "here" / "deeper"
    workdir.mkdir(parents=True)
    (tmp_path / "here" / "mdmem.toml").write_text("")
    write_user_config(user.format(**names))
    if project is not None:
        project_file = tmp_path / "repo" / ".mdmem.toml"
        project_file.write_text(project.format(**names))
        if confirmed:  # `mdmem hooks trust`: only then may it choose the vault
            trust.confirm(project_file, project_file.read_bytes())
    elif confirmed:
        pytest.skip("no project file to confirm")
    for vault, name in OPTIONS:
        given = vault.format(**names) if vault else None
        for env_vault in (None, names["other"]):
            if env_vault:
                monkeypatch.setenv("MDMEM_VAULT", env_vault)
            else:
                monkeypatch.delenv("MDMEM_VAULT", raising=False)
            cold = decide_cold(repo, workdir, given, name)
            fast = decide_fast(repo, workdir, given, name, monkeypatch)
            assert fast == cold, (vault, name, env_vault)


@pytest.fixture
def served(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> Iterator[Vault]:
    """The vault, its warm server running in this process (a short socket path)."""
    from mdmem.warm.server import WarmServer

    runtime = Path(tempfile.mkdtemp(prefix="mdr"))
    monkeypatch.setenv("MDMEM_RUNTIME_DIR", str(runtime / "rt"))
    vault.remember("We deploy the shop service to fly.io in the ams region.")
    server = WarmServer(vault, idle_seconds=60, hooks=serve_hook)
    server.bind()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield vault
    finally:
        server.stop()
        thread.join(10)
        shutil.rmtree(runtime, ignore_errors=True)


SERVED_RUN = """
import sys
before = set(sys.modules)
sys.argv = ["mdmem", "hook", {event!r}, "--host", {host!r}, "--vault", {root!r}]
from mdmem.__main__ import run
try:
    run()
except SystemExit as exc:
    assert exc.code == 0, exc.code
stdlib = sys.stdlib_module_names
new = sorted(
    m for m in set(sys.modules) - before if m.split(".")[0] not in stdlib
)
print(repr(new), file=sys.stderr)
"""


@pytest.mark.parametrize(
    ("host", "event"),
    [
        ("claude-code", "prompt-submit"),
        ("claude-code", "session-start"),
        ("claude-code", "post-tool-use"),
        ("codex", "prompt-submit"),
        ("cursor", "session-start"),
    ],
)
def test_a_served_hook_imports_the_standard_library_only(
    served: Vault, host: str, event: str, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    # What is imported, not how fast (bench/ measures that): a loaded machine must not
    # push the first recall past the 300 ms budget and so hand over to the cold path.
    home = Path(os.environ["MDMEM_CONFIG_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "hooks.toml").write_text("prompt_latency_ms = 30000\nhook_latency_ms = 30000\n")
    before = ask(served.root, "ping", timeout=10)[1]["requests"]
    code = SERVED_RUN.format(event=event, host=host, root=str(served.root))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-c", code],
        input=payload(host, event, repo),
        capture_output=True,
        env=env,
        cwd=repo,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    loaded = set(ast.literal_eval(proc.stderr.decode().strip().splitlines()[-1]))
    assert loaded <= OURS, loaded - OURS
    answer = json.loads(proc.stdout)
    assert "failed" not in json.dumps(answer)
    if event == "prompt-submit" and host != "cursor":
        context = answer["hookSpecificOutput"]["additionalContext"]
        assert "fly.io" in context and "degraded" not in context
    # Answered by the server (this request and the ping counting it), not in-process.
    assert ask(served.root, "ping", timeout=10)[1]["requests"] == before + 2


def run_hook(argv: list[str], stdin: bytes, cwd: Path, **env: str) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-m", "mdmem", *argv],
        input=stdin,
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(REPO), **env},
        cwd=cwd,
        timeout=120,
    )
    assert proc.returncode == 0 and not proc.stderr, proc.stderr.decode()
    out: dict[str, Any] = json.loads(proc.stdout)
    return out


def test_warm_and_cold_answers_agree(served: Vault, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    argv = ["hook", "session-start", "--vault", str(served.root)]
    data = payload("claude-code", "session-start", repo)
    before = ask(served.root, "ping", timeout=10)[1]["requests"]
    warm = run_hook(argv, data, repo)
    assert ask(served.root, "ping", timeout=10)[1]["requests"] == before + 2
    cold = run_hook(argv, data, repo, MDMEM_RUNTIME_DIR=str(tmp_path / "no-server"))
    assert warm == cold


def test_hooks_switched_off_by_the_user_answer_empty_warm_and_cold(
    served: Vault, tmp_path: Path
) -> None:
    write_user_config("enabled = false\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    argv = ["hook", "prompt-submit", "--vault", str(served.root)]
    data = payload("claude-code", "prompt-submit", repo)
    warm = run_hook(argv, data, repo)
    cold = run_hook(argv, data, repo, MDMEM_RUNTIME_DIR=str(tmp_path / "no-server"))
    assert warm == cold == {}


def test_the_server_refuses_a_route_to_another_vault(served: Vault, tmp_path: Path) -> None:
    route = client.hook_route({"--vault": str(tmp_path / "elsewhere")}, {"cwd": "/"})
    params = {"host": "claude-code", "event": "session-start", "payload": {}, "route": route}
    with pytest.raises(InvalidInputError, match="not this one"):
        ask(served.root, "hook", params, timeout=30)
    with pytest.raises(InvalidInputError, match="route"):
        ask(served.root, "hook", {**params, "route": {"env": {"HOME": 1}}}, timeout=30)
