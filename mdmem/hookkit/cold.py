"""``mdmem hook <event>``: what a coding agent's hooks run, kept light and never failing.

``python -m mdmem`` / the ``mdmem`` script hand any ``hook`` command line to
:func:`thin_hook` before importing click or the CLI: the host's formats
(:mod:`mdmem.hookkit.hosts`) and the project policy
(:mod:`mdmem.hookkit.policy`) are standard library, and the warm
server's client (:mod:`mdmem.warm.client`) too, so a hook the server answers
never loads Whoosh, FAISS, numpy or the embedder. Only when no server
runs is the vault opened here (keyword recall, marked ``degraded``); the
first such call starts a warm server in the background for the calls after
it, and says so once (unless ``warm_server = false`` in ``hooks.toml`` or
``MDMEM_SERVER=off``).

Whatever a server that runs does, the hook answers within its event's
budget (:func:`mdmem.hookkit.client.server_timeout`): a server that is late keeps
the capture it took, and the events that inject answer without it; one found
wedged (:func:`mdmem.warm.client.ask_within`) is skipped for a while, and a
capture it can't take is made by a child process the host does not wait for.

Whatever arrives — on stdin (garbage, a payload nested a thousand levels, 16
MB and more) or on the command line (an unknown event or host, options this
version does not know) — the answer is valid output for the host and the
exit code 0: Claude Code reads exit 2 as "block", and a failing hook must
never block the user. Failures, with their tracebacks, go to the hook log
(in the vault's state dir, or ``hook-errors.jsonl`` in the mdmem config
folder when no vault could be opened), never to the terminal; where the host
shows one, a one-line notice says so.
"""

from __future__ import annotations

import json
import logging
import os
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mdmem.config import config_home
from mdmem.hookkit import hosts as hf
from mdmem.hookkit.client import (
    MAX_STDIN_BYTES,
    PROBE_ENV,
    Prior,
    parse_hook_line,
    print_answer,
    read_stdin,
    server_timeout,
)
from mdmem.hookkit.policy import Policy, hook_vault_root, policy_to_json, resolve_policy
from mdmem.ipc.boundedjson import MAX_DEPTH, loads_bounded

__all__ = ["MAX_STDIN_BYTES", "PROBE_ENV", "answer_hook", "read_stdin", "thin_hook"]

_ERRORS_FILE = "hook-errors.jsonl"
_MAX_ERRORS_BYTES = 2 * 1024 * 1024
_STARTED_NOTE = "announced"  # beside the server's socket: the start was told once
#: What the warm server said when it gave no answer: late (busy), wedged (found
#: so just now) or skipped (found so lately, not asked).
_UNANSWERED = ("late", "wedged", "skipped")


def thin_hook(
    argv: list[str], *, raw: bytes | None = None, prior: Prior | None = None
) -> int | None:
    """Answer ``mdmem [global options] hook EVENT [--host H] [--vault-name N]`` on stdout.

    None only when ARGV is not a hook line (or asks for help): the full CLI
    takes it. Any hook line is answered here and returns 0, whatever is odd
    about it (logged, never raised). ``raw``: the payload when
    :mod:`mdmem.hookkit.client` read it already; ``prior``: what its server said.
    """
    parsed = parse_hook_line(argv)
    if parsed is None:
        return None
    _route_logging()
    options, event, unknown = parsed
    host_name = options.get("--host", "claude-code")
    try:
        if raw is None:
            raw = read_stdin()
        out = answer_hook(
            options.get("--vault"),
            options.get("--agent"),
            host_name,
            event,
            raw,
            vault_name=options.get("--vault-name"),
            unknown=unknown,
            prior=prior,
            detach=True,
        )
    except BaseException as exc:  # the host gets an answer, always
        out = _failed(host_name, event, f"{type(exc).__name__}: {exc}", exc)
    print_answer(out)
    return 0


