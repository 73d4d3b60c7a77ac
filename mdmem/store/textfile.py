"""Moved to :mod:`mdmem.files.textfile`; this import path stays for one release (0.1.x)."""

import sys
import warnings

from mdmem.files import textfile as moved

warnings.warn(
    "mdmem.store.textfile moved to mdmem.files.textfile", DeprecationWarning, stacklevel=2
)
sys.modules[__name__] = moved
