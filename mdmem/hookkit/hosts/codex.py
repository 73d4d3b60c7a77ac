"""Codex CLI — https://developers.openai.com/codex/hooks.

``.codex/hooks.json`` or ``~/.codex/hooks.json``: the same event → matcher group →
handlers shape as Claude Code and the same common input fields; SessionStart,
UserPromptSubmit, PostToolUse, PreCompact, Stop; ``hookSpecificOutput.additionalContext``
and ``systemMessage`` as in Claude Code; Stop wants JSON on stdout. Codex has no
failure event: PostToolUse fires for every call and ``tool_response`` is the
tool's output (for a shell command, its text), so a failure is read from the
output's documented shapes (:mod:`mdmem.hookkit.toolfailure`). Codex reads no
per-project personal file: the personal one is the user's.
"""

from __future__ import annotations

from mdmem.hookkit.hosts.base import TIMEOUTS, Host

__all__ = ["HOST"]

HOST = Host(
    "codex",
    {
        "session-start": "SessionStart",
        "prompt-submit": "UserPromptSubmit",
        "post-tool-use": "PostToolUse",
        "pre-compact": "PreCompact",
        "stop": "Stop",
    },
    config_project=".codex/hooks.json",
    config_user=".codex/hooks.json",
    nested=True,
    timeouts=TIMEOUTS,
)
