"""Moved to :mod:`mdmem.files.escape`; this import path stays for one release (0.1.x)."""

import sys
import warnings

from mdmem.files import escape as moved

warnings.warn("mdmem.store.escape moved to mdmem.files.escape", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = moved
