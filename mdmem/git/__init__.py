"""Git as the audit trail: every version of a memory, what changed since an agent last
looked, who wrote which line, time travel, review branches, undo, sync with a remote, the
id-aware merge driver, and purge (history rewritten without a text). ``vault.git`` is the
desk (:mod:`~mdmem.git.desk`); only :mod:`mdmem.store.gitstore` talks to GitPython.
"""
