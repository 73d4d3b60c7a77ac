"""The warm server under load and abuse, against a baseline checkout in the same run.

Usage: python bench/warm_server.py [--clients 100] [--turns 600] [--memories 300]
                                  [--baseline PATH] [--json]

For each checkout (this one, and ``--baseline`` if given, e.g. a worktree of main)
a real ``mdmem server run`` process serves the same seeded vault (the default
embedder), each with its own state dir, and the script measures:

* **concurrent clients** — ``--clients`` clients connect at once, half asking
  ``ping`` and half ``recall``; how many got an answer (30 s each) and the
  slowest answer;
* **recall during a long pre-compact** — a Claude Code ``PreCompact`` hook
  with ``capture = "everything"`` and a transcript of ``--turns`` turns goes
  to the server, and a ``recall`` and a ``UserPromptSubmit`` hook (its 300
  ms budget) are sent every 0.2 s while it runs. The idle column is the same
  recall with nothing else running; the bar (issue 24) is an answer within
  2 s; a prompt hook counts when memories came back in time; the same
  capture is then run with nothing beside it ("compact alone");
* **hostile requests** — a request nested 975 levels, a payload whose
  ``transcript_path`` is a FIFO, one that is ``/dev/zero``, and 20 clients
  that send half a request and stall; after each, whether the server still
  answers ``ping`` within 2 s (and its RSS).

Load matters on a shared machine: the table prints ``uptime`` beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import emit_json, median, print_table, scratch_dir

HERE = Path(__file__).resolve().parent.parent
RSS_LIMIT_MB = 1500

from mdmem.warm.client import paths_for, request  # noqa: E402 - after the path setup


class Checkout:
    """One checkout's warm server over the shared vault."""

    def __init__(self, name: str, path: Path, base: Path, vault: Path) -> None:
        self.name = name
        self.path = path
        self.vault = vault
        self.env = {
            **os.environ,
            "PYTHONPATH": str(path),
            "MDMEM_STATE_DIR": str(base / f"state-{name}"),
            "MDMEM_RUNTIME_DIR": str(base / f"rt-{name}"),
            "MDMEM_SERVER": "off",
        }
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        # In the checkout's own directory, so `-m mdmem` imports its code.
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mdmem", "--vault", str(self.vault), "server", "run"],
            env=self.env,
            cwd=self.path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 180
        while self.ask("ping", timeout=1) is None:
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise SystemExit(f"{self.name}: the warm server did not start")
            time.sleep(0.2)

    def ask(self, method: str, params: dict[str, Any] | None = None, timeout: float = 30) -> Any:
        os.environ["MDMEM_RUNTIME_DIR"] = self.env["MDMEM_RUNTIME_DIR"]
        os.environ["MDMEM_STATE_DIR"] = self.env["MDMEM_STATE_DIR"]
        try:
            return request(self.vault, method, params, timeout=timeout)
        except Exception:  # the bench reports what a client would see
            return None

    def alive(self) -> bool:
        started = time.monotonic()
        answered = self.ask("ping", timeout=2) is not None
        return answered and time.monotonic() - started < 2

    def rss_mb(self) -> float | None:
        if self.proc is None:
            return None
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        except OSError:
            return None
        return None

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def socket_path(self) -> str:
        os.environ["MDMEM_RUNTIME_DIR"] = self.env["MDMEM_RUNTIME_DIR"]
        os.environ["MDMEM_STATE_DIR"] = self.env["MDMEM_STATE_DIR"]
        return str(paths_for(self.vault).socket)


def seed(root: Path, memories: int) -> None:
    from mdmem import Vault

    vault = Vault.init(root, agent="bench")
    with vault.batch("seed"):
        for i in range(memories):
            vault.remember(f"Deploy note {i}: the shop service runs on fly.io machine {i}.")
        vault.remember("We deploy the shop service to fly.io in the ams region.")
    vault.close()


def transcript(path: Path, turns: int) -> None:
    with path.open("w", encoding="utf-8") as f:
        for i in range(turns):
            role = "user" if i % 2 == 0 else "assistant"
            text = f"Turn {i}: the orders table {i} moves to integer cents, batch {i % 7}."
            message = {"role": role, "content": text}
            f.write(json.dumps({"type": role, "uuid": f"t{i}", "message": message}) + "\n")


