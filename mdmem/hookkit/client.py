"""The first step of ``mdmem hook <event>``: hand the payload to the warm server, print its answer.

A coding agent runs the hook before every prompt and after every tool call,
each time in a fresh process, so what this module imports is paid on every
one of them: the standard library only (``os``, ``sys``, ``json`` and
``socket`` through :mod:`mdmem.warm.client`; ``tomllib`` only where a
``hooks.toml`` or ``.mdmem.toml`` exists to be read). No configuration
module, host formats, logging, dataclasses or pathlib.

The client decides only what it must before it can reach a server: which
vault's server (:func:`guess_root`, the same order as
:func:`mdmem.hookkit.policy.hook_vault_root`) and how long to wait
(:func:`server_timeout`: within the event's budget, whatever the server
does). The request then carries a *route* — the payload's
cwd, the process's folder, the command's ``--vault``/``--vault-name``, the
user's config folder and ``MDMEM_VAULT`` — and the server resolves the
policy and the vault from it with the very functions the in-process path
uses (:func:`~mdmem.hookkit.policy.resolve_route`), refusing a request
meant for another vault. Anything else — no server, a late, wedged or
refused answer, odd arguments, an unreadable payload, a ``hooks doctor`` probe —
is handed (:data:`Handoff`) to :func:`mdmem.hookkit.cold.thin_hook` (the cold
path: it opens the vault and starts a server) with the bytes already read and
what the server said, so nothing is read or asked twice.
"""

from __future__ import annotations

import os
import sys
import time

from mdmem.ipc.boundedjson import MAX_DEPTH, loads_bounded
from mdmem.ipc.capped import read_capped
from mdmem.ipc.hostproc import host_process
from mdmem.warm.client import PING_SECONDS, ask_within, find_root

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "FOLDER_LISTS",
    "HOST_CWD",
    "HOST_EVENTS",
    "HOST_TIMEOUTS",
    "MAX_STDIN_BYTES",
    "PROBE_ENV",
    "Handoff",
    "Prior",
    "config_home",
    "guess_root",
    "hook_latency_ms",
    "hook_route",
    "parse_hook_line",
    "print_answer",
    "prompt_latency_ms",
    "read_stdin",
    "run",
    "server_timeout",
]

MAX_STDIN_BYTES = 16 * 1024 * 1024
PROBE_ENV = "MDMEM_HOOK_PROBE"  # the same name as mdmem.hookkit.runner.PROBE_ENV
#: The events of each host (mdmem's words), as :data:`mdmem.hookkit.hosts.HOSTS`
#: has them (a test keeps the two equal): an unknown one goes the cold way. A new
#: host is added here too, or its hooks always take the cold path.
_EVERY_EVENT = frozenset(
    {
        "session-start",
        "prompt-submit",
        "post-tool-use",
        "post-tool-failure",
        "pre-compact",
        "stop",
        "session-end",
    }
)
HOST_EVENTS: dict[str, frozenset[str]] = {
    "claude-code": _EVERY_EVENT,
    "codex": frozenset({"session-start", "prompt-submit", "post-tool-use", "pre-compact", "stop"}),
    "cursor": _EVERY_EVENT,
}
#: Where each host's payload names the project folder, the first field present
#: winning, as each host's ``Fields.cwd`` has it (a test keeps the two equal); a
#: field of :data:`FOLDER_LISTS` holds a list of folders, the first the project's.
HOST_CWD: dict[str, tuple[str, ...]] = {
    "claude-code": ("cwd",),
    "codex": ("cwd",),
    "cursor": ("workspace_roots", "cwd"),
}
FOLDER_LISTS = frozenset({"workspace_roots"})
#: Seconds each host waits for a hook, per event (every host alike, as in hosts.base):
#: its limit, never what a hook takes (see :func:`server_timeout`).
HOST_TIMEOUTS: dict[str, int] = {
    "session-start": 30,
    "prompt-submit": 10,
    "post-tool-use": 30,
    "post-tool-failure": 30,
    "pre-compact": 120,
    "stop": 120,
    "session-end": 120,
}
DEFAULT_LATENCY_MS = 300  # policy.DEFAULTS["prompt_latency_ms"]
DEFAULT_HOOK_MS = 1000  # policy.DEFAULTS["hook_latency_ms"]
_TRANSPORT_S = 0.1  # connect, send, receive on a local socket, with room for a busy machine
_GLOBAL_VALUES = ("--vault", "--agent")
_GLOBAL_FLAGS = ("-q", "--quiet")
_HOOK_VALUES = ("--host", "--vault-name", "--vault", "--agent")
_MAX_SETTINGS_BYTES = 256 * 1024  # as projectpolicy reads a settings file

