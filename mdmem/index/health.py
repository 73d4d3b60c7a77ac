"""Moved to :mod:`mdmem.files.health`; this import path stays for one release (0.1.x)."""

import sys
import warnings

from mdmem.files import health as moved

warnings.warn("mdmem.index.health moved to mdmem.files.health", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = moved
