"""What goes into a vault in bulk and comes out: documents as chunks,
chat exports and notes (:mod:`~mdmem.memory.library.importer`), the lossless restore of an
export, the JSONL export, and browsing (list, show).
"""


def __getattr__(name: str) -> object:
    # 0.1.0's mdmem.memory.library was the desk's module; its class moved to desks.
    if name == "Library":
        import warnings

        from mdmem.aliases import Alias
        from mdmem.memory.desks.library import Library

        alias = Alias("mdmem.memory.library.Library", "mdmem.memory.desks.library.Library")
        warnings.warn(alias.message, DeprecationWarning, stacklevel=2)
        return Library
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
