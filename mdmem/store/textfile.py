"""Moved to :mod:`mdmem.files.textfile`.

This path answers, with a warning, until 0.2.0 (:data:`mdmem.aliases.MODULES`).
"""

from mdmem.aliases import moved_module

moved_module(__name__)
