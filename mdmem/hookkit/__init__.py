"""The coding-agent hook kit: the whole of ``mdmem hook EVENT`` and ``mdmem hooks ...`` for
Claude Code, Codex and Cursor.

A hook run enters at :mod:`mdmem.__main__`, which hands the line to
:mod:`~mdmem.hookkit.client` (the fast path: standard library only, it asks the
vault's warm server) and, when no warm answer comes, to :mod:`~mdmem.hookkit.cold`
(it opens the vault itself and starts a server). :mod:`~mdmem.hookkit.runner`
handles one event wherever it runs (inject at session start and prompt submit,
capture turns and tool failures); :mod:`~mdmem.hookkit.policy` decides per
project what is captured and under which scope; :mod:`~mdmem.hookkit.hosts`
knows each host's payloads, answers and settings files;
:mod:`~mdmem.hookkit.install` writes mdmem's hooks into those files and takes them
out, and :mod:`~mdmem.hookkit.doctor` runs what is installed. The rest read
transcripts, log what was injected and pick the useful lines of a failure.

It imports nothing from the MCP server, and of the warm server only its
standard-library client; the server is handed :func:`~mdmem.hookkit.runner.serve_hook`
by the command that starts it. The click commands (:mod:`mdmem.cli.hooks`) are a
thin layer over this kit.

This file imports nothing: the fast path imports the package before its client.
"""