def answer_hook(
    vault_path: str | None,
    agent: str | None,
    host_name: str,
    event: str,
    raw: bytes,
    *,
    vault_name: str | None = None,
    unknown: list[str] | None = None,
    prior: Prior | None = None,
    detach: bool = False,
) -> str:
    """The stdout for one hook run (``raw``: the host's stdin); never raises.

    ``prior``: the warm server's answer to :mod:`mdmem.hookkit.client` (not asked
    again when it was this run's vault). ``detach``: this process is the
    hook's own, and may fork a capture off that a wedged server can't take."""
    if host_name not in hf.HOSTS:
        _note_error(host_name, event, f"unknown host {host_name!r} (one of {', '.join(hf.HOSTS)})")
        return "{}"  # every host reads an empty object as "nothing to add"
    if event not in hf.host(host_name).events:
        return _failed(host_name, event, f"unknown event {event!r} for {host_name}")
    if unknown:
        _note_error(host_name, event, f"ignored arguments: {' '.join(unknown)[:200]}")
    try:
        if len(raw) > MAX_STDIN_BYTES:
            raise ValueError(f"hook payload larger than {MAX_STDIN_BYTES // (1024 * 1024)} MB")
        # Bytes that are not UTF-8 (a tool's binary output) read as U+FFFD, as before.
        text = raw.decode("utf-8", "replace").encode("utf-8")
        payload = loads_bounded(text, MAX_DEPTH) if text.strip() else {}
    except (ValueError, RecursionError) as exc:
        return _failed(host_name, event, f"unreadable payload ({exc})")
    try:
        inp = hf.parse_input(host_name, event, payload)
        # Hosts start hooks in the project; a payload without a cwd means that one.
        policy = resolve_policy(inp.cwd or os.getcwd())
        if not policy.enabled:
            return hf.render_output(host_name, event)
        root = _vault_root(vault_path, vault_name, policy)
        if prior is not None and prior[0] == os.path.realpath(root):
            status, warm, waited = prior[1], None, prior[2]
        else:
            started = time.monotonic()
            if agent and event not in hf.INJECTING:
                # The warm server writes as its vault's agent; a capture for an
                # explicit --agent is made here, so it is authored as asked.
                status, warm = "own-agent", None
            else:
                status, warm = _warm_answer(root, host_name, event, payload, policy)
            if warm is not None:
                return warm
            waited = time.monotonic() - started
        if status in _UNANSWERED and event in hf.INJECTING:
            # A cold in-process run would outlast the event's budget (opening the
            # vault alone takes about that), and a wedged server may hold the
            # vault's lock: the host is answered now, without memories.
            return _unanswered(host_name, event, status, waited, policy)
        if status == "late":
            # The server took the capture and is still at it: doing it here too
            # would only wait for its lock. Nothing to show the host either way.
            return hf.render_output(host_name, event)
        if os.environ.get(PROBE_ENV) and event not in hf.INJECTING:
            # A doctor's probe of a capture: it would write nothing, so the vault
            # is not opened for it (the injecting probes open it and say which).
            if not (root / "mdmem.toml").is_file():
                raise FileNotFoundError(f"{root} is not an mdmem vault (no mdmem.toml)")
            return hf.render_output(host_name, event)
        notice = _wedged_notice(host_name, event, status)
        if status in ("wedged", "skipped") and detach and _forked_off():
            # This process answers the host; the child makes the capture, in its own time.
            return _with_notice(host_name, event, hf.render_output(host_name, event), notice)
        from mdmem.hookkit.runner import run_event
        from mdmem.vault import Vault

        # The vault's own agent (--agent, MDMEM_AGENT, mdmem.toml), as the warm
        # server's: a capture has one author whichever process made it.
        with Vault.open(root, agent=agent) as vault:
            out = run_event(vault, host_name, event, payload, policy, warm=False)
        if status == "absent":
            # Started after the answer, so its start-up does not compete with this hook.
            notice = _start_server(root, host_name, event)
        return _with_notice(host_name, event, out, notice)
    except Exception as exc:  # the host must get an answer whatever happened
        return _failed(host_name, event, f"{type(exc).__name__}: {exc}", exc)


