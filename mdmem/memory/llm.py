"""Moved to :mod:`mdmem.providers.llm`; this import path stays for one release (0.1.x)."""

import sys
import warnings

from mdmem.providers import llm as moved

warnings.warn("mdmem.memory.llm moved to mdmem.providers.llm", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = moved
