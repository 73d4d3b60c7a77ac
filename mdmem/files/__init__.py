"""What the store and the indexes both read: the vault's text files, the blocks
parsed from them (ids, escaping, people), the catalog of every file's blocks,
the index manifest and the health of derived sqlite files. It imports nothing
above :mod:`mdmem.config`."""