def _vault_root(vault_path: str | None, vault_name: str | None, policy: Policy) -> Path:
    """The vault of this hook run (see :func:`mdmem.hookkit.policy.hook_vault_root`)."""
    root, notes = hook_vault_root(policy, vault_path, vault_name)
    for note in notes:
        _note_error("-", "-", note)
    return root


def _warm_answer(
    root: Path, host_name: str, event: str, payload: Any, policy: Policy
) -> tuple[str, str | None]:
    """What the warm server made of it (it runs ``hostkit.run_event`` on its open vault).

    ``("ok", stdout)``, or ``("absent" | "late" | "wedged" | "skipped" | "error",
    None)``: no server, no answer in time (it may still be working on it), no
    answer nor a ping just now or lately (:func:`mdmem.warm.client.ask_within`),
    or it refused.
    """
    from mdmem.ipc.hostproc import host_process
    from mdmem.warm.client import ask_within

    timeout = _server_timeout(host_name, event, policy)
    params: dict[str, Any] = {
        "host": host_name,
        "event": event,
        "payload": payload,
        "policy": policy_to_json(policy),
    }
    probe = os.environ.get(PROBE_ENV)
    if probe:
        params["probe"] = probe
    host = host_process()
    if host is not None:  # the server stays up while this process lives
        params["client"] = {"host_pid": host[0], "host_start": host[1]}
    try:
        status, result = ask_within(root, "hook", params, timeout=timeout)
    except Exception:  # the in-process path is the fallback for any server trouble
        return "error", None
    if status == "ok" and isinstance(result, str):
        return status, result
    return status, None


def _server_timeout(host_name: str, event: str, policy: Policy) -> float:
    if event == "prompt-submit":
        return server_timeout(host_name, event, policy.prompt_latency_ms)
    return server_timeout(host_name, event, policy.hook_latency_ms)


def _unanswered(host_name: str, event: str, status: str, waited: float, policy: Policy) -> str:
    """The answer of an event that injects when the warm server gave none in time."""
    if event == "prompt-submit":
        if status == "late":
            return _late(host_name, event, waited)
        block = (
            "## Recalled Memory (mdmem, degraded)\n"
            "_No memories: the warm server is not answering._\n"
        )
        notice = _wedged_notice(host_name, event, status)
        return _with_notice(host_name, event, hf.render_output(host_name, event, block), notice)
    if status == "late":
        budget = policy.hook_latency_ms
        line = f"warm server gave no answer in {budget} ms (hook_latency_ms)"
        _note_error(host_name, event, line)
        notice = f"mdmem: no memories this time: the {line}"
        notice = notice if _shows_notice(host_name, event) else ""
    else:
        notice = _wedged_notice(host_name, event, status)
    return hf.render_output(host_name, event, notice=notice)


def _wedged_notice(host_name: str, event: str, status: str) -> str:
    """Said (and logged) once, by the hook that found the server wedged; "" after."""
    if status != "wedged":
        return ""
    from mdmem.warm.client import WEDGED_SECONDS

    line = (
        f"the warm server took a hook and answered neither it nor a ping: hooks skip it "
        f"for {WEDGED_SECONDS:.0f} s (`mdmem server stop` ends it)"
    )
    _note_error(host_name, event, line)
    return f"mdmem: {line}" if _shows_notice(host_name, event) else ""


def _forked_off() -> bool:
    """Fork, and whether this process is done: True in the parent, which answers the
    host at once; False in the child, which carries on detached from the host's
    session and pipes (so the host sees the hook end), or where nothing was forked
    (no fork on this system, or it failed): then this process does the work."""
    fork = getattr(os, "fork", None)
    if fork is None:
        return False
    try:
        pid = fork()
    except OSError:
        return False
    if pid:
        return True
    try:
        os.setsid()
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        if null > 2:
            os.close(null)
    except OSError:
        pass
    return False


