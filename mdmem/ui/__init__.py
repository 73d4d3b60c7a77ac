"""A memory viewer in the browser (``mdmem ui``): server-rendered pages on 127.0.0.1.

Browse and search memories, open one's history, see what the hooks injected and
review pending consolidations; the only writes are buttons that run the CLI's own
verbs. See :mod:`mdmem.ui.server` for who may look and act.
"""

from mdmem.ui.server import UiServer

__all__ = ["UiServer"]
