"""Keeping a vault healthy from the outside: ``doctor`` (checks and fixes), ``watch``
(reindex on edits), adopting an existing Obsidian vault, and rebuilding derived state.
"""