def hook_params(cwd: Path, transcript_path: str, session: str) -> dict[str, Any]:
    payload = {
        "session_id": session,
        "transcript_path": transcript_path,
        "cwd": str(cwd),
        "hook_event_name": "PreCompact",
        "trigger": "auto",
    }
    return {
        "host": "claude-code",
        "event": "pre-compact",
        "payload": payload,
        "policy": {"capture": "everything"},
    }


def concurrent_clients(c: Checkout, clients: int) -> dict[str, Any]:
    results: list[float | None] = []
    lock = threading.Lock()
    path = c.socket_path()
    root = os.path.realpath(c.vault)

    def client(i: int) -> None:
        method, params = (
            ("recall", {"query": "where do we deploy", "k": 3}) if i % 2 else ("ping", {})
        )
        message = {"v": 1, "root": root, "method": method, "params": params}
        started = time.monotonic()
        took: float | None = None
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(30)
        try:
            sock.connect(path)
            sock.sendall(json.dumps(message).encode() + b"\n")
            sock.shutdown(socket.SHUT_WR)
            data = b""
            while not data.endswith(b"\n"):
                chunk = sock.recv(65536)
                if not chunk:
                    break
                data += chunk
            if json.loads(data).get("ok"):
                took = time.monotonic() - started
        except (OSError, ValueError):
            took = None
        finally:
            sock.close()
        with lock:
            results.append(took)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    answered = [r for r in results if r is not None]
    return {
        "answered": len(answered),
        "clients": clients,
        "slowest_s": max(answered) if answered else None,
    }


def recall_during_compact(c: Checkout, cwd: Path, path: Path) -> dict[str, Any]:
    def timed() -> float | None:
        started = time.monotonic()
        got = c.ask("recall", {"query": "where do we deploy", "k": 5}, timeout=60)
        return time.monotonic() - started if got is not None else None

    def prompt_hook() -> bool:
        """A UserPromptSubmit hook (300 ms budget): did memories come back in time?"""
        payload = {
            "session_id": f"other-{c.name}",
            "cwd": str(cwd),
            "hook_event_name": "UserPromptSubmit",
            "prompt": "where do we deploy the shop service?",
        }
        params = {"host": "claude-code", "event": "prompt-submit", "payload": payload}
        answer = c.ask("hook", params, timeout=0.4)  # as mdmem hook waits for it
        return isinstance(answer, str) and "fly.io" in answer

    idle = [timed() for _ in range(5)]
    idle_prompts = [prompt_hook() for _ in range(5)]
    done: dict[str, float] = {}

    def compact() -> None:
        started = time.monotonic()
        c.ask("hook", hook_params(cwd, str(path), f"bench-{c.name}"), timeout=900)
        done["s"] = time.monotonic() - started

    writer = threading.Thread(target=compact)
    writer.start()
    during: list[float | None] = []
    prompts: list[bool] = []
    time.sleep(0.3)
    while writer.is_alive():
        during.append(timed())
        prompts.append(prompt_hook())
        time.sleep(0.2)
    writer.join()
    got = [d for d in during if d is not None]
    # The same capture with no reads beside it (a new session: all its turns are new).
    started = time.monotonic()
    c.ask("hook", hook_params(cwd, str(path), f"alone-{c.name}"), timeout=900)
    alone = time.monotonic() - started
    return {
        "compact_alone_s": alone,
        "prompt_hooks_with_memories": f"{sum(prompts)}/{len(prompts)}",
        "idle_prompt_hooks_with_memories": f"{sum(idle_prompts)}/{len(idle_prompts)}",
        "idle_p50_s": median([i for i in idle if i is not None]),
        "during_p50_s": median(got) if got else None,
        "during_max_s": max(got) if got else None,
        "unanswered": len(during) - len(got),
        "recalls": len(during),
        "compact_s": done.get("s"),
    }


