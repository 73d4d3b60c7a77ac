"""Moved to :mod:`mdmem.files.catalog`; this import path stays for one release (0.1.x)."""

import sys
import warnings

from mdmem.files import catalog as moved

warnings.warn("mdmem.store.catalog moved to mdmem.files.catalog", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = moved
