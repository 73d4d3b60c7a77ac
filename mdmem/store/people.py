"""Moved to :mod:`mdmem.files.people`; this import path stays for one release (0.1.x)."""

import sys
import warnings

from mdmem.files import people as moved

warnings.warn("mdmem.store.people moved to mdmem.files.people", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = moved
