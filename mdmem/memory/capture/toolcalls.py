"""Gotchas and bug fixes from a session's tool calls (OAK's post-tool analysis).

OAK: "If a command fails, it records the error as a ``gotcha``. If you Edit a
file after an error, it correlates the fix with the error and stores a
``bug_fix``." :func:`capture_tool_results` does that over :class:`ToolCall`
records a host hands in (the post-tool-use hook, or a whole session's calls):

* a failed call (``success=False`` or a non-zero ``exit_code``) becomes a
  ``gotcha``: the command and its most telling error line;
* a later successful call that fixes an open gotcha of the same session
  becomes a ``bug_fix`` linked to it by ``[fixes:: ^m-…]``. A fix is the
  same command succeeding, or an edit (a tool with a file path argument)
  touching a file the error named. One bug fix per gotcha.

Links and bookkeeping are inline fields set here, never parsed from the
text: ``session``, ``call`` (the host's call id, else a digest of the call),
``cmd`` (a digest of the normalised command, to match a retry), ``files``
(the files the error named) and ``fixes``. Open gotchas are read back from
the vault, so a host may pass its calls one at a time or all at once, and a
call seen before (same ``call`` key in the session) is skipped: a re-run over
the same calls writes nothing.

The secrets guard applies to every text: tool output is machine text, so a
secret in it is redacted rather than refused (unless the vault says
``secrets = "off"``), and the gotcha keeps its error.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from mdmem.errors import InvalidInputError
from mdmem.files import blocks as blk
from mdmem.memory.capture.failure_excerpt import failure_excerpt
from mdmem.memory.capture.sessions import validate_session_id
from mdmem.models import Block, Memory, one_line

if TYPE_CHECKING:
    from mdmem.store.memories import MemoryStore

__all__ = ["ToolCall", "capture_tool_results"]

# Tools that change a file (Claude Code, Codex, Cursor names, and mdmem's own).
_EDIT_TOOLS = frozenset(
    {"edit", "multiedit", "write", "notebookedit", "apply_patch", "str_replace_based_edit_tool"}
)
_PATH_KEYS = ("file_path", "path", "filename", "notebook_path", "target_file")
_COMMAND_KEYS = ("command", "cmd", "script", "query")
_ERRORISH = re.compile(
    r"error|exception|traceback|failed|failure|fatal|not found|denied|cannot|can't|no such",
    re.IGNORECASE,
)
_EXCEPTION = re.compile(
    r"\b[A-Z]\w*(?:Error|Exception|Exit)\b:|(?:^|\s)(?:error|fatal|panic)(?:\[\w+\])?:",
    re.IGNORECASE,
)
# A path-like token with an extension, optionally followed by :line[:col].
_FILE = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w-][\w.-]*\.[A-Za-z][\w]{0,7})(?::\d+)*")
_FIELD_SAFE = re.compile(r"[^\w./@+-]")
_CONTROL = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|[\x00-\x08\x0b-\x1f\x7f]")
_MAX_COMMAND_CHARS = 200
_MAX_ERROR_CHARS = 300
_MAX_EXCERPT_CHARS = 600
_MAX_FILES = 5


@dataclass(frozen=True)
class ToolCall:
    """One tool call as a host saw it.

    ``input``: the command line, or the tool's arguments (a mapping: a
    ``command`` key is the command, a ``file_path``/``path`` key the file an
    edit touches). ``success``: the host's verdict; when None, a non-zero
    ``exit_code`` means failure. ``id``: the host's call id, if it has one
    (otherwise the call's content identifies it).
    """

    tool: str
    input: str | Mapping[str, Any] = ""
    output: str = ""
    success: bool | None = None
    exit_code: int | None = None
    when: datetime | None = None
    id: str | None = None

    @property
    def failed(self) -> bool:
        if self.success is not None:
            return not self.success
        return self.exit_code not in (None, 0)

    @property
    def command(self) -> str:
        """The command or the call's arguments, on one line."""
        if isinstance(self.input, Mapping):
            for key in _COMMAND_KEYS:
                value = self.input.get(key)
                if isinstance(value, str) and value.strip():
                    return _clean(value)
            return _clean(json.dumps(dict(self.input), sort_keys=True, default=str))
        return _clean(str(self.input))

    @property
    def edited_file(self) -> str | None:
        """The file an edit tool touched, or None for other calls."""
        if not isinstance(self.input, Mapping):
            return None
        for key in _PATH_KEYS:
            value = self.input.get(key)
            edits = self.tool.lower() in _EDIT_TOOLS or key == "file_path"
            if edits and isinstance(value, str) and value.strip():
                return value.strip()
        return None

    def key(self) -> str:
        """A stable identity of this call: the host's id, else a digest of its content."""
        if self.id:
            raw = f"id\0{self.id}"
        else:
            when = self.when.isoformat() if self.when else ""
            raw = "\0".join(
                [self.tool, self.command, self.output, str(self.exit_code), str(self.success), when]
            )
        return hashlib.sha1(raw.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _clean(text: str) -> str:
    return one_line(_CONTROL.sub(" ", text))


def _digest(command: str) -> str:
    return hashlib.sha1(command.casefold().encode("utf-8", "surrogatepass")).hexdigest()[:12]


def _error_line(output: str) -> str:
    """What went wrong: the failing test and error lines (failure_excerpt), else the last
    error-ish line."""
    cleaned = _CONTROL.sub(" ", output)
    lines = [ln.strip() for ln in cleaned.splitlines() if ln.strip()]
    if not lines:
        return "no output"
    excerpt = failure_excerpt(cleaned, _MAX_EXCERPT_CHARS)  # which test, what it asserted
    if excerpt is not None:
        return excerpt
    # An exception line ("TypeError: …", "error: …") says more than a summary
    # line ("FAILED tests/…"), which says more than the last line.
    strong = [ln for ln in lines if _EXCEPTION.search(ln)]
    telling = [ln for ln in lines if _ERRORISH.search(ln)]
    return one_line((strong or telling or lines)[-1], _MAX_ERROR_CHARS)


def _files_named(text: str) -> list[str]:
    found: list[str] = []
    for match in _FILE.finditer(text):
        path = match.group(1).strip("./") or match.group(1)
        if path and not _FIELD_SAFE.search(path) and path not in found:
            found.append(path)
        if len(found) >= _MAX_FILES:
            break
    return found


def _touches(edited: str, named: Iterable[str]) -> bool:
    """Whether an edited path is one of the files an error named (suffix match)."""
    edited_parts = PurePosixPath(edited.replace("\\", "/")).parts
    for name in named:
        parts = PurePosixPath(name).parts
        if parts and edited_parts[-len(parts) :] == parts:
            return True
    return False


@dataclass
class _Open:
    """A gotcha of this session without a bug fix yet."""

    id: str
    cmd: str
    files: list[str]
    error: str


def _session_state(store: MemoryStore, session_id: str, scope: str) -> tuple[set[str], list[_Open]]:
    """Call keys already captured in the session, and its gotchas still open."""
    store.refresh()
    seen: set[str] = set()
    gotchas: list[Block] = []
    fixed: set[str] = set()
    for block in store.catalog.blocks(memories_only=True):
        if block.scope != scope or block.field("session") != session_id:
            continue
        call = block.field("call")
        if call:
            seen.update(call.split())
        if block.kind == "gotcha" and block.field("cmd"):
            gotchas.append(block)
        elif block.kind == "bug_fix" and block.field("fixes"):
            fixed.add(str(block.field("fixes")).lstrip("^"))
    open_ = [
        _Open(
            b.id,
            str(b.field("cmd")),
            (b.field("files") or "").split(),
            one_line(b.text, _MAX_ERROR_CHARS),
        )
        for b in sorted(gotchas, key=lambda b: b.id)
        if b.id not in fixed and b.status == "active"
    ]
    return seen, open_


def capture_tool_results(
    store: MemoryStore,
    session_id: str,
    calls: Iterable[ToolCall],
    *,
    scope: str | None = None,
) -> list[Memory]:
    """Record failed calls as gotchas and their fixes as linked bug fixes (see the module)."""
    session_id = validate_session_id(session_id)
    scope = blk.validate_scope(scope)
    todo = list(calls)
    for call in todo:
        if not isinstance(call, ToolCall):
            raise InvalidInputError("calls must be ToolCall records")
    mode = "off" if store.settings.secrets == "off" else "redact"
    out: list[Memory] = []
    with store.batch(f"capture tool results of session {session_id}"):
        seen, open_ = _session_state(store, session_id, scope)
        for call in todo:
            key = call.key()
            if key in seen:
                continue
            seen.add(key)
            tool = _clean(call.tool)[:64] or "tool"
            command = one_line(call.command, _MAX_COMMAND_CHARS)
            base = [("session", session_id), ("tool", _FIELD_SAFE.sub("_", tool)), ("call", key)]
            if call.failed:
                error = _error_line(call.output)
                code = f" (exit {call.exit_code})" if call.exit_code not in (None, 0) else ""
                files = _files_named(f"{error}\n{call.output}")
                fields = [*base, ("cmd", _digest(call.command))]
                if files:
                    fields.append(("files", " ".join(files)))
                memory = store.remember(
                    f"{tool} `{command}` failed{code}: {error}",
                    kind="gotcha",
                    scope=scope,
                    fields=fields,
                    created=call.when,
                    secrets=mode,
                )
                out.append(memory)
                if memory.was_new:
                    open_.append(_Open(memory.id, _digest(call.command), files, memory.text))
                continue
            edited = call.edited_file
            for gotcha in list(open_):
                if gotcha.cmd == _digest(call.command):
                    text = f"Fixed, `{command}` succeeds now. It had failed: {gotcha.error}"
                elif edited is not None and _touches(edited, gotcha.files):
                    text = (
                        f"Fixed by editing {one_line(edited, 200)}. It had failed: {gotcha.error}"
                    )
                else:
                    continue
                memory = store.remember(
                    text,
                    kind="bug_fix",
                    scope=scope,
                    fields=[*base, ("fixes", f"^{gotcha.id}")],
                    created=call.when,
                    secrets=mode,
                )
                out.append(memory)
                open_.remove(gotcha)
    return out
