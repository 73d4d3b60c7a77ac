"""Helpers for an agent loop that holds a :class:`~mdmem.vault.Vault`: prompt assembly
(:mod:`~mdmem.agent.prompt`, ``prompt_context``), :class:`~mdmem.agent.hooks.MemoryHooks`
(prefetch, flush, session end), synthesis, conversation compaction and step compaction.
They read through ``vault.reading(...)`` and write through the vault's verbs; the doors a
host talks to (MCP, the hook kit, the warm server) live in rooms of their own above.
"""