#: What the fast path learnt, for the cold path: (the vault's real path, the
#: server's status "ok" | "absent" | "late" | "wedged" | "skipped" | "error", seconds
#: waited; see :func:`mdmem.warm.client.ask_within`).
Prior = tuple[str, str, float]
#: What the cold path takes over: the payload already read, and the server's answer.
Handoff = tuple[bytes, Prior | None]


def run(argv: list[str]) -> int | Handoff | None:
    """``mdmem ARGV`` when it is a hook line: 0 when the warm server's answer is printed,
    else the :data:`Handoff` for :func:`mdmem.hookkit.cold.thin_hook`; None for any other line."""
    parsed = parse_hook_line(argv)
    if parsed is None:
        return None
    options, event, unknown = parsed
    raw = read_stdin()
    try:
        out, prior = _ask_server(options, event, unknown, raw)
    except Exception:  # the cold path answers whatever went wrong here, and logs it
        out, prior = None, None
    if out is None:
        return raw, prior
    print_answer(out)
    return 0


def print_answer(out: str) -> None:
    """The hook's answer on stdout, a line; a host that stopped reading is no error."""
    try:
        sys.stdout.write(out + "\n")
        sys.stdout.flush()
    except (OSError, ValueError):
        pass  # the host stopped reading: nothing left to tell it


def _ask_server(
    options: dict[str, str], event: str, unknown: list[str], raw: bytes
) -> tuple[str | None, Prior | None]:
    host = options.get("--host", "claude-code")
    if unknown or event not in HOST_EVENTS.get(host, ()) or len(raw) > MAX_STDIN_BYTES:
        return None, None
    if os.environ.get(PROBE_ENV):
        return None, None  # a doctor's probe: the cold path says what it did
    text = raw.decode("utf-8", "replace").encode("utf-8")
    try:
        payload = loads_bounded(text, MAX_DEPTH) if text.strip() else {}
    except (ValueError, RecursionError):
        return None, None
    route = hook_route(options, payload)
    root = guess_root(route)
    if root is None:
        return None, None
    params: dict[str, Any] = {"host": host, "event": event, "payload": payload, "route": route}
    found = host_process()
    if found is not None:  # the server stays up while the host lives
        params["client"] = {"host_pid": found[0], "host_start": found[1]}
    latency = prompt_latency_ms(route) if event == "prompt-submit" else hook_latency_ms(route)
    timeout = server_timeout(host, event, latency)
    started = time.monotonic()
    # Real, as the cold path compares it: a vault named through a link is the same
    # vault, and its server must not be asked (and waited for) a second time.
    real = os.path.realpath(root)
    try:
        status, result = ask_within(root, "hook", params, timeout=timeout)
    except Exception:  # refused (another vault's route, a bad payload): the cold path decides
        return None, (real, "error", time.monotonic() - started)
    if status == "ok" and isinstance(result, str):
        return result, None
    return None, (real, status, time.monotonic() - started)


