"""Moved to :mod:`mdmem.recall.llm_rerank`; this import path stays for one release (0.1.x)."""

import sys
import warnings

from mdmem.recall import llm_rerank as moved

warnings.warn(
    "mdmem.memory.llm_rerank moved to mdmem.recall.llm_rerank", DeprecationWarning, stacklevel=2
)
sys.modules[__name__] = moved
