"""Plumbing the doors share, below all of them and standard library only: JSON from a
stranger with its nesting bounded, reads capped at a size, private unix-socket folders and
the peer's uid, and whether a host's process is alive. The hook client's fast path imports
from here and nothing heavier.
"""
