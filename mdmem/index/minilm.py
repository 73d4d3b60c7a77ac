"""Moved to :mod:`mdmem.providers.minilm`; this import path stays for one release (0.1.x)."""

import sys
import warnings

from mdmem.providers import minilm as moved

warnings.warn(
    "mdmem.index.minilm moved to mdmem.providers.minilm", DeprecationWarning, stacklevel=2
)
sys.modules[__name__] = moved