def hostile(c: Checkout, cwd: Path, base: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    path = c.socket_path()
    root = os.path.realpath(c.vault)

    def send_raw(data: bytes) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(10)
        try:
            sock.connect(path)
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
            sock.recv(65536)
        except OSError:
            pass
        finally:
            sock.close()

    head = json.dumps({"v": 1, "root": root, "method": "hook", "params": {}})[:-2].encode()
    nested = b"[" * 975 + b"]" * 975
    send_raw(head + b'"payload": ' + nested + b"}}\n")
    rows.append({"case": "request nested 975 deep", "alive": c.alive(), "rss_mb": c.rss_mb()})

    fifo = base / f"fifo-{c.name}"
    os.mkfifo(fifo)
    params = hook_params(cwd, str(fifo), f"hostile-{c.name}")
    worker = threading.Thread(target=c.ask, args=("hook", params), kwargs={"timeout": 20})
    worker.start()
    time.sleep(5)
    rows.append({"case": "transcript_path is a FIFO", "alive": c.alive(), "rss_mb": c.rss_mb()})
    if worker.is_alive() and _has_reader(fifo):
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # EOF for a reader stuck on it
    worker.join(30)

    stalled = []
    for _ in range(20):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(path)
            sock.sendall(b'{"v": 1, "root": ')
        except OSError:
            pass
        stalled.append(sock)
    rows.append({"case": "20 clients stall mid-request", "alive": c.alive(), "rss_mb": c.rss_mb()})
    for sock in stalled:
        sock.close()

    # Last: a server that reads /dev/zero grows without end. It is stopped at
    # RSS_LIMIT_MB (this machine is shared), which the row then says.
    params = hook_params(cwd, "/dev/zero", f"zero-{c.name}")
    worker = threading.Thread(target=c.ask, args=("hook", params), kwargs={"timeout": 10})
    worker.start()
    peak, killed = 0.0, False
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        peak = max(peak, c.rss_mb() or 0.0)
        if peak > RSS_LIMIT_MB:
            c.stop()
            killed = True
            break
        time.sleep(0.1)
    alive = False if killed else c.alive()
    case = "pre-compact, transcript_path /dev/zero" + (
        f" (stopped at >{RSS_LIMIT_MB} MB)" if killed else ""
    )
    rows.append({"case": case, "alive": alive, "rss_mb": peak})
    worker.join(30)
    return rows


def _has_reader(fifo: Path) -> bool:
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        return False
    os.close(fd)
    return True


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--turns", type=int, default=600)
    parser.add_argument("--memories", type=int, default=300)
    parser.add_argument("--baseline", type=Path, default=None, help="another checkout to compare")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    base = scratch_dir("mdmem-bench-warm-")
    vault = base / "vault"
    seed(vault, args.memories)
    cwd = base / "project"
    cwd.mkdir()
    long = base / "long.jsonl"
    transcript(long, args.turns)
    checkouts = [Checkout("this", HERE, base, vault)]
    if args.baseline is not None:
        checkouts.append(Checkout("baseline", args.baseline.resolve(), base, vault))
    load = os.getloadavg()
    out: dict[str, Any] = {"load": load, "clients": [], "compact": [], "hostile": []}
    for c in checkouts:
        c.start()
        try:
            c.ask("recall", {"query": "warm up"}, timeout=120)
            out["clients"].append({"checkout": c.name, **concurrent_clients(c, args.clients)})
            out["compact"].append({"checkout": c.name, **recall_during_compact(c, cwd, long)})
            out["hostile"] += [{"checkout": c.name, **r} for r in hostile(c, cwd, base)]
        finally:
            c.stop()
    if args.json:
        emit_json(out)
        return
    print(f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} on {os.cpu_count()} cores")
    print_table(
        f"{args.clients} clients at once (half ping, half recall)",
        ["checkout", "answered", "slowest s"],
        [
            [r["checkout"], f"{r['answered']}/{r['clients']}", r["slowest_s"]]
            for r in out["clients"]
        ],
    )
    print_table(
        f"recall while a {args.turns}-turn pre-compact runs (bar: 2 s)",
        [
            "checkout",
            "idle p50 s",
            "during p50 s",
            "during max s",
            "unanswered",
            "prompt hooks with memories (idle)",
            "compact s",
            "compact alone s",
        ],
        [
            [
                r["checkout"],
                r["idle_p50_s"],
                r["during_p50_s"],
                r["during_max_s"],
                f"{r['unanswered']}/{r['recalls']}",
                f"{r['prompt_hooks_with_memories']} ({r['idle_prompt_hooks_with_memories']})",
                r["compact_s"],
                r["compact_alone_s"],
            ]
            for r in out["compact"]
        ],
    )
    print_table(
        "hostile requests: does the server still answer ping within 2 s?",
        ["checkout", "case", "alive", "RSS MB"],
        [[r["checkout"], r["case"], r["alive"], r["rss_mb"]] for r in out["hostile"]],
    )


if __name__ == "__main__":
    main()