def _start_server(root: Path, host_name: str, event: str) -> str:
    """Start the vault's warm server for the next hooks; a notice the first time."""
    from mdmem.hookkit.policy import user_settings
    from mdmem.warm.client import paths_for, server_starting, spawn_server

    if os.environ.get("MDMEM_SERVER") == "off" or os.environ.get("MDMEM_NO_SERVER"):
        return ""
    if not user_settings()[0]["warm_server"] or os.environ.get(PROBE_ENV):
        return ""
    if not (root / "mdmem.toml").is_file() or server_starting(root):
        return ""
    if not spawn_server(root):
        return ""
    note = paths_for(root).folder / f"{paths_for(root).key}.{_STARTED_NOTE}"
    if note.exists() or not _shows_notice(host_name, event):
        return ""
    try:
        note.touch()
    except OSError:
        return ""
    return (
        "mdmem: started a warm server for this vault, so the next hooks answer fast with "
        "full recall (`mdmem server status`; `warm_server = false` in hooks.toml turns this off)"
    )


def _shows_notice(host_name: str, event: str) -> bool:
    """Whether the host shows a notice for ``event`` (Cursor only at a few)."""
    return event in hf.host(host_name).notice_events


def _with_notice(host_name: str, event: str, out: str, notice: str) -> str:
    if not notice:
        return out
    try:
        data = json.loads(out)
    except ValueError:
        return out
    if not isinstance(data, dict):
        return out
    key = hf.host(host_name).notice_key
    data[key] = f"{data[key]}\n{notice}" if data.get(key) else notice
    return json.dumps(data, ensure_ascii=False)


def _late(host_name: str, event: str, waited: float) -> str:
    _note_error(host_name, event, f"warm server gave no answer in {waited * 1000:.0f} ms")
    block = (
        "## Recalled Memory (mdmem, degraded)\n"
        "_No memories in time: the warm server did not answer within the latency budget._\n"
    )
    return hf.render_output(host_name, event, block)


def _note_error(host_name: str, event: str, line: str, exc: BaseException | None = None) -> None:
    """One line (and a traceback) in ``hook-errors.jsonl``; never raises."""
    try:
        path = config_home() / _ERRORS_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        entry: dict[str, Any] = {
            "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "host": host_name,
            "event": event,
            "error": line,
        }
        if exc is not None:
            entry["trace"] = "".join(traceback.format_exception(exc))[-8000:]
        try:
            if path.stat().st_size > _MAX_ERRORS_BYTES:
                os.replace(path, path.with_suffix(".jsonl.1"))
        except OSError:
            pass
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(fd, (json.dumps(entry, ensure_ascii=False) + "\n").encode("utf-8"))
        finally:
            os.close(fd)
    except Exception:  # a log that can't be written must not fail the hook
        pass


def _failed(host_name: str, event: str, message: str, exc: BaseException | None = None) -> str:
    line = " ".join(message.split())[:300]
    _note_error(host_name, event, line, exc)
    try:
        return hf.render_output(host_name, event, notice=f"mdmem {event} hook failed: {line}")
    except Exception:  # an unknown host or event: the empty answer
        return "{}"


class _HookLogHandler(logging.Handler):
    """Warnings of a hook process (with their tracebacks) to the hook log, not stderr."""

    def emit(self, record: logging.LogRecord) -> None:
        exc = record.exc_info[1] if record.exc_info else None
        _note_error(record.name, "log", record.getMessage()[:500], exc)


def _route_logging() -> None:
    root = logging.getLogger()
    if not any(isinstance(h, _HookLogHandler) for h in root.handlers):
        handler = _HookLogHandler(logging.WARNING)
        root.addHandler(handler)
        if root.level > logging.WARNING or root.level == logging.NOTSET:
            root.setLevel(logging.WARNING)
