"""Moved to :mod:`mdmem.files.changefeed`; this import path stays for one release (0.1.x)."""

import sys
import warnings

from mdmem.files import changefeed as moved

warnings.warn(
    "mdmem.store.changefeed moved to mdmem.files.changefeed", DeprecationWarning, stacklevel=2
)
sys.modules[__name__] = moved
