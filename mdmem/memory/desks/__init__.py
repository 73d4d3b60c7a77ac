"""The vault's desks, each a small class built from the store, the model
and the resolver (never from the :class:`~mdmem.vault.Vault`): ``vault.sessions``,
``vault.admin``, ``vault.library``, ``vault.contacts``, and the reading view
``vault.reading(...)`` (:mod:`~mdmem.memory.desks.reading`) every door reads through.
"""
