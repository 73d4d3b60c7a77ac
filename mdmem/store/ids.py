"""Moved to :mod:`mdmem.files.ids`; this import path stays for one release (0.1.x)."""

import sys
import warnings

from mdmem.files import ids as moved

warnings.warn("mdmem.store.ids moved to mdmem.files.ids", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = moved
