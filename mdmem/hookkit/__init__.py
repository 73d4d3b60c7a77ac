"""The coding-agent hook kit: what ``mdmem hook EVENT`` does for Claude Code, Codex and
Cursor. :mod:`~mdmem.hookkit.runner` handles one event (inject at session start and prompt
submit, capture turns and tool failures), :mod:`~mdmem.hookkit.policy` decides per project
what is captured and under which scope, :mod:`~mdmem.hookkit.hosts` knows each host's
payloads, answers and config files, and the rest read transcripts, log what was injected,
pick the useful lines of a failure and decide what is relevant enough to inject. It imports
nothing from the MCP server or the warm server; the warm server is handed
:func:`~mdmem.hookkit.runner.serve_hook` by the command that starts it.
"""
