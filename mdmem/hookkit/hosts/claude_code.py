"""Claude Code — https://docs.claude.com/en/docs/claude-code/hooks.

Settings ``hooks``: event → ``[{"matcher", "hooks": [{"type": "command",
"command", "timeout"}]}]``; stdin ``session_id``, ``transcript_path``, ``cwd``,
``hook_event_name`` plus ``source`` / ``prompt`` / ``tool_name``, ``tool_input``,
``tool_response`` / ``trigger``. SessionStart and UserPromptSubmit add
``hookSpecificOutput.additionalContext`` to the model's context;
``systemMessage`` is shown to the user. PostToolUse fires only after a tool
*succeeded*; a failed call (a Bash command exiting non-zero, an edit that did
not apply) goes to PostToolUseFailure with ``tool_use_id``, ``error`` (the
failure message) and ``is_interrupt`` (the user stopped it). Settings files:
``.claude/settings.json`` (the project's, committed), ``.claude/settings.local.json``
(the project's, personal: git-ignored) and ``~/.claude/settings.json`` (the user's).
"""

from __future__ import annotations

from mdmem.hookkit.hosts.base import TIMEOUTS, Host

__all__ = ["HOST"]

HOST = Host(
    "claude-code",
    {
        "session-start": "SessionStart",
        "prompt-submit": "UserPromptSubmit",
        "post-tool-use": "PostToolUse",
        "post-tool-failure": "PostToolUseFailure",
        "pre-compact": "PreCompact",
        "stop": "Stop",
        "session-end": "SessionEnd",
    },
    config_project=".claude/settings.json",
    config_user=".claude/settings.json",
    nested=True,
    timeouts=TIMEOUTS,
    config_personal=".claude/settings.local.json",
)
