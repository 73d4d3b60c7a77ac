"""The hook kit's own derived state: the injection log and per-host bookkeeping.

Both live in the vault's state dir (``<state>/hooks/``), never in the vault:
they describe what a host was shown, not what is remembered.

* ``injections.jsonl`` — one JSON object per hook run: ``time``, ``event``,
  ``host``, ``session``, ``ids``, ``tokens``, ``degraded``, ``took_ms``,
  ``why`` (per memory: score and signals), ``error``. ``mdmem hooks log``
  prints it.
* ``state.json`` — the commit each host last saw at session start (for "what
  changed since the last session") and, per session, the span its summary
  covers (so a summary is never written twice for the same turns).
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from mdmem.files.textfile import atomic_write
from mdmem.memory.capture.hostdata import safe_record

__all__ = ["HookLog"]

_LOCK = threading.Lock()
MAX_LOG_BYTES = 8 * 1024 * 1024


class HookLog:
    def __init__(self, state_dir: Path) -> None:
        self.dir = state_dir / "hooks"
        self.path = self.dir / "injections.jsonl"
        self.state_path = self.dir / "state.json"

    def append(self, entry: dict[str, Any]) -> None:
        # What a host sent (a session id, a tool's error) may hold a secret.
        line = json.dumps(safe_record(entry), ensure_ascii=False, sort_keys=True) + "\n"
        with _LOCK:
            self.dir.mkdir(parents=True, exist_ok=True)
            try:
                if self.path.stat().st_size > MAX_LOG_BYTES:
                    # Keep one old generation: the log is for a person checking recent hooks.
                    os.replace(self.path, self.path.with_suffix(".jsonl.1"))
            except FileNotFoundError:
                pass
            # O_APPEND: concurrent hook processes each add whole lines.
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            try:
                os.write(fd, line.encode("utf-8"))
            finally:
                os.close(fd)

    def entries(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The newest ``limit`` entries (all when None), oldest first; bad lines skipped."""
        return self.read_lines(self.path, limit)

    @staticmethod
    def read_lines(path: Path, limit: int | None = None) -> list[dict[str, Any]]:
        """The JSON objects of a JSONL file, newest ``limit``, oldest first ([] if none)."""
        try:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return []
        out = []
        for line in lines:
            try:
                data = json.loads(line)
            except ValueError:
                continue
            if isinstance(data, dict):
                out.append(data)
        return out[-limit:] if limit else out

    # -- bookkeeping -----------------------------------------------------------

    def state(self) -> dict[str, Any]:
        try:
            data = json.loads(self.state_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def update_state(self, key: str, value: Any) -> None:
        with _LOCK:
            data = self.state()
            data[safe_record(key)] = safe_record(value)
            # Derived state read on the next event: atomic, not worth an fsync
            # on the hook's clock (a crash loses one update, recomputed later).
            atomic_write(self.state_path, json.dumps(data, sort_keys=True).encode(), fsync=False)