def parse_hook_line(argv: list[str]) -> tuple[dict[str, str], str, list[str]] | None:
    """(options, event, words not understood) of ``mdmem [global options] hook EVENT ...``;
    None for anything else (and for a hook line asking for help)."""
    options: dict[str, str] = {}
    i = 0
    while i < len(argv):
        word = argv[i]
        if word in _GLOBAL_VALUES and i + 1 < len(argv):
            options[word] = argv[i + 1]
            i += 2
        elif word.startswith(tuple(f"{o}=" for o in _GLOBAL_VALUES)):
            name, _, value = word.partition("=")
            options[name] = value
            i += 1
        elif word in _GLOBAL_FLAGS:
            i += 1
        else:
            break
    rest = argv[i:]
    if not rest or rest[0] != "hook" or any(w in ("-h", "--help") for w in rest):
        return None
    event = rest[1] if len(rest) > 1 else ""
    tail, unknown = rest[2:], []
    j = 0
    while j < len(tail):
        word = tail[j]
        name, eq, value = word.partition("=")
        if name in _HOOK_VALUES and eq:
            options[name] = value
            j += 1
        elif word in _HOOK_VALUES and j + 1 < len(tail):
            options[word] = tail[j + 1]
            j += 2
        else:
            unknown.append(word)
            j += 1
    return options, event, unknown


def read_stdin() -> bytes:
    """The host's payload: at most ``MAX_STDIN_BYTES + 1`` bytes; nothing from a terminal."""
    stream = sys.stdin
    if stream is None:
        return b""
    try:
        if stream.isatty():
            return b""  # run by hand: no host is sending anything
        return stream.buffer.read(MAX_STDIN_BYTES + 1)
    except (OSError, ValueError, AttributeError):
        return b""


def config_home(env: dict[str, str] | None = None) -> str:
    """:func:`mdmem.config.config_home` without platformdirs (a test keeps them equal)."""
    env = dict(os.environ) if env is None else env
    if env.get("MDMEM_CONFIG_HOME"):
        return os.path.expanduser(env["MDMEM_CONFIG_HOME"])
    if sys.platform == "darwin":
        return os.path.expanduser("~/Library/Application Support/mdmem")
    base = os.environ.get("XDG_CONFIG_HOME", "")  # platformdirs reads the process's own
    if not base.strip():
        base = os.path.expanduser("~/.config")
    return os.path.join(base, "mdmem")


def hook_route(options: dict[str, str], payload: Any) -> dict[str, Any]:
    """What the vault and policy of this hook run depend on (see ``resolve_route``)."""
    data = payload if isinstance(payload, dict) else {}
    cwd = None
    for name in HOST_CWD.get(options.get("--host", "claude-code"), ("cwd",)):
        value = data.get(name)
        if name in FOLDER_LISTS:
            value = value[0] if isinstance(value, list) and value else None
        cwd = _text(value)
        if cwd is not None:
            break
    workdir = os.getcwd()
    env = {"MDMEM_CONFIG_HOME": config_home()}
    if os.environ.get("MDMEM_VAULT"):
        env["MDMEM_VAULT"] = os.environ["MDMEM_VAULT"]
    return {
        "cwd": cwd or workdir,  # hosts start hooks in the project
        "workdir": workdir,
        "vault": options.get("--vault"),
        "vault_name": options.get("--vault-name"),
        "env": env,
    }


def guess_root(route: dict[str, Any]) -> str | None:
    """The vault whose server to ask, as ``hook_vault_root`` would choose it; None if none.

    A guess only in that the server checks it: a request that reaches the
    wrong vault's server is refused there, and the cold path decides.
    """
    user, project, confirmed = _settings(route)
    known = {
        str(k): os.path.expanduser(v)
        for k, v in _table(user.get("vaults")).items()
        if isinstance(v, str) and v
    }
    default = user.get("vault")
    default = os.path.expanduser(default) if isinstance(default, str) and default else None
    wanted = project.get("vault") if confirmed else None
    if isinstance(wanted, str) and wanted:
        if wanted in known:
            return known[wanted]
        as_path = os.path.expanduser(wanted)
        allowed = {os.path.realpath(p) for p in (*known.values(), default) if p}
        if os.path.isabs(as_path) and os.path.realpath(as_path) in allowed:
            return as_path
    if route.get("vault"):
        return os.path.expanduser(route["vault"])
    name = route.get("vault_name")
    if name and name in known:
        return known[name]
    given = route["env"].get("MDMEM_VAULT")
    if given:
        return os.path.expanduser(given)
    if default:
        return default
    return find_root([], route.get("workdir"))  # MDMEM_VAULT was looked at above


