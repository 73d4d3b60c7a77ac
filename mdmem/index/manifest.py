"""Moved to :mod:`mdmem.files.manifest`; this import path stays for one release (0.1.x)."""

import sys
import warnings

from mdmem.files import manifest as moved

warnings.warn(
    "mdmem.index.manifest moved to mdmem.files.manifest", DeprecationWarning, stacklevel=2
)
sys.modules[__name__] = moved
