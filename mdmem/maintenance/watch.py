"""Keep the indexes live while people edit: watchdog events, debounced, then a refresh.

Editors save in odd ways: vim writes a temp file and renames it over the
original, Obsidian writes a temp file too, some delete and recreate. The
watcher does not try to interpret events; any event on a markdown file (or a
rename/move that involves one) arms a debounce timer, and when the vault has
been quiet for ``debounce`` seconds it runs the same stat scan recall runs, so
whatever the editor did, the index ends up matching the files.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mdmem.store.memories import MemoryStore

__all__ = ["Watcher"]

log = logging.getLogger("mdmem")


class Watcher:
    def __init__(
        self,
        store: MemoryStore,
        *,
        debounce: float = 0.3,
        commit: bool = False,
        on_refresh: Callable[[list[str]], None] | None = None,
    ) -> None:
        self.store = store
        self.debounce = debounce
        self.commit = commit
        self.on_refresh = on_refresh
        self.refreshes = 0
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()
        self._observer: Any = None

    def _relevant(self, event: Any) -> bool:
        paths = [getattr(event, "src_path", ""), getattr(event, "dest_path", "")]
        for raw in paths:
            path = raw.decode() if isinstance(raw, bytes) else str(raw)
            if not path or "/.git/" in path or path.endswith("/.git"):
                continue
            if path.endswith(".md") or getattr(event, "is_directory", False):
                return True
        return False

    def _event(self, event: Any) -> None:
        if not self._relevant(event):
            return
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = threading.Timer(self.debounce, self._fire)
            self._timer.daemon = True
            self._timer.start()

    def _fire(self) -> None:
        try:
            changed = self.store.refresh()
            if self.commit and changed:
                self.store.commit_human_edits()
            self.refreshes += 1
            if changed:
                log.info("re-indexed %d changed file(s)", len(changed))
            if self.on_refresh is not None:
                self.on_refresh(changed)
        except Exception as exc:  # a bad save must not kill the watcher
            log.warning("refresh after an edit failed: %s", exc)

    def start(self) -> Watcher:
        from watchdog.events import FileSystemEventHandler
        from watchdog.observers import Observer

        watcher = self

        class Handler(FileSystemEventHandler):
            def on_any_event(self, event: Any) -> None:
                watcher._event(event)

        self._observer = Observer()
        self._observer.schedule(Handler(), str(self.store.root), recursive=True)
        self._observer.start()
        return self

    def stop(self) -> None:
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=5)
            self._observer = None
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

    def run_forever(self) -> None:
        self.start()
        try:
            while True:
                time.sleep(1)
        finally:
            self.stop()

    def __enter__(self) -> Watcher:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
