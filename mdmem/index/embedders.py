"""Moved to :mod:`mdmem.providers.embedders`; this import path stays for one release (0.1.x)."""

import sys
import warnings

from mdmem.providers import embedders as moved

warnings.warn(
    "mdmem.index.embedders moved to mdmem.providers.embedders", DeprecationWarning, stacklevel=2
)
sys.modules[__name__] = moved
