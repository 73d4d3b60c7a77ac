"""The Model Context Protocol door and the tool calls it serves: :class:`~mdmem.mcp.tools.
Toolset` (OpenAI-style function tools over a vault, also usable directly in an agent loop),
the MCP server (:mod:`~mdmem.mcp.server`) over stdio (:mod:`~mdmem.mcp.stdio`, which screens
every line first) and over HTTP on a unix socket or localhost with a token
(:mod:`~mdmem.mcp.http`). Every tool reads through one ``vault.reading(...)`` for the scopes
the host allows.
"""
