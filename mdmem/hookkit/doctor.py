"""``mdmem hooks doctor``: run each installed hook as its host would, and check its answer.

Every mdmem hook in a host's personal, shared and user settings files runs as
a process, through a shell, with a payload shaped as that host documents it
(:func:`doctor_payload`) and :data:`~mdmem.hookkit.client.PROBE_ENV` set: the
hook then writes nothing (no capture, no commit), and a hook that injects says
which vault answered (a probe line carrying this run's token). A check passes
when the hook exits 0 with the JSON object its host reads, reports no failure,
and, for the events that inject, its context came back from a vault.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from mdmem.errors import HookConfigError
from mdmem.hookkit import hosts as hf
from mdmem.hookkit.client import PROBE_ENV
from mdmem.hookkit.install import config_file, project_folder, read_config

__all__ = ["DoctorReport", "check", "doctor_payload"]

_PROBE_LINE = re.compile(r"mdmem hooks doctor probe (\S+): vault (.+)")
_DOCTOR_WORKERS = 3  # hook processes at once: each is mostly start-up, on a shared machine
_PROBE_TIMEOUT_S = 60
_PROMPT = "what do you remember about this project?"

#: (``{"ok", "checks", "vaults", "seconds"}`` as ``hooks doctor --json`` shows it,
#: how many installed hooks ran).
DoctorReport = tuple[dict[str, Any], int]


def doctor_payload(host_name: str, event: str, cwd: Path, prompt: str) -> dict[str, Any]:
    """A payload shaped as the host documents it: its fields where :attr:`Host.fields`
    says it keeps them (the first name of each, the one every event of the host carries)."""
    h = hf.host(host_name)
    f = h.fields
    folder = f.cwd[0]
    payload: dict[str, Any] = {
        f.session[0]: "mdmem-doctor",
        folder: [str(cwd)] if folder in f.folder_lists else str(cwd),
        f.transcript: None,
        "hook_event_name": h.native(event),
    }
    if event == "session-start":
        payload[f.source] = "startup"
    elif event == "prompt-submit":
        payload[f.prompt] = prompt
    elif event == "post-tool-use":
        payload.update({f.tool_name: "Bash", f.tool_input: {"command": "true"}, f.tool_output: ""})
    elif event == "post-tool-failure":
        payload.update({f.tool_name: "Bash", f.tool_input: {"command": "false"}})
        payload[f.error] = "Exit code 1"
    return payload


def check(hosts: tuple[str, ...], directory: str | None) -> DoctorReport:
    """Run every mdmem hook installed for ``hosts`` (every host when empty) in the
    project ``directory`` (the current folder when None); see the module doc."""
    cwd = project_folder(directory)
    checks: list[dict[str, Any]] = []
    planned: dict[tuple[str, str, str], list[str]] = {}  # (host, event, command) -> files
    for host_name in hosts or tuple(hf.HOSTS):
        seen_paths: set[Path] = set()
        found_any = False
        for where in hf.LOCATIONS:
            path = config_file(host_name, where, directory)
            real = Path(os.path.realpath(path))
            if real in seen_paths:
                continue
            seen_paths.add(real)
            try:
                commands = hf.installed_commands(host_name, read_config(path)[0])
            except HookConfigError as exc:
                checks.append(_fail(host_name, "-", str(exc)))
                continue
            for event, command in commands.items():
                found_any = True
                planned.setdefault((host_name, event, command), []).append(str(path))
        if not found_any and hosts:
            checks.append(_fail(host_name, "-", "no mdmem hooks in its settings files"))
    events_seen: dict[tuple[str, str], int] = {}
    for host_name, event, _ in planned:
        events_seen[(host_name, event)] = events_seen.get((host_name, event), 0) + 1
    token = "mdmemprobe" + hashlib.sha1(os.urandom(8)).hexdigest()[:10]
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=_DOCTOR_WORKERS) as pool:
        probes = [
            pool.submit(_probe, host_name, event, command, cwd, token)
            for host_name, event, command in planned
        ]
        results = [f.result() for f in probes]
    for (host_name, event, _), files, result in zip(
        planned, planned.values(), results, strict=True
    ):
        result["files"] = files
        if events_seen[(host_name, event)] > 1:
            duplicate = "installed in more than one file: the host runs it more than once"
            result["note"] = "; ".join(filter(None, [result.get("note"), duplicate]))
        checks.append(result)
    if not planned and not checks:
        checks.append(_fail("-", "-", "no mdmem hooks installed here (mdmem hooks install HOST)"))
    vaults = sorted({c["vault"] for c in checks if c.get("vault")})
    ok = all(c["ok"] for c in checks)
    took = round(time.perf_counter() - started, 2)
    return {"ok": ok, "checks": checks, "vaults": vaults, "seconds": took}, len(planned)


def _fail(host_name: str, event: str, problem: str) -> dict[str, Any]:
    return {"host": host_name, "event": event, "ok": False, "problem": problem}


def _probe(host_name: str, event: str, command: str, cwd: Path, token: str) -> dict[str, Any]:
    result: dict[str, Any] = {"host": host_name, "event": event, "ok": False}
    payload = doctor_payload(host_name, event, cwd, _PROMPT)
    host_timeout = hf.host(host_name).timeouts[event]
    started = time.perf_counter()
    try:
        proc = subprocess.run(
            command,
            shell=True,  # the host runs it through a shell, so the doctor does too
            input=json.dumps(payload).encode(),
            capture_output=True,
            cwd=cwd,
            env={**os.environ, PROBE_ENV: token},
            # Longer than the host waits: a slow run is reported, a broken one failed.
            timeout=max(host_timeout, _PROBE_TIMEOUT_S),
        )
    except subprocess.TimeoutExpired:
        result["problem"] = f"no answer in {max(host_timeout, _PROBE_TIMEOUT_S)} s"
        return result
    except OSError as exc:
        result["problem"] = f"could not run: {exc}"
        return result
    result["ms"] = round((time.perf_counter() - started) * 1000)
    stdout = proc.stdout.decode("utf-8", "replace")
    try:
        data = json.loads(stdout)
    except ValueError:
        data = None
    # Any JSON may come back from a broken hook: only an object has the host's notice.
    notice_key = hf.host(host_name).notice_key
    notice = str(data.get(notice_key) or "") if isinstance(data, dict) else ""
    context = hf.context_of(host_name, stdout)
    probe = _PROBE_LINE.search(context)
    if probe and probe.group(1) == token:
        result["vault"] = probe.group(2).strip()
    if proc.returncode != 0:
        err = " ".join(proc.stderr.decode("utf-8", "replace").split())[:200]
        result["problem"] = f"exit {proc.returncode}: {err or 'no output'}"
    elif not isinstance(data, dict):
        result["problem"] = f"output is not the JSON object {host_name} reads: {stdout[:120]!r}"
    elif "hook failed" in notice:
        result["problem"] = notice[:300]
    elif hf.can_inject(host_name, event) and "vault" not in result:
        result["problem"] = "the hook's context did not come back from a vault"
    else:
        result["ok"] = True
        if result["ms"] > host_timeout * 1000:
            result["note"] = (
                f"slow: {host_name} gives up after {host_timeout} s "
                "(is the machine busy? a warm server answers in milliseconds)"
            )
    return result
