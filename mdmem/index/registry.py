"""Moved to :mod:`mdmem.providers.registry`; this import path stays for one release (0.1.x)."""

import sys
import warnings

from mdmem.providers import registry as moved

warnings.warn(
    "mdmem.index.registry moved to mdmem.providers.registry", DeprecationWarning, stacklevel=2
)
sys.modules[__name__] = moved
