"""``mdmem hook <event>``: what a coding agent's hooks run, kept light.

``python -m mdmem`` / the ``mdmem`` script hand a plain ``hook`` command line
to :func:`thin_hook` before importing click or the CLI: the host's formats
(:mod:`mdmem.agent.hostformats`) and the project policy
(:mod:`mdmem.agent.projectpolicy`) are standard library, and the warm
server's client (:func:`mdmem.agent.warm.request`) too, so a hook the server
answers never loads Whoosh, FAISS, numpy or the embedder. Only when no server
answers is the vault opened here (keyword recall, marked ``degraded``).

The answer is always valid output for the host and the exit code always 0: a
failing hook must not block the user's prompt. Failures go to the hook log (in
the vault's state dir, or ``hook-errors.jsonl`` in the mdmem config folder when
no vault could be opened) and, where the host shows one, a one-line notice.
"""

from __future__ import annotations

import json
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mdmem.agent import hostformats as hf
from mdmem.agent.projectpolicy import Policy, policy_to_json, resolve_policy
from mdmem.config import config_home

__all__ = ["MAX_STDIN_BYTES", "PROBE_ENV", "answer_hook", "thin_hook"]

MAX_STDIN_BYTES = 16 * 1024 * 1024
_TRANSPORT_S = 0.1  # connect, send, receive on a local socket, with room for a busy machine
PROBE_ENV = "MDMEM_HOOK_PROBE"  # the same name as mdmem.agent.hostkit.PROBE_ENV
_VALUE_OPTIONS = ("--vault", "--agent")


def thin_hook(argv: list[str]) -> int | None:
    """Run ``mdmem [--vault V] [--agent A] hook EVENT [--host H]`` without click.

    None (the full CLI handles it, with its help and usage errors) for any other
    command line, or a hook line this parser doesn't read exactly.
    """
    options: dict[str, str] = {}
    i = 0
    while i < len(argv) and argv[i] in _VALUE_OPTIONS and i + 1 < len(argv):
        options[argv[i]] = argv[i + 1]
        i += 2
    rest = argv[i:]
    if len(rest) < 2 or rest[0] != "hook" or rest[1] not in hf.EVENTS:
        return None
    event, tail = rest[1], rest[2:]
    host_name = "claude-code"
    if tail[:1] == ["--host"] and len(tail) == 2:
        host_name = tail[1]
    elif tail:
        return None
    if host_name not in hf.HOSTS:
        return None
    raw = sys.stdin.buffer.read(MAX_STDIN_BYTES + 1)
    out = answer_hook(options.get("--vault"), options.get("--agent"), host_name, event, raw)
    sys.stdout.write(out + "\n")
    sys.stdout.flush()
    return 0


def answer_hook(
    vault_path: str | None, agent: str | None, host_name: str, event: str, raw: bytes
) -> str:
    """The stdout for one hook run (``raw``: the host's stdin); never raises."""
    try:
        if len(raw) > MAX_STDIN_BYTES:
            raise ValueError("hook payload larger than 16 MB")
        payload = json.loads(raw.decode("utf-8", "replace") or "{}")
    except ValueError as exc:
        return _failed(host_name, event, f"unreadable payload ({exc})")
    try:
        inp = hf.parse_input(host_name, event, payload)
        # Hosts start hooks in the project; a payload without a cwd means that one.
        policy = resolve_policy(inp.cwd or os.getcwd())
        if not policy.enabled:
            return hf.render_output(host_name, event)
        root = _vault_root(vault_path, policy)
        started = time.monotonic()
        warm = _warm_answer(root, host_name, event, payload, policy)
        if warm is not None:
            return warm
        waited = time.monotonic() - started
        if event == "prompt-submit" and waited >= _server_timeout(event, policy) * 0.9:
            # A server is there but busy: a cold in-process recall would only be slower.
            return _late(host_name, event, waited)
        from mdmem.agent.hostkit import run_event
        from mdmem.vault import Vault

        with Vault.open(root, agent=agent or f"{host_name}-hooks") as vault:
            return run_event(vault, host_name, event, payload, policy, warm=False)
    except Exception as exc:  # the host must get an answer whatever happened
        return _failed(host_name, event, f"{type(exc).__name__}: {exc}")


def _vault_root(vault_path: str | None, policy: Policy) -> Path:
    """The policy's vault, else --vault / $MDMEM_VAULT, the user's default, the nearest vault.

    Standard library only: importing :mod:`mdmem.vault` here would load the
    indexes even when the warm server answers.
    """
    if policy.vault is not None:
        return policy.vault
    given = vault_path or os.environ.get("MDMEM_VAULT")
    if given:
        return Path(given).expanduser()
    from mdmem.agent.projectpolicy import user_settings

    default = user_settings()[0]["vault"]
    if default is not None:
        return Path(default)
    here = Path.cwd().resolve()
    for candidate in (here, *here.parents):
        if (candidate / "mdmem.toml").is_file():
            return candidate
    raise FileNotFoundError(
        "no vault for the hooks: pass --vault to `mdmem hooks install`, set MDMEM_VAULT, "
        "or `vault` in hooks.toml"
    )


def _warm_answer(
    root: Path, host_name: str, event: str, payload: Any, policy: Policy
) -> str | None:
    """The warm server's answer (it runs ``hostkit.run_event`` on its open vault), or None.

    :func:`mdmem.agent.warm.request` is standard library only; None means no
    server for this vault, or no answer in time: the hook then answers
    in-process (keyword recall, marked ``degraded``).
    """
    from mdmem.agent.warm import request

    timeout = _server_timeout(event, policy)
    params = {
        "host": host_name,
        "event": event,
        "payload": payload,
        "policy": policy_to_json(policy),
    }
    try:
        result = request(root, "hook", params, timeout=timeout)
    except Exception:  # the in-process path is the fallback for any server trouble
        return None
    return result if isinstance(result, str) else None


def _server_timeout(event: str, policy: Policy) -> float:
    """How long to wait for the server: the prompt's latency budget (the server keeps
    it too, and answers ``degraded`` when recall runs out) plus the socket round trip."""
    if event != "prompt-submit":
        return 60.0
    return max(0.05, policy.prompt_latency_ms / 1000) + _TRANSPORT_S


def _late(host_name: str, event: str, waited: float) -> str:
    _note_error(host_name, event, f"warm server gave no answer in {waited * 1000:.0f} ms")
    block = (
        "## Recalled Memory (mdmem, degraded)\n"
        "_No memories in time: the warm server did not answer within the latency budget._\n"
    )
    return hf.render_output(host_name, event, block)


def _note_error(host_name: str, event: str, line: str) -> None:
    try:
        path = config_home() / "hook-errors.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        entry = {
            "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "host": host_name,
            "event": event,
            "error": line,
        }
        with path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(entry, ensure_ascii=False) + "\n")
    except OSError:
        pass


def _failed(host_name: str, event: str, message: str) -> str:
    line = " ".join(message.split())[:300]
    _note_error(host_name, event, line)
    try:
        return hf.render_output(host_name, event, notice=f"mdmem {event} hook failed: {line}")
    except ValueError:
        return "{}"