def prompt_latency_ms(route: dict[str, Any]) -> int:
    """The prompt's latency budget, as ``resolve_policy`` sets it (a project may only lower it)."""
    return _latency(route, "prompt_latency_ms", DEFAULT_LATENCY_MS)


def hook_latency_ms(route: dict[str, Any]) -> int:
    """The other events' latency budget, as ``resolve_policy`` sets it."""
    return _latency(route, "hook_latency_ms", DEFAULT_HOOK_MS)


def _latency(route: dict[str, Any], key: str, default: int) -> int:
    user, project, _ = _settings(route)
    ceiling = _budget(user.get(key))
    ceiling = default if ceiling is None else ceiling
    asked = _budget(project.get(key))
    return ceiling if asked is None else min(asked, ceiling)


def server_timeout(host: str, event: str, latency_ms: int) -> float:
    """How long to wait for the server's answer, so that the hook answers its host in
    time whatever the server does (a late answer costs :data:`PING_SECONDS` more,
    to tell a busy server from a wedged one).

    ``latency_ms``: prompt-submit's ``prompt_latency_ms`` (the server keeps it
    too, and answers ``degraded`` when recall runs out; the socket's round trip
    comes on top), or every other event's ``hook_latency_ms``, the ping included:
    a capture the server took goes on there, and nothing waits on its answer.
    """
    if event == "prompt-submit":
        return max(0.05, latency_ms / 1000) + _TRANSPORT_S
    return max(0.05, latency_ms / 1000 - PING_SECONDS)


def _settings(route: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], bool]:
    """The user's ``hooks.toml``, the project's ``.mdmem.toml`` ({} where none is
    read) and whether the person confirmed that file (as projects.trust says)."""
    home = route["env"].get("MDMEM_CONFIG_HOME") or config_home()
    user_file = os.path.join(home, "hooks.toml")
    user = _read_toml(user_file) if os.path.isfile(user_file) else {}
    found = _policy_file(route.get("cwd") or "")
    if not found:
        return user, {}, False
    data = read_capped(found, _MAX_SETTINGS_BYTES + 1)
    project = _parse_toml(data)
    return user, project, bool(project) and _confirmed(home, found, data)


def _confirmed(home: str, path: str, data: bytes | None) -> bool:
    """Whether ``trusted-projects.json`` holds these bytes' sha256 for ``path``."""
    if not data:
        return False
    import hashlib
    import json

    raw = read_capped(os.path.join(home, "trusted-projects.json"), 4 * 1024 * 1024)
    try:
        files = json.loads(raw or b"{}").get("files")
    except (ValueError, AttributeError, RecursionError):
        return False
    entry = files.get(os.path.realpath(path)) if isinstance(files, dict) else None
    return isinstance(entry, dict) and entry.get("sha256") == hashlib.sha256(data).hexdigest()


def _policy_file(cwd: str) -> str | None:
    """The nearest ``.mdmem.toml`` at or above an absolute ``cwd`` (as find_policy_file)."""
    if not cwd:
        return None
    here = os.path.expanduser(cwd)
    if not os.path.isabs(here):
        return None
    here = os.path.normpath(here)
    while True:
        path = os.path.join(here, ".mdmem.toml")
        if os.path.isfile(path):
            return path
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def _read_toml(path: str) -> dict[str, Any]:
    return _parse_toml(read_capped(path, _MAX_SETTINGS_BYTES + 1))


def _parse_toml(data: bytes | None) -> dict[str, Any]:
    if data is None or len(data) > _MAX_SETTINGS_BYTES:
        return {}
    import tomllib  # only where a settings file exists

    try:
        return tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError):
        return {}


def _table(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _budget(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
