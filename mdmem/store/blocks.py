"""Moved to :mod:`mdmem.files.blocks`; this import path stays for one release (0.1.x)."""

import sys
import warnings

from mdmem.files import blocks as moved

warnings.warn("mdmem.store.blocks moved to mdmem.files.blocks", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = moved
