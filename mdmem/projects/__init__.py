"""Which project a working folder belongs to, and which project files the person confirmed.

A coding agent's hooks capture into a project's scope and recall from it, so
the project's name decides who reads what. This room holds the two answers
that must not be forgeable by anything a repository carries:
:mod:`~mdmem.projects.identity` names a project from what is unique to its
repository (its normalised remote, else an id recorded in the repository's
own git config), and :mod:`~mdmem.projects.trust` keeps, in the person's own
config folder, the ``.mdmem.toml`` files they confirmed (bound to the file's
content) and the old short-name scopes they adopted. Standard library only:
the hook's thin path imports it.
"""
